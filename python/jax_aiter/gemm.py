"""BF16/F16 GEMM with a custom VJP, backed by the aiter.gemm FFI target.

  out[..., N] = a[..., K] . b[N, K]^T (+ bias[N])      fp32 accumulation

a and b are bf16 or f16 (one dtype), bias is [N] in a's dtype, out is a's dtype unless
``out_dtype`` (bf16, f16 or f32) says otherwise; leading dims of a fold into M. C++ picks the tier
(AITER's ASM kernels where they apply, on AMD; our portable kernels otherwise) and reports bad
operands by name (``aiter.gemm: operand b: ...``).

Transformations:
  * grad/vjp: ``jax.custom_vjp``; the backward is XLA's own ``dot_general`` (da = dout . b,
    db = dout^T . a over all leading dims, dbias = sum of dout), no transposes materialised.
  * vmap: with only a batched the batch axis folds into M (one call); otherwise one call per batch
    element (sequential).
  * shard_map with the rows of a sharded and b replicated works unchanged (b's gradient is psum'd
    by the transpose of the replication).
  * jit shardings: M or N split -> local; K split -> partial products and one all-reduce or
    reduce-scatter (the partitioning section below).
  * Empty products never reach the handler: M or N of 0 give an empty result, K of 0 gives bias
    (or zeros), as jnp.dot does.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_batching import custom_vmap

from jax_aiter import _call, _partition
from jax_aiter._call import Dispatch, Static, like_primal, varying

# What the package exports from this module (jax_aiter/__init__.py).
__all__ = ["gemm"]

_F32 = np.dtype(np.float32)


def _out_shape(a, b):
    return (*a.shape[:-1], b.shape[0])


def _kernel_gemm(a, b, bias, out_dtype, kernel, splitk, dispatch):
    return _call.call("aiter.gemm", inputs={"a": a, "b": b, "bias": bias},
                      outputs={"out": (_out_shape(a, b), out_dtype)},
                      attributes={"kernel": kernel, "splitk": splitk}, dispatch=dispatch)["out"]


# Partitioning (jax_aiter._partition): a's rows (any leading dims) and b's N split -> local, the
# output split the same way (bias with N). K split on both -> each shard's float32 partial product
# (the bias added by the first K shard only), summed over the K shards in float32 (all-reduce, or
# reduce-scatter onto M or N when the output is wanted split that way), rounded once.

def _rule(config, shapes):
    a, b, bias = shapes
    lead = tuple((f"m{i}",) for i in range(len(a) - 1))
    factors = {f"m{i}": _partition.Factor(s) for i, s in enumerate(a[:-1])}
    factors.update(k=_partition.Factor(a[-1]), n=_partition.Factor(b[0]))
    operands = (lead + (("k",),), (("n",), ("k",))) + ((("n",),),) * (bias is not None)
    return _partition.Rule(operands, (lead + (("n",),),), factors)


@_partition.op("aiter.gemm", rule=_rule)
def _part_gemm(config, shards, a, b, bias):
    out_dtype, kernel, splitk, dispatch = config
    if not shards.split("k"):
        return (_kernel_gemm(a, b, bias, out_dtype, kernel, splitk, dispatch),)
    part = _kernel_gemm(a, b, None, _F32, kernel, splitk, dispatch)
    if bias is not None:
        part = part + jnp.where(shards.index("k") == 0, bias.astype(_F32), 0.0)
    return (shards.sum(part, 0).astype(out_dtype),)


def _call_gemm(a, b, bias, out_dtype, kernel, splitk, dispatch):
    shape = _out_shape(a, b)
    inputs, outputs = {"a": a, "b": b, "bias": bias}, {"out": (shape, out_dtype)}
    attributes = {"kernel": kernel, "splitk": splitk}
    if math.prod(shape) == 0 or a.shape[-1] == 0:
        # Validated first (C++'s rules), so bad input is an error whatever its size.
        _call.validate("aiter.gemm", inputs=inputs, outputs=outputs, attributes=attributes,
                       dispatch=dispatch)
        out = jnp.zeros(shape, out_dtype)
        return out if bias is None else (out + bias).astype(out_dtype)
    return _part_gemm((out_dtype, kernel, splitk, dispatch), a, b, bias)[0]


# config: Static((out_dtype, kernel, splitk, dispatch)), static through custom_vmap / custom_vjp.
@custom_vmap
def _fwd(a, b, bias, config: Static):
    return _call_gemm(a, b, bias, *config.value)


@_fwd.def_vmap
def _fwd_vmap(axis_size, in_batched, a, b, bias, config):
    a_batched, b_batched, bias_batched, _ = in_batched
    if a_batched and not b_batched and not bias_batched:
        return _fwd(a, b, bias, config), True  # the batch axis is more rows of a
    in_axes = (0 if a_batched else None, 0 if b_batched else None,
               0 if bias_batched else None)
    one = lambda x, y, z: _call_gemm(x, y, z, *config.value)  # noqa: E731
    return jax.vmap(one, in_axes=in_axes)(a, b, bias), True


@functools.partial(jax.custom_vjp, nondiff_argnums=(3,))
def _gemm(a, b, bias, config):
    return _fwd(a, b, bias, config)


def _gemm_vjp_fwd(a, b, bias, config):
    vma = (varying(a), varying(b), None if bias is None else varying(bias))
    return _fwd(a, b, bias, config), (a, b, Static((bias is not None, vma)))


def _gemm_vjp_bwd(config, res, dout):
    a, b, static = res
    has_bias, (a_vma, b_vma, bias_vma) = static.value
    lead = tuple(range(dout.ndim - 1))
    da = jax.lax.dot_general(dout, b, (((dout.ndim - 1,), (0,)), ((), ())),
                             preferred_element_type=_F32).astype(a.dtype)
    db = jax.lax.dot_general(dout, a, ((lead, lead), ((), ())),
                             preferred_element_type=_F32).astype(b.dtype)
    dbias = None
    if has_bias:
        dbias = like_primal(jnp.sum(dout.astype(_F32), axis=lead).astype(a.dtype), bias_vma)
    return like_primal(da, a_vma), like_primal(db, b_vma), dbias


_gemm.defvjp(_gemm_vjp_fwd, _gemm_vjp_bwd)


def gemm(a, b, bias=None, *, out_dtype=None, kernel: str | None = None, splitk: int | None = None,
         dispatch: Dispatch | None = None):
    """``a[..., K] . b[N, K]^T (+ bias[N])`` with fp32 accumulation.

    Args:
      a: ``[..., K]`` bf16 or f16.
      b: ``[N, K]``, a's dtype (the layout of a linear layer's weight: no transpose needed).
      bias: optional ``[N]``, a's dtype.
      out_dtype: bf16, f16 or f32 (default: a's dtype).
      kernel: an AITER BF16 ASM kernel to use (AITER's kernelName, by symbol or short name, as
        in its tuned configs); None lets the heuristic choose.
      splitk: K splits (AITER's splitK: 0 or 1 none, up to 16); None lets the heuristic
        choose. A tier that cannot run it exactly says so (no tier drops it).
      dispatch: which tier runs the call (``jax_aiter.Dispatch``); default: the first that can.
    Returns:
      ``[..., N]`` of out_dtype.
    """
    if np.ndim(a) < 1 or np.ndim(b) != 2:
        raise ValueError(f"aiter.gemm: expected a of rank >= 1 and b of rank 2, got shapes "
                         f"{np.shape(a)} and {np.shape(b)}")
    out_dtype = np.dtype(out_dtype if out_dtype is not None else jnp.asarray(a).dtype)
    config = Static((out_dtype, kernel or "", None if splitk is None else int(splitk),
                     dispatch or Dispatch()))
    return _gemm(a, b, bias, config)


def describe(m: int, n: int, k: int, dtype="bfloat16", out_dtype=None, bias: bool = False,
             kernel: str | None = None, splitk: int | None = None) -> tuple[dict, dict]:
    """The call jax-aiter-plan describes for aiter.gemm: operands name -> (dtype, shape), attrs."""
    out_dtype = out_dtype or dtype
    operands = {"a": (dtype, (m, k)), "b": (dtype, (n, k)), "bias": (dtype, (n,)) if bias else None,
                "out": (out_dtype, (m, n))}
    return operands, {"kernel": kernel or "", "splitk": splitk}


def _plan(p, args):
    return ("aiter.gemm", *describe(args.m, args.n, args.k, args.dtype, args.out_dtype, args.bias,
                                    args.kernel, args.splitk))


# jax-aiter-plan's commands for this op (tools.py finds them): name -> (the options a call needs,
# plan(parser, args) -> (target, operands, attributes)).
PLAN_COMMANDS = {"gemm": (("m", "n", "k"), _plan), "aiter.gemm": (("m", "n", "k"), _plan)}
