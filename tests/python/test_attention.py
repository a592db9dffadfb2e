"""jax_aiter.flash_attn_func / flash_attn_varlen / dropout_mask through JAX: forward values, lse
and gradients (dq, dk, dv, dbias) against a float64 NumPy reference written here, for every
feature and the combinations that make sense; each tier forced (the ASM tier's plans run through
the ABI twins of AITER's kernels off AMD hardware); varlen edge cases; the dropout mask against an
independent NumPy Philox4x32-10; transformations; bad input.

Runs on whatever platform JAX has (CPU in CI: the Host backend's C++ twins; CUDA on the H100).
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jax_aiter
from jax_aiter import Dispatch
from poison import run_poisoned

BF16, F16, F32 = jnp.bfloat16, jnp.float16, jnp.float32
PORTABLE = Dispatch("portable")
ASM_942 = Dispatch("asm", "gfx942", 304)
ASM_950 = Dispatch("asm", "gfx950", 256)
# Tolerances, as fractions of the tensor's largest reference magnitude (abs) and of each element
# (rel), both applied: |got - ref| <= abs * max|ref| + rel * |ref|.
TOL_FWD = {BF16: (2.0**-6, 2.0**-6), F16: (2.0**-9, 2.0**-9)}
TOL_BWD = {BF16: (2.0**-5, 2.0**-5), F16: (2.0**-8, 2.0**-8)}


def to64(a) -> np.ndarray:
    return np.asarray(a).astype(np.float64)


# ---- the reference (float64, one sequence at a time) --------------------------------------------

def visible(sq, sk, left, right):
    i = np.arange(sq)[:, None]
    j = np.arange(sk)[None, :]
    diag = i + sk - sq
    ok = np.ones((sq, sk), bool)
    if left >= 0:
        ok &= j >= diag - left
    if right >= 0:
        ok &= j <= diag + right
    return ok


def ref_sequence(q, k, v, dout, scale, left, right, bias=None, slopes=None, keep=None, p=0.0):
    """q [sq, hq, d], k [sk, hk, d], v [sk, hk, dv], dout [sq, hq, dv] (float64); bias [hq|1, sq|1,
    sk|1]; slopes [hq]; keep [hq, sq, sk] bool. Returns out, lse [hq, sq], dq, dk, dv, dS."""
    sq, hq, _ = q.shape
    sk, hk, _ = k.shape
    group = hq // hk
    kk, vv = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = scale * np.einsum("ihd,jhd->hij", q, kk)
    if bias is not None:
        s = s + bias
    if slopes is not None:
        dist = np.abs(np.arange(sq)[:, None] + sk - sq - np.arange(sk)[None, :])
        s = s - slopes[:, None, None] * dist[None]
    vis = np.broadcast_to(visible(sq, sk, left, right)[None], s.shape)
    s = np.where(vis, s, -np.inf)
    m = s.max(axis=2, keepdims=True)
    empty = ~np.isfinite(m)
    e = np.where(vis, np.exp(s - np.where(empty, 0, m)), 0.0)
    total = e.sum(axis=2, keepdims=True)
    prob = np.where(empty, 0.0, e / np.where(empty, 1, total))
    lse = np.where(empty[..., 0], np.inf, (m + np.log(np.where(empty, 1, total)))[..., 0])
    z = np.ones_like(prob) if keep is None else keep / (1.0 - p)
    pd = prob * z
    out = np.einsum("hij,jhd->ihd", pd, vv)
    if dout is None:
        return out, lse, None, None, None, None
    dpd = np.einsum("ihd,jhd->hij", dout, vv)
    dvv = np.einsum("hij,ihd->jhd", pd, dout)
    dp = dpd * z
    ds = prob * (dp - (prob * dp).sum(axis=2, keepdims=True))
    dq = scale * np.einsum("hij,jhd->ihd", ds, kk)
    dkk = scale * np.einsum("hij,ihd->jhd", ds, q)
    fold = lambda x: x.reshape(x.shape[0], hk, group, x.shape[-1]).sum(axis=2)  # noqa: E731
    return out, lse, dq, fold(dkk), fold(dvv), ds


def ref_batch(q, k, v, dout, scale, left, right, bias=None, slopes=None, keep=None, p=0.0):
    """BSHD batch: per batch element. bias [bb, bh, bq, bk] (4-D), slopes [hq] or [b, hq]."""
    b = q.shape[0]
    res = []
    for i in range(b):
        bi = None if bias is None else bias[min(i, bias.shape[0] - 1)]
        sl = None if slopes is None else (slopes if slopes.ndim == 1 else slopes[i])
        ke = None if keep is None else keep[i]
        res.append(ref_sequence(q[i], k[i], v[i], None if dout is None else dout[i], scale, left,
                                right, bi, sl, ke, p))
    stack = lambda j: None if res[0][j] is None else np.stack([r[j] for r in res])  # noqa: E731
    return tuple(stack(j) for j in range(6))


def assert_close(what, got, ref, tol, magnitude=None):
    """|got - ref| <= atol * magnitude + rtol * |ref|, magnitude by default ref's largest value."""
    atol, rtol = tol
    got, ref = to64(got), np.asarray(ref, np.float64)
    assert got.shape == ref.shape, f"{what}: shape {got.shape} != {ref.shape}"
    finite = np.isfinite(ref)
    # atol is relative to the tensor's largest value, floored: a gradient that is zero in exact
    # arithmetic (one visible key: dS = P (dP - delta) = 0) comes out as float32 rounding noise.
    scale = max(np.abs(ref[finite]).max(initial=0.0) if magnitude is None else magnitude, 1e-3)
    bound = atol * scale + rtol * np.abs(np.where(finite, ref, 0))
    ok = np.where(finite, np.abs(got - ref) <= bound + 1e-30, got == ref)
    if not ok.all():
        i = tuple(int(x) for x in np.argwhere(~ok)[0])
        raise AssertionError(f"{what}: {int((~ok).sum())} of {ok.size} out of tolerance, e.g. "
                             f"{i}: got {got[i]!r} ref {ref[i]!r} bound {bound[i]:.3g}")


