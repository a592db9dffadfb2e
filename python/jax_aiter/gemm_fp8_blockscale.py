"""The FP8 block-scale GEMM (``gemm_fp8_blockscale``): one op over AITER's three FP8 block-scale
families and our portable kernels. ``gemm_fp8_mi350`` and ``flatmm_fp8`` are thin wrappers of it
with ROCm/jax-aiter's signatures.

From a bf16 model in three lines (quantize and shuffle the weight once, at load time)::

    b, b_scale = quantize_fp8_per_block(w)                       # [N, K] -> fp8, f32 [N/128, K/128]
    b = shuffle_weight(b, FP8BS_LAYOUT)                           # ShuffledWeight in (16, 16)
    a, a_scale = quantize_fp8_per_token_block(x)                 # [..., K] -> fp8, f32 [..., K/128]
    y = gemm_fp8_blockscale(a, b, a_scale, b_scale)              # bf16 [..., N] (out_dtype=)

The math::

    out[m, n] = sum over K blocks kb of  (sum_{k in kb} a[m, k] b[n, k])
                                         * a_scale[m, kb] * b_scale[n // 128, kb]

each 128-wide block's dot product summed in f32, scaled, the blocks added in f32, rounded to
``out_dtype`` (bf16 or f16) once (once per split where AITER's fp8gemm_blockscale kernels split
K: the splits add into the bf16 output).

Operands and scales follow the quantized GEMMs' one convention (``jax_aiter.quant``): a_scale's
rows are a's rows ([M, K/128], as ``quantize_fp8_per_token_block`` makes it), b_scale's rows are
b's rows in 128-row blocks ([ceil(N/128), K/128], as ``quantize_fp8_per_block`` makes it). AITER's
kernels read a_scale K-block-major, [K/128, M] (its op tests pass
``x_scale.transpose(0, 1).contiguous()``): the op transposes it in the XLA graph (XLA fuses the
transpose into the quantizer where it can), so the custom call's a_scale is f32 [K/128, M].

The weight is pre-shuffled: AITER's ``shuffle_weight(w, layout=(16, 16))`` (the bytes of
jax_aiter's ``shuffle_weight(w, FP8BS_LAYOUT)``, the INT8 GEMM's permutation; ``jax_aiter.quant``
draws it), or ``shuffle_weight(w, "flatmm")``, FlatMM's view/permute, which for 1-byte elements
is the same permutation: the op takes either name. N % 16 == 0 (AITER's kernels: N % 128, or
N % 256 for FlatMM), K % 128 == 0.

Tiers, in order (``jax-aiter-plan gemm_fp8_blockscale``): AITER's ``fp8gemm_blockscale`` kernels
(gfx942, gfx950; bf16 out), its ``mi350`` kernels (gfx950; bf16 out; when the call asks for them:
``gemm_fp8_mi350``, or ``kernel=``), its ``flatmm`` kernel (gfx942; f16 out; the plan transposes
b_scale into the workspace first, since that kernel reads it K-block-major), then our portable
kernels (every arch, any M, N % 16, either out dtype). The fp8 format is the device's
(``jax_aiter.fp8_dtype()``): e4m3fnuz on gfx942 (MI300), e4m3fn on gfx950, NVIDIA and the CPU; a
tier whose kernels read the other format refuses the call (it never reinterprets bits).

``gemm_fp8_blockscale`` is an inference op: it has no gradient, and differentiating through it
raises.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp

from jax_aiter import _call, _partition
from jax_aiter._call import Dispatch, Static
from jax_aiter.quant import (FP8_BLOCK, ShuffledWeight, blockscale_rule, fp8_dtype,  # noqa: F401
                             quantize_fp8_blocks)

# What the package exports from this module (jax_aiter/__init__.py).
__all__ = ["FP8BS_LAYOUT", "gemm_fp8_blockscale"]

# The layout AITER's FP8 block-scale kernels read (kernels/shared/aiter_fp8gemm_blockscale.h).
FP8BS_LAYOUT = (16, 16)
# Both names of that layout's bytes for fp8: (16, 16) and FlatMM's (kernels/shared/aiter_flatmm.h).
LAYOUTS = (FP8BS_LAYOUT, "flatmm")
SCALE_BLOCK = FP8_BLOCK
OUT_DTYPES = (jnp.bfloat16, jnp.float16)

_NAME = "aiter.gemm_fp8_blockscale"


def _layout_phrase(layout) -> str:
    return f'the "{layout}" layout' if isinstance(layout, str) else f"the layout {layout}"


def _layout_attribute(layout) -> str:
    return layout if isinstance(layout, str) else "x".join(str(v) for v in layout)


def _call_gemm(a, b, a_scale_t, b_scale, config):
    out_dtype, layout, family, kernel, splitk, dispatch = config
    m, n = a.shape[0], b.shape[0]
    inputs = {"a": a, "b": b, "a_scale": a_scale_t, "b_scale": b_scale}
    outputs = {"out": ((m, n), out_dtype)}
    attributes = {"b_layout": layout, "family": family, "kernel": kernel, "splitk": splitk}
    if m == 0 or n == 0:  # validated first: bad input is an error whatever its size
        _call.validate(_NAME, inputs=inputs, outputs=outputs, attributes=attributes,
                       dispatch=dispatch)
        return jnp.zeros((m, n), out_dtype)
    return _call.call(_NAME, inputs=inputs, outputs=outputs, attributes=attributes,
                      dispatch=dispatch)["out"]


@_partition.op(_NAME, rule=lambda config, shapes: blockscale_rule(shapes))
def _part_gemm(config, shards, a, b, a_scale_t, b_scale):
    return (_call_gemm(a, b, a_scale_t, b_scale, config),)


@functools.partial(jax.custom_vjp, nondiff_argnums=(4,))
def _gemm(a, b, a_scale_t, b_scale, config):
    return _part_gemm(config.value, a, b, a_scale_t, b_scale)[0]


def _no_grad(*_):
    raise TypeError(f"{_NAME} is an inference op: it has no gradient (differentiate the bf16 "
                    "model, e.g. jax_aiter.gemm or jnp.dot, instead)")


_gemm.defvjp(lambda a, b, sa, sb, config: _no_grad(), lambda config, res, g: _no_grad())


def gemm_k_block_major(a, b: ShuffledWeight, a_scale_t, b_scale, *, op: str = _NAME,
                       names=("a", "b", "a_scale", "b_scale"), layouts=LAYOUTS,
                       out_dtype=jnp.bfloat16,
                       family: str = "", kernel: str | None = None, splitk: int | None = None,
                       dispatch: Dispatch | None = None):
    """The op on a 2-D ``a [M, K]`` and a_scale already K-block-major, ``[K/128, M]`` (what the
    kernels read): the one internal entry of ``gemm_fp8_blockscale`` and of the wrappers that
    take ROCm/jax-aiter's scale layouts (``gemm_fp8_mi350``, ``flatmm_fp8``), so no scale is
    transposed twice. ``op`` and ``names`` (a, b, a_scale, b_scale as the caller calls them) name
    the caller's function and operands in the errors raised here, ``layouts`` the weight layouts
    it takes (the first named in errors); ``family`` asks for one of AITER's families ("" any)."""
    an, bn, asn, bsn = names
    if not isinstance(b, ShuffledWeight):
        raise TypeError(
            f"{op}: operand {bn}: expected a ShuffledWeight (jax_aiter.shuffle_weight(w, "
            f"{layouts[0]!r})), got {type(b).__name__}: the kernels read a pre-shuffled weight, "
            "and a plain array is taken for an unshuffled one")
    layout = next((v for v in layouts if b.in_layout(v)), None)
    if layout is None:
        also = f" ({layouts[1]!r}, the same bytes, is taken too)" if len(layouts) > 1 else ""
        raise ValueError(f"{op}: operand {bn}: expected a weight shuffled in "
                         f"{_layout_phrase(layouts[0])}, got one in {b.layout!r}{also}")
    a = jnp.asarray(a)
    if a.ndim != 2 or b.data.ndim != 2:
        raise ValueError(f"{op}: expected {an} [M, K] and {bn} [N, K], got shapes {a.shape} and "
                         f"{b.data.shape}")
    m, k = a.shape
    n = b.data.shape[0]
    if k % SCALE_BLOCK:
        raise ValueError(f"{op}: operand {an}: K={k} is not a multiple of 128 (the scale blocks "
                         "along K)")
    kb, nb = k // SCALE_BLOCK, -(-n // SCALE_BLOCK)
    a_scale_t, b_scale = jnp.asarray(a_scale_t), jnp.asarray(b_scale)
    if a_scale_t.shape != (kb, m):
        hint = f" (it looks like [M, K/128]: pass {asn}.T)" if a_scale_t.shape == (m, kb) else ""
        raise ValueError(f"{op}: operand {asn}: expected shape {(kb, m)} ([K/128, M], "
                         f"K-block-major), got {a_scale_t.shape}{hint}")
    if b_scale.shape != (nb, kb):
        raise ValueError(f"{op}: operand {bsn}: expected shape {(nb, kb)} ([ceil(N/128), K/128]), "
                         f"got {b_scale.shape}")
    out_dtype = jnp.dtype(out_dtype)
    if out_dtype not in OUT_DTYPES:
        raise ValueError(f"{op}: out_dtype: expected bfloat16 or float16, got {out_dtype.name}")
    config = Static((out_dtype, _layout_attribute(layout), family, kernel or "",
                     None if splitk is None else int(splitk), dispatch or Dispatch()))
    return _gemm(a, b.data, a_scale_t, b_scale, config)


