// The ASM tier of aiter.gemm_fp4: AITER's FP4 GEMM kernels (kernels/aiter/f4gemm.hpp, gfx950),
// chosen by AITER's CU-rounds heuristic as it is meant to work, over the rows in table (CSV)
// order, and packed as AITER packs them, every field written.
//
// The rule (restated from get_heuristic_kernel in AITER's asm_gemm_a4w4.cu at e4048607a535):
//  - gfx950 only; K must be a multiple of 256 (the kernels' K step; AITER does not check) and M a
//    multiple of 32 (the kernels write whole 32-row groups of out: AITER's gemm_a4w4 allocates
//    out so; our Python pads a and slices out);
//  - candidates are the rows whose bpreshuffle matches b's layout (the 35 rows: 34 shuffled, one
//    plain, noBpreShuffle_256x256), leaving out 128x512 unless N % 512 == 0;
//  - a row that may split is tried with every split s in {1, 2, 4, 8, 16} whose chunks are exact
//    256-multiples (K % (256 s) == 0, so AITER's gdz = ceil(K / roundup(K / s, 256)) equals s);
//    the others with s = 1;
//  - (row, split) pairs are compared by CU rounds = ceil(tiles * s / cus), tiles =
//    ceil(M / tile_m) * ceil(N / tile_n), then idle CUs in the last round, then tile efficiency
//    tile_m * tile_n / (tile_m + tile_n) compared exactly (higher is better); the first in table
//    order, then the smaller split, wins what is still tied;
//  - a forced split (splitk: 0/1 = none, 2, 4, 8, 16) restricts the splits tried to it (rows that
//    may not split are then left out); a forced kernel (AITER's kernelName) runs split 1 unless
//    splitk says otherwise, must match b's layout, and only rows that may split run one above 1;
//    a forced split that does not cut K as above is refused with the reason.
// Where ours differs from AITER's (docs/ops/gemm_fp4.md):
//  - AITER visits its rows in std::unordered_map (hash) order and keeps a later row on a tie of
//    rounds whenever `empty_cu > idle || eff > best_eff` (so a later row with more idle CUs but a
//    higher integer-truncated efficiency replaces an earlier one): its choice depends on the
//    hash order. Ours is the lexicographic order above;
//  - AITER's default (Python passes log2_k_split = 0) never splits, and log2_k_split = -1 tries
//    only 2..16 on the split rows (never 1); we score 1..16;
//  - AITER launches gdz = ceil(K / roundup(K / 2^log2, 256)) blocks along z while the kernel reads
//    log2_k_split: when the rounded chunks do not divide K the two disagree. We launch only
//    splits where they agree, and carry the chosen split into the arguments (a forced kernel's
//    split too);
//  - AITER leaves seven strides uninitialised; we fill every one (kernels/aiter/f4gemm.hpp);
//  - AITER's 128x512 check `(tile_M != 128 || tile_N != 512 || N % tile_N == 0)` is kept as is.
#pragma once

#include <cstdint>
#include <string_view>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/core/verdict.hpp"
#include "jax_aiter/kernels/aiter/f4gemm.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/ops/aiter_tier.hpp"
#include "jax_aiter/ops/gemm_fp4_params.hpp"

namespace jax_aiter::ops {

// AITER's FP4 GEMM family (gfx950): the facts AiterTier (ops/aiter_tier.hpp) selects and packs
// with.
struct AiterF4Gemm : AiterFamily<GemmFp4Params, kernels::kAiterF4GemmRows> {
  static constexpr std::string_view kNotOnArch = "AITER's FP4 GEMM kernels are gfx950 code only";
  static constexpr std::string_view kFamily = "f4gemm";
  static constexpr std::string_view kNotARow = "the forced kernel is not an f4gemm row";

  static constexpr int log2_of(int64_t s) {
    int l = 0;
    while ((int64_t{1} << l) < s) ++l;
    return l;
  }
  // Whether `split` (a power of two) cuts K into equal 256-multiples.
  static constexpr bool valid_split(int64_t k, int64_t split) {
    namespace A = kernels::aiter_f4gemm;
    return log2_of(split) <= A::kMaxLog2Split && k % (int64_t{A::kKStep} * split) == 0;
  }