def _rand(rng, shape, dtype, lo=-1.0, hi=1.0):
    return jnp.asarray(rng.uniform(lo, hi, shape), dtype)


# ---- forward and backward of flash_attn_func -----------------------------------------------------

@functools.cache
def _fn(dropout_p, causal, window, deterministic, dispatch, has_bias, has_alibi, scale,
        atomic32=True):
    def f(q, k, v, bias, alibi, key):
        return jax_aiter.flash_attn_func(q, k, v, dropout_p, scale, causal, window, bias, alibi,
                                         deterministic, True, dropout_key=key, dispatch=dispatch,
                                         atomic32=atomic32)
    return f


def check_batch(seed, b, sq, sk, hq, hk, d, dv, dtype, causal=False, window=(-1, -1), bias=None,
                alibi=None, dropout_p=0.0, dispatch=None, grads=True, deterministic=False,
                atomic32=True):
    rng = np.random.default_rng(seed)
    q = _rand(rng, (b, sq, hq, d), dtype)
    k = _rand(rng, (b, sk, hk, d), dtype)
    v = _rand(rng, (b, sk, hk, dv), dtype)
    dout = _rand(rng, (b, sq, hq, dv), dtype)
    bias_arr = None if bias is None else _rand(rng, bias[0], bias[1], -2, 2)
    slopes = None if alibi is None else jnp.asarray(rng.uniform(0.05, 0.5, alibi), F32)
    key = jax.random.key(seed) if dropout_p > 0 else None
    scale = 1.0 / math.sqrt(d)
    f = _fn(dropout_p, causal, tuple(window), deterministic, dispatch, bias is not None,
            alibi is not None, None, atomic32)

    def fwd_bwd(q, k, v, bias_arr, slopes, dout):
        (out, lse), vjp = jax.vjp(lambda q, k, v, bb: f(q, k, v, bb, slopes, key), q, k, v,
                                  bias_arr)
        zeros = jnp.zeros_like(lse)
        return out, lse, vjp((dout, zeros)) if grads else None

    out, lse, g = run_poisoned(fwd_bwd, q, k, v, bias_arr, slopes, dout)
    left, right = window
    if causal:
        right = 0
    keep = None
    if dropout_p > 0:
        keep = np.asarray(jax_aiter.dropout_mask(key, b, hq, sq, sk, dropout_p))
    bias4 = None
    if bias_arr is not None:
        bb = to64(bias_arr)
        bias4 = bb.reshape((1,) * (4 - bb.ndim) + bb.shape)
    r = ref_batch(to64(q), to64(k), to64(v), to64(dout), scale, left, right, bias4,
                  None if slopes is None else to64(slopes), keep, dropout_p)
    what = f"b{b} sq{sq} sk{sk} h{hq}/{hk} d{d}/{dv} {np.dtype(dtype).name}"
    assert_close(f"{what} out", out, r[0], TOL_FWD[dtype])
    np.testing.assert_allclose(np.asarray(lse), r[1].transpose(0, 1, 2), rtol=1e-5, atol=1e-5,
                               err_msg=f"{what} lse")
    if grads:
        dq, dk, dv_, dbias = g
        assert_close(f"{what} dq", dq, r[2], TOL_BWD[dtype])
        assert_close(f"{what} dk", dk, r[3], TOL_BWD[dtype])
        assert_close(f"{what} dv", dv_, r[4], TOL_BWD[dtype])
        if bias_arr is not None:
            ds = r[5]
            axes = tuple(i for i in range(4) if bias4.shape[i] == 1)
            ref_db = ds.sum(axis=axes, keepdims=True).reshape(bias_arr.shape)
            # A reduced dbias sums dS over the broadcast axes, where the terms cancel (a row of dS
            # sums to 0): its error scales with the terms summed, not with the small result.
            terms = np.abs(ds).sum(axis=axes, keepdims=True).max()
            assert_close(f"{what} dbias", dbias, ref_db, TOL_BWD[dtype], magnitude=terms)
    return out


