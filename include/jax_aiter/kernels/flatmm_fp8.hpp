// ABI of our portable FlatMM fp8 block-scale kernels (kernels_co/flatmm_fp8.kernel.cpp, code
// object "flatmm_fp8"): the argument struct field by field as the kernels declare their
// parameters, and the kernel table, generated from the list the kernel source instantiates
// (kernels/shared/flatmm_fp8.h).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "jax_aiter/kernels/kernel.hpp"
#include "jax_aiter/kernels/shared/flatmm_fp8.h"

namespace jax_aiter::kernels {

// out = sum_b x_scale[b][m] w_scale[b][n/128] (partial dot over K block b) as f16, one block a
// BM x BN tile.
struct FlatmmFp8Args {
  const void* x;        // e4m3 [M, K], rows K bytes apart
  const void* w;        // e4m3 [N, K] in the FlatMM layout (aiter_flatmm::flat_offset)
  const void* x_scale;  // f32 [K/128, M]
  const void* w_scale;  // f32 [K/128, ceil(N/128)]
  void* out;            // f16 [M, N] row-major
  int32_t M, N, K;
  int32_t scale_n;   // ceil(N / 128): w_scale's row length
  int32_t lda;       // x's row stride in bytes
  int32_t fp8_fnuz;  // 1: the operands are e4m3fnuz, 0: e4m3fn. The GPU kernels read the format
                     // their hardware reads (the tier refuses the other); the host twin decodes
                     // the one named here.
};
static_assert(offsetof(FlatmmFp8Args, M) == 40 && sizeof(FlatmmFp8Args) == 64);

inline constexpr std::array kFlatmmFp8Fields{
    JAX_AITER_ARG_FIELD(FlatmmFp8Args, x),        JAX_AITER_ARG_FIELD(FlatmmFp8Args, w),
    JAX_AITER_ARG_FIELD(FlatmmFp8Args, x_scale),  JAX_AITER_ARG_FIELD(FlatmmFp8Args, w_scale),
    JAX_AITER_ARG_FIELD(FlatmmFp8Args, out),      JAX_AITER_ARG_FIELD(FlatmmFp8Args, M),
    JAX_AITER_ARG_FIELD(FlatmmFp8Args, N),        JAX_AITER_ARG_FIELD(FlatmmFp8Args, K),
    JAX_AITER_ARG_FIELD(FlatmmFp8Args, scale_n),  JAX_AITER_ARG_FIELD(FlatmmFp8Args, lda),
    JAX_AITER_ARG_FIELD(FlatmmFp8Args, fp8_fnuz),
};

inline constexpr std::string_view kFlatmmFp8CodeObject = "flatmm_fp8";

struct FlatmmFp8Tile {
  std::string_view name;
  int bm, bn, bk, threads;
  KernelInfo kernel;
};

namespace flatmm_fp8_detail {
// clang-format off
#define JA_FLATMM_FP8_TILE(name, BM, BN, BK, THREADS)                                          \
  FlatmmFp8Tile{#name, BM, BN, BK, THREADS,                                                    \
                KernelInfo{kFlatmmFp8CodeObject, "jax_aiter_flatmm_fp8_" #name,                \
                           sizeof(FlatmmFp8Args), kFlatmmFp8Fields}},
inline constexpr FlatmmFp8Tile kTiles[] = {JAX_AITER_FLATMM_FP8_TILES(JA_FLATMM_FP8_TILE)};
#undef JA_FLATMM_FP8_TILE
// clang-format on
}  // namespace flatmm_fp8_detail

// Largest BM first (the portable rule picks the first with BM <= M).
inline constexpr std::span<const FlatmmFp8Tile> kFlatmmFp8Tiles = flatmm_fp8_detail::kTiles;
static_assert(kFlatmmFp8Tiles[0].kernel.symbol == "jax_aiter_flatmm_fp8_t128x128");

}  // namespace jax_aiter::kernels
