// The portable tier of aiter.gemm_fp8_blockscale: our own kernels (kernels/gemm_fp8bs.hpp) on
// every arch, for every call the ASM tier does not take (sm_90, the host, ...).
//
// The rule: the tile with the largest BM not above M (tiles are listed largest first; M below
// every BM takes the smallest). One launch, no K split, so the output is rounded once.
#pragma once

#include <cstdint>
#include <string_view>

#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/core/verdict.hpp"
#include "jax_aiter/kernels/gemm_fp8bs.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/ops/aiter_knobs.hpp"
#include "jax_aiter/ops/fp8_format.hpp"
#include "jax_aiter/ops/gemm_fp8bs_params.hpp"

namespace jax_aiter::ops {

// The index into kernels::kGemmFp8BsTiles of the tile for M rows.
constexpr size_t choose_portable_gemm_fp8bs(int64_t m) {
  const auto tiles = kernels::kGemmFp8BsTiles;
  for (size_t i = 0; i < tiles.size(); ++i) {
    if (tiles[i].bm <= m) return i;
  }
  return tiles.size() - 1;
}
static_assert(kernels::kGemmFp8BsTiles[choose_portable_gemm_fp8bs(1)].bm == 16);
static_assert(kernels::kGemmFp8BsTiles[choose_portable_gemm_fp8bs(100)].bm == 64);

struct GemmFp8BsPortableTier {
  static constexpr std::string_view kName = "portable";

  static Verdict supports(const GemmFp8BsParams& p, const Target& t) {
    if (const Verdict v = portable_takes_knobs(p.aiter); !v.ok()) return v;
    return reads_fp8(p.a.dtype, t);
  }

  static void plan(const GemmFp8BsParams& p, const Target&, kernels::Plan& plan) {
    const int64_t m = p.m(), n = p.n(), k = p.k();
    const kernels::GemmFp8BsTile& tile = kernels::kGemmFp8BsTiles[choose_portable_gemm_fp8bs(m)];
    const kernels::GemmFp8BsArgs args{p.a.data,
                                      p.b.data,
                                      p.a_scale.data,
                                      p.b_scale.data,
                                      p.out.data,
                                      static_cast<int32_t>(m),
                                      static_cast<int32_t>(n),
                                      static_cast<int32_t>(k),
                                      static_cast<int32_t>(k),
                                      p.a.dtype == DType::kF8E4M3FNUZ ? 1 : 0};
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