HEAD_DIMS = [(32, 32), (40, 40), (59, 59), (64, 64), (96, 96), (111, 111), (128, 128),
             (160, 160), (192, 128), (256, 256)]


@pytest.mark.parametrize("d,dv", HEAD_DIMS, ids=lambda x: str(x))
@pytest.mark.parametrize("dtype", [BF16, F16], ids=["bf16", "f16"])
def test_head_dims(d, dv, dtype):
    check_batch(d + dv, 2, 70, 90, 4, 2, d, dv, dtype, causal=d % 2 == 0)


@pytest.mark.parametrize("sq,sk", [(1, 1), (1, 77), (77, 1), (64, 64), (130, 33), (33, 130),
                                   (257, 255)])
@pytest.mark.parametrize("causal", [False, True])
def test_lengths_and_causal(sq, sk, causal):
    check_batch(sq * 7 + sk, 2, sq, sk, 2, 1, 64, 64, BF16, causal=causal)


@pytest.mark.parametrize("hq,hk", [(4, 4), (4, 1), (6, 2), (8, 2)])
def test_mha_mqa_gqa(hq, hk):
    check_batch(hq * 10 + hk, 1, 96, 80, hq, hk, 64, 64, F16, causal=True)


@pytest.mark.parametrize("window,causal", [((16, 16), False), ((0, 0), False), ((32, -1), False),
                                           ((-1, 8), False), ((24, -1), True), ((500, 500), False)])
def test_windows(window, causal):
    check_batch(sum(window) + 3, 2, 100, 120, 2, 2, 64, 64, BF16, causal=causal, window=window)
    check_batch(sum(window) + 4, 1, 120, 60, 2, 1, 32, 32, BF16, causal=causal, window=window)


@pytest.mark.parametrize("shape,dtype", [
    ((2, 3, 50, 70), F32), ((1, 3, 50, 70), BF16), ((2, 1, 1, 70), F32), ((50, 70), F32),
    ((2, 3, 50, 1), BF16)], ids=lambda x: str(x))
def test_bias_and_its_gradient(shape, dtype):
    check_batch(len(shape) + shape[-1], 2, 50, 70, 3, 3, 32, 32, BF16, bias=(shape, dtype),
                causal=shape[-1] == 1)


@pytest.mark.parametrize("slopes", [(4,), (2, 4)], ids=["hq", "b_hq"])
@pytest.mark.parametrize("causal", [False, True])
def test_alibi(slopes, causal):
    check_batch(len(slopes) + causal, 2, 64, 80, 4, 2, 64, 64, BF16, alibi=slopes, causal=causal)


# Issue 23: a NaN slope gave finite rows (out 0, lse +inf: all-NaN scores read as "no visible
# key"). NaN in gives NaN out: every row of that (batch, head) and its gradients, forward and
# backward; every other (batch, head) as with a finite slope there.
@pytest.mark.parametrize("causal", [False, True])
def test_alibi_nan_slope_gives_nan(causal):
    rng = np.random.default_rng(31 + causal)
    b, sq, sk, hq, hk, d = 2, 40, 50, 4, 2, 32
    q, dout = _rand(rng, (b, sq, hq, d), BF16), _rand(rng, (b, sq, hq, d), BF16)
    k, v = _rand(rng, (b, sk, hk, d), BF16), _rand(rng, (b, sk, hk, d), BF16)
    slopes = rng.uniform(0.05, 0.5, (b, hq))
    finite = jnp.asarray(slopes, F32)
    slopes[1, 2] = np.nan  # batch 1, query head 2 (key head 1)

    def fwd_bwd(q, k, v, slopes):
        f = lambda q, k, v: jax_aiter.flash_attn_func(q, k, v, causal=causal,  # noqa: E731
                                                      alibi_slopes=slopes, return_lse=True)
        (out, lse), vjp = jax.vjp(f, q, k, v)
        return out, lse, *vjp((dout, jnp.zeros_like(lse)))

    got = jax.jit(fwd_bwd)(q, k, v, jnp.asarray(slopes, F32))
    ref = jax.jit(fwd_bwd)(q, k, v, finite)
    nan = {"out": np.s_[1, :, 2], "lse": np.s_[1, 2], "dq": np.s_[1, :, 2], "dk": np.s_[1, :, 1],
           "dv": np.s_[1, :, 1]}
    for name, g, r in zip(nan, got, ref):
        g, r = np.array(to64(g)), np.array(to64(r))
        assert np.isnan(g[nan[name]]).all(), f"{name}: finite where the slope is NaN"
        g[nan[name]] = r[nan[name]] = 0
        assert np.isfinite(g).all(), f"{name}: NaN outside the NaN slope's rows"
        np.testing.assert_array_equal(g, r, err_msg=name)


