// aiter.flatmm_fp8: out[M,N] f16 = sum over K blocks b of 128 of x_scale[b][m] w_scale[b][n/128]
// (x[m, block b] . w[n, block b]), fp8 e4m3 operands, w in the FlatMM layout (AITER's
// flatmm_a8w8_blockscale_asm; ops/flatmm_fp8_params.hpp). Two tiers, in order: AITER's FlatMM ASM
// kernel (ops/flatmm_fp8_asm.hpp) and our portable kernels (ops/flatmm_fp8_portable.hpp). Pure
// C++.
#pragma once

#include <cstdint>
#include <tuple>

#include "jax_aiter/ops/flatmm_fp8_asm.hpp"
#include "jax_aiter/ops/flatmm_fp8_params.hpp"
#include "jax_aiter/ops/flatmm_fp8_portable.hpp"

namespace jax_aiter::ops {

struct FlatmmFp8 {
  static constexpr std::string_view kName = kFlatmmFp8Name;
  using Params = FlatmmFp8Params;
  using Tiers = std::tuple<FlatmmFp8AsmTier, FlatmmFp8PortableTier>;

  static Status validate(const Params& p) {
    JAX_AITER_RETURN_IF_ERROR(
        check_aiter_knobs(kName, "flatmm", kernels::kAiterFlatmmRows, p.aiter));
    return flatmm_fp8_detail::check(p);
  }
};

}  // namespace jax_aiter::ops
