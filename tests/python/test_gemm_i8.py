"""jax_aiter.quant and jax_aiter.gemm_i8 through JAX: the weight shuffle and its inverse, the quantize helpers, and
gemm_i8 against a float64 reference computed from the dequantized inputs, each tier forced (the
ASM tier's plans run through the ABI twins of AITER's INT8 kernels off AMD hardware, every row
at least once, split-K included), outputs poisoned; bad input and grad are clear errors.

Runs on whatever platform JAX has (CPU in CI: the Host backend's C++ twins).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jax_aiter
from jax_aiter import Dispatch
from jax_aiter.gemm_i8 import describe, gemm_i8
from jax_aiter.quant import (I8_LAYOUT, ShuffledWeight, quantize_per_channel, quantize_per_token,
                             shuffle_weight, unshuffle_weight)
from poison import run_poisoned


ASM_942 = Dispatch("asm", "gfx942", 304)
ASM_950 = Dispatch("asm", "gfx950", 256)
PORTABLE = Dispatch("portable")
U = 2.0**-8  # bf16 unit roundoff

# AITER's i8gemm rows (hsa/<arch>/i8gemm/i8gemm_bf16_perTokenI8.csv): (tile_m, tile_n, may split,
# archs).
ROWS = [(112, 256, False, ("gfx942",))] + [
    (tm, 128, True, ("gfx942", "gfx950")) for tm in (16, 32, 48, 64, 80, 96, 128, 160)]


def row_name(tm, tn):
    return f"I8gemm_bf16_perTokenI8_BpreShuffle_{tm}x{tn}"


def reference_shuffle(w, n_in, ik):
    """AITER's shuffle_weight, in NumPy, as AITER writes it (view, permute, contiguous)."""
    per16 = 16 // w.dtype.itemsize
    bk = 2 * ik
    n, k = w.shape
    x = w.reshape(n // n_in, n_in, k // bk, bk // per16, per16)
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1, 4)).reshape(n, k)


@pytest.mark.parametrize("dtype,layout,shape", [
    (np.int8, (16, 16), (64, 256)),
    (np.int8, (32, 16), (96, 64)),
    (jnp.bfloat16, (16, 16), (32, 64)),
])
def test_shuffle_matches_aiter_and_round_trips(dtype, layout, shape):
    rng = np.random.default_rng(0)
    w = np.asarray(rng.integers(-128, 128, shape)).astype(dtype)
    s = jax.jit(shuffle_weight, static_argnums=1)(w, layout)
    assert isinstance(s, ShuffledWeight) and s.layout == layout and s.dtype == w.dtype
    np.testing.assert_array_equal(np.asarray(s.data), reference_shuffle(w, *layout))
    np.testing.assert_array_equal(np.asarray(unshuffle_weight(s)), w)


def test_shuffle_rejects_shapes_the_layout_cannot_hold():
    with pytest.raises(ValueError, match=r"N % 16 == 0 and K % 32 == 0"):
        shuffle_weight(np.zeros((24, 64), np.int8))
    with pytest.raises(ValueError, match=r"N % 16 == 0 and K % 32 == 0"):
        shuffle_weight(np.zeros((16, 48), np.int8))


def test_quantize_helpers():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(3, 5, 256)).astype(np.float32)
    x[1, 2] = 0  # an all-zero row
    q, s = jax.jit(quantize_per_token)(jnp.asarray(x, jnp.bfloat16))
    assert q.dtype == jnp.int8 and q.shape == x.shape and s.shape == (3, 5, 1)
    assert s.dtype == jnp.float32
    xb = np.asarray(jnp.asarray(x, jnp.bfloat16).astype(np.float32))
    err = np.abs(np.asarray(q, np.float64) * np.asarray(s) - xb)
    assert (err <= np.asarray(s) * 0.5 * (1 + 1e-5)).all()  # a tie rounds either way
    assert np.abs(np.asarray(q)).max() == 127
    assert (np.asarray(q)[1, 2] == 0).all()
    wq, ws = quantize_per_channel(rng.normal(size=(48, 64)))
    assert wq.shape == (48, 64) and ws.shape == (1, 48)
    with pytest.raises(ValueError, match="weight"):
        quantize_per_channel(np.zeros((2, 3, 4)))


def _inputs(rng, m, n, k, bias, lead=None):
    a = rng.integers(-127, 128, (m, k) if lead is None else (*lead, k)).astype(np.int8)
    w = rng.integers(-127, 128, (n, k)).astype(np.int8)
    sa = rng.uniform(1e-3, 2e-2, (*a.shape[:-1], 1)).astype(np.float32)
    sb = rng.uniform(1e-3, 2e-2, (1, n)).astype(np.float32)
    c = rng.uniform(-1, 1, (n,)).astype(np.float32) if bias else None
    return a, w, sa, sb, c


