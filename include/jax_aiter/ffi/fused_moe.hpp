// How aiter.fused_moe meets XLA:
//   aiter.fused_moe  (x, w1, w2, sorted_token_ids, sorted_weights, sorted_expert_ids,
//                     num_valid_ids, x_scale?, w1_scale?, w2_scale?) -> (out)
//   attributes: w_layout (required: "16x16"), topk, block_m (the sorting's), activation ("silu",
//               "gelu"), quant ("none", "fp8_per_token", "int8_per_token", "fp8_block_scale")
//               (all required), weight_first (AITER's tkw1; default false), kernel, splitk
//               (+ dispatch)
//   aiter.fused_moe_stage1  (x, w1, sorted_token_ids, sorted_weights, sorted_expert_ids,
//                            num_valid_ids, x_scale?, w1_scale?) -> (out)
//   attributes: as aiter.fused_moe's ("none" is not a stage-1 quant); the first stage of the
//               two-stage fused MoE (ops/fused_moe_stage1.hpp), out [T, topk, I]
// The scales are optional operands (absent: u8[0]); which ones a quant mode takes, and their
// shapes, ops/fused_moe_params.hpp says. No workspace: one memset of out, one launch.
#pragma once

#include <array>

#include "jax_aiter/ffi/binder.hpp"
#include "jax_aiter/ffi/spec.hpp"
#include "jax_aiter/ops/fused_moe.hpp"
#include "jax_aiter/ops/fused_moe_stage1.hpp"

namespace jax_aiter::ffi {

template <>
struct FfiSpec<ops::FusedMoe> {
  using P = ops::FusedMoe::Params;
  static constexpr std::array operands{input("x", &P::x),
                                       input("w1", &P::w1),
                                       input("w2", &P::w2),
                                       input("sorted_token_ids", &P::sorted_token_ids),
                                       input("sorted_weights", &P::sorted_weights),
                                       input("sorted_expert_ids", &P::sorted_expert_ids),
                                       input("num_valid_ids", &P::num_valid_ids),
                                       optional_input("x_scale", &P::x_scale),
                                       optional_input("w1_scale", &P::w1_scale),
                                       optional_input("w2_scale", &P::w2_scale),
                                       output("out", &P::out)};
  static constexpr std::array attributes{
      attr<&P::w_layout>("w_layout", kRequired), attr<&P::topk>("topk", kRequired),
      attr<&P::block_m>("block_m", kRequired),   attr<&P::activation>("activation", kRequired),
      attr<&P::quant>("quant", kRequired),       attr<&P::weight_first>("weight_first")};
};

template <>
struct FfiSpec<ops::FusedMoeStage1> {
  using P = ops::FusedMoeStage1::Params;
  static constexpr std::array operands{input("x", &P::x),
                                       input("w1", &P::w1),
                                       input("sorted_token_ids", &P::sorted_token_ids),
                                       input("sorted_weights", &P::sorted_weights),
                                       input("sorted_expert_ids", &P::sorted_expert_ids),
                                       input("num_valid_ids", &P::num_valid_ids),
                                       optional_input("x_scale", &P::x_scale),
                                       optional_input("w1_scale", &P::w1_scale),
                                       output("out", &P::out)};
  static constexpr std::array attributes{
      attr<&P::w_layout>("w_layout", kRequired), attr<&P::topk>("topk", kRequired),
      attr<&P::block_m>("block_m", kRequired),   attr<&P::activation>("activation", kRequired),
      attr<&P::quant>("quant", kRequired),       attr<&P::weight_first>("weight_first")};
};

// This header's targets, for JAX_AITER_DEFINE_OP_HANDLERS("fused_moe", Backend) (ops.cmake).
template <>
struct OpHandlers<"fused_moe"> : HandlerList<ops::FusedMoe, ops::FusedMoeStage1> {};

}  // namespace jax_aiter::ffi
