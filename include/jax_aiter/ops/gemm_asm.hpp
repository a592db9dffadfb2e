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
//    split are candidates). A forced split runs min(splitk, 16, K / 64), AITER's clamp; splitk
//    above 16 is refused when the call is validated (ops/aiter_knobs.hpp);
//  - a split grid with more than 1024 tiles (the semaphore's counters) is skipped as a candidate
//    (AITER's Python skips it; its C++ would fail the launch).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/core/verdict.hpp"
#include "jax_aiter/kernels/aiter/bf16gemm.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/ops/aiter_tier.hpp"
#include "jax_aiter/ops/gemm_params.hpp"

namespace jax_aiter::ops {

// AITER's BF16 GEMM family: the facts AiterTier (ops/aiter_tier.hpp) selects and packs with.
struct AiterBf16Gemm : AiterFamily<GemmParams, kernels::kAiterBf16GemmRows> {
  static constexpr std::string_view kFamily = "bf16gemm";
  static constexpr std::string_view kNotARow =
      "the forced kernel is not a bf16gemm row for this arch";
  static constexpr int64_t tiles(const Row& r, const AiterQuery& q) {
    return ceil_div(q.m, r.tile_m) * (q.n / r.tile_n);
  }
  // A forced split as AITER clamps it: at most 16 and K/64 (0 and 1: none).
  static constexpr int64_t forced_split(const AiterQuery& q) {
    const int64_t s = std::min({*q.knobs.splitk, int64_t{kernels::aiter_bf16gemm::kMaxSplit},
                                q.k / kernels::aiter_bf16gemm::kSubK});
    return s > 1 ? s : 1;
  }
  // The split AITER's heuristic gives a row: max(2, min(cus / tiles, 16, K/64)) on a
  // splitk_clean row when K/64 >= 2, else 1.
  static constexpr int64_t kernel_split(const Row& r, const AiterQuery& q) {
    namespace A = kernels::aiter_bf16gemm;
    const int64_t subk = q.k / A::kSubK;
    if (!r.split_k || subk < 2) return 1;
    const int64_t split = std::min({q.compute_units / tiles(r, q), int64_t{A::kMaxSplit}, subk});
    return split > 2 ? split : 2;
  }

  static Verdict accepts(const Params& p, const Target&) {
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
    return Verdict::yes();
  }
  static AiterQuery query(const Params& p, const Target& t) {
    AiterQuery q = AiterFamily::query(p, t);
    q.bias = p.bias.has_value();
    return q;
  }
  static constexpr Verdict gate(const AiterQuery& q) {
    if (q.k % kernels::aiter_bf16gemm::kSubK != 0) {
      return Verdict::no("K = {} is not a multiple of 64", q.k);
    }
    return Verdict::yes();
  }
  static constexpr Verdict fits(const Row& r, const AiterQuery& q) {
    if (q.n % r.tile_n != 0) {
      return Verdict::no("N = {} is not a multiple of the forced kernel's tile N = {}", q.n,
                         r.tile_n);
    }
    if (q.bias && !r.bias) return Verdict::no("the forced kernel takes no bias");
    return Verdict::yes();
  }
  static constexpr SplitList splits(const Row& r, const AiterQuery& q) {
    SplitList s;
    s.add(kernel_split(r, q));
    return s;
  }
  // A forced split needs a splitk_clean row exactly when it is above 1 (AITER's check on a forced
  // kernel and split); any split above 1 needs a grid within the semaphore's counters.
  static constexpr Verdict runs(const Row& r, const AiterQuery& q, int64_t split) {
    if (q.knobs.splitk && (split > 1) != r.split_k) {
      return Verdict::no(
          "the forced kernel cannot run split {} (splitk_clean rows need a split above 1, the "
          "others 1)",
          split);
    }
    const int64_t t = tiles(r, q);
    if (split > 1 && t > kernels::aiter_bf16gemm::kSemaphoreCounters) {
      return Verdict::no("split {} over {} tiles: more than the semaphore's 1024 counters", split,
                         t);
    }
    return Verdict::yes();
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
  static constexpr Score score(const Row& r, const AiterQuery& q, int64_t split) {
    const auto [rounds, idle] = aiter_rules::cu_rounds(tiles(r, q) * split, q.compute_units);
    const int64_t rem = q.m % r.tile_m;
    return {rounds, idle, rem == 0 ? 0 : r.tile_m - rem, r.tile_m, r.tile_n};
  }
  static constexpr Verdict none(const AiterQuery& q) {
    return q.knobs.splitk
               ? Verdict::no("no row runs N = {} with split {} (bias {})", q.n, forced_split(q),
                             q.bias)
               : Verdict::no("N = {} is not a multiple of a candidate row's tile N (bias {})", q.n,
                             q.bias);
  }

  // As AITER's gemm_a16w16_asm packs it, every field written (the rest of the slots zero).
  static void pack(const Params& p, const AiterChoice<Row>& c, kernels::Plan& plan) {
    const Row& r = *c.row;
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

using GemmAsmTier = AiterTier<AiterBf16Gemm>;

}  // namespace jax_aiter::ops
