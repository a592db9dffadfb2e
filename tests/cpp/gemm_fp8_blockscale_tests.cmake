# FP8 block-scale GEMM (aiter.gemm_fp8_blockscale): each AITER family's selection over a grid of
# shapes against an independent rule, and which tier of the op a call reaches; the AMD fp8
# fragment code against the emulated MFMA; the handler through the fake XLA runtime on the Host
# backend (the portable tier in both out dtypes, every row of the three AITER families forced
# through its ABI twin, FlatMM's scale transpose); the twins' kernel-argument metadata against
# AITER's. Included from tests/cpp/CMakeLists.txt.

jax_aiter_test(test_gemm_fp8_blockscale_select)

jax_aiter_test(test_flatmm_fragments)
target_include_directories(test_flatmm_fragments PRIVATE ${PROJECT_SOURCE_DIR}/kernels_co/include)

if(TARGET XlaFfi::headers)
  jax_aiter_test(test_ffi_gemm_fp8_blockscale)
  # The host twins multiply for real: seconds optimised, much longer unoptimised.
  if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
    target_compile_options(test_ffi_gemm_fp8_blockscale PRIVATE -O2)
  endif()
endif()

# Each family's twins' kernel-argument metadata against AITER's own (kernel-arguments.txt;
# JAX_AITER_AITER_FACTS, see gemm_kernel_tests.cmake, which declares it and finds Python). Both
# archs are built for every family; a family AITER ships for one arch only is compared with that
# arch's lines.
if(JAX_AITER_AITER_FACTS AND JAX_AITER_CLANG AND JAX_AITER_LLVM_READELF AND Python3_FOUND)
  foreach(family fp8gemm_blockscale mi350 flatmm)
    set(_twin_src ${PROJECT_SOURCE_DIR}/kernels_co/aiter_${family}.twin.cpp)
    set(_twin_args "")
    set(_twin_objects "")
    foreach(arch gfx942 gfx950)
      set(_co ${CMAKE_CURRENT_BINARY_DIR}/aiter_${family}_twin_${arch}.co)
      add_custom_command(
        OUTPUT ${_co}
        COMMAND ${JAX_AITER_CLANG} -x hip --offload-arch=${arch} --offload-device-only
                --no-gpu-bundle-output -nogpuinc -nogpulib -mcode-object-version=5 -fuse-cuid=none
                -fhip-kernel-arg-name -O3 -std=c++20 -I ${PROJECT_SOURCE_DIR}/kernels_co/include
                -I ${PROJECT_SOURCE_DIR}/include -o ${_co} ${_twin_src}
        DEPENDS ${_twin_src}
                ${PROJECT_SOURCE_DIR}/kernels_co/include/jax_aiter_gemm_fp8bs_tile.hpp
                ${PROJECT_SOURCE_DIR}/kernels_co/include/jax_aiter_gemm_i8_tile.hpp
                ${PROJECT_SOURCE_DIR}/kernels_co/include/jax_aiter_mma.hpp
                ${PROJECT_SOURCE_DIR}/kernels_co/include/jax_aiter_device.hpp
                ${PROJECT_SOURCE_DIR}/include/jax_aiter/kernels/shared/aiter_${family}.h
                ${PROJECT_SOURCE_DIR}/include/jax_aiter/kernels/shared/aiter_fp8gemm_blockscale.h
        COMMENT "Compiling the AITER ${family} twins for ${arch}"
        VERBATIM)
      list(APPEND _twin_args ${arch}=${_co})
      list(APPEND _twin_objects ${_co})
    endforeach()
    add_custom_target(test_${family}_twin_kernargs_objects ALL DEPENDS ${_twin_objects})
    add_test(NAME test_${family}_twin_kernargs
             COMMAND ${CMAKE_COMMAND} -E env LLVM_READELF=${JAX_AITER_LLVM_READELF}
                     ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/data/check_twin_kernargs.py
                     ${PROJECT_SOURCE_DIR}/include/jax_aiter/kernels/shared/aiter_${family}.h
                     ${JAX_AITER_AITER_FACTS} ${_twin_args})
  endforeach()
endif()
