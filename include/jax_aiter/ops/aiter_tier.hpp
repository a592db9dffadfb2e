// The ASM tier of every AITER GEMM family, written once. A family supplies its facts (its rows,
// gates, splits, score and argument packer); AiterTier<Family> decides once, in supports(), which
// row and K split run the call (or why none does), and plan() packs exactly that choice.
//
// The selection, for a query (the call's M, N, K, the target's arch and CUs, the knobs):
//  1. the arch runs AITER's code (gfx942, gfx950) and the family has a row for it;
//  2. the family's gate on the call (K granularity, M limits, ...) and on a forced split;
//  3. a forced kernel (knobs.kernel): the row of that name on the arch, if it fits the call
//     (fits), at the forced split or else the family's split for a named row (kernel_split), if
//     the row runs that split (runs); each failure is the verdict, naming the reason (where one
//     kernel sits in several rows, as the fused-MoE lists share a few, the first row that takes
//     the call, else the first row's reason);
//  4. otherwise the heuristic: every row on the arch that fits and that the heuristic may pick
//     (auto_row), at the forced split or else each of the family's candidate splits (splits) that
//     the row runs, scored (score); a later (row, split) wins only when strictly better, so ties
//     go to the earlier row in table order, then to the earlier split.
//
// A family (its Params type and row table given to AiterFamily, which supplies Row, kRows and what
// a family has unless it says otherwise: its name kFamily (AITER's folder name, "bf16gemm"; the
// tier's label in errors and plans, since an op may have several "asm" tiers), the messages
// kNotOnArch and kNotARow, accepts (nothing beyond the shape), query (Params' m(), n(), k() and
// knobs; a family whose rule reads more of a call returns a type derived from AiterQuery, which its
// functions take), forced_split, kernel_split (1), auto_row (every row), and a family that never
// splits: splits {1}, runs only split 1, every row scoring alike):
//   struct SomeFamily : AiterFamily<SomeParams, kernels::kAiterSomeRows> {
//     static constexpr Verdict gate(const AiterQuery&);
//     static constexpr Verdict fits(const Row&, const AiterQuery&);
//     static constexpr SplitList splits(const Row&, const AiterQuery&);
//     static constexpr Verdict runs(const Row&, const AiterQuery&, int64_t split);
//     static constexpr auto score(const Row&, const AiterQuery&, int64_t split);  // better_than
//     static constexpr Verdict none(const AiterQuery&);
//     static void pack(const Params&, const AiterChoice<Row>&, kernels::Plan&);
//   };
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/core/verdict.hpp"
#include "jax_aiter/kernels/aiter/row.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/ops/aiter_knobs.hpp"
#include "jax_aiter/ops/aiter_rules.hpp"

namespace jax_aiter::ops {

// What a family's selection reads of a call.
struct AiterQuery {
  int64_t m = 0, n = 0, k = 0;
  Arch arch = Arch::kGfx942;
  int compute_units = 304;
  AiterKnobs knobs{};
  bool bias = false;       // the call adds a bias (BF16: only rows that take one)
  bool b_shuffled = true;  // b is pre-shuffled (FP4: a row's bpreshuffle must match)
};

// What the tier chose: the row and its K split (1: none).
template <typename Row>
struct AiterChoice {
  const Row* row = nullptr;
  int64_t split = 1;
};

// A row's candidate K splits, in the order the heuristic tries them.
struct SplitList {
  std::array<int64_t, 16> splits{};
  int count = 0;

  constexpr void add(int64_t s) { splits[count++] = s; }
  constexpr const int64_t* begin() const { return splits.data(); }
  constexpr const int64_t* end() const { return splits.data() + count; }
};

// A score under which no row is better than another (the first that fits wins).
struct NoScore {
  constexpr bool better_than(const NoScore&) const { return false; }
};

// A family of rows `Rows` (an array of kernels::AiterRow) for an op of `ParamsT`, and the facts it
// has unless it says otherwise.
template <typename ParamsT, const auto& Rows>
struct AiterFamily {
  using Params = ParamsT;
  using Row = std::remove_cvref_t<decltype(Rows[0])>;
  static constexpr auto& kRows = Rows;
  static constexpr std::string_view kFamily = "";
  static constexpr std::string_view kNotOnArch = "AITER ships this family for another arch";
  static constexpr std::string_view kNotARow =
      "the forced kernel is not one of this family's rows for this arch";

