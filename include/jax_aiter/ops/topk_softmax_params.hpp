// aiter.topk_softmax's parameters (ops/moe_routing.hpp: the op, its validation and portable tier;
// ops/topk_softmax_asm.hpp: its ASM tier). Pure C++ (no HIP, no XLA).
#pragma once

#include <cstdint>

#include "jax_aiter/ops/aiter_knobs.hpp"
#include "jax_aiter/ops/dispatch.hpp"
#include "jax_aiter/ops/tensor.hpp"

namespace jax_aiter::ops {

struct TopkSoftmaxParams {
  Tensor logits;   // bf16/f16/f32 [T, E]
  Tensor weights;  // f32 [T, k]
  Tensor ids;      // i32 [T, k]
  bool renormalize = true;
  AiterKnobs aiter;  // kernel: an AITER topksoftmax row; splitk: none (nothing splits)
  Dispatch dispatch;

  int64_t tokens() const { return logits.rank == 2 ? logits.dims[0] : 0; }
  int64_t experts() const { return logits.rank == 2 ? logits.dims[1] : 0; }
  int64_t topk() const { return weights.rank == 2 ? weights.dims[1] : 0; }
};

}  // namespace jax_aiter::ops
