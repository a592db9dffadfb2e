// The portable tier of aiter.gemm_fp8_mi350: our own kernels (kernels/gemm_fp8_mi350.hpp) on
// every arch, for every call the ASM tier does not take: M < 16 (decode: a serving user expects
// one-token batches to work, so this tier takes any M >= 1), K < 512, gfx942, sm_90, the host.
//
// The rule: the tile with the largest BM not above M (tiles are listed largest first; M below
// every BM takes the smallest). One launch, no K split. The kernels read fp8 as the target reads
// it (ops/fp8_format.hpp: e4m3fnuz on gfx942, e4m3fn on gfx950 and sm_90, either on the host).
#pragma once

#include <cstdint>
#include <string_view>

#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/core/verdict.hpp"
#include "jax_aiter/kernels/gemm_fp8_mi350.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/ops/aiter_knobs.hpp"
#include "jax_aiter/ops/fp8_format.hpp"
#include "jax_aiter/ops/gemm_fp8_mi350_params.hpp"

namespace jax_aiter::ops {

// The index into kernels::kGemmFp8Mi350Tiles of the tile for M rows.
constexpr size_t choose_portable_gemm_fp8_mi350(int64_t m) {
  const auto tiles = kernels::kGemmFp8Mi350Tiles;
  for (size_t i = 0; i < tiles.size(); ++i) {
    if (tiles[i].bm <= m) return i;
  }
  return tiles.size() - 1;
}
static_assert(kernels::kGemmFp8Mi350Tiles[choose_portable_gemm_fp8_mi350(1)].bm == 16);
static_assert(kernels::kGemmFp8Mi350Tiles[choose_portable_gemm_fp8_mi350(100)].bm == 64);

struct GemmFp8Mi350PortableTier {
  static constexpr std::string_view kName = "portable";

  static Verdict supports(const GemmFp8Mi350Params& p, const Target& t) {
    if (const Verdict v = portable_takes_knobs(p.aiter); !v.ok()) return v;
    return reads_fp8(p.xq.dtype, t);
  }

  static void plan(const GemmFp8Mi350Params& p, const Target&, kernels::Plan& plan) {
    const int64_t m = p.m(), n = p.n(), k = p.k();
    const kernels::GemmFp8Mi350Tile& tile =
        kernels::kGemmFp8Mi350Tiles[choose_portable_gemm_fp8_mi350(m)];
    const kernels::GemmFp8Mi350Args args{p.xq.data,
                                         p.wq.data,
                                         p.x_scale.data,
                                         p.w_scale.data,
                                         p.out.data,
                                         static_cast<int32_t>(m),
                                         static_cast<int32_t>(n),
                                         static_cast<int32_t>(k),
                                         p.xq.dtype == DType::kF8E4M3FNUZ ? 1 : 0};
    plan.launch(tile.kernel,
                {static_cast<uint32_t>(ceil_div(n, tile.bn)),
                 static_cast<uint32_t>(ceil_div(m, tile.bm)), 1},
                {static_cast<uint32_t>(tile.threads), 1, 1}, args);
    plan.note("tile_m", tile.bm);
    plan.note("tile_n", tile.bn);
  }
};

}  // namespace jax_aiter::ops
