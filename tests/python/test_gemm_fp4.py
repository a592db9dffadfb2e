"""jax_aiter.gemm_fp4 through JAX: MXFP4 quantization (against OCP's rules, decoded independently
with ml_dtypes), the weight and e8m0 scale layouts (against AITER's view/permute, written here in
NumPy) and their inverses, and gemm_fp4 against a float64 reference computed from the dequantized
inputs, each tier forced (the ASM tier's plans run through the ABI twins of AITER's gfx950 FP4
kernels off AMD hardware, every row at least once, split-K included); bad input and grad are
clear errors.

Runs on whatever platform JAX has (CPU in CI: the Host backend's C++ twins).
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import jax_aiter
from jax_aiter import Dispatch, ShuffledWeight, shuffle_weight, unshuffle_weight
from jax_aiter.gemm_fp4 import (FP4_LAYOUT, SCALE_LAYOUT, dequantize_mxfp4, describe,
                                e8m0_shuffle, e8m0_unshuffle, gemm_fp4, quantize_mxfp4,
                                shuffle_fp4_weight)
from poison import run_poisoned

ASM_950 = Dispatch("asm", "gfx950", 256)
PORTABLE = Dispatch("portable")
U = 2.0**-8  # bf16 unit roundoff

# AITER's f4gemm rows (hsa/gfx950/f4gemm/f4gemm_bf16_per1x32Fp4.csv): (tile_m, tile_n, may split,
# B pre-shuffled).
ROWS = [(256, 256, False, False), (256, 256, True, True), (128, 512, True, True)] + [
    (tm, tn, False, True) for tm, tn in (
        (192, 256), (224, 256), (128, 128), (128, 256), (128, 384), (160, 128), (160, 256),
        (160, 384), (192, 128), (224, 128), (256, 128), (32, 1024), (32, 128), (32, 256),
        (32, 384), (32, 512), (32, 640), (32, 768), (32, 896), (64, 1024), (64, 128), (64, 256),
        (64, 384), (64, 512), (64, 640), (64, 768), (64, 896), (96, 128), (96, 256), (96, 384),
        (96, 512), (96, 640))]
assert len(ROWS) == 35


def row_name(tm, tn, shuffled):
    return f"f4gemm_bf16_per1x32Fp4_{'BpreShuffle' if shuffled else 'noBpreShuffle'}_{tm}x{tn}"


# ---- independent decoding and layouts (NumPy, ml_dtypes) ---------------------------------------

def decode_fp4(q):
    """u8 [..., K/2] -> float64 [..., K]: low nibble first, e2m1 by ml_dtypes."""
    q = np.asarray(q, np.uint8)
    nib = np.stack([q & 15, q >> 4], axis=-1).reshape(*q.shape[:-1], -1)
    return nib.view(ml_dtypes.float4_e2m1fn).astype(np.float64)


def decode_e8m0(s):
    return np.asarray(s, np.uint8).view(ml_dtypes.float8_e8m0fnu).astype(np.float64)


def dequant(q, s):
    return decode_fp4(q) * np.repeat(decode_e8m0(s), 32, axis=-1)


def reference_shuffle_b(w):
    """AITER's shuffle_weight(w, layout=(16, 16)) on uint8: view (N/16, 16, Kb/32, 2, 16),
    permute (0, 2, 3, 1, 4)."""
    n, kb = w.shape
    x = w.reshape(n // 16, 16, kb // 32, 2, 16)
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1, 4)).reshape(n, kb)


def reference_shuffle_scale(s):
    """AITER's shuffle_scale: pad to (256 i, 8 j) (we pad with 127), view (sm/32, 2, 16, sn/8, 2,
    4), permute (0, 3, 5, 2, 4, 1)."""
    m, n = s.shape
    sm, sn = -(-m // 256) * 256, -(-n // 8) * 8
    p = np.full((sm, sn), 127, np.uint8)
    p[:m, :n] = s
    x = p.reshape(sm // 32, 2, 16, sn // 8, 2, 4).transpose(0, 3, 5, 2, 4, 1)
    return np.ascontiguousarray(x).reshape(sm, sn)


# ---- quantization ------------------------------------------------------------------------------

def test_quantize_follows_ocp_mx():
    rng = np.random.default_rng(0)
    x = (rng.normal(size=(6, 256)) * np.exp2(rng.integers(-20, 20, (6, 1)))).astype(np.float32)
    x[2, 32:64] = 0  # an all-zero block
    x[3, :32] = 6.0  # amax exactly 6: floor(log2 6) - 2 = 0
    q, s = jax.jit(quantize_mxfp4)(x)
    assert q.dtype == jnp.uint8 and q.shape == (6, 128) and s.dtype == jnp.uint8
    assert s.shape == (6, 8)
    blocks = x.reshape(6, 8, 32).astype(np.float64)
    amax = np.abs(blocks).max(-1)
    want_exp = np.where(amax > 0, np.floor(np.log2(np.where(amax > 0, amax, 1))) - 2, 0)
    np.testing.assert_array_equal(np.asarray(s).astype(np.int64) - 127, want_exp)
    scale = np.exp2(want_exp)[..., None]
    # Round to nearest even on the e2m1 grid, saturating at 6 (ml_dtypes rounds to nearest even).
    want = np.clip(blocks / scale, -6, 6).astype(ml_dtypes.float4_e2m1fn).astype(np.float64)
    np.testing.assert_array_equal(decode_fp4(q).reshape(6, 8, 32), want)
    np.testing.assert_array_equal(np.asarray(dequantize_mxfp4(q, s)), dequant(q, s))
    assert (decode_fp4(q)[3, :32] == 6).all() and (np.asarray(s)[2, 1] == 127)
    # AITER's default: scale = 2^ceil(log2(amax / 6)), never saturating.
    qc, sc = quantize_mxfp4(x, rounding="ceil")
    want_c = np.where(amax > 0, np.ceil(np.log2(np.where(amax > 0, amax, 6) / 6)), 0)
    np.testing.assert_array_equal(np.asarray(sc).astype(np.int64) - 127, want_c)
    assert (np.abs(decode_fp4(qc)) <= 6).all()
    err = np.abs(dequant(qc, sc) - x.astype(np.float64)).reshape(6, 8, 32)
    assert (err <= np.exp2(want_c)[..., None] * 1.0 + 1e-30).all()  # half the widest e2m1 step
    with pytest.raises(ValueError, match="multiple of 32"):
        quantize_mxfp4(np.zeros((2, 48)))


def test_ties_round_to_even():
    # Midpoints of the e2m1 grid at scale 1 (amax 4 -> exponent 0): 0.25 -> 0, 0.75 -> 1,
    # 1.25 -> 1, 1.75 -> 2, 2.5 -> 2, 3.5 -> 4, 5 -> 4.
    x = np.zeros((1, 32), np.float32)
    x[0, :8] = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, -5.0]
    x[0, 8] = 4.0
    q, s = quantize_mxfp4(x)
    assert int(np.asarray(s)[0, 0]) == 127
    np.testing.assert_array_equal(decode_fp4(q)[0, :9], [0, 1, 1, 2, 2, 4, 4, -4, 4])


# ---- layouts -----------------------------------------------------------------------------------

def test_weight_shuffle_matches_aiter_and_round_trips():
    rng = np.random.default_rng(1)
    w = rng.integers(0, 256, (48, 96), dtype=np.uint8)  # N = 48, K = 192
    s = jax.jit(shuffle_fp4_weight)(w)
    assert isinstance(s, ShuffledWeight) and s.layout == FP4_LAYOUT and s.dtype == jnp.uint8
    np.testing.assert_array_equal(np.asarray(s.data), reference_shuffle_b(w))
    np.testing.assert_array_equal(np.asarray(unshuffle_weight(s)), w)
    with pytest.raises(ValueError, match="N % 16 == 0 and K % 32 == 0"):
        shuffle_fp4_weight(np.zeros((24, 64), np.uint8))
    with pytest.raises(TypeError, match="uint8"):
        shuffle_fp4_weight(np.zeros((16, 64), np.int8))


@pytest.mark.parametrize("shape", [(1, 2), (256, 8), (300, 20), (33, 128)])
def test_scale_shuffle_matches_aiter_and_round_trips(shape):
    rng = np.random.default_rng(2)
    s = rng.integers(100, 150, shape, dtype=np.uint8)
    got = jax.jit(e8m0_shuffle)(s)
    np.testing.assert_array_equal(np.asarray(got), reference_shuffle_scale(s))
    back = np.asarray(e8m0_unshuffle(got))
    np.testing.assert_array_equal(back[:shape[0], :shape[1]], s)
    assert (back[shape[0]:] == 127).all() and (back[:, shape[1]:] == 127).all()
    # The registered named layout, through the generic functions.
    sw = shuffle_weight(s, SCALE_LAYOUT)
    assert isinstance(sw, ShuffledWeight) and sw.layout == SCALE_LAYOUT
    np.testing.assert_array_equal(np.asarray(sw.data), np.asarray(got))
    np.testing.assert_array_equal(np.asarray(unshuffle_weight(sw)), back)
    # float8_e8m0fnu scales are taken as their bits.
    e = jnp.asarray(s).view(jnp.float8_e8m0fnu) if hasattr(jnp.ndarray, "view") else None
    if e is not None:
        np.testing.assert_array_equal(np.asarray(e8m0_shuffle(e)), np.asarray(got))


# ---- gemm_fp4 ----------------------------------------------------------------------------------

def _inputs(rng, m, n, k, lead=None):
    a = rng.integers(0, 256, (m, k // 2) if lead is None else (*lead, k // 2), dtype=np.uint8)
    w = rng.integers(0, 256, (n, k // 2), dtype=np.uint8)
    sa = rng.integers(121, 134, (*a.shape[:-1], k // 32), dtype=np.uint8)
    sb = rng.integers(121, 134, (n, k // 32), dtype=np.uint8)
    return a, w, sa, sb


def assert_fp4_close(what, got, a, w, sa, sb, steps=1):
    """|got - ref| <= u |ref| + ((steps - 1) u + (K/32) u_f32) scale, ref and scale = sum |a b|
    from the dequantized inputs in float64: one bf16 rounding (one per split where the splits add
    into the bf16 output); each 32-block's float sum is exact, the blocks add in float32."""
    a64 = dequant(a, sa).reshape(-1, a.shape[-1] * 2)
    w64 = dequant(w, sb)
    ref = a64 @ w64.T
    scale = np.abs(a64) @ np.abs(w64).T
    k = a64.shape[1]
    bound = U * np.abs(ref) + ((steps - 1) * U + (k // 32) * 2.0**-24) * scale + 1e-30
    got = np.asarray(got.astype(jnp.float32), np.float64).reshape(ref.shape)
    bad = ~(np.abs(got - ref) <= bound)
    if bad.any():
        i = tuple(int(v) for v in np.argwhere(bad)[0])
        raise AssertionError(f"{what}: {int(bad.sum())} of {bad.size} out of tolerance, e.g. {i}: "
                             f"got {got[i]!r} ref {ref[i]!r} bound {bound[i]:.3g}")


@functools.cache
def _forward(dispatch, kernel=None, splitk=None):
    def body(a, w, sa, sb):
        return (gemm_fp4(a, w, sa, sb, kernel=kernel, splitk=splitk, dispatch=dispatch),)
    return body


def _run(a, w, sa, sb, dispatch, kernel=None, splitk=None, shuffled=True):
    b = shuffle_fp4_weight(w) if shuffled else jnp.asarray(w)
    sbs = shuffle_weight(sb, SCALE_LAYOUT)
    m = math.prod(a.shape[:-1])
    if (m % 32 == 0 or dispatch.asm_arch != "gfx950") and a.ndim == 2:
        # gemm_fp4's output is the kernel's own buffer: run it into poisoned memory.
        (out,) = run_poisoned(_forward(dispatch, kernel, splitk), a, b, sa, sbs)
    else:  # rows padded to 32 and sliced for AITER's kernels: the result is a copy (the C++
        # tests poison these)
        (out,) = jax.jit(_forward(dispatch, kernel, splitk))(a, b, sa, sbs)
    assert out.dtype == jnp.bfloat16 and out.shape == (*a.shape[:-1], w.shape[0])
    return out


def _split_of(m, n, k, dispatch, kernel=None, splitk=None, shuffled=True):
    """The split the plan chose (jax-aiter-plan), for the tolerance."""
    operands, attrs = describe(m, n, k, shuffled, kernel, splitk)
    plan = jax_aiter.plan("aiter.gemm_fp4", operands, {**attrs, **dispatch.attributes()}, "host")
    return plan["chosen"]["plan"]["notes"]["split"]


# Odd and large shapes: M = 1..4096, N multiples of 16 (not of 64), K multiples of 64 (not 256).
VALUE_CASES = [(1, 16, 64), (7, 48, 192), (33, 144, 320), (1, 1024, 4096), (300, 256, 1024),
               (2048, 64, 128), (130, 272, 1088), (64, 512, 512)]


@pytest.mark.parametrize("m,n,k", VALUE_CASES)
@pytest.mark.parametrize("shuffled", [True, False], ids=["shuffled", "plain"])
@pytest.mark.parametrize("dispatch", [Dispatch(), PORTABLE], ids=["auto", "portable"])
def test_values(m, n, k, shuffled, dispatch):
    rng = np.random.default_rng(m * 131 + n + k)
    for _ in range(2):  # two data sets through one compiled function (poison.py)
        a, w, sa, sb = _inputs(rng, m, n, k)
        out = _run(a, w, sa, sb, dispatch, shuffled=shuffled)
        assert_fp4_close(f"{m}x{n}x{k}", out, a, w, sa, sb)


# The decode kernels (portable tier, M <= 16: d4 for M <= 4, d16 above), through their twins: a
# block per 16 rows of B, K split into 16 interleaved slices inside the block (0 to 17 32-blocks
# each here), added in slice order; one bf16 rounding. N a multiple of 16 (not of 64) or, B plain,
# not of 16.
DECODE_CASES = [(1, 16, 576), (4, 48, 4160), (5, 272, 1088), (16, 144, 2112), (13, 80, 64),
                (2, 1040, 8192), (3, 40, 640), (16, 17, 1024)]


@pytest.mark.parametrize("m,n,k", DECODE_CASES)
@pytest.mark.parametrize("shuffled", [True, False], ids=["shuffled", "plain"])
def test_decode_kernels(m, n, k, shuffled):
    if shuffled and n % 16:
        pytest.skip("a shuffled B has N % 16 == 0")
    operands, attrs = describe(m, n, k, shuffled, padded=False)  # the portable tier: M unpadded
    plan = jax_aiter.plan("aiter.gemm_fp4", operands, {**attrs, **PORTABLE.attributes()}, "host")
    notes = plan["chosen"]["plan"]["notes"]
    assert (notes["tile_m"], notes["tile_n"], notes["split"]) == (4 if m <= 4 else 16, 16, 16)
    rng = np.random.default_rng(m * 17 + n + k)
    for _ in range(2):  # two data sets through one compiled function (poison.py)
        a, w, sa, sb = _inputs(rng, m, n, k)
        out = _run(a, w, sa, sb, PORTABLE, shuffled=shuffled)
        assert_fp4_close(f"decode {m}x{n}x{k}", out, a, w, sa, sb)


# The heuristic's own choice, planned for gfx950, run through the twins.
ASM_CASES = [(1, 2048, 2048), (100, 768, 512), (640, 1024, 256), (64, 4096, 1024)]


@pytest.mark.parametrize("m,n,k", ASM_CASES)
@pytest.mark.parametrize("shuffled", [True, False], ids=["shuffled", "plain"])
def test_asm_heuristic_through_its_twins(m, n, k, shuffled):
    rng = np.random.default_rng(m + n + k)
    a, w, sa, sb = _inputs(rng, m, n, k)
    out = _run(a, w, sa, sb, ASM_950, shuffled=shuffled)
    steps = _split_of(m, n, k, ASM_950, shuffled=shuffled)
    if shuffled and (m, n, k) == (1, 2048, 2048):
        assert steps > 1  # decode: the heuristic splits K
    assert_fp4_close(f"{m}x{n}x{k}", out, a, w, sa, sb, steps=steps)
    plan = jax_aiter.plan("aiter.gemm_fp4", *_described(m, n, k, shuffled), "host")
    assert plan["chosen"]["tier"] == "asm"


def _described(m, n, k, shuffled):
    operands, attrs = describe(m, n, k, shuffled)
    return operands, {**attrs, **ASM_950.attributes()}


# Every row forced, unsplit and (rows that split) split 2.
ROW_CASES = [(tm, tn, shuffled, split) for tm, tn, may_split, shuffled in ROWS
             for split in ((None, 2) if may_split else (None,))]


@pytest.mark.parametrize("tm,tn,shuffled,splitk", ROW_CASES)
def test_every_row_forced_through_its_twin(tm, tn, shuffled, splitk):
    m, k = 64, 512
    n = 1024 if (tm, tn) == (128, 512) else tn + 16
    rng = np.random.default_rng(tm * 7 + tn + (splitk or 0))
    a, w, sa, sb = _inputs(rng, m, n, k)
    name = row_name(tm, tn, shuffled)
    out = _run(a, w, sa, sb, ASM_950, name, splitk, shuffled)
    assert _split_of(m, n, k, ASM_950, name, splitk, shuffled) == (splitk or 1)
    assert_fp4_close(f"{name} split {splitk}", out, a, w, sa, sb, steps=splitk or 1)


def test_three_lines_from_bf16_with_leading_dims_and_vmap():
    rng = np.random.default_rng(5)
    x = jnp.asarray(rng.normal(size=(2, 3, 256)), jnp.bfloat16)
    wf = jnp.asarray(rng.normal(size=(128, 256)), jnp.bfloat16)
    wq, ws = quantize_mxfp4(wf)
    w4, ws4 = shuffle_fp4_weight(wq), shuffle_weight(ws, SCALE_LAYOUT)

    @jax.jit
    def layer(x, w4, ws4):
        xq, xs = quantize_mxfp4(x)
        return gemm_fp4(xq, w4, xs, ws4)

    y = layer(x, w4, ws4)
    assert y.shape == (2, 3, 128) and y.dtype == jnp.bfloat16
    xq, xs = quantize_mxfp4(x)
    assert_fp4_close("3 lines", y, np.asarray(xq), np.asarray(wq), np.asarray(xs), np.asarray(ws))
    # Close to the bf16 product too (MXFP4 quantization error only: a few percent).
    ref = np.asarray(x, np.float64) @ np.asarray(wf, np.float64).T
    assert np.abs(np.asarray(y, np.float64) - ref).max() < 0.25 * np.abs(ref).max()
    yv = jax.vmap(lambda x: layer(x, w4, ws4))(x)
    np.testing.assert_array_equal(np.asarray(yv, np.float32), np.asarray(y, np.float32))
    # A pre-shuffled activation scale is taken as is.
    y2 = gemm_fp4(xq.reshape(6, 128), w4, shuffle_weight(xs.reshape(6, 8), SCALE_LAYOUT), ws)
    np.testing.assert_array_equal(np.asarray(y2, np.float32),
                                  np.asarray(y, np.float32).reshape(6, 128))


def test_errors():
    rng = np.random.default_rng(9)
    a, w, sa, sb = _inputs(rng, 8, 128, 128)
    sw = shuffle_fp4_weight(w)
    with pytest.raises(ValueError, match=r"layout \(16, 16\), got one in"):
        gemm_fp4(a, shuffle_weight(w, (32, 16)), sa, sb)
    with pytest.raises(TypeError, match="operand a: expected packed fp4x2 as uint8"):
        gemm_fp4(a.astype(np.int8), sw, sa, sb)
    with pytest.raises(ValueError, match="operand a_scale"):
        gemm_fp4(a, sw, sa[:, :2], sb)
    with pytest.raises(ValueError, match="operand b_scale"):
        gemm_fp4(a, sw, sa, sb[:64])
    with pytest.raises(ValueError, match="operand b_scale: expected scales shuffled in"):
        gemm_fp4(a, sw, sa, ShuffledWeight(jnp.asarray(sb), (16, 16)))
    with pytest.raises(ValueError, match="operand a_scale: expected a shuffled scale of shape"):
        gemm_fp4(a, sw, ShuffledWeight(jnp.zeros((8, 8), jnp.uint8), SCALE_LAYOUT), sb)
    with pytest.raises(TypeError, match="e8m0 scales as uint8 or float8_e8m0fnu"):
        gemm_fp4(a, sw, sa.astype(np.float32), sb)
    # What only C++ checks: the family's multiples, the forced kernel, the ASM tier's needs.
    a2, w2, sa2, sb2 = _inputs(rng, 8, 120, 128)
    with pytest.raises(Exception, match="N=120 is not a multiple of 16"):
        jax.block_until_ready(gemm_fp4(a2, ShuffledWeight(jnp.asarray(w2), FP4_LAYOUT), sa2, sb2))
    a3, w3, sa3, sb3 = _inputs(rng, 8, 128, 96)
    with pytest.raises(Exception, match="K=96 is not a multiple of 64"):
        jax.block_until_ready(gemm_fp4(a3, jnp.asarray(w3), sa3, sb3))
    a4, w4, sa4, sb4 = _inputs(rng, 8, 128, 256)
    sw4 = shuffle_fp4_weight(w4)
    with pytest.raises(Exception, match=r"attribute kernel: .*f4gemm kernels.*got 'nope'"):
        jax.block_until_ready(gemm_fp4(a4, sw4, sa4, sb4, kernel="nope", dispatch=ASM_950))
    with pytest.raises(Exception, match="the forced kernel reads a plain B, b is shuffled"):
        jax.block_until_ready(gemm_fp4(a4, sw4, sa4, sb4, dispatch=ASM_950,
                                       kernel=row_name(256, 256, False)))
    with pytest.raises(Exception, match="K = 128 is not a multiple of 256"):
        jax.block_until_ready(gemm_fp4(a, sw, sa, sb, dispatch=ASM_950))
    with pytest.raises(Exception, match="gfx950 code"):
        jax.block_until_ready(gemm_fp4(a, sw, sa, sb, dispatch=Dispatch("asm", "gfx942", 304)))
    with pytest.raises(Exception, match="attribute splitk"):
        jax.block_until_ready(gemm_fp4(a, sw, sa, sb, splitk=3))


def test_grad_is_a_clear_error():
    # The operands are integer codes, so a gradient can only reach gemm_fp4 through the
    # quantization: differentiating through it raises instead of giving silent zeros.
    rng = np.random.default_rng(3)
    _, w, _, sb = _inputs(rng, 4, 16, 64)
    sw = shuffle_fp4_weight(w)
    x = jnp.asarray(rng.normal(size=(4, 64)), jnp.float32)

    def loss(x):
        xq, xs = quantize_mxfp4(x)
        return gemm_fp4(xq, sw, xs, sb).astype(jnp.float32).sum()

    with pytest.raises(TypeError, match="inference op: it has no gradient"):
        jax.grad(loss)(x)