def gemm_fp8_blockscale(a, b: ShuffledWeight, a_scale, b_scale, *, out_dtype=jnp.bfloat16,
                        kernel: str | None = None, splitk: int | None = None,
                        dispatch: Dispatch | None = None):
    """``sum_kb (a_kb . b_kb^T) * a_scale[m, kb] * b_scale[n // 128, kb]`` as ``out_dtype``
    (AITER's FP8 block-scale kernels' contract; module docstring).

    Args:
      a: fp8 ``[..., K]`` (``quantize_fp8_per_token_block(x)``); K % 128 == 0.
      b: the fp8 weight ``[N, K]`` (same dtype as a) as a ``ShuffledWeight`` in ``FP8BS_LAYOUT``
        or ``"flatmm"`` (``shuffle_weight``); N % 16 == 0.
      a_scale: f32 ``[..., K/128]``: a's rows (the convention of ``jax_aiter.quant``); the op
        transposes it to the K-block-major ``[K/128, M]`` AITER's kernels read.
      b_scale: f32 ``[ceil(N/128), K/128]``: b's rows in 128-row blocks.

      Scale layouts are told apart by shape only: when M == K/128, an a_scale already transposed
      (``[K/128, M]``, as ``gemm_fp8_mi350`` and ``flatmm_fp8`` take it) has the expected shape
      and the op cannot tell: every output is then silently wrong. Pass the quantizer's scale as
      it comes.
      out_dtype: ``jnp.bfloat16`` (AITER's fp8gemm_blockscale and MI350 kernels) or
        ``jnp.float16`` (its FlatMM kernel); the portable kernels write either.
      kernel: one of AITER's kernels of the three families (AITER's kernelName, by symbol or
        short name, e.g. "fp8gemm_bf16_blockscale_BpreShuffle_64x128"); None lets the heuristic
        choose.
      splitk: K splits (AITER's splitK: 0 or 1 none, up to 16); None lets the heuristic choose.
        A tier that cannot run it exactly says so (no tier drops it).
      dispatch: which tier runs the call (``jax_aiter.Dispatch``).
    Returns:
      ``out_dtype`` ``[..., N]``.
    """
    a = jnp.asarray(a)
    if a.ndim < 1:
        raise ValueError(f"{_NAME}: expected a of rank >= 1, got shape {a.shape}")
    lead, k = a.shape[:-1], a.shape[-1]
    m = math.prod(lead)
    if k % SCALE_BLOCK:
        raise ValueError(f"{_NAME}: operand a: K={k} is not a multiple of 128 (the scale blocks "
                         "along K)")
    a_scale = jnp.asarray(a_scale)
    kb = k // SCALE_BLOCK
    if a_scale.shape != (*lead, kb):
        raise ValueError(f"{_NAME}: operand a_scale: expected shape {(*lead, kb)} (a's leading "
                         f"dims, K/128), got {a_scale.shape}")
    out = gemm_k_block_major(a.reshape(m, k), b, a_scale.reshape(m, kb).T, b_scale,
                             out_dtype=out_dtype, kernel=kernel, splitk=splitk, dispatch=dispatch)
    return out.reshape(*lead, out.shape[-1])


