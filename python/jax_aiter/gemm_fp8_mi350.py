"""``gemm_fp8_mi350``: ROCm/jax-aiter's MI350 (gfx950) FP8 block-scale GEMM, a thin wrapper of
``jax_aiter.gemm_fp8_blockscale`` (the one FP8 block-scale op, custom-call target
``aiter.gemm_fp8_blockscale``) for people switching from it.

From a bf16 model to this op in three lines (quantize and shuffle the weight once, at load time)::

    wq, w_scale = quantize_weight_blocks(w)          # w: [N, K] -> fp8 [N, K], f32 [N/128, K/128]
    w8 = shuffle_weight(wq)                          # ShuffledWeight in the (16, 16) layout
    xq, x_scale = quantize_token_blocks(x)           # x: [M, K] -> fp8 [M, K], f32 [K/128, M]
    y = gemm_fp8_mi350(xq, w8, x_scale, w_scale)     # bf16 [M, N]

What it computes (N and K multiples of 128): ``gemm_fp8_blockscale``'s product, bf16 out::

    out[m, n] = sum over kb < K/128 of  x_scale[kb, m] * w_scale[n // 128, kb]
                                        * sum_{k in block kb} xq[m, k] * wq[n, k]

The operands keep ROCm/jax-aiter's names and AITER's MI350 layouts (AITER's launcher
csrc/py_itfs_cu/asm_mi350_a8w8_blockscale.cu, deleted in 06de6e9aee, and its op test
op_tests/test_gemm_a8w8_blockscale_mi350.py, the one caller that checked values)::

    xq       fp8 [M, K]            the core's a
    wq       fp8 [N, K]            the core's b: shuffle_weight(wq), layout (16, 16)
    x_scale  f32 [K/128, M]        K-BLOCK-MAJOR, the transpose of the core's a_scale (passed to
                                   the kernels as it is: no transpose in the graph)
    w_scale  f32 [N/128, K/128]    the core's b_scale

(ROCm/jax-aiter's docstring and a comment in AITER's launcher say w_scale [K/128, N/128]; AITER's
op test passes the [N/128, K/128] array above, and so do we.) The quantized GEMMs' one convention
(a scale's rows follow its operand's rows) is stated in ``jax_aiter.quant``.

Tiers: the core's, with AITER's MI350 family asked for: its kernels on gfx950 when M >= 16 and
K >= 512 (x32 for M <= 32, else x128, AITER's rule; x64 and x96 by ``kernel=``); our portable
kernels for every other call, any M >= 1 (a one-token decode step runs). Which fp8: gfx950 and
NVIDIA read ``float8_e4m3fn`` (``jax_aiter.fp8_dtype()``); our portable kernels on gfx942 read
``float8_e4m3fnuz``; on the CPU either works (the MI350 twins, planned for gfx950, read e4m3fn).

``gemm_fp8_mi350`` is an inference op: differentiating through it raises.
"""

from __future__ import annotations

import jax.numpy as jnp

from jax_aiter._call import Dispatch
from jax_aiter.gemm_fp8_blockscale import describe as _describe_core
from jax_aiter.gemm_fp8_blockscale import gemm_k_block_major
from jax_aiter.quant import (ShuffledWeight, fp8_dtype, quantize_fp8_per_block,
                             quantize_fp8_per_token_block, shuffle_weight,  # noqa: F401
                             unshuffle_weight)

# What the package exports from this module (jax_aiter/__init__.py).
__all__ = ["gemm_fp8_mi350"]

# The layout AITER's MI350 kernels read wq in (kernels/shared/aiter_mi350.h).
MI350_LAYOUT = (16, 16)
# AITER's code objects (hsa/gfx950/<name>.co), by tile_m: 32, 64, 96, 128.
MI350_KERNELS = tuple(f"f8_block_scale_mi350_x{t}" for t in (32, 64, 96, 128))
FAMILY = "mi350"

_BLOCK = 128
_OP = "jax_aiter.gemm_fp8_mi350"


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


def gemm_fp8_mi350(xq, wq: ShuffledWeight, x_scale, w_scale, *, kernel: str | None = None,
                   dispatch: Dispatch | None = None):
    """The FP8 block-scale GEMM of AITER's MI350 kernels (module docstring), bf16 out:
    ``gemm_fp8_blockscale`` with x_scale K-block-major and the MI350 family asked for.

    Args:
      xq: fp8 ``[M, K]`` (``quantize_token_blocks``); K % 128 == 0.
      wq: the fp8 weight ``[N, K]`` as a ``ShuffledWeight`` in ``MI350_LAYOUT``
        (``shuffle_weight``); N % 128 == 0; the same fp8 dtype as xq.
      x_scale: f32 ``[K/128, M]``, K-block-major: the transpose of
        ``quantize_fp8_per_token_block``'s ``[M, K/128]`` (``quantize_token_blocks`` gives it).
      w_scale: f32 ``[N/128, K/128]`` (``quantize_fp8_per_block``'s, as it comes).

      Scale layouts are told apart by shape only: when M == K/128, an untransposed x_scale
      (``[M, K/128]``) has the expected shape and the op cannot tell (and when N == K, a
      transposed w_scale): the outputs are then silently wrong. ``gemm_fp8_blockscale`` takes the
      quantizers' layouts as they come.
      kernel: force one of AITER's rows (``MI350_KERNELS``, e.g. "f8_block_scale_mi350_x64");
        None: x32 for M <= 32, x128 above (AITER's rule).
      dispatch: which tier runs the call (``jax_aiter.Dispatch``).
    Returns:
      bf16 ``[M, N]``.
    """
    xq = jnp.asarray(xq)
    n = wq.data.shape[0] if isinstance(wq, ShuffledWeight) and wq.data.ndim == 2 else None
    if xq.ndim == 2 and n is not None and (xq.shape[1] % _BLOCK or n % _BLOCK):
        raise ValueError(f"{_OP}: N={n} and K={xq.shape[1]} must be multiples of 128 (the scale "
                         "blocks)")
    return gemm_k_block_major(xq, wq, x_scale, w_scale, op=_OP,
                              names=("xq", "wq", "x_scale", "w_scale"), layouts=(MI350_LAYOUT,),
                              family=FAMILY, kernel=kernel, dispatch=dispatch)


def describe(m: int, n: int, k: int, kernel: str | None = None,
             dtype: str = "float8_e4m3fn") -> tuple[dict, dict]:
    """The call jax-aiter-plan describes for gemm_fp8_mi350: aiter.gemm_fp8_blockscale's, with
    the MI350 family asked for (operands name -> (dtype, shape), attributes)."""
    return _describe_core(m, n, k, kernel, None, dtype, "bfloat16", FAMILY)


def _plan(p, args):
    fp8 = jnp.dtype(fp8_dtype(args.asm_arch or args.arch)).name
    return ("aiter.gemm_fp8_blockscale", *describe(args.m, args.n, args.k, args.kernel, fp8))


# jax-aiter-plan's commands for this op (tools.py finds them): name -> (the options a call needs,
# plan(parser, args) -> (target, operands, attributes)).
PLAN_COMMANDS = {"gemm_fp8_mi350": (("m", "n", "k"), _plan)}
