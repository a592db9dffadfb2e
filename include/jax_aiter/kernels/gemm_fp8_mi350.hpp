// ABI of our portable MI350-FP8 block-scale GEMM kernels (kernels_co/gemm_fp8_mi350.kernel.cpp,
// code object "gemm_fp8_mi350"): the argument struct field by field as the kernels declare their
// parameters, and the kernel table, generated from kernels/shared/gemm_fp8_mi350.h.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "jax_aiter/kernels/kernel.hpp"
#include "jax_aiter/kernels/shared/gemm_fp8_mi350.h"

namespace jax_aiter::kernels {

struct GemmFp8Mi350Args {
  const void* xq;       // fp8 [M, K] row-major
  const void* wq;       // fp8 [N, K] shuffled (aiter_i8gemm::shuffled_offset)
  const void* x_scale;  // f32 [K/128, M]
  const void* w_scale;  // f32 [N/128, K/128]
  void* out;            // bf16 [M, N] row-major
  int32_t M, N, K;
  int32_t fnuz;  // 1: the fp8 operands are e4m3fnuz, 0: e4m3fn (read by the host twin only:
                 // a GPU reads the format its hardware reads, ops/fp8_format.hpp)
};
static_assert(offsetof(GemmFp8Mi350Args, M) == 40 && sizeof(GemmFp8Mi350Args) == 56);

inline constexpr std::array kGemmFp8Mi350Fields{
    JAX_AITER_ARG_FIELD(GemmFp8Mi350Args, xq),      JAX_AITER_ARG_FIELD(GemmFp8Mi350Args, wq),
    JAX_AITER_ARG_FIELD(GemmFp8Mi350Args, x_scale), JAX_AITER_ARG_FIELD(GemmFp8Mi350Args, w_scale),
    JAX_AITER_ARG_FIELD(GemmFp8Mi350Args, out),     JAX_AITER_ARG_FIELD(GemmFp8Mi350Args, M),
    JAX_AITER_ARG_FIELD(GemmFp8Mi350Args, N),       JAX_AITER_ARG_FIELD(GemmFp8Mi350Args, K),
    JAX_AITER_ARG_FIELD(GemmFp8Mi350Args, fnuz),
};

inline constexpr std::string_view kGemmFp8Mi350CodeObject = "gemm_fp8_mi350";

struct GemmFp8Mi350Tile {
  std::string_view name;
  int bm, bn, bk, threads;
  KernelInfo kernel;
};

namespace gemm_fp8_mi350_detail {
// clang-format off
#define JA_GEMM_FP8_MI350_TILE(name, BM, BN, BK, THREADS)                            \
  GemmFp8Mi350Tile{#name, BM, BN, BK, THREADS,                                       \
                   KernelInfo{kGemmFp8Mi350CodeObject, "jax_aiter_gemm_fp8_mi350_" #name, \
                              sizeof(GemmFp8Mi350Args), kGemmFp8Mi350Fields}},
inline constexpr GemmFp8Mi350Tile kTiles[] = {JAX_AITER_GEMM_FP8_MI350_TILES(JA_GEMM_FP8_MI350_TILE)};
#undef JA_GEMM_FP8_MI350_TILE
// clang-format on
}  // namespace gemm_fp8_mi350_detail

// Largest BM first (the portable rule picks the first with BM <= M).
inline constexpr std::span<const GemmFp8Mi350Tile> kGemmFp8Mi350Tiles =
    gemm_fp8_mi350_detail::kTiles;
static_assert(kGemmFp8Mi350Tiles[0].kernel.symbol == "jax_aiter_gemm_fp8_mi350_t128x128");

}  // namespace jax_aiter::kernels
