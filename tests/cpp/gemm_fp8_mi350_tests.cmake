# MI350 FP8 block-scale GEMM (aiter.gemm_fp8_mi350): the ASM tier's choice over a grid of shapes
# against AITER's launcher rule; the handler through the fake XLA runtime on the Host backend (both
# tiers, every AITER MI350 row forced through its ABI twin); the twins' kernel-argument metadata
# against AITER's. Included from tests/cpp/CMakeLists.txt.

jax_aiter_test(test_gemm_fp8_mi350_select)

if(TARGET XlaFfi::headers)
  jax_aiter_test(test_ffi_gemm_fp8_mi350)
  if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
    target_compile_options(test_ffi_gemm_fp8_mi350 PRIVATE -O2)
  endif()
endif()

# The MI350 twins' kernel-argument metadata against AITER's own (kernel-arguments.txt;
# JAX_AITER_AITER_FACTS, see gemm_kernel_tests.cmake). AITER ships these rows for gfx950 only;
# the gfx942 build of the twins is compared with gfx950's lines.
if(JAX_AITER_AITER_FACTS AND JAX_AITER_CLANG AND JAX_AITER_LLVM_READELF AND Python3_FOUND)
  set(_mi350_twin_src ${PROJECT_SOURCE_DIR}/kernels_co/aiter_mi350.twin.cpp)
  set(_mi350_twin_args "")
  set(_mi350_twin_objects "")
  foreach(arch gfx942 gfx950)
    set(_co ${CMAKE_CURRENT_BINARY_DIR}/aiter_mi350_twin_${arch}.co)
    add_custom_command(
      OUTPUT ${_co}
      COMMAND ${JAX_AITER_CLANG} -x hip --offload-arch=${arch} --offload-device-only
              --no-gpu-bundle-output -nogpuinc -nogpulib -mcode-object-version=5 -fuse-cuid=none
              -fhip-kernel-arg-name -O3 -std=c++20 -I ${PROJECT_SOURCE_DIR}/kernels_co/include
              -I ${PROJECT_SOURCE_DIR}/include -o ${_co} ${_mi350_twin_src}
      DEPENDS ${_mi350_twin_src} ${PROJECT_SOURCE_DIR}/kernels_co/include/jax_aiter_gemm_fp8bs_tile.hpp
              ${PROJECT_SOURCE_DIR}/kernels_co/include/jax_aiter_gemm_i8_tile.hpp
              ${PROJECT_SOURCE_DIR}/kernels_co/include/jax_aiter_mma.hpp
              ${PROJECT_SOURCE_DIR}/kernels_co/include/jax_aiter_device.hpp
              ${PROJECT_SOURCE_DIR}/include/jax_aiter/kernels/shared/aiter_mi350.h
              ${PROJECT_SOURCE_DIR}/include/jax_aiter/kernels/shared/aiter_fp8gemm_blockscale.h
      COMMENT "Compiling the AITER MI350 FP8 twins for ${arch}"
      VERBATIM)
    list(APPEND _mi350_twin_args ${arch}=${_co})
    list(APPEND _mi350_twin_objects ${_co})
  endforeach()
  add_custom_target(test_mi350_twin_kernargs_objects ALL DEPENDS ${_mi350_twin_objects})
  add_test(NAME test_mi350_twin_kernargs
           COMMAND ${CMAKE_COMMAND} -E env LLVM_READELF=${JAX_AITER_LLVM_READELF}
                   ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/data/check_twin_kernargs.py
                   ${PROJECT_SOURCE_DIR}/include/jax_aiter/kernels/shared/aiter_mi350.h
                   ${JAX_AITER_AITER_FACTS} ${_mi350_twin_args})
endif()
