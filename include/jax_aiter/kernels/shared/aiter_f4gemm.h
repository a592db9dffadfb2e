// AITER's FP4 (a4w4, MXFP4) ASM GEMM kernels, bf16 out, gfx950 only, one row each (origin:
// github.com/ROCm/aiter at e4048607a535, hsa/gfx950/f4gemm/f4gemm_bf16_per1x32Fp4.csv, MIT
// licence, (c) AMD; AITER ships no gfx942 rows). The rows are aiter_f4gemm.csv, the one
// source of the host tables (kernels/aiter/f4gemm.hpp), the ABI twins' kernel source
// (kernels_co/aiter_f4gemm.twin.cpp), the CMake function that embeds AITER's code objects and the
// twins' metadata check (cmake/JaxAiterRows.cmake): the X-macro JAX_AITER_F4GEMM_ROWS of the
// generated aiter_f4gemm.rows.h.
//
// X(symbol, code_object, tile_m, tile_n, split_k, bpreshuffle, kernarg_bytes, on_gfx942, on_gfx950)
//   split_k        1: the kernel may split K (log2_k_split > 0; the CSV's splitK column)
//   bpreshuffle    1: B is read pre-shuffled (16, 16) (shuffled_b_offset); 0: B plain [N, K/2]
//   kernarg_bytes  the kernarg segment the code object declares: 384 for the BpreShuffle rows
//                  (AITER's packed struct is 372 bytes: 12 trailing pad bytes it leaves to the
//                  host stack; ours covers them with zeros), 368 for noBpreShuffle_256x256 (no
//                  log2_k_split argument)
//   on_gfx942/950  the archs AITER ships the row for (0, 1: gfx950 only)
// Order: the CSV's row order (our tie-break order, ops/gemm_fp4_asm.hpp).
#pragma once

#include "jax_aiter/kernels/shared/aiter_f4gemm.rows.h"

// The layout functions below run in host code, our kernels and the host twins: nvcc needs them
// marked for both sides (clang in HIP mode treats constexpr functions as both already).
#if defined(__CUDACC__)
#define JAX_AITER_F4GEMM_FN __host__ __device__ constexpr
#else
#define JAX_AITER_F4GEMM_FN constexpr
#endif

namespace jax_aiter::kernels::aiter_f4gemm {
inline constexpr int kBlockThreads = 256;  // every row's workgroup (4 waves of 64)
inline constexpr int kMaxLog2Split = 4;    // splits 1, 2, 4, 8, 16 (log2_k_split 0..4)
// The kernels' K step: a split's K range is a multiple of it (AITER: k_per_tg rounded up to 256).
inline constexpr int kKStep = 256;
// AITER's gemm_a4w4 allocates out with a multiple of 32 rows ("Dim0 of gemm_a4w4_asm output needs
// to be padded to multiples of 32"): the kernels write whole 32-row groups.
inline constexpr int kOutRows = 32;
inline constexpr int kScaleBlock = 32;  // fp4 values per e8m0 scale, along K

// B (fp4x2 bytes [N, K/2]) pre-shuffled as AITER's shuffle_weight(w, layout=(16, 16)) shuffles
// the packed uint8 bytes (16 bytes a chunk, BK = 32 bytes): viewed as [N/16, 16, K/64, 2, 16]
// and stored as [N/16, K/64, 2, 16, 16]. Each 16-byte chunk is 32 fp4 values of one row: one
// e8m0 scale block. Byte offset of B byte (n, kb) of a weight with Kb = K/2 bytes a row
// (N % 16 == 0, K % 64 == 0).
inline constexpr int kShuffleN = 16;
inline constexpr int kShuffleKBytes = 32;
inline constexpr const char* kShuffleName = "16x16";  // b_layout of a shuffled B
inline constexpr const char* kPlainName = "none";     // b_layout of a plain B [N, K/2]
JAX_AITER_F4GEMM_FN long long shuffled_b_offset(long long n, long long kb, long long Kb) {
  return ((n / kShuffleN) * (Kb / kShuffleKBytes) + kb / kShuffleKBytes) *
             (kShuffleN * kShuffleKBytes) +
         ((kb % kShuffleKBytes) / 16) * (kShuffleN * 16) + (n % kShuffleN) * 16 + kb % 16;
}

// The e8m0 scales [rows, K/32] in AITER's e8m0_shuffle layout (aiter.ops.shuffle.shuffle_scale):
// padded to [roundup(rows, 256), roundup(K/32, 8)] (sn columns), viewed as
// [sm/32, 2, 16, sn/8, 2, 4] (row r = 32 i0 + 16 i1 + i2, column c = 8 j0 + 4 j1 + j2) and stored
// as [sm/32, sn/8, 4, 16, 2, 2] (i0, j0, j2, i2, j1, i1): each 32-row x 8-column block is 256
// contiguous bytes. Byte offset of scale (r, c); sn = the padded row stride (stride_Scale*0).
inline constexpr int kScaleRowPad = 256;
inline constexpr int kScaleColPad = 8;
inline constexpr const char* kScaleLayoutName = "e8m0_shuffle";
JAX_AITER_F4GEMM_FN long long shuffled_scale_offset(long long r, long long c, long long sn) {
  const long long i0 = r / 32, i1 = (r % 32) / 16, i2 = r % 16;
  const long long j0 = c / 8, j1 = (c % 8) / 4, j2 = c % 4;
  return ((((i0 * (sn / 8) + j0) * 4 + j2) * 16 + i2) * 2 + j1) * 2 + i1;
}
JAX_AITER_F4GEMM_FN long long round_up(long long x, long long m) { return (x + m - 1) / m * m; }

// K split: AITER's k_per_tg = roundup(K / 2^log2, 256) and gdz = ceil(K / k_per_tg). We only
// launch splits whose chunks are exact (K % (256 * split) == 0, so gdz == split): split z covers K
// [z chunk, (z + 1) chunk).
JAX_AITER_F4GEMM_FN long long split_chunk(long long K, long long log2_split) {
  const long long per = K >> (log2_split > 0 ? log2_split : 0);
  return round_up(per, kKStep);
}
}  // namespace jax_aiter::kernels::aiter_f4gemm
