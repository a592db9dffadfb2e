"""jax_aiter.gemm_fp8_blockscale: the block quantizers, the (16, 16) shuffle of fp8 weights, and
gemm_fp8_blockscale against a float64 reference computed from the dequantized inputs (decoded by
ml_dtypes, not by our C++), each tier forced (the ASM tier's plans run through the ABI twins of
AITER's FP8 block-scale kernels off AMD hardware, every row on both archs, split-K included),
outputs poisoned; bad input and grad are clear errors.

Runs on whatever platform JAX has (CPU in CI: the Host backend's C++ twins, which decode both fp8
formats; on NVIDIA only e4m3fn runs).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jax_aiter
from jax_aiter import Dispatch
from jax_aiter.gemm_fp8_blockscale import (FP8BS_LAYOUT, describe, gemm_fp8_blockscale,
                                quantize_fp8_blocks)
from jax_aiter.quant import ShuffledWeight, shuffle_weight, unshuffle_weight
from poison import run_poisoned


ASM_942 = Dispatch("asm", "gfx942", 304)
ASM_950 = Dispatch("asm", "gfx950", 256)
PORTABLE = Dispatch("portable")
U = 2.0**-8  # bf16 unit roundoff
FN, FNUZ = jnp.float8_e4m3fn, jnp.float8_e4m3fnuz
ON_CPU = jax.devices()[0].platform == "cpu"
# The formats this platform's kernels read (the host twins: both; NVIDIA: e4m3fn).
FORMATS = [FN, FNUZ] if ON_CPU else [FN]
# The format each arch's ASM plan reads, on every platform (ops/fp8_format.hpp): the arch's own
# (the sm_90 twins convert gfx942's e4m3fnuz in registers).
ARCH_FORMAT = {"gfx942": FNUZ, "gfx950": FN}

# AITER's fp8gemm_blockscale rows (hsa/<arch>/fp8gemm_blockscale/fp8gemm_bf16_blockscale.csv):
# tile_m, all with tile_n 128, on both archs.
ROW_TILES = (32, 48, 64, 80, 96, 128)


def row_name(tm):
    return f"fp8gemm_bf16_blockscale_BpreShuffle_{tm}x128"


def reference_shuffle(w):
    """AITER's shuffle_weight(w, layout=(16, 16)) for a 1-byte dtype, in NumPy."""
    n, k = w.shape
    x = w.reshape(n // 16, 16, k // 32, 2, 16)
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1, 4)).reshape(n, k)


@pytest.mark.parametrize("dtype", [FN, FNUZ])
def test_shuffle_of_fp8_matches_aiter_and_round_trips(dtype):
    rng = np.random.default_rng(0)
    w = np.asarray(rng.normal(size=(128, 256)), dtype=dtype)
    s = jax.jit(shuffle_weight, static_argnums=1)(w, FP8BS_LAYOUT)
    assert isinstance(s, ShuffledWeight) and s.layout == FP8BS_LAYOUT and s.dtype == dtype
    np.testing.assert_array_equal(np.asarray(s.data).view(np.uint8),
                                  reference_shuffle(w.view(np.uint8)))
    np.testing.assert_array_equal(np.asarray(unshuffle_weight(s)).view(np.uint8),
                                  w.view(np.uint8))


