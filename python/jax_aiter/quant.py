"""What the quantized GEMMs need: weight layouts, the pre-shuffled weight type, quantizers, and
the partitioning rules they share (``gemm_i8`` is in ``jax_aiter.gemm_i8``).

The quantized GEMMs' one convention (``gemm_i8``, ``gemm_fp8_blockscale``, ``gemm_fp4``; stated
here once, the ops' docstrings point here). Each computes ``out [M, N] = a [M, K] . b [N, K]^T``,
its operands named ``a, b, a_scale, b_scale``:

- ``a``: the activations ``[..., K]``, row-major (the leading dims are M);
- ``b``: the weight ``[N, K]`` (FP4: fp4x2 bytes ``[N, K/2]``) in the pre-shuffled layout its
  kernels read (a ``ShuffledWeight``, below);
- ``a_scale``: its rows follow a's rows: ``[..., 1]`` per token (INT8), ``[..., K/128]`` per token
  and 128-column block (FP8: what ``quantize_fp8_per_token_block`` makes), ``[..., K/32]`` e8m0
  (FP4: ``quantize_mxfp4``);
- ``b_scale``: one value per row of b, or its rows follow b's rows: ``[1, N]`` per channel
  (INT8: ``quantize_per_channel``), ``[ceil(N/128), K/128]`` per 128 x 128 block (FP8:
  ``quantize_fp8_per_block``), ``[N, K/32]`` e8m0 (FP4).

So a scale is passed as its quantizer makes it. Where AITER's kernels read one in another layout
(the FP8 kernels read a_scale K-block-major, ``[K/128, M]``; FlatMM reads b_scale ``[K/128,
N/128]``; FP4 reads shuffled scales), the op rearranges it (in the XLA graph, or in its plan's
workspace), never the caller. ``gemm_fp8_mi350`` and ``flatmm_fp8`` keep ROCm/jax-aiter's names
and scale layouts (xq, wq, x_scale ``[K/128, M]``, ...) for people switching from it: they are
thin wrappers of ``gemm_fp8_blockscale``.

Weight layouts. AITER's pre-shuffled GEMMs read B [N, K] in a blocked layout,
``shuffle_weight(w, layout=(IN, IK))``: with E = 16 bytes' worth of elements (16 for int8, 8 for
bf16) and BK = 2 IK, w is viewed as [N/IN, IN, K/BK, BK/E, E] and stored as
[N/IN, K/BK, BK/E, IN, E]: each IN x BK block of the weight becomes BK/E planes, each plane IN
rows of E contiguous elements::

    int8, layout (16, 16): one block of w (16 rows n0..n0+15, 32 columns k0..k0+31), 512 bytes:

      plane 0 (k0 .. k0+15):   row n0: 16 bytes | row n0+1: 16 bytes | ... | row n0+15
      plane 1 (k0+16 .. +31):  row n0: 16 bytes | row n0+1: 16 bytes | ... | row n0+15

    blocks follow one another along K first (k0 = 0, 32, ...), then along N (n0 = 0, 16, ...).

The INT8 kernels read the (16, 16) layout: it is what AITER's own op test and tuner feed them
(``op_tests/test_gemm_a8w8.py``, ``gemm_a8w8_bpreshuffle_tune.py``), although a docstring and a
comment in AITER say (32, 16). A shuffled weight is a ``ShuffledWeight`` (a pytree: it passes
through jit, device_put and shard_map like an array), and the GEMMs take nothing else, so a
weight that was never shuffled cannot reach the kernels by accident; the layout travels to C++
as the ``b_layout`` attribute, which the ops check too.
"""

from __future__ import annotations

import dataclasses
import importlib
import operator

import jax
import jax.numpy as jnp
import numpy as np

from jax_aiter import _partition

# What the package exports from this module (jax_aiter/__init__.py).
__all__ = ["ShuffledWeight", "fp8_dtype", "quantize_fp8_per_block", "quantize_fp8_per_token_block",
           "quantize_per_channel", "quantize_per_token", "shuffle_weight", "unshuffle_weight"]

# The layout AITER's INT8 GEMM kernels read (include/jax_aiter/kernels/shared/aiter_i8gemm.h).
I8_LAYOUT = (16, 16)

_I8_MAX = 127.0


@dataclasses.dataclass(frozen=True)
class ShuffledWeight:
    """A weight ``[N, K]`` stored in a pre-shuffled layout (``shuffle_weight``).

    ``data`` has the weight's shape and dtype, its elements permuted; ``layout`` is (IN, IK) as
    AITER's ``shuffle_weight`` takes it. A pytree with ``data`` its only leaf.
    """
    data: jax.Array
    layout: tuple

    @property
    def shape(self):
        return self.data.shape

    @property
    def dtype(self):
        return self.data.dtype

    def in_layout(self, layout) -> bool:
        """Whether the weight is shuffled in ``layout``: a named layout or an (IN, IK) pair (a
        name never equals a pair, and a pair compares as a tuple whatever sequence holds it)."""
        if isinstance(layout, str) or isinstance(self.layout, str):
            return self.layout == layout
        return tuple(self.layout) == tuple(layout)


