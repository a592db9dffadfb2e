# What each op's kernels are, for jax_aiter_embed_kernels() (cmake/JaxAiterKernels.cmake):
#   JAX_AITER_OP_<op>_MODULES   our portable kernel sources, kernels_co/<module>.kernel.cpp, each
#                               one code object named <module>
#   JAX_AITER_OP_<op>_AITER     AITER families whose ASM code objects the op may launch; for each,
#                               JAX_AITER_FAMILY_<family>_LIST is the list of its rows (relative
#                               to the include directory) and kernels_co/<family>.twin.cpp holds
#                               its ABI twins
# A new op adds its lines here and nothing else in CMake.

set(JAX_AITER_OP_rmsnorm_MODULES rmsnorm)
set(JAX_AITER_OP_rmsnorm_AITER "")  # AITER ships no ASM RMSNorm

set(JAX_AITER_OP_gemm_MODULES gemm)
set(JAX_AITER_OP_gemm_AITER aiter_bf16gemm)
set(JAX_AITER_FAMILY_aiter_bf16gemm_LIST jax_aiter/kernels/shared/aiter_bf16gemm.h)

set(JAX_AITER_OP_attention_MODULES attention)
set(JAX_AITER_OP_attention_AITER aiter_fmha_v3)
set(JAX_AITER_FAMILY_aiter_fmha_v3_LIST jax_aiter/kernels/shared/aiter_fmha_v3.h)

set(JAX_AITER_OP_gemm_i8_MODULES gemm_i8)
set(JAX_AITER_OP_gemm_i8_AITER aiter_i8gemm)
set(JAX_AITER_FAMILY_aiter_i8gemm_LIST jax_aiter/kernels/shared/aiter_i8gemm.h)

set(JAX_AITER_OP_gemm_fp8_mi350_MODULES gemm_fp8_mi350)
set(JAX_AITER_OP_gemm_fp8_mi350_AITER aiter_mi350)
set(JAX_AITER_FAMILY_aiter_mi350_LIST jax_aiter/kernels/shared/aiter_mi350.h)

set(JAX_AITER_OP_flatmm_fp8_MODULES flatmm_fp8)
set(JAX_AITER_OP_flatmm_fp8_AITER aiter_flatmm)
set(JAX_AITER_FAMILY_aiter_flatmm_LIST jax_aiter/kernels/shared/aiter_flatmm.h)

set(JAX_AITER_OP_gemm_fp4_MODULES gemm_fp4)
set(JAX_AITER_OP_gemm_fp4_AITER aiter_f4gemm)
set(JAX_AITER_FAMILY_aiter_f4gemm_LIST jax_aiter/kernels/shared/aiter_f4gemm.h)

set(JAX_AITER_OP_gemm_fp8bs_MODULES gemm_fp8bs)
set(JAX_AITER_OP_gemm_fp8bs_AITER aiter_fp8gemm_blockscale)
set(JAX_AITER_FAMILY_aiter_fp8gemm_blockscale_LIST
    jax_aiter/kernels/shared/aiter_fp8gemm_blockscale.h)