@pytest.mark.parametrize("p", [0.1, 0.5])
@pytest.mark.parametrize("causal", [False, True])
def test_dropout(p, causal):
    check_batch(int(p * 10) + causal, 2, 64, 96, 4, 2, 64, 64, BF16, dropout_p=p, causal=causal)


def test_everything_at_once():
    check_batch(99, 2, 80, 100, 4, 2, 40, 40, F16, causal=True, window=(30, -1),
                bias=((1, 4, 80, 100), F32), alibi=(4,), dropout_p=0.2)


def test_deterministic_gradients_are_bit_identical():
    rng = np.random.default_rng(5)
    q, k, v = (_rand(rng, (2, 128, 4, 64), BF16) for _ in range(3))
    f = jax.jit(jax.grad(lambda q, k, v: jnp.sum(
        jax_aiter.flash_attn_func(q, k, v, causal=True, deterministic=True).astype(F32) ** 2),
        argnums=(0, 1, 2)))
    a, b = f(q, k, v), f(q, k, v)
    for x, y in zip(a, b):
        assert np.array_equal(np.asarray(x), np.asarray(y))


# ---- varlen -------------------------------------------------------------------------------------

def check_varlen(seed, lens_q, lens_k, hq, hk, d, dv, dtype, causal=False, window=(-1, -1),
                 alibi=False, dropout_p=0.0, max_q=None, max_k=None, dispatch=None):
    rng = np.random.default_rng(seed)
    cu_q = np.concatenate([[0], np.cumsum(lens_q)]).astype(np.int32)
    cu_k = np.concatenate([[0], np.cumsum(lens_k)]).astype(np.int32)
    tq, tk = int(cu_q[-1]), int(cu_k[-1])
    q = _rand(rng, (tq, hq, d), dtype)
    k = _rand(rng, (tk, hk, d), dtype)
    v = _rand(rng, (tk, hk, dv), dtype)
    dout = _rand(rng, (tq, hq, dv), dtype)
    nseq = len(lens_q)
    slopes = jnp.asarray(rng.uniform(0.05, 0.5, (nseq, hq)), F32) if alibi else None
    key = jax.random.key(seed) if dropout_p > 0 else None
    max_q = max_q or max(max(lens_q), 1)
    max_k = max_k or max(max(lens_k), 1)
    scale = 1.0 / math.sqrt(d)

    def fwd_bwd(q, k, v, dout, cu_q, cu_k):
        def f(q, k, v):
            return jax_aiter.flash_attn_varlen(q, k, v, cu_q, cu_k, max_q, max_k, dropout_p, None,
                                               causal, window, slopes, return_lse=True,
                                               dropout_key=key, dispatch=dispatch)
        (out, lse), vjp = jax.vjp(f, q, k, v)
        return out, lse, vjp((dout, jnp.zeros_like(lse)))

    out, lse, (dq, dk, dv_) = run_poisoned(fwd_bwd, q, k, v, dout, jnp.asarray(cu_q),
                                           jnp.asarray(cu_k))
    assert lse.shape == (hq, tq)
    keep = None
    if dropout_p > 0:  # the bits of every row and key, also past max_seqlen (a pure function)
        keep = np.asarray(jax_aiter.dropout_mask(key, nseq, hq, max(max(lens_q), max_q),
                                                 max(max(lens_k), max_k), dropout_p))
    left, right = window
    if causal:
        right = 0
    q64, k64, v64, do64 = (to64(x) for x in (q, k, v, dout))
    ref = {n: np.zeros(x.shape) for n, x in (("out", out), ("dq", dq), ("dk", dk), ("dv", dv_))}
    ref_lse = np.zeros((hq, tq))
    for s in range(nseq):
        a, e = cu_q[s], cu_q[s + 1]
        c, f_ = cu_k[s], cu_k[s + 1]
        if e == a:
            continue
        if f_ == c:
            ref_lse[:, a:e] = np.inf
            continue
        ke = None if keep is None else keep[s, :, : e - a, : f_ - c]
        sl = None if slopes is None else to64(slopes)[s]
        r = ref_sequence(q64[a:e], k64[c:f_], v64[c:f_], do64[a:e], scale, left, right, None, sl,
                         ke, dropout_p)
        ref["out"][a:e], ref_lse[:, a:e], ref["dq"][a:e] = r[0], r[1], r[2]
        ref["dk"][c:f_], ref["dv"][c:f_] = r[3], r[4]
    what = f"varlen {list(lens_q)}/{list(lens_k)} h{hq}/{hk} d{d}/{dv}"
    assert_close(f"{what} out", out, ref["out"], TOL_FWD[dtype])
    np.testing.assert_allclose(np.asarray(lse), ref_lse, rtol=1e-5, atol=1e-5,
                               err_msg=f"{what} lse")
    assert_close(f"{what} dq", dq, ref["dq"], TOL_BWD[dtype])
    assert_close(f"{what} dk", dk, ref["dk"], TOL_BWD[dtype])
    assert_close(f"{what} dv", dv_, ref["dv"], TOL_BWD[dtype])