@pytest.mark.parametrize("dtype", [FN, FNUZ])
def test_quantize_fp8_blocks(dtype):
    rng = np.random.default_rng(1)
    fmax = float(jnp.finfo(dtype).max)
    x = rng.normal(size=(3, 5, 256)).astype(np.float32) * rng.uniform(0.01, 100, (3, 5, 1))
    x[1, 2, :128] = 0  # an all-zero block
    q, s = jax.jit(quantize_fp8_blocks, static_argnums=(1, 2))(x, (1, 128), dtype)
    assert q.dtype == dtype and q.shape == x.shape and s.shape == (3, 5, 2)
    assert s.dtype == jnp.float32
    deq = np.asarray(q).astype(np.float64).reshape(3, 5, 2, 128) * np.asarray(s)[..., None]
    xb = x.reshape(3, 5, 2, 128)
    # e4m3: 3 mantissa bits (half a step: 2^-4 relative), subnormals below 2^-6 (fn) / 2^-7.
    sc = np.asarray(s, np.float64)[..., None]
    assert (np.abs(deq - xb) <= 2.0**-4 * np.abs(xb) + 2.0**-10 * sc).all()
    amax_code = np.abs(np.asarray(q).astype(np.float64)).reshape(3, 5, 2, 128).max(-1)
    np.testing.assert_allclose(np.where(amax_code > 0, amax_code, fmax), fmax)
    assert (np.asarray(s)[1, 2, 0] == 1.0) and (np.asarray(q).astype(np.float32)[1, 2, :128] == 0).all()
    # Weights: 128 x 128 blocks.
    w = rng.normal(size=(256, 384)).astype(np.float32)
    wq, ws = quantize_fp8_blocks(w, (128, 128), dtype)
    assert wq.shape == (256, 384) and ws.shape == (2, 3)
    blocks = np.abs(w).reshape(2, 128, 3, 128).max(axis=(1, 3))
    np.testing.assert_allclose(np.asarray(ws), blocks / fmax, rtol=1e-6)
    with pytest.raises(ValueError, match="not a multiple of the block"):
        quantize_fp8_blocks(np.zeros((4, 100)), (1, 128), dtype)
    with pytest.raises(ValueError, match="not a multiple of the block"):
        quantize_fp8_blocks(np.zeros((100, 128)), (128, 128), dtype)


