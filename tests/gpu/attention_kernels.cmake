# Standalone check and timing of our portable attention kernels on an sm_90 GPU through the CUDA
# driver API alone (tests/gpu/cuda_attention_kernels.cpp). Included from tests/gpu/CMakeLists.txt;
# run on the GPU machine as
#   cuda_attention_kernels jax_aiter_kernels/attention.sm_90.cubin [check|bench|all]
add_executable(cuda_attention_kernels ${CMAKE_CURRENT_LIST_DIR}/cuda_attention_kernels.cpp)
target_link_libraries(cuda_attention_kernels PRIVATE jax_aiter::jax_aiter CUDA::cuda_driver)

# The cubin, by the rule jax_aiter_embed_kernels() uses, beside the executable.
jax_aiter_compile_kernels(_attention_cubin attention.kernel.cpp sm_90)
add_custom_target(cuda_attention_kernels_cubin DEPENDS ${_attention_cubin})
add_dependencies(cuda_attention_kernels cuda_attention_kernels_cubin)
