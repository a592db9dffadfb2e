"""Grouped GEMM (a ragged dot) with gradients, backed by the aiter.grouped_gemm FFI targets.

  out[m, :] = x[m, :] . w[g]^T        for the rows m of group g         fp32 accumulation

x is ``[M, K]`` with its rows grouped by expert: group g is the next ``group_sizes[g]`` rows;
rows past ``sum(group_sizes)`` give zeros (as ``jax.lax.ragged_dot`` does). w is ``[G, N, K]``,
K-major like ``gemm``'s ``b [N, K]`` and AITER's MoE weights ``[E, N, K]`` (``ragged_dot`` takes
``[G, K, N]``: ``grouped_gemm(x, w, gs)`` is ``ragged_dot(x, w.swapaxes(1, 2), gs)``).
group_sizes is int32 ``[G]`` device data: no host ever reads it; sizes are clamped as they are
summed (a negative size counts as 0, a group running past M keeps the rows below M).

Two modes:
  * bf16 / f16 x and w, out bf16, f16 or f32 (default: x's dtype); differentiable.
  * fp8 block-scale forward: x and w e4m3 (the device's format, ``jax_aiter.fp8_dtype()``), w
    plain row-major (not shuffled), ``x_scale`` f32 ``[M, K/128]`` (``quantize_fp8_per_token_
    block(x)``), ``w_scale`` f32 ``[G, ceil(N/128), K/128]`` (``quantize_fp8_per_block`` of each
    w[g]); each 128-wide K block's product summed in f32, scaled by x_scale * w_scale, the blocks
    added in f32, rounded to bf16 once. K % 128 == 0. Inference only: differentiating raises.

Transformations:
  * grad/vjp: ``jax.custom_vjp``; dx = the grouped GEMM of dy with w[g] read as ``[K, N]``
    (aiter.grouped_gemm with transpose_w: no transposed copy of w), dw[g] = dy_g^T . x_g
    (aiter.grouped_gemm_wgrad: the reduction runs over the group's rows; a group with no rows
    gets zeros). No padding of groups anywhere. dy is cast to x's dtype first (out_dtype f32).
  * jit shardings (``_partition``): x's rows split (data parallel) -> local, each shard's group
    sizes re-derived from the whole group_sizes and its row offset (G values; dw's shard
    partials summed in f32); N split (w's N, out's N) -> local; K split -> f32 partial products
    summed over the K shards; the experts (w's G) split -> gathered (expert parallelism needs a
    token dispatch, which is its own op). fp8: K and the experts whole, N in whole 128-row
    scale blocks.
  * Empty calls never reach the handlers: M, N, K or G of 0 give zeros.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jax_aiter import _call, _partition
from jax_aiter._call import Dispatch, Static, like_primal, varying

# What the package exports from this module (jax_aiter/__init__.py).
__all__ = ["grouped_gemm"]

_NAME = "aiter.grouped_gemm"
_WGRAD = "aiter.grouped_gemm_wgrad"
SCALE_BLOCK = 128
_F32 = np.dtype(np.float32)
_BF16 = np.dtype(jnp.bfloat16)


def _local_sizes(group_sizes, m_total: int, lo, m_local: int):
    """The group sizes of rows [lo, lo + m_local) of an m_total-row call, by the kernels' rule
    (sizes clamped to [0, M] and summed saturating at M, in group order)."""
    sizes = jnp.clip(group_sizes, 0, m_total)
    ends = jax.lax.associative_scan(lambda a, b: jnp.minimum(a + b, m_total), sizes)
    starts = jnp.concatenate([jnp.zeros((1,), ends.dtype), ends[:-1]])
    hi = lo + m_local
    return (jnp.clip(ends, lo, hi) - jnp.clip(starts, lo, hi)).astype(jnp.int32)


# ---- the calls ----------------------------------------------------------------------------------

def _call_rows(x, w, group_sizes, x_scale, w_scale, transpose_w, out_dtype, dispatch):
    m, cols = x.shape[0], w.shape[2 if transpose_w else 1]
    inputs = {"x": x, "w": w, "group_sizes": group_sizes, "x_scale": x_scale, "w_scale": w_scale}
    outputs = {"out": ((m, cols), out_dtype)}
    attributes = {"transpose_w": transpose_w}
    if m == 0 or cols == 0 or x.shape[1] == 0 or w.shape[0] == 0:
        # Validated first (C++'s rules), so bad input is an error whatever its size.
        _call.validate(_NAME, inputs=inputs, outputs=outputs, attributes=attributes,
                       dispatch=dispatch)
        return jnp.zeros((m, cols), out_dtype)
    return _call.call(_NAME, inputs=inputs, outputs=outputs, attributes=attributes,
                      dispatch=dispatch)["out"]


def _call_wgrad(dy, x, group_sizes, out_dtype, dispatch):
    shape = (group_sizes.shape[0], dy.shape[1], x.shape[1])
    inputs = {"dy": dy, "x": x, "group_sizes": group_sizes}
    outputs = {"dw": (shape, out_dtype)}
    if 0 in shape or dy.shape[0] == 0:
        _call.validate(_WGRAD, inputs=inputs, outputs=outputs, dispatch=dispatch)
        return jnp.zeros(shape, out_dtype)
    return _call.call(_WGRAD, inputs=inputs, outputs=outputs, dispatch=dispatch)["dw"]


# ---- partitioning (jax_aiter._partition; the module docstring says what splits how) -------------

def _rule(config, shapes):
    transpose_w = config[0]
    x, w, _, x_scale, w_scale = shapes
    F, R = _partition.Factor, _partition.REPLICATE
    factors = {"m": F(x[0]), "g": F(w[0], R)}
    if x_scale is None:
        factors.update(n=F(w[1]), k=F(w[2]))
        wn, scales = ("n",), ()
    else:  # fp8: K whole (scale blocks); N in whole 128-row scale blocks where they line up
        factors.update(k=F(w[2], R), kb=F(x_scale[1], R))
        if w[1] % SCALE_BLOCK == 0:
            factors.update(nb=F(w[1] // SCALE_BLOCK), nblk=F(SCALE_BLOCK, R))
            wn, sn = ("nb", "nblk"), ("nb",)
        else:
            factors.update(n=F(w[1], R), nbc=F(w_scale[1], R))
            wn, sn = ("n",), ("nbc",)
        scales = ((("m",), ("kb",)), (("g",), sn, ("kb",)))
    x_dims = (("m",), wn if transpose_w else ("k",))
    out_dims = (("m",), ("k",) if transpose_w else wn)
    operands = (x_dims, (("g",), wn, ("k",)), (("g",),)) + scales
    return _partition.Rule(operands, (out_dims,), factors)


@_partition.op(_NAME, rule=_rule)
def _part_rows(config, shards, x, w, group_sizes, x_scale, w_scale):
    transpose_w, out_dtype, dispatch = config
    if shards.split("m"):
        group_sizes = _local_sizes(group_sizes, shards.size("m"), shards.offset("m"), x.shape[0])
    if shards.split("n" if transpose_w else "k"):  # partial products over the reduction
        part = _call_rows(x, w, group_sizes, x_scale, w_scale, transpose_w, _F32, dispatch)
        return (shards.sum(part, 0).astype(out_dtype),)
    return (_call_rows(x, w, group_sizes, x_scale, w_scale, transpose_w, out_dtype, dispatch),)


def _wgrad_rule(config, shapes):
    dy, x, group_sizes = shapes
    F = _partition.Factor
    factors = {"m": F(dy[0]), "n": F(dy[1]), "k": F(x[1]),
               "g": F(group_sizes[0], _partition.REPLICATE)}
    return _partition.Rule(((("m",), ("n",)), (("m",), ("k",)), (("g",),)),
                           ((("g",), ("n",), ("k",)),), factors)


@_partition.op(_WGRAD, rule=_wgrad_rule)
def _part_wgrad(config, shards, dy, x, group_sizes):
    out_dtype, dispatch = config
    if not shards.split("m"):
        return (_call_wgrad(dy, x, group_sizes, out_dtype, dispatch),)
    local = _local_sizes(group_sizes, shards.size("m"), shards.offset("m"), dy.shape[0])
    part = _call_wgrad(dy, x, local, _F32, dispatch)  # this shard's rows only: summed over shards
    return (shards.sum(part, 0).astype(out_dtype),)


# ---- gradients ----------------------------------------------------------------------------------

def _forward(x, w, group_sizes, config):
    out_dtype, dispatch = config.value
    return _part_rows((False, out_dtype, dispatch), x, w, group_sizes, None, None)[0]


# config: Static((out_dtype, dispatch)), static through custom_vjp.
@functools.partial(jax.custom_vjp, nondiff_argnums=(3,))
def _grouped(x, w, group_sizes, config):
    return _forward(x, w, group_sizes, config)


def _grouped_fwd(x, w, group_sizes, config):
    out = _forward(x, w, group_sizes, config)
    return out, (x, w, group_sizes, Static((varying(x), varying(w))))


def _grouped_bwd(config, res, dy):
    x, w, group_sizes, static = res
    x_vma, w_vma = static.value
    dispatch = config.value[1]
    dy = dy.astype(x.dtype)
    dx = _part_rows((True, x.dtype, dispatch), dy, w, group_sizes, None, None)[0]
    dw = _part_wgrad((w.dtype, dispatch), dy, x, group_sizes)[0]
    return like_primal(dx, x_vma), like_primal(dw, w_vma), None


_grouped.defvjp(_grouped_fwd, _grouped_bwd)


@functools.partial(jax.custom_vjp, nondiff_argnums=(5,))
def _grouped_fp8(x, w, group_sizes, x_scale, w_scale, config):
    return _part_rows((False, _BF16, config.value), x, w, group_sizes, x_scale, w_scale)[0]


def _no_grad(*_):
    raise TypeError(f"{_NAME}: the fp8 block-scale grouped GEMM is an inference op: it has no "
                    "gradient (differentiate the bf16 model's grouped_gemm instead)")


_grouped_fp8.defvjp(lambda *args: _no_grad(), lambda config, res, g: _no_grad())


def grouped_gemm(x, w, group_sizes, *, out_dtype=None, x_scale=None, w_scale=None,
                 dispatch: Dispatch | None = None):
    """The ragged dot ``out[m] = x[m] . w[g]^T`` for the rows m of group g (module docstring).

    Args:
      x: ``[M, K]``, bf16 or f16; or fp8 e4m3 with x_scale and w_scale.
      w: ``[G, N, K]``, x's dtype (fp8: plain row-major, not shuffled).
      group_sizes: int32 ``[G]``: group g is the next ``group_sizes[g]`` rows of x.
      out_dtype: bf16, f16 or f32 (default: x's dtype; fp8: bf16 only).
      x_scale: fp8 only, f32 ``[M, K/128]``.
      w_scale: fp8 only, f32 ``[G, ceil(N/128), K/128]``.
      dispatch: which tier runs the call (``jax_aiter.Dispatch``; one tier: "portable").
    Returns:
      ``[M, N]`` of out_dtype; rows past ``sum(group_sizes)`` are zeros.
    """
    x, w, group_sizes = jnp.asarray(x), jnp.asarray(w), jnp.asarray(group_sizes)
    if x.ndim != 2 or w.ndim != 3 or group_sizes.ndim != 1:
        raise ValueError(f"{_NAME}: expected x [M, K], w [G, N, K] and group_sizes [G], got shapes "
                         f"{x.shape}, {w.shape} and {group_sizes.shape}")
    dispatch = dispatch or Dispatch()
    fp8 = x_scale is not None or w_scale is not None or jnp.dtype(x.dtype).itemsize == 1
    if fp8:
        x_scale = None if x_scale is None else jnp.asarray(x_scale)
        w_scale = None if w_scale is None else jnp.asarray(w_scale)
        if out_dtype is not None and np.dtype(out_dtype) != _BF16:
            raise ValueError(f"{_NAME}: operand out: the fp8 block-scale grouped GEMM gives bf16, "
                             f"got out_dtype {np.dtype(out_dtype)}")
        if x_scale is None or w_scale is None:  # C++'s validate names the missing one
            _call.validate(_NAME, inputs={"x": x, "w": w, "group_sizes": group_sizes,
                                          "x_scale": x_scale, "w_scale": w_scale},
                           outputs={"out": ((x.shape[0], w.shape[1]), _BF16)},
                           attributes={"transpose_w": False}, dispatch=dispatch)
            raise ValueError(f"{_NAME}: fp8 x needs both x_scale and w_scale")
        return _grouped_fp8(x, w, group_sizes, x_scale, w_scale, Static(dispatch))
    out_dtype = np.dtype(out_dtype if out_dtype is not None else x.dtype)
    return _grouped(x, w, group_sizes, Static((out_dtype, dispatch)))


# ---- jax-aiter-plan -----------------------------------------------------------------------------

def describe(m: int, n: int, k: int, groups: int, dtype="bfloat16", out_dtype=None,
             transpose_w: bool = False) -> tuple[dict, dict]:
    """The call jax-aiter-plan describes for aiter.grouped_gemm: operands name -> (dtype, shape),
    attributes. fp8 dtypes describe the block-scale forward (with its scales); transpose_w the
    dgrad (x [M, N] -> out [M, K])."""
    fp8 = np.dtype(dtype).itemsize == 1
    out_dtype = "bfloat16" if fp8 else (out_dtype or dtype)
    kb, nb = k // SCALE_BLOCK, -(-n // SCALE_BLOCK)
    operands = {"x": (dtype, (m, n if transpose_w else k)), "w": (dtype, (groups, n, k)),
                "group_sizes": ("int32", (groups,)),
                "x_scale": ("float32", (m, kb)) if fp8 else None,
                "w_scale": ("float32", (groups, nb, kb)) if fp8 else None,
                "out": (out_dtype, (m, k if transpose_w else n))}
    return operands, {"transpose_w": transpose_w}


def describe_wgrad(m: int, n: int, k: int, groups: int, dtype="bfloat16",
                   out_dtype=None) -> tuple[dict, dict]:
    """The call jax-aiter-plan describes for aiter.grouped_gemm_wgrad."""
    operands = {"dy": (dtype, (m, n)), "x": (dtype, (m, k)), "group_sizes": ("int32", (groups,)),
                "dw": (out_dtype or dtype, (groups, n, k))}
    return operands, {}


def add_plan_arguments(p) -> None:
    p.add_argument("--groups", type=int, default=8, help="grouped_gemm: groups (experts)")


def _plan(transpose_w):
    def plan(p, args):
        if args.groups < 1:
            p.error(f"--groups: expected an int >= 1, got {args.groups}")
        return (_NAME, *describe(args.m, args.n, args.k, args.groups, args.dtype, args.out_dtype,
                                 transpose_w))
    return plan


def _plan_wgrad(p, args):
    if args.groups < 1:
        p.error(f"--groups: expected an int >= 1, got {args.groups}")
    return (_WGRAD, *describe_wgrad(args.m, args.n, args.k, args.groups, args.dtype,
                                    args.out_dtype))


# jax-aiter-plan's commands for this op (tools.py finds them): name -> (the options a call needs,
# plan(parser, args) -> (target, operands, attributes)).
PLAN_COMMANDS = {"grouped_gemm": (("m", "n", "k"), _plan(False)),
                 "grouped_gemm_dgrad": (("m", "n", "k"), _plan(True)),
                 "grouped_gemm_wgrad": (("m", "n", "k"), _plan_wgrad)}
