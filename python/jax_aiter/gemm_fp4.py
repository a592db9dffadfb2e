"""FP4 (MXFP4, a4w4) GEMM: ``gemm_fp4``, MX quantization, and the layouts AITER's kernels read.

From a bf16 model to AITER's FP4 GEMM in a few lines (quantize and shuffle the weight once, at
load time; the activations' scales are shuffled inside ``gemm_fp4``)::

    wq, ws = quantize_mxfp4(w)                     # w: [N, K] -> u8 [N, K/2], e8m0 [N, K/32]
    w4, ws4 = shuffle_fp4_weight(wq), shuffle_weight(ws, "e8m0_shuffle")
    xq, xs = quantize_mxfp4(x)                     # x: [..., K] -> u8 [..., K/2], [..., K/32]
    y = gemm_fp4(xq, w4, xs, ws4)                  # bf16 [..., N]

MXFP4 (OCP Microscaling Formats v1.0): each block of 32 consecutive values along K shares one
e8m0 scale (a power of two, 2^(code - 127); code 255 is NaN), and each value is an e2m1 float
(0, ±0.5, ±1, ±1.5, ±2, ±3, ±4, ±6). Two e2m1 codes share a byte, **low nibble first**: byte j of
a row holds k = 2j in bits 0-3 and k = 2j + 1 in bits 4-7 (AITER's ``mxfp4_to_f32``). So
dequant(x)[r][k] = e2m1(x[r][k]) * 2^(scale[r][k // 32] - 127).

Layouts (AITER, github.com/ROCm/aiter e4048607a535, ``aiter/ops/shuffle.py``):

* the weight B, fp4x2 bytes ``[N, K/2]``: AITER's ``shuffle_weight(w, layout=(16, 16))`` on the
  packed bytes, i.e. the INT8 GEMM's (16, 16) layout with a byte for two values
  (``jax_aiter.quant``): each block of 16 rows x 32 bytes (64 values) becomes two 256-byte planes,
  bytes 0-15 of the 16 rows, then bytes 16-31; every 16-byte chunk is the 32 values of one scale
  block::

      B block (rows n0..n0+15, bytes kb0..kb0+31):
        plane 0: row n0 bytes kb0..+15 | row n0+1 bytes kb0..+15 | ... | row n0+15
        plane 1: row n0 bytes kb0+16..+31 | ...                    | row n0+15
      blocks follow one another along K first, then along N.

* the e8m0 scales ``[rows, K/32]`` (``"e8m0_shuffle"``, AITER's ``e8m0_shuffle``/
  ``shuffle_scale``): padded to ``[roundup(rows, 256), roundup(K/32, 8)]`` with 127 (= 1.0; AITER
  leaves the padding uninitialised), then each block of 32 rows x 8 columns becomes 256
  contiguous bytes, ordered (column % 4, row % 16, (column % 8) // 4, (row % 32) // 16), blocks
  along K first, then along rows::

      scale (r, c), r = 32 i0 + 16 i1 + i2, c = 8 j0 + 4 j1 + j2 ->
      byte ((((i0 * sn/8 + j0) * 4 + j2) * 16 + i2) * 2 + j1) * 2 + i1     (sn = padded K/32)

      one 32x8 block:  j2=0: [i2=0: (j1=0: i1=0,1) (j1=1: i1=0,1)] [i2=1: ...] ... [i2=15]
                       j2=1: ...   j2=2: ...   j2=3: ...                 (4 x 16 x 2 x 2 bytes)

  ``unshuffle_weight`` of a shuffled scale gives the padded ``[roundup(rows, 256),
  roundup(K/32, 8)]`` array; slice ``[:rows, :K // 32]`` for the original.

Which B: a ``ShuffledWeight`` in ``FP4_LAYOUT`` (``shuffle_fp4_weight``) runs AITER's 34
``BpreShuffle`` kernels; a plain uint8 ``[N, K/2]`` array is taken as an unshuffled weight and runs
AITER's one ``noBpreShuffle_256x256`` kernel (or ours). The type says which, so neither is taken
for the other. The scales are always read in the ``"e8m0_shuffle"`` layout (both AITER paths);
``gemm_fp4`` shuffles a plain ``[rows, K/32]`` scale itself and takes a shuffled one as is (the
quantized GEMMs' one convention, ``jax_aiter.quant``: each scale as its quantizer makes it).

Not exposed: AITER's C (bias f32 ``[M, N]``), alpha and beta (AITER's Python documents the bias
as ``[1, N]`` while the kernel reads ``[M, N]`` rows at out's stride, and AITER's own tests never
pass one); we pass C = null, alpha = 1, beta = 0 as its ``gemm_a4w4`` does. Scale or add a bias
to the bf16 result in JAX (XLA fuses it).

``gemm_fp4`` is an inference op: it has no gradient, and differentiating through it raises.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from jax_aiter import _call, _partition
from jax_aiter._call import Dispatch, Static
from jax_aiter.quant import ShuffledWeight, register_layout, shuffle_weight

# What the package exports from this module (jax_aiter/__init__.py).
__all__ = ["dequantize_mxfp4", "e8m0_shuffle", "e8m0_unshuffle", "gemm_fp4", "quantize_mxfp4",
           "shuffle_fp4_weight"]

FP4_LAYOUT = (16, 16)  # AITER's shuffle_weight layout on the packed bytes
SCALE_LAYOUT = "e8m0_shuffle"
BLOCK = 32  # values per e8m0 scale

_E2M1_MAX = 6.0
_E2M1_EMAX = 2  # 6 = 1.5 * 2^2
_OUT_ROWS = 32  # AITER's kernels write whole 32-row groups of out


def _round_up(x, m):
    return (x + m - 1) // m * m


# ---- MX quantization --------------------------------------------------------------------------

def quantize_mxfp4(x, rounding: str = "floor"):
    """MXFP4 quantization along the last axis: ``x [..., K]`` (K % 32 == 0) ->
    ``(u8 [..., K/2] fp4x2 low nibble first, u8 [..., K/32] e8m0 scales)``.

    Per block of 32: ``rounding="floor"`` is the OCP MX rule, scale = 2^(floor(log2 amax) - 2)
    (values above 6 * scale saturate to ±6); ``"ceil"`` is AITER's default (RoundUp), scale =
    2^ceil(log2(amax / 6)) (never saturates). An all-zero block gets scale 1 (code 127). Values
    are rounded to the nearest e2m1 value, ties to even.

    NaN and Inf propagate: a block holding a NaN or ±Inf gets the NaN scale (e8m0 code 255) and
    codes 0, so every value dequantized from it, and every ``gemm_fp4`` output that reads it, is
    NaN (never a silently saturated block).
    """
    if rounding not in ("floor", "ceil"):
        raise ValueError(f"quantize_mxfp4: rounding must be 'floor' or 'ceil', got {rounding!r}")
    x = jnp.asarray(x)
    if x.ndim < 1:
        raise ValueError(f"quantize_mxfp4: operand x: expected [..., K] with K % {BLOCK} == 0, "
                         f"got a scalar")
    if x.shape[-1] % BLOCK != 0:
        raise ValueError(f"quantize_mxfp4: K={x.shape[-1]} is not a multiple of {BLOCK}")
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(jnp.float32)
    packed, scales = _quantize(x, rounding)
    return packed.astype(jnp.uint8), scales.astype(jnp.uint8)


# The codes leave the custom_vjp as float32 (exact below 256) and become uint8 outside: JAX calls
# the forward rule, and so raises, only for a function with floating outputs.
@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
def _quantize(x, rounding):
    packed, scales = _quantize_impl(x, rounding)
    return packed.astype(jnp.float32), scales.astype(jnp.float32)


def _no_quantize_grad(*_):
    raise TypeError("aiter.gemm_fp4 is an inference op: it has no gradient (quantize_mxfp4 rounds "
                    "to fp4 codes; differentiate the bf16 model, e.g. jax_aiter.gemm or jnp.dot, "
                    "instead)")


_quantize.defvjp(lambda x, rounding: _no_quantize_grad(),
                 lambda rounding, res, g: _no_quantize_grad())


def _quantize_impl(x, rounding):
    x = x.astype(jnp.float32)
    k = x.shape[-1]
    blocks = x.reshape(*x.shape[:-1], k // BLOCK, BLOCK)
    amax = jnp.max(jnp.abs(blocks), axis=-1, keepdims=True)
    if rounding == "floor":
        _, e = jnp.frexp(amax)  # amax = f * 2^e, f in [0.5, 1): floor(log2 amax) = e - 1
        exp = e - 1 - _E2M1_EMAX
    else:  # "ceil"
        f, e = jnp.frexp(amax / _E2M1_MAX)
        exp = jnp.where(f == 0.5, e - 1, e)  # exact powers of two stay
    exp = jnp.where(amax > 0, jnp.clip(exp, -127, 127), 0)
    bad = ~jnp.all(jnp.isfinite(blocks), axis=-1, keepdims=True)  # NaN scale, codes 0
    exp = jnp.where(bad, 0, exp)
    scale = jnp.ldexp(jnp.float32(1.0), exp)
    v = jnp.minimum(jnp.abs(blocks) / scale, _E2M1_MAX)
    step = jnp.where(v < 2, 0.5, jnp.where(v < 4, 1.0, 2.0))
    r = jnp.round(v / step) * step  # ties to even on the e2m1 grid
    mag = jnp.where(r < 2, r * 2, jnp.where(r < 4, r + 2, r / 2 + 4)).astype(jnp.uint8)
    code = jnp.where((blocks < 0) & (mag > 0), mag | 8, mag).astype(jnp.uint8)
    code = jnp.where(bad, 0, code).astype(jnp.uint8)
    code = code.reshape(*x.shape[:-1], k // 2, 2)
    packed = (code[..., 0] | (code[..., 1] << 4)).astype(jnp.uint8)
    scales = jnp.where(bad[..., 0], 255, exp[..., 0] + 127).astype(jnp.uint8)
    return packed, scales


_E2M1_TABLE = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6], np.float32)


def dequantize_mxfp4(q, scales):
    """The inverse of ``quantize_mxfp4`` (exact): ``(u8 [..., K/2], e8m0 [..., K/32])`` ->
    f32 ``[..., K]``. The scales as plain (unshuffled) ``[..., K/32]``."""
    q = jnp.asarray(q).astype(jnp.uint8)
    s = _as_u8(jnp.asarray(scales), "dequantize_mxfp4: operand scales")
    codes = jnp.stack([q & 15, q >> 4], axis=-1).reshape(*q.shape[:-1], q.shape[-1] * 2)
    vals = jnp.asarray(_E2M1_TABLE)[codes.astype(jnp.int32)]
    sf = jnp.where(s == 255, jnp.nan, jnp.ldexp(jnp.float32(1.0), s.astype(jnp.int32) - 127))
    return vals * jnp.repeat(sf, BLOCK, axis=-1)


def _as_u8(s, what: str = "e8m0 scales"):
    if s.dtype == jnp.uint8:
        return s
    if s.dtype == jnp.float8_e8m0fnu:
        return jax.lax.bitcast_convert_type(s, jnp.uint8)
    raise TypeError(f"{what}: expected e8m0 scales as uint8 or float8_e8m0fnu (quantize_mxfp4's), "
                    f"got {s.dtype}")


# ---- layouts ----------------------------------------------------------------------------------

def e8m0_shuffle(s):
    """AITER's ``e8m0_shuffle`` as a JAX function: ``[rows, K/32]`` e8m0 (uint8) ->
    ``[roundup(rows, 256), roundup(K/32, 8)]`` in the shuffled layout (module docstring)."""
    s = _as_u8(jnp.asarray(s), "e8m0_shuffle: operand s")
    if s.ndim != 2:
        raise ValueError(f"e8m0_shuffle: expected scales [rows, K/32], got shape {s.shape}")
    m, n = s.shape
    sm, sn = _round_up(m, 256), _round_up(n, 8)
    s = jnp.pad(s, ((0, sm - m), (0, sn - n)), constant_values=127)
    x = s.reshape(sm // 32, 2, 16, sn // 8, 2, 4).transpose(0, 3, 5, 2, 4, 1)
    return x.reshape(sm, sn)


def e8m0_unshuffle(s):
    """The inverse of ``e8m0_shuffle``: the padded ``[roundup(rows, 256), roundup(K/32, 8)]``."""
    s = _as_u8(jnp.asarray(s), "e8m0_unshuffle: operand s")
    if s.ndim != 2:
        raise ValueError(f"e8m0_unshuffle: expected a shuffled scale [256 i, 8 j], got {s.shape}")
    sm, sn = s.shape
    if sm % 256 != 0 or sn % 8 != 0:
        raise ValueError(f"e8m0_unshuffle: expected a shuffled scale [256 i, 8 j], got {s.shape}")
    x = s.reshape(sm // 32, sn // 8, 4, 16, 2, 2).transpose(0, 5, 3, 1, 4, 2)
    return x.reshape(sm, sn)


register_layout(SCALE_LAYOUT, e8m0_shuffle, e8m0_unshuffle)


def shuffle_fp4_weight(wq) -> ShuffledWeight:
    """The packed fp4x2 weight ``u8 [N, K/2]`` (N % 16 == 0, K % 64 == 0) in ``FP4_LAYOUT``: AITER's
    ``shuffle_weight(w, layout=(16, 16))`` on the bytes (``unshuffle_weight`` inverts it)."""
    wq = jnp.asarray(wq)
    if wq.dtype != jnp.uint8:
        raise TypeError(f"shuffle_fp4_weight: expected packed fp4x2 as uint8, got {wq.dtype}")
    return shuffle_weight(wq, FP4_LAYOUT)


# ---- gemm_fp4 ---------------------------------------------------------------------------------

def _call_gemm_fp4(a, b, a_scale, b_scale, config):
    b_layout, kernel, splitk, dispatch = config
    m, n = a.shape[0], b.shape[0]
    inputs = {"a": a, "b": b, "a_scale": a_scale, "b_scale": b_scale}
    outputs = {"out": ((m, n), jnp.bfloat16)}
    attributes = {"b_layout": b_layout, "kernel": kernel, "splitk": splitk}
    if m == 0 or n == 0:  # validated first: bad input is an error whatever its size
        _call.validate("aiter.gemm_fp4", inputs=inputs, outputs=outputs, attributes=attributes,
                       dispatch=dispatch)
        return jnp.zeros((m, n), jnp.bfloat16)
    return _call.call("aiter.gemm_fp4", inputs=inputs, outputs=outputs, attributes=attributes,
                      dispatch=dispatch)["out"]


# Partitioning (jax_aiter._partition): the call takes the scales as given (plain [rows, K/32], or
# already shuffled) and shuffles plain ones per shard, so rows of a (M) split -> local, each shard
# shuffling its own scale rows and padding its own M. N split -> local in whole 16-row blocks of
# the weight's layout, and, with a pre-shuffled b_scale (rows padded to 256), only where every
# shard holds whole 256-row blocks of it (N % (256 x shards) == 0; else gathered). K is never
# split (the shuffled layouts interleave it). A pre-shuffled a_scale keeps M whole.

def _fp4_rule(config, shapes):
    a, b, a_scale, b_scale = shapes
    b_layout, a_shuffled, b_shuffled = config[0], config[5], config[6]
    F, R = _partition.Factor, _partition.REPLICATE
    n = b[0]
    n_block = 1 if b_layout == "none" else FP4_LAYOUT[0]
    if b_shuffled:
        n_block = _OUT_ROWS * 8 if b_scale[0] == n else n_block  # 256 rows of shuffled scale
    factors = {"m": F(a[0], R if a_shuffled else _partition.LOCAL), "kh": F(a[1], R),
               "n": F(n, R if b_shuffled and b_scale[0] != n else _partition.LOCAL,
                      block=n_block),
               "ka": F(a_scale[1], R), "kb": F(b_scale[1], R), "ms": F(a_scale[0], R),
               "ns": F(b_scale[0], R)}
    sa = (("ms",), ("ka",)) if a_shuffled else (("m",), ("ka",))
    sb = (("n",) if b_scale[0] == n else ("ns",), ("kb",))
    operands = ((("m",), ("kh",)), (("n",), ("kh",)), sa, sb)
    return _partition.Rule(operands, ((("m",), ("n",)),), factors)


@_partition.op("aiter.gemm_fp4", rule=_fp4_rule)
def _part_gemm_fp4(config, shards, a, b, a_scale, b_scale):
    b_layout, kernel, splitk, dispatch, pad, a_shuffled, b_shuffled = config
    m = a.shape[0]
    sa = a_scale if a_shuffled else e8m0_shuffle(a_scale)
    sb = b_scale if b_shuffled else e8m0_shuffle(b_scale)
    mp = _round_up(m, _OUT_ROWS) if pad else m  # the shuffled scale's rows cover mp already
    if mp != m:
        a = jnp.pad(a, ((0, mp - m), (0, 0)))
    out = _call_gemm_fp4(a, b, sa, sb, (b_layout, kernel, splitk, dispatch))
    return (out[:m],)


@functools.partial(jax.custom_vjp, nondiff_argnums=(4,))
def _gemm_fp4(a, b, a_scale, b_scale, config):
    return _part_gemm_fp4(config.value, a, b, a_scale, b_scale)[0]


def _no_grad(*_):
    raise TypeError("aiter.gemm_fp4 is an inference op: it has no gradient (differentiate the "
                    "bf16 model, e.g. jax_aiter.gemm or jnp.dot, instead)")


_gemm_fp4.defvjp(lambda a, b, sa, sb, config: _no_grad(), lambda config, res, g: _no_grad())


def _scale_operand(s, rows, k, name):
    """A scale operand as the call takes it (u8) and whether it is shuffled already: a plain
    [rows, K/32] one, or a ShuffledWeight in SCALE_LAYOUT of shape [roundup(rows, 256),
    roundup(K/32, 8)]."""
    want = (_round_up(rows, 256), _round_up(k // BLOCK, 8))
    if isinstance(s, ShuffledWeight):
        if s.layout != SCALE_LAYOUT:
            raise ValueError(f"aiter.gemm_fp4: operand {name}: expected scales shuffled in "
                             f"{SCALE_LAYOUT!r}, got layout {s.layout!r}")
        d = _as_u8(s.data, f"aiter.gemm_fp4: operand {name}")
        if d.shape != want:
            raise ValueError(f"aiter.gemm_fp4: operand {name}: expected a shuffled scale of shape "
                             f"{want}, got {d.shape}")
        return d, True
    s = _as_u8(jnp.asarray(s), f"aiter.gemm_fp4: operand {name}")
    if s.shape != (rows, k // BLOCK):
        raise ValueError(f"aiter.gemm_fp4: operand {name}: expected plain e8m0 scales of shape "
                         f"{(rows, k // BLOCK)} (or a ShuffledWeight in {SCALE_LAYOUT!r}), got "
                         f"{s.shape}")
    return s, False


def _may_run_aiter(dispatch: Dispatch) -> bool:
    """Whether the call may reach AITER's kernels (or their twins), which write whole 32-row groups
    of out: then a's rows are padded to a multiple of 32 and the result sliced. Not for the
    portable tier, and not for a plan off AMD that names no gfx950 (our kernels need no padding)."""
    if dispatch.tier == "portable":
        return False
    if dispatch.asm_arch:
        return dispatch.asm_arch.split(":")[0] == "gfx950"
    return jax.default_backend() == "rocm"


def gemm_fp4(a, b, a_scale, b_scale, *, kernel: str | None = None, splitk: int | None = None,
             dispatch: Dispatch | None = None):
    """``dequant(a) . dequant(b)^T`` as bf16 (AITER's ``gemm_a4w4_asm`` contract, MXFP4).

    Args:
      a: fp4x2 ``u8 [..., K/2]`` (from ``quantize_mxfp4``); K % 64 == 0.
      b: the fp4x2 weight ``[N, K/2]``: a ``ShuffledWeight`` in ``FP4_LAYOUT``
        (``shuffle_fp4_weight``; N % 16 == 0), or a plain uint8 array, taken as unshuffled.
      a_scale: e8m0 (uint8 or float8_e8m0fnu) ``[..., K/32]`` plain (shuffled here), or a
        ``ShuffledWeight`` in ``"e8m0_shuffle"`` of shape ``[roundup(M', 256), roundup(K/32, 8)]``,
        M' = prod(a's leading dims).
      b_scale: e8m0 ``[N, K/32]`` plain, or a ``ShuffledWeight`` in ``"e8m0_shuffle"``.
      kernel: an AITER f4gemm kernel to use (AITER's kernelName, by symbol or short name);
        None lets the heuristic choose.
      splitk: a K split for the ASM tier (0 or 1 none, 2, 4, 8 or 16; AITER's 2^log2_k_split);
        None lets the heuristic choose. The portable tier does not split: it says so.
      dispatch: which tier runs the call (``jax_aiter.Dispatch``).
    Returns:
      bf16 ``[..., N]``.
    """
    if isinstance(b, ShuffledWeight):
        if not b.in_layout(FP4_LAYOUT):
            raise ValueError(f"aiter.gemm_fp4: operand b: expected a weight shuffled in the "
                             f"layout {FP4_LAYOUT}, got one in {b.layout!r}")
        b_data, b_layout = b.data, "x".join(str(v) for v in FP4_LAYOUT)
    else:
        b_data, b_layout = jnp.asarray(b), "none"
    a = jnp.asarray(a)
    for name, t in (("a", a), ("b", b_data)):
        if t.dtype != jnp.uint8:
            raise TypeError(f"aiter.gemm_fp4: operand {name}: expected packed fp4x2 as uint8, got "
                            f"{t.dtype}")
    if a.ndim < 1 or b_data.ndim != 2 or a.shape[-1] != b_data.shape[1]:
        raise ValueError(f"aiter.gemm_fp4: expected a [..., K/2] and b [N, K/2], got shapes "
                         f"{a.shape} and {b_data.shape}")
    lead, k = a.shape[:-1], a.shape[-1] * 2
    n = b_data.shape[0]
    m = math.prod(lead)
    if isinstance(a_scale, ShuffledWeight):
        sa, a_shuffled = _scale_operand(a_scale, m, k, "a_scale")
    else:
        a_scale = _as_u8(jnp.asarray(a_scale), "aiter.gemm_fp4: operand a_scale")
        if a_scale.shape != (*lead, k // BLOCK):
            raise ValueError(f"aiter.gemm_fp4: operand a_scale: expected plain e8m0 scales of "
                             f"shape {(*lead, k // BLOCK)} (a's leading dims), got "
                             f"{a_scale.shape}")
        sa, a_shuffled = _scale_operand(a_scale.reshape(m, k // BLOCK), m, k, "a_scale")
    sb, b_shuffled = _scale_operand(b_scale, n, k, "b_scale")
    dispatch = dispatch or Dispatch()
    config = Static((b_layout, kernel or "", None if splitk is None else int(splitk), dispatch,
                     _may_run_aiter(dispatch), a_shuffled, b_shuffled))
    out = _gemm_fp4(a.reshape(m, k // 2), b_data, sa, sb, config)
    return out.reshape(*lead, n)


def describe(m: int, n: int, k: int, b_shuffled: bool = True, kernel: str | None = None,
             splitk: int | None = None, padded: bool = True) -> tuple[dict, dict]:
    """The call jax-aiter-plan describes for aiter.gemm_fp4 (M as gemm_fp4 passes it where AITER's
    kernels may run: rounded up to 32, unless ``padded=False``): operands name -> (dtype, shape),
    attributes."""
    mp = _round_up(m, _OUT_ROWS) if padded else m
    sn = _round_up(k // BLOCK, 8)
    operands = {"a": ("uint8", (mp, k // 2)), "b": ("uint8", (n, k // 2)),
                "a_scale": ("uint8", (_round_up(mp, 256), sn)),
                "b_scale": ("uint8", (_round_up(n, 256), sn)), "out": ("bfloat16", (mp, n))}
    return operands, {"b_layout": "16x16" if b_shuffled else "none", "kernel": kernel or "",
                      "splitk": splitk}


def add_plan_arguments(p) -> None:
    """jax-aiter-plan's options of this op alone (tools.py calls it)."""
    p.add_argument("--plain-b", action="store_true", help="gemm_fp4: b not pre-shuffled")


def _plan(p, args):
    # M padded as gemm_fp4 pads it: only where AITER's kernels may run (_may_run_aiter), so a
    # decode plan for sm_90 shows the streaming kernel M <= 16 takes there.
    aiter = "gfx950" in (args.arch, (args.asm_arch or "").split(":")[0])
    return ("aiter.gemm_fp4", *describe(args.m, args.n, args.k, not args.plain_b, args.kernel,
                                        args.splitk, padded=aiter and args.tier != "portable"))


# jax-aiter-plan's commands for this op (tools.py finds them): name -> (the options a call needs,
# plan(parser, args) -> (target, operands, attributes)).
PLAN_COMMANDS = {"gemm_fp4": (("m", "n", "k"), _plan)}