  // Checks on the call's operands beyond the shape (dtypes, fp8 formats).
  static Verdict accepts(const Params&, const Target&) { return Verdict::yes(); }
  // The query of a call: its M, N, K and knobs on the target.
  static AiterQuery query(const Params& p, const Target& t) {
    return {.m = p.m(),
            .n = p.n(),
            .k = p.k(),
            .arch = t.arch,
            .compute_units = t.compute_units,
            .knobs = p.aiter};
  }
  // The split a forced splitk runs (0 and 1: none).
  static constexpr int64_t forced_split(const AiterQuery& q) { return *q.knobs.split(); }
  // The split a forced kernel runs when splitk is not forced.
  static constexpr int64_t kernel_split(const Row&, const AiterQuery&) { return 1; }
  // Whether the heuristic may pick the row at all (a row it never picks runs by name only).
  static constexpr bool auto_row(const Row&, const AiterQuery&) { return true; }
  // A family that never splits K: split 1, every row scoring alike.
  static constexpr SplitList splits(const Row&, const AiterQuery&) {
    SplitList s;
    s.add(1);
    return s;
  }
  static constexpr Verdict runs(const Row&, const AiterQuery&, int64_t split) {
    return split > 1
               ? Verdict::no("AITER's kernels of this family do not split K (split {})", split)
               : Verdict::yes();
  }
  static constexpr NoScore score(const Row&, const AiterQuery&, int64_t) { return {}; }
};

// What the INT8 and FP8 block-scale families share (AITER's asm_gemm_a8w8.cu and
// asm_a8w8_blockscale_bpreshuffle.cu): K in 128-byte steps; a split s cuts K into chunks of
// roundup(ceil(K / s), 128) and is valid when that makes exactly s chunks (AITER corrects an
// invalid split to that count; here only the valid splits are tried, once each), 1..16; rows scored
// by CU rounds, idle CUs, then tile efficiency (aiter_rules::TileScore).
template <typename ParamsT, const auto& Rows>
struct AiterChunkSplitFamily : AiterFamily<ParamsT, Rows> {
  using Row = typename AiterFamily<ParamsT, Rows>::Row;
  static constexpr int64_t kStep = 128;