  static AiterQuery query(const Params& p, const Target& t) {
    AiterQuery q = AiterFamily::query(p, t);
    q.b_shuffled = p.b_shuffled();
    return q;
  }
  static constexpr Verdict gate(const AiterQuery& q) {
    namespace A = kernels::aiter_f4gemm;
    if (q.k % A::kKStep != 0) return Verdict::no("K = {} is not a multiple of 256", q.k);
    if (q.m % A::kOutRows != 0) {
      return Verdict::no("M = {} is not a multiple of 32 (the kernels write whole 32-row groups)",
                         q.m);
    }
    const auto s = q.knobs.split();
    if (s && !valid_split(q.k, *s)) {
      return Verdict::no("split {} does not cut K = {} into equal multiples of 256", *s, q.k);
    }
    return Verdict::yes();
  }
  static constexpr Verdict fits(const Row& r, const AiterQuery& q) {
    if (r.bpreshuffle != q.b_shuffled) {
      return Verdict::no(q.b_shuffled ? "the forced kernel reads a plain B, b is shuffled"
                                      : "the forced kernel reads a shuffled B, b is plain");
    }
    // AITER's check: (tile_M != 128 || tile_N != 512 || N % tile_N == 0).
    if (r.tile_m == 128 && r.tile_n == 512 && q.n % 512 != 0) {
      return Verdict::no("N = {} is not a multiple of 512 (128x512)", q.n);
    }
    return Verdict::yes();
  }
  static constexpr SplitList splits(const Row& r, const AiterQuery& q) {
    SplitList s;
    for (int64_t split = 1; split <= (r.split_k ? kAiterMaxSplit : 1); split *= 2) {
      if (valid_split(q.k, split)) s.add(split);
    }
    return s;
  }
  static constexpr Verdict runs(const Row& r, const AiterQuery&, int64_t split) {
    if (split > 1 && !r.split_k) {
      return Verdict::no("the forced kernel cannot split K (split {})", split);
    }
    return Verdict::yes();
  }
  static constexpr aiter_rules::TileScore score(const Row& r, const AiterQuery& q, int64_t split) {
    return aiter_rules::tile_score(r.tile_m, r.tile_n,
                                   ceil_div(q.m, r.tile_m) * ceil_div(q.n, r.tile_n), split,
                                   q.compute_units);
  }
  static constexpr Verdict none(const AiterQuery& q) {
    const auto s = q.knobs.split();
    return s ? Verdict::no("no f4gemm row takes split {} for this call", *s)
             : Verdict::no("no f4gemm row takes this call (N = {})", q.n);
  }

  // As AITER's gemm_a4w4_asm packs it, every field written (the rest of the slots zero).
  static void pack(const Params& p, const AiterChoice<Row>& c, kernels::Plan& plan) {
    const Row& r = *c.row;
    const auto m = static_cast<uint32_t>(p.m()), n = static_cast<uint32_t>(p.n()),
               k = static_cast<uint32_t>(p.k());
    kernels::AiterF4GemmArgs args{};
    args.D = p.out.data;
    args.C = nullptr;  // no bias (docs/ops/gemm_fp4.md): beta = 0
    args.A = p.a.data;
    args.B = p.b.data;
    args.alpha = 1.0f;
    args.beta = 0.0f;
    args.stride_D0 = n;  // elements; AITER leaves it unset (the kernels take out's from C0)
    args.stride_D1 = 1;
    args.stride_C0 = n;  // AITER: out.stride(0)
    args.stride_C1 = 1;
    args.stride_A0 = k;  // fp4 elements: AITER's A.stride(0) * 2
    args.stride_A1 = 1;
    args.stride_B0 = k;
    args.stride_B1 = 1;
    args.M = m;
    args.N = n;
    args.K = k;
    args.ScaleA = p.a_scale.data;
    args.ScaleB = p.b_scale.data;
    args.stride_ScaleA0 = static_cast<uint32_t>(p.a_scale.dims[1]);  // bytes (padded K/32)
    args.stride_ScaleA1 = 1;
    args.stride_ScaleB0 = static_cast<uint32_t>(p.b_scale.dims[1]);
    args.stride_ScaleB1 = 1;
    args.log2_k_split = log2_of(c.split);  // 0 on the rows that may not split
    if (c.split > 1) {
      // The splits add their partial products into out atomically: it must start at zero.
      plan.memset(p.out.data, uint64_t{m} * n * 2, 0, "out");
    }
    const kernels::Dim3 grid{static_cast<uint32_t>(ceil_div(n, r.tile_n)),
                             static_cast<uint32_t>(ceil_div(m, r.tile_m)),
                             static_cast<uint32_t>(c.split)};
    plan.launch(r.kernel, grid, {kernels::aiter_f4gemm::kBlockThreads, 1, 1}, args);
    plan.note("tile_m", r.tile_m);
    plan.note("tile_n", r.tile_n);
    plan.note("split", c.split);
  }
};

using GemmFp4AsmTier = AiterTier<AiterF4Gemm>;

}  // namespace jax_aiter::ops
