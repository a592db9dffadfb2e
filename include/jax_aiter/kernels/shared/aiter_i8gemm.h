// AITER's INT8 ASM GEMM kernels (per-token a8w8, bf16 out), one row each (origin:
// github.com/ROCm/aiter at e4048607a535, hsa/gfx942/i8gemm/i8gemm_bf16_perTokenI8.csv and
// hsa/gfx950/i8gemm/i8gemm_bf16_perTokenI8.csv, MIT licence, (c) AMD). The rows are
// aiter_i8gemm.csv, the one source of the host tables (kernels/aiter/i8gemm.hpp), the ABI twins'
// kernel source (kernels_co/aiter_i8gemm.twin.cpp), the CMake function that embeds AITER's code
// objects and the twins' metadata check (cmake/JaxAiterRows.cmake); C++ reads them as the X-macro
// JAX_AITER_I8GEMM_ROWS of the generated aiter_i8gemm.rows.h. The rest is constexpr C++ the
// kernel compilers read too.
//
// X(symbol, code_object, tile_m, tile_n, split_k, kernarg_bytes, on_gfx942, on_gfx950)
//   split_k        1: the kernel may split K (AITER's CSV splitK column); 0: only split 1, and
//                  AITER's heuristic never picks it (reachable by name, from tuned configs)
//   kernarg_bytes  the kernarg segment the code object declares: 208 (AITER's struct), or 256
//                  for the compiler-made gfx942 112x256 (three more anonymous pointer slots at
//                  208, 224, 240, which AITER's 208-byte struct leaves to stray host bytes; we
//                  pass zeros)
// Order: ascending tile_m (gfx950's CSV order; gfx942's CSV lists the same rows in another order
// and 112x256 first). Every row takes B pre-shuffled (the CSVs' bpreshuffle = 1).
#pragma once

#include "jax_aiter/kernels/shared/aiter_i8gemm.rows.h"

// The layout functions below run in host code, our kernels and the host twins: nvcc needs them
// marked for both sides (clang in HIP mode treats constexpr functions as both already).
#if defined(__CUDACC__)
#define JAX_AITER_I8GEMM_FN __host__ __device__ constexpr
#else
#define JAX_AITER_I8GEMM_FN constexpr
#endif

namespace jax_aiter::kernels::aiter_i8gemm {
inline constexpr int kBlockThreads = 256;  // every row's workgroup
inline constexpr int kMaxSplit = 16;       // splits AITER's heuristic considers: 1..16
// A split's K chunk is a multiple of this (AITER: "every block deals with 128x k"): chunk =
// roundup(ceil(K / split), 128), and a split is valid only if ceil(K / chunk) == split.
inline constexpr int kSplitKAlign = 128;

// The pre-shuffled B layout the kernels read: AITER's shuffle_weight(w, layout=(16, 16)) for
// int8 (the layout AITER's own op test and tuner feed these kernels, op_tests/test_gemm_a8w8.py
// and csrc/ck_gemm_a8w8_bpreshuffle/gemm_a8w8_bpreshuffle_tune.py; the docstring of
// gemm_a8w8_ASM and a comment in asm_gemm_a8w8.cu say (32,16)). B [N, K] viewed as
// [N/16, 16, K/32, 2, 16] and stored as [N/16, K/32, 2, 16, 16]: each 32-column K block of 16
// rows is two 256-byte planes (k 0-15, then k 16-31), row after row, 16 bytes a row.
inline constexpr int kShuffleN = 16;  // rows of a block (the layout's IN)
inline constexpr int kShuffleK = 32;  // bytes of K of a block (2 x the layout's IK = 16)
inline constexpr const char* kShuffleName = "16x16";

// Byte offset of B[n][k] in the shuffled buffer of a [N, K] weight (K % 32 == 0, N % 16 == 0).
JAX_AITER_I8GEMM_FN long long shuffled_offset(long long n, long long k, long long K) {
  return ((n / kShuffleN) * (K / kShuffleK) + k / kShuffleK) * (kShuffleN * kShuffleK) +
         ((k % kShuffleK) / 16) * (kShuffleN * 16) + (n % kShuffleN) * 16 + k % 16;
}
// The 16-byte chunk of B[n][16 c .. 16 c + 15] (contiguous in the shuffled buffer).
JAX_AITER_I8GEMM_FN long long shuffled_chunk(long long n, long long c, long long K) {
  return shuffled_offset(n, 16 * c, K);
}

// Split z's K range [z chunk, min(K, (z + 1) chunk)) for a launch with `split` splits.
JAX_AITER_I8GEMM_FN long long split_chunk(long long K, long long split) {
  const long long s = split > 1 ? split : 1;
  const long long per = (K + s - 1) / s;
  return (per + kSplitKAlign - 1) / kSplitKAlign * kSplitKAlign;
}
}  // namespace jax_aiter::kernels::aiter_i8gemm
