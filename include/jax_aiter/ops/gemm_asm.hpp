// The ASM tier of aiter.gemm: AITER's BF16 GEMM kernels (kernels/aiter/bf16gemm.hpp), chosen by
// AITER's CU-rounds heuristic over the rows in table order, and packed as AITER packs them.
//
// The rule (restated from AITER's get_heuristic_kernel, asm_gemm_a16w16.cu at e4048607a535):
//  - K must be a multiple of 64; a row is a candidate when it is built for the arch, its tile N
//    divides N, and it takes a bias if the call has one;
//  - a splitk_clean row splits K when K/64 >= 2: split = max(2, min(cus / tiles, 16, K/64)) with
//    tiles = ceil(M/tile_m) * N/tile_n (integer division, so a grid larger than the device still
//    splits 2 ways); other rows run split 1;
//  - rows are compared by CU rounds = ceil(tiles*split / cus), then idle CUs in the last round,
//    then rows of M past the end of the last tile (oob), then tile efficiency tm*tn/(tm+tn)
//    (higher is better); the first row in table order wins what is still tied.
// Where ours differs from AITER's (docs/ops/gemm.md):
//  - AITER visits the rows in std::unordered_map order and compares with
//    `rounds < best || (rounds == best && (idle < best_idle || oob < best_oob)) || ...`, which is
//    not an order: when one row has fewer idle CUs and another less oob, the row seen later wins.
//    Ours is the lexicographic order above, so the choice never depends on hash order;
//  - AITER ignores splitK when no kernelName is given; we honour it (only rows that can run that
//    split are candidates);
//  - a split grid with more than 1024 tiles (the semaphore's counters) is skipped as a candidate
//    (AITER's Python skips it; its C++ would fail the launch).
#pragma once

#include <cstdint>
#include <string_view>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/core/verdict.hpp"
#include "jax_aiter/kernels/aiter/bf16gemm.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/ops/aiter_rules.hpp"
#include "jax_aiter/ops/gemm_params.hpp"

namespace jax_aiter::ops {

struct AiterBf16GemmQuery {
  int64_t m = 0, n = 0, k = 0;
  Arch arch = Arch::kGfx942;
  int compute_units = 304;
  bool bias = false;
  std::string_view kernel;  // forced row, by symbol or short name ("" = heuristic)
  int64_t splitk = -1;      // forced split (-1 = heuristic)
};

struct AiterBf16GemmChoice {
  const kernels::AiterBf16GemmRow* row = nullptr;
  int split = 1;
};

namespace gemm_asm_detail {

namespace A = kernels::aiter_bf16gemm;

constexpr int64_t tiles(const kernels::AiterBf16GemmRow& r, int64_t m, int64_t n) {
  return ceil_div(m, r.tile_m) * (n / r.tile_n);
}

// The split AITER's heuristic gives a row.
constexpr int64_t auto_split(const kernels::AiterBf16GemmRow& r, const AiterBf16GemmQuery& q) {
  const int64_t subk = q.k / A::kSubK;
  if (!r.split_k || subk < 2) return 1;
  const int64_t by_cus = q.compute_units / tiles(r, q.m, q.n);
  const int64_t capped = by_cus < A::kMaxSplit ? by_cus : A::kMaxSplit;
  const int64_t split = capped < subk ? capped : subk;
  return split > 2 ? split : 2;
}

// A forced split as AITER clamps it: at most 16 and K/64.
constexpr int64_t clamp_split(int64_t splitk, int64_t k) {
  const int64_t subk = k / A::kSubK;
  const int64_t s = splitk < A::kMaxSplit ? splitk : A::kMaxSplit;
  return s < subk ? s : subk;
}

// A row runs a given split only if it is a splitk_clean row exactly when the split is above 1
// (AITER's check on a forced kernel and split).
constexpr bool runs_split(const kernels::AiterBf16GemmRow& r, int64_t split) {
  return split > 1 ? r.split_k : !r.split_k;
}

struct Score {
  int64_t rounds, idle, oob;
  int tm, tn;

