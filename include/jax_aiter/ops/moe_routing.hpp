// MoE routing: top-k softmax over router logits, and the sort of the chosen (token, expert) pairs
// into AITER's layout for its fused-MoE kernels. Parameters, validation and launch plans; pure C++
// (no HIP, no XLA).
//
//   aiter.topk_softmax  logits [T, E] bf16/f16/f32 -> weights f32 [T, k], ids i32 [T, k]
//     p = softmax(logits) in f32; the k largest by logit (softmax is monotonic: choosing on the
//     logit keeps ties that exp's rounding would create out of the choice), ties to the lower
//     expert id (AITER's ArgMax, csrc/include/hip_reduce.h at e4048607a5); weights p[id], or
//     with renormalize p[id] / sum of the k chosen. A NaN logit ranks below every number and
//     makes its row's weights NaN.
//   aiter.moe_sorting   ids i32 [T, k], weights f32 [T, k] -> sorted_token_ids i32 [P],
//     sorted_weights f32 [P], sorted_expert_ids i32 [P / block_m], num_valid_ids i32 [2]
//     (AITER's moe_sorting_fwd contract; the layout: kernels/shared/moe_routing.h). Ids outside
//     [0, num_experts) are dropped (no row). Rows past num_valid_ids[0] hold the padding id and
//     weight 0; blocks past it hold expert -1 (AITER leaves both unwritten).
// Every kernel writes each output element once and counts with no atomics, so results are the
// same bits from run to run.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <tuple>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/core/status.hpp"
#include "jax_aiter/core/verdict.hpp"
#include "jax_aiter/kernels/moe_routing.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/ops/dispatch.hpp"
#include "jax_aiter/ops/tensor.hpp"
#include "jax_aiter/ops/topk_softmax_asm.hpp"
#include "jax_aiter/ops/topk_softmax_params.hpp"

namespace jax_aiter::ops {

namespace moe_limits = kernels::moe_routing;

// AITER's static output sizes (aiter/fused_moe.py _moe_sorting_impl at e4048607a5):
// max_num_tokens_padded = topk_ids.numel() + num_experts * block_size - topk, and
// max_num_m_blocks = ceil(max_num_tokens_padded / block_size). Each expert that has tokens pads
// to a multiple of block_m, at most block_m - 1 rows, so T*k + E*(block_m - 1) rows always
// suffice; AITER's bound is E - k rows larger, which holds with k <= E.
constexpr int64_t moe_sorting_padded_rows(int64_t tokens, int64_t topk, int64_t experts,
                                          int64_t block_m) {
  return tokens * topk + experts * block_m - topk;
}
constexpr int64_t moe_sorting_blocks(int64_t padded_rows, int64_t block_m) {
  return ceil_div(padded_rows, block_m);
}
constexpr int64_t moe_sorting_tiles(int64_t tokens, int64_t topk) {
  return ceil_div(tokens * topk, moe_limits::kSortTile);
}

// The sort's workspace: every expert's first row and count, and the per-tile counts (then offsets).
// Every piece is written by the kernels before it is read: no memset.
constexpr void add_moe_sorting_workspace(kernels::WorkspaceLayout& w, int64_t tokens, int64_t topk,
                                         int64_t experts) {
  w.add("expert_starts", (experts + 1) * 4);
  w.add("expert_counts", experts * 4);
  w.add("tile_counts", moe_sorting_tiles(tokens, topk) * experts * 4);
}

// Threads of a top-k softmax block: the row's experts rounded up to whole warps, at most
// kTopkMaxThreads (then each thread owns up to kTopkPerThread experts).
constexpr int topk_softmax_threads(int64_t experts, int warp) {
  return static_cast<int>(
      std::min<int64_t>(moe_limits::kTopkMaxThreads, ceil_div(experts, warp) * warp));
}

namespace moe_detail {

inline Status check_nonnull(std::string_view op,
                            std::initializer_list<std::pair<const Tensor*, std::string_view>> ts) {
  for (const auto& [t, name] : ts) {
    if (t->data == nullptr) return operand_error(op, name, "null data pointer");
  }
  return {};
}

inline Status check_shape(std::string_view op, std::string_view operand, const Tensor& t, DType d,
                          std::initializer_list<int64_t> dims, std::string_view why) {
  bool ok = t.dtype == d && t.rank == static_cast<int>(dims.size());
  int i = 0;
  for (int64_t n : dims) ok = ok && t.dims[i++] == n;
  if (ok) return {};
  std::string want = StrCat(name(d), "[");
  i = 0;
  for (int64_t n : dims) want = StrCat(want, i++ ? "," : "", n);
  return operand_error(op, operand, StrCat("expected ", want, "] (", why, "), got ", describe(t)));
}

}  // namespace moe_detail

struct TopkSoftmaxPortable {
  static constexpr std::string_view kName = "portable";
  using Params = TopkSoftmaxParams;

  static Verdict supports(const Params& p, const Target&) { return portable_takes_knobs(p.aiter); }

