"""``gemm_fp8_mi350``: AITER's MI350 (gfx950) FP8 block-scale GEMM, with our portable kernels
everywhere else.

From a bf16 model to this op in three lines (quantize and shuffle the weight once, at load time)::

    wq, w_scale = quantize_weight_blocks(w)          # w: [N, K] -> fp8 [N, K], f32 [N/128, K/128]
    w8 = shuffle_weight(wq)                          # ShuffledWeight in the (16, 16) layout
    xq, x_scale = quantize_token_blocks(x)           # x: [M, K] -> fp8 [M, K], f32 [K/128, M]
    y = gemm_fp8_mi350(xq, w8, x_scale, w_scale)     # bf16 [M, N]

What it computes (N and K multiples of 128)::

    out[m, n] = sum over kb < K/128 of  x_scale[kb, m] * w_scale[n // 128, kb]
                                        * sum_{k in block kb} xq[m, k] * wq[n, k]

The operands, as AITER's kernels read them (AITER's launcher csrc/py_itfs_cu/
asm_mi350_a8w8_blockscale.cu, deleted in 06de6e9aee, and its op test
op_tests/test_gemm_a8w8_blockscale_mi350.py, the one caller that checked values)::

    xq       fp8 [M, K]            row-major activations
    wq       fp8 [N, K]            pre-shuffled: shuffle_weight(wq) (layout (16, 16), below)
    x_scale  f32 [K/128, M]        one per (128-column K block, token), K-BLOCK-MAJOR:
                                   x_scale[kb, m] scales xq[m, 128 kb : 128 kb + 128]
    w_scale  f32 [N/128, K/128]    one per 128 x 128 weight block, N-BLOCK-MAJOR:
                                   w_scale[nb, kb] scales wq[128 nb : +128, 128 kb : +128]
    out      bf16 [M, N]

    x_scale in memory:  kb=0: m0 m1 m2 ... m(M-1) | kb=1: m0 m1 ... | ...
    w_scale in memory:  nb=0: kb0 kb1 ... | nb=1: kb0 kb1 ... | ...

(ROCm/jax-aiter's docstring and a comment in AITER's launcher say w_scale [K/128, N/128]; AITER's
op test passes the [N/128, K/128] array above, and so do we.)

The weight layout is AITER's ``shuffle_weight(w, layout=(16, 16))``, the INT8 GEMM's (see
``jax_aiter.quant``): for fp8 (16 elements in 16 bytes) each block of 16 rows x 32 columns becomes
two 256-byte planes (columns 0-15, then 16-31), each 16 rows of 16 contiguous bytes; blocks follow
along K, then along N::

    block (n0, k0):  plane 0: row n0 k0..k0+15 | row n0+1 k0..k0+15 | ... | row n0+15
                     plane 1: row n0 k0+16..k0+31 | ...                   | row n0+15

A shuffled weight is a ``ShuffledWeight``; ``gemm_fp8_mi350`` takes nothing else.

Which fp8: gfx950 and NVIDIA read ``float8_e4m3fn`` (``jax_aiter.fp8_dtype()``); our portable
kernels on gfx942 read ``float8_e4m3fnuz``; on the CPU either works (the ASM tier's twins, planned
for gfx950, read e4m3fn).

Tiers: AITER's kernels on gfx950 when M >= 16 and K >= 512 (x32 for M <= 32, else x128, AITER's
rule; x64 and x96 by ``kernel=``); our portable kernels for every other call, any M >= 1 (a
one-token decode step runs: serving code does not special-case small batches).

``gemm_fp8_mi350`` is an inference op: differentiating through it raises.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jax_aiter import _call, _partition
from jax_aiter._call import Dispatch, Static
from jax_aiter.quant import (ShuffledWeight, blockscale_rule, fp8_dtype, quantize_fp8_per_block,
                             quantize_fp8_per_token_block, shuffle_weight, unshuffle_weight)

# What the package exports from this module (jax_aiter/__init__.py).
__all__ = ["gemm_fp8_mi350"]

# The layout AITER's MI350 kernels read wq in (kernels/shared/aiter_mi350.h).
MI350_LAYOUT = (16, 16)
# AITER's code objects (hsa/gfx950/<name>.co), by tile_m: 32, 64, 96, 128.
MI350_KERNELS = tuple(f"f8_block_scale_mi350_x{t}" for t in (32, 64, 96, 128))

_BLOCK = 128


def quantize_token_blocks(x, dtype=None):
    """Per (token, 128-column K block) fp8 quantization of activations ``x [M, K]`` (K % 128 ==
    0) as this op takes it: ``(xq fp8 [M, K], x_scale f32 [K/128, M])``, x ~= xq * x_scale[kb,
    m] (``quant.quantize_fp8_per_token_block`` with the scale transposed)."""
    q, s = quantize_fp8_per_token_block(x, dtype)
    return q, s.T


def quantize_weight_blocks(w, dtype=None):
    """Per 128 x 128 block fp8 quantization of a weight ``w [N, K]`` as this op takes it:
    ``(wq fp8 [N, K], w_scale f32 [N/128, K/128])`` (``quant.quantize_fp8_per_block``)."""
    return quantize_fp8_per_block(w, dtype)


# ---- the op ------------------------------------------------------------------------------------

def _call_mi350(xq, wq, x_scale, w_scale, config):
    kernel, dispatch = config
    m, n = xq.shape[0], wq.shape[0]
    inputs = {"xq": xq, "wq": wq, "x_scale": x_scale, "w_scale": w_scale}
    outputs = {"out": ((m, n), jnp.bfloat16)}
    attributes = {"b_layout": "x".join(str(v) for v in MI350_LAYOUT), "kernel": kernel}
    if m == 0 or n == 0:  # validated first: bad input is an error whatever its size
        _call.validate("aiter.gemm_fp8_mi350", inputs=inputs, outputs=outputs,
                       attributes=attributes, dispatch=dispatch)
        return jnp.zeros((m, n), jnp.bfloat16)
    return _call.call("aiter.gemm_fp8_mi350", inputs=inputs, outputs=outputs,
                      attributes=attributes, dispatch=dispatch)["out"]


@_partition.op("aiter.gemm_fp8_mi350",
               rule=lambda config, shapes: blockscale_rule(shapes, w_scale_k_major=False))
def _part_mi350(config, shards, xq, wq, x_scale, w_scale):
    return (_call_mi350(xq, wq, x_scale, w_scale, config),)


@functools.partial(jax.custom_vjp, nondiff_argnums=(4,))
def _gemm_fp8_mi350(xq, wq, x_scale, w_scale, config):
    return _part_mi350(config.value, xq, wq, x_scale, w_scale)[0]


def _no_grad(*_):
    raise TypeError("aiter.gemm_fp8_mi350 is an inference op: it has no gradient (differentiate "
                    "the bf16 model, e.g. jax_aiter.gemm or jnp.dot, instead)")


_gemm_fp8_mi350.defvjp(lambda xq, wq, xs, ws, config: _no_grad(),
                       lambda config, res, g: _no_grad())


def gemm_fp8_mi350(xq, wq: ShuffledWeight, x_scale, w_scale, *, kernel: str | None = None,
                   dispatch: Dispatch | None = None):
    """The FP8 block-scale GEMM of AITER's MI350 kernels (module docstring), bf16 out.

    Args:
      xq: fp8 ``[M, K]`` (``quantize_token_blocks``); K % 128 == 0.
      wq: the fp8 weight ``[N, K]`` as a ``ShuffledWeight`` in ``MI350_LAYOUT``
        (``shuffle_weight``); N % 128 == 0; the same fp8 dtype as xq.
      x_scale: f32 ``[K/128, M]``, K-block-major: the transpose of
        ``quantize_fp8_per_token_block``'s ``[M, K/128]`` (``quantize_token_blocks`` gives it).
      w_scale: f32 ``[N/128, K/128]`` (``quantize_fp8_per_block``'s, as it comes).

      Scale layouts are told apart by shape only: when M == K/128, an untransposed x_scale
      (``[M, K/128]``) has the expected shape and the op cannot tell (and when N == K, a
      transposed w_scale): the outputs are then silently wrong. One natural layout for every op
      is planned (the "one shape" refactor); until then this is the caller's to get right.
      kernel: force one of AITER's rows (``MI350_KERNELS``, e.g. "f8_block_scale_mi350_x64");
        None: x32 for M <= 32, x128 above (AITER's rule).
      dispatch: which tier runs the call (``jax_aiter.Dispatch``).
    Returns:
      bf16 ``[M, N]``.
    """
    op = "aiter.gemm_fp8_mi350"
    if not isinstance(wq, ShuffledWeight):
        raise TypeError(
            f"{op}: operand wq: expected a ShuffledWeight (jax_aiter.shuffle_weight(w, layout="
            f"{MI350_LAYOUT})), got {type(wq).__name__}: the kernels read a pre-shuffled weight, "
            "and a plain array is taken for an unshuffled one")
    if not wq.in_layout(MI350_LAYOUT):
        raise ValueError(f"{op}: operand wq: expected a weight shuffled in the layout "
                         f"{MI350_LAYOUT}, got one in {wq.layout!r}")
    xq = jnp.asarray(xq)
    if xq.ndim != 2 or wq.data.ndim != 2:
        raise ValueError(f"{op}: expected xq [M, K] and wq [N, K], got shapes {xq.shape} and "
                         f"{wq.data.shape}")
    m, k = xq.shape
    n = wq.data.shape[0]
    x_scale, w_scale = jnp.asarray(x_scale), jnp.asarray(w_scale)
    if k % _BLOCK or n % _BLOCK:
        raise ValueError(f"{op}: N={n} and K={k} must be multiples of 128 (the scale blocks)")
    if x_scale.shape != (k // _BLOCK, m):
        raise ValueError(f"{op}: operand x_scale: expected shape {(k // _BLOCK, m)} ([K/128, M], "
                         f"K-block-major), got {x_scale.shape}")
    if w_scale.shape != (n // _BLOCK, k // _BLOCK):
        raise ValueError(f"{op}: operand w_scale: expected shape {(n // _BLOCK, k // _BLOCK)} "
                         f"([N/128, K/128]), got {w_scale.shape}")
    config = Static((kernel or "", dispatch or Dispatch()))
    return _gemm_fp8_mi350(xq, wq.data, x_scale, w_scale, config)


def describe(m: int, n: int, k: int, kernel: str | None = None,
             dtype: str = "float8_e4m3fn") -> tuple[dict, dict]:
    """The call jax-aiter-plan describes for aiter.gemm_fp8_mi350: operands name -> (dtype,
    shape), attributes."""
    operands = {"xq": (dtype, (m, k)), "wq": (dtype, (n, k)),
                "x_scale": ("float32", (k // _BLOCK, m)),
                "w_scale": ("float32", (n // _BLOCK, k // _BLOCK)),
                "out": ("bfloat16", (m, n))}
    return operands, {"b_layout": "x".join(str(v) for v in MI350_LAYOUT), "kernel": kernel or ""}


def _plan(p, args):
    fp8 = jnp.dtype(fp8_dtype(args.asm_arch or args.arch)).name
    return ("aiter.gemm_fp8_mi350", *describe(args.m, args.n, args.k, args.kernel, fp8))


# jax-aiter-plan's commands for this op (tools.py finds them): name -> (the options a call needs,
# plan(parser, args) -> (target, operands, attributes)).
PLAN_COMMANDS = {"gemm_fp8_mi350": (("m", "n", "k"), _plan)}
