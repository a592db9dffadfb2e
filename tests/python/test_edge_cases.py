"""Edges of the ops' contracts, each a defect an audit found (issue 23), one section each, against
independent references (float64, ml_dtypes' bf16 rounding, the quantizers' rules restated).

Small shapes only: the whole file runs in seconds on the CPU (the Host backend's C++ twins).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import jax_aiter
from jax_aiter import Dispatch, shuffle_weight
from jax_aiter.flatmm_fp8 import FLATMM_LAYOUT

U = 2.0**-8  # bf16 unit roundoff
ASM_942 = Dispatch("asm", "gfx942", 304)
ASM_950 = Dispatch("asm", "gfx950", 256)
FP8 = jnp.float8_e4m3fn


def bf16(x):
    """float64 -> the nearest bf16, as float64 (an independent rounding: ml_dtypes)."""
    return np.asarray(x, np.float64).astype(ml_dtypes.bfloat16).astype(np.float64)


def _fp8_operands(m=32, n=256, k=256):
    """Valid operands of the FP8 block-scale GEMMs (e4m3fn): xq [m, k], wq [n, k] and their
    quantizers' scales [m, k/128], [n/128, k/128]."""
    x = np.random.default_rng(4).standard_normal((m, k)).astype(np.float32)
    w = np.random.default_rng(5).standard_normal((n, k)).astype(np.float32)
    xq, xs = jax_aiter.quantize_fp8_per_token_block(x, FP8)
    wq, ws = jax_aiter.quantize_fp8_per_block(w, FP8)
    return xq, wq, xs, ws


# ---- quantizers: NaN and Inf propagate as a NaN scale -----------------------------------------