@pytest.mark.parametrize("causal", [False, True])
def test_varlen_edge_lengths(causal):
    # Sequences of length 0 and 1, a long one, total_q > max_seqlen_q, sq != sk per sequence.
    check_varlen(1, [0, 1, 150, 7, 33], [5, 1, 130, 0, 40], 4, 2, 64, 64, BF16, causal=causal)


def test_varlen_features():
    check_varlen(2, [20, 64, 3], [30, 64, 9], 4, 1, 40, 40, F16, causal=True, window=(10, -1),
                 alibi=True, dropout_p=0.25)


def test_varlen_max_seqlen_above_the_longest():
    check_varlen(3, [10, 20], [12, 25], 2, 2, 32, 32, BF16, max_q=64, max_k=64)


def test_varlen_lse_is_hq_by_total_q():
    # The prior art sized it [hq, max_seqlen_q] and wrote out of bounds when total_q > max.
    check_varlen(4, [100, 100, 100], [100, 100, 100], 2, 2, 32, 32, BF16, causal=True)


# Issue 23: under jit, with cu_seqlens traced (nothing can check them), max_seqlen below a real
# sequence's length left that sequence's rows past it uninitialised, and its keys past max_seqlen_k
# unseen. max_seqlen_* only size the launch: every row and key of every sequence is computed, as
# the full sequences' reference (check_varlen passes cu_seqlens to jit as traced arguments and runs
# into NaN-filled outputs). The window (70 > max_seqlen_k - 1) still bounds the long sequences.
@pytest.mark.parametrize("dispatch", [PORTABLE, ASM_942, ASM_950], ids=["portable", "gfx942",
                                                                         "gfx950"])
def test_varlen_sequences_longer_than_max_seqlen_under_jit(dispatch):
    if dispatch is PORTABLE:
        check_varlen(23, [150, 40, 70, 1], [90, 200, 9, 3], 4, 2, 64, 64, BF16, causal=True,
                     window=(70, -1), alibi=True, dropout_p=0.2, max_q=64, max_k=64,
                     dispatch=dispatch)
    else:  # AITER's v3 forward and backward chain (d 128, no window, ALiBi or dropout)
        check_varlen(24, [150, 40, 1], [150, 60, 9], 8, 8, 128, 128, BF16, causal=True, max_q=96,
                     max_k=100, dispatch=dispatch)


def test_varlen_max_seqlen_below_a_sequence_is_deterministic():
    # The reproducer: q = k = v [10, 2, 32], one sequence of 10, max_seqlen_q 4, cu traced.
    rng = np.random.default_rng(23)
    q = _rand(rng, (10, 2, 32), BF16)
    dout = _rand(rng, (10, 2, 32), BF16)
    cu = jnp.asarray([0, 10], jnp.int32)
    with pytest.raises(ValueError, match="exceeds max_seqlen"):  # eagerly: a clear error
        jax_aiter.flash_attn_varlen(q, q, q, cu, cu, 4, 10)

    def attn(q, cu):
        return jax_aiter.flash_attn_varlen(q, q, q, cu, cu, 4, 10, return_lse=True)

    fwd = jax.jit(attn)
    grad = jax.jit(jax.grad(lambda q, cu: jnp.sum(attn(q, cu)[0].astype(F32) * dout)))
    runs = [(*fwd(q, cu), grad(q, cu)) for _ in range(3)]
    for run in runs[1:]:
        for got, first in zip(run, runs[0]):
            np.testing.assert_array_equal(np.asarray(got), np.asarray(first))
    out, lse, dq = runs[0]
    q64 = to64(q)
    r = ref_sequence(q64, q64, q64, to64(dout), 1.0 / math.sqrt(32), -1, -1)
    assert_close("out", out, r[0], TOL_FWD[BF16])
    np.testing.assert_allclose(np.asarray(lse), r[1], rtol=1e-5, atol=1e-5, err_msg="lse")
    assert_close("d(q = k = v)", dq, r[2] + r[3] + r[4], TOL_BWD[BF16])


