"""``flatmm_fp8``: ROCm/jax-aiter's FlatMM fp8 block-scale GEMM (f16 out), a thin wrapper of
``jax_aiter.gemm_fp8_blockscale`` (the one FP8 block-scale op, custom-call target
``aiter.gemm_fp8_blockscale``) for people switching from it; the FlatMM weight layout and its
quantizers.

From a bf16 model in three lines (quantize and lay out the weight once, at load time)::

    wq, w_scale = quantize_weight_blocks(w)         # w: [N, K] -> fp8 [N, K], f32 [K/128, N/128]
    w_flat = shuffle_weight(wq, "flatmm")           # ShuffledWeight in the FlatMM layout
    xq, x_scale = quantize_activation_blocks(x)     # x: [M, K] -> fp8 [M, K], f32 [K/128, M]
    y = flatmm_fp8(xq, w_flat, x_scale, w_scale)    # f16 [M, N]

The op: ``out[m, n] = sum over K blocks b of 128: x_scale[b, m] * w_scale[b, n // 128] *
sum_{k in block b} xq[m, k] * wq[n, k]``, in float32, rounded to f16 once.

Scales, in ROCm/jax-aiter's layouts. ``x_scale`` is ``[K/128, M]``, K-block-major, exactly as
AITER's kernel reads it (one value per row and 128-column block of x), passed to the kernels as
it is. Quantizers that make ``[M, K/128]`` (per-token groups, as DeepSeek-style recipes do) need a
transpose (``x_scale.T``); the op does not guess from the shape, which is ambiguous whenever
M == K/128. ``w_scale`` is ``[K/128, N/128]`` (one value per 128 x 128 block of w;
``ceil(N/128)`` columns when the portable tier takes N % 128 != 0): the wrapper transposes it to
the core's ``b_scale`` ``[ceil(N/128), K/128]`` (the quantized GEMMs' one convention, stated in
``jax_aiter.quant``), and a plan of AITER's kernel transposes it back into the workspace.

The FlatMM layout (``shuffle_weight(w, "flatmm")``), as AITER's op test for this kernel builds it
(``w.view(N/16, 16, K/64, 4, 16).permute(0, 2, 3, 1, 4)``; AITER's launcher calls the result
``[N/128, K*128]``: the same bytes). Every 16 rows of w become K/16 planes of 256 bytes::

    rows n0 .. n0+15 of w (n0 = 0, 16, ...), K/16 planes one after another:

      plane 0 (k 0 .. 15):    row n0: 16 bytes | row n0+1: 16 bytes | ... | row n0+15
      plane 1 (k 16 .. 31):   row n0: 16 bytes | row n0+1: 16 bytes | ... | row n0+15
      ...
      plane K/16 - 1

    byte of w[n, k] = ((n // 16) * (K // 16) + k // 16) * 256 + (n % 16) * 16 + k % 16

(For 1-byte elements this is the same permutation as ``shuffle_weight(w, (16, 16))``; the
"flatmm" name says which kernel the weight is for.) It needs N % 16 == 0 and K % 64 == 0.

fp8 format: the hardware decides (``jax_aiter.fp8_dtype()``): gfx942 reads ``float8_e4m3fnuz``,
NVIDIA ``float8_e4m3fn``; the CPU (host twins) takes either. The quantizers take ``dtype``.

Where it runs: the core's tiers, with AITER's FlatMM family asked for: AITER's kernel (gfx942
only) for N % 256 == 0 and K % 128 == 0; our portable kernels everywhere else (any M,
N % 16 == 0, K % 128 == 0; sm_90, gfx942, gfx950, CPU).
``flatmm_fp8`` is an inference op: differentiating through it raises.
"""

from __future__ import annotations

import jax.numpy as jnp

from jax_aiter._call import Dispatch
from jax_aiter.gemm_fp8_blockscale import describe as _describe_core
from jax_aiter.gemm_fp8_blockscale import gemm_k_block_major
from jax_aiter.quant import (ShuffledWeight, fp8_dtype, quantize_fp8_per_block,
                             quantize_fp8_per_token_block, register_layout)

# What the package exports from this module (jax_aiter/__init__.py).
__all__ = ["flatmm_fp8"]

FLATMM_LAYOUT = "flatmm"
BLOCK = 128  # the scale blocks: 128 columns of K (x), 128 x 128 (w)
FAMILY = "flatmm"
_OP = "jax_aiter.flatmm_fp8"

# AITER's FlatMM kernel (hsa/gfx942/flatmm_uk_gfx9_f16f8_128x256x128_1x4x1_16x16x32.co).
AITER_KERNEL = "flatmm_uk_gfx9_f16f8_128x256x128_1x4x1_16x16x32"


def _check_layout_shape(shape, what):
    if len(shape) < 2:
        raise ValueError(f"{what}: expected a weight [..., N, K], got shape {shape}")
    n, k = shape[-2:]
    if n % 16 != 0 or k % 64 != 0:
        raise ValueError(f"{what}: the FlatMM layout needs N % 16 == 0 and K % 64 == 0, got "
                         f"[N, K] = [{n}, {k}]")
    return n, k


