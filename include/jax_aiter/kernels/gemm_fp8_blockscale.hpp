// ABI of our portable FP8 block-scale GEMM kernels (kernels_co/gemm_fp8_blockscale.kernel.cpp,
// code object "gemm_fp8_blockscale"): the argument structs field by field as the kernels declare
// their parameters, and the kernel table, generated from the list the kernel source instantiates
// (kernels/shared/gemm_fp8_blockscale.h).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "jax_aiter/kernels/kernel.hpp"
#include "jax_aiter/kernels/shared/gemm_fp8_blockscale.h"
#include "jax_aiter/kernels/shared/gemm_stream_q.h"

namespace jax_aiter::kernels {

// out = sum_kb (a[:, kb] . b[:, kb]^T) * a_scale[kb][m] * b_scale[n / 128][kb] as bf16 or f16,
// one block a BM x BN tile over all of K.
struct GemmFp8BlockscaleArgs {
  const void* a;        // fp8 [M, K], rows lda bytes apart
  const void* b;        // fp8 [N, K] shuffled (16, 16)
  const void* a_scale;  // f32 [K/128, M]
  const void* b_scale;  // f32 [ceil(N/128), K/128]
  void* out;            // bf16 or f16 [M, N] row-major
  int32_t M, N, K;
  int32_t lda;
  int32_t out_f16;  // 1: out is f16, 0: bf16
  int32_t fnuz;     // 1: the fp8 bytes are e4m3fnuz (read by the host twin; a GPU reads its own)
};
static_assert(offsetof(GemmFp8BlockscaleArgs, M) == 40 && sizeof(GemmFp8BlockscaleArgs) == 64);

inline constexpr std::array kGemmFp8BlockscaleFields{
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleArgs, a),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleArgs, b),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleArgs, a_scale),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleArgs, b_scale),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleArgs, out),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleArgs, M),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleArgs, N),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleArgs, K),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleArgs, lda),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleArgs, out_f16),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleArgs, fnuz),
};

// The w tile's split form (grid z = split): split z sums K [z * k_chunk, min(K, (z + 1) * k_chunk))
// (k_chunk a multiple of 128) and stores its f32 totals into slice z of partial.
struct GemmFp8BlockscaleSplitArgs {
  const void* a;
  const void* b;
  const void* a_scale;
  const void* b_scale;
  void* partial;  // f32 [splits, M, N]
  int32_t M, N, K;
  int32_t lda;
  int32_t k_chunk;
};
static_assert(offsetof(GemmFp8BlockscaleSplitArgs, M) == 40 &&
              offsetof(GemmFp8BlockscaleSplitArgs, k_chunk) == 56 &&
              sizeof(GemmFp8BlockscaleSplitArgs) == 64);

inline constexpr std::array kGemmFp8BlockscaleSplitFields{
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleSplitArgs, a),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleSplitArgs, b),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleSplitArgs, a_scale),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleSplitArgs, b_scale),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleSplitArgs, partial),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleSplitArgs, M),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleSplitArgs, N),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleSplitArgs, K),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleSplitArgs, lda),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleSplitArgs, k_chunk),
};

// out[i] = sum over z in order of partial[z][i], rounded once to bf16 or f16.
struct GemmFp8BlockscaleFinishArgs {
  const void* partial;  // f32 [splits, M, N]
  void* out;            // bf16 or f16 [M, N]
  int32_t M, N;
  int32_t splits;
  int32_t out_f16;
};
static_assert(sizeof(GemmFp8BlockscaleFinishArgs) == 32);

inline constexpr std::array kGemmFp8BlockscaleFinishFields{
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleFinishArgs, partial),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleFinishArgs, out),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleFinishArgs, M),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleFinishArgs, N),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleFinishArgs, splits),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleFinishArgs, out_f16),
};

// dst[c][r] = src[r][c] for f32 src [rows, cols]: the b_scale AITER's FlatMM kernel reads.
struct GemmFp8BlockscaleTransposeArgs {
  const void* src;  // f32 [rows, cols]
  void* dst;        // f32 [cols, rows]
  int32_t rows, cols;
};
static_assert(sizeof(GemmFp8BlockscaleTransposeArgs) == 24);

inline constexpr std::array kGemmFp8BlockscaleTransposeFields{
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleTransposeArgs, src),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleTransposeArgs, dst),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleTransposeArgs, rows),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleTransposeArgs, cols),
};

inline constexpr std::string_view kGemmFp8BlockscaleCodeObject = "gemm_fp8_blockscale";

inline constexpr KernelInfo kGemmFp8BlockscaleTranspose{
    kGemmFp8BlockscaleCodeObject, "jax_aiter_gemm_fp8_blockscale_transpose_scales",
    sizeof(GemmFp8BlockscaleTransposeArgs), kGemmFp8BlockscaleTransposeFields};

