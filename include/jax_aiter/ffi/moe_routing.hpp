// How the MoE routing ops meet XLA: operands in call order and their attributes.
//   aiter.topk_softmax  (logits) -> (weights, ids)                    attribute renormalize
//   aiter.moe_sorting   (ids, weights) -> (sorted_token_ids, sorted_weights, sorted_expert_ids,
//                                          num_valid_ids, workspace)  attributes num_experts,
//                                                                     block_m
// topk_softmax's k is the last dim of its outputs.
#pragma once

#include <array>

#include "jax_aiter/ffi/binder.hpp"
#include "jax_aiter/ffi/spec.hpp"
#include "jax_aiter/ops/moe_routing.hpp"

namespace jax_aiter::ffi {

template <>
struct FfiSpec<ops::TopkSoftmax> {
  using P = ops::TopkSoftmax::Params;
  static constexpr std::array operands{input("logits", &P::logits), output("weights", &P::weights),
                                       output("ids", &P::ids)};
  static constexpr std::array attributes{attr<&P::renormalize>("renormalize", kRequired)};
};

template <>
struct FfiSpec<ops::MoeSorting> {
  using P = ops::MoeSorting::Params;
  static constexpr std::array operands{input("ids", &P::ids),
                                       input("weights", &P::weights),
                                       output("sorted_token_ids", &P::sorted_token_ids),
                                       output("sorted_weights", &P::sorted_weights),
                                       output("sorted_expert_ids", &P::sorted_expert_ids),
                                       output("num_valid_ids", &P::num_valid_ids),
                                       workspace(&P::workspace)};
  static constexpr std::array attributes{attr<&P::num_experts>("num_experts", kRequired),
                                         attr<&P::block_m>("block_m", kRequired)};
};

// This header's targets, for JAX_AITER_DEFINE_OP_HANDLERS("moe_routing", Backend) (ops.cmake).
template <>
struct OpHandlers<"moe_routing"> : HandlerList<ops::TopkSoftmax, ops::MoeSorting> {};

}  // namespace jax_aiter::ffi