  // Strictly better: fewer rounds, then fewer idle CUs, then less oob, then higher efficiency.
  constexpr bool better_than(const Score& o) const {
    if (rounds != o.rounds) return rounds < o.rounds;
    if (idle != o.idle) return idle < o.idle;
    if (oob != o.oob) return oob < o.oob;
    return aiter_rules::more_efficient_tile(tm, tn, o.tm, o.tn);
  }
};

constexpr Score score(const kernels::AiterBf16GemmRow& r, const AiterBf16GemmQuery& q,
                      int64_t split) {
  const auto [rounds, idle] = aiter_rules::cu_rounds(tiles(r, q.m, q.n) * split, q.compute_units);
  const int64_t rem = q.m % r.tile_m;
  return {rounds, idle, rem == 0 ? 0 : r.tile_m - rem, r.tile_m, r.tile_n};
}

}  // namespace gemm_asm_detail

// AITER's BF16 GEMM row and split for a call, or why none runs it.
constexpr Verdict select_aiter_bf16gemm(const AiterBf16GemmQuery& q, AiterBf16GemmChoice* out) {
  using namespace gemm_asm_detail;
  if (!aiter_rules::aiter_arch(q.arch)) return aiter_rules::not_aiter_arch();
  if (q.k % A::kSubK != 0) return Verdict::no("K = {} is not a multiple of 64", q.k);
  if (q.compute_units < 1) return Verdict::no("no compute units");
  if (!q.kernel.empty()) {
    for (const auto& r : kernels::kAiterBf16GemmRows) {
      if (!r.on(q.arch) || !aiter_rules::names(r, q.kernel)) continue;
      if (q.n % r.tile_n != 0) {
        return Verdict::no("N = {} is not a multiple of the forced kernel's tile N = {}", q.n,
                           r.tile_n);
      }
      if (q.bias && !r.bias) return Verdict::no("the forced kernel takes no bias");
      const int64_t split = q.splitk >= 0 ? clamp_split(q.splitk, q.k) : auto_split(r, q);
      if (q.splitk >= 0 && !runs_split(r, split)) {
        return Verdict::no(
            "the forced kernel cannot run split {} (splitk_clean rows need a split above 1, the "
            "others 1)",
            split);
      }
      const int64_t t = tiles(r, q.m, q.n);
      if (split > 1 && t > A::kSemaphoreCounters) {
        return Verdict::no("split {} over {} tiles: more than the semaphore's 1024 counters", split,
                           t);
      }
      *out = {&r, static_cast<int>(split > 1 ? split : 1)};
      return Verdict::yes();
    }
    return Verdict::no("the forced kernel is not a bf16gemm row for this arch");
  }
  const kernels::AiterBf16GemmRow* best = nullptr;
  Score best_score{};
  int64_t best_split = 1;
  for (const auto& r : kernels::kAiterBf16GemmRows) {
    if (!r.on(q.arch) || q.n % r.tile_n != 0 || (q.bias && !r.bias)) continue;
    int64_t split = auto_split(r, q);
    if (q.splitk >= 0) {
      split = clamp_split(q.splitk, q.k);
      if (!runs_split(r, split)) continue;
    }
    if (split > 1 && tiles(r, q.m, q.n) > A::kSemaphoreCounters) continue;
    const Score s = score(r, q, split);
    if (best == nullptr || s.better_than(best_score)) {
      best = &r;
      best_score = s;
      best_split = split;
    }
  }
  if (best == nullptr) {
    return q.splitk >= 0
               ? Verdict::no("no row runs N = {} with split {} (bias {})", q.n,
                             clamp_split(q.splitk, q.k), q.bias)
               : Verdict::no("N = {} is not a multiple of a candidate row's tile N (bias {})", q.n,
                             q.bias);
  }
  *out = {best, static_cast<int>(best_split > 1 ? best_split : 1)};
  return Verdict::yes();
}

struct GemmAsmTier {
  static constexpr std::string_view kName = "asm";
  static constexpr bool kRunsAiterCode = true;

