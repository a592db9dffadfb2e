// How aiter.gemm_fp8_blockscale meets XLA:
//   aiter.gemm_fp8_blockscale  (a, b, a_scale, b_scale) -> (out, workspace)
//   attributes: b_layout (required: "16x16" or "flatmm"), family, kernel, splitk (+ dispatch)
// a_scale arrives K-block-major [K/128, M] (the Python API transposes); out is bf16 or f16 (the
// caller's choice); fp8 operands are bound as any buffer and validate() checks their dtype; the
// workspace is sized by GemmFp8Blockscale::workspace_bytes.
#pragma once

#include <array>

#include "jax_aiter/ffi/binder.hpp"
#include "jax_aiter/ffi/spec.hpp"
#include "jax_aiter/ops/gemm_fp8_blockscale.hpp"

namespace jax_aiter::ffi {

template <>
struct FfiSpec<ops::GemmFp8Blockscale> {
  using P = ops::GemmFp8Blockscale::Params;
  static constexpr std::array operands{input("a", &P::a),
                                       input("b", &P::b),
                                       input("a_scale", &P::a_scale),
                                       input("b_scale", &P::b_scale),
                                       output("out", &P::out),
                                       workspace(&P::workspace)};
  static constexpr std::array attributes{attr<&P::b_layout>("b_layout", kRequired),
                                         attr<&P::family>("family")};
};

// This header's targets, for JAX_AITER_DEFINE_OP_HANDLERS("gemm_fp8_blockscale", Backend)
// (ops.cmake).
template <>
struct OpHandlers<"gemm_fp8_blockscale"> : HandlerList<ops::GemmFp8Blockscale> {};

}  // namespace jax_aiter::ffi
