// How aiter.flatmm_fp8 meets XLA:
//   aiter.flatmm_fp8  (x, w, x_scale, w_scale) -> (out)
//   attributes: w_layout (required: "flatmm"), kernel, splitk (+ dispatch)
// No workspace: one launch, nothing to zero.
#pragma once

#include <array>

#include "jax_aiter/ffi/binder.hpp"
#include "jax_aiter/ffi/spec.hpp"
#include "jax_aiter/ops/flatmm_fp8.hpp"

namespace jax_aiter::ffi {

template <>
struct FfiSpec<ops::FlatmmFp8> {
  using P = ops::FlatmmFp8::Params;
  static constexpr std::array operands{input("x", &P::x), input("w", &P::w),
                                       input("x_scale", &P::x_scale), input("w_scale", &P::w_scale),
                                       output("out", &P::out)};
  static constexpr std::array attributes{attr<&P::w_layout>("w_layout", kRequired)};
};

// This header's targets, for JAX_AITER_DEFINE_OP_HANDLERS("flatmm_fp8", Backend) (ops.cmake).
template <>
struct OpHandlers<"flatmm_fp8"> : HandlerList<ops::FlatmmFp8> {};

}  // namespace jax_aiter::ffi
