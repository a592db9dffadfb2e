// How aiter.gemm_fp8_mi350 meets XLA:
//   aiter.gemm_fp8_mi350  (xq, wq, x_scale, w_scale) -> out
//   attributes: b_layout (required: "16x16"), kernel, splitk (+ dispatch)
// fp8 operands are bound as any buffer; validate() checks their dtype. No workspace.
#pragma once

#include <array>

#include "jax_aiter/ffi/binder.hpp"
#include "jax_aiter/ffi/spec.hpp"
#include "jax_aiter/ops/gemm_fp8_mi350.hpp"

namespace jax_aiter::ffi {

template <>
struct FfiSpec<ops::GemmFp8Mi350> {
  using P = ops::GemmFp8Mi350::Params;
  static constexpr std::array operands{input("xq", &P::xq), input("wq", &P::wq),
                                       input("x_scale", &P::x_scale), input("w_scale", &P::w_scale),
                                       output("out", &P::out)};
  static constexpr std::array attributes{attr<&P::b_layout>("b_layout", kRequired)};
};

// This header's targets, for JAX_AITER_DEFINE_OP_HANDLERS("gemm_fp8_mi350", Backend) (ops.cmake).
template <>
struct OpHandlers<"gemm_fp8_mi350"> : HandlerList<ops::GemmFp8Mi350> {};

}  // namespace jax_aiter::ffi