  static constexpr int64_t chunk(int64_t k, int64_t split) {
    return ceil_div(ceil_div(k, split), kStep) * kStep;
  }
  static constexpr bool valid_split(int64_t k, int64_t split) {
    return split >= 1 && ceil_div(k, chunk(k, split)) == split;
  }
  static constexpr Verdict gate(const AiterQuery& q) {
    if (q.k % kStep != 0) return Verdict::no("K = {} is not a multiple of 128", q.k);
    const auto s = q.knobs.split();
    if (s && !valid_split(q.k, *s)) {
      return Verdict::no(
          "split {} does not cut K = {} into 128-multiples with none empty (chunks of {})", *s, q.k,
          chunk(q.k, *s));
    }
    return Verdict::yes();
  }
  static constexpr Verdict fits(const Row& r, const AiterQuery& q) {
    if (q.n % r.tile_n != 0) {
      return Verdict::no("N = {} is not a multiple of the forced kernel's tile N = {}", q.n,
                         r.tile_n);
    }
    return Verdict::yes();
  }
  static constexpr SplitList splits(const Row&, const AiterQuery& q) {
    SplitList s;
    for (int64_t split = 1; split <= kAiterMaxSplit; ++split) {
      if (valid_split(q.k, split)) s.add(split);
    }
    return s;
  }
  // A row runs any valid split, unless it says it may not split (split_k false).
  static constexpr Verdict runs(const Row& r, const AiterQuery&, int64_t split) {
    if constexpr (requires { r.split_k; }) {
      if (split > 1 && !r.split_k) {
        return Verdict::no("the forced kernel cannot split K (split {})", split);
      }
    }
    return Verdict::yes();
  }
  static constexpr aiter_rules::TileScore score(const Row& r, const AiterQuery& q, int64_t split) {
    return aiter_rules::tile_score(r.tile_m, r.tile_n, ceil_div(q.m, r.tile_m) * (q.n / r.tile_n),
                                   split, q.compute_units);
  }
};

// Whether any row of the family is built for the arch, and the verdict when not.
template <typename F>
constexpr Verdict aiter_family_on(Arch arch) {
  if (!aiter_rules::aiter_arch(arch)) return aiter_rules::not_aiter_arch();
  for (const auto& r : F::kRows) {
    if (kernels::on(r, arch)) return Verdict::yes();
  }
  return Verdict::no(F::kNotOnArch);
}

// The family's row and split for a query (AiterQuery, or the family's own query type), or why
// none runs it.
template <typename F, typename Q>
constexpr Decision<AiterChoice<typename F::Row>> select_aiter(const Q& q) {
  using Choice = AiterChoice<typename F::Row>;
  if (const Verdict v = aiter_family_on<F>(q.arch); !v.ok()) return v;
  if (q.compute_units < 1) return Verdict::no("no compute units");
  if (const Verdict v = F::gate(q); !v.ok()) return v;
  const int64_t forced = q.knobs.splitk ? F::forced_split(q) : 0;  // 0: none forced
  if (!q.knobs.kernel.empty()) {
    Verdict first = Verdict::no(F::kNotARow);  // the first named row's reason
    bool named = false;
    for (const auto& r : F::kRows) {
      if (!kernels::on(r, q.arch) || !kernels::names(r, q.knobs.kernel)) continue;
      Verdict v = F::fits(r, q);
      const int64_t split = forced > 0 ? forced : F::kernel_split(r, q);
      if (v.ok()) v = F::runs(r, q, split);
      if (v.ok()) return Choice{&r, split};
      if (!named) first = v;
      named = true;
    }
    return first;
  }
  Choice best;
  decltype(F::score(F::kRows[0], q, 1)) best_score{};
  for (const auto& r : F::kRows) {
    if (!kernels::on(r, q.arch) || !F::auto_row(r, q) || !F::fits(r, q).ok()) continue;
    SplitList candidates;
    if (forced > 0) {
      candidates.add(forced);
    } else {
      candidates = F::splits(r, q);
    }
    for (int64_t split : candidates) {
      if (!F::runs(r, q, split).ok()) continue;
      const auto s = F::score(r, q, split);
      if (best.row == nullptr || s.better_than(best_score)) {
        best = {&r, split};
        best_score = s;
      }
    }
  }
  if (best.row == nullptr) return F::none(q);
  return best;
}

// The ASM tier of an AITER family.
template <typename F>
struct AiterTier {
  static constexpr std::string_view kName = "asm";
  static constexpr std::string_view kFamily = F::kFamily;
  static constexpr bool kRunsAiterCode = true;
  using Choice = AiterChoice<typename F::Row>;

  static Decision<Choice> supports(const typename F::Params& p, const Target& t) {
    const auto q = F::query(p, t);
    if (const Verdict v = aiter_family_on<F>(q.arch); !v.ok()) return v;
    if (const Verdict v = F::accepts(p, t); !v.ok()) return v;
    return select_aiter<F>(q);
  }

  // Packs the choice supports() made, as AITER's launcher packs it (with the target, for a family
  // whose grid depends on it: the fused-MoE persistent kernels launch a grid per CU).
  static void plan(const typename F::Params& p, const Target& t, const Choice& c,
                   kernels::Plan& plan) {
    if constexpr (requires { F::pack(p, t, c, plan); }) {
      F::pack(p, t, c, plan);
    } else {
      F::pack(p, c, plan);
    }
  }
};

}  // namespace jax_aiter::ops
