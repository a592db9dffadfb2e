// AITER's BF16 ASM GEMM kernels we launch, one row each, in the order of AITER's tables (origin:
// github.com/ROCm/aiter at e4048607a535, hsa/gfx942/bf16gemm/bf16gemm_fp32bf16.csv and
// hsa/gfx950/bf16gemm/bf16gemm_fp32bf16.csv, MIT licence, (c) AMD). The rows are
// aiter_bf16gemm.csv, the one source of the host tables (kernels/aiter/bf16gemm.hpp), the ABI
// twins' kernel source (kernels_co/aiter_bf16gemm.twin.cpp), the CMake function that embeds AITER's
// code objects and the twins' metadata check (cmake/JaxAiterRows.cmake); C++ reads them as the
// X-macro JAX_AITER_BF16GEMM_ROWS of the generated aiter_bf16gemm.rows.h.
//
// X(symbol, code_object, tile_m, tile_n, prefetch, split_k, bias, on_gfx942, on_gfx950)
//   symbol       the kernel's symbol (AITER's knl_name)
//   code_object  its path under hsa/<arch>/
//   split_k      1: a "splitk_clean" kernel that splits K over blockIdx.z (semaphore protocol)
//   bias         1: honours ptr_Bias / add_bias
// Both CSVs list these rows in this order (gfx950's adds 256x256 first). Rows with bPreshuffle = 1
// are left out: gemm() takes B as [N, K] row-major, not in AITER's pre-shuffled layout.
#pragma once

#include "jax_aiter/kernels/shared/aiter_bf16gemm.rows.h"

namespace jax_aiter::kernels::aiter_bf16gemm {
inline constexpr int kSubK = 64;           // K granularity of every row (the CSVs' subK)
inline constexpr int kBlockThreads = 256;  // every row's workgroup
inline constexpr int kMaxSplit = 16;
// The split-K semaphore: one u32 counter per output tile (AITER allocates it as (16, 64) u32), so
// a split launch covers at most 1024 tiles.
inline constexpr int kSemaphoreCounters = 16 * 64;
}  // namespace jax_aiter::kernels::aiter_bf16gemm
