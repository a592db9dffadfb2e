# The ASM attention tiers (ops/attention_asm.hpp) on an sm_90 GPU through the ABI twins of AITER's
# v3 kernels (tests/gpu/cuda_attention_asm_twins.cpp), with the CUDA driver API alone. Included
# from tests/gpu/CMakeLists.txt; run on the GPU machine as
#   cuda_attention_asm_twins jax_aiter_kernels/aiter_fmha_v3.sm_90.cubin \
#                            jax_aiter_kernels/attention.sm_90.cubin
# (the second cubin holds our gqa_reduce kernel, which GQA backward plans end with).
add_executable(cuda_attention_asm_twins ${CMAKE_CURRENT_LIST_DIR}/cuda_attention_asm_twins.cpp)
target_link_libraries(cuda_attention_asm_twins PRIVATE jax_aiter::jax_aiter CUDA::cuda_driver)

# The cubins, by the rule jax_aiter_embed_kernels() uses, beside the executable.
jax_aiter_compile_kernels(_fmha_twin_cubin aiter_fmha_v3.twin.cpp sm_90)
jax_aiter_compile_kernels(_fmha_attention_cubin attention.kernel.cpp sm_90)
add_custom_target(cuda_attention_asm_twins_cubins DEPENDS ${_fmha_twin_cubin}
                                                          ${_fmha_attention_cubin})
add_dependencies(cuda_attention_asm_twins cuda_attention_asm_twins_cubins)
