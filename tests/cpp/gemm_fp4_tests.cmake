# FP4 GEMM (aiter.gemm_fp4): the ASM tier's selection over a grid of shapes against an independent
# rule; the handler through the fake XLA runtime on the Host backend (both tiers, every AITER
# f4gemm row forced through its ABI twin); the twins' kernel-argument metadata against AITER's.
# Included from tests/cpp/CMakeLists.txt.

jax_aiter_test(test_gemm_fp4_select)

if(TARGET XlaFfi::headers)
  jax_aiter_test(test_ffi_gemm_fp4)
  # The host twins multiply for real: seconds optimised, much longer unoptimised.
  if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
    target_compile_options(test_ffi_gemm_fp4 PRIVATE -O2)
  endif()
endif()

# The AITER FP4 GEMM twins' kernel-argument metadata against AITER's own (kernel-arguments.txt;
# JAX_AITER_AITER_FACTS, see gemm_kernel_tests.cmake, which declares it and finds Python). AITER
# ships f4gemm for gfx950 only.
if(JAX_AITER_AITER_FACTS AND JAX_AITER_CLANG AND JAX_AITER_LLVM_READELF AND Python3_FOUND)
  set(_f4_twin_src ${PROJECT_SOURCE_DIR}/kernels_co/aiter_f4gemm.twin.cpp)
  set(_f4_co ${CMAKE_CURRENT_BINARY_DIR}/aiter_f4gemm_twin_gfx950.co)
  add_custom_command(
    OUTPUT ${_f4_co}
    COMMAND ${JAX_AITER_CLANG} -x hip --offload-arch=gfx950 --offload-device-only
            --no-gpu-bundle-output -nogpuinc -nogpulib -mcode-object-version=5 -fuse-cuid=none
            -fhip-kernel-arg-name -O3 -std=c++20 -I ${PROJECT_SOURCE_DIR}/kernels_co/include
            -I ${PROJECT_SOURCE_DIR}/include -o ${_f4_co} ${_f4_twin_src}
    DEPENDS ${_f4_twin_src} ${PROJECT_SOURCE_DIR}/kernels_co/include/jax_aiter_gemm_fp4_tile.hpp
            ${PROJECT_SOURCE_DIR}/kernels_co/include/jax_aiter_gemm_i8_tile.hpp
            ${PROJECT_SOURCE_DIR}/kernels_co/include/jax_aiter_device.hpp
            ${PROJECT_SOURCE_DIR}/include/jax_aiter/kernels/shared/aiter_f4gemm.h
    COMMENT "Compiling the AITER FP4 GEMM twins for gfx950"
    VERBATIM)
  add_custom_target(test_f4_twin_kernargs_objects ALL DEPENDS ${_f4_co})
  add_test(NAME test_f4_twin_kernargs
           COMMAND ${CMAKE_COMMAND} -E env LLVM_READELF=${JAX_AITER_LLVM_READELF}
                   ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/data/check_twin_kernargs.py
                   ${PROJECT_SOURCE_DIR}/include/jax_aiter/kernels/shared/aiter_f4gemm.h
                   ${JAX_AITER_AITER_FACTS} gfx950=${_f4_co})
endif()
