// The portable tier of aiter.gemm_fp4: our own kernels (kernels/gemm_fp4.hpp) on every arch, for
// every call the ASM tier does not take (not gfx950, K % 256 != 0, M % 32 != 0, sm_90, ...).
//
// The rule: the tile with the largest BM not above M (tiles are listed largest first; M below
// every BM takes the smallest). One launch, no K split. FP4 and the e8m0 scales are decoded in
// the kernel; each 32-block's products are summed exactly in float, then scaled and accumulated.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>  // std::in_range, which core/narrow.hpp uses

#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/core/verdict.hpp"
#include "jax_aiter/kernels/gemm_fp4.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/ops/gemm_fp4_params.hpp"

namespace jax_aiter::ops {

// The index into kernels::kGemmFp4Tiles of the tile for M rows.
constexpr size_t choose_portable_gemm_fp4(int64_t m) {
  const auto tiles = kernels::kGemmFp4Tiles;
  for (size_t i = 0; i < tiles.size(); ++i) {
    if (tiles[i].bm <= m) return i;
  }
  return tiles.size() - 1;
}
static_assert(kernels::kGemmFp4Tiles[choose_portable_gemm_fp4(1)].bm == 16);
static_assert(kernels::kGemmFp4Tiles[choose_portable_gemm_fp4(100)].bm == 64);

struct GemmFp4PortableTier {
  static constexpr std::string_view kName = "portable";

  static Verdict supports(const GemmFp4Params&, const Target&) { return Verdict::yes(); }

  static void plan(const GemmFp4Params& p, const Target&, kernels::Plan& plan) {
    const int64_t m = p.m(), n = p.n(), k = p.k();
    const kernels::GemmFp4Tile& tile = kernels::kGemmFp4Tiles[choose_portable_gemm_fp4(m)];
    const kernels::GemmFp4Args args{p.a.data,
                                    p.b.data,
                                    p.a_scale.data,
                                    p.b_scale.data,
                                    p.out.data,
                                    static_cast<int32_t>(m),
                                    static_cast<int32_t>(n),
                                    static_cast<int32_t>(k),
                                    static_cast<int32_t>(k / 2),
                                    static_cast<int32_t>(p.a_scale.dims[1]),
                                    static_cast<int32_t>(p.b_scale.dims[1]),
                                    p.b_shuffled() ? 1 : 0};
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
