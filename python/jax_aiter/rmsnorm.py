"""RMSNorm and fused add+RMSNorm with custom VJPs, backed by the aiter.* FFI targets.

  y = x * rsqrt(mean(x**2, -1) + epsilon) * gamma              (statistics in float32)
  rms_norm_with_add: residual_out = x + residual (stored in x's dtype), y = rms_norm(residual_out)

x is ``[..., n]`` (leading dims fold into rows in C++), gamma is ``[n]``, both bf16, f16 or f32 and
of one dtype. C++ validates operands and reports errors that name the operand (``aiter.rms_norm:
operand gamma: ...``); they surface unchanged as JAX runtime errors. Python only checks what it
needs at trace time (x has a last dim; epsilon is a static number).

Transformations:
  * grad/vjp: ``jax.custom_vjp`` (epsilon is a nondiff static argument); the backward calls
    ``aiter.rms_norm_bwd`` / ``aiter.rms_norm_with_add_bwd``, whose float32 workspace output (sized
    at trace time by the C++ rule, RmsNormBackward::workspace_bytes) is dropped.
  * vmap of the forward: with gamma unbatched the batch axis simply becomes more rows (one call);
    with gamma batched each batch element needs its own gamma, so it runs sequentially (a scan).
  * vmap of the backward: always sequential. Under vmap every batch element owns its dgamma
    (per-example gradients; JAX sums them afterwards where gamma was unbatched), and one kernel call
    would reduce dgamma over all rows of all elements.
  * shard_map with rows sharded and gamma replicated works unchanged: each shard normalises its rows;
    the dgamma of each shard is psum'd by the transpose of the replicated gamma.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_batching import custom_vmap

from jax_aiter import _call
from jax_aiter._call import Static, like_primal as _like_primal, varying as _varying

__all__ = ["rms_norm", "rms_norm_with_add"]


# ---- raw FFI calls (one custom call each; traced, never executed eagerly by themselves) --------
#
# Empty inputs never reach the handlers (which refuse them): the forward of an empty x is empty,
# and its gradients are zeros of the inputs' shapes, as jnp's own RMSNorm would give. They are
# validated by the handlers' rules first (_call.validate), so bad input is an error whatever its
# size.


def _empty(x) -> bool:
    return math.prod(x.shape) == 0


def _call_fwd(x, gamma, epsilon: float):
    inputs, outputs = {"x": x, "gamma": gamma}, {"y": (x.shape, x.dtype)}
    if _empty(x):
        _call.validate("aiter.rms_norm", inputs=inputs, outputs=outputs,
                       attributes={"epsilon": epsilon})
        return jnp.zeros(x.shape, x.dtype)
    return _call.call("aiter.rms_norm", inputs=inputs, outputs=outputs,
                      attributes={"epsilon": epsilon})["y"]


def _call_fwd_add(x, residual, gamma, epsilon: float):
    inputs = {"x": x, "residual": residual, "gamma": gamma}
    outputs = {"y": (x.shape, x.dtype), "residual_out": (x.shape, x.dtype)}
    if _empty(x):
        _call.validate("aiter.rms_norm_with_add", inputs=inputs, outputs=outputs,
                       attributes={"epsilon": epsilon})
        return jnp.zeros(x.shape, x.dtype), (x + residual).astype(x.dtype)
    out = _call.call("aiter.rms_norm_with_add", inputs=inputs, outputs=outputs,
                     attributes={"epsilon": epsilon})
    return out["y"], out["residual_out"]


def _call_bwd(dy, x, gamma, epsilon: float):
    inputs = {"dy": dy, "x": x, "gamma": gamma}
    outputs = {"dx": (x.shape, x.dtype), "dgamma": (gamma.shape, gamma.dtype)}
    if _empty(x):
        _call.validate("aiter.rms_norm_bwd", inputs=inputs, outputs=outputs,
                       attributes={"epsilon": epsilon})
        return jnp.zeros(x.shape, x.dtype), jnp.zeros(gamma.shape, gamma.dtype)
    out = _call.call("aiter.rms_norm_bwd", inputs=inputs, outputs=outputs,
                     attributes={"epsilon": epsilon})
    return out["dx"], out["dgamma"]


def _call_bwd_add(dy, residual_out, gamma, dresidual, epsilon: float):
    x = residual_out
    inputs = {"dy": dy, "residual_out": x, "gamma": gamma, "dresidual": dresidual}
    outputs = {"dx": (x.shape, x.dtype), "dgamma": (gamma.shape, gamma.dtype)}
    if _empty(x):
        _call.validate("aiter.rms_norm_with_add_bwd", inputs=inputs, outputs=outputs,
                       attributes={"epsilon": epsilon})
        return dresidual.astype(x.dtype), jnp.zeros(gamma.shape, gamma.dtype)
    out = _call.call("aiter.rms_norm_with_add_bwd", inputs=inputs, outputs=outputs,
                     attributes={"epsilon": epsilon})
    return out["dx"], out["dgamma"]


# ---- forward with a batching rule ------------------------------------------------------------

_Eps = Static  # epsilon, static through custom_vmap


def _broadcast(a, batched: bool, axis_size: int):
    return a if batched else jnp.broadcast_to(a, (axis_size, *a.shape))


@custom_vmap
def _fwd(x, gamma, eps: _Eps):
    return _call_fwd(x, gamma, eps.value)


@_fwd.def_vmap
def _fwd_vmap(axis_size, in_batched, x, gamma, eps):
    x_batched, gamma_batched, _ = in_batched
    if not gamma_batched:  # x is batched: the batch axis (in front) is just more rows
        return _fwd(x, gamma, eps), True
    y = jax.vmap(functools.partial(_call_fwd, epsilon=eps.value),
                 in_axes=(0 if x_batched else None, 0))(x, gamma)
    return y, True


@custom_vmap
def _fwd_add(x, residual, gamma, eps: _Eps):
    return _call_fwd_add(x, residual, gamma, eps.value)


@_fwd_add.def_vmap
def _fwd_add_vmap(axis_size, in_batched, x, residual, gamma, eps):
    x_batched, residual_batched, gamma_batched, _ = in_batched
    if not gamma_batched:
        x = _broadcast(x, x_batched, axis_size)
        residual = _broadcast(residual, residual_batched, axis_size)
        return _fwd_add(x, residual, gamma, eps), (True, True)
    outs = jax.vmap(functools.partial(_call_fwd_add, epsilon=eps.value),
                    in_axes=(0 if x_batched else None, 0 if residual_batched else None, 0))(
                        x, residual, gamma)
    return outs, (True, True)


# ---- custom VJPs, built once ------------------------------------------------------------------

@functools.partial(jax.custom_vjp, nondiff_argnums=(2,))
def _rms_norm(x, gamma, epsilon):
    return _fwd(x, gamma, _Eps(epsilon))


def _rms_norm_vjp_fwd(x, gamma, epsilon):
    return _fwd(x, gamma, _Eps(epsilon)), (x, gamma)


def _rms_norm_vjp_bwd(epsilon, res, dy):
    x, gamma = res
    dx, dgamma = _call_bwd(dy, x, gamma, epsilon)
    return _like_primal(dx, _varying(x)), _like_primal(dgamma, _varying(gamma))


_rms_norm.defvjp(_rms_norm_vjp_fwd, _rms_norm_vjp_bwd)


@functools.partial(jax.custom_vjp, nondiff_argnums=(3,))
def _rms_norm_with_add(x, residual, gamma, epsilon):
    return _fwd_add(x, residual, gamma, _Eps(epsilon))


def _rms_norm_with_add_vjp_fwd(x, residual, gamma, epsilon):
    y, residual_out = _fwd_add(x, residual, gamma, _Eps(epsilon))
    return (y, residual_out), (residual_out, gamma, Static((_varying(x), _varying(residual))))


def _rms_norm_with_add_vjp_bwd(epsilon, res, cotangents):
    residual_out, gamma, varying = res
    x_varying, residual_varying = varying.value
    dy, dresidual = cotangents
    dx, dgamma = _call_bwd_add(dy, residual_out, gamma, dresidual, epsilon)
    # residual_out = x + residual: both inputs get the same gradient. (In shard_map, x and residual
    # may vary over fewer axes than residual_out; their cotangents are psum'd down accordingly.)
    return (_like_primal(dx, x_varying), _like_primal(dx, residual_varying),
            _like_primal(dgamma, _varying(gamma)))


_rms_norm_with_add.defvjp(_rms_norm_with_add_vjp_fwd, _rms_norm_with_add_vjp_bwd)


# ---- public API --------------------------------------------------------------------------------

def _static_epsilon(op: str, epsilon) -> float:
    try:
        return float(epsilon)
    except (TypeError, jax.errors.ConcretizationTypeError) as e:
        raise TypeError(f"{op}: attribute epsilon: expected a static Python number, got "
                        f"{type(epsilon).__name__} (pass it as a static argument under jit)") from e


def _check_rank(op: str, operand: str, a) -> None:
    # The backward sizes its workspace from x.shape[-1] at trace time, before C++ sees anything.
    if np.ndim(a) < 1:
        raise ValueError(f"{op}: operand {operand}: expected rank >= 1 ([..., n]), got a scalar")


def rms_norm(x, gamma, epsilon: float = 1e-6):
    """RMSNorm over the last axis: ``x * rsqrt(mean(x**2, -1) + epsilon) * gamma``.

    Args:
      x: ``[..., n]`` bf16, f16 or f32.
      gamma: ``[n]``, x's dtype.
      epsilon: a static number >= 0.
    Returns:
      y, like x.
    """
    _check_rank("aiter.rms_norm", "x", x)
    return _rms_norm(x, gamma, _static_epsilon("aiter.rms_norm", epsilon))


def rms_norm_with_add(x, residual, gamma, epsilon: float = 1e-6):
    """Fused ``residual_out = x + residual; y = rms_norm(residual_out, gamma, epsilon)``.

    Args:
      x, residual: ``[..., n]``, one shape and dtype (bf16, f16 or f32).
      gamma: ``[n]``, x's dtype.
      epsilon: a static number >= 0.
    Returns:
      ``(y, residual_out)``, both like x; residual_out is the sum rounded to x's dtype, and y
      normalises that stored value.
    """
    _check_rank("aiter.rms_norm_with_add", "x", x)
    return _rms_norm_with_add(x, residual, gamma,
                              _static_epsilon("aiter.rms_norm_with_add", epsilon))


def describe(shape, dtype="bfloat16", epsilon: float = 1e-6, fused: bool = False,
             backward: bool = False) -> tuple[str, dict, dict]:
    """The call jax-aiter-plan describes: target, operands name -> (dtype, shape), attrs."""
    shape = tuple(shape)
    gamma = (dtype, (shape[-1],))
    x = (dtype, shape)
    if backward:
        if fused:
            return ("aiter.rms_norm_with_add_bwd",
                    {"dy": x, "residual_out": x, "gamma": gamma, "dresidual": x, "dx": x,
                     "dgamma": gamma}, {"epsilon": epsilon})
        return ("aiter.rms_norm_bwd", {"dy": x, "x": x, "gamma": gamma, "dx": x, "dgamma": gamma},
                {"epsilon": epsilon})
    if fused:
        return ("aiter.rms_norm_with_add",
                {"x": x, "residual": x, "gamma": gamma, "y": x, "residual_out": x},
                {"epsilon": epsilon})
    return "aiter.rms_norm", {"x": x, "gamma": gamma, "y": x}, {"epsilon": epsilon}
