// How aiter.gemm_fp8_blockscale meets XLA:
//   aiter.gemm_fp8_blockscale  (a, b, a_scale, b_scale) -> (out, workspace)
//   attributes: b_layout (required: "16x16"), kernel, splitk (+ dispatch)
// a_scale arrives K-block-major [K/128, M] (the Python API transposes); the workspace is sized by
// GemmFp8Bs::workspace_bytes.
#pragma once

#include <array>

#include "jax_aiter/ffi/binder.hpp"
#include "jax_aiter/ffi/spec.hpp"
#include "jax_aiter/ops/gemm_fp8bs.hpp"

namespace jax_aiter::ffi {

template <>
struct FfiSpec<ops::GemmFp8Bs> {
  using P = ops::GemmFp8Bs::Params;
  static constexpr std::array operands{input("a", &P::a),
                                       input("b", &P::b),
                                       input("a_scale", &P::a_scale),
                                       input("b_scale", &P::b_scale),
                                       output("out", &P::out),
                                       workspace(&P::workspace)};
  static constexpr std::array attributes{attr<&P::b_layout>("b_layout", kRequired)};
};

// This header's targets, for JAX_AITER_DEFINE_OP_HANDLERS("gemm_fp8bs", Backend) (ops.cmake).
template <>
struct OpHandlers<"gemm_fp8bs"> : HandlerList<ops::GemmFp8Bs> {};

}  // namespace jax_aiter::ffi
