// aiter.gemm_i8: out[M,N] bf16 = (a[M,K] i8 . b[N,K]^T i8) * a_scale[m] * b_scale[n] (+ bias[n]),
// b pre-shuffled (AITER's gemm_a8w8_asm; ops/gemm_i8_params.hpp). Two tiers, in order: AITER's
// INT8 ASM kernels (ops/gemm_i8_asm.hpp) and our portable kernels (ops/gemm_i8_portable.hpp).
// Pure C++.
#pragma once

#include <algorithm>
#include <cstdint>
#include <tuple>

#include "jax_aiter/ops/gemm_i8_asm.hpp"
#include "jax_aiter/ops/gemm_i8_params.hpp"
#include "jax_aiter/ops/gemm_i8_portable.hpp"

namespace jax_aiter::ops {

struct GemmI8 {
  static constexpr std::string_view kName = kGemmI8Name;
  using Params = GemmI8Params;
  using Tiers = std::tuple<GemmI8AsmTier, GemmI8PortableTier>;

  static Status validate(const Params& p) {
    JAX_AITER_RETURN_IF_ERROR(
        check_aiter_knobs(kName, "i8gemm", kernels::kAiterI8GemmRows, p.aiter));
    return gemm_i8_detail::check(p);
  }

  // Sized before any device is known: the ASM tier's zeroed stand-in bias (f32 [N]) or the
  // portable tier's int32 split accumulator, whichever is larger.
  static int64_t workspace_bytes(const Params& p) {
    return std::max(p.n() * 4, GemmI8PortableTier::workspace_bytes(p));
  }
};

}  // namespace jax_aiter::ops
