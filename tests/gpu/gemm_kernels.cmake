# Standalone check and timing of our GEMM kernels on an sm_90 GPU through the CUDA driver API alone
# (tests/gpu/cuda_gemm_kernels.cpp). Included from tests/gpu/CMakeLists.txt; run on the GPU
# machine (scripts/gpu_run.sh) as
#   cuda_gemm_kernels jax_aiter_kernels/gemm.sm_90.cubin jax_aiter_kernels/aiter_bf16gemm.sm_90.cubin
#                     [check|bench|all]
add_executable(cuda_gemm_kernels ${CMAKE_CURRENT_LIST_DIR}/cuda_gemm_kernels.cpp)
target_link_libraries(cuda_gemm_kernels PRIVATE jax_aiter::jax_aiter CUDA::cuda_driver)

# The two cubins, by the rule jax_aiter_embed_kernels() uses, beside the executable.
jax_aiter_compile_kernels(_gemm_cubin gemm.kernel.cpp sm_90)
jax_aiter_compile_kernels(_twin_cubin aiter_bf16gemm.twin.cpp sm_90)
add_custom_target(cuda_gemm_kernels_cubins DEPENDS ${_gemm_cubin} ${_twin_cubin})
add_dependencies(cuda_gemm_kernels cuda_gemm_kernels_cubins)

# The INT8 kernels (tests/gpu/cuda_gemm_i8_kernels.cpp), run as
#   cuda_gemm_i8_kernels jax_aiter_kernels/gemm_i8.sm_90.cubin [check|bench|all]
add_executable(cuda_gemm_i8_kernels ${CMAKE_CURRENT_LIST_DIR}/cuda_gemm_i8_kernels.cpp)
target_link_libraries(cuda_gemm_i8_kernels PRIVATE jax_aiter::jax_aiter CUDA::cuda_driver)
jax_aiter_compile_kernels(_gemm_i8_cubin gemm_i8.kernel.cpp sm_90)
add_custom_target(cuda_gemm_i8_kernels_cubins DEPENDS ${_gemm_i8_cubin})
add_dependencies(cuda_gemm_i8_kernels cuda_gemm_i8_kernels_cubins)

# The FP8 block-scale kernels (tests/gpu/cuda_gemm_fp8bs_kernels.cpp), run as
#   cuda_gemm_fp8bs_kernels jax_aiter_kernels/gemm_fp8_blockscale.sm_90.cubin [check|bench|all]
add_executable(cuda_gemm_fp8bs_kernels ${CMAKE_CURRENT_LIST_DIR}/cuda_gemm_fp8bs_kernels.cpp)
target_link_libraries(cuda_gemm_fp8bs_kernels PRIVATE jax_aiter::jax_aiter CUDA::cuda_driver)
jax_aiter_compile_kernels(_gemm_fp8bs_cubin gemm_fp8_blockscale.kernel.cpp sm_90)
add_custom_target(cuda_gemm_fp8bs_kernels_cubins DEPENDS ${_gemm_fp8bs_cubin})
add_dependencies(cuda_gemm_fp8bs_kernels cuda_gemm_fp8bs_kernels_cubins)

# The quantized GEMMs' decode kernels (tests/gpu/cuda_gemm_stream_q_kernels.cpp), run as
#   cuda_gemm_stream_q_kernels jax_aiter_kernels/gemm_fp8_blockscale.sm_90.cubin
#       jax_aiter_kernels/gemm_i8.sm_90.cubin jax_aiter_kernels/gemm_fp4.sm_90.cubin [check|bench|all]
add_executable(cuda_gemm_stream_q_kernels ${CMAKE_CURRENT_LIST_DIR}/cuda_gemm_stream_q_kernels.cpp)
target_link_libraries(cuda_gemm_stream_q_kernels PRIVATE jax_aiter::jax_aiter CUDA::cuda_driver)
jax_aiter_compile_kernels(_gemm_fp4_cubin gemm_fp4.kernel.cpp sm_90)
add_custom_target(cuda_gemm_stream_q_kernels_cubins
                  DEPENDS ${_gemm_fp8bs_cubin} ${_gemm_i8_cubin} ${_gemm_fp4_cubin})
add_dependencies(cuda_gemm_stream_q_kernels cuda_gemm_stream_q_kernels_cubins)