def describe(m: int, n: int, k: int, kernel: str | None = None, splitk: int | None = None,
             dtype="float8_e4m3fn", out_dtype="bfloat16", family: str = "") -> tuple[dict, dict]:
    """The call jax-aiter-plan describes for aiter.gemm_fp8_blockscale: operands name ->
    (dtype, shape) as the handler sees them (a_scale K-block-major), attributes."""
    kb, nb = k // SCALE_BLOCK, -(-n // SCALE_BLOCK)
    operands = {"a": (dtype, (m, k)), "b": (dtype, (n, k)), "a_scale": ("float32", (kb, m)),
                "b_scale": ("float32", (nb, kb)), "out": (jnp.dtype(out_dtype).name, (m, n))}
    return operands, {"b_layout": _layout_attribute(FP8BS_LAYOUT), "family": family,
                      "kernel": kernel or "", "splitk": splitk}


def _plan(p, args):
    fp8 = jnp.dtype(fp8_dtype(args.asm_arch or args.arch)).name
    return (_NAME, *describe(args.m, args.n, args.k, args.kernel, args.splitk, fp8,
                             args.out_dtype or "bfloat16"))


# jax-aiter-plan's commands for this op (tools.py finds them): name -> (the options a call needs,
# plan(parser, args) -> (target, operands, attributes)). --out-dtype float16 plans FlatMM's path.
PLAN_COMMANDS = {"gemm_fp8_blockscale": (("m", "n", "k"), _plan)}
