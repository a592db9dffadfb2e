// ABI of our portable INT8 GEMM kernels (kernels_co/gemm_i8.kernel.cpp, code object "gemm_i8"):
// the argument struct field by field as the kernels declare their parameters, and the kernel
// table, generated from the list the kernel source instantiates (kernels/shared/gemm_i8.h).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "jax_aiter/kernels/kernel.hpp"
#include "jax_aiter/kernels/shared/gemm_i8.h"
#include "jax_aiter/kernels/shared/gemm_stream_q.h"

namespace jax_aiter::kernels {

// out = (a . b^T) * a_scale[m] * b_scale[n] (+ bias[n]) as bf16, one block a BM x BN tile.
struct GemmI8Args {
  const void* a;        // i8 [M, K], rows lda bytes apart
  const void* b;        // i8 [N, K] shuffled (aiter_i8gemm::shuffled_offset)
  const void* a_scale;  // f32 [M]
  const void* b_scale;  // f32 [N]
  const void* bias;     // f32 [N], or null
  void* out;            // bf16 [M, N] row-major
  int32_t M, N, K;
  int32_t lda;
};
static_assert(offsetof(GemmI8Args, M) == 48 && sizeof(GemmI8Args) == 64);

inline constexpr std::array kGemmI8Fields{
    JAX_AITER_ARG_FIELD(GemmI8Args, a),       JAX_AITER_ARG_FIELD(GemmI8Args, b),
    JAX_AITER_ARG_FIELD(GemmI8Args, a_scale), JAX_AITER_ARG_FIELD(GemmI8Args, b_scale),
    JAX_AITER_ARG_FIELD(GemmI8Args, bias),    JAX_AITER_ARG_FIELD(GemmI8Args, out),
    JAX_AITER_ARG_FIELD(GemmI8Args, M),       JAX_AITER_ARG_FIELD(GemmI8Args, N),
    JAX_AITER_ARG_FIELD(GemmI8Args, K),       JAX_AITER_ARG_FIELD(GemmI8Args, lda),
};

// The split kernels: block (x, y, z) adds the int32 sums of its tile over K [z k_chunk,
// min(K, (z + 1) k_chunk)) into acc (int32 [M, N], zeroed by the plan).
struct GemmI8SplitArgs {
  const void* a;  // as GemmI8Args
  const void* b;
  void* acc;  // int32 [M, N] row-major
  int32_t M, N, K;
  int32_t lda;
  int32_t k_chunk;  // a multiple of the tile's BK
};
static_assert(offsetof(GemmI8SplitArgs, M) == 24 && sizeof(GemmI8SplitArgs) == 48);

inline constexpr std::array kGemmI8SplitFields{
    JAX_AITER_ARG_FIELD(GemmI8SplitArgs, a),   JAX_AITER_ARG_FIELD(GemmI8SplitArgs, b),
    JAX_AITER_ARG_FIELD(GemmI8SplitArgs, acc), JAX_AITER_ARG_FIELD(GemmI8SplitArgs, M),
    JAX_AITER_ARG_FIELD(GemmI8SplitArgs, N),   JAX_AITER_ARG_FIELD(GemmI8SplitArgs, K),
    JAX_AITER_ARG_FIELD(GemmI8SplitArgs, lda), JAX_AITER_ARG_FIELD(GemmI8SplitArgs, k_chunk),
};

// out[m, n] = bf16(float(acc[m, n]) * a_scale[m] * b_scale[n] (+ bias[n])), one thread an element.
struct GemmI8FinishArgs {
  const void* acc;  // int32 [M, N]
  const void* a_scale;
  const void* b_scale;
  const void* bias;  // or null
  void* out;
  int32_t M, N;
};
static_assert(offsetof(GemmI8FinishArgs, M) == 40 && sizeof(GemmI8FinishArgs) == 48);

inline constexpr std::array kGemmI8FinishFields{
    JAX_AITER_ARG_FIELD(GemmI8FinishArgs, acc),     JAX_AITER_ARG_FIELD(GemmI8FinishArgs, a_scale),
    JAX_AITER_ARG_FIELD(GemmI8FinishArgs, b_scale), JAX_AITER_ARG_FIELD(GemmI8FinishArgs, bias),
    JAX_AITER_ARG_FIELD(GemmI8FinishArgs, out),     JAX_AITER_ARG_FIELD(GemmI8FinishArgs, M),
    JAX_AITER_ARG_FIELD(GemmI8FinishArgs, N),
};

inline constexpr std::string_view kGemmI8CodeObject = "gemm_i8";

inline constexpr KernelInfo kGemmI8Finish{kGemmI8CodeObject, "jax_aiter_gemm_i8_finish",
                                          sizeof(GemmI8FinishArgs), kGemmI8FinishFields};
inline constexpr uint32_t kGemmI8FinishThreads = JAX_AITER_GEMM_I8_FINISH_THREADS;

struct GemmI8Tile {
  std::string_view name;
  int bm, bn, bk, threads;
  KernelInfo kernel;
  KernelInfo split_kernel;
};

namespace gemm_i8_detail {
// The w tiles' kernels take the wgmma engine's dynamic shared memory (the CUDA backend opts in).
constexpr KernelInfo kernel(std::string_view symbol, std::string_view tile, uint32_t bytes,
                            std::span<const ArgField> fields) {
  KernelInfo k{kGemmI8CodeObject, symbol, bytes, fields};
  if (tile[0] == 'w') k.dynamic_shared = gemm_i8::kWgmmaSmemBytes;
  return k;
}
// clang-format off
#define JA_GEMM_I8_TILE(name, BM, BN, BK, THREADS)                                   \
  GemmI8Tile{#name, BM, BN, BK, THREADS,                                             \
             kernel("jax_aiter_gemm_i8_" #name, #name, sizeof(GemmI8Args), kGemmI8Fields), \
             kernel("jax_aiter_gemm_i8_split_" #name, #name, sizeof(GemmI8SplitArgs),      \
                    kGemmI8SplitFields)},
inline constexpr GemmI8Tile kTiles[] = {JAX_AITER_GEMM_I8_TILES(JA_GEMM_I8_TILE)};
#undef JA_GEMM_I8_TILE
// clang-format on
}  // namespace gemm_i8_detail

// The mma tiles largest BM first (the portable rule picks the first with BM <= M), then the w
// tile (sm_90 only, by name).
inline constexpr std::span<const GemmI8Tile> kGemmI8Tiles = gemm_i8_detail::kTiles;
static_assert(kGemmI8Tiles[0].kernel.symbol == "jax_aiter_gemm_i8_t128x128");
static_assert(kGemmI8Tiles[0].kernel.dynamic_shared == 0);
static_assert(kGemmI8Tiles.back().split_kernel.dynamic_shared == gemm_i8::kWgmmaSmemBytes);

// The decode kernel (M <= 16, sm_90; kernels/shared/gemm_stream_q.h): grid (N / 16, 1, splits),
// block gemm_stream_q::kThreads. With one split it writes out (scaled, + bias); with more, split
// z's exact int32 sums go to partials plane z ([splits, M, N]) and
// jax_aiter_gemm_i8_stream_finish adds them and scales.
struct GemmI8StreamArgs {
  const void* a;  // as GemmI8Args
  const void* b;
  const void* a_scale;
  const void* b_scale;
  const void* bias;  // or null
  void* out;
  void* partials;  // int32 [splits, M, N] (null with one split)
  int32_t M, N, K;
  int32_t lda;
  int32_t k_chunk;  // K of a split, a multiple of gemm_stream_q::kStepBytes
  int32_t splits;
};
static_assert(offsetof(GemmI8StreamArgs, M) == 56 && sizeof(GemmI8StreamArgs) == 80);

inline constexpr std::array kGemmI8StreamFields{
    JAX_AITER_ARG_FIELD(GemmI8StreamArgs, a),        JAX_AITER_ARG_FIELD(GemmI8StreamArgs, b),
    JAX_AITER_ARG_FIELD(GemmI8StreamArgs, a_scale),  JAX_AITER_ARG_FIELD(GemmI8StreamArgs, b_scale),
    JAX_AITER_ARG_FIELD(GemmI8StreamArgs, bias),     JAX_AITER_ARG_FIELD(GemmI8StreamArgs, out),
    JAX_AITER_ARG_FIELD(GemmI8StreamArgs, partials), JAX_AITER_ARG_FIELD(GemmI8StreamArgs, M),
    JAX_AITER_ARG_FIELD(GemmI8StreamArgs, N),        JAX_AITER_ARG_FIELD(GemmI8StreamArgs, K),
    JAX_AITER_ARG_FIELD(GemmI8StreamArgs, lda),      JAX_AITER_ARG_FIELD(GemmI8StreamArgs, k_chunk),
    JAX_AITER_ARG_FIELD(GemmI8StreamArgs, splits),
};

// out = (sum over z in order of partials[z]) * a_scale[m] * b_scale[n] (+ bias[n]) as bf16: one
// element a thread, block gemm_stream_q::kFinishThreads.
struct GemmI8StreamFinishArgs {
  const void* partials;  // int32 [splits, M, N]
  const void* a_scale;
  const void* b_scale;
  const void* bias;  // or null
  void* out;
  int32_t M, N;
  int32_t splits;
};
static_assert(offsetof(GemmI8StreamFinishArgs, M) == 40 && sizeof(GemmI8StreamFinishArgs) == 56);

inline constexpr std::array kGemmI8StreamFinishFields{
    JAX_AITER_ARG_FIELD(GemmI8StreamFinishArgs, partials),
    JAX_AITER_ARG_FIELD(GemmI8StreamFinishArgs, a_scale),
    JAX_AITER_ARG_FIELD(GemmI8StreamFinishArgs, b_scale),
    JAX_AITER_ARG_FIELD(GemmI8StreamFinishArgs, bias),
    JAX_AITER_ARG_FIELD(GemmI8StreamFinishArgs, out),
    JAX_AITER_ARG_FIELD(GemmI8StreamFinishArgs, M),
    JAX_AITER_ARG_FIELD(GemmI8StreamFinishArgs, N),
    JAX_AITER_ARG_FIELD(GemmI8StreamFinishArgs, splits),
};

inline constexpr KernelInfo kGemmI8Stream{kGemmI8CodeObject, "jax_aiter_gemm_i8_stream",
                                          sizeof(GemmI8StreamArgs), kGemmI8StreamFields};
inline constexpr KernelInfo kGemmI8StreamFinish{
    kGemmI8CodeObject, "jax_aiter_gemm_i8_stream_finish", sizeof(GemmI8StreamFinishArgs),
    kGemmI8StreamFinishFields};

}  // namespace jax_aiter::kernels
