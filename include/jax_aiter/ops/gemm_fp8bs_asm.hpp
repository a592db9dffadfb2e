// The ASM tier of aiter.gemm_fp8_blockscale: AITER's FP8 block-scale GEMM kernels
// (kernels/aiter/fp8gemm_blockscale.hpp), chosen by AITER's CU-rounds heuristic as it is meant to
// work, over the rows in table order, and packed as AITER packs them.
//
// The rule (restated from get_heuristic_kernel in AITER's asm_a8w8_blockscale_bpreshuffle.cu at
// e4048607a535; our aiter-facts ABI-AND-RULES.md section 4.2):
//  - the fp8 operands must be the planned arch's format, on every backend (ops/fp8_format.hpp:
//    e4m3fnuz for gfx942, e4m3fn for gfx950; the ABI twins read the same);
//  - candidates are the six rows (all may split; tile N = 128 divides N, which validate()
//    demands);
//  - each candidate is tried with every valid split s in 1..16: a split's K chunk is
//    roundup(ceil(K / s), 128), and s is valid when ceil(K / chunk) == s (AITER corrects an
//    invalid split to that count; here only the corrected splits are scored, once);
//  - (row, split) pairs are compared by CU rounds = ceil(tiles * s / cus), tiles =
//    ceil(M / tile_m) * N / 128, then idle CUs in the last round, then tile efficiency
//    tile_m * tile_n / (tile_m + tile_n) (higher is better, compared exactly); the first in table
//    order (ascending tile_m), then the smaller split, wins what is still tied;
//  - a forced kernel (AITER's kernelName) runs split 1 unless splitk says otherwise; a forced
//    split (splitk: 0 or 1 = none, 2..16) must be valid as above, else the tier says no.
// Where ours differs from AITER's (docs/ops/gemm_fp8_blockscale.md):
//  - AITER's heuristic sets k_split = splitK ?: 1 and scores only that split, so its automatic
//    path never splits K (not even a decode GEMM on 304 CUs). We score splits 1..16;
//  - AITER visits rows in std::unordered_map order and takes a later row of equal rounds when it
//    has fewer idle CUs OR a higher efficiency than the best so far, so ties depend on hash order
//    (54-62% of a shape grid). Ours is the lexicographic order above;
//  - AITER's efficiency is float(tm * tn / (tm + tn)) in integer division (25, 34, 42, 49, 54,
//    64 for the six tiles). Truncation changes no comparison among these six; we compare the
//    exact ratios;
//  - no bias operand: the kernels read BIAS regardless (AITER's Python passes a cached zero
//    buffer); the plan passes a zeroed workspace piece.
#pragma once

#include <cstdint>
#include <string_view>

#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/core/verdict.hpp"
#include "jax_aiter/kernels/aiter/fp8gemm_blockscale.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/ops/aiter_tier.hpp"
#include "jax_aiter/ops/fp8_format.hpp"
#include "jax_aiter/ops/gemm_fp8bs_params.hpp"

namespace jax_aiter::ops {

// AITER's FP8 block-scale GEMM family: the facts AiterTier (ops/aiter_tier.hpp) selects and packs
// with.
struct AiterFp8Bs : AiterChunkSplitFamily<GemmFp8BsParams, kernels::kAiterFp8BsRows> {
  static constexpr std::string_view kNotARow =
      "the forced kernel is not an fp8gemm_blockscale row for this arch";
  static_assert(chunk(4096, 3) == kernels::aiter_fp8bs::split_chunk(4096, 3));

  static Verdict accepts(const Params& p, const Target& t) { return reads_fp8(p.a.dtype, t); }
  static constexpr Verdict none(const AiterQuery& q) {
    return Verdict::no("N = {} is not a multiple of 128", q.n);
  }

  // As AITER's gemm_a8w8_blockscale_bpreshuffle_asm packs it, every field written (the rest of
  // the slots zero but for the host twins' format byte).
  static void pack(const Params& p, const AiterChoice<Row>& c, kernels::Plan& plan) {
    namespace A = kernels::aiter_fp8bs;
    const Row& r = *c.row;
    const auto m = static_cast<uint32_t>(p.m()), n = static_cast<uint32_t>(p.n()),
               k = static_cast<uint32_t>(p.k());
    kernels::AiterFp8BsArgs args{};
    args.C = p.out.data;
    args.A = p.a.data;
    args.B = p.b.data;
    args.SA = p.a_scale.data;
    args.SB = p.b_scale.data;
    args.M = m;
    args.N = n;
    args.K = k;
    args.lda = k;  // elements (= bytes)
    args.ldb = k;
    args.ldc = n * 2;  // bytes
    args.ks = static_cast<uint32_t>(c.split);
    args.scale_m = m;
    args.scale_n = n / A::kScaleN;
    args.scale_k = k / A::kScaleK;
    args.scale_k.pad[0] = std::byte{p.a.dtype == DType::kF8E4M3FNUZ ? uint8_t{A::kFormatFnuz}
                                                                    : uint8_t{A::kFormatFn}};
    // The kernels read BIAS always: a zeroed f32 [N] stands in.
    const int zero = plan.workspace.add("zero_bias", int64_t{n} * 4);
    args.BIAS = plan.piece(zero);
    plan.memset(plan.piece(zero), uint64_t{n} * 4, 0, "zero_bias");
    if (c.split > 1) {
      // The splits add their partial products into out atomically: it must start at zero.
      plan.memset(p.out.data, uint64_t{m} * n * 2, 0, "out");
    }
    const kernels::Dim3 grid{static_cast<uint32_t>(n / r.tile_n * c.split),
                             static_cast<uint32_t>(ceil_div(m, r.tile_m)), 1};
    plan.launch(r.kernel, grid, {A::kBlockThreads, 1, 1}, args);
    plan.note("tile_m", r.tile_m);
    plan.note("tile_n", r.tile_n);
    plan.note("split", c.split);
  }
};

using GemmFp8BsAsmTier = AiterTier<AiterFp8Bs>;

}  // namespace jax_aiter::ops
