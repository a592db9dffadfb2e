// aiter.gemm_fp8_blockscale: out[M,N] bf16 = sum_kb (a[:, kb] . b[:, kb]^T) * a_scale[kb][m] *
// b_scale[n / 128][kb], fp8 e4m3 operands, b pre-shuffled (AITER's
// gemm_a8w8_blockscale_bpreshuffle_asm; ops/gemm_fp8bs_params.hpp). Two tiers, in order: AITER's
// FP8 block-scale ASM kernels (ops/gemm_fp8bs_asm.hpp) and our portable kernels
// (ops/gemm_fp8bs_portable.hpp). Pure C++.
#pragma once

#include <cstdint>
#include <tuple>

#include "jax_aiter/ops/gemm_fp8bs_asm.hpp"
#include "jax_aiter/ops/gemm_fp8bs_params.hpp"
#include "jax_aiter/ops/gemm_fp8bs_portable.hpp"

namespace jax_aiter::ops {

struct GemmFp8Bs {
  static constexpr std::string_view kName = kGemmFp8BsName;
  using Params = GemmFp8BsParams;
  using Tiers = std::tuple<GemmFp8BsAsmTier, GemmFp8BsPortableTier>;

  static Status validate(const Params& p) {
    JAX_AITER_RETURN_IF_ERROR(
        check_aiter_knobs(kName, "fp8gemm_blockscale", kernels::kAiterFp8BsRows, p.aiter));
    return gemm_fp8bs_detail::check(p);
  }

  // Sized before any device is known: the ASM tier's zeroed stand-in bias (f32 [N]); the
  // portable tier needs none.
  static int64_t workspace_bytes(const Params& p) { return p.n() * 4; }
};

}  // namespace jax_aiter::ops
