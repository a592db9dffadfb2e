// The portable tier of aiter.gemm_i8: our own kernels (kernels/gemm_i8.hpp) on every arch, for
// every call the ASM tier does not take (K % 128 != 0, N not a multiple of 128, sm_90, ...).
//
// The rule: the tile with the largest BM not above M (tiles are listed largest first; M below
// every BM takes the smallest). One launch, no K split: the int32 sums are exact, so a tile's
// result does not depend on how K is cut, and the scales and bias are applied once.
#pragma once

#include <cstdint>
#include <string_view>

#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/core/verdict.hpp"
#include "jax_aiter/kernels/gemm_i8.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/ops/gemm_i8_params.hpp"

namespace jax_aiter::ops {

// The index into kernels::kGemmI8Tiles of the tile for M rows.
constexpr size_t choose_portable_gemm_i8(int64_t m) {
  const auto tiles = kernels::kGemmI8Tiles;
  for (size_t i = 0; i < tiles.size(); ++i) {
    if (tiles[i].bm <= m) return i;
  }
  return tiles.size() - 1;
}
static_assert(kernels::kGemmI8Tiles[choose_portable_gemm_i8(1)].bm == 16);
static_assert(kernels::kGemmI8Tiles[choose_portable_gemm_i8(100)].bm == 64);

struct GemmI8PortableTier {
  static constexpr std::string_view kName = "portable";

  static Verdict supports(const GemmI8Params&, const Target&) { return Verdict::yes(); }

  static void plan(const GemmI8Params& p, const Target&, kernels::Plan& plan) {
    const int64_t m = p.m(), n = p.n(), k = p.k();
    const kernels::GemmI8Tile& tile = kernels::kGemmI8Tiles[choose_portable_gemm_i8(m)];
    const kernels::GemmI8Args args{p.a.data,
                                   p.b.data,
                                   p.a_scale.data,
                                   p.b_scale.data,
                                   p.bias ? p.bias->data : nullptr,
                                   p.out.data,
                                   static_cast<int32_t>(m),
                                   static_cast<int32_t>(n),
                                   static_cast<int32_t>(k),
                                   static_cast<int32_t>(k)};
    plan.launch(tile.kernel,
                {static_cast<uint32_t>(ceil_div(n, tile.bn)),
                 static_cast<uint32_t>(ceil_div(m, tile.bm)), 1},
                {static_cast<uint32_t>(tile.threads), 1, 1}, args);
    plan.note("tile_m", tile.bm);
    plan.note("tile_n", tile.bn);
    plan.note("split", 1);
  }
};

}  // namespace jax_aiter::ops
