# FlatMM fp8 block-scale GEMM (aiter.flatmm_fp8): the ASM tier's gate and grid over a grid of
# shapes against an independent rule; the AMD fp8 fragment code against the emulated MFMA; the
# handler through the fake XLA runtime on the Host backend (both tiers, AITER's kernel forced
# through its ABI twin); the twin's kernel-argument metadata against AITER's. Included from
# tests/cpp/CMakeLists.txt.

jax_aiter_test(test_flatmm_select)

jax_aiter_test(test_flatmm_fragments)
target_include_directories(test_flatmm_fragments PRIVATE ${PROJECT_SOURCE_DIR}/kernels_co/include)

if(TARGET XlaFfi::headers)
  jax_aiter_test(test_ffi_flatmm)
  if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
    target_compile_options(test_ffi_flatmm PRIVATE -O2)
  endif()
endif()

# The AITER FlatMM twin's kernel-argument metadata against AITER's own (kernel-arguments.txt;
# JAX_AITER_AITER_FACTS, see gemm_kernel_tests.cmake, which declares it and finds Python).
if(JAX_AITER_AITER_FACTS AND JAX_AITER_CLANG AND JAX_AITER_LLVM_READELF AND Python3_FOUND)
  set(_flatmm_twin_src ${PROJECT_SOURCE_DIR}/kernels_co/aiter_flatmm.twin.cpp)
  set(_flatmm_twin_args "")
  set(_flatmm_twin_objects "")
  foreach(arch gfx942 gfx950)
    set(_co ${CMAKE_CURRENT_BINARY_DIR}/aiter_flatmm_twin_${arch}.co)
    add_custom_command(
      OUTPUT ${_co}
      COMMAND ${JAX_AITER_CLANG} -x hip --offload-arch=${arch} --offload-device-only
              --no-gpu-bundle-output -nogpuinc -nogpulib -mcode-object-version=5 -fuse-cuid=none
              -fhip-kernel-arg-name -O3 -std=c++20 -I ${PROJECT_SOURCE_DIR}/kernels_co/include
              -I ${PROJECT_SOURCE_DIR}/include -o ${_co} ${_flatmm_twin_src}
      DEPENDS ${_flatmm_twin_src} ${PROJECT_SOURCE_DIR}/kernels_co/include/jax_aiter_gemm_fp8bs_tile.hpp
              ${PROJECT_SOURCE_DIR}/kernels_co/include/jax_aiter_gemm_i8_tile.hpp
              ${PROJECT_SOURCE_DIR}/kernels_co/include/jax_aiter_mma.hpp
              ${PROJECT_SOURCE_DIR}/kernels_co/include/jax_aiter_device.hpp
              ${PROJECT_SOURCE_DIR}/include/jax_aiter/kernels/shared/aiter_flatmm.h
              ${PROJECT_SOURCE_DIR}/include/jax_aiter/kernels/shared/aiter_fp8gemm_blockscale.h
      COMMENT "Compiling the AITER FlatMM twin for ${arch}"
      VERBATIM)
    list(APPEND _flatmm_twin_args ${arch}=${_co})
    list(APPEND _flatmm_twin_objects ${_co})
  endforeach()
  add_custom_target(test_flatmm_twin_kernargs_objects ALL DEPENDS ${_flatmm_twin_objects})
  add_test(NAME test_flatmm_twin_kernargs
           COMMAND ${CMAKE_COMMAND} -E env LLVM_READELF=${JAX_AITER_LLVM_READELF}
                   ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/data/check_twin_kernargs.py
                   ${PROJECT_SOURCE_DIR}/include/jax_aiter/kernels/shared/aiter_flatmm.h
                   ${JAX_AITER_AITER_FACTS} ${_flatmm_twin_args})
endif()