jax.tree_util.register_dataclass(ShuffledWeight, data_fields=["data"], meta_fields=["layout"])


def _layout_pair(layout, what="shuffle_weight"):
    """(IN, IK) of a blocked layout: two positive ints, else a ValueError naming the argument."""
    try:
        n_in, ik = (operator.index(v) for v in layout)
    except (TypeError, ValueError):
        n_in = ik = 0
    if n_in < 1 or ik < 1:
        raise ValueError(f"{what}: layout: expected (IN, IK), two positive ints (e.g. "
                         f"{I8_LAYOUT}), or the name of a registered layout "
                         f"({', '.join(sorted(_NAMED_LAYOUTS))}), got {layout!r}")
    return n_in, ik


def _blocks(shape, dtype, layout):
    n_in, ik = _layout_pair(layout)
    per16 = 16 // np.dtype(dtype).itemsize  # elements in 16 bytes
    bk = 2 * ik
    if len(shape) < 2:
        raise ValueError(f"shuffle_weight: expected a weight [..., N, K], got shape {shape}")
    n, k = shape[-2:]
    if n_in <= 0 or bk % per16 != 0 or n % n_in != 0 or k % bk != 0:
        raise ValueError(f"shuffle_weight: layout {tuple(layout)} needs N % {n_in} == 0 and "
                         f"K % {bk} == 0 (blocks of {per16} {np.dtype(dtype).name}), got "
                         f"[N, K] = [{n}, {k}]")
    return n_in, bk, per16


# Named layouts other than the (IN, IK) blocks: name -> (shuffle, unshuffle), each a JAX
# function of the array alone. The families that need one register it beside their op.
_NAMED_LAYOUTS: dict = {}


def register_layout(name: str, shuffle, unshuffle) -> None:
    """Makes ``shuffle_weight(w, name)`` / ``unshuffle_weight`` know a named layout."""
    _NAMED_LAYOUTS[name] = (shuffle, unshuffle)


def _named(layout):
    if layout not in _NAMED_LAYOUTS:
        raise ValueError(f"shuffle_weight: unknown layout {layout!r}: expected (IN, IK) or one "
                         f"of {sorted(_NAMED_LAYOUTS)}")
    return _NAMED_LAYOUTS[layout]


