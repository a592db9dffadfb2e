"""jax_aiter.gemm_fp8_mi350 through JAX: the block quantizers, the weight shuffle, and the op
against a float64 reference computed from the dequantized inputs (fp8 decoded by ml_dtypes,
independently of our C++), each tier forced (the ASM tier's plans run through the ABI twins of
AITER's MI350 kernels off AMD hardware, every row - x64 and x96 too - at least once), outputs
poisoned; AITER's gates, bad input and grad are clear errors.

Runs on whatever platform JAX has (CPU in CI: the Host backend's C++ twins).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import jax_aiter
from jax_aiter import Dispatch
from jax_aiter.gemm_fp8_mi350 import (MI350_KERNELS, MI350_LAYOUT, describe, gemm_fp8_mi350,
                                      quantize_token_blocks, quantize_weight_blocks)
from jax_aiter.quant import ShuffledWeight, shuffle_weight, unshuffle_weight
from poison import run_poisoned

ASM = Dispatch("asm", "gfx950", 256)
PORTABLE = Dispatch("portable")
U = 2.0**-8  # bf16 unit roundoff
E4M3FN = jnp.float8_e4m3fn
ON_CPU = jax.default_backend() == "cpu"


def decode(q):
    """fp8 -> float64, by ml_dtypes (not by our code)."""
    q = np.asarray(q)
    return q.view(getattr(ml_dtypes, q.dtype.name)).astype(np.float64)


def reference(xq, wq, xs, ws):
    """float64 block-scale product and its magnitude sum (for the bound)."""
    x, w = decode(xq), decode(wq)
    xs, ws = np.asarray(xs, np.float64), np.asarray(ws, np.float64)
    m, k = x.shape
    ref = np.zeros((m, w.shape[0]))
    mag = np.zeros_like(ref)
    for kb in range(k // 128):
        sl = slice(128 * kb, 128 * kb + 128)
        s = xs[kb][:, None] * np.repeat(ws[:, kb], 128)[None, :]
        ref += (x[:, sl] @ w[:, sl].T) * s
        mag += (np.abs(x[:, sl]) @ np.abs(w[:, sl]).T) * np.abs(s)
    return ref, mag


def assert_close(what, got, xq, wq, xs, ws):
    """|got - ref| <= u |ref| + (K/128 + 160) u_f32 sum|terms|: one bf16 rounding, float32 sums
    (each block's on the tensor cores, then the scaled blocks). NaN fails."""
    ref, mag = reference(xq, wq, xs, ws)
    k = np.asarray(xq).shape[1]
    bound = U * np.abs(ref) + (k / 128 + 160) * 2.0**-24 * mag + 1e-30
    got = np.asarray(jnp.asarray(got).astype(jnp.float32), np.float64)
    assert got.shape == ref.shape
    bad = ~(np.abs(got - ref) <= bound)
    if bad.any():
        i = tuple(int(v) for v in np.argwhere(bad)[0])
        raise AssertionError(f"{what}: {int(bad.sum())} of {bad.size} out of tolerance, e.g. {i}: "
                             f"got {got[i]!r} ref {ref[i]!r} bound {bound[i]:.3g}")


def _inputs(rng, m, n, k, dtype=E4M3FN):
    """Random fp8 codes (finite) and positive scales of varied magnitude."""
    fmax = float(jnp.finfo(dtype).max)
    xq = jnp.asarray(rng.uniform(-fmax, fmax, (m, k)).astype(np.float32)).astype(dtype)
    wq = jnp.asarray(rng.uniform(-fmax, fmax, (n, k)).astype(np.float32)).astype(dtype)
    xs = jnp.asarray(rng.uniform(1e-4, 1e-2, (k // 128, m)).astype(np.float32))
    ws = jnp.asarray(rng.uniform(1e-4, 1e-2, (n // 128, k // 128)).astype(np.float32))
    return xq, wq, xs, ws


@functools.cache
def _forward(dispatch, kernel=None):
    def body(xq, wq, xs, ws):
        return (gemm_fp8_mi350(xq, wq, xs, ws, kernel=kernel, dispatch=dispatch),)
    return body


def _run(xq, wq, xs, ws, dispatch, kernel=None):
    (out,) = run_poisoned(_forward(dispatch, kernel), xq, shuffle_weight(wq), xs, ws)
    assert out.dtype == jnp.bfloat16 and out.shape == (xq.shape[0], wq.shape[0])
    return out


def _chosen(m, n, k, dispatch, kernel=None, dtype="float8_e4m3fn"):
    operands, attrs = describe(m, n, k, kernel, dtype)
    plan = jax_aiter.plan("aiter.gemm_fp8_blockscale", operands,
                          {**attrs, **dispatch.attributes()}, "host")
    launch = plan["chosen"]["plan"]["steps"][0]["launch"]
    return plan["chosen"]["tier"], launch["symbol"], launch["grid"]


def reference_shuffle(w):
    """AITER's shuffle_weight(w, (16, 16)) for 1-byte elements, in NumPy (view, permute)."""
    n, k = w.shape
    return np.ascontiguousarray(
        w.reshape(n // 16, 16, k // 32, 2, 16).transpose(0, 2, 3, 1, 4)).reshape(n, k)


def test_shuffle_fp8_matches_aiter_and_round_trips():
    rng = np.random.default_rng(0)
    w = jnp.asarray(rng.normal(size=(256, 384)).astype(np.float32)).astype(E4M3FN)
    s = jax.jit(shuffle_weight, static_argnums=1)(w, MI350_LAYOUT)
    assert isinstance(s, ShuffledWeight) and s.dtype == E4M3FN
    bits = np.asarray(w).view(np.uint8)
    np.testing.assert_array_equal(np.asarray(s.data).view(np.uint8), reference_shuffle(bits))
    np.testing.assert_array_equal(np.asarray(unshuffle_weight(s)).view(np.uint8), bits)


@pytest.mark.parametrize("dtype", [jnp.float8_e4m3fn, jnp.float8_e4m3fnuz])
def test_block_quantizers(dtype):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(5, 384)).astype(np.float32) * np.array([1, 100, 1e-3])[
        np.arange(384) // 128]
    x[2, 128:256] = 0  # an all-zero block
    xq, xs = jax.jit(quantize_token_blocks, static_argnums=1)(x, dtype)
    assert xq.dtype == dtype and xq.shape == x.shape and xs.shape == (3, 5)
    fmax = float(jnp.finfo(dtype).max)
    # Within half a unit of the format (3 mantissa bits), or of its smallest subnormal, per block.
    sx = np.repeat(np.asarray(xs, np.float64).T, 128, axis=1)
    tiny = float(jnp.finfo(dtype).smallest_subnormal)
    assert (np.abs(decode(xq) * sx - x) <= 2.0**-4 * np.abs(x) + tiny / 2 * sx).all()
    blocks = np.abs(decode(xq)).reshape(5, 3, 128).max(-1)
    assert np.allclose(blocks[np.abs(x).reshape(5, 3, 128).max(-1) > 0], fmax)
    assert float(xs[1, 2]) == 1.0 and (np.asarray(xq, np.float32)[2, 128:256] == 0).all()
    w = rng.normal(size=(256, 384)).astype(np.float32)
    wq, ws = quantize_weight_blocks(w, dtype)
    assert wq.shape == w.shape and ws.shape == (2, 3)
    sw = np.kron(np.asarray(ws, np.float64), np.ones((128, 128)))
    assert (np.abs(decode(wq) * sw - w) <= 2.0**-4 * np.abs(w) + tiny / 2 * sw).all()
    assert np.allclose(np.abs(decode(wq)).reshape(2, 128, 3, 128).max(axis=(1, 3)), fmax)
    with pytest.raises(ValueError, match="K % 128 == 0"):
        quantize_token_blocks(np.zeros((2, 100)))
    with pytest.raises(ValueError, match="N and K multiples of 128"):
        quantize_weight_blocks(np.zeros((100, 128)))


# Odd and large shapes: M = 1..2048 (below 16 too), N % 256 == 128, K from 128 up.
VALUE_CASES = [(1, 128, 128), (7, 384, 640), (16, 256, 512), (33, 384, 1024), (130, 640, 512),
               (1, 4096, 4096), (2048, 256, 512), (300, 128, 2176)]


@pytest.mark.parametrize("m,n,k", VALUE_CASES)
@pytest.mark.parametrize("dispatch", [Dispatch(), PORTABLE, ASM], ids=["auto", "portable", "asm"])
def test_values(m, n, k, dispatch):
    if dispatch is ASM and (m < 16 or k < 512):
        pytest.skip("outside AITER's gates (test_gates)")
    rng = np.random.default_rng(m * 131 + n + k)
    for _ in range(2):  # two data sets through one compiled function (poison.py)
        xq, wq, xs, ws = _inputs(rng, m, n, k)
        assert_close(f"{m}x{n}x{k}", _run(xq, wq, xs, ws, dispatch), xq, wq, xs, ws)


@pytest.mark.parametrize("m,want", [(16, 32), (32, 32), (33, 128), (100, 128), (4096, 128)])
def test_asm_rule_picks_x32_then_x128(m, want):
    tier, symbol, grid = _chosen(m, 640, 1024, ASM)
    assert tier == "asm" and symbol == f"f8_block_scale_mi350_x{want}"
    assert grid == [3, -(-m // want), 1]  # (ceil(N / 256), ceil(M / tile_m), 1)


@pytest.mark.parametrize("kernel", MI350_KERNELS)
def test_every_row_forced_through_its_twin(kernel):
    tm = int(kernel.rsplit("x", 1)[1])
    m, n, k = tm + 19, 384, 640  # a partial last row block and a 128-column last column block
    tier, symbol, grid = _chosen(m, n, k, ASM, kernel)
    assert (tier, symbol, grid) == ("asm", kernel, [2, 2, 1])
    rng = np.random.default_rng(tm)
    xq, wq, xs, ws = _inputs(rng, m, n, k)
    assert_close(kernel, _run(xq, wq, xs, ws, ASM, kernel), xq, wq, xs, ws)


def test_gates_and_the_portable_tier_below_them():
    rng = np.random.default_rng(4)
    # M < 16 and K < 512: AITER's kernels refuse (asm forced: a clear error), auto runs portable.
    for m, k, why in [(15, 512, "M = 15 is below 16"), (64, 384, "K = 384 is below 512")]:
        assert _chosen(m, 256, k, Dispatch(asm_arch="gfx950"))[0] == "portable"
        xq, wq, xs, ws = _inputs(rng, m, 256, k)
        with pytest.raises(Exception, match=why):
            jax.block_until_ready(gemm_fp8_mi350(xq, shuffle_weight(wq), xs, ws, dispatch=ASM))
        out = gemm_fp8_mi350(xq, shuffle_weight(wq), xs, ws, dispatch=Dispatch(asm_arch="gfx950"))
        assert_close(f"M={m} K={k}", out, xq, wq, xs, ws)
    # gfx942 has no MI350 kernels.
    with pytest.raises(Exception, match="gfx950 code only"):
        xq, wq, xs, ws = _inputs(rng, 32, 256, 512)
        jax.block_until_ready(gemm_fp8_mi350(xq, shuffle_weight(wq), xs, ws,
                                             dispatch=Dispatch("asm", "gfx942")))


@pytest.mark.skipif(not ON_CPU, reason="the host reads both e4m3 formats; a GPU reads its own")
def test_fnuz_on_the_host():
    rng = np.random.default_rng(6)
    xq, wq, xs, ws = _inputs(rng, 20, 256, 512, jnp.float8_e4m3fnuz)
    assert_close("fnuz portable", _run(xq, wq, xs, ws, PORTABLE), xq, wq, xs, ws)
    # The ASM plan is gfx950 code, which reads e4m3fn: refused, and auto runs portable.
    with pytest.raises(Exception, match="gfx950 reads f8_e4m3fn"):
        jax.block_until_ready(gemm_fp8_mi350(xq, shuffle_weight(wq), xs, ws, dispatch=ASM))
    assert _chosen(20, 256, 512, Dispatch(asm_arch="gfx950"), dtype="float8_e4m3fnuz")[0] == \
        "portable"


def test_three_lines_from_bf16_and_jit():
    rng = np.random.default_rng(5)
    x = jnp.asarray(rng.normal(size=(24, 512)), jnp.bfloat16)
    wf = jnp.asarray(rng.normal(size=(256, 512)), jnp.bfloat16)
    wq, ws = quantize_weight_blocks(wf, E4M3FN)
    w = shuffle_weight(wq)

    @jax.jit
    def layer(x, w, ws):
        xq, xs = quantize_token_blocks(x, E4M3FN)
        return gemm_fp8_mi350(xq, w, xs, ws)

    y = layer(x, w, ws)
    assert y.shape == (24, 256) and y.dtype == jnp.bfloat16
    xq, xs = quantize_token_blocks(x, E4M3FN)
    assert_close("3 lines", y, xq, wq, xs, ws)
    ref = np.asarray(x, np.float64) @ np.asarray(wf, np.float64).T
    assert np.abs(np.asarray(y, np.float64) - ref).max() < 0.1 * np.abs(ref).max()


def test_errors():
    rng = np.random.default_rng(9)
    xq, wq, xs, ws = _inputs(rng, 32, 256, 512)
    sw = shuffle_weight(wq)
    with pytest.raises(TypeError, match="operand wq: expected a ShuffledWeight"):
        gemm_fp8_mi350(xq, wq, xs, ws)
    with pytest.raises(ValueError, match=r"layout \(16, 16\), got one in \(32, 16\)"):
        gemm_fp8_mi350(xq, shuffle_weight(wq, (32, 16)), xs, ws)
    # A named layout is named, not spelt out letter by letter.
    with pytest.raises(ValueError, match=r"layout \(16, 16\), got one in 'flatmm'$"):
        gemm_fp8_mi350(xq, jax_aiter.ShuffledWeight(sw.data, "flatmm"), xs, ws)
    with pytest.raises(ValueError, match=r"operand x_scale: expected shape \(4, 32\)"):
        gemm_fp8_mi350(xq, sw, xs.T, ws)
    with pytest.raises(ValueError, match=r"operand w_scale: expected shape \(2, 4\)"):
        gemm_fp8_mi350(xq, sw, xs, ws.T)
    # What only C++ checks (the core's, naming its operands): dtypes, the forced kernel.
    with pytest.raises(Exception, match=r"operand a: expected f8_e4m3fn or f8_e4m3fnuz \[M,K\]"):
        jax.block_until_ready(gemm_fp8_mi350(jnp.asarray(xq, jnp.bfloat16), sw, xs, ws))
    with pytest.raises(Exception, match=r"operand b: expected f8_e4m3fn\[N,512\]"):
        bad = ShuffledWeight(jnp.asarray(wq, jnp.float8_e4m3fnuz), MI350_LAYOUT)
        jax.block_until_ready(gemm_fp8_mi350(xq, bad, xs, ws))
    with pytest.raises(Exception, match=r"operand a_scale: expected f32\[4,32\]"):
        jax.block_until_ready(gemm_fp8_mi350(xq, sw, jnp.asarray(xs, jnp.bfloat16), ws))
    with pytest.raises(Exception, match=r"attribute kernel: .*mi350 kernels.*got 'nope'"):
        jax.block_until_ready(gemm_fp8_mi350(xq, sw, xs, ws, kernel="nope", dispatch=ASM))
    with pytest.raises(ValueError, match="must be multiples of 128"):
        x2, w2, _, _ = _inputs(rng, 8, 256, 512)
        gemm_fp8_mi350(x2[:, :480], ShuffledWeight(w2[:, :480], MI350_LAYOUT),
                       np.zeros((3, 8), np.float32), np.zeros((2, 3), np.float32))


def test_grad_is_a_clear_error():
    rng = np.random.default_rng(3)
    xq, wq, xs, ws = _inputs(rng, 16, 128, 512)
    sw = shuffle_weight(wq)
    with pytest.raises(TypeError, match="inference op: it has no gradient"):
        jax.grad(lambda s: gemm_fp8_mi350(xq, sw, s, ws).astype(jnp.float32).sum())(xs)
