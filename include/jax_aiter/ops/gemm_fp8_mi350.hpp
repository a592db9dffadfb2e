// aiter.gemm_fp8_mi350: out[M,N] bf16 = the FP8 block-scale product of xq[M,K] and a pre-shuffled
// wq[N,K] with x_scale [K/128, M] and w_scale [N/128, K/128] (AITER's MI350 kernels' contract;
// ops/gemm_fp8_mi350_params.hpp). Two tiers, in order: AITER's MI350 ASM kernels
// (ops/gemm_fp8_mi350_asm.hpp, gfx950) and our portable kernels (ops/gemm_fp8_mi350_portable.hpp).
// Pure C++.
#pragma once

#include <tuple>

#include "jax_aiter/ops/gemm_fp8_mi350_asm.hpp"
#include "jax_aiter/ops/gemm_fp8_mi350_params.hpp"
#include "jax_aiter/ops/gemm_fp8_mi350_portable.hpp"

namespace jax_aiter::ops {

struct GemmFp8Mi350 {
  static constexpr std::string_view kName = kGemmFp8Mi350Name;
  using Params = GemmFp8Mi350Params;
  using Tiers = std::tuple<GemmFp8Mi350AsmTier, GemmFp8Mi350PortableTier>;

  static Status validate(const Params& p) {
    JAX_AITER_RETURN_IF_ERROR(check_aiter_knobs(kName, "mi350", kernels::kAiterMi350Rows, p.aiter));
    return gemm_fp8_mi350_detail::check(p);
  }
};

}  // namespace jax_aiter::ops
