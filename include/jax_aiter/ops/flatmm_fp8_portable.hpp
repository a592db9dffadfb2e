// The portable tier of aiter.flatmm_fp8: our own kernels (kernels/flatmm_fp8.hpp) on every arch,
// for every call the ASM tier does not take (not gfx942, N not a multiple of 256, ...). It takes
// more than AITER's kernel: any M, N % 16 == 0 (the layout), K % 128 == 0 (the scale blocks).
//
// The rule: the tile with the largest BM not above M (tiles are listed largest first; M below
// every BM takes the smallest). One launch, no K split.
#pragma once

#include <cstdint>
#include <string_view>

#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/core/verdict.hpp"
#include "jax_aiter/kernels/flatmm_fp8.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/ops/aiter_knobs.hpp"
#include "jax_aiter/ops/flatmm_fp8_params.hpp"

namespace jax_aiter::ops {

// The index into kernels::kFlatmmFp8Tiles of the tile for M rows.
constexpr size_t choose_portable_flatmm_fp8(int64_t m) {
  const auto tiles = kernels::kFlatmmFp8Tiles;
  for (size_t i = 0; i < tiles.size(); ++i) {
    if (tiles[i].bm <= m) return i;
  }
  return tiles.size() - 1;
}
static_assert(kernels::kFlatmmFp8Tiles[choose_portable_flatmm_fp8(1)].bm == 16);
static_assert(kernels::kFlatmmFp8Tiles[choose_portable_flatmm_fp8(100)].bm == 64);

struct FlatmmFp8PortableTier {
  static constexpr std::string_view kName = "portable";

  static Verdict supports(const FlatmmFp8Params& p, const Target& t) {
    if (const Verdict v = portable_takes_knobs(p.aiter); !v.ok()) return v;
    return reads_fp8(p.x.dtype, t);
  }

  static void plan(const FlatmmFp8Params& p, const Target&, kernels::Plan& plan) {
    const int64_t m = p.m(), n = p.n(), k = p.k();
    const kernels::FlatmmFp8Tile& tile = kernels::kFlatmmFp8Tiles[choose_portable_flatmm_fp8(m)];
    const kernels::FlatmmFp8Args args{p.x.data,
                                      p.w.data,
                                      p.x_scale.data,
                                      p.w_scale.data,
                                      p.out.data,
                                      static_cast<int32_t>(m),
                                      static_cast<int32_t>(n),
                                      static_cast<int32_t>(k),
                                      static_cast<int32_t>(p.n_blocks()),
                                      static_cast<int32_t>(k),
                                      p.x.dtype == DType::kF8E4M3FNUZ ? 1 : 0};
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
