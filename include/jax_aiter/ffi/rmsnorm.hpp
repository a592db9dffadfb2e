// How the RMSNorm ops meet XLA: operands in call order, the epsilon attribute (float32: send
// np.float32 from Python), and their decoding into ops::*::Params.
//   aiter.rms_norm               (x, gamma) -> y
//   aiter.rms_norm_with_add      (x, residual, gamma) -> (y, residual_out)
//   aiter.rms_norm_bwd           (dy, x, gamma) -> (dx, dgamma, workspace)
//   aiter.rms_norm_with_add_bwd  (dy, residual_out, gamma, dresidual) -> (dx, dgamma, workspace)
#pragma once

#include "jax_aiter/ffi/binder.hpp"
#include "jax_aiter/ffi/tensor.hpp"
#include "jax_aiter/kernels/rmsnorm.hpp"
#include "jax_aiter/ops/rmsnorm.hpp"
#include "xla/ffi/api/ffi.h"

namespace jax_aiter::ffi {

using xffi::AnyBuffer;
using xffi::Result;

template <>
struct FfiSpec<ops::RmsNorm> {
  using Op = ops::RmsNorm;
  static auto bind(auto b) {
    return bind_buffers<2, 1>(std::move(b)).template Attr<float>("epsilon");
  }
  static Expected<Op::Params> params(AnyBuffer x, AnyBuffer gamma, Result<AnyBuffer> y, float eps) {
    Op::Params p;
    JAX_AITER_RETURN_IF_ERROR(decode_into(p.x, Op::kName, "x", x));
    JAX_AITER_RETURN_IF_ERROR(decode_into(p.gamma, Op::kName, "gamma", gamma));
    JAX_AITER_RETURN_IF_ERROR(decode_into(p.y, Op::kName, "y", *y));
    p.epsilon = eps;
    return p;
  }
};

template <>
struct FfiSpec<ops::RmsNormWithAdd> {
  using Op = ops::RmsNormWithAdd;
  static auto bind(auto b) {
    return bind_buffers<3, 2>(std::move(b)).template Attr<float>("epsilon");
  }
  static Expected<Op::Params> params(AnyBuffer x, AnyBuffer residual, AnyBuffer gamma,
                                     Result<AnyBuffer> y, Result<AnyBuffer> residual_out,
                                     float eps) {
    Op::Params p;
    JAX_AITER_RETURN_IF_ERROR(decode_into(p.x, Op::kName, "x", x));
    JAX_AITER_RETURN_IF_ERROR(decode_into(p.residual, Op::kName, "residual", residual));
    JAX_AITER_RETURN_IF_ERROR(decode_into(p.gamma, Op::kName, "gamma", gamma));
    JAX_AITER_RETURN_IF_ERROR(decode_into(p.y, Op::kName, "y", *y));
    JAX_AITER_RETURN_IF_ERROR(
        decode_into(p.residual_out, Op::kName, "residual_out", *residual_out));
    p.epsilon = eps;
    return p;
  }
};

template <>
struct FfiSpec<ops::RmsNormBwd> {
  using Op = ops::RmsNormBwd;
  static auto bind(auto b) {
    return bind_buffers<3, 3>(std::move(b)).template Attr<float>("epsilon");
  }
  static Expected<Op::Params> params(AnyBuffer dy, AnyBuffer x, AnyBuffer gamma,
                                     Result<AnyBuffer> dx, Result<AnyBuffer> dgamma,
                                     Result<AnyBuffer> workspace, float eps) {
    Op::Params p;
    JAX_AITER_RETURN_IF_ERROR(decode_into(p.dy, Op::kName, "dy", dy));
    JAX_AITER_RETURN_IF_ERROR(decode_into(p.x, Op::kName, "x", x));
    JAX_AITER_RETURN_IF_ERROR(decode_into(p.gamma, Op::kName, "gamma", gamma));
    JAX_AITER_RETURN_IF_ERROR(decode_into(p.dx, Op::kName, "dx", *dx));
    JAX_AITER_RETURN_IF_ERROR(decode_into(p.dgamma, Op::kName, "dgamma", *dgamma));
    JAX_AITER_RETURN_IF_ERROR(decode_into(p.workspace, Op::kName, "workspace", *workspace));
    p.epsilon = eps;
    return p;
  }
};

template <>
struct FfiSpec<ops::RmsNormWithAddBwd> {
  using Op = ops::RmsNormWithAddBwd;
  static auto bind(auto b) {
    return bind_buffers<4, 3>(std::move(b)).template Attr<float>("epsilon");
  }
  static Expected<Op::Params> params(AnyBuffer dy, AnyBuffer residual_out, AnyBuffer gamma,
                                     AnyBuffer dresidual, Result<AnyBuffer> dx,
                                     Result<AnyBuffer> dgamma, Result<AnyBuffer> workspace,
                                     float eps) {
    Op::Params p;
    JAX_AITER_RETURN_IF_ERROR(decode_into(p.dy, Op::kName, "dy", dy));
    JAX_AITER_RETURN_IF_ERROR(decode_into(p.x, Op::kName, "residual_out", residual_out));
    JAX_AITER_RETURN_IF_ERROR(decode_into(p.gamma, Op::kName, "gamma", gamma));
    JAX_AITER_RETURN_IF_ERROR(decode_into(p.dresidual, Op::kName, "dresidual", dresidual));
    JAX_AITER_RETURN_IF_ERROR(decode_into(p.dx, Op::kName, "dx", *dx));
    JAX_AITER_RETURN_IF_ERROR(decode_into(p.dgamma, Op::kName, "dgamma", *dgamma));
    JAX_AITER_RETURN_IF_ERROR(decode_into(p.workspace, Op::kName, "workspace", *workspace));
    p.epsilon = eps;
    return p;
  }
};

}  // namespace jax_aiter::ffi
