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
//  - a forced split (splitk: 0/1 = none, 2..16) restricts the splits tried to it (rows that may
//    not split are then left out); a forced kernel (AITER's kernelName) runs split 1 unless
//    splitk says otherwise, must match b's layout, and only rows that may split run one above 1.
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
#include "jax_aiter/ops/aiter_rules.hpp"
#include "jax_aiter/ops/gemm_fp4_params.hpp"

namespace jax_aiter::ops {

struct AiterF4GemmQuery {
  int64_t m = 0, n = 0, k = 0;
  bool b_shuffled = true;
  Arch arch = Arch::kGfx950;
  int compute_units = 256;
  std::string_view kernel;  // forced row, by symbol or short name ("" = heuristic)
  int64_t splitk = -1;      // forced split (-1 = heuristic; 0 = 1)
};

struct AiterF4GemmChoice {
  const kernels::AiterF4GemmRow* row = nullptr;
  int log2_split = 0;
};

namespace gemm_fp4_asm_detail {

namespace A = kernels::aiter_f4gemm;

constexpr int64_t tiles(const kernels::AiterF4GemmRow& r, int64_t m, int64_t n) {
  return ceil_div(m, r.tile_m) * ceil_div(n, r.tile_n);
}

// Whether 2^log2 splits cut K into equal 256-multiples.
constexpr bool valid_split(int64_t k, int log2) {
  return log2 >= 0 && log2 <= A::kMaxLog2Split && k % (int64_t{A::kKStep} << log2) == 0;
}

constexpr bool n_fits(const kernels::AiterF4GemmRow& r, int64_t n) {
  return r.tile_m != 128 || r.tile_n != 512 || n % 512 == 0;
}

constexpr int log2_of(int64_t s) {
  int l = 0;
  while ((int64_t{1} << l) < s) ++l;
  return l;
}

struct Score {
  int64_t rounds, idle;
  int tm, tn;

  constexpr bool better_than(const Score& o) const {
    if (rounds != o.rounds) return rounds < o.rounds;
    if (idle != o.idle) return idle < o.idle;
    return aiter_rules::more_efficient_tile(tm, tn, o.tm, o.tn);
  }
};

constexpr Score score(const kernels::AiterF4GemmRow& r, const AiterF4GemmQuery& q, int log2) {
  const auto [rounds, idle] = aiter_rules::cu_rounds(tiles(r, q.m, q.n) << log2, q.compute_units);
  return {rounds, idle, r.tile_m, r.tile_n};
}

}  // namespace gemm_fp4_asm_detail

// AITER's FP4 GEMM row and split for a call, or why none runs it.
constexpr Verdict select_aiter_f4gemm(const AiterF4GemmQuery& q, AiterF4GemmChoice* out) {
  using namespace gemm_fp4_asm_detail;
  if (q.arch != Arch::kGfx950) {
    return Verdict::no(
        "AITER's FP4 GEMM kernels are gfx950 code (plan them for gfx950 with asm_arch to run "
        "their ABI twins on this device)");
  }
  if (q.k % A::kKStep != 0) return Verdict::no("K = {} is not a multiple of 256", q.k);
  if (q.m % A::kOutRows != 0) {
    return Verdict::no("M = {} is not a multiple of 32 (the kernels write whole 32-row groups)",
                       q.m);
  }
  if (q.compute_units < 1) return Verdict::no("no compute units");
  const int64_t forced_split = q.splitk == 0 ? 1 : q.splitk;
  const int forced_log2 = forced_split > 0 ? log2_of(forced_split) : -1;
  if (forced_log2 >= 0 && !valid_split(q.k, forced_log2)) {
    return Verdict::no("split {} does not cut K = {} into equal multiples of 256", forced_split,
                       q.k);
  }
  if (!q.kernel.empty()) {
    for (const auto& r : kernels::kAiterF4GemmRows) {
      if (!aiter_rules::names(r, q.kernel)) continue;
      if (r.bpreshuffle != q.b_shuffled) {
        return Verdict::no(q.b_shuffled ? "the forced kernel reads a plain B, b is shuffled"
                                        : "the forced kernel reads a shuffled B, b is plain");
      }
      if (!n_fits(r, q.n)) return Verdict::no("N = {} is not a multiple of 512 (128x512)", q.n);
      const int log2 = forced_log2 > 0 ? forced_log2 : 0;
      if (log2 > 0 && !r.split_k) {
        return Verdict::no("the forced kernel cannot split K (split {})", forced_split);
      }
      *out = {&r, log2};
      return Verdict::yes();
    }
    return Verdict::no("the forced kernel is not an f4gemm row");
  }
  const kernels::AiterF4GemmRow* best = nullptr;
  Score best_score{};
  int best_log2 = 0;
  for (const auto& r : kernels::kAiterF4GemmRows) {
    if (r.bpreshuffle != q.b_shuffled || !n_fits(r, q.n)) continue;
    const int first = forced_log2 >= 0 ? forced_log2 : 0;
    const int last = forced_log2 >= 0 ? forced_log2 : (r.split_k ? A::kMaxLog2Split : 0);
    for (int log2 = first; log2 <= last; ++log2) {
      if (log2 > 0 && !r.split_k) continue;
      if (!valid_split(q.k, log2)) continue;
      const Score s = score(r, q, log2);
      if (best == nullptr || s.better_than(best_score)) {
        best = &r;
        best_score = s;
        best_log2 = log2;
      }
    }
  }
  if (best == nullptr) return Verdict::no("no f4gemm row takes split {}", forced_split);
  *out = {best, best_log2};
  return Verdict::yes();
}

struct GemmFp4AsmTier {
  static constexpr std::string_view kName = "asm";
  static constexpr bool kRunsAiterCode = true;

  static AiterF4GemmQuery query(const GemmFp4Params& p, const Target& t) {
    return {p.m(), p.n(), p.k(), p.b_shuffled(), t.arch, t.compute_units, p.kernel, p.splitk};
  }

  static Verdict supports(const GemmFp4Params& p, const Target& t) {
    AiterF4GemmChoice choice;
    return select_aiter_f4gemm(query(p, t), &choice);
  }

  // As AITER's gemm_a4w4_asm packs it, every field written (the rest of the slots zero).
  static void plan(const GemmFp4Params& p, const Target& t, kernels::Plan& plan) {
    AiterF4GemmChoice c;
    (void)select_aiter_f4gemm(query(p, t), &c);
    const kernels::AiterF4GemmRow& r = *c.row;
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
    args.log2_k_split = c.log2_split;  // 0 on the rows that may not split
    const int split = 1 << c.log2_split;
    if (split > 1) {
      // The splits add their partial products into out atomically: it must start at zero.
      plan.memset(p.out.data, uint64_t{m} * n * 2, 0, "out");
    }
    const kernels::Dim3 grid{static_cast<uint32_t>(ceil_div(n, r.tile_n)),
                             static_cast<uint32_t>(ceil_div(m, r.tile_m)),
                             static_cast<uint32_t>(split)};
    plan.launch(r.kernel, grid, {kernels::aiter_f4gemm::kBlockThreads, 1, 1}, args);
    plan.note("tile_m", r.tile_m);
    plan.note("tile_n", r.tile_n);
    plan.note("split", split);
  }
};

}  // namespace jax_aiter::ops
