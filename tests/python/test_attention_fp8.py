"""FP8 forward of flash_attn_func / flash_attn_varlen (issue 25): e4m3 q, k, v with per-tensor
float32 descales, bf16 out, against float64 attention over the dequantised inputs, on every tier
(the portable kernels' host twins, and AITER's fp8 v3 rows through their twins for gfx942 and
gfx950); the gradient refused; every bad input named. Small shapes: the whole file runs in a few
seconds on the CPU."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jax_aiter
from jax_aiter import Dispatch

PORTABLE = Dispatch("portable")
ASM_942 = Dispatch("asm", "gfx942", 304)
ASM_950 = Dispatch("asm", "gfx950", 256)
FN, FNUZ = jnp.float8_e4m3fn, jnp.float8_e4m3fnuz
DESCALES = (0.05, 0.08, 0.3)

# Tolerance, |got - ref| <= ATOL * max|ref| + RTOL * |ref|. The inputs are exact on both sides
# (the reference dequantises the same bytes in float64; the kernels decode e4m3 exactly and apply
# the descales in float32), so what is left is: out's bf16 rounding (half an ulp, 2^-9, to nearest
# even; a whole one, 2^-8, for gfx942's fp8 rows, which round away from zero): RTOL = 2^-7 covers
# either with room; and float32 sums (and, in the GPU kernels, P rounded to f16 before P V, a
# relative 2^-11 per term, bounded in sum by 2^-11 max|out|): ATOL = 2^-9. lse is float32 from
# float32 scores: 1e-5.
RTOL, ATOL = 2.0**-7, 2.0**-9


def quantize(rng, shape, fmt, descale):
    """fp8 bytes whose dequantised values (descale * x) are spread like N(0, 1)."""
    return jnp.asarray(rng.normal(0.0, 1.0, shape) / descale, fmt)


def dequant(x, descale):
    return np.asarray(x.astype(jnp.float32), np.float64) * descale


def ref_attention(q, k, v, scale, causal, cu_q=None, cu_k=None):
    """float64 attention over [b, s, h, d] (or varlen [t, h, d] with offsets), bottom-right causal;
    returns (out, lse) in the op's layouts."""
    def one(q, k, v):  # [sq, hq, d], [sk, hk, d]
        sq, hq, _ = q.shape
        sk, hk, _ = k.shape
        kk = np.repeat(k, hq // hk, axis=1)
        vv = np.repeat(v, hq // hk, axis=1)
        s = np.einsum("ihd,jhd->hij", q, kk) * scale
        if causal:
            i, j = np.arange(sq)[:, None], np.arange(sk)[None, :]
            s = np.where(j <= i + sk - sq, s, -np.inf)
        mx = s.max(-1, keepdims=True)
        e = np.where(np.isfinite(s), np.exp(s - np.where(np.isfinite(mx), mx, 0)), 0.0)
        lsum = e.sum(-1, keepdims=True)
        out = np.einsum("hij,jhd->ihd", e / np.where(lsum > 0, lsum, 1), vv)
        lse = np.where(lsum[..., 0] > 0, np.log(np.maximum(lsum[..., 0], 1e-300)) + mx[..., 0],
                       np.inf)
        return out, lse  # [sq, hq, dv], [hq, sq]
    if cu_q is None:
        outs, lses = zip(*(one(q[b], k[b], v[b]) for b in range(q.shape[0])))
        return np.stack(outs), np.stack(lses)
    outs, lses = zip(*(one(q[a:b], k[c:d], v[c:d])
                       for a, b, c, d in zip(cu_q[:-1], cu_q[1:], cu_k[:-1], cu_k[1:])))
    return np.concatenate(outs), np.concatenate(lses, axis=1)


def assert_close(what, got, ref, rtol=RTOL, atol=ATOL):
    got = np.asarray(jnp.asarray(got, jnp.float32), np.float64)
    assert got.shape == ref.shape, f"{what}: shape {got.shape} != {ref.shape}"
    finite = np.isfinite(ref)
    bound = atol * max(np.abs(ref[finite]).max(initial=0.0), 1e-3) + rtol * np.abs(
        np.where(finite, ref, 0))
    ok = np.where(finite, np.abs(got - ref) <= bound, got == ref)
    assert ok.all(), (f"{what}: {int((~ok).sum())} of {ok.size} out of tolerance, worst "
                      f"{np.max(np.where(finite, np.abs(got - ref) - bound, 0)):.3g} over")


def check(fmt, b, sq, sk, hq, hk, d, causal, dispatch, seed=0):
    rng = np.random.default_rng(seed)
    q = quantize(rng, (b, sq, hq, d), fmt, DESCALES[0])
    k = quantize(rng, (b, sk, hk, d), fmt, DESCALES[1])
    v = quantize(rng, (b, sk, hk, d), fmt, DESCALES[2])
    qd, kd, vd = (np.float32(x) for x in DESCALES)
    out, lse = jax_aiter.flash_attn_func(q, k, v, causal=causal, return_lse=True,
                                         dispatch=dispatch, q_descale=qd, k_descale=kd,
                                         v_descale=jnp.asarray([vd]))
    assert out.dtype == jnp.bfloat16 and out.shape == (b, sq, hq, d)
    r_out, r_lse = ref_attention(dequant(q, qd), dequant(k, kd), dequant(v, vd),
                                 1.0 / math.sqrt(d), causal)
    assert_close("out", out, r_out)
    assert_close("lse", lse, r_lse, rtol=1e-5, atol=1e-6)


# The portable tier (our fp8 kernel's host twin) in both formats, with GQA, causal and a head dim
# padded to 64; AITER's rows through their twins: gfx942 (e4m3fnuz, hd128, causal GQA) and
# gfx950 (e4m3fn, hd256).
@pytest.mark.parametrize("fmt,b,sq,sk,hq,hk,d,causal,dispatch", [
    (FN, 2, 40, 56, 4, 2, 60, True, PORTABLE),
    (FNUZ, 1, 33, 20, 2, 1, 128, False, PORTABLE),
    (FNUZ, 1, 160, 200, 4, 1, 128, True, ASM_942),
    (FN, 1, 136, 136, 2, 2, 256, True, ASM_950),
], ids=["portable-fn", "portable-fnuz", "asm-gfx942", "asm-gfx950-hd256"])
def test_values_against_float64(fmt, b, sq, sk, hq, hk, d, causal, dispatch):
    if dispatch is PORTABLE and jax.default_backend() != "cpu" and fmt != jax_aiter.fp8_dtype():
        pytest.skip("a GPU plan of ours reads its own arch's e4m3 format (ops/fp8_format.hpp)")
    check(fmt, b, sq, sk, hq, hk, d, causal, dispatch)


@pytest.mark.parametrize("dispatch", [PORTABLE, ASM_950], ids=["portable", "asm-gfx950"])
def test_varlen_under_jit(dispatch):
    rng = np.random.default_rng(3)
    lens_q, lens_k = [70, 3, 150], [90, 40, 150]
    cu_q = np.concatenate([[0], np.cumsum(lens_q)]).astype(np.int32)
    cu_k = np.concatenate([[0], np.cumsum(lens_k)]).astype(np.int32)
    fmt = FN if dispatch is ASM_950 else jax_aiter.fp8_dtype()  # the planned arch's format
    q = quantize(rng, (cu_q[-1], 4, 128), fmt, DESCALES[0])
    k = quantize(rng, (cu_k[-1], 2, 128), fmt, DESCALES[1])
    v = quantize(rng, (cu_k[-1], 2, 128), fmt, DESCALES[2])
    f = jax.jit(lambda q, k, v, qd, kd, vd: jax_aiter.flash_attn_varlen(
        q, k, v, jnp.asarray(cu_q), jnp.asarray(cu_k), max(lens_q), max(lens_k), causal=True,
        dispatch=dispatch, q_descale=qd, k_descale=kd, v_descale=vd))
    out = f(q, k, v, *(jnp.float32(x) for x in DESCALES))
    r_out, _ = ref_attention(*(dequant(x, s) for x, s in zip((q, k, v), DESCALES)),
                             1.0 / math.sqrt(128), True, cu_q, cu_k)
    assert_close("out", out, r_out)


def test_gradient_is_refused():
    rng = np.random.default_rng(1)
    q = quantize(rng, (1, 8, 2, 32), jax_aiter.fp8_dtype(), 0.1)

    def loss(scale):  # a gradient through the descale reaches the fp8 call
        return jnp.sum(jax_aiter.flash_attn_func(q, q, q, q_descale=scale, k_descale=scale,
                                                 v_descale=scale, dispatch=PORTABLE)
                       .astype(jnp.float32))
    with pytest.raises(NotImplementedError, match="fp8 q, k, v are forward-only"):
        jax.grad(loss)(jnp.float32(0.1))


def _raises(match, fn):
    with pytest.raises(Exception, match=match):
        jax.block_until_ready(fn())


def test_bad_inputs():
    f = jax_aiter.flash_attn_func
    q = jnp.zeros((1, 160, 2, 128), FN)
    ds = dict(q_descale=1.0, k_descale=1.0, v_descale=1.0)
    _raises(r"operand k: expected float8_e4m3fn .*got bfloat16",
            lambda: f(q, q.astype(jnp.bfloat16), q, **ds))
    _raises(r"operand v: expected float8_e4m3fn .*got float8_e4m3fnuz",
            lambda: f(q, q, q.astype(FNUZ), **ds))
    _raises(r"v_descale: expected a float32 scalar .*got None",
            lambda: f(q, q, q, q_descale=1.0, k_descale=1.0))
    _raises(r"k_descale: expected a float32 scalar or float32\[1\].*got float32\[2\]",
            lambda: f(q, q, q, q_descale=1.0, k_descale=jnp.ones(2), v_descale=1.0))
    _raises(r"q_descale: expected a float32 scalar or float32\[1\].*got bfloat16\[\]",
            lambda: f(q, q, q, q_descale=jnp.bfloat16(1), k_descale=1.0, v_descale=1.0))
    b16 = q.astype(jnp.bfloat16)
    _raises(r"q_descale: expected None with bfloat16 q", lambda: f(b16, b16, b16, **ds))
    # AITER's rows, forced: the arch's format, and its head dims.
    _raises(r"gfx942 reads f8_e4m3fnuz", lambda: f(q, q, q, dispatch=ASM_942, **ds))
    small = jnp.zeros((1, 160, 2, 64), FN)
    _raises(r"AITER's v3 fp8 forward takes head dims \(128, 128\), and \(256, 256\) on gfx950, "
            r"got \(64, 64\)", lambda: f(small, small, small, dispatch=ASM_950, **ds))
    # The handler's own check (fake XLA-free: through the validate entry), naming the operand.
    from jax_aiter import _call
    shape = ((1, 8, 2, 32), FN)
    for name, spec, want in (("q_descale", ((2,), np.float32), r"f32\[1\]"),
                             ("k_descale", ((1,), np.int32), r"f32\[1\]")):
        inputs = {"q": jax.ShapeDtypeStruct(*shape), "k": jax.ShapeDtypeStruct(*shape),
                  "v": jax.ShapeDtypeStruct(*shape),
                  **{n: jax.ShapeDtypeStruct((1,), np.float32)
                     for n in ("q_descale", "k_descale", "v_descale")}}
        inputs[name] = jax.ShapeDtypeStruct(*spec)
        with pytest.raises(ValueError, match=rf"aiter.flash_attn_fwd: operand {name}: expected "
                                             + want):
            _call.validate("aiter.flash_attn_fwd", inputs=inputs,
                           outputs={"out": ((1, 8, 2, 32), jnp.bfloat16),
                                    "lse": ((1, 2, 8), np.float32)},
                           attributes={"softmax_scale": 1.0})


def test_plan_tool_fp8(capsys):
    from jax_aiter import tools
    for arch, d, want in (("gfx942", 128, "_ZN5aiter25fmha_fwd_hd128_fp8_causalE"),
                          ("gfx950", 256, "_ZN5aiter32fmha_fwd_hd256_fp8_causal_gfx950E"),
                          ("sm_90", 128, "jax_aiter_attn_fwd_fp8_d128")):
        assert tools.plan_main(["attention", "--fp8", "--arch", arch, "--sq", "1024", "--hq",
                                "8", "--d", str(d), "--causal"]) == 0
        out = capsys.readouterr().out
        assert want in out and '"value": "q_descale"' in out, out  # the descale pointers packed
    with pytest.raises(SystemExit):
        tools.plan_main(["attention", "--fp8", "--backward", "--arch", "gfx950", "--sq", "256",
                         "--hq", "8", "--d", "128"])
    assert "fp8 is forward-only" in capsys.readouterr().err
