// The portable tier of aiter.gemm_fp8_blockscale: our own kernels (kernels/gemm_fp8_blockscale.hpp)
// on every arch, for every call AITER's tiers do not take (sm_90, the host, M < 16 on gfx950,
// N % 128 != 0, ...). It takes everything the op validates: any M, N % 16 == 0, K % 128 == 0, a
// partial last column block (ceil(N/128) b_scale rows), bf16 or f16 out.
//
// The rule: the tile with the largest BM not above M (tiles are listed largest first; M below
// every BM takes the smallest). One launch, no K split, so the output is rounded once. Decode
// calls on sm_90 (M <= 16, a and b 16-byte aligned) take the weight-streaming kernel instead
// (jax_aiter_gemm_fp8_blockscale_stream: a block per 16 rows of b, K split by
// ops/gemm_stream_q_rule.hpp, the splits' f32 partials added in split order by
// jax_aiter_gemm_fp8_blockscale_stream_finish and rounded once; the same block-scale fold). The
// kernels read fp8 as the target reads it (ops/fp8_format.hpp: e4m3fnuz on gfx942, e4m3fn on
// gfx950 and sm_90, either on the host).
#pragma once

#include <cstdint>
#include <string_view>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/core/verdict.hpp"
#include "jax_aiter/kernels/gemm_fp8_blockscale.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/ops/aiter_knobs.hpp"
#include "jax_aiter/ops/fp8_format.hpp"
#include "jax_aiter/ops/gemm_fp8_blockscale_params.hpp"
#include "jax_aiter/ops/gemm_stream_q_rule.hpp"

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

  // Decode on sm_90: the streaming kernel (16-byte loads of both operands).
  static bool streams(const GemmFp8BlockscaleParams& p, const Target& t) {
    return t.arch == Arch::kSm90 && p.m() <= kStreamQMaxM &&
           reinterpret_cast<uintptr_t>(p.a.data) % 16 == 0 &&
           reinterpret_cast<uintptr_t>(p.b.data) % 16 == 0;
  }

  static void plan_stream(const GemmFp8BlockscaleParams& p, const Target& t, kernels::Plan& plan) {
    namespace S = kernels::gemm_stream_q;
    const int64_t m = p.m(), n = p.n(), k = p.k();
    const StreamQSplit s = choose_stream_q_split(n, k, t.compute_units);
    void* partials =
        s.splits > 1 ? plan.piece(plan.workspace.add("partials", s.splits * m * n * 4)) : nullptr;
    const auto m32 = static_cast<int32_t>(m), n32 = static_cast<int32_t>(n);
    const int32_t out_f16 = p.out.dtype == DType::kF16 ? 1 : 0;
    const kernels::GemmFp8BlockscaleStreamArgs args{p.a.data,
                                                    p.b.data,
                                                    p.a_scale.data,
                                                    p.b_scale.data,
                                                    p.out.data,
                                                    partials,
                                                    m32,
                                                    n32,
                                                    static_cast<int32_t>(k),
                                                    static_cast<int32_t>(k),
                                                    static_cast<int32_t>(s.k_chunk),
                                                    static_cast<int32_t>(s.splits),
                                                    out_f16};
    plan.launch(
        kernels::kGemmFp8BlockscaleStream,
        {static_cast<uint32_t>(ceil_div(n, int64_t{S::kRows})), 1, static_cast<uint32_t>(s.splits)},
        {static_cast<uint32_t>(S::kThreads), 1, 1}, args);
    if (s.splits > 1) {
      const kernels::GemmFp8BlockscaleStreamFinishArgs finish{
          partials, p.out.data, m32, n32, static_cast<int32_t>(s.splits), out_f16};
      plan.launch(kernels::kGemmFp8BlockscaleStreamFinish,
                  {static_cast<uint32_t>(ceil_div(m * n, int64_t{S::kFinishThreads})), 1, 1},
                  {static_cast<uint32_t>(S::kFinishThreads), 1, 1}, finish);
    }
    plan.note("tile_m", S::kMaxM);
    plan.note("tile_n", S::kRows);
    plan.note("split", s.splits);
  }

  static void plan(const GemmFp8BlockscaleParams& p, const Target& t, kernels::Plan& plan) {
    if (streams(p, t)) {
      plan_stream(p, t, plan);
      return;
    }
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
