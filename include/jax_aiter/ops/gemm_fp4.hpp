// aiter.gemm_fp4: out[M,N] bf16 = dequant(a)[M,K] . dequant(b)[N,K]^T, MXFP4 operands (fp4 e2m1
// packed two a byte, e8m0 scales per 32 along K), b pre-shuffled or plain (AITER's
// gemm_a4w4_asm; ops/gemm_fp4_params.hpp). Two tiers, in order: AITER's FP4 ASM kernels
// (ops/gemm_fp4_asm.hpp, gfx950) and our portable kernels (ops/gemm_fp4_portable.hpp). Pure C++.
#pragma once

#include <cstdint>
#include <tuple>

#include "jax_aiter/ops/gemm_fp4_asm.hpp"
#include "jax_aiter/ops/gemm_fp4_params.hpp"
#include "jax_aiter/ops/gemm_fp4_portable.hpp"

namespace jax_aiter::ops {

struct GemmFp4 {
  static constexpr std::string_view kName = kGemmFp4Name;
  using Params = GemmFp4Params;
  using Tiers = std::tuple<GemmFp4AsmTier, GemmFp4PortableTier>;

  static Status validate(const Params& p) {
    JAX_AITER_RETURN_IF_ERROR(check_aiter_knobs(kName, "f4gemm", kernels::kAiterF4GemmRows, p.aiter,
                                                /*powers_of_two=*/true));
    return gemm_fp4_detail::check(p);
  }
  // Sized before any device is known: the portable decode kernel's split partials (M <= 16,
  // ops/gemm_stream_q_rule.hpp); AITER's kernels need none (no bias stand-in: C is null with
  // beta = 0).
  static int64_t workspace_bytes(const Params& p) { return stream_q_workspace_bytes(p.m(), p.n()); }
};

}  // namespace jax_aiter::ops
