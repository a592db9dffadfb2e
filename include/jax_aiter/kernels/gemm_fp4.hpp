// ABI of our portable FP4 GEMM kernels (kernels_co/gemm_fp4.kernel.cpp, code object "gemm_fp4"):
// the argument struct field by field as the kernels declare their parameters, and the kernel
// table, generated from the list the kernel source instantiates (kernels/shared/gemm_fp4.h).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "jax_aiter/kernels/kernel.hpp"
#include "jax_aiter/kernels/shared/gemm_fp4.h"
#include "jax_aiter/kernels/shared/gemm_stream_q.h"

namespace jax_aiter::kernels {

// out = dequant(a) . dequant(b)^T as bf16, one block a BM x BN tile.
struct GemmFp4Args {
  const void* a;        // fp4x2 [M, K/2], rows lda bytes apart
  const void* b;        // fp4x2 [N, K/2], shuffled (16, 16) if b_shuffled, else plain
  const void* a_scale;  // e8m0, e8m0_shuffle layout, rows sa_stride bytes apart (padded)
  const void* b_scale;  // e8m0, e8m0_shuffle layout, rows sb_stride bytes apart (padded)
  void* out;            // bf16 [M, N] row-major
  int32_t M, N, K;
  int32_t lda;
  int32_t sa_stride, sb_stride;
  int32_t b_shuffled;  // 1: b in the (16, 16) layout
};
static_assert(offsetof(GemmFp4Args, M) == 40 && sizeof(GemmFp4Args) == 72);

inline constexpr std::array kGemmFp4Fields{
    JAX_AITER_ARG_FIELD(GemmFp4Args, a),         JAX_AITER_ARG_FIELD(GemmFp4Args, b),
    JAX_AITER_ARG_FIELD(GemmFp4Args, a_scale),   JAX_AITER_ARG_FIELD(GemmFp4Args, b_scale),
    JAX_AITER_ARG_FIELD(GemmFp4Args, out),       JAX_AITER_ARG_FIELD(GemmFp4Args, M),
    JAX_AITER_ARG_FIELD(GemmFp4Args, N),         JAX_AITER_ARG_FIELD(GemmFp4Args, K),
    JAX_AITER_ARG_FIELD(GemmFp4Args, lda),       JAX_AITER_ARG_FIELD(GemmFp4Args, sa_stride),
    JAX_AITER_ARG_FIELD(GemmFp4Args, sb_stride), JAX_AITER_ARG_FIELD(GemmFp4Args, b_shuffled),
};

inline constexpr std::string_view kGemmFp4CodeObject = "gemm_fp4";

struct GemmFp4Tile {
  std::string_view name;
  int bm, bn, threads;
  KernelInfo kernel;
};

namespace gemm_fp4_detail {
// clang-format off
#define JA_GEMM_FP4_TILE(name, BM, BN, THREADS)                                              \
  GemmFp4Tile{#name, BM, BN, THREADS,                                                        \
              KernelInfo{kGemmFp4CodeObject, "jax_aiter_gemm_fp4_" #name, sizeof(GemmFp4Args), \
                         kGemmFp4Fields}},
inline constexpr GemmFp4Tile kTiles[] = {JAX_AITER_GEMM_FP4_TILES(JA_GEMM_FP4_TILE)};
#undef JA_GEMM_FP4_TILE
// clang-format on
}  // namespace gemm_fp4_detail

// Largest BM first (the portable rule picks the first with BM <= M).
inline constexpr std::span<const GemmFp4Tile> kGemmFp4Tiles = gemm_fp4_detail::kTiles;
static_assert(kGemmFp4Tiles[0].kernel.symbol == "jax_aiter_gemm_fp4_t64x64");

// The decode kernels (small M): same arguments, block kGemmFp4DecodeThreads, 16 rows of B a block
// (kernels/shared/gemm_fp4.h states the work split).
inline constexpr int kGemmFp4DecodeThreads = JAX_AITER_GEMM_FP4_DECODE_THREADS;
inline constexpr int kGemmFp4DecodeRows = JAX_AITER_GEMM_FP4_DECODE_ROWS;
inline constexpr int kGemmFp4DecodeSlices = JAX_AITER_GEMM_FP4_DECODE_SLICES;
static_assert(kGemmFp4DecodeThreads == kGemmFp4DecodeRows * kGemmFp4DecodeSlices);

struct GemmFp4Decode {
  std::string_view name;
  int bm, u;  // out rows a block; 16-byte chunks of B a thread a stage
  KernelInfo kernel;
};

namespace gemm_fp4_detail {
// clang-format off
#define JA_GEMM_FP4_DECODE(name, BM, U, MIN_BLOCKS)                                            \
  GemmFp4Decode{#name, BM, U,                                                                  \
                KernelInfo{kGemmFp4CodeObject, "jax_aiter_gemm_fp4_" #name, sizeof(GemmFp4Args), \
                           kGemmFp4Fields}},
inline constexpr GemmFp4Decode kDecodes[] = {JAX_AITER_GEMM_FP4_DECODE(JA_GEMM_FP4_DECODE)};
#undef JA_GEMM_FP4_DECODE
// clang-format on
}  // namespace gemm_fp4_detail

// Smallest BM first (the portable rule picks the first with BM >= M).
inline constexpr std::span<const GemmFp4Decode> kGemmFp4Decodes = gemm_fp4_detail::kDecodes;
static_assert(kGemmFp4Decodes[0].bm == 4 && kGemmFp4Decodes[1].bm == 16);

// The sm_90 decode kernel (M <= 16, B shuffled; kernels/shared/gemm_stream_q.h): grid (N / 16,
// 1, splits), block gemm_stream_q::kThreads, fp8 tensor cores. With one split it writes out; with
// more, split z's f32 sums go to partials plane z ([splits, M, N]) and
// jax_aiter_gemm_fp4_stream_finish adds them.
struct GemmFp4StreamArgs {
  const void* a;  // as GemmFp4Args (b shuffled (16, 16))
  const void* b;
  const void* a_scale;
  const void* b_scale;
  void* out;
  void* partials;  // f32 [splits, M, N] (null with one split)
  int32_t M, N, K;
  int32_t lda;
  int32_t sb_stride;  // b_scale's padded row (a_scale's rows 0..15 need none)
  int32_t k_chunk;    // K (values) of a split, a multiple of 2 gemm_stream_q::kStepBytes
  int32_t splits;
};
static_assert(offsetof(GemmFp4StreamArgs, M) == 48 && sizeof(GemmFp4StreamArgs) == 80);

inline constexpr std::array kGemmFp4StreamFields{
    JAX_AITER_ARG_FIELD(GemmFp4StreamArgs, a),
    JAX_AITER_ARG_FIELD(GemmFp4StreamArgs, b),
    JAX_AITER_ARG_FIELD(GemmFp4StreamArgs, a_scale),
    JAX_AITER_ARG_FIELD(GemmFp4StreamArgs, b_scale),
    JAX_AITER_ARG_FIELD(GemmFp4StreamArgs, out),
    JAX_AITER_ARG_FIELD(GemmFp4StreamArgs, partials),
    JAX_AITER_ARG_FIELD(GemmFp4StreamArgs, M),
    JAX_AITER_ARG_FIELD(GemmFp4StreamArgs, N),
    JAX_AITER_ARG_FIELD(GemmFp4StreamArgs, K),
    JAX_AITER_ARG_FIELD(GemmFp4StreamArgs, lda),
    JAX_AITER_ARG_FIELD(GemmFp4StreamArgs, sb_stride),
    JAX_AITER_ARG_FIELD(GemmFp4StreamArgs, k_chunk),
    JAX_AITER_ARG_FIELD(GemmFp4StreamArgs, splits),
};

// out[m, n] = sum over z (in order) of partials[z, m, n] as bf16: one element a thread, block
// gemm_stream_q::kFinishThreads.
struct GemmFp4StreamFinishArgs {
  const void* partials;
  void* out;
  int32_t M, N;
  int32_t splits;
};
static_assert(sizeof(GemmFp4StreamFinishArgs) == 32);

inline constexpr std::array kGemmFp4StreamFinishFields{
    JAX_AITER_ARG_FIELD(GemmFp4StreamFinishArgs, partials),
    JAX_AITER_ARG_FIELD(GemmFp4StreamFinishArgs, out),
    JAX_AITER_ARG_FIELD(GemmFp4StreamFinishArgs, M),
    JAX_AITER_ARG_FIELD(GemmFp4StreamFinishArgs, N),
    JAX_AITER_ARG_FIELD(GemmFp4StreamFinishArgs, splits),
};

inline constexpr KernelInfo kGemmFp4Stream{kGemmFp4CodeObject, "jax_aiter_gemm_fp4_stream",
                                           sizeof(GemmFp4StreamArgs), kGemmFp4StreamFields};
inline constexpr KernelInfo kGemmFp4StreamFinish{
    kGemmFp4CodeObject, "jax_aiter_gemm_fp4_stream_finish", sizeof(GemmFp4StreamFinishArgs),
    kGemmFp4StreamFinishFields};

}  // namespace jax_aiter::kernels