  static void plan(const Params& p, const Target& target, kernels::Plan& plan) {
    const kernels::TopkSoftmaxArgs args{p.logits.data,
                                        p.weights.data,
                                        p.ids.data,
                                        static_cast<int32_t>(p.tokens()),
                                        static_cast<int32_t>(p.experts()),
                                        static_cast<int32_t>(p.topk()),
                                        p.renormalize ? 1 : 0};
    const auto threads = static_cast<uint32_t>(topk_softmax_threads(p.experts(), target.warp()));
    plan.launch(kernels::topk_softmax_kernel(p.logits.dtype),
                {static_cast<uint32_t>(p.tokens()), 1, 1}, {threads, 1, 1}, args);
  }
};

// Two tiers: AITER's ASM topksoftmax kernels (ops/topk_softmax_asm.hpp: fp32/bf16 logits of
// some (E, k) on gfx942/gfx950), then our portable kernel for every arch and shape (AITER's HIP
// topk_softmax is built by its JIT and ships no code object).
struct TopkSoftmax {
  static constexpr std::string_view kName = "aiter.topk_softmax";
  using Params = TopkSoftmaxParams;
  using Tiers = std::tuple<TopkSoftmaxAsmTier, TopkSoftmaxPortable>;

  static Status validate(const Params& p) {
    JAX_AITER_RETURN_IF_ERROR(
        check_aiter_knobs(kName, "topksoftmax", kernels::kAiterTopksoftmaxRows, p.aiter));
    const Tensor& l = p.logits;
    if ((l.dtype != DType::kBF16 && l.dtype != DType::kF16 && l.dtype != DType::kF32) ||
        l.rank != 2) {
      return operand_error(kName, "logits",
                           StrCat("expected bf16, f16 or f32 [T,E], got ", describe(l)));
    }
    const int64_t t = p.tokens(), e = p.experts();
    if (e < 1 || e > moe_limits::kMaxExperts) {
      return operand_error(kName, "logits",
                           StrCat("expected 1 to ", moe_limits::kMaxExperts,
                                  " experts (the last dim), got ", describe(l)));
    }
    if (t > moe_limits::kMaxTokens) {
      return operand_error(kName, "logits",
                           StrCat("expected at most ", moe_limits::kMaxTokens,
                                  " rows (one block a row), got ", describe(l)));
    }
    const Tensor& w = p.weights;
    if (w.dtype != DType::kF32 || w.rank != 2 || w.dims[0] != t || w.dims[1] < 1 || w.dims[1] > e) {
      return operand_error(kName, "weights",
                           StrCat("expected f32[", t, ",k] with 1 <= k <= ", e,
                                  " (T and E from logits), got ", describe(w)));
    }
    JAX_AITER_RETURN_IF_ERROR(
        moe_detail::check_shape(kName, "ids", p.ids, DType::kI32, {t, p.topk()}, "like weights"));
    if (t == 0) {
      return empty_problem(kName, "logits", StrCat("expected at least one row, got ", describe(l)));
    }
    return moe_detail::check_nonnull(
        kName, {{&p.logits, "logits"}, {&p.weights, "weights"}, {&p.ids, "ids"}});
  }
};

struct MoeSortingParams {
  Tensor ids;                // i32 [T, k]
  Tensor weights;            // f32 [T, k]
  Tensor sorted_token_ids;   // i32 [P]
  Tensor sorted_weights;     // f32 [P]
  Tensor sorted_expert_ids;  // i32 [ceil(P / block_m)]
  Tensor num_valid_ids;      // i32 [2]
  Tensor workspace;          // u8 [MoeSorting::workspace_bytes]
  int64_t num_experts = 0;
  int64_t block_m = 0;
  Dispatch dispatch;

  int64_t tokens() const { return ids.rank == 2 ? ids.dims[0] : 0; }
  int64_t topk() const { return ids.rank == 2 ? ids.dims[1] : 0; }
  int64_t padded_rows() const {
    return moe_sorting_padded_rows(tokens(), topk(), num_experts, block_m);
  }
};

struct MoeSortingPortable {
  static constexpr std::string_view kName = "portable";
  using Params = MoeSortingParams;

  static Verdict supports(const Params&, const Target&) { return Verdict::yes(); }

