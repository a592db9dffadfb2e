// aiter.fused_moe: the one-stage fused MoE over moe_sorting's layout (ops/fused_moe_params.hpp):
//   out[t] = sum over k of w[t,k] * (w2[e] . (act(w1_gate[e] . x[t]) * (w1_up[e] . x[t])))
// with w1, w2 pre-shuffled (16, 16) and x, w1, w2 quantized per token (fp8, int8) or in 128x128
// blocks (fp8; x fp8 or bf16). One tier so far: AITER's fmoe ASM kernels (ops/fused_moe_asm.hpp).
// No workspace: the plan zeroes out and the kernels add into it. Pure C++.
#pragma once

#include <string_view>
#include <tuple>

#include "jax_aiter/core/status.hpp"
#include "jax_aiter/kernels/aiter/fmoe.hpp"
#include "jax_aiter/ops/aiter_knobs.hpp"
#include "jax_aiter/ops/fused_moe_asm.hpp"
#include "jax_aiter/ops/fused_moe_params.hpp"

namespace jax_aiter::ops {

struct FusedMoe {
  static constexpr std::string_view kName = kFusedMoeName;
  using Params = FusedMoeParams;
  using Tiers = std::tuple<FusedMoeAsmTier>;

  static Status validate(const Params& p) {
    JAX_AITER_RETURN_IF_ERROR(check_aiter_knobs(kName, "fmoe", kernels::kAiterFmoeRows, p.aiter));
    return fused_moe_detail::check(p);
  }
};

}  // namespace jax_aiter::ops