# ---- tiers ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("dispatch", [PORTABLE, ASM_942, ASM_950], ids=["portable", "gfx942",
                                                                         "gfx950"])
@pytest.mark.parametrize("causal", [False, True])
def test_each_tier_forced_forward(dispatch, causal):
    # bf16, d = 128 and sq > 128: what AITER's v3 forward takes (batch mode).
    check_batch(7 + causal, 2, 160, 200 if not causal else 160, 8, 8, 128, 128, BF16,
                causal=causal, dispatch=dispatch, grads=False)


# AITER's v3 backward chain forced (odo pre-pass, dqdkdv, dq post-pass; GQA's expanded dk/dv
# reduced after), with its float32 (a32) and 16-bit (a16) dq accumulators.
@pytest.mark.parametrize("dispatch", [ASM_942, ASM_950], ids=["gfx942", "gfx950"])
@pytest.mark.parametrize("hk,causal,atomic32", [(8, False, True), (2, True, True),
                                                (8, True, False), (1, False, True)],
                         ids=["mha", "gqa-causal", "a16-causal", "mqa"])
def test_asm_tier_forced_backward(dispatch, hk, causal, atomic32):
    s = 160 if atomic32 else 192  # gfx942's a16 kernels need sq == sk, a multiple of 64
    check_batch(21 + hk, 2, s, s, 8, hk, 128, 128, BF16, causal=causal, dispatch=dispatch,
                atomic32=atomic32)


@pytest.mark.parametrize("dispatch", [ASM_942, ASM_950], ids=["gfx942", "gfx950"])
def test_asm_tier_varlen(dispatch):
    check_varlen(8, [150, 40, 1], [150, 60, 9], 8, 8, 128, 128, BF16, causal=True,
                 dispatch=dispatch)


def test_portable_tier_forced_everything():
    check_batch(11, 2, 50, 60, 4, 2, 96, 96, F16, causal=True, bias=((2, 4, 50, 60), F32),
                dispatch=PORTABLE)


# ---- the dropout mask ----------------------------------------------------------------------------

def philox4x32_10(ctr, key):
    """Independent NumPy Philox4x32-10 over arrays of counters (uint64 arithmetic)."""
    m0, m1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
    w0, w1 = np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)
    mask = np.uint64(0xFFFFFFFF)
    c = [np.asarray(x, np.uint64) for x in ctr]
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    for _ in range(10):
        p0, p1 = m0 * c[0], m1 * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k0, p1 & mask, (p0 >> np.uint64(32)) ^ c[3] ^ k1,
             p0 & mask]
        k0, k1 = (k0 + w0) & mask, (k1 + w1) & mask
    return c


def test_philox_known_answer():
    # Random123's published known-answer vector for philox4x32-10 with zero counter and key.
    got = philox4x32_10([0, 0, 0, 0], (0, 0))
    assert [int(x) for x in got] == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]


@pytest.mark.parametrize("p", [0.0, 0.3, 0.9])
def test_dropout_mask_is_philox(p):
    key = jax.random.key(42)
    b, h, sq, sk = 2, 3, 17, 23
    got = np.asarray(jax_aiter.dropout_mask(key, b, h, sq, sk, p))
    words = np.asarray(jax.random.key_data(key)).ravel()[:2]
    bi, hi, ii, jj = np.meshgrid(np.arange(b), np.arange(h), np.arange(sq), np.arange(sk),
                                 indexing="ij")
    r = philox4x32_10([ii, jj >> 2, hi, bi], (int(words[0]), int(words[1])))
    word = np.choose(jj & 3, r)
    threshold = min(math.floor(p * 2.0**32), 2**32 - 1)
    np.testing.assert_array_equal(got, word >= threshold)


def test_dropout_keep_rate():
    keep = np.asarray(jax_aiter.dropout_mask(jax.random.key(1), 4, 8, 128, 128, 0.3))
    assert abs(keep.mean() - 0.7) < 0.01


# ---- transformations and edge cases -------------------------------------------------------------

def test_jit_and_vmap():
    rng = np.random.default_rng(3)
    q, k, v = (_rand(rng, (3, 2, 40, 2, 32), BF16) for _ in range(3))
    f = lambda q, k, v: jax_aiter.flash_attn_func(q, k, v, causal=True)  # noqa: E731
    got = jax.jit(jax.vmap(f))(q, k, v)
    for i in range(3):
        np.testing.assert_array_equal(np.asarray(got[i]), np.asarray(f(q[i], k[i], v[i])))


