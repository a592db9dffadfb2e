"""AITER's FP8 block-scale GEMM (``gemm_fp8_blockscale``) and the block quantizers it needs.

From a bf16 model in three lines (quantize and shuffle the weight once, at load time)::

    wq, w_scale = quantize_fp8_blocks(w, block=(128, 128))  # [N, K] -> fp8, f32 [N/128, K/128]
    w_fp8 = shuffle_weight(wq, FP8BS_LAYOUT)                # ShuffledWeight in (16, 16)
    xq, x_scale = quantize_fp8_blocks(x)                    # [..., K] -> fp8, f32 [..., K/128]
    y = gemm_fp8_blockscale(xq, w_fp8, x_scale, w_scale)    # bf16 [..., N]

The math::

    out[m, n] = sum over K blocks kb of  (sum_{k in kb} a[m, k] b[n, k])
                                         * a_scale[m, kb] * b_scale[n // 128, kb]

each 128-wide block's dot product summed in f32, scaled, the blocks added in f32, rounded to
bf16 once (once per split where the ASM tier splits K: the splits add into the bf16 output).

Scales::

    a_scale: f32 [M, K/128]       one per (token, 128 columns of K)     (quantize_fp8_blocks(x))
    b_scale: f32 [N/128, K/128]   one per 128 x 128 block of the weight (block=(128, 128))

    AITER's ASM kernels read a_scale K-block-major, [K/128, M] in memory (its op test passes
    ``x_scale.transpose(0, 1).contiguous()``); this function takes the natural [M, K/128] and
    transposes it in JAX (XLA fuses the transpose into the quantizer where it can). b_scale is
    read as given, row-major [N/128, K/128].

The weight is read in AITER's ``shuffle_weight(w, layout=(16, 16))`` (the bytes of jax_aiter's
``shuffle_weight(w, FP8BS_LAYOUT)``, the same permutation as the INT8 GEMM's; module
``jax_aiter.quant`` draws it): each 16-row x 32-column block of w becomes two planes of 16 rows
x 16 bytes::

      plane 0 (k0 .. k0+15):   row n0: 16 bytes | row n0+1: 16 bytes | ... | row n0+15
      plane 1 (k0+16 .. +31):  row n0: 16 bytes | row n0+1: 16 bytes | ... | row n0+15

    blocks follow one another along K first (k0 = 0, 32, ...), then along N (n0 = 0, 16, ...).

The fp8 format is the device's (``jax_aiter.fp8_dtype()``): e4m3fnuz on gfx942 (MI300), e4m3fn
on gfx950, NVIDIA and the CPU. The quantizers use it by default; a tier whose kernels read the
other format refuses the call (it never reinterprets bits). N % 128 == 0 and K % 128 == 0.

``gemm_fp8_blockscale`` is an inference op: it has no gradient, and differentiating through it
raises.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from jax_aiter import _call, _partition
from jax_aiter._call import Dispatch, Static
from jax_aiter.quant import (ShuffledWeight, blockscale_rule, fp8_dtype,  # noqa: F401
                             quantize_fp8_blocks)

# What the package exports from this module (jax_aiter/__init__.py).
__all__ = ["FP8BS_LAYOUT", "gemm_fp8_blockscale"]

# The layout AITER's FP8 block-scale kernels read (kernels/shared/aiter_fp8gemm_blockscale.h).
FP8BS_LAYOUT = (16, 16)
SCALE_BLOCK = 128

_NAME = "aiter.gemm_fp8_blockscale"


# ---- gemm_fp8_blockscale ---------------------------------------------------------------------

def _call_gemm(a, b, a_scale_t, b_scale, config):
    kernel, splitk, dispatch = config
    m, n = a.shape[0], b.shape[0]
    inputs = {"a": a, "b": b, "a_scale": a_scale_t, "b_scale": b_scale}
    outputs = {"out": ((m, n), jnp.bfloat16)}
    attributes = {"b_layout": "x".join(str(v) for v in FP8BS_LAYOUT), "kernel": kernel,
                  "splitk": splitk}
    if m == 0 or n == 0:  # validated first: bad input is an error whatever its size
        _call.validate(_NAME, inputs=inputs, outputs=outputs, attributes=attributes,
                       dispatch=dispatch)
        return jnp.zeros((m, n), jnp.bfloat16)
    return _call.call(_NAME, inputs=inputs, outputs=outputs, attributes=attributes,
                      dispatch=dispatch)["out"]


@_partition.op(_NAME, rule=lambda config, shapes: blockscale_rule(shapes, w_scale_k_major=False))
def _part_gemm(config, shards, a, b, a_scale_t, b_scale):
    return (_call_gemm(a, b, a_scale_t, b_scale, config),)


@functools.partial(jax.custom_vjp, nondiff_argnums=(4,))
def _gemm(a, b, a_scale_t, b_scale, config):
    return _part_gemm(config.value, a, b, a_scale_t, b_scale)[0]


def _no_grad(*_):
    raise TypeError(f"{_NAME} is an inference op: it has no gradient (differentiate the bf16 "
                    "model, e.g. jax_aiter.gemm or jnp.dot, instead)")


_gemm.defvjp(lambda a, b, sa, sb, config: _no_grad(), lambda config, res, g: _no_grad())


def gemm_fp8_blockscale(a, b: ShuffledWeight, a_scale, b_scale, *, kernel: str | None = None,
                        splitk: int | None = None, dispatch: Dispatch | None = None):
    """``sum_kb (a_kb . w_kb^T) * a_scale[m, kb] * b_scale[n // 128, kb]`` as bf16 (AITER's
    ``gemm_a8w8_blockscale_bpreshuffle_asm`` contract; module docstring).

    Args:
      a: fp8 ``[..., K]`` (``quantize_fp8_blocks(x)``); K % 128 == 0.
      b: the fp8 weight ``[N, K]`` (same dtype as a) as a ``ShuffledWeight`` in ``FP8BS_LAYOUT``
        (``shuffle_weight``); N % 128 == 0.
      a_scale: f32 ``[..., K/128]`` (a's leading dims), natural layout: transposed here to the
        K-block-major ``[K/128, M]`` AITER's kernels read.
      b_scale: f32 ``[N/128, K/128]``.

      Scale layouts are told apart by shape only: when M == K/128, an a_scale already transposed
      (``[K/128, M]``, as ``gemm_fp8_mi350`` and ``flatmm_fp8`` take it) has the expected shape
      and the op cannot tell: every output is then silently wrong. Pass the quantizer's scale
      as it comes (``quantize_fp8_per_token_block``: ``[M, K/128]``). One natural layout for
      every op is planned (the "one shape" refactor); until then this is the caller's to get
      right.
      kernel: an AITER fp8gemm_blockscale kernel to use (AITER's kernelName, by symbol or short
        name, e.g. "fp8gemm_bf16_blockscale_BpreShuffle_64x128"); None lets the heuristic choose.
      splitk: K splits (AITER's splitK: 0 or 1 none, up to 16); None lets the heuristic
        choose. A tier that cannot run it exactly says so (no tier drops it).
      dispatch: which tier runs the call (``jax_aiter.Dispatch``).
    Returns:
      bf16 ``[..., N]``.
    """
    if not isinstance(b, ShuffledWeight):
        raise TypeError(
            f"{_NAME}: operand b: expected a ShuffledWeight (jax_aiter.shuffle_weight(w, "
            f"layout={FP8BS_LAYOUT})), got {type(b).__name__}: the kernels read a pre-shuffled "
            "weight, and a plain array is taken for an unshuffled one")
    if not b.in_layout(FP8BS_LAYOUT):
        raise ValueError(f"{_NAME}: operand b: expected a weight shuffled in the layout "
                         f"{FP8BS_LAYOUT}, got one in {b.layout}")
    a = jnp.asarray(a)
    if a.ndim < 1 or b.data.ndim != 2:
        raise ValueError(f"{_NAME}: expected a of rank >= 1 and b of rank 2, got shapes "
                         f"{a.shape} and {b.data.shape}")
    lead, k = a.shape[:-1], a.shape[-1]
    n = b.data.shape[0]
    if n % SCALE_BLOCK or k % SCALE_BLOCK:
        raise ValueError(f"{_NAME}: N and K must be multiples of 128 (the scale blocks), got "
                         f"N={n}, K={k}")
    m = math.prod(lead)
    kb = k // SCALE_BLOCK
    a_scale = jnp.asarray(a_scale)
    if a_scale.shape != (*lead, kb):
        raise ValueError(f"{_NAME}: operand a_scale: expected shape {(*lead, kb)} (a's leading "
                         f"dims, K/128), got {a_scale.shape}")
    b_scale = jnp.asarray(b_scale)
    if b_scale.shape != (n // SCALE_BLOCK, kb):
        raise ValueError(f"{_NAME}: operand b_scale: expected shape {(n // SCALE_BLOCK, kb)} "
                         f"(N/128, K/128), got {b_scale.shape}")
    config = Static((kernel or "", None if splitk is None else int(splitk), dispatch or Dispatch()))
    a_scale_t = a_scale.reshape(m, kb).T  # AITER's K-block-major [K/128, M]
    out = _gemm(a.reshape(m, k), b.data, a_scale_t, b_scale, config)
    return out.reshape(*lead, n)


def describe(m: int, n: int, k: int, kernel: str | None = None, splitk: int | None = None,
             dtype="float8_e4m3fn") -> tuple[dict, dict]:
    """The call jax-aiter-plan describes for aiter.gemm_fp8_blockscale: operands name ->
    (dtype, shape) as the handler sees them (a_scale K-block-major), attributes."""
    kb, nb = k // SCALE_BLOCK, n // SCALE_BLOCK
    operands = {"a": (dtype, (m, k)), "b": (dtype, (n, k)), "a_scale": ("float32", (kb, m)),
                "b_scale": ("float32", (nb, kb)), "out": ("bfloat16", (m, n))}
    return operands, {"b_layout": "x".join(str(v) for v in FP8BS_LAYOUT), "kernel": kernel or "",
                      "splitk": splitk}


def _plan(p, args):
    fp8 = jnp.dtype(fp8_dtype(args.asm_arch or args.arch)).name
    return ("aiter.gemm_fp8_blockscale", *describe(args.m, args.n, args.k, args.kernel,
                                                   args.splitk, fp8))


# jax-aiter-plan's commands for this op (tools.py finds them): name -> (the options a call needs,
# plan(parser, args) -> (target, operands, attributes)).
PLAN_COMMANDS = {"gemm_fp8_blockscale": (("m", "n", "k"), _plan)}
