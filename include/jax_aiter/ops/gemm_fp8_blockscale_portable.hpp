// The portable tier of aiter.gemm_fp8_blockscale: our own kernels (kernels/gemm_fp8_blockscale.hpp)
// on every arch, for every call AITER's tiers do not take (sm_90, the host, M < 16 on gfx950,
// N % 128 != 0, ...). It takes everything the op validates: any M, N % 16 == 0, K % 128 == 0, a
// partial last column block (ceil(N/128) b_scale rows), bf16 or f16 out.
//
// The rule: the tile with the largest BM not above M (tiles are listed largest first; M below
// every BM takes the smallest). One launch, no K split, so the output is rounded once. The kernels
// read fp8 as the target reads it (ops/fp8_format.hpp: e4m3fnuz on gfx942, e4m3fn on gfx950 and
// sm_90, either on the host).
#pragma once

#include <cstdint>
#include <string_view>

#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/core/verdict.hpp"
#include "jax_aiter/kernels/gemm_fp8_blockscale.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/ops/aiter_knobs.hpp"
#include "jax_aiter/ops/fp8_format.hpp"
#include "jax_aiter/ops/gemm_fp8_blockscale_params.hpp"

namespace jax_aiter::ops {

// The index into kernels::kGemmFp8BlockscaleTiles of the tile for M rows.
constexpr size_t choose_portable_gemm_fp8_blockscale(int64_t m) {
  const auto tiles = kernels::kGemmFp8BlockscaleTiles;
  for (size_t i = 0; i < tiles.size(); ++i) {
    if (tiles[i].bm <= m) return i;
  }
  return tiles.size() - 1;
}
static_assert(kernels::kGemmFp8BlockscaleTiles[choose_portable_gemm_fp8_blockscale(1)].bm == 16);
static_assert(kernels::kGemmFp8BlockscaleTiles[choose_portable_gemm_fp8_blockscale(100)].bm == 64);

struct GemmFp8BlockscalePortableTier {
  static constexpr std::string_view kName = "portable";

  static Verdict supports(const GemmFp8BlockscaleParams& p, const Target& t) {
    if (const Verdict v = portable_takes_knobs(p.aiter); !v.ok()) return v;
    return reads_fp8(p.a.dtype, t);
  }

  static void plan(const GemmFp8BlockscaleParams& p, const Target&, kernels::Plan& plan) {
    const int64_t m = p.m(), n = p.n(), k = p.k();
    const kernels::GemmFp8BlockscaleTile& tile =
        kernels::kGemmFp8BlockscaleTiles[choose_portable_gemm_fp8_blockscale(m)];
    const kernels::GemmFp8BlockscaleArgs args{p.a.data,
                                              p.b.data,
                                              p.a_scale.data,
                                              p.b_scale.data,
                                              p.out.data,
                                              static_cast<int32_t>(m),
                                              static_cast<int32_t>(n),
                                              static_cast<int32_t>(k),
                                              static_cast<int32_t>(k),
                                              p.out.dtype == DType::kF16 ? 1 : 0,
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