def test_shard_map_over_heads():
    from jax.sharding import Mesh, PartitionSpec as P
    devices = np.array(jax.devices()[:2])
    if devices.size < 2:
        pytest.skip("needs two devices")
    mesh = Mesh(devices, ("h",))
    rng = np.random.default_rng(4)
    q, k, v = (_rand(rng, (2, 64, 4, 32), BF16) for _ in range(3))
    f = lambda q, k, v: jax_aiter.flash_attn_func(q, k, v, causal=True)  # noqa: E731
    spec = P(None, None, "h", None)
    sharded = jax.jit(jax.shard_map(f, mesh=mesh, in_specs=(spec,) * 3, out_specs=spec))
    np.testing.assert_array_equal(np.asarray(sharded(q, k, v)), np.asarray(f(q, k, v)))
    g = jax.jit(jax.grad(lambda q, k, v: jnp.sum(jax.shard_map(
        f, mesh=mesh, in_specs=(spec,) * 3, out_specs=spec)(q, k, v).astype(F32)),
        argnums=(0, 1, 2)))(q, k, v)
    g1 = jax.grad(lambda q, k, v: jnp.sum(f(q, k, v).astype(F32)), argnums=(0, 1, 2))(q, k, v)
    for a, b in zip(g, g1):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_empty_inputs():
    q = jnp.zeros((2, 0, 4, 32), BF16)
    k = jnp.zeros((2, 5, 4, 32), BF16)
    out, lse = jax_aiter.flash_attn_func(q, k, k, return_lse=True)
    assert out.shape == (2, 0, 4, 32) and lse.shape == (2, 4, 0)
    q = jnp.ones((2, 3, 4, 32), BF16)
    k0 = jnp.zeros((2, 0, 4, 32), BF16)
    out, lse = jax_aiter.flash_attn_func(q, k0, k0, return_lse=True)
    assert not np.asarray(out).any() and np.isinf(np.asarray(lse)).all()


def test_default_scale_uses_the_unpadded_head_dim():
    rng = np.random.default_rng(6)
    q, k, v = (_rand(rng, (1, 20, 2, 59), BF16) for _ in range(3))
    a = jax_aiter.flash_attn_func(q, k, v)
    b = jax_aiter.flash_attn_func(q, k, v, softmax_scale=1 / math.sqrt(59))
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


# ---- bad input ----------------------------------------------------------------------------------

def _raises(match, fn):
    with pytest.raises(Exception, match=match):
        jax.block_until_ready(fn())


def test_bad_inputs():
    q = jnp.zeros((2, 8, 4, 32), BF16)
    k = jnp.zeros((2, 8, 2, 32), BF16)
    f = jax_aiter.flash_attn_func
    _raises("operand k", lambda: f(q, jnp.zeros((2, 8, 3, 32), BF16), jnp.zeros((2, 8, 3, 32), BF16)))
    _raises("operand k", lambda: f(q, k.astype(F16), k))
    _raises("operand v", lambda: f(q, k, jnp.zeros((2, 9, 2, 32), BF16)))
    _raises("operand k", lambda: f(q, jnp.zeros((3, 8, 2, 32), BF16), jnp.zeros((3, 8, 2, 32), BF16)))
    _raises("operand q", lambda: f(q.astype(F32), k.astype(F32), k.astype(F32)))
    _raises("head dims up to 256", lambda: f(jnp.zeros((1, 4, 1, 264), BF16),
                                             jnp.zeros((1, 4, 1, 264), BF16),
                                             jnp.zeros((1, 4, 1, 8), BF16)))
    _raises("bias", lambda: f(q, k, k, bias=jnp.zeros((2, 4, 7, 8), F32)))
    _raises("alibi_slopes", lambda: f(q, k, k, alibi_slopes=jnp.zeros((3,), F32)))
    _raises("dropout_key", lambda: f(q, k, k, dropout_p=0.1))
    _raises("dropout_p", lambda: f(q, k, k, dropout_p=1.0, dropout_key=jax.random.key(0)))
    _raises("window_size", lambda: f(q, k, k, window_size=(-2, 0)))
    _raises("expected q, k, v", lambda: f(q[0], k[0], k[0]))


