// AITER's FP8 block-scale ASM GEMM kernels (bf16 out, B pre-shuffled), one row each (origin:
// github.com/ROCm/aiter at e4048607a535, hsa/gfx942/fp8gemm_blockscale/fp8gemm_bf16_blockscale.csv
// and hsa/gfx950/fp8gemm_blockscale/fp8gemm_bf16_blockscale.csv, MIT licence, (c) AMD). The rows
// are aiter_fp8gemm_blockscale.csv, the one source of the host tables
// (kernels/aiter/fp8gemm_blockscale.hpp), the ABI twins' kernel source
// (kernels_co/aiter_fp8gemm_blockscale.twin.cpp), the CMake function that embeds AITER's code
// objects and the twins' metadata check (cmake/JaxAiterRows.cmake): the X-macro
// JAX_AITER_FP8GEMM_BLOCKSCALE_ROWS of the generated aiter_fp8gemm_blockscale.rows.h.
//
// X(symbol, code_object, tile_m, tile_n, on_gfx942, on_gfx950)
// Every row may split K (the CSVs' splitK = 1) and takes B pre-shuffled (bpreshuffle = 1); both
// archs have the same six. Order: ascending tile_m (the CSVs list 128x128 first, then 32..96).
#pragma once

#include "jax_aiter/kernels/shared/aiter_fp8gemm_blockscale.rows.h"

#include "jax_aiter/kernels/shared/aiter_i8gemm.h"

namespace jax_aiter::kernels::aiter_fp8bs {
inline constexpr int kBlockThreads = 256;  // every row's workgroup
inline constexpr int kMaxSplit = 16;       // splits our heuristic scores: 1..16
// The scale blocks: a_scale per (row, 128 columns of K), b_scale per (128 rows of N, 128 of K).
// A split's K chunk is a multiple of kScaleK too (AITER's roundup(ceil(K / split), 128)).
inline constexpr int kScaleK = 128;
inline constexpr int kScaleN = 128;
// B [N, K] fp8 is read in AITER's shuffle_weight(w, layout=(16, 16)) byte layout, the same
// bytes as the INT8 family's (aiter_i8gemm::shuffled_offset; AITER's op test
// op_tests/test_gemm_a8w8_blockscale.py shuffles with layout=(16, 16) for the ASM kernels).
inline constexpr const char* kShuffleName = aiter_i8gemm::kShuffleName;

// Split z's K range [z chunk, min(K, (z + 1) chunk)) for a launch with `split` splits.
JAX_AITER_I8GEMM_FN long long split_chunk(long long K, long long split) {
  return aiter_i8gemm::split_chunk(K, split);
}

// The fp8 format the host twins decode, carried in the first pad byte of the scale_k slot (the
// GPU kernels read their hardware's format and ignore the pads): 0 e4m3fn, 1 e4m3fnuz.
inline constexpr int kFormatFn = 0;
inline constexpr int kFormatFnuz = 1;
}  // namespace jax_aiter::kernels::aiter_fp8bs
