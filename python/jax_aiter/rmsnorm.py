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
  * jit shardings: rows split -> local; the hidden dim split -> one all-reduce of per-row sums
    (the partitioning section below).
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_batching import custom_vmap

from jax_aiter import _call, _partition
from jax_aiter._call import Static, like_primal as _like_primal, varying as _varying

# What the package exports from this module (jax_aiter/__init__.py).
__all__ = ["rms_norm", "rms_norm_with_add"]


# ---- the kernels' calls, one custom call each, on whatever slice a shard holds -----------------

def _kernel_fwd(x, gamma, epsilon: float):
    return _call.call("aiter.rms_norm", inputs={"x": x, "gamma": gamma},
                      outputs={"y": (x.shape, x.dtype)}, attributes={"epsilon": epsilon})["y"]


def _kernel_fwd_add(x, residual, gamma, epsilon: float):
    out = _call.call("aiter.rms_norm_with_add",
                     inputs={"x": x, "residual": residual, "gamma": gamma},
                     outputs={"y": (x.shape, x.dtype), "residual_out": (x.shape, x.dtype)},
                     attributes={"epsilon": epsilon})
    return out["y"], out["residual_out"]


def _kernel_bwd(dy, x, gamma, epsilon: float):
    out = _call.call("aiter.rms_norm_bwd", inputs={"dy": dy, "x": x, "gamma": gamma},
                     outputs={"dx": (x.shape, x.dtype), "dgamma": (gamma.shape, gamma.dtype)},
                     attributes={"epsilon": epsilon})
    return out["dx"], out["dgamma"]


def _kernel_bwd_add(dy, residual_out, gamma, dresidual, epsilon: float):
    x = residual_out
    out = _call.call("aiter.rms_norm_with_add_bwd",
                     inputs={"dy": dy, "residual_out": x, "gamma": gamma,
                             "dresidual": dresidual},
                     outputs={"dx": (x.shape, x.dtype), "dgamma": (gamma.shape, gamma.dtype)},
                     attributes={"epsilon": epsilon})
    return out["dx"], out["dgamma"]


# ---- partitioning (jax_aiter._partition) ------------------------------------------------------
#
# Rows (every leading dim) split: each shard normalises its rows with the kernels; dgamma of each
# shard is a partial sum over its rows, added up over the row shards (float32, one all-reduce of
# [n]). The hidden dim n split: a row's statistics need the whole row, so each shard computes its
# part of the per-row float32 sums and one all-reduce of [rows, 1] (forward) or [rows, 2]
# (backward: sum x^2 and sum dy*gamma*x together) completes them; the rest is elementwise on the
# shard (jnp, fused by XLA). x is never gathered.

def _rule(config, shapes):
    x = shapes[0]
    rows = tuple((f"r{i}",) for i in range(len(x) - 1))
    xd, gd = rows + (("n",),), (("n",),)
    factors = {f"r{i}": _partition.Factor(s) for i, s in enumerate(x[:-1])}
    factors["n"] = _partition.Factor(x[-1])
    kind = config[0]
    operands = {"fwd": (xd, gd), "fwd_add": (xd, xd, gd), "bwd": (xd, xd, gd),
                "bwd_add": (xd, xd, gd, xd)}[kind]
    results = {"fwd": (xd,), "fwd_add": (xd, xd), "bwd": (xd, gd), "bwd_add": (xd, gd)}[kind]
    return _partition.Rule(operands, results, factors)


_F32 = np.dtype(np.float32)


def _split_rsqrt(xf, shards, epsilon, extra=None):
    """r = rsqrt(mean(x^2) + eps) per row from the shards' partial sums (one all-reduce; `extra`,
    another per-row partial sum, rides along in the same one)."""
    sums = jnp.sum(xf * xf, -1, keepdims=True)
    if extra is not None:
        sums = jnp.concatenate([sums, extra], -1)
    sums = shards.psum(sums, "n")
    r = jax.lax.rsqrt(sums[..., :1] / shards.size("n") + epsilon)
    return r, (sums[..., 1:] if extra is not None else None)


def _split_norm(x, gamma, epsilon, shards):
    xf = x.astype(_F32)
    r, _ = _split_rsqrt(xf, shards, epsilon)
    return (xf * r * gamma.astype(_F32)).astype(x.dtype)


