"""jax_aiter.flatmm_fp8 through JAX: the FlatMM weight layout and its inverse, the block quantizers,
and flatmm_fp8 against a float64 reference computed from the dequantized inputs (fp8 decoded by
ml_dtypes, not our C++), each tier forced (the ASM tier's plans run through the ABI twin of AITER's
FlatMM kernel off AMD hardware), outputs poisoned; bad input and grad are clear errors.

Runs on whatever platform JAX has (CPU in CI: the Host backend's C++ twins; on an NVIDIA GPU the
sm_90 kernels, which read float8_e4m3fn only).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jax_aiter
from jax_aiter import Dispatch
from jax_aiter.flatmm_fp8 import (AITER_KERNEL, FLATMM_LAYOUT, describe, flatmm_fp8,
                              quantize_activation_blocks, quantize_weight_blocks)
from jax_aiter.quant import ShuffledWeight, shuffle_weight, unshuffle_weight
from poison import run_poisoned

ON_CPU = jax.default_backend() == "cpu"
FN, FNUZ = jnp.float8_e4m3fn, jnp.float8_e4m3fnuz
# What the platform's portable kernels read: the host twins either, NVIDIA e4m3fn. AITER's kernel
# is gfx942 code: its plan reads e4m3fnuz everywhere (the sm_90 twin converts it in registers).
PORTABLE_FP8 = [FN, FNUZ] if ON_CPU else [FN]
ASM_FP8 = FNUZ

ASM_942 = Dispatch("asm", "gfx942", 304)
PORTABLE = Dispatch("portable")
U16, U32 = 2.0**-11, 2.0**-24


def reference_layout(w):
    """AITER's op test, in NumPy: w.view(N/16, 16, K/64, 4, 16).permute(0, 2, 3, 1, 4)."""
    n, k = w.shape
    x = w.reshape(n // 16, 16, k // 64, 4, 16)
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1, 4)).reshape(n, k)


