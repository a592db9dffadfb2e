// The ASM tier of aiter.topk_softmax: AITER's topksoftmax kernels (kernels/aiter/topksoftmax.hpp),
// chosen as AITER's launcher chooses them and packed as it packs them. Restated from
// github.com/ROCm/aiter at e4048607a535: csrc/py_itfs_cu/asm_topksoftmax.cu (topk_softmax_asm and
// get_heuristic_kernel_topksoftmax) and aiter/fused_moe.py fused_topk (its caller).
//
// The rule, over the rows built for the arch:
//  - the logits are fp32 or bf16 (AITER's launcher fails on any other dtype; fused_topk sends
//    those to its HIP topk_softmax instead, as f16 goes to our portable tier here);
//  - candidates: the rows of the logits' dtype with num_experts == E and topk == k exactly, and
//    subm <= AITER's cap (4 below 10000 tokens, else 12);
//  - the largest subm wins (no two rows share dtype, E, k and subm: no tie to break);
//  - no row fits: AITER's launcher fails ("cannot get heuristic kernel"), and fused_topk never
//    calls it then (its own gate: (E, k) in {(128, 4), (128, 6), (128, 8), (256, 6), (256, 8),
//    (384, 8), (640, 8)}, bf16 or fp32, contiguous logits); it runs its HIP kernel, as we run our
//    portable one;
//  - a forced kernel (our `kernel` knob; AITER's entry takes none) must be a row of the call's
//    dtype, E and k on the arch; its subm may exceed the cap (the kernels stop at `batch` rows);
//  - a forced splitk above 1 is declined (nothing splits).
// The launch: grid ceil(T / subm) workgroups of 256 threads (4 waves of 64), the 128-byte struct
// with out_stride = k * 4 (our outputs are dense [T, k]). renormalize as the call asks.
// Where ours differs from AITER's caller: fused_topk allocates both outputs with ceil(T / 4) * 4
// rows and slices them to T; we pass [T, k]. Every load and store of these kernels goes through a
// buffer resource of batch x out_stride bytes (logits: batch x expert x its size), seen in the
// disassembly of the gfx942 and gfx950 code objects, so rows past T are neither read nor written.
#pragma once

#include <cstdint>
#include <string_view>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/core/verdict.hpp"
#include "jax_aiter/kernels/aiter/topksoftmax.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/ops/aiter_tier.hpp"
#include "jax_aiter/ops/topk_softmax_params.hpp"

namespace jax_aiter::ops {

// What the topksoftmax rule reads of a call (m, n, k: tokens, experts, topk, for tools).
struct TopksoftmaxQuery : AiterQuery {
  DType dtype = DType::kBF16;
};

// AITER's cap on a row's subm for a call of `tokens` rows.
constexpr int64_t aiter_topksoftmax_max_subm(int64_t tokens) {
  namespace L = kernels::aiter_topksoftmax;
  return tokens < L::kLargeBatchTokens ? L::kSmallMaxSubm : L::kLargeMaxSubm;
}

// A row's score: the larger subm.
struct TopksoftmaxScore {
  int subm = 0;
  constexpr bool better_than(const TopksoftmaxScore& o) const { return subm > o.subm; }
};

// AITER's top-k softmax family: the facts AiterTier (ops/aiter_tier.hpp) selects and packs with.
struct AiterTopksoftmax : AiterFamily<TopkSoftmaxParams, kernels::kAiterTopksoftmaxRows> {
  using Query = TopksoftmaxQuery;
  static constexpr std::string_view kFamily = "topksoftmax";
  static constexpr std::string_view kNotOnArch =
      "AITER ships its topksoftmax kernels for gfx942/gfx950";
  static constexpr std::string_view kNotARow =
      "the forced kernel is not a topksoftmax row for this arch";

  static Verdict accepts(const Params& p, const Target&) {
    if (p.logits.dtype != DType::kF32 && p.logits.dtype != DType::kBF16) {
      return Verdict::no("AITER's topksoftmax kernels read fp32 or bf16 logits, not f16");
    }
    return Verdict::yes();
  }

  static TopksoftmaxQuery query(const Params& p, const Target& t) {
    TopksoftmaxQuery q;
    q.m = p.tokens();
    q.n = p.experts();
    q.k = p.topk();
    q.arch = t.arch;
    q.compute_units = t.compute_units;
    q.knobs = p.aiter;
    q.dtype = p.logits.dtype;
    return q;
  }

  static constexpr Verdict gate(const TopksoftmaxQuery& q) {
    if (const auto split = q.knobs.split(); split && *split > 1) {
      return Verdict::no("AITER's topksoftmax kernels split nothing (splitk {})", *split);
    }
    return Verdict::yes();
  }

  static constexpr Verdict fits(const Row& r, const TopksoftmaxQuery& q) {
    if (r.dtype != q.dtype) {
      return Verdict::no(r.dtype == DType::kF32 ? "the forced kernel reads fp32 logits, not bf16"
                                                : "the forced kernel reads bf16 logits, not fp32");
    }
    if (r.experts != q.n) {
      return Verdict::no("the forced kernel takes E = {} experts, the call has {}", r.experts, q.n);
    }
    if (r.topk != q.k) {
      return Verdict::no("the forced kernel chooses k = {}, the call asks for {}", r.topk, q.k);
    }
    return Verdict::yes();
  }

  // AITER's cap: subm 4 below 10000 tokens, 12 from there.
  static constexpr bool auto_row(const Row& r, const TopksoftmaxQuery& q) {
    return r.subm <= aiter_topksoftmax_max_subm(q.m);
  }

  static constexpr TopksoftmaxScore score(const Row& r, const TopksoftmaxQuery&, int64_t) {
    return {r.subm};
  }

  static constexpr Verdict none(const TopksoftmaxQuery& q) {
    return Verdict::no(
        "AITER ships no topksoftmax kernel for E = {}, k = {} (its (E, k): (128, 4|6|8), "
        "(256, 6|8), (384, 8), (640, 8))",
        q.n, q.k);
  }

  // As AITER's topk_softmax_asm packs it (the slots' pads zero).
  static void pack(const Params& p, const AiterChoice<Row>& c, kernels::Plan& plan) {
    const Row& r = *c.row;
    kernels::AiterTopksoftmaxArgs a{};
    a.T = p.ids.data;
    a.W = p.weights.data;
    a.A = p.logits.data;
    a.batch = static_cast<uint32_t>(p.tokens());
    a.expert = static_cast<uint32_t>(p.experts());
    a.topk = static_cast<uint32_t>(p.topk());
    a.renormalize = p.renormalize ? 1u : 0u;
    a.out_stride = static_cast<uint32_t>(p.topk() * 4);
    const kernels::Dim3 grid{static_cast<uint32_t>(ceil_div(p.tokens(), r.subm)), 1, 1};
    plan.launch(r.kernel, grid, {kernels::aiter_topksoftmax::kBlockThreads, 1, 1}, a);
    plan.note("subm", r.subm);
  }
};

using TopkSoftmaxAsmTier = AiterTier<AiterTopksoftmax>;

}  // namespace jax_aiter::ops