def _split_bwd(dy, x, gamma, epsilon, shards, dresidual=None):
    """dx = r g dy - x r^3 mean(g dy x) (+ dresidual), dgamma = sum_rows dy x r, in float32."""
    xf, dyf, gf = x.astype(_F32), dy.astype(_F32), gamma.astype(_F32)
    gdy = dyf * gf
    r, sg = _split_rsqrt(xf, shards, epsilon, jnp.sum(gdy * xf, -1, keepdims=True))
    dx = r * gdy - xf * (r * r * r) * (sg / shards.size("n"))
    if dresidual is not None:
        dx = dx + dresidual.astype(_F32)
    dgamma = jnp.sum((dyf * xf * r).reshape(-1, x.shape[-1]), 0)
    return dx.astype(x.dtype), shards.sum(dgamma, 1).astype(gamma.dtype)


@_partition.op("aiter.rms_norm", rule=_rule)
def _part_fwd(config, shards, x, gamma):
    epsilon = config[1]
    if shards.split("n"):
        return (_split_norm(x, gamma, epsilon, shards),)
    return (_kernel_fwd(x, gamma, epsilon),)


@_partition.op("aiter.rms_norm_with_add", rule=_rule)
def _part_fwd_add(config, shards, x, residual, gamma):
    epsilon = config[1]
    if shards.split("n"):
        residual_out = (x.astype(_F32) + residual.astype(_F32)).astype(x.dtype)
        return _split_norm(residual_out, gamma, epsilon, shards), residual_out
    return _kernel_fwd_add(x, residual, gamma, epsilon)


@_partition.op("aiter.rms_norm_bwd", rule=_rule)
def _part_bwd(config, shards, dy, x, gamma):
    epsilon = config[1]
    if shards.split("n"):
        return _split_bwd(dy, x, gamma, epsilon, shards)
    dx, dgamma = _kernel_bwd(dy, x, gamma, epsilon)
    return dx, shards.sum(dgamma, 1)


@_partition.op("aiter.rms_norm_with_add_bwd", rule=_rule)
def _part_bwd_add(config, shards, dy, residual_out, gamma, dresidual):
    epsilon = config[1]
    if shards.split("n"):
        return _split_bwd(dy, residual_out, gamma, epsilon, shards, dresidual)
    dx, dgamma = _kernel_bwd_add(dy, residual_out, gamma, dresidual, epsilon)
    return dx, shards.sum(dgamma, 1)


# ---- the calls --------------------------------------------------------------------------------
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
    return _part_fwd(("fwd", epsilon), x, gamma)[0]


def _call_fwd_add(x, residual, gamma, epsilon: float):
    inputs = {"x": x, "residual": residual, "gamma": gamma}
    outputs = {"y": (x.shape, x.dtype), "residual_out": (x.shape, x.dtype)}
    if _empty(x):
        _call.validate("aiter.rms_norm_with_add", inputs=inputs, outputs=outputs,
                       attributes={"epsilon": epsilon})
        return jnp.zeros(x.shape, x.dtype), (x + residual).astype(x.dtype)
    return _part_fwd_add(("fwd_add", epsilon), x, residual, gamma)


def _call_bwd(dy, x, gamma, epsilon: float):
    inputs = {"dy": dy, "x": x, "gamma": gamma}
    outputs = {"dx": (x.shape, x.dtype), "dgamma": (gamma.shape, gamma.dtype)}
    if _empty(x):
        _call.validate("aiter.rms_norm_bwd", inputs=inputs, outputs=outputs,
                       attributes={"epsilon": epsilon})
        return jnp.zeros(x.shape, x.dtype), jnp.zeros(gamma.shape, gamma.dtype)
    return _part_bwd(("bwd", epsilon), dy, x, gamma)


def _call_bwd_add(dy, residual_out, gamma, dresidual, epsilon: float):
    x = residual_out
    inputs = {"dy": dy, "residual_out": x, "gamma": gamma, "dresidual": dresidual}
    outputs = {"dx": (x.shape, x.dtype), "dgamma": (gamma.shape, gamma.dtype)}
    if _empty(x):
        _call.validate("aiter.rms_norm_with_add_bwd", inputs=inputs, outputs=outputs,
                       attributes={"epsilon": epsilon})
        return dresidual.astype(x.dtype), jnp.zeros(gamma.shape, gamma.dtype)
    return _part_bwd_add(("bwd_add", epsilon), dy, residual_out, gamma, dresidual)


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


def _plan(p, args):
    try:
        shape = tuple(int(d) for d in args.shape.split(","))
    except ValueError:
        p.error(f"--shape: expected dims separated by commas (16384,4096), got {args.shape!r}")
    return describe(shape, args.dtype, args.epsilon, args.fused, args.backward)


# jax-aiter-plan's commands for this op (tools.py finds them): name -> (the options a call needs,
# plan(parser, args) -> (target, operands, attributes)).
PLAN_COMMANDS = {"rms_norm": (("shape",), _plan), "aiter.rms_norm": (("shape",), _plan)}
