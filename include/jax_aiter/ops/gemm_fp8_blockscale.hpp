// aiter.gemm_fp8_blockscale: out[M,N] (bf16 or f16) = sum_kb (a[:, kb] . b[:, kb]^T) *
// a_scale[kb][m] * b_scale[n / 128][kb], fp8 e4m3 operands, b pre-shuffled
// (ops/gemm_fp8_blockscale_params.hpp). The one FP8 block-scale op: its tiers are AITER's three
// FP8 block-scale families and our portable kernels, in this order
// (ops/gemm_fp8_blockscale_asm.hpp, ops/gemm_fp8_blockscale_portable.hpp); the arch and the out
// dtype pick the family:
//   asm (fp8gemm_blockscale)  gfx942, gfx950; bf16 out
//   asm (mi350)               gfx950; bf16 out (reached when the call asks for it: family, kernel)
//   asm (flatmm)              gfx942; f16 out
//   portable                  everywhere
// All three ASM tiers are named "asm" (Dispatch "asm" tries each). Pure C++.
#pragma once

#include <algorithm>
#include <cstdint>
#include <tuple>

#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/ops/gemm_fp8_blockscale_asm.hpp"
#include "jax_aiter/ops/gemm_fp8_blockscale_params.hpp"
#include "jax_aiter/ops/gemm_fp8_blockscale_portable.hpp"

namespace jax_aiter::ops {

struct GemmFp8Blockscale {
  static constexpr std::string_view kName = kGemmFp8BlockscaleName;
  using Params = GemmFp8BlockscaleParams;
  using Tiers = std::tuple<AiterTier<AiterFp8Bs>, AiterTier<AiterMi350>, AiterTier<AiterFlatmm>,
                           GemmFp8BlockscalePortableTier>;

  static Status validate(const Params& p) {
    JAX_AITER_RETURN_IF_ERROR(check_aiter_knobs(
        kName, p.aiter, false, AiterRowsOf{AiterFp8Bs::kFamily, kernels::kAiterFp8BsRows},
        AiterRowsOf{AiterMi350::kFamily, kernels::kAiterMi350Rows},
        AiterRowsOf{AiterFlatmm::kFamily, kernels::kAiterFlatmmRows}));
    if (!p.family.empty() && p.family != AiterFp8Bs::kFamily && p.family != AiterMi350::kFamily &&
        p.family != AiterFlatmm::kFamily) {
      return InvalidArgument(
          StrCat(kName,
                 ": attribute family: expected \"\" (any, by arch and out "
                 "dtype), \"fp8gemm_blockscale\", \"mi350\" or \"flatmm\", got '",
                 p.family, "'"));
    }
    return gemm_fp8_blockscale_detail::check(p);
  }

  // Sized before any device is known, for whichever tier runs: fp8gemm_blockscale's zeroed
  // stand-in bias (f32 [N]), flatmm's transposed b_scale (f32 [K/128, N/128]) or the portable
  // tier's split partials (f32 [splits, M, N]: sm_90's w tile while kGemmFp8BlockscaleWgmmaOn,
  // none when the shape never splits, gemm_fp8_blockscale_max_split; the decode kernel's, M <= 16,
  // ops/gemm_stream_q_rule.hpp), each the plan's one workspace piece; mi350 needs none.
  static int64_t workspace_bytes(const Params& p) {
    kernels::WorkspaceLayout bias, scales, partials;
    bias.add("zero_bias", p.n() * 4);
    scales.add("b_scale_t", p.k_blocks() * p.n_blocks() * 4);
    const int64_t splits =
        kGemmFp8BlockscaleWgmmaOn ? gemm_fp8_blockscale_max_split(p.m(), p.n()) : 1;
    if (splits > 1) partials.add("partials", splits * p.m() * p.n() * 4);
    return std::max(
        {bias.total, scales.total, partials.total, stream_q_workspace_bytes(p.m(), p.n())});
  }
};

}  // namespace jax_aiter::ops