def _inputs(rng, m, n, k, dtype, lead=None):
    a = np.asarray(rng.normal(size=(m, k) if lead is None else (*lead, k)) * 2, dtype=dtype)
    w = np.asarray(rng.normal(size=(n, k)) * 2, dtype=dtype)
    sa = rng.uniform(1e-2, 1, (*a.shape[:-1], k // 128)).astype(np.float32)
    sb = rng.uniform(1e-2, 1, (n // 128, k // 128)).astype(np.float32)
    return a, w, sa, sb


def assert_fp8bs_close(what, got, a, w, sa, sb, steps=1):
    """|got - ref| <= u |ref| + ((steps - 1) u + 2^-16) scale: ref from the dequantized inputs in
    float64 (ml_dtypes' decode), scale = sum_k |a b| sa sb; one bf16 rounding (one per split
    where the splits add into the bf16 output), float32 sums of 128-product blocks. NaN fails."""
    k = a.shape[-1]
    kb = k // 128
    a64 = np.asarray(a).astype(np.float64).reshape(-1, kb, 128)
    w64 = np.asarray(w).astype(np.float64).reshape(-1, kb, 128)
    sa64 = np.asarray(sa, np.float64).reshape(-1, kb)
    sb64 = np.repeat(np.asarray(sb, np.float64), 128, axis=0)  # [N, K/128]
    blk = np.einsum("mbk,nbk->mnb", a64, w64)
    mag = np.einsum("mbk,nbk->mnb", np.abs(a64), np.abs(w64))
    s = sa64[:, None, :] * sb64[None, :, :]
    ref, scale = (blk * s).sum(-1), (mag * s).sum(-1)
    bound = U * np.abs(ref) + ((steps - 1) * U + 2.0**-16) * scale + 1e-30
    got = np.asarray(got.astype(jnp.float32), np.float64).reshape(ref.shape)
    bad = ~(np.abs(got - ref) <= bound)
    if bad.any():
        i = tuple(int(v) for v in np.argwhere(bad)[0])
        raise AssertionError(f"{what}: {int(bad.sum())} of {bad.size} out of tolerance, e.g. {i}: "
                             f"got {got[i]!r} ref {ref[i]!r} bound {bound[i]:.3g}")


@functools.cache
def _forward(dispatch, kernel=None, splitk=None):
    def body(a, w, sa, sb):
        return (gemm_fp8_blockscale(a, w, sa, sb, kernel=kernel, splitk=splitk,
                                    dispatch=dispatch),)
    return body


def _run(a, w, sa, sb, dispatch, kernel=None, splitk=None):
    sw = shuffle_weight(w, FP8BS_LAYOUT)
    (out,) = run_poisoned(_forward(dispatch, kernel, splitk), a, sw, sa, sb)
    assert out.dtype == jnp.bfloat16 and out.shape == (*a.shape[:-1], w.shape[0])
    return out


def _split_of(m, n, k, dispatch, kernel=None, splitk=None, dtype="float8_e4m3fn"):
    """The split the plan chose (jax-aiter-plan), for the tolerance."""
    operands, attrs = describe(m, n, k, kernel, splitk, dtype)
    plan = jax_aiter.plan("aiter.gemm_fp8_blockscale", operands,
                          {**attrs, **dispatch.attributes()}, "host")
    return plan["chosen"]["plan"]["notes"]["split"]


# Odd and large shapes: M = 1..4096, N and K multiples of 128 (not of larger powers of two);
# small ones in each format, the large ones in one (the host twins' cost).
VALUE_CASES = ([(m, n, k, d) for m, n, k in [(1, 128, 128), (7, 384, 640), (33, 256, 1152)]
                for d in FORMATS] +
               [(1, 4096, 4096, FORMATS[-1]), (300, 640, 1024, FN), (4096, 128, 128, FORMATS[-1]),
                (130, 384, 2176, FN)])


@pytest.mark.parametrize("m,n,k,dtype", VALUE_CASES,
                         ids=lambda v: jnp.dtype(v).name if not isinstance(v, int) else str(v))
@pytest.mark.parametrize("dispatch", [Dispatch(), PORTABLE], ids=["auto", "portable"])
def test_values(m, n, k, dtype, dispatch):
    rng = np.random.default_rng(m * 131 + n + k)
    for _ in range(2):  # two data sets through one compiled function (poison.py)
        a, w, sa, sb = _inputs(rng, m, n, k, dtype)
        out = _run(a, w, sa, sb, dispatch)
        assert_fp8bs_close(f"{m}x{n}x{k}", out, a, w, sa, sb)


# The heuristic's own choice, planned for each arch, run through the twins.
ASM_CASES = [(1, 2048, 1024), (100, 768, 512), (640, 1024, 256), (2048, 256, 128)]


@pytest.mark.parametrize("m,n,k", ASM_CASES)
@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
def test_asm_heuristic_through_its_twins(m, n, k, arch):
    dispatch = ASM_942 if arch == "gfx942" else ASM_950
    dtype = ARCH_FORMAT[arch]
    rng = np.random.default_rng(m + n + k)
    a, w, sa, sb = _inputs(rng, m, n, k, dtype)
    out = _run(a, w, sa, sb, dispatch)
    assert_fp8bs_close(f"{arch} {m}x{n}x{k}", out, a, w, sa, sb,
                       steps=_split_of(m, n, k, dispatch, dtype=jnp.dtype(dtype).name))


# Every row forced on each arch, unsplit and split 3.
ROW_CASES = [(arch, tm, split) for tm in ROW_TILES for arch in ("gfx942", "gfx950")
             for split in (None, 3)]


@pytest.mark.parametrize("arch,tm,splitk", ROW_CASES)
def test_every_row_forced_through_its_twin(arch, tm, splitk):
    dispatch = ASM_942 if arch == "gfx942" else ASM_950
    dtype = ARCH_FORMAT[arch]
    m, n, k = tm + 19, 256, 640
    rng = np.random.default_rng(tm * 7 + (splitk or 0))
    a, w, sa, sb = _inputs(rng, m, n, k, dtype)
    out = _run(a, w, sa, sb, dispatch, row_name(tm), splitk)
    assert _split_of(m, n, k, dispatch, row_name(tm), splitk,
                     jnp.dtype(dtype).name) == (splitk or 1)
    assert_fp8bs_close(f"{arch} {tm}x128 split {splitk}", out, a, w, sa, sb, steps=splitk or 1)


@pytest.mark.parametrize("layout", [FP8BS_LAYOUT, "flatmm"])
@pytest.mark.parametrize("out_dtype", [jnp.bfloat16, jnp.float16], ids=["bf16", "f16"])
def test_out_dtype_either_layout_name_and_partial_scale_blocks(layout, out_dtype):
    """Either out dtype; the FlatMM layout's name for the same bytes; N % 128 != 0 (ceil(N/128)
    b_scale rows: the portable tier's partial column block)."""
    rng = np.random.default_rng(17)
    for n in (256, 144):
        a, w, sa, _ = _inputs(rng, 33, n, 384, FN)
        sb = rng.uniform(1e-2, 1, (-(-n // 128), 3)).astype(np.float32)
        out = gemm_fp8_blockscale(a, shuffle_weight(w, layout), sa, sb, out_dtype=out_dtype)
        assert out.dtype == out_dtype and out.shape == (33, n)
        _assert_close_per_row(f"{layout} N={n}", out, a, w, sa, np.repeat(sb, 128, axis=0)[:n])


def _assert_close_per_row(what, out, a, w, sa, sb_rows):
    """assert_fp8bs_close's bound (one rounding), b_scale given per row of b ([N, K/128])."""
    kb = a.shape[-1] // 128
    a64 = np.asarray(a).astype(np.float64).reshape(-1, kb, 128)
    w64 = np.asarray(w).astype(np.float64).reshape(-1, kb, 128)
    s = np.asarray(sa, np.float64)[:, None, :] * sb_rows[None, :, :]
    ref = (np.einsum("mbk,nbk->mnb", a64, w64) * s).sum(-1)
    scale = (np.einsum("mbk,nbk->mnb", np.abs(a64), np.abs(w64)) * s).sum(-1)
    got = np.asarray(out.astype(jnp.float32), np.float64)
    bad = ~(np.abs(got - ref) <= U * np.abs(ref) + 2.0**-16 * scale + 1e-30)
    assert not bad.any(), f"{what}: {int(bad.sum())} of {bad.size} out of tolerance"


# f16 out on gfx942: AITER's FlatMM kernel (through its twin), after the plan's scale transpose.
def test_f16_out_plans_flatmm_on_gfx942():
    m, n, k = 40, 512, 384
    operands, attrs = describe(m, n, k, dtype="float8_e4m3fnuz", out_dtype="float16")
    plan = jax_aiter.plan("aiter.gemm_fp8_blockscale", operands,
                          {**attrs, **ASM_942.attributes()}, "host")
    assert (plan["chosen"]["tier"], plan["chosen"]["family"]) == ("asm", "flatmm")
    symbols = [s["launch"]["symbol"] for s in plan["chosen"]["plan"]["steps"]]
    assert symbols == ["jax_aiter_gemm_fp8_blockscale_transpose_scales",
                       "flatmm_uk_gfx9_f16f8_128x256x128_1x4x1_16x16x32"]
    rng = np.random.default_rng(19)
    a, w, sa, sb = _inputs(rng, m, n, k, FNUZ)
    out = gemm_fp8_blockscale(a, shuffle_weight(w, FP8BS_LAYOUT), sa, sb,
                              out_dtype=jnp.float16, dispatch=ASM_942)
    assert out.dtype == jnp.float16
    assert_fp8bs_close("flatmm", out, a, w, sa, sb)


def test_three_lines_from_bf16_with_leading_dims_and_vmap():
    rng = np.random.default_rng(5)
    x = jnp.asarray(rng.normal(size=(2, 3, 256)), jnp.bfloat16)
    wf = jnp.asarray(rng.normal(size=(128, 256)), jnp.bfloat16)
    wq, ws = quantize_fp8_blocks(wf, block=(128, 128))
    w = shuffle_weight(wq, FP8BS_LAYOUT)

    @jax.jit
    def layer(x, w, ws):
        xq, xs = quantize_fp8_blocks(x)
        return gemm_fp8_blockscale(xq, w, xs, ws)

    y = layer(x, w, ws)
    assert y.shape == (2, 3, 128) and y.dtype == jnp.bfloat16
    xq, xs = quantize_fp8_blocks(x)
    assert_fp8bs_close("3 lines", y, np.asarray(xq), np.asarray(wq), np.asarray(xs),
                       np.asarray(ws))
    # Close to the bf16 product too (quantization error only).
    ref = np.asarray(x, np.float64) @ np.asarray(wf, np.float64).T
    assert np.abs(np.asarray(y, np.float64) - ref).max() < 0.1 * np.abs(ref).max()
    yv = jax.vmap(lambda x: layer(x, w, ws))(x)
    np.testing.assert_array_equal(np.asarray(yv, np.float32), np.asarray(y, np.float32))


def test_errors():
    rng = np.random.default_rng(9)
    a, w, sa, sb = _inputs(rng, 8, 128, 256, FN)
    sw = shuffle_weight(w, FP8BS_LAYOUT)
    with pytest.raises(TypeError, match="operand b: expected a ShuffledWeight"):
        gemm_fp8_blockscale(a, w, sa, sb)
    with pytest.raises(ValueError, match=r"layout \(16, 16\), got one in \(32, 16\)"):
        gemm_fp8_blockscale(a, shuffle_weight(w, (32, 16)), sa, sb)
    with pytest.raises(ValueError, match=r"operand a_scale: expected shape \(8, 2\)"):
        gemm_fp8_blockscale(a, sw, sa.T, sb)
    with pytest.raises(ValueError, match="operand b_scale"):
        gemm_fp8_blockscale(a, sw, sa, sb.T)
    with pytest.raises(ValueError, match="operand a: K=96 is not a multiple of 128"):
        gemm_fp8_blockscale(a[:, :96], ShuffledWeight(jnp.asarray(w[:, :96]), FP8BS_LAYOUT),
                            sa, sb)
    # What only C++ checks: dtypes, the forced kernel, the format a tier reads.
    with pytest.raises(Exception, match=r"operand a: expected f8_e4m3fn or f8_e4m3fnuz \[M,K\], "
                                        r"got bf16"):
        jax.block_until_ready(gemm_fp8_blockscale(jnp.asarray(a, jnp.bfloat16), sw, sa, sb))
    with pytest.raises(Exception, match=r"operand b: expected f8_e4m3fn\[N,256\]"):
        bad = ShuffledWeight(jnp.asarray(np.asarray(w).astype(FNUZ)), FP8BS_LAYOUT)
        jax.block_until_ready(gemm_fp8_blockscale(a, bad, sa, sb))
    with pytest.raises(Exception, match=r"operand b_scale: expected f32\[1,2\]"):
        jax.block_until_ready(gemm_fp8_blockscale(a, sw, sa, jnp.asarray(sb, jnp.bfloat16)))
    with pytest.raises(Exception, match=r"attribute kernel: .*fp8gemm_blockscale kernels.*'nope'"):
        jax.block_until_ready(gemm_fp8_blockscale(a, sw, sa, sb, kernel="nope",
                                                  dispatch=ASM_950))
    # A plan for an arch takes that arch's format on every backend, and refuses the other.
    for arch, wrong in (("gfx942", FN), ("gfx950", FNUZ)):
        aw = np.asarray(a).astype(wrong)
        ww = shuffle_weight(np.asarray(w).astype(wrong), FP8BS_LAYOUT)
        with pytest.raises(Exception, match=f"{arch} reads f8_e4m3fn"):
            jax.block_until_ready(gemm_fp8_blockscale(
                aw, ww, sa, sb, dispatch=ASM_942 if arch == "gfx942" else ASM_950))
    if not ON_CPU:  # NVIDIA's tensor cores read e4m3fn only
        an, wn = np.asarray(a).astype(FNUZ), shuffle_weight(np.asarray(w).astype(FNUZ),
                                                           FP8BS_LAYOUT)
        with pytest.raises(Exception, match="NVIDIA fp8 tensor cores read f8_e4m3fn"):
            jax.block_until_ready(gemm_fp8_blockscale(an, wn, sa, sb))


def test_grad_is_a_clear_error():
    rng = np.random.default_rng(3)
    a, w, sa, sb = _inputs(rng, 4, 128, 128, FN)
    sw = shuffle_weight(w, FP8BS_LAYOUT)
    with pytest.raises(TypeError, match="inference op: it has no gradient"):
        jax.grad(lambda s: gemm_fp8_blockscale(a, sw, s, sb).astype(jnp.float32).sum())(
            jnp.asarray(sa))
