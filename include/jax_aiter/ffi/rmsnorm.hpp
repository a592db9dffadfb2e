// How the RMSNorm ops meet XLA: operands in call order and the epsilon attribute.
//   aiter.rms_norm               (x, gamma) -> y
//   aiter.rms_norm_with_add      (x, residual, gamma) -> (y, residual_out)
//   aiter.rms_norm_bwd           (dy, x, gamma) -> (dx, dgamma, workspace)
//   aiter.rms_norm_with_add_bwd  (dy, residual_out, gamma, dresidual) -> (dx, dgamma, workspace)
#pragma once

#include <array>

#include "jax_aiter/ffi/binder.hpp"
#include "jax_aiter/ffi/spec.hpp"
#include "jax_aiter/ops/rmsnorm.hpp"

namespace jax_aiter::ffi {

template <>
struct FfiSpec<ops::RmsNorm> {
  using P = ops::RmsNorm::Params;
  static constexpr std::array operands{input("x", &P::x), input("gamma", &P::gamma),
                                       output("y", &P::y)};
  static constexpr std::array attributes{attr<&P::epsilon>("epsilon", kRequired)};
};

template <>
struct FfiSpec<ops::RmsNormWithAdd> {
  using P = ops::RmsNormWithAdd::Params;
  static constexpr std::array operands{input("x", &P::x), input("residual", &P::residual),
                                       input("gamma", &P::gamma), output("y", &P::y),
                                       output("residual_out", &P::residual_out)};
  static constexpr std::array attributes{attr<&P::epsilon>("epsilon", kRequired)};
};

template <>
struct FfiSpec<ops::RmsNormBwd> {
  using P = ops::RmsNormBwd::Params;
  static constexpr std::array operands{input("dy", &P::dy),          input("x", &P::x),
                                       input("gamma", &P::gamma),    output("dx", &P::dx),
                                       output("dgamma", &P::dgamma), workspace(&P::workspace)};
  static constexpr std::array attributes{attr<&P::epsilon>("epsilon", kRequired)};
};

template <>
struct FfiSpec<ops::RmsNormWithAddBwd> {
  using P = ops::RmsNormWithAddBwd::Params;
  static constexpr std::array operands{input("dy", &P::dy),       input("residual_out", &P::x),
                                       input("gamma", &P::gamma), input("dresidual", &P::dresidual),
                                       output("dx", &P::dx),      output("dgamma", &P::dgamma),
                                       workspace(&P::workspace)};
  static constexpr std::array attributes{attr<&P::epsilon>("epsilon", kRequired)};
};

// This header's targets, for JAX_AITER_DEFINE_OP_HANDLERS("rmsnorm", Backend) (ops.cmake).
template <>
struct OpHandlers<"rmsnorm">
    : HandlerList<ops::RmsNorm, ops::RmsNormWithAdd, ops::RmsNormBwd, ops::RmsNormWithAddBwd> {};

}  // namespace jax_aiter::ffi
