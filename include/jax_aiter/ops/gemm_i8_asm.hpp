// The ASM tier of aiter.gemm_i8: AITER's INT8 GEMM kernels (kernels/aiter/i8gemm.hpp), chosen by
// AITER's CU-rounds heuristic as it is meant to work, over the rows in table order, and packed as
// AITER packs them.
//
// The rule (restated from get_heuristic_kernel in AITER's asm_gemm_a8w8.cu at e4048607a535):
//  - K must be a multiple of 128 (the kernels' K step; ours: AITER does not check);
//  - candidates are the rows built for the arch that may split (the CSV's splitK = 1; AITER
//    never auto-picks gfx942's 112x256) whose tile N divides N;
//  - each candidate is tried with every valid split s in 1..16: a split's K chunk is
//    roundup(ceil(K / s), 128), and s is valid when ceil(K / chunk) == s (AITER corrects an
//    invalid split to that count; here only the corrected splits are scored, once);
//  - (row, split) pairs are compared by CU rounds = ceil(tiles * s / cus), tiles =
//    ceil(M / tile_m) * N / tile_n, then idle CUs in the last round, then tile efficiency
//    tile_m * tile_n / (tile_m + tile_n) (higher is better); the first in table order, then the
//    smaller split, wins what is still tied.
//  - a forced kernel (AITER's kernelName) runs split 1 unless splitk says otherwise; a forced
//    split (splitk: 0 or 1 = none, 2..16) must be valid as above, and only rows that may split
//    run one above 1: otherwise the tier says no (and our portable tier may honour it).
// Where ours differs from AITER's (docs/ops/gemm_i8.md):
//  - AITER passes the caller's splitK (Python's default -1) as an always-engaged optional, so its
//    heuristic scores only that split: -1 gives a negative grid and the launch fails (its Python
//    wrapper gemm_a8w8_ASM therefore always passes 1). We score splits 1..16, which is what the
//    code does when no split is given;
//  - AITER never updates its best efficiency (it stays 1.0), and compares with
//    `rounds < best || (rounds == best && (idle < best_idle || eff > 1.0))`: among rows of
//    equal rounds the last in std::unordered_map order wins. Ours is the lexicographic order
//    above;
//  - a forced split above 1 on a row that may not split (112x256) is refused; AITER launches it
//    with no memset and a grid that runs every split over all of K;
//  - no bias: the kernels read BIAS regardless (AITER's Python asks the caller for zeros); the
//    plan passes a zeroed workspace piece.
#pragma once

#include <cstdint>
#include <string_view>

#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/core/verdict.hpp"
#include "jax_aiter/kernels/aiter/i8gemm.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/ops/aiter_tier.hpp"
#include "jax_aiter/ops/gemm_i8_params.hpp"

namespace jax_aiter::ops {

// AITER's INT8 GEMM family: the facts AiterTier (ops/aiter_tier.hpp) selects and packs with.
struct AiterI8Gemm : AiterChunkSplitFamily<GemmI8Params, kernels::kAiterI8GemmRows> {
  static constexpr std::string_view kFamily = "i8gemm";
  static constexpr std::string_view kNotARow =
      "the forced kernel is not an i8gemm row for this arch";
  static_assert(chunk(4096, 3) == kernels::aiter_i8gemm::split_chunk(4096, 3));

  // Only rows that may split are AITER's candidates (its heuristic never picks gfx942's 112x256).
  static constexpr bool auto_row(const Row& r, const AiterQuery&) { return r.split_k; }
  static constexpr Verdict none(const AiterQuery& q) {
    return Verdict::no("N = {} is not a multiple of a candidate row's tile N (128)", q.n);
  }

  // As AITER's gemm_a8w8_asm packs it, every field written (the rest of the slots zero).
  static void pack(const Params& p, const AiterChoice<Row>& c, kernels::Plan& plan) {
    const Row& r = *c.row;
    const auto m = static_cast<uint32_t>(p.m()), n = static_cast<uint32_t>(p.n()),
               k = static_cast<uint32_t>(p.k());
    kernels::AiterI8GemmWideArgs wide{};
    kernels::AiterI8GemmArgs& args = wide.base;
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
    if (p.bias) {
      args.BIAS = p.bias->data;
    } else {
      // The kernels read BIAS whether or not there is one: a zeroed f32 [N] stands in.
      const int zero = plan.workspace.add("zero_bias", int64_t{n} * 4);
      args.BIAS = plan.piece(zero);
      plan.memset(plan.piece(zero), uint64_t{n} * 4, 0, "zero_bias");
    }
    if (c.split > 1) {
      // The splits add their partial products into out atomically: it must start at zero.
      plan.memset(p.out.data, uint64_t{m} * n * 2, 0, "out");
    }
    const kernels::Dim3 grid{static_cast<uint32_t>(n / r.tile_n * c.split),
                             static_cast<uint32_t>(ceil_div(m, r.tile_m)), 1};
    const kernels::Dim3 block{kernels::aiter_i8gemm::kBlockThreads, 1, 1};
    if (r.wide()) {
      plan.launch(r.kernel, grid, block, wide);
    } else {
      plan.launch(r.kernel, grid, block, args);
    }
    plan.note("tile_m", r.tile_m);
    plan.note("tile_n", r.tile_n);
    plan.note("split", c.split);
  }
};

using GemmI8AsmTier = AiterTier<AiterI8Gemm>;

}  // namespace jax_aiter::ops