def _rows_with(bad, shape=(3, 256), row=1, col=37, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    x[row, col] = bad
    return x


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_quantize_per_token_and_gemm_i8_propagate_nan(bad):
    x = _rows_with(bad)
    q, s = jax_aiter.quantize_per_token(x)
    q, s = np.asarray(q), np.asarray(s)
    assert np.isnan(s[1, 0]) and not np.any(q[1])  # the bad row: NaN scale, codes 0
    for r in (0, 2):  # the others as the rule says, untouched by the bad row
        amax = np.abs(x[r]).max()
        np.testing.assert_allclose(s[r, 0], amax / 127, rtol=1e-6)
        np.testing.assert_array_equal(q[r], np.clip(np.round(x[r] / s[r, 0]), -127, 127))
    w = np.random.default_rng(1).standard_normal((16, 256)).astype(np.float32)
    wq, ws = jax_aiter.quantize_per_channel(w)
    y = np.asarray(jax_aiter.gemm_i8(jnp.asarray(q), shuffle_weight(wq), s, ws)).astype(np.float64)
    assert np.all(np.isnan(y[1])) and np.all(np.isfinite(y[[0, 2]]))
    wb = _rows_with(bad, (4, 256), row=2, col=5)
    _, wsb = jax_aiter.quantize_per_channel(wb)
    assert np.isnan(np.asarray(wsb)[0, 2]) and np.all(np.isfinite(np.asarray(wsb)[0, [0, 1, 3]]))


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_quantize_fp8_blocks_propagate_nan(bad):
    x = _rows_with(bad)  # row 1, column 37: block (1, 0)
    q, s = jax_aiter.quantize_fp8_per_token_block(x, FP8)
    q, s = np.asarray(q).astype(np.float64), np.asarray(s)
    assert np.isnan(s[1, 0]) and not np.any(q[1, :128])
    finite = np.ones(s.shape, bool)
    finite[1, 0] = False
    assert np.all(np.isfinite(s[finite]))
    np.testing.assert_allclose(s[0, 1], np.abs(x[0, 128:]).max() / 448, rtol=1e-6)
    w = np.random.default_rng(2).standard_normal((256, 256)).astype(np.float32)
    w[200, 3] = bad  # block (1, 0)
    wq, ws = jax_aiter.quantize_fp8_per_block(w, FP8)
    ws = np.asarray(ws)
    assert np.isnan(ws[1, 0]) and np.all(np.isfinite(ws[[0, 0, 1], [0, 1, 1]]))
    assert not np.any(np.asarray(wq).astype(np.float64)[128:, :128])
    # Through the FP8 GEMM: every output that reads the NaN block is NaN, the others finite.
    xq, xs = jax_aiter.quantize_fp8_per_token_block(np.ones((2, 256), np.float32), FP8)
    y = np.asarray(jax_aiter.gemm_fp8_blockscale(xq, shuffle_weight(wq), xs, ws))
    y = y.astype(np.float64)
    assert np.all(np.isnan(y[:, 128:])) and np.all(np.isfinite(y[:, :128]))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_quantize_mxfp4_propagates_nan(bad):
    x = np.linspace(-3, 3, 2 * 64, dtype=np.float32).reshape(2, 64)
    x[0, 40] = bad  # row 0, block 1
    q, s = jax_aiter.quantize_mxfp4(x)
    s = np.asarray(s)
    assert s[0, 1] == 255  # e8m0's NaN
    assert not np.any(np.asarray(q)[0, 16:32])  # the block's codes are 0
    d = np.asarray(jax_aiter.dequantize_mxfp4(q, s))
    assert np.all(np.isnan(d[0, 32:])) and np.all(np.isfinite(d[0, :32])) and np.all(
        np.isfinite(d[1]))
    # An independent check of a finite block: dequant(q) within half an e2m1 step of x, scale by
    # OCP's rule 2^(floor(log2 amax) - 2).
    amax = np.abs(x[1, :32]).max()
    assert s[1, 0] == 127 + int(np.floor(np.log2(amax))) - 2
    wq, ws = jax_aiter.quantize_mxfp4(np.ones((16, 64), np.float32))
    y = np.asarray(jax_aiter.gemm_fp4(q, wq, s, ws)).astype(np.float64)
    assert np.all(np.isnan(y[0])) and np.all(np.isfinite(y[1]))


# ---- INT8 GEMM: exact int32 sums up to its documented K limit --------------------------------

def test_gemm_i8_k_limit_keeps_int32_sums_exact():
    """|a . b| <= 128 * 128 * K must stay below 2^31: at K = 2^17 the -128 x -128 rows sum to 2^31,
    which the int32 sums wrapped to -2^31 (split-K portable). K = 2^17 is refused now; the largest
    K allowed gives the exact value on every path."""
    def run(k, n=128, **kw):
        a = jnp.full((1, k), -128, jnp.int8)
        b = shuffle_weight(jnp.full((n, k), -128, jnp.int8))
        return jax_aiter.gemm_i8(a, b, jnp.ones((1, 1)), jnp.ones((1, n)), **kw)

    with pytest.raises(ValueError, match=r"aiter.gemm_i8: operand a: .*K=131072.*K <= 131071"):
        run(131072)
    with pytest.raises(ValueError, match=r"K <= 131071"):
        run(131072, splitk=1)
    for k, kw in [(131040, {}), (131040, {"splitk": 1}), (131040, {"splitk": 8}),
                  (131040, {"dispatch": Dispatch("portable")}),
                  (130944, {"dispatch": ASM_942}), (130944, {"dispatch": ASM_950})]:
        want = bf16(128.0 * 128.0 * k)  # exact in float64, one bf16 rounding
        got = np.asarray(run(k, **kw)).astype(np.float64)
        np.testing.assert_array_equal(got, np.full((1, 128), want), err_msg=f"K={k} {kw}")


# ---- the ASM tier's bf16 split-K: one bf16 rounding per split (AITER's contract) --------------

def test_asm_bf16_split_k_rounds_once_per_split():
    """AITER's split-K BF16 kernels have no workspace but the semaphore: the splits meet in `out`
    itself, so with bf16 out the running sum is rounded after every split (docs/ops/gemm.md). The
    documented bound |out - exact| <= 2^-8 * sum_z |S_z| (S_z the exact sum of the splits arrived
    so far, in the order they arrive) holds;
    the portable tier rounds once, <= 2^-8 |exact|."""
    m, n, k = 256, 1280, 512
    rng = np.random.default_rng(3)
    a = rng.standard_normal((m, k)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((n, k)).astype(ml_dtypes.bfloat16)
    plan = jax_aiter.plan("aiter.gemm", {"a": ("bfloat16", (m, k)), "b": ("bfloat16", (n, k)),
                                         "bias": None, "out": ("bfloat16", (m, n))},
                          {"kernel": "", "tier": "asm"}, "gfx942", 304)
    split = plan["chosen"]["plan"]["notes"]["split"]
    assert split == 5, plan["chosen"]["plan"]["notes"]
    chunk = -(-(k // 64) // split) * 64
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    partial = [a64[:, z * chunk:(z + 1) * chunk] @ b64[:, z * chunk:(z + 1) * chunk].T
               for z in range(split)]
    exact = np.sum(partial, axis=0)
    # The splits meet in the order they finish (any order on a GPU; the host twin's is 0..z): the
    # running sum after j of them is at most the sum of the j largest |P_z|, whatever the order.
    largest_first = -np.sort(-np.abs(np.asarray(partial)), axis=0)
    worst_running = np.cumsum(largest_first, axis=0).sum(axis=0)
    slack = 1e-5 * (np.abs(a64) @ np.abs(b64).T)  # float32 accumulation within a split
    asm = np.asarray(jax_aiter.gemm(a, b, dispatch=ASM_942)).astype(np.float64)
    assert np.all(np.abs(asm - exact) <= U * worst_running + slack)
    portable = np.asarray(jax_aiter.gemm(a, b, dispatch=Dispatch("portable")))
    assert np.all(np.abs(portable.astype(np.float64) - exact) <= U * np.abs(exact) + slack)
    # The extra roundings are real: the split result is not the correctly rounded one everywhere.
    assert np.count_nonzero(asm != bf16(exact)) > np.count_nonzero(
        portable.astype(np.float64) != bf16(exact))


# ---- the scale layouts are guessed from shapes: the docstrings say so ---------------------------

@pytest.mark.parametrize("op", [jax_aiter.gemm_fp8_blockscale, jax_aiter.gemm_fp8_mi350,
                                jax_aiter.flatmm_fp8])
def test_scale_layout_caveat_is_documented(op):
    assert "cannot tell" in " ".join(op.__doc__.split()), op.__name__


# ---- an unknown kernel name is an error naming the knob, under tier auto too -------------------

def _calls(kernel, m=32):
    """One call of each op that takes `kernel`, with valid operands of m rows: (the target whose
    error names it, the call)."""
    a = jnp.ones((m, 128), jnp.bfloat16)
    xq, wq, xs, ws = _fp8_operands(m)
    a8 = jnp.ones((m, 256), jnp.int8)
    w8 = shuffle_weight(jnp.ones((32, 256), jnp.int8))
    q4, s4 = jax_aiter.quantize_mxfp4(np.ones((m, 128), np.float32))
    w4, t4 = jax_aiter.quantize_mxfp4(np.ones((32, 128), np.float32))
    fp8 = "aiter.gemm_fp8_blockscale"  # gemm_fp8_mi350 and flatmm_fp8 call it
    return [
        ("aiter.gemm", lambda: jax_aiter.gemm(a, jnp.ones((128, 128), jnp.bfloat16),
                                              kernel=kernel)),
        ("aiter.gemm_i8", lambda: jax_aiter.gemm_i8(a8, w8, jnp.ones((m, 1)), jnp.ones((1, 32)),
                                                    kernel=kernel)),
        (fp8, lambda: jax_aiter.gemm_fp8_blockscale(xq, shuffle_weight(wq), xs, ws,
                                                    kernel=kernel)),
        (fp8, lambda: jax_aiter.gemm_fp8_mi350(xq, shuffle_weight(wq), xs.T, ws, kernel=kernel)),
        (fp8, lambda: jax_aiter.flatmm_fp8(xq, shuffle_weight(wq, FLATMM_LAYOUT), xs.T, ws.T,
                                           kernel=kernel)),
        ("aiter.gemm_fp4", lambda: jax_aiter.gemm_fp4(q4, w4, s4, t4, kernel=kernel)),
    ]


@pytest.mark.parametrize("m", [32, 0])
def test_unknown_kernel_name_is_an_error(m):
    # A ValueError at trace time (ops with a workspace, and empty calls), else XLA's error at run
    # time: the same C++ message either way.
    for op, call in _calls("bogus", m):
        with pytest.raises(Exception, match=rf"{op}: attribute kernel: .*got 'bogus'"):
            jax.block_until_ready(call())
    for _, call in _calls("", m):  # the default, "" (the heuristic's), still runs
        jax.block_until_ready(call())


# ---- empty inputs: validated first, then answered --------------------------------------------

def test_forced_knobs_are_never_dropped():
    """kernel= and splitk= (ops/aiter_knobs.hpp): a tier that cannot honour one says no with the
    reason; the call runs on a tier that can, or fails naming every tier's reason."""
    a16 = jnp.ones((8, 256), jnp.float16)
    b16 = jnp.ones((64, 256), jnp.float16)
    # AITER's BF16 kernels take no f16; the portable tier runs none of AITER's kernels.
    with pytest.raises(Exception, match=r"no tier runs this call \(asm \(bf16gemm\): .*f16.*; "
                                        r"portable: the call forces an AITER kernel"):
        jax.block_until_ready(jax_aiter.gemm(a16, b16, kernel="bf16gemm_fp32bf16_tn_32x64_"
                                             "splitk_clean", dispatch=Dispatch(asm_arch="gfx942")))
    # A split the portable tier can run exactly is run (f16: the portable tier). K = 2048 cuts into
    # whole K tiles on every platform (the CUDA kernel's K tile is larger than the host twin's).
    a_long, b_long = jnp.ones((8, 2048), jnp.float16), jnp.ones((64, 2048), jnp.float16)
    out = jax_aiter.gemm(a_long, b_long, splitk=2)
    np.testing.assert_array_equal(np.asarray(out, np.float32), np.full((8, 64), 2048.0))
    # One it cannot (16 splits of K = 256 in whole K tiles) is refused, not quietly changed.
    with pytest.raises(Exception, match=r"portable: splitk 16"):
        jax.block_until_ready(jax_aiter.gemm(a16, b16, splitk=16))
    # Above 16 (AITER's most) is an error before any tier, as is a negative one.
    for bad in (17, -1):
        with pytest.raises(ValueError, match=r"aiter.gemm: attribute splitk: expected 0 or 1"):
            jax_aiter.gemm(a16, b16, splitk=bad)


def test_empty_gemm_is_validated_first():
    with pytest.raises(ValueError, match=r"aiter.gemm: operand b: expected bf16\[N,64\]"):
        jax_aiter.gemm(jnp.ones((0, 64), jnp.bfloat16), jnp.ones((16, 32), jnp.bfloat16))
    with pytest.raises(ValueError, match=r"aiter.gemm: operand a: expected dtype bf16 or f16, "
                                         r"got i32"):
        jax_aiter.gemm(jnp.ones((4, 0), jnp.int32), jnp.ones((16, 0), jnp.int32))
    with pytest.raises(ValueError, match=r"aiter.gemm: operand bias: expected bf16\[16\]"):
        jax_aiter.gemm(jnp.ones((0, 8), jnp.bfloat16), jnp.ones((16, 8), jnp.bfloat16),
                       jnp.ones((15,), jnp.bfloat16))
    with pytest.raises(ValueError, match=r"aiter.gemm: attribute splitk"):
        jax_aiter.gemm(jnp.ones((0, 8), jnp.bfloat16), jnp.ones((16, 8), jnp.bfloat16), splitk=99)
    # Valid empties still answer as jnp.dot does.
    bias = jnp.arange(16, dtype=jnp.bfloat16)
    assert jax_aiter.gemm(jnp.ones((0, 8), jnp.bfloat16), jnp.ones((16, 8), jnp.bfloat16)).shape \
        == (0, 16)
    got = jax_aiter.gemm(jnp.ones((3, 0), jnp.bfloat16), jnp.ones((16, 0), jnp.bfloat16), bias)
    np.testing.assert_array_equal(np.asarray(got, np.float64),
                                  np.broadcast_to(np.arange(16.0), (3, 16)))


def test_empty_quantized_gemms_are_validated_first():
    xq, wq, xs, ws = _fp8_operands(m=0)
    xq_k, _, xs_k, _ = _fp8_operands(m=0, k=384)  # K = 384 against the weight's 256
    with pytest.raises(ValueError, match=r"aiter.gemm_fp8_blockscale: operand b: expected "
                                         r"f8_e4m3fn\[N,384\]"):
        jax_aiter.gemm_fp8_blockscale(xq_k, shuffle_weight(wq), xs_k,
                                      np.ones((2, 3), np.float32))
    # The wrappers' C++ errors are the core's (its target, its operand names).
    with pytest.raises(ValueError, match=r"aiter.gemm_fp8_blockscale: operand b: expected "
                                         r"f8_e4m3fn\[N,384\]"):
        jax_aiter.gemm_fp8_mi350(xq_k, shuffle_weight(wq), xs_k.T, np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"aiter.gemm_fp8_blockscale: operand b: expected "
                                         r"f8_e4m3fn\[N,384\]"):
        jax_aiter.flatmm_fp8(xq_k, shuffle_weight(wq, FLATMM_LAYOUT), xs_k.T,
                             np.ones((3, 2), np.float32))
    with pytest.raises(ValueError, match=r"aiter.gemm_i8: operand b: expected i8\[N,64\]"):
        jax_aiter.gemm_i8(jnp.ones((0, 64), jnp.int8), shuffle_weight(jnp.ones((16, 32), jnp.int8)),
                          jnp.ones((0, 1)), jnp.ones((1, 16)))
    with pytest.raises(ValueError, match=r"aiter.gemm_fp4: attribute splitk"):
        q4, s4 = jax_aiter.quantize_mxfp4(np.ones((0, 128), np.float32))
        w4, t4 = jax_aiter.quantize_mxfp4(np.ones((32, 128), np.float32))
        jax_aiter.gemm_fp4(q4, w4, s4, t4, splitk=3)
    # Valid empties: zeros of the right shape.
    assert jax_aiter.gemm_fp8_blockscale(xq, shuffle_weight(wq), xs, ws).shape == (0, 256)
    assert jax_aiter.flatmm_fp8(xq, shuffle_weight(wq, FLATMM_LAYOUT), xs.T, ws.T).shape == \
        (0, 256)


def test_empty_rms_norm_is_validated_first():
    with pytest.raises(ValueError, match=r"aiter.rms_norm: operand gamma: expected f32\[64\]"):
        jax_aiter.rms_norm(jnp.ones((0, 64)), jnp.ones((32,)))
    with pytest.raises(ValueError, match=r"aiter.rms_norm_with_add: operand residual"):
        jax_aiter.rms_norm_with_add(jnp.ones((0, 64)), jnp.ones((0, 32)), jnp.ones((64,)))
    with pytest.raises(ValueError, match=r"aiter.rms_norm: attribute epsilon"):
        jax_aiter.rms_norm(jnp.ones((0, 64)), jnp.ones((64,)), -1.0)
    assert jax_aiter.rms_norm(jnp.ones((0, 64)), jnp.ones((64,))).shape == (0, 64)


def test_empty_attention_is_validated_first():
    q = jnp.ones((1, 4, 0, 16), jnp.bfloat16)  # hq = 0
    with pytest.raises(ValueError, match=r"aiter.flash_attn_fwd: operand v: expected "
                                         r"bf16\[1,4,3\] \+ \[dv\] \(from k\)"):
        jax_aiter.flash_attn_func(q, jnp.ones((1, 4, 3, 16), jnp.bfloat16),
                                  jnp.ones((1, 4, 5, 16), jnp.bfloat16))
    with pytest.raises(ValueError, match=r"aiter.flash_attn_fwd: operand k: expected batch 2"):
        jax_aiter.flash_attn_func(jnp.ones((2, 0, 2, 16), jnp.bfloat16),
                                  jnp.ones((1, 4, 2, 16), jnp.bfloat16),
                                  jnp.ones((1, 4, 2, 16), jnp.bfloat16))
    with pytest.raises(ValueError, match=r"aiter.flash_attn_fwd: operand k: expected a number of "
                                         r"heads that divides q's \(4\), got 3"):
        jax_aiter.flash_attn_varlen(jnp.ones((0, 4, 16), jnp.bfloat16),
                                    jnp.ones((5, 3, 16), jnp.bfloat16),
                                    jnp.ones((5, 3, 16), jnp.bfloat16),
                                    jnp.array([0, 0], jnp.int32), jnp.array([0, 5], jnp.int32),
                                    1, 5)
    out, lse = jax_aiter.flash_attn_func(q, jnp.ones((1, 4, 1, 16), jnp.bfloat16),
                                         jnp.ones((1, 4, 1, 8), jnp.bfloat16), return_lse=True)
    assert out.shape == (1, 4, 0, 8) and lse.shape == (1, 0, 4)


# ---- errors name the op and the argument -------------------------------------------------------

def test_errors_name_the_op_and_the_argument():
    q = jnp.ones((1, 4, 2, 16), jnp.bfloat16)
    key = jax.random.key(0)
    w = jnp.ones((32, 64), jnp.int8)
    cases = [
        (lambda: jax_aiter.flash_attn_func(jnp.ones((1, 4, 2, 0), jnp.bfloat16),
                                           jnp.ones((1, 4, 2, 0), jnp.bfloat16),
                                           jnp.ones((1, 4, 2, 0), jnp.bfloat16)),
         r"flash_attn_func: operand q: expected head dims up to 256 \(and at least 1\), got d=0"),
        (lambda: jax_aiter.flash_attn_func(q, q, q, window_size=(1, 2, 3)),
         r"flash_attn_func: window_size: expected \(left, right\).*got \(1, 2, 3\)"),
        (lambda: jax_aiter.flash_attn_func(q, q, q, window_size=3),
         r"flash_attn_func: window_size: expected \(left, right\)"),
        (lambda: shuffle_weight(w, (16, 16, 1)), r"shuffle_weight: layout: .*got \(16, 16, 1\)"),
        (lambda: shuffle_weight(w, (16, 0)), r"shuffle_weight: layout: .*got \(16, 0\)"),
        (lambda: shuffle_weight(w, (16, -16)), r"shuffle_weight: layout: .*got \(16, -16\)"),
        (lambda: jax_aiter.dropout_mask(key, -1, 2, 4, 4, 0.5),
         r"dropout_mask: b: expected an int >= 0, got -1"),
        (lambda: jax_aiter.dropout_mask(key, 1, 2, 4, 2.5, 0.5),
         r"dropout_mask: sk: expected an int >= 0, got 2.5"),
        (lambda: jax_aiter.quantize_mxfp4(jnp.float32(1)),
         r"quantize_mxfp4: operand x: expected \[\.\.\., K\].*got a scalar"),
    ]
    q4, s4 = jax_aiter.quantize_mxfp4(np.ones((32, 128), np.float32))
    for name in ("a_scale", "b_scale"):
        scales = {"a_scale": s4, "b_scale": s4, name: np.ones((32, 4), np.float32)}
        cases.append((lambda scales=scales: jax_aiter.gemm_fp4(q4, q4, scales["a_scale"],
                                                               scales["b_scale"]),
                      rf"aiter.gemm_fp4: operand {name}: expected e8m0 scales as uint8 or "
                      rf"float8_e8m0fnu.*got float32"))
    for call, message in cases:
        with pytest.raises((ValueError, TypeError), match=message):
            jax.block_until_ready(call())