  static AiterBf16GemmQuery query(const GemmParams& p, const Target& t) {
    return {p.m(), p.n(), p.k(), t.arch, t.compute_units, p.bias.has_value(), p.kernel, p.splitk};
  }

  static Verdict supports(const GemmParams& p, const Target& t) {
    if (p.a.dtype != DType::kBF16) {
      return Verdict::no("AITER's bf16gemm kernels take bf16 inputs (a is f16)");
    }
    if (p.out.dtype != DType::kBF16 && p.out.dtype != DType::kF32) {
      return Verdict::no("AITER's bf16gemm kernels write bf16 or f32 (out is f16)");
    }
    // Strides are 32-bit byte counts in the argument struct.
    if (p.k() * 2 > int64_t{UINT32_MAX} || p.n() * 4 > int64_t{UINT32_MAX}) {
      return Verdict::no("a row is wider than 32-bit byte strides allow (K = {}, N = {})", p.k(),
                         p.n());
    }
    AiterBf16GemmChoice choice;
    return select_aiter_bf16gemm(query(p, t), &choice);
  }

  // As AITER's gemm_a16w16_asm packs it, every field written (the rest of the slots zero).
  static void plan(const GemmParams& p, const Target& t, kernels::Plan& plan) {
    AiterBf16GemmChoice c;
    (void)select_aiter_bf16gemm(query(p, t), &c);
    const kernels::AiterBf16GemmRow& r = *c.row;
    const auto m = static_cast<uint32_t>(p.m()), n = static_cast<uint32_t>(p.n()),
               k = static_cast<uint32_t>(p.k());
    const uint32_t out_bytes = static_cast<uint32_t>(size_bytes(p.out.dtype));
    kernels::AiterBf16GemmArgs args{};
    args.D = p.out.data;
    args.C = nullptr;
    args.A = p.a.data;
    args.B = p.b.data;
    args.alpha = 1.0f;
    args.beta = 0.0f;
    args.stride_A0 = k * 2;  // bytes
    args.stride_B0 = k * 2;
    args.stride_C0 = n * out_bytes;
    args.stride_D0 = n * out_bytes;
    args.M = m;
    args.N = n;
    args.K = k;
    args.splitk = static_cast<uint32_t>(c.split);
    args.is_out_b16 = p.out.dtype == DType::kBF16 ? 1u : 0u;
    args.bias = p.bias ? p.bias->data : nullptr;
    args.add_bias = p.bias ? 1u : 0u;
    args.semaphore = nullptr;
    if (c.split > 1) {
      // The kernels count arrivals per output tile in a zeroed u32 array and leave it zero; the
      // workspace is XLA's and uninitialised, so the plan zeroes it first (stream-ordered).
      const int semaphore =
          plan.workspace.add("semaphore", int64_t{kernels::aiter_bf16gemm::kSemaphoreCounters} * 4);
      void* counters = plan.piece(semaphore);
      args.semaphore = counters;
      plan.memset(counters, plan.workspace.pieces[semaphore].bytes, 0, "semaphore");
    }
    const kernels::Dim3 grid{static_cast<uint32_t>(ceil_div(n, r.tile_n)),
                             static_cast<uint32_t>(ceil_div(m, r.tile_m)),
                             static_cast<uint32_t>(c.split)};
    plan.launch(r.kernel, grid, {kernels::aiter_bf16gemm::kBlockThreads, 1, 1}, args);
    plan.note("tile_m", r.tile_m);
    plan.note("tile_n", r.tile_n);
    plan.note("split", c.split);
  }
};

}  // namespace jax_aiter::ops
