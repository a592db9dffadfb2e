# GEMM kernel tests that need no GPU. Included from tests/cpp/CMakeLists.txt.
#
# test_mfma_fragments: the AMD MFMA fragment code of kernels_co/include/jax_aiter_mma.hpp (and the
# sm_90 ldmatrix addressing), run on the CPU against an emulated matrix instruction.
jax_aiter_test(test_mfma_fragments)
target_include_directories(test_mfma_fragments PRIVATE ${PROJECT_SOURCE_DIR}/kernels_co/include)

# The AITER BF16 GEMM twins' kernel-argument metadata against AITER's own (kernel-arguments.txt,
# which is not part of this repository: point JAX_AITER_AITER_FACTS at it to enable the test).
# Needs clang-22 and llvm-readelf-22 (JAX_AITER_CLANG, JAX_AITER_LLVM_READELF) and Python 3.
set(JAX_AITER_AITER_FACTS "" CACHE FILEPATH "AITER facts: kernel-arguments.txt (optional)")
find_package(Python3 COMPONENTS Interpreter QUIET)
if(JAX_AITER_AITER_FACTS AND JAX_AITER_CLANG AND JAX_AITER_LLVM_READELF AND Python3_FOUND)
  set(_twin_src ${PROJECT_SOURCE_DIR}/kernels_co/aiter_bf16gemm.twin.cpp)
  set(_twin_args "")
  set(_twin_objects "")
  foreach(arch gfx942 gfx950)
    set(_co ${CMAKE_CURRENT_BINARY_DIR}/aiter_bf16gemm_twin_${arch}.co)
    add_custom_command(
      OUTPUT ${_co}
      COMMAND ${JAX_AITER_CLANG} -x hip --offload-arch=${arch} --offload-device-only
              --no-gpu-bundle-output -nogpuinc -nogpulib -mcode-object-version=5 -fuse-cuid=none
              -fhip-kernel-arg-name -O3 -std=c++20 -I ${PROJECT_SOURCE_DIR}/kernels_co/include
              -I ${PROJECT_SOURCE_DIR}/include -o ${_co} ${_twin_src}
      DEPENDS ${_twin_src} ${PROJECT_SOURCE_DIR}/kernels_co/include/jax_aiter_gemm_tile.hpp
              ${PROJECT_SOURCE_DIR}/kernels_co/include/jax_aiter_mma.hpp
              ${PROJECT_SOURCE_DIR}/kernels_co/include/jax_aiter_device.hpp
              ${PROJECT_SOURCE_DIR}/include/jax_aiter/kernels/shared/aiter_bf16gemm.h
      COMMENT "Compiling the AITER BF16 GEMM twins for ${arch}"
      VERBATIM)
    list(APPEND _twin_args ${arch}=${_co})
    list(APPEND _twin_objects ${_co})
  endforeach()
  add_custom_target(test_twin_kernargs_objects ALL DEPENDS ${_twin_objects})
  add_test(NAME test_twin_kernargs
           COMMAND ${CMAKE_COMMAND} -E env LLVM_READELF=${JAX_AITER_LLVM_READELF}
                   ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/data/check_twin_kernargs.py
                   ${PROJECT_SOURCE_DIR}/include/jax_aiter/kernels/shared/aiter_bf16gemm.h
                   ${JAX_AITER_AITER_FACTS} ${_twin_args})
endif()