def flatmm_shuffle(w):
    """w ``[..., N, K]`` -> the FlatMM layout (same shape and dtype): AITER's
    ``w.view(N/16, 16, K/64, 4, 16).permute(0, 2, 3, 1, 4)``."""
    w = jnp.asarray(w)
    n, k = _check_layout_shape(w.shape, "shuffle_weight")
    *lead, _, _ = w.shape
    r = len(lead)
    x = w.reshape(*lead, n // 16, 16, k // 64, 4, 16)
    x = jnp.transpose(x, (*range(r), r, r + 2, r + 3, r + 1, r + 4))
    return x.reshape(w.shape)


def flatmm_unshuffle(d):
    """The inverse of ``flatmm_shuffle``."""
    d = jnp.asarray(d)
    n, k = _check_layout_shape(d.shape, "unshuffle_weight")
    *lead, _, _ = d.shape
    r = len(lead)
    x = d.reshape(*lead, n // 16, k // 64, 4, 16, 16)
    x = jnp.transpose(x, (*range(r), r, r + 3, r + 1, r + 2, r + 4))
    return x.reshape(d.shape)


register_layout(FLATMM_LAYOUT, flatmm_shuffle, flatmm_unshuffle)


def quantize_activation_blocks(x, dtype=None):
    """Symmetric fp8 per (row, 128 columns) of ``x [M, K]`` (K % 128 == 0) -> ``(fp8 [M, K],
    f32 x_scale [K/128, M])``, the scale K-block-major as ``flatmm_fp8`` takes it
    (``quant.quantize_fp8_per_token_block`` with the scale transposed). ``dtype``: the fp8
    format (default ``fp8_dtype()``, the device's)."""
    q, s = quantize_fp8_per_token_block(x, dtype)
    return q, s.T


def quantize_weight_blocks(w, dtype=None):
    """Symmetric fp8 per 128 x 128 block of a weight ``w [N, K]`` (N % 128 == 0, K % 128 == 0)
    -> ``(fp8 [N, K], f32 w_scale [K/128, N/128])``, as ``flatmm_fp8`` takes them (lay wq out
    with ``shuffle_weight(wq, "flatmm")``; ``quant.quantize_fp8_per_block``, transposed)."""
    q, s = quantize_fp8_per_block(w, dtype)
    return q, s.T


# ---- flatmm_fp8 ------------------------------------------------------------------------------

def flatmm_fp8(xq, wq: ShuffledWeight, x_scale, w_scale, *, kernel: str | None = None,
               dispatch: Dispatch | None = None):
    """Block-scaled fp8 GEMM as f16 (AITER's ``flatmm_a8w8_blockscale_asm`` contract; module
    docstring for the layouts): ``gemm_fp8_blockscale`` with f16 out, x_scale K-block-major,
    w_scale transposed to the core's ``[ceil(N/128), K/128]`` and AITER's FlatMM family asked
    for.

    Args:
      xq: fp8 ``[M, K]`` (e4m3fn or e4m3fnuz; the device's: ``fp8_dtype()``), K % 128 == 0.
      wq: the fp8 weight ``[N, K]`` as a ``ShuffledWeight`` in the FlatMM layout
        (``shuffle_weight(w, "flatmm")``), same dtype as xq; N % 16 == 0 (N % 256 == 0 for
        AITER's kernel).
      x_scale: f32 ``[K/128, M]`` (K-block-major; transpose an ``[M, K/128]`` one).
      w_scale: f32 ``[K/128, ceil(N/128)]`` (the transpose of ``quantize_fp8_per_block``'s
        ``[N/128, K/128]``; ``quantize_weight_blocks`` gives it).

      Scale layouts are told apart by shape only: when M == K/128 an untransposed x_scale, and
      when ceil(N/128) == K/128 an untransposed w_scale, has the expected shape and the op cannot
      tell: the outputs are then silently wrong. ``gemm_fp8_blockscale`` takes the quantizers'
      layouts as they come.
      kernel: AITER's kernel by name (there is one, ``AITER_KERNEL``): forces the ASM tier.
      dispatch: which tier runs the call (``jax_aiter.Dispatch``).
    Returns:
      f16 ``[M, N]``.
    """
    xq, w_scale = jnp.asarray(xq), jnp.asarray(w_scale)
    if isinstance(wq, ShuffledWeight) and xq.ndim == 2 and wq.data.ndim == 2 and \
            xq.shape[1] % BLOCK == 0:
        kb, nb = xq.shape[1] // BLOCK, -(-wq.data.shape[0] // BLOCK)
        if w_scale.shape != (kb, nb):
            raise ValueError(f"{_OP}: operand w_scale: expected shape ({kb}, {nb}) "
                             f"([K/128, ceil(N/128)]), got {w_scale.shape}")
        w_scale = w_scale.T  # the core's b_scale, [ceil(N/128), K/128]
    return gemm_k_block_major(xq, wq, x_scale, w_scale, op=_OP,
                              names=("x", "w", "x_scale", "w_scale"), layouts=(FLATMM_LAYOUT,),
                              out_dtype=jnp.float16, family=FAMILY, kernel=kernel,
                              dispatch=dispatch)


def describe(m: int, n: int, k: int, dtype: str = "float8_e4m3fnuz",
             kernel: str | None = None) -> tuple[dict, dict]:
    """The call jax-aiter-plan describes for flatmm_fp8: aiter.gemm_fp8_blockscale's with f16
    out and the FlatMM family asked for (operands name -> (dtype, shape), attributes)."""
    operands, attributes = _describe_core(m, n, k, kernel, None, dtype, "float16", FAMILY)
    return operands, {**attributes, "b_layout": FLATMM_LAYOUT}


def _plan(p, args):
    fp8 = jnp.dtype(fp8_dtype(args.asm_arch or args.arch)).name
    return ("aiter.gemm_fp8_blockscale", *describe(args.m, args.n, args.k, fp8, args.kernel))


# jax-aiter-plan's commands for this op (tools.py finds them): name -> (the options a call needs,
# plan(parser, args) -> (target, operands, attributes)).
PLAN_COMMANDS = {"flatmm_fp8": (("m", "n", "k"), _plan)}
