"""``gemm_i8``: AITER's INT8 GEMM (per-token activations, per-channel weights, bf16 out).

From a bf16 model to it in three lines (quantize and shuffle the weight once, at load time; the
layout and the quantizers are ``jax_aiter.quant``'s)::

    wq, w_scale = quantize_per_channel(w)           # w: [N, K] -> int8 [N, K], f32 [1, N]
    w_i8 = shuffle_weight(wq)                       # ShuffledWeight in the (16, 16) layout
    xq, x_scale = quantize_per_token(x)             # x: [..., K] -> int8 [..., K], f32 [..., 1]
    y = gemm_i8(xq, w_i8, x_scale, w_scale, bias)   # bf16 [..., N]

Operands and scales follow the quantized GEMMs' one convention (``jax_aiter.quant``: a, b,
a_scale, b_scale, each scale as its quantizer makes it). The kernels read the weight in
``I8_LAYOUT``, (16, 16) (``jax_aiter.quant`` draws it);
``gemm_i8`` takes nothing but a ``ShuffledWeight`` in it. ``gemm_i8`` is an inference op: it has
no gradient, and differentiating through it raises.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp

from jax_aiter import _call, _partition
from jax_aiter._call import Dispatch, Static
from jax_aiter.quant import I8_LAYOUT, ShuffledWeight, weight_factors

# What the package exports from this module (jax_aiter/__init__.py).
__all__ = ["gemm_i8"]


def _call_gemm_i8(a, b, a_scale, b_scale, bias, config):
    kernel, splitk, dispatch = config
    m, n = a.shape[0], b.shape[0]
    inputs = {"a": a, "b": b, "a_scale": a_scale, "b_scale": b_scale, "bias": bias}
    outputs = {"out": ((m, n), jnp.bfloat16)}
    attributes = {"b_layout": "x".join(str(v) for v in I8_LAYOUT), "kernel": kernel,
                  "splitk": splitk}
    if m == 0 or n == 0:  # validated first: bad input is an error whatever its size
        _call.validate("aiter.gemm_i8", inputs=inputs, outputs=outputs, attributes=attributes,
                       dispatch=dispatch)
        return jnp.zeros((m, n), jnp.bfloat16)
    return _call.call("aiter.gemm_i8", inputs=inputs, outputs=outputs, attributes=attributes,
                      dispatch=dispatch)["out"]


def _i8_rule(config, shapes):
    a, b, a_scale, b_scale, bias = shapes
    factors = weight_factors(a[0], b[0], a[1], I8_LAYOUT[0])
    factors.update(o1=_partition.Factor(1), o2=_partition.Factor(1), o3=_partition.Factor(1))
    operands = ((("m",), ("k",)), (("n",), ("k",)), (("m",), ("o1",)), (("o2",), ("n",)))
    if bias is not None:
        operands += ((("o3",), ("n",)),)
    return _partition.Rule(operands, ((("m",), ("n",)),), factors)


@_partition.op("aiter.gemm_i8", rule=_i8_rule)
def _part_gemm_i8(config, shards, a, b, a_scale, b_scale, bias):
    return (_call_gemm_i8(a, b, a_scale, b_scale, bias, config),)


@functools.partial(jax.custom_vjp, nondiff_argnums=(5,))
def _gemm_i8(a, b, a_scale, b_scale, bias, config):
    return _part_gemm_i8(config.value, a, b, a_scale, b_scale, bias)[0]


def _no_grad(*_):
    raise TypeError("aiter.gemm_i8 is an inference op: it has no gradient (differentiate the "
                    "bf16 model, e.g. jax_aiter.gemm or jnp.dot, instead)")


_gemm_i8.defvjp(lambda a, b, sa, sb, bias, config: _no_grad(), lambda config, res, g: _no_grad())


def gemm_i8(a, b: ShuffledWeight, a_scale, b_scale, bias=None, *, kernel: str | None = None,
            splitk: int | None = None, dispatch: Dispatch | None = None):
    """``(a . w^T) * a_scale * b_scale (+ bias)`` as bf16, with exact int32 sums (AITER's
    ``gemm_a8w8_asm`` contract).

    Args:
      a: int8 ``[..., K]`` (activations, e.g. from ``quantize_per_token``); K % 32 == 0,
        K <= 131071 (so that |sum| <= 128 * 128 * K stays below 2^31: at most 131040).
      b: the int8 weight ``[N, K]`` as a ``ShuffledWeight`` in ``I8_LAYOUT`` (``shuffle_weight``);
        N % 16 == 0.
      a_scale: f32 ``[..., 1]`` (a's leading dims).
      b_scale: f32 ``[1, N]`` (or ``[N]``).
      bias: optional f32 ``[N]`` (or ``[1, N]``).
      kernel: an AITER i8gemm kernel to use (AITER's kernelName, by symbol or short name);
        None lets the heuristic choose.
      splitk: K splits (AITER's splitK: 0 or 1 none, up to 16); None lets the heuristic
        choose. A tier that cannot run it exactly says so (no tier drops it).
      dispatch: which tier runs the call (``jax_aiter.Dispatch``).
    Returns:
      bf16 ``[..., N]``.
    """
    if not isinstance(b, ShuffledWeight):
        raise TypeError(
            "aiter.gemm_i8: operand b: expected a ShuffledWeight (jax_aiter.quant.shuffle_weight"
            f"(w, layout={I8_LAYOUT})), got {type(b).__name__}: the kernels read a pre-shuffled "
            "weight, and a plain array is taken for an unshuffled one")
    if not b.in_layout(I8_LAYOUT):
        raise ValueError(f"aiter.gemm_i8: operand b: expected a weight shuffled in the layout "
                         f"{I8_LAYOUT}, got one in {b.layout!r}")
    a = jnp.asarray(a)
    if a.ndim < 1 or b.data.ndim != 2:
        raise ValueError(f"aiter.gemm_i8: expected a of rank >= 1 and b of rank 2, got shapes "
                         f"{a.shape} and {b.data.shape}")
    lead, k = a.shape[:-1], a.shape[-1]
    n = b.data.shape[0]
    m = math.prod(lead)
    a_scale = jnp.asarray(a_scale)
    if a_scale.shape != (*lead, 1):
        raise ValueError(f"aiter.gemm_i8: operand a_scale: expected shape {(*lead, 1)} (a's "
                         f"leading dims), got {a_scale.shape}")
    b_scale = jnp.asarray(b_scale)
    if b_scale.shape not in ((n,), (1, n)):
        raise ValueError(f"aiter.gemm_i8: operand b_scale: expected shape (1, {n}) or ({n},), "
                         f"got {b_scale.shape}")
    if bias is not None:
        bias = jnp.asarray(bias)
        if bias.shape not in ((n,), (1, n)):
            raise ValueError(f"aiter.gemm_i8: operand bias: expected shape ({n},) or (1, {n}), "
                             f"got {bias.shape}")
        bias = bias.reshape(1, n)
    config = Static((kernel or "", None if splitk is None else int(splitk), dispatch or Dispatch()))
    out = _gemm_i8(a.reshape(m, k), b.data, a_scale.reshape(m, 1), b_scale.reshape(1, n), bias,
                   config)
    return out.reshape(*lead, n)


def describe(m: int, n: int, k: int, bias: bool = False, kernel: str | None = None,
             splitk: int | None = None) -> tuple[dict, dict]:
    """The call jax-aiter-plan describes for aiter.gemm_i8: operands name -> (dtype, shape),
    attributes."""
    operands = {"a": ("int8", (m, k)), "b": ("int8", (n, k)), "a_scale": ("float32", (m, 1)),
                "b_scale": ("float32", (1, n)), "bias": ("float32", (1, n)) if bias else None,
                "out": ("bfloat16", (m, n))}
    return operands, {"b_layout": "x".join(str(v) for v in I8_LAYOUT), "kernel": kernel or "",
                      "splitk": splitk}


def _plan(p, args):
    return ("aiter.gemm_i8", *describe(args.m, args.n, args.k, args.bias, args.kernel,
                                       args.splitk))


# jax-aiter-plan's commands for this op (tools.py finds them): name -> (the options a call needs,
# plan(parser, args) -> (target, operands, attributes)).
PLAN_COMMANDS = {"gemm_i8": (("m", "n", "k"), _plan)}