inline constexpr KernelInfo kGemmFp8BlockscaleFinish{
    kGemmFp8BlockscaleCodeObject, "jax_aiter_gemm_fp8_blockscale_finish",
    sizeof(GemmFp8BlockscaleFinishArgs), kGemmFp8BlockscaleFinishFields};

struct GemmFp8BlockscaleTile {
  std::string_view name;
  int bm, bn, bk, threads;
  KernelInfo kernel;
  KernelInfo split_kernel;  // the w tile's; an mma tile has none (empty symbol)
};

namespace gemm_fp8_blockscale_detail {
// The w tiles' kernels take the wgmma engine's dynamic shared memory (the CUDA backend opts in).
constexpr KernelInfo kernel(std::string_view symbol, std::string_view tile, uint32_t bytes,
                            std::span<const ArgField> fields) {
  KernelInfo k{kGemmFp8BlockscaleCodeObject, symbol, bytes, fields};
  if (tile[0] == 'w') k.dynamic_shared = gemm_fp8_blockscale::kWgmmaSmemBytes;
  return k;
}
// clang-format off
#define JA_GEMM_FP8_BLOCKSCALE_TILE(name, BM, BN, BK, THREADS)                                  \
  GemmFp8BlockscaleTile{#name, BM, BN, BK, THREADS,                                             \
                        kernel("jax_aiter_gemm_fp8_blockscale_" #name, #name,                   \
                               sizeof(GemmFp8BlockscaleArgs), kGemmFp8BlockscaleFields),        \
                        #name[0] == 'w'                                                         \
                            ? kernel("jax_aiter_gemm_fp8_blockscale_split_" #name, #name,       \
                                     sizeof(GemmFp8BlockscaleSplitArgs),                        \
                                     kGemmFp8BlockscaleSplitFields)                             \
                            : KernelInfo{}},
inline constexpr GemmFp8BlockscaleTile kTiles[] = {
    JAX_AITER_GEMM_FP8_BLOCKSCALE_TILES(JA_GEMM_FP8_BLOCKSCALE_TILE)};
#undef JA_GEMM_FP8_BLOCKSCALE_TILE
// clang-format on
}  // namespace gemm_fp8_blockscale_detail

// The mma tiles largest BM first (the portable rule picks the first with BM <= M), then the w
// tile (sm_90 only, by name).
inline constexpr std::span<const GemmFp8BlockscaleTile> kGemmFp8BlockscaleTiles =
    gemm_fp8_blockscale_detail::kTiles;
static_assert(kGemmFp8BlockscaleTiles[0].kernel.symbol == "jax_aiter_gemm_fp8_blockscale_t128x128");
static_assert(kGemmFp8BlockscaleTiles[0].kernel.dynamic_shared == 0);
static_assert(kGemmFp8BlockscaleTiles.back().split_kernel.symbol ==
              "jax_aiter_gemm_fp8_blockscale_split_w128x256");
static_assert(kGemmFp8BlockscaleTiles.back().split_kernel.dynamic_shared ==
              gemm_fp8_blockscale::kWgmmaSmemBytes);

// The decode kernel (M <= 16, sm_90; kernels/shared/gemm_stream_q.h): grid (N / 16, 1, splits),
// block gemm_stream_q::kThreads. With one split it writes out; with more, split z's f32 sums go
// to partials plane z ([splits, M, N]) and jax_aiter_gemm_fp8_blockscale_finish adds them.
struct GemmFp8BlockscaleStreamArgs {
  const void* a;  // as GemmFp8BlockscaleArgs
  const void* b;
  const void* a_scale;
  const void* b_scale;
  void* out;
  void* partials;  // f32 [splits, M, N] (null with one split)
  int32_t M, N, K;
  int32_t lda;
  int32_t k_chunk;  // K of a split, a multiple of gemm_stream_q::kStepBytes
  int32_t splits;
  int32_t out_f16;
};
static_assert(offsetof(GemmFp8BlockscaleStreamArgs, M) == 48 &&
              sizeof(GemmFp8BlockscaleStreamArgs) == 80);

inline constexpr std::array kGemmFp8BlockscaleStreamFields{
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleStreamArgs, a),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleStreamArgs, b),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleStreamArgs, a_scale),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleStreamArgs, b_scale),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleStreamArgs, out),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleStreamArgs, partials),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleStreamArgs, M),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleStreamArgs, N),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleStreamArgs, K),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleStreamArgs, lda),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleStreamArgs, k_chunk),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleStreamArgs, splits),
    JAX_AITER_ARG_FIELD(GemmFp8BlockscaleStreamArgs, out_f16),
};

inline constexpr KernelInfo kGemmFp8BlockscaleStream{
    kGemmFp8BlockscaleCodeObject, "jax_aiter_gemm_fp8_blockscale_stream",
    sizeof(GemmFp8BlockscaleStreamArgs), kGemmFp8BlockscaleStreamFields};

}  // namespace jax_aiter::kernels
