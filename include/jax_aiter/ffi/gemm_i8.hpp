// How aiter.gemm_i8 meets XLA:
//   aiter.gemm_i8  (a, b, a_scale, b_scale, bias?) -> (out, workspace)
//   attributes: b_layout (required: "16x16"), kernel, splitk (+ dispatch)
// bias is optional (absent: u8[0]); the workspace is sized by GemmI8::workspace_bytes.
#pragma once

#include <array>

#include "jax_aiter/ffi/binder.hpp"
#include "jax_aiter/ffi/spec.hpp"
#include "jax_aiter/ops/gemm_i8.hpp"

namespace jax_aiter::ffi {

template <>
struct FfiSpec<ops::GemmI8> {
  using P = ops::GemmI8::Params;
  static constexpr std::array operands{input("a", &P::a),
                                       input("b", &P::b),
                                       input("a_scale", &P::a_scale),
                                       input("b_scale", &P::b_scale),
                                       optional_input("bias", &P::bias),
                                       output("out", &P::out),
                                       workspace(&P::workspace)};
  static constexpr std::array attributes{attr<&P::b_layout>("b_layout", kRequired)};
};

// This header's targets, for JAX_AITER_DEFINE_OP_HANDLERS("gemm_i8", Backend) (ops.cmake).
template <>
struct OpHandlers<"gemm_i8"> : HandlerList<ops::GemmI8> {};

}  // namespace jax_aiter::ffi
