// The portable tier of aiter.gemm_fp4: our own kernels (kernels/gemm_fp4.hpp) on every arch, for
// every call the ASM tier does not take (not gfx950, K % 256 != 0, M % 32 != 0, sm_90, ...).
//
// The rule: decode calls on sm_90 (M <= 16, B shuffled, a and b 16-byte aligned) take the
// weight-streaming kernel jax_aiter_gemm_fp4_stream (fp8 tensor cores, e2m1 read as e4m3; a block
// per 16 rows of B, K split by ops/gemm_stream_q_rule.hpp, the splits' f32 partials added in split
// order by jax_aiter_gemm_fp4_stream_finish; each 32-block's sum scaled and added in float). Other
// decode calls (1 <= M <= kGemmFp4DecodeMaxM = 16, B 16-byte aligned) take the
// weight-streaming decode kernel with the smallest BM >= M (d4 for M <= 4, d16 for M <= 16): grid
// (ceil(N / 16), 1), a block per 16 rows of B over all of K, K split into 16 interleaved slices
// inside the block and summed in slice order in shared memory (no workspace, no atomics; the same
// bits every run). Everything else: the tile with the largest BM not above M (tiles are listed
// largest first; M below every BM takes the smallest), one launch, no K split. FP4 and the e8m0
// scales are decoded in the kernel; each 32-block's products are summed exactly in float, then
// scaled and accumulated in float (per slice in K order, for the decode kernels).
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>  // std::in_range, which core/narrow.hpp uses

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/core/verdict.hpp"
#include "jax_aiter/kernels/gemm_fp4.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/ops/aiter_knobs.hpp"
#include "jax_aiter/ops/gemm_fp4_params.hpp"
#include "jax_aiter/ops/gemm_stream_q_rule.hpp"

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

inline constexpr int64_t kGemmFp4DecodeMaxM = 16;

// The index into kernels::kGemmFp4Decodes of the decode kernel for M rows (M <= 16).
constexpr size_t choose_gemm_fp4_decode(int64_t m) {
  const auto decodes = kernels::kGemmFp4Decodes;
  for (size_t i = 0; i < decodes.size(); ++i) {
    if (decodes[i].bm >= m) return i;
  }
  return decodes.size() - 1;
}
static_assert(kernels::kGemmFp4Decodes[choose_gemm_fp4_decode(1)].bm == 4);
static_assert(kernels::kGemmFp4Decodes[choose_gemm_fp4_decode(5)].bm == 16);
static_assert(kernels::kGemmFp4Decodes[choose_gemm_fp4_decode(kGemmFp4DecodeMaxM)].bm >=
              kGemmFp4DecodeMaxM);

struct GemmFp4PortableTier {
  static constexpr std::string_view kName = "portable";

  static Verdict supports(const GemmFp4Params& p, const Target&) {
    return portable_takes_knobs(p.aiter);
  }

  // Decode on sm_90: the streaming kernel (B shuffled; its loads' alignment).
  static bool streams(const GemmFp4Params& p, const Target& t) {
    return t.arch == Arch::kSm90 && p.m() <= kStreamQMaxM && p.b_shuffled() &&
           reinterpret_cast<uintptr_t>(p.a.data) % 16 == 0 &&
           reinterpret_cast<uintptr_t>(p.b.data) % 16 == 0 &&
           reinterpret_cast<uintptr_t>(p.a_scale.data) % 8 == 0 &&
           reinterpret_cast<uintptr_t>(p.b_scale.data) % 4 == 0;
  }

  static void plan_stream(const GemmFp4Params& p, const Target& t, kernels::Plan& plan) {
    const int64_t m = p.m(), n = p.n(), k = p.k();
    const StreamQSplit s = choose_stream_q_split(n, k / 2, t.compute_units);
    void* partials = stream_q_partials(plan, s.splits, m, n);
    const auto m32 = static_cast<int32_t>(m), n32 = static_cast<int32_t>(n);
    const kernels::GemmFp4StreamArgs args{p.a.data,
                                          p.b.data,
                                          p.a_scale.data,
                                          p.b_scale.data,
                                          p.out.data,
                                          partials,
                                          m32,
                                          n32,
                                          static_cast<int32_t>(k),
                                          static_cast<int32_t>(k / 2),
                                          static_cast<int32_t>(p.b_scale.dims[1]),
                                          static_cast<int32_t>(2 * s.k_chunk),
                                          static_cast<int32_t>(s.splits)};
    launch_stream_q(plan, kernels::kGemmFp4Stream, n, s.splits, args);
    if (s.splits > 1) {
      const kernels::GemmFp4StreamFinishArgs finish{partials, p.out.data, m32, n32,
                                                    static_cast<int32_t>(s.splits)};
      launch_stream_q_finish(plan, kernels::kGemmFp4StreamFinish, m, n, finish);
    }
    note_stream_q(plan, s.splits);
  }

  static void plan(const GemmFp4Params& p, const Target& t, kernels::Plan& plan) {
    if (streams(p, t)) {
      plan_stream(p, t, plan);
      return;
    }
    const int64_t m = p.m(), n = p.n(), k = p.k();
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
    const bool aligned = reinterpret_cast<uintptr_t>(p.b.data) % 16 == 0;
    if (m >= 1 && m <= kGemmFp4DecodeMaxM && aligned) {
      const kernels::GemmFp4Decode& d = kernels::kGemmFp4Decodes[choose_gemm_fp4_decode(m)];
      plan.launch(d.kernel,
                  {static_cast<uint32_t>(ceil_div(n, int64_t{kernels::kGemmFp4DecodeRows})),
                   static_cast<uint32_t>(ceil_div(m, d.bm)), 1},
                  {static_cast<uint32_t>(kernels::kGemmFp4DecodeThreads), 1, 1}, args);
      plan.note("tile_m", d.bm);
      plan.note("tile_n", kernels::kGemmFp4DecodeRows);
      plan.note("split", kernels::kGemmFp4DecodeSlices);
      return;
    }
    const kernels::GemmFp4Tile& tile = kernels::kGemmFp4Tiles[choose_portable_gemm_fp4(m)];
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