def shuffle_weight(w, layout=I8_LAYOUT) -> ShuffledWeight:
    """AITER's ``shuffle_weight(w, layout)`` as a JAX function (any backend): the permutation
    the pre-shuffled GEMM kernels read (module docstring). ``w``: ``[..., N, K]``. ``layout``
    is (IN, IK) for the blocked layouts, or the name of another registered layout."""
    if isinstance(layout, str):
        return ShuffledWeight(_named(layout)[0](jnp.asarray(w)), layout)
    w = jnp.asarray(w)
    n_in, bk, per16 = _blocks(w.shape, w.dtype, layout)
    *lead, n, k = w.shape
    x = w.reshape(*lead, n // n_in, n_in, k // bk, bk // per16, per16)
    r = len(lead)
    x = jnp.transpose(x, (*range(r), r, r + 2, r + 3, r + 1, r + 4))
    return ShuffledWeight(x.reshape(w.shape), tuple(int(v) for v in layout))


def unshuffle_weight(w: ShuffledWeight) -> jax.Array:
    """The inverse of ``shuffle_weight``: the plain ``[..., N, K]`` weight."""
    if not isinstance(w, ShuffledWeight):
        raise TypeError(f"unshuffle_weight: expected a ShuffledWeight, got {type(w).__name__}")
    if isinstance(w.layout, str):
        return _named(w.layout)[1](w.data)
    d = w.data
    n_in, bk, per16 = _blocks(d.shape, d.dtype, w.layout)
    *lead, n, k = d.shape
    x = d.reshape(*lead, n // n_in, k // bk, bk // per16, n_in, per16)
    r = len(lead)
    x = jnp.transpose(x, (*range(r), r, r + 3, r + 1, r + 2, r + 4))
    return x.reshape(d.shape)


def fp8_dtype(arch: str | None = None):
    """The fp8 format the kernels read (ops/fp8_format.hpp): ``float8_e4m3fnuz`` on gfx942
    (MI300), ``float8_e4m3fn`` on gfx950 (MI350), NVIDIA and the CPU. ``arch``: "gfx942",
    "gfx950", or None for the default device's."""
    if arch is None:
        dev = jax.devices()[0]
        arch = str(getattr(dev, "compute_capability", "")) if dev.platform == "rocm" else ""
    return jnp.float8_e4m3fnuz if arch.split(":")[0] == "gfx942" else jnp.float8_e4m3fn


FP8_BLOCK = 128  # the K (and weight N) block of the fp8 block-scale GEMMs


def quantize_fp8_blocks(x, block=(1, FP8_BLOCK), dtype=None):
    """Symmetric fp8 per block: ``x ~= q * scale`` with scale = max |x| / fp8 max over each
    block (1 for an all-zero block). NaN and Inf propagate: a block holding a NaN or ±Inf gets
    scale NaN and q = 0, so everything computed from it (dequantized values, the fp8 GEMMs'
    outputs that read it) is NaN.

    ``block=(1, 128)`` (activations, per token): ``x [..., K]`` -> ``(fp8 [..., K],
    f32 [..., K/128])``. ``block=(128, 128)`` (weights): ``x [..., R, C]`` -> ``(fp8 [..., R, C],
    f32 [..., R/128, C/128])``. The blocked dims must be multiples of the block. ``dtype``: the
    fp8 format (default ``jax_aiter.fp8_dtype()``, the device's).
    """
    dtype = fp8_dtype() if dtype is None else jnp.dtype(dtype)
    br, bc = (int(v) for v in block)
    x = jnp.asarray(x)
    if br < 1 or bc < 1 or x.ndim < (1 if br == 1 else 2):
        raise ValueError(f"quantize_fp8_blocks: block {tuple(block)} does not fit shape {x.shape}")
    rows = x.shape[-2] if br > 1 else 1
    cols = x.shape[-1]
    if cols % bc != 0 or rows % br != 0:
        raise ValueError(f"quantize_fp8_blocks: shape {x.shape} is not a multiple of the block "
                         f"{tuple(block)} in its last {'two dims' if br > 1 else 'dim'}")
    xf = x.astype(jnp.float32)
    if br == 1:
        blocks = xf.reshape(*x.shape[:-1], cols // bc, bc)
        axes = -1
    else:
        blocks = xf.reshape(*x.shape[:-2], rows // br, br, cols // bc, bc)
        axes = (-3, -1)
    amax = jnp.max(jnp.abs(blocks), axis=axes, keepdims=True)
    fmax = float(jnp.finfo(dtype).max)
    # A NaN or Inf in the block: NaN scale, q = 0 (tested apart: max need not propagate NaN).
    finite = jnp.all(jnp.isfinite(blocks), axis=axes, keepdims=True)
    scale = jnp.where(amax > 0, amax / fmax, 1.0)
    scale = jnp.where(finite, scale, jnp.nan).astype(jnp.float32)
    q = jnp.where(finite, jnp.clip(blocks / scale, -fmax, fmax), 0.0)
    q = q.astype(dtype).reshape(x.shape)
    return q, (scale.reshape(*x.shape[:-1], cols // bc) if br == 1 else
               scale.reshape(*x.shape[:-2], rows // br, cols // bc))


def _check_fp8_blocks(x, br, what):
    x = jnp.asarray(x)
    if x.ndim != 2 or x.shape[0] % br or x.shape[1] % FP8_BLOCK:
        want = ("a weight [N, K] with N and K multiples of 128" if br > 1 else
                "x [M, K] with K % 128 == 0")
        raise ValueError(f"{what}: expected {want}, got shape {x.shape}")
    return x


def quantize_fp8_per_token_block(x, dtype=None):
    """fp8 per (token, 128-column block) of activations ``x [M, K]`` (K % 128 == 0) ->
    ``(fp8 [M, K], f32 scale [M, K/128])``, x ~= q * scale[m, k // 128]. ``dtype``: the fp8
    format, default ``fp8_dtype()`` (the device's). ``gemm_fp8_blockscale`` takes the scale as
    it comes (the module's convention); ROCm/jax-aiter's ``gemm_fp8_mi350`` and ``flatmm_fp8``
    take ``scale.T``. A block holding a NaN or ±Inf gets scale NaN and q = 0
    (``quantize_fp8_blocks``)."""
    x = _check_fp8_blocks(x, 1, "quantize_fp8_per_token_block")
    return quantize_fp8_blocks(x, (1, FP8_BLOCK), dtype)


def quantize_fp8_per_block(w, dtype=None):
    """fp8 per 128 x 128 block of a weight ``w [N, K]`` (N, K % 128 == 0) -> ``(fp8 [N, K],
    f32 scale [N/128, K/128])``, w ~= q * scale[n // 128, k // 128]: ``gemm_fp8_blockscale``'s
    b_scale as it comes (ROCm/jax-aiter's ``flatmm_fp8`` takes ``scale.T``). A block holding a
    NaN or ±Inf gets scale NaN and q = 0 (``quantize_fp8_blocks``)."""
    w = _check_fp8_blocks(w, FP8_BLOCK, "quantize_fp8_per_block")
    return quantize_fp8_blocks(w, (FP8_BLOCK, FP8_BLOCK), dtype)


def _quantize_rows(x, axis):
    x = jnp.asarray(x).astype(jnp.float32)
    amax = jnp.max(jnp.abs(x), axis=axis, keepdims=True)
    finite = jnp.all(jnp.isfinite(x), axis=axis, keepdims=True)  # else NaN scale, q = 0
    scale = jnp.where(amax > 0, amax / _I8_MAX, 1.0)
    scale = jnp.where(finite, scale, jnp.nan).astype(jnp.float32)
    q = jnp.where(finite, jnp.clip(jnp.round(x / scale), -_I8_MAX, _I8_MAX), 0.0)
    return q.astype(jnp.int8), scale


def quantize_per_token(x):
    """Symmetric int8 per row (token): ``x [..., K]`` -> ``(int8 [..., K], f32 scale [..., 1])``
    with ``x ~= q * scale``, scale = max |x| / 127 over the row (1 for an all-zero row).

    NaN and Inf propagate: a row holding a NaN or ±Inf gets scale NaN and q = 0 (int8 has no
    NaN), so its dequantized values and its ``gemm_i8`` output row are NaN."""
    x = jnp.asarray(x)
    if x.ndim < 1:
        raise ValueError("quantize_per_token: operand x: expected [..., K], got a scalar")
    return _quantize_rows(x, -1)


def quantize_per_channel(w):
    """Symmetric int8 per output channel of a weight ``[N, K]`` -> ``(int8 [N, K],
    f32 scale [1, N])``, the shape ``gemm_i8`` takes. A channel holding a NaN or ±Inf gets scale
    NaN and q = 0 (as ``quantize_per_token``)."""
    w = jnp.asarray(w)
    if w.ndim != 2:
        raise ValueError(f"quantize_per_channel: expected a weight [N, K], got shape {w.shape}")
    q, scale = _quantize_rows(w, -1)
    return q, scale.reshape(1, -1)


# ---- partitioning of the quantized GEMMs (jax_aiter._partition) ------------------------------
#
# Rows of the activations (M) split -> local. The weight's N split -> local when every shard holds
# whole blocks of the weight's layout and of its scales (16 rows of a (16, 16) or FlatMM layout,
# 128 of an fp8 block scale, 256 of a shuffled e8m0 scale); another N split is gathered. K is
# never split: the pre-shuffled layouts interleave K inside each block of rows, so a column shard
# of the stored weight is not a K range (a K-split operand is gathered). Out is split like M and N.

def weight_factors(m: int, n: int, k: int, n_block: int) -> dict:
    """Factors of a quantized GEMM [M, K] x [N, K] whose weight splits along N in whole blocks."""
    return {"m": _partition.Factor(m), "n": _partition.Factor(n, block=n_block),
            "k": _partition.Factor(k, _partition.REPLICATE)}


def blockscale_rule(shapes) -> _partition.Rule:
    """The FP8 block-scale GEMM as its custom call takes it: a [M, K], b [N, K], a_scale
    [K/128, M], b_scale [ceil(N/128), K/128]; N splits in whole 128-row scale blocks."""
    x, w, x_scale, w_scale = shapes[:4]
    F, R = _partition.Factor, _partition.REPLICATE
    factors = {"m": F(x[0]), "k": F(x[1], R), "kb": F(x_scale[0], R)}
    if w[0] % FP8_BLOCK == 0:  # N = (nb nblk): a split takes whole scale blocks
        factors.update(nb=F(w[0] // FP8_BLOCK), nblk=F(FP8_BLOCK, R))
        wn, sn = ("nb", "nblk"), ("nb",)
    else:  # ceil(N / 128) scale rows: no split lines up with both
        factors.update(n=F(w[0], R), nbc=F(w_scale[0], R))
        wn, sn = ("n",), ("nbc",)
    operands = ((("m",), ("k",)), (wn, ("k",)), (("kb",), ("m",)), (sn, ("kb",)))
    return _partition.Rule(operands, ((("m",), wn),), factors)


def __getattr__(name):
    """``jax_aiter.quant.gemm_i8`` (and its ``describe``), from before gemm_i8 had its module."""
    if name in ("gemm_i8", "describe"):
        return getattr(importlib.import_module("jax_aiter.gemm_i8"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
