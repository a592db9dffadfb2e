// How aiter.gemm_fp4 meets XLA:
//   aiter.gemm_fp4  (a, b, a_scale, b_scale) -> (out, workspace)
//   attributes: b_layout (required: "16x16" or "none"), kernel, splitk (+ dispatch)
// The workspace is sized by GemmFp4::workspace_bytes.
#pragma once

#include <array>

#include "jax_aiter/ffi/binder.hpp"
#include "jax_aiter/ffi/spec.hpp"
#include "jax_aiter/ops/gemm_fp4.hpp"

namespace jax_aiter::ffi {

template <>
struct FfiSpec<ops::GemmFp4> {
  using P = ops::GemmFp4::Params;
  static constexpr std::array operands{input("a", &P::a),
                                       input("b", &P::b),
                                       input("a_scale", &P::a_scale),
                                       input("b_scale", &P::b_scale),
                                       output("out", &P::out),
                                       workspace(&P::workspace)};
  static constexpr std::array attributes{attr<&P::b_layout>("b_layout", kRequired)};
};

// This header's targets, for JAX_AITER_DEFINE_OP_HANDLERS("gemm_fp4", Backend) (ops.cmake).
template <>
struct OpHandlers<"gemm_fp4"> : HandlerList<ops::GemmFp4> {};

}  // namespace jax_aiter::ffi
