// aiter.gemm: out[M,N] = a[M,K] . b[N,K]^T (+ bias[N]), fp32 accumulation; a and b bf16 or f16,
// out bf16, f16 or f32; leading dims of a fold into M. Two tiers, in order: AITER's BF16 ASM
// kernels (ops/gemm_asm.hpp) and our portable kernels (ops/gemm_portable.hpp). Pure C++.
#pragma once

#include <algorithm>
#include <cstdint>
#include <tuple>

#include "jax_aiter/kernels/shared/aiter_bf16gemm.h"
#include "jax_aiter/ops/gemm_asm.hpp"
#include "jax_aiter/ops/gemm_params.hpp"
#include "jax_aiter/ops/gemm_portable.hpp"

namespace jax_aiter::ops {

struct Gemm {
  static constexpr std::string_view kName = kGemmName;
  using Params = GemmParams;
  using Tiers = std::tuple<GemmAsmTier, GemmPortableTier>;

  static Status validate(const Params& p) {
    JAX_AITER_RETURN_IF_ERROR(
        check_aiter_knobs(kName, "bf16gemm", kernels::kAiterBf16GemmRows, p.aiter));
    return gemm_detail::check(p);
  }

  // Sized before any device is known (Python, at trace time): room for either tier's layout on
  // any device, the ASM tier's split-K semaphore or the portable tier's largest split partials.
  static int64_t workspace_bytes(const Params& p) {
    const int64_t semaphore = int64_t{kernels::aiter_bf16gemm::kSemaphoreCounters} * 4;
    const int64_t splits = gemm_max_split(p.m(), p.n());
    return std::max(semaphore, splits > 1 ? splits * p.m() * p.n() * 4 : 0);
  }
};

}  // namespace jax_aiter::ops