def assert_i8_close(what, got, a, w, sa, sb, bias, steps=1):
    """|got - ref| <= u |ref| + ((steps - 1) u + 8 u_f32) scale: ref from the dequantized inputs
    in float64, scale = sum_k |a b| sa sb (+ |bias|); one bf16 rounding (one per split where the
    splits add into the bf16 output), a few float32 ones in the epilogue. NaN fails."""
    a64 = np.asarray(a, np.float64).reshape(-1, a.shape[-1])
    w64 = np.asarray(w, np.float64)
    s = np.asarray(sa, np.float64).reshape(-1, 1) * np.asarray(sb, np.float64).reshape(1, -1)
    ref = (a64 @ w64.T) * s
    scale = (np.abs(a64) @ np.abs(w64).T) * s
    if bias is not None:
        ref = ref + np.asarray(bias, np.float64)
        scale = scale + np.abs(np.asarray(bias, np.float64))
    bound = U * np.abs(ref) + ((steps - 1) * U + 8 * 2.0**-24) * scale + 1e-30
    got = np.asarray(got.astype(jnp.float32), np.float64).reshape(ref.shape)
    bad = ~(np.abs(got - ref) <= bound)
    if bad.any():
        i = tuple(int(v) for v in np.argwhere(bad)[0])
        raise AssertionError(f"{what}: {int(bad.sum())} of {bad.size} out of tolerance, e.g. {i}: "
                             f"got {got[i]!r} ref {ref[i]!r} bound {bound[i]:.3g}")


@functools.cache
def _forward(dispatch, kernel=None, splitk=None):
    def body(a, w, sa, sb, bias):
        return (gemm_i8(a, w, sa, sb, bias, kernel=kernel, splitk=splitk, dispatch=dispatch),)
    return body


def _run(a, w, sa, sb, bias, dispatch, kernel=None, splitk=None):
    sw = shuffle_weight(w)
    (out,) = run_poisoned(_forward(dispatch, kernel, splitk), a, sw, sa, sb, bias)
    assert out.dtype == jnp.bfloat16 and out.shape == (*a.shape[:-1], w.shape[0])
    return out


def _split_of(m, n, k, bias, dispatch, kernel=None, splitk=None):
    """The split the plan chose (jax-aiter-plan), for the tolerance."""
    operands, attrs = describe(m, n, k, bias, kernel, splitk)
    plan = jax_aiter.plan("aiter.gemm_i8", operands, {**attrs, **dispatch.attributes()}, "host")
    return plan["chosen"]["plan"]["notes"]["split"]


# Odd and large shapes: M = 1..4096, N multiples of 16 (not of 128), K multiples of 32 (not 128).
VALUE_CASES = [(1, 16, 32, False), (7, 48, 96, True), (33, 144, 160, True), (1, 4096, 4096, True),
               (300, 256, 1024, False), (4096, 128, 128, True), (130, 272, 4128, True)]


@pytest.mark.parametrize("m,n,k,bias", VALUE_CASES)
@pytest.mark.parametrize("dispatch", [Dispatch(), PORTABLE], ids=["auto", "portable"])
def test_values(m, n, k, bias, dispatch):
    rng = np.random.default_rng(m * 131 + n + k)
    for _ in range(2):  # two data sets through one compiled function (poison.py)
        a, w, sa, sb, c = _inputs(rng, m, n, k, bias)
        out = _run(a, w, sa, sb, c, dispatch)
        assert_i8_close(f"{m}x{n}x{k}", out, a, w, sa, sb, c)


# The portable tier's K split (int32 accumulator + finish kernel), forced: exact sums, so the
# tolerance is the unsplit one whatever the split; splits that leave a short last chunk. A split
# that whole 64-wide K steps cannot make (K = 32 in 2, K = 640 in 16) is refused with the reason,
# never run as another (ops/aiter_knobs.hpp).
@pytest.mark.parametrize("m,n,k,splitk", [(1, 16, 32, 2), (5, 144, 1024, 3), (16, 256, 4128, 5),
                                          (33, 128, 640, 16), (130, 272, 4096, 7)])