def test_bad_varlen_inputs():
    q = jnp.zeros((10, 2, 32), BF16)
    cu = jnp.asarray([0, 4, 10], jnp.int32)
    g = jax_aiter.flash_attn_varlen
    _raises("max_seqlen_q", lambda: g(q, q, q, cu, cu, 0, 6))
    _raises("max_seqlen_k", lambda: g(q, q, q, cu, cu, 6, None))
    _raises("exceeds max_seqlen", lambda: g(q, q, q, cu, cu, 4, 6))
    _raises("non-decreasing", lambda: g(q, q, q, jnp.asarray([0, 6, 4], jnp.int32), cu, 6, 6))
    _raises("from 0 to 10", lambda: g(q, q, q, jnp.asarray([0, 4, 9], jnp.int32), cu, 6, 6))
    _raises("cu_seqlens_k", lambda: g(q, q, q, cu, jnp.asarray([0, 10], jnp.int32), 6, 10))
    _raises("cu_seqlens_q", lambda: g(q, q, q, cu.astype(jnp.int64) if jax.config.x64_enabled
                                      else cu.astype(jnp.float32), cu, 6, 6))


def test_plan_tool_shows_the_tiers():
    plan = jax_aiter.plan(*_describe_fwd(), "gfx942", 304)
    assert plan["chosen"]["tier"] in ("asm", "portable")
    names = [t["tier"] for t in plan["tiers"]]
    assert names == ["asm", "portable"]


def _describe_fwd():
    from jax_aiter.attention import describe
    target, operands, attributes = describe(2, 1024, 1024, 8, 8, 128, causal=True)
    return target, operands, attributes


# ---- command buffers (GPU) -----------------------------------------------------------------------

_CB_CHILD = r"""
import json, re
import jax, jax.numpy as jnp, numpy as np
import jax_aiter
asm = jax_aiter.Dispatch("asm", "gfx942", 304)

def step(q, k, v, do):
    def loss(q, k, v, dispatch):
        out = jax_aiter.flash_attn_func(q, k, v, causal=True, dispatch=dispatch)
        return jnp.sum(out.astype(jnp.float32) * do.astype(jnp.float32))
    # Ours, and AITER's v3 chain planned for gfx942 (its memsets and workspace) through the twins.
    return (jax.grad(loss, argnums=(0, 1, 2))(q, k, v, None),
            jax.grad(loss, argnums=(0, 1, 2))(q, k, v, asm))

rng = np.random.default_rng(3)
q, do = (jnp.asarray(rng.standard_normal((1, 192, 4, 128)), jnp.bfloat16) for _ in range(2))
k, v = (jnp.asarray(rng.standard_normal((1, 192, 2, 128)), jnp.bfloat16) for _ in range(2))
f = jax.jit(step)
hlo = f.lower(q, k, v, do).compile().as_text()
calls = dict(re.findall(r'%([\w.\-]+) = .*custom_call_target="(aiter\.[\w.]+)"', hlo))
in_hlo_buffers = []
for computation in re.split(r"\n(?=\S)", hlo):
    if "command_buffer" in computation.split("\n", 1)[0]:
        in_hlo_buffers += re.findall(r'custom_call_target="(aiter\.[\w.]+)"', computation)
(ours, theirs) = f(q, k, v, do)
errors = [float(jnp.linalg.norm((a - b).astype(jnp.float32)) / jnp.linalg.norm(b.astype(jnp.float32)))
          for a, b in zip(ours, theirs)]
print("RESULT " + json.dumps({"calls": calls, "in_hlo_buffers": in_hlo_buffers, "errors": errors}))
"""


@pytest.mark.skipif(jax.default_backend() == "cpu", reason="command buffers are a GPU feature")
def test_attention_runs_inside_command_buffers():
    env = dict(os.environ,
               XLA_FLAGS="--xla_gpu_enable_command_buffer=FUSION,CUSTOM_CALL "
                         "--xla_gpu_graph_min_graph_size=1",
               TF_CPP_MIN_LOG_LEVEL="0", TF_CPP_VMODULE="command_buffer_conversion_pass=2")
    proc = subprocess.run([sys.executable, "-c", _CB_CHILD], env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(proc.stdout.split("RESULT ", 1)[1])
    calls = result["calls"]
    assert sorted(set(calls.values())) == ["aiter.flash_attn_bwd", "aiter.flash_attn_fwd"]
    captured = set()
    for line in proc.stderr.splitlines():
        m = re.search(r"Creating command buffer thunk with the following thunks: (.*)", line)
        if m:
            captured |= {t.strip() for t in m.group(1).split(",")}
    got = {i for i in calls if i in captured} | {
        i for i in calls if calls[i] in result["in_hlo_buffers"]}
    print(f"attention custom calls {calls}; captured in command buffers: {sorted(got)}")
    assert got == set(calls), f"not captured: {sorted(set(calls) - got)}"
    # Both tiers' gradients agree (ours against AITER's chain through its twins).
    assert max(result["errors"]) < 2e-2, result["errors"]