  static void plan(const Params& p, const Target&, kernels::Plan& plan) {
    namespace M = kernels::moe_routing;
    const int64_t padded = p.padded_rows();
    const int64_t tiles = moe_sorting_tiles(p.tokens(), p.topk());
    add_moe_sorting_workspace(plan.workspace, p.tokens(), p.topk(), p.num_experts);
    const kernels::MoeSortingArgs args{p.ids.data,
                                       p.weights.data,
                                       p.sorted_token_ids.data,
                                       p.sorted_weights.data,
                                       p.sorted_expert_ids.data,
                                       p.num_valid_ids.data,
                                       plan.piece(0),
                                       plan.piece(1),
                                       plan.piece(2),
                                       static_cast<int32_t>(p.tokens()),
                                       static_cast<int32_t>(p.topk()),
                                       static_cast<int32_t>(p.num_experts),
                                       static_cast<int32_t>(p.block_m),
                                       static_cast<int32_t>(padded),
                                       static_cast<int32_t>(tiles)};
    const kernels::Dim3 tile_block{M::kSortTile, 1, 1};
    plan.launch(kernels::kMoeSortCount, {static_cast<uint32_t>(tiles), 1, 1}, tile_block, args);
    plan.launch(kernels::kMoeSortScan, {1, 1, 1}, {M::kScanThreads, 1, 1}, args);
    const int64_t fill_blocks = ceil_div(padded, M::kSortTile);
    plan.launch(kernels::kMoeSortScatter, {static_cast<uint32_t>(tiles + fill_blocks), 1, 1},
                tile_block, args);
    plan.note("tiles", tiles);
    plan.note("padded_rows", padded);
  }
};

// One tier: AITER's sorting (CK / opus) is compiled by its JIT, not shipped as code objects.
struct MoeSorting {
  static constexpr std::string_view kName = "aiter.moe_sorting";
  using Params = MoeSortingParams;
  using Tiers = std::tuple<MoeSortingPortable>;
  static constexpr int64_t kMaxBlockM = 1024;
  static constexpr int64_t kMaxPaddedRows = int64_t{1} << 30;

  static Status validate(const Params& p) {
    namespace M = kernels::moe_routing;
    if (p.ids.dtype != DType::kI32 || p.ids.rank != 2) {
      return operand_error(kName, "ids", StrCat("expected i32[T,topk], got ", describe(p.ids)));
    }
    if (p.num_experts < 1 || p.num_experts > M::kMaxExperts) {
      return InvalidArgument(StrCat(kName, ": attribute num_experts: expected 1 to ",
                                    M::kMaxExperts, ", got ", p.num_experts));
    }
    if (p.block_m < 1 || p.block_m > kMaxBlockM) {
      return InvalidArgument(
          StrCat(kName, ": attribute block_m: expected 1 to ", kMaxBlockM, ", got ", p.block_m));
    }
    const int64_t t = p.tokens(), k = p.topk();
    // The padding id packs topk in 8 bits; AITER's padded size assumes topk <= num_experts.
    const int64_t max_k = std::min<int64_t>(p.num_experts, M::kMaxTopk);
    if (k < 1 || k > max_k) {
      return operand_error(kName, "ids",
                           StrCat("expected 1 <= topk <= ", max_k,
                                  " (at most num_experts and 255), got ", describe(p.ids)));
    }
    if (t > M::kMaxTokens) {
      return operand_error(kName, "ids",
                           StrCat("expected at most ", M::kMaxTokens,
                                  " tokens (24 bits of the packed id), got ", describe(p.ids)));
    }
    JAX_AITER_RETURN_IF_ERROR(
        moe_detail::check_shape(kName, "weights", p.weights, DType::kF32, {t, k}, "like ids"));
    const int64_t padded = p.padded_rows();
    // 32-bit row indices, and an AMD grid of (tiles + padded / kSortTile) blocks of kSortTile
    // threads stays below 2^32 work-items.
    if (padded > kMaxPaddedRows) {
      return operand_error(kName, "ids",
                           StrCat("too large: ", padded,
                                  " padded rows (tokens*topk + num_experts*block_m - topk), at "
                                  "most 2^30"));
    }
    JAX_AITER_RETURN_IF_ERROR(moe_detail::check_shape(
        kName, "sorted_token_ids", p.sorted_token_ids, DType::kI32, {padded},
        "tokens*topk + num_experts*block_m - topk, AITER's max_num_tokens_padded"));
    JAX_AITER_RETURN_IF_ERROR(moe_detail::check_shape(
        kName, "sorted_weights", p.sorted_weights, DType::kF32, {padded}, "like sorted_token_ids"));
    JAX_AITER_RETURN_IF_ERROR(moe_detail::check_shape(
        kName, "sorted_expert_ids", p.sorted_expert_ids, DType::kI32,
        {moe_sorting_blocks(padded, p.block_m)}, "ceil(padded rows / block_m)"));
    JAX_AITER_RETURN_IF_ERROR(moe_detail::check_shape(kName, "num_valid_ids", p.num_valid_ids,
                                                      DType::kI32, {2}, "rows used, tokens"));
    if (t == 0) {
      return empty_problem(kName, "ids",
                           StrCat("expected at least one token, got ", describe(p.ids)));
    }
    return moe_detail::check_nonnull(kName, {{&p.ids, "ids"},
                                             {&p.weights, "weights"},
                                             {&p.sorted_token_ids, "sorted_token_ids"},
                                             {&p.sorted_weights, "sorted_weights"},
                                             {&p.sorted_expert_ids, "sorted_expert_ids"},
                                             {&p.num_valid_ids, "num_valid_ids"}});
  }

  // The workspace output Python sizes at trace time.
  static int64_t workspace_bytes(const Params& p) {
    if (p.ids.rank != 2 || p.num_experts < 1) return 0;
    kernels::WorkspaceLayout w;
    add_moe_sorting_workspace(w, p.tokens(), p.topk(), p.num_experts);
    return w.total;
  }
};

}  // namespace jax_aiter::ops