def test_portable_split(m, n, k, splitk):
    rng = np.random.default_rng(m * 7 + n + k + splitk)
    a, w, sa, sb, c = _inputs(rng, m, n, k, m % 2 == 1)
    chunk = -(-(-(-k // splitk)) // 64) * 64
    if -(-k // chunk) != splitk:
        with pytest.raises(Exception, match=f"portable: splitk {splitk}: K = {k} cuts into"):
            jax.block_until_ready(_run(a, w, sa, sb, c, PORTABLE, splitk=splitk))
        return
    assert _split_of(m, n, k, c is not None, PORTABLE, splitk=splitk) == splitk
    out = _run(a, w, sa, sb, c, PORTABLE, splitk=splitk)
    assert_i8_close(f"split {splitk} {m}x{n}x{k}", out, a, w, sa, sb, c)
    unsplit = _run(a, w, sa, sb, c, PORTABLE)
    np.testing.assert_array_equal(np.asarray(out.astype(jnp.float32)),
                                  np.asarray(unsplit.astype(jnp.float32)))


# The heuristic's own choice, planned for each arch, run through the twins.
ASM_CASES = [(1, 4096, 1024, True), (100, 768, 512, False), (640, 1024, 256, True),
             (2048, 256, 128, False)]


@pytest.mark.parametrize("m,n,k,bias", ASM_CASES)
@pytest.mark.parametrize("dispatch", [ASM_942, ASM_950], ids=["gfx942", "gfx950"])
def test_asm_heuristic_through_its_twins(m, n, k, bias, dispatch):
    rng = np.random.default_rng(m + n + k)
    a, w, sa, sb, c = _inputs(rng, m, n, k, bias)
    out = _run(a, w, sa, sb, c, dispatch)
    assert_i8_close(f"{dispatch.asm_arch} {m}x{n}x{k}", out, a, w, sa, sb, c,
                    steps=_split_of(m, n, k, bias, dispatch))


# Every row forced on each arch that has it, unsplit and (rows that split) split 3.
ROW_CASES = [(arch, tm, tn, split)
             for tm, tn, may_split, archs in ROWS for arch in archs
             for split in ((None, 3) if may_split else (None,))]


@pytest.mark.parametrize("arch,tm,tn,splitk", ROW_CASES)
def test_every_row_forced_through_its_twin(arch, tm, tn, splitk):
    dispatch = ASM_942 if arch == "gfx942" else ASM_950
    m, n, k = tm + 19, 2 * tn, 640
    rng = np.random.default_rng(tm * 7 + (splitk or 0))
    a, w, sa, sb, c = _inputs(rng, m, n, k, True)
    out = _run(a, w, sa, sb, c, dispatch, row_name(tm, tn), splitk)
    assert _split_of(m, n, k, True, dispatch, row_name(tm, tn), splitk) == (splitk or 1)
    assert_i8_close(f"{arch} {tm}x{tn} split {splitk}", out, a, w, sa, sb, c, steps=splitk or 1)


def test_three_lines_from_bf16_with_leading_dims_and_vmap():
    rng = np.random.default_rng(5)
    x = jnp.asarray(rng.normal(size=(2, 3, 256)), jnp.bfloat16)
    wf = jnp.asarray(rng.normal(size=(128, 256)), jnp.bfloat16)
    wq, ws = quantize_per_channel(wf)
    w = shuffle_weight(wq)

    @jax.jit
    def layer(x, w, ws):
        xq, xs = quantize_per_token(x)
        return gemm_i8(xq, w, xs, ws)

    y = layer(x, w, ws)
    assert y.shape == (2, 3, 128) and y.dtype == jnp.bfloat16
    xq, xs = quantize_per_token(x)
    assert_i8_close("3 lines", y, np.asarray(xq), np.asarray(wq), np.asarray(xs), np.asarray(ws),
                    None)
    # Close to the bf16 product too (quantization error only).
    ref = np.asarray(x, np.float64) @ np.asarray(wf, np.float64).T
    assert np.abs(np.asarray(y, np.float64) - ref).max() < 0.05 * np.abs(ref).max()
    yv = jax.vmap(lambda x: layer(x, w, ws))(x)
    np.testing.assert_array_equal(np.asarray(yv, np.float32), np.asarray(y, np.float32))


def test_errors():
    rng = np.random.default_rng(9)
    a, w, sa, sb, c = _inputs(rng, 8, 128, 128, True)
    sw = shuffle_weight(w)
    with pytest.raises(TypeError, match="operand b: expected a ShuffledWeight"):
        gemm_i8(a, w, sa, sb)
    with pytest.raises(ValueError, match=r"layout \(16, 16\), got one in \(32, 16\)"):
        gemm_i8(a, shuffle_weight(w, (32, 16)), sa, sb)
    # A named layout is named, not spelt out letter by letter.
    with pytest.raises(ValueError, match=r"layout \(16, 16\), got one in 'flatmm'$"):
        gemm_i8(a, jax_aiter.ShuffledWeight(sw.data, "flatmm"), sa, sb)
    with pytest.raises(ValueError, match="operand a_scale"):
        gemm_i8(a, sw, sa.reshape(-1), sb)
    with pytest.raises(ValueError, match="operand b_scale"):
        gemm_i8(a, sw, sa, sb[:, :64])
    with pytest.raises(ValueError, match="operand bias"):
        gemm_i8(a, sw, sa, sb, c[:64])
    # What only C++ checks: dtypes, the family's multiples, the forced kernel.
    with pytest.raises(Exception, match=r"operand a: expected i8\[M,K\], got bf16"):
        jax.block_until_ready(gemm_i8(jnp.asarray(a, jnp.bfloat16), sw, sa, sb))
    with pytest.raises(Exception, match=r"operand b: expected i8\[N,128\]"):
        bad = ShuffledWeight(jnp.asarray(w, jnp.int32), I8_LAYOUT)
        jax.block_until_ready(gemm_i8(a, bad, sa, sb))
    with pytest.raises(Exception, match=r"operand a_scale: expected f32\[8,1\]"):
        jax.block_until_ready(gemm_i8(a, sw, jnp.asarray(sa, jnp.bfloat16), sb))
    # A ShuffledWeight made by hand skips shuffle_weight's checks; C++ still refuses the shapes.
    a2, w2, sa2, sb2, _ = _inputs(rng, 8, 128, 80, False)
    with pytest.raises(Exception, match="K=80 is not a multiple of 32"):
        jax.block_until_ready(gemm_i8(a2, ShuffledWeight(jnp.asarray(w2), I8_LAYOUT), sa2, sb2))
    a2, w2, sa2, sb2, _ = _inputs(rng, 8, 120, 64, False)
    with pytest.raises(Exception, match="N=120 is not a multiple of 16"):
        jax.block_until_ready(gemm_i8(a2, ShuffledWeight(jnp.asarray(w2), I8_LAYOUT), sa2, sb2))
    with pytest.raises(Exception, match=r"attribute kernel: .*i8gemm kernels.*got 'nope'"):
        jax.block_until_ready(gemm_i8(a, sw, sa, sb, kernel="nope", dispatch=ASM_942))
    with pytest.raises(Exception, match="forced kernel is not an i8gemm row for this arch"):
        jax.block_until_ready(gemm_i8(a, sw, sa, sb, kernel=row_name(112, 256),
                                      dispatch=ASM_950))
    a3, w3, sa3, sb3, _ = _inputs(rng, 8, 128, 96, False)
    with pytest.raises(Exception, match="K = 96 is not a multiple of 128"):
        jax.block_until_ready(gemm_i8(a3, shuffle_weight(w3), sa3, sb3, dispatch=ASM_942))


def test_grad_is_a_clear_error():
    rng = np.random.default_rng(3)
    a, w, sa, sb, _ = _inputs(rng, 4, 16, 32, False)
    sw = shuffle_weight(w)
    with pytest.raises(TypeError, match="inference op: it has no gradient"):
        jax.grad(lambda s: gemm_i8(a, sw, s, sb).astype(jnp.float32).sum())(jnp.asarray(sa))


# ---- jax-aiter-plan for the quantized GEMMs ---------------------------------------------------

def _plan_cli(*argv):
    import json
    import os
    import subprocess
    import sys
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    out = subprocess.run([sys.executable, "-m", "jax_aiter.tools", "plan", *argv],
                         capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize("op,arch,symbol", [
    ("gemm_i8", "gfx942", "_ZN5aiter"),                  # an i8gemm row
    ("gemm_i8", "sm_90", "jax_aiter_gemm_i8_stream"),
    ("gemm_fp8_blockscale", "sm_90", "jax_aiter_gemm_fp8_blockscale_stream"),
    ("gemm_fp4", "sm_90", "jax_aiter_gemm_fp4_stream"),
    ("gemm_fp8_blockscale", "gfx942", "fp8gemm_bf16_blockscale_BpreShuffle"),
    ("gemm_fp8_mi350", "gfx950", "f8_block_scale_mi350_x32"),
    ("flatmm_fp8", "gfx942", "flatmm_uk_gfx9_f16f8_128x256x128_1x4x1_16x16x32"),
    ("gemm_fp4", "gfx950", "f4gemm_bf16_per1x32Fp4_BpreShuffle"),
])
def test_plan_tool_quantized_ops(op, arch, symbol):
    """Each quantized GEMM has a jax-aiter-plan command: a decode shape's chosen kernel."""
    plan = _plan_cli(op, "--m", "16", "--n", "4096", "--k", "4096", "--arch", arch)
    symbols = [s["launch"]["symbol"] for s in plan["chosen"]["plan"]["steps"] if "launch" in s]
    assert any(symbol in s for s in symbols), (op, arch, symbols)
