// AITER's BF16 ASM GEMM kernels we launch, one row each, in the order of AITER's tables (origin:
// github.com/ROCm/aiter at e4048607a535, hsa/gfx942/bf16gemm/bf16gemm_fp32bf16.csv and
// hsa/gfx950/bf16gemm/bf16gemm_fp32bf16.csv, MIT licence, (c) AMD). One list for the host tables
// (kernels/aiter/bf16gemm.hpp), the ABI twins' kernel source (kernels_co/aiter_bf16gemm.twin.cpp)
// and the CMake function that embeds AITER's code objects (cmake/JaxAiterKernels.cmake reads the
// code-object paths out of this file). Plain preprocessor data: the kernel compilers read it too.
//
// X(symbol, code_object, tile_m, tile_n, prefetch, split_k, bias, on_gfx942, on_gfx950)
//   symbol       the kernel's symbol (AITER's knl_name)
//   code_object  its path under hsa/<arch>/
//   split_k      1: a "splitk_clean" kernel that splits K over blockIdx.z (semaphore protocol)
//   bias         1: honours ptr_Bias / add_bias
// Both CSVs list these rows in this order (gfx950's adds 256x256 first). Rows with bPreshuffle = 1
// are left out: gemm() takes B as [N, K] row-major, not in AITER's pre-shuffled layout.
#pragma once

#define JAX_AITER_BF16GEMM_ROWS(X)                                                                \
  X(_ZN5aiter24bf16gemm_bf16_tn_256x256E, "bf16gemm/bf16gemm_bf16_tn_256x256.co", 256, 256, 0, 0, \
    0, 0, 1)                                                                                      \
  X(_ZN5aiter37bf16gemm_fp32bf16_tn_32x64_pf3_splitkE,                                            \
    "bf16gemm/bf16gemm_fp32bf16_tn_32x64_pf3_splitk.co", 32, 64, 3, 0, 1, 1, 1)                   \
  X(_ZN5aiter37bf16gemm_fp32bf16_tn_48x64_pf3_splitkE,                                            \
    "bf16gemm/bf16gemm_fp32bf16_tn_48x64_pf3_splitk.co", 48, 64, 3, 0, 1, 1, 1)                   \
  X(_ZN5aiter37bf16gemm_fp32bf16_tn_64x64_pf3_splitkE,                                            \
    "bf16gemm/bf16gemm_fp32bf16_tn_64x64_pf3_splitk.co", 64, 64, 3, 0, 1, 1, 1)                   \
  X(_ZN5aiter37bf16gemm_fp32bf16_tn_96x64_pf3_splitkE,                                            \
    "bf16gemm/bf16gemm_fp32bf16_tn_96x64_pf3_splitk.co", 96, 64, 3, 0, 1, 1, 1)                   \
  X(_ZN5aiter39bf16gemm_fp32bf16_tn_96x64_splitk_cleanE,                                          \
    "bf16gemm/bf16gemm_fp32bf16_tn_96x64_splitk_clean.co", 96, 64, 0, 1, 1, 1, 1)                 \
  X(_ZN5aiter39bf16gemm_fp32bf16_tn_32x64_splitk_cleanE,                                          \
    "bf16gemm/bf16gemm_fp32bf16_tn_32x64_splitk_clean.co", 32, 64, 0, 1, 1, 1, 1)                 \
  X(_ZN5aiter39bf16gemm_fp32bf16_tn_48x64_splitk_cleanE,                                          \
    "bf16gemm/bf16gemm_fp32bf16_tn_48x64_splitk_clean.co", 48, 64, 0, 1, 1, 1, 1)                 \
  X(_ZN5aiter39bf16gemm_fp32bf16_tn_64x64_splitk_cleanE,                                          \
    "bf16gemm/bf16gemm_fp32bf16_tn_64x64_splitk_clean.co", 64, 64, 0, 1, 1, 1, 1)                 \
  X(_ZN5aiter39bf16gemm_fp32bf16_tn_80x64_splitk_cleanE,                                          \
    "bf16gemm/bf16gemm_fp32bf16_tn_80x64_splitk_clean.co", 80, 64, 0, 1, 1, 1, 1)

namespace jax_aiter::kernels::aiter_bf16gemm {
inline constexpr int kSubK = 64;           // K granularity of every row (the CSVs' subK)
inline constexpr int kBlockThreads = 256;  // every row's workgroup
inline constexpr int kMaxSplit = 16;
// The split-K semaphore: one u32 counter per output tile (AITER allocates it as (16, 64) u32), so
// a split launch covers at most 1024 tiles.
inline constexpr int kSemaphoreCounters = 16 * 64;
}  // namespace jax_aiter::kernels::aiter_bf16gemm