@pytest.mark.parametrize("dtype,shape", [(FNUZ, (256, 512)), (FN, (48, 128)), (np.int8, (16, 64))])
def test_layout_matches_aiter_and_round_trips(dtype, shape):
    rng = np.random.default_rng(0)
    w = np.asarray(rng.uniform(-8, 8, shape)).astype(dtype)
    s = jax.jit(shuffle_weight, static_argnums=1)(w, FLATMM_LAYOUT)
    assert isinstance(s, ShuffledWeight) and s.layout == FLATMM_LAYOUT and s.dtype == w.dtype
    assert s.shape == w.shape
    got = np.asarray(s.data).view(np.uint8)
    np.testing.assert_array_equal(got, reference_layout(w.view(np.uint8)))
    np.testing.assert_array_equal(np.asarray(unshuffle_weight(s)).view(np.uint8),
                                  w.view(np.uint8))
    # The byte formula the kernels use (kernels/shared/aiter_flatmm.h).
    n, k = shape
    nn, kk = np.meshgrid(np.arange(n), np.arange(k), indexing="ij")
    off = ((nn // 16) * (k // 16) + kk // 16) * 256 + (nn % 16) * 16 + kk % 16
    np.testing.assert_array_equal(got.reshape(-1)[off], w.view(np.uint8))


def test_layout_rejects_shapes_it_cannot_hold():
    with pytest.raises(ValueError, match=r"N % 16 == 0 and K % 64 == 0"):
        shuffle_weight(np.zeros((24, 128), np.int8), FLATMM_LAYOUT)
    with pytest.raises(ValueError, match=r"N % 16 == 0 and K % 64 == 0"):
        shuffle_weight(np.zeros((16, 96), np.int8), FLATMM_LAYOUT)


@pytest.mark.parametrize("dtype", [FN, FNUZ])
def test_quantizers(dtype):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(5, 256)).astype(np.float32) * np.array([1e-3, 1, 30, 1, 1])[:, None]
    x[2, 128:] = 0  # an all-zero block
    q, s = jax.jit(quantize_activation_blocks, static_argnums=1)(x, dtype)
    assert q.dtype == dtype and q.shape == x.shape and s.shape == (2, 5) and s.dtype == jnp.float32
    deq = np.asarray(q, np.float64) * np.repeat(np.asarray(s, np.float64).T, 128, axis=1)
    sx = np.repeat(np.asarray(s, np.float64).T, 128, axis=1)
    assert (np.abs(deq - x) <= 2.0**-4 * np.abs(x) + sx * 2.0**-9).all()
    fmax = float(jnp.finfo(dtype).max)
    assert np.isclose(np.abs(np.asarray(q, np.float64)).max(), fmax)
    assert (np.asarray(q, np.float64)[2, 128:] == 0).all()
    w = rng.normal(size=(256, 384)).astype(np.float32)
    wq, ws = quantize_weight_blocks(w, dtype)
    assert wq.shape == w.shape and ws.shape == (3, 2)
    wdeq = np.asarray(wq, np.float64) * np.kron(np.asarray(ws, np.float64).T, np.ones((128, 128)))
    assert (np.abs(wdeq - w) <= 2.0**-4 * np.abs(w) + 2.0**-9 * np.abs(w).max()).all()
    with pytest.raises(ValueError, match="K % 128"):
        quantize_activation_blocks(np.zeros((2, 96)), dtype)
    with pytest.raises(ValueError, match="multiples of 128"):
        quantize_weight_blocks(np.zeros((96, 128)), dtype)


def _inputs(rng, m, n, k, dtype):
    """fp8 inputs of magnitude up to 8 and positive scales; outputs of order 1."""
    x = rng.uniform(-8, 8, (m, k)).astype(np.float32).astype(dtype)
    w = rng.uniform(-8, 8, (n, k)).astype(np.float32).astype(dtype)
    xs = rng.uniform(0.002, 0.02, (k // 128, m)).astype(np.float32)
    ws = rng.uniform(0.002, 0.02, (k // 128, -(-n // 128))).astype(np.float32)
    return x, w, xs, ws


def assert_flatmm_close(what, got, x, w, xs, ws):
    """|got - ref| <= u16 |ref| + (128 + K/128 + 8) u32 scale + 2^-24: ref from the dequantized
    inputs in float64 (ml_dtypes decodes the fp8), scale = sum_b xs ws sum |x w|; float32
    partials of 128 products, K/128 float32 folds, one f16 rounding. NaN fails."""
    x64 = np.asarray(x).astype(np.float64)
    w64 = np.asarray(w).astype(np.float64)
    m, k = x64.shape
    n = w64.shape[0]
    ref = np.zeros((m, n))
    mag = np.zeros((m, n))
    for b in range(k // 128):
        sl = slice(128 * b, 128 * b + 128)
        s = np.asarray(xs, np.float64)[b][:, None] * np.repeat(np.asarray(ws, np.float64)[b],
                                                               128)[:n][None, :]
        ref += (x64[:, sl] @ w64[:, sl].T) * s
        mag += (np.abs(x64[:, sl]) @ np.abs(w64[:, sl]).T) * s
    bound = U16 * np.abs(ref) + (128 + k // 128 + 8) * U32 * mag + 2.0**-24
    got = np.asarray(got.astype(jnp.float32), np.float64)
    assert got.shape == ref.shape
    bad = ~(np.abs(got - ref) <= bound)
    if bad.any():
        i = tuple(int(v) for v in np.argwhere(bad)[0])
        raise AssertionError(f"{what}: {int(bad.sum())} of {bad.size} out of tolerance, e.g. {i}: "
                             f"got {got[i]!r} ref {ref[i]!r} bound {bound[i]:.3g}")


@functools.cache
def _forward(dispatch, kernel=None):
    def body(x, w, xs, ws):
        return (flatmm_fp8(x, w, xs, ws, kernel=kernel, dispatch=dispatch),)
    return body


def _run(x, w, xs, ws, dispatch, kernel=None):
    sw = shuffle_weight(w, FLATMM_LAYOUT)
    (out,) = run_poisoned(_forward(dispatch, kernel), x, sw, xs, ws)
    assert out.dtype == jnp.float16 and out.shape == (x.shape[0], w.shape[0])
    return out


# Odd and large shapes: M = 1..2048, N multiples of 16 (not of 128), K multiples of 128.
VALUE_CASES = [(1, 16, 128), (7, 48, 256), (33, 144, 384), (130, 272, 1024), (1, 4096, 1024),
               (300, 256, 512), (2048, 128, 128)]


@pytest.mark.parametrize("m,n,k", VALUE_CASES)
@pytest.mark.parametrize("dtype", PORTABLE_FP8, ids=lambda d: jnp.dtype(d).name)
@pytest.mark.parametrize("dispatch", [Dispatch(), PORTABLE], ids=["auto", "portable"])
def test_values(m, n, k, dtype, dispatch):
    rng = np.random.default_rng(m * 131 + n + k)
    for _ in range(2):  # two data sets through one compiled function (poison.py)
        x, w, xs, ws = _inputs(rng, m, n, k, dtype)
        out = _run(x, w, xs, ws, dispatch)
        assert_flatmm_close(f"{m}x{n}x{k}", out, x, w, xs, ws)


# AITER's kernel planned for gfx942, run through its twin; chosen, and forced by name.
ASM_CASES = [(1, 256, 128), (130, 512, 640), (300, 768, 256), (257, 1024, 384)]


@pytest.mark.parametrize("m,n,k", ASM_CASES)
@pytest.mark.parametrize("kernel", [None, AITER_KERNEL], ids=["chosen", "forced"])
def test_asm_through_its_twin(m, n, k, kernel):
    rng = np.random.default_rng(m + n + k)
    x, w, xs, ws = _inputs(rng, m, n, k, ASM_FP8)
    out = _run(x, w, xs, ws, ASM_942, kernel)
    assert_flatmm_close(f"gfx942 {m}x{n}x{k}", out, x, w, xs, ws)


def test_plan_shows_aiter_kernel_and_grid():
    operands, attrs = describe(300, 512, 640, "float8_e4m3fnuz")
    plan = jax_aiter.plan("aiter.gemm_fp8_blockscale", operands, attrs, "gfx942", 304)
    assert plan["chosen"]["tier"] == "asm", plan
    text = str(plan)
    assert AITER_KERNEL in text and "'num_tokens'" in text, text
    operands, attrs = describe(300, 272, 640, "float8_e4m3fnuz")
    plan = jax_aiter.plan("aiter.gemm_fp8_blockscale", operands, attrs, "gfx942", 304)
    assert plan["chosen"]["tier"] == "portable", plan
    assert "N = 272 is not a multiple of 256" in str(plan), plan


def test_three_lines_from_bf16():
    rng = np.random.default_rng(5)
    x = jnp.asarray(rng.normal(size=(64, 512)), jnp.bfloat16)
    wf = jnp.asarray(rng.normal(size=(256, 512)) * 0.05, jnp.bfloat16)
    dtype = jax_aiter.fp8_dtype()  # a user's three lines: the default device's format, any tier
    wq, ws = quantize_weight_blocks(wf, dtype)
    w = shuffle_weight(wq, FLATMM_LAYOUT)

    @jax.jit
    def layer(x, w, ws):
        xq, xs = quantize_activation_blocks(x, dtype)
        return flatmm_fp8(xq, w, xs, ws)

    y = layer(x, w, ws)
    assert y.shape == (64, 256) and y.dtype == jnp.float16
    xq, xs = quantize_activation_blocks(x, dtype)
    assert_flatmm_close("3 lines", y, xq, wq, xs, ws)
    # Close to the bf16 product too (quantization error only).
    ref = np.asarray(x, np.float64) @ np.asarray(wf, np.float64).T
    assert np.abs(np.asarray(y, np.float64) - ref).max() < 0.05 * np.abs(ref).max()


def test_errors():
    rng = np.random.default_rng(9)
    dtype = PORTABLE_FP8[0]
    x, w, xs, ws = _inputs(rng, 8, 256, 256, dtype)
    sw = shuffle_weight(w, FLATMM_LAYOUT)
    with pytest.raises(TypeError, match="operand w: expected a ShuffledWeight"):
        flatmm_fp8(x, w, xs, ws)
    with pytest.raises(ValueError, match=r"\"flatmm\" layout, got one in \(16, 16\)"):
        flatmm_fp8(x, shuffle_weight(w, (16, 16)), xs, ws)
    with pytest.raises(ValueError, match=r"operand x_scale: .*looks like \[M, K/128\]: pass "
                                         r"x_scale.T"):
        flatmm_fp8(x, sw, xs.T, ws)
    with pytest.raises(ValueError, match="operand w_scale"):
        flatmm_fp8(x, sw, xs, ws[:, :1])
    with pytest.raises(ValueError, match="K=192 is not a multiple of 128"):
        flatmm_fp8(np.zeros((8, 192), dtype), ShuffledWeight(jnp.zeros((256, 192), dtype),
                                                             FLATMM_LAYOUT), xs, ws)
    # What only C++ checks (the core's, naming its operands): dtypes, the layout's multiples,
    # the tiers' gates.
    with pytest.raises(Exception, match=r"operand a: expected f8_e4m3fn or f8_e4m3fnuz"):
        jax.block_until_ready(flatmm_fp8(jnp.asarray(x, jnp.bfloat16), sw, xs, ws))
    with pytest.raises(Exception, match=r"operand b: expected f8_e4m3"):
        other = FNUZ if dtype == FN else FN
        bad = ShuffledWeight(jnp.asarray(w).astype(other), FLATMM_LAYOUT)
        jax.block_until_ready(flatmm_fp8(x, bad, xs, ws))
    with pytest.raises(Exception, match=r"operand a_scale: expected f32\[2,8\]"):
        jax.block_until_ready(flatmm_fp8(x, sw, jnp.asarray(xs, jnp.bfloat16), ws))
    x2, w2, xs2, ws2 = _inputs(rng, 8, 120, 128, dtype)
    with pytest.raises(Exception, match="N=120 is not a multiple of 16"):
        jax.block_until_ready(flatmm_fp8(x2, ShuffledWeight(jnp.asarray(w2), FLATMM_LAYOUT),
                                         xs2, ws2))
    x3, w3, xs3, ws3 = _inputs(rng, 8, 272, 128, ASM_FP8)
    with pytest.raises(Exception, match="N = 272 is not a multiple of 256"):
        jax.block_until_ready(flatmm_fp8(x3, shuffle_weight(w3, FLATMM_LAYOUT), xs3, ws3,
                                         dispatch=ASM_942))
    with pytest.raises(Exception, match="gfx942 only"):
        jax.block_until_ready(flatmm_fp8(x, sw, xs, ws, dispatch=Dispatch("asm", "gfx950")))
    with pytest.raises(Exception, match=r"attribute kernel: .*flatmm kernels.*got 'nope'"):
        jax.block_until_ready(flatmm_fp8(x, sw, xs, ws, kernel="nope", dispatch=ASM_942))


def test_grad_is_a_clear_error():
    rng = np.random.default_rng(3)
    x, w, xs, ws = _inputs(rng, 4, 16, 128, PORTABLE_FP8[0])
    sw = shuffle_weight(w, FLATMM_LAYOUT)
    with pytest.raises(TypeError, match="inference op: it has no gradient"):
        jax.grad(lambda s: flatmm_fp8(x, sw, s, ws).astype(jnp.float32).sum())(jnp.asarray(xs))
