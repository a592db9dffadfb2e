"""jax_aiter.grouped_gemm through JAX: values and gradients against an independent NumPy float64
reference and against jax.lax.ragged_dot (empty groups, sizes summing to less than M, G = 1, 8,
64, every row tile, M not a tile multiple, odd N and K), the fp8 block-scale forward against
float64 of the dequantized math, clamped sizes, empty calls, shardings, every bad input by name,
and the plan tool.

Runs on whatever platform JAX has (CPU in CI: the Host backend's C++ twins; CUDA on the H100: our
sm_90 kernels).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

import jax_aiter
from jax_aiter.grouped_gemm import describe, describe_wgrad
from jax_aiter.quant import quantize_fp8_blocks
from poison import run_poisoned

BF16, F16, F32 = jnp.bfloat16, jnp.float16, jnp.float32
U = {BF16: 2.0**-8, F16: 2.0**-11, F32: 2.0**-24}  # unit roundoff of each output dtype
FP8 = jax_aiter.fp8_dtype()


def to64(a) -> np.ndarray:
    return np.asarray(a).astype(np.float64)


def spans(sizes, m):
    """(group, first row, end row) of each group by the op's rule, written independently: sizes
    clamped at 0, each group cut at M."""
    out, row = [], 0
    for g, s in enumerate(np.asarray(sizes)):
        take = min(max(int(s), 0), m - row)
        out.append((g, row, row + take))
        row += take
    return out


def reference(x, w, sizes, transpose_w=False):
    """float64 out = x[rows of g] . w[g]^T (transpose_w: . w[g]), zeros past the groups; and the
    same with |x|, |w| (the scale of the accumulation error)."""
    x64, w64 = to64(x), to64(w)
    cols = w64.shape[2 if transpose_w else 1]
    ref = np.zeros((x64.shape[0], cols))
    mag = np.zeros_like(ref)
    for g, r0, r1 in spans(sizes, x64.shape[0]):
        wg = w64[g] if transpose_w else w64[g].T
        ref[r0:r1] = x64[r0:r1] @ wg
        mag[r0:r1] = np.abs(x64[r0:r1]) @ np.abs(wg)
    return ref, mag


def wgrad_reference(dy, x, sizes):
    d64, x64 = to64(dy), to64(x)
    g_count = len(np.asarray(sizes))
    ref = np.zeros((g_count, d64.shape[1], x64.shape[1]))
    mag = np.zeros_like(ref)
    for g, r0, r1 in spans(sizes, x64.shape[0]):
        ref[g] = d64[r0:r1].T @ x64[r0:r1]
        mag[g] = np.abs(d64[r0:r1]).T @ np.abs(x64[r0:r1])
    return ref, mag


def assert_close(what, got, ref, mag, depth, out_dtype, extra=0.0):
    """|got - ref| <= u_out |ref| + 16 u_f32 sqrt(depth) mag (+ extra mag): one rounding to the
    output dtype and float32 accumulation over `depth` terms. NaN fails; exact zeros where ref
    and mag are 0 (rows past the groups, empty groups)."""
    got = to64(got)
    assert got.shape == ref.shape, (what, got.shape, ref.shape)
    bound = U[out_dtype] * np.abs(ref) + (16 * 2.0**-24 * np.sqrt(depth) + extra) * mag
    bad = ~(np.abs(got - ref) <= bound)
    if bad.any():
        i = tuple(int(v) for v in np.argwhere(bad)[0])
        raise AssertionError(f"{what}: {int(bad.sum())} of {bad.size} out of tolerance, e.g. {i}: "
                             f"got {got[i]!r} ref {ref[i]!r} bound {bound[i]:.3g}")


def _operands(seed, m, n, k, sizes, dtype):
    rng = np.random.default_rng(seed)
    x = jnp.asarray(rng.uniform(-1, 1, (m, k)), dtype)
    w = jnp.asarray(rng.uniform(-1, 1, (len(sizes), n, k)), dtype)
    return x, w, jnp.asarray(sizes, jnp.int32)


def _random_sizes(seed, groups, total, empty_every=0):
    """`groups` sizes summing to `total`, every `empty_every`-th group empty."""
    rng = np.random.default_rng(seed)
    weights = rng.uniform(0.2, 1.0, groups)
    if empty_every:
        weights[::empty_every] = 0
    sizes = np.floor(weights / weights.sum() * total).astype(np.int64)
    sizes[np.argmax(weights)] += total - sizes.sum()
    return sizes.astype(np.int32)


# (M, N, K, sizes, dtype, out dtype). Row tiles: mean M / G >= 128 -> t128x128, 64..127 -> t64x128,
# below -> t16x128.
VALUE_CASES = [
    (300, 64, 128, [300], BF16, BF16),                                # G = 1, t128 (300 rows)
    (300, 129, 67, [300], BF16, F32),                                 # odd N, K: element-wise loads
    (517, 96, 256, list(_random_sizes(1, 8, 500, 3)), BF16, BF16),    # G = 8, empties, sum < M
    (1000, 160, 64, list(_random_sizes(2, 64, 990, 5)), F16, F16),    # G = 64, t16
    (600, 200, 72, list(_random_sizes(3, 8, 600)), F16, F32),         # t64, K % 8 == 0, N odd-ish
    (257, 100, 130, [0, 100, 0, 57, 0], BF16, F16),                   # t16, empty first/last
    (70, 64, 64, [0, 0, 0], BF16, BF16),                              # every group empty
]


@pytest.mark.parametrize("m,n,k,sizes,dtype,out_dtype", VALUE_CASES)
def test_forward_values(m, n, k, sizes, dtype, out_dtype):
    for seed in (m, m + 1):  # two data sets through one compiled function (poison.py)
        x, w, gs = _operands(seed, m, n, k, sizes, dtype)
        (out,) = run_poisoned(lambda x, w, gs: (jax_aiter.grouped_gemm(x, w, gs,
                                                                       out_dtype=out_dtype),),
                              x, w, gs)
        assert out.dtype == out_dtype and out.shape == (m, n)
        ref, mag = reference(x, w, sizes)
        assert_close(f"{m}x{n}x{k} G={len(sizes)}", out, ref, mag, k, out_dtype)
        covered = sum(min(max(s, 0), m) for s in sizes)
        assert not np.any(to64(out)[min(covered, m):]), "rows past the groups are zeros"


@pytest.mark.parametrize("m,n,k,sizes,dtype,out_dtype", VALUE_CASES[:5])
def test_forward_matches_ragged_dot(m, n, k, sizes, dtype, out_dtype):
    x, w, gs = _operands(7, m, n, k, sizes, dtype)
    ours = jax.jit(lambda x, w, gs: jax_aiter.grouped_gemm(x, w, gs, out_dtype=F32))(x, w, gs)
    theirs = jax.lax.ragged_dot(x, jnp.swapaxes(w, 1, 2), gs, preferred_element_type=F32)
    _, mag = reference(x, w, sizes)
    # Both accumulate in float32 (in different orders): twice the float32 accumulation bound.
    bound = 2 * 16 * 2.0**-24 * np.sqrt(k) * mag
    assert np.all(np.abs(to64(ours) - to64(theirs)) <= bound)


def test_every_row_tile_is_planned():
    """The rule of ops/grouped_gemm_portable.hpp (mean rows a group against BM), restated."""
    for m, g, bm in ((32768, 256, 128), (1000, 10, 64), (1000, 64, 16), (7, 1, 16),
                     (128, 1, 128), (127, 1, 64)):
        operands, attrs = describe(m, 256, 256, g)
        plan = jax_aiter.plan("aiter.grouped_gemm", operands, attrs, "sm_90")
        notes = plan["chosen"]["plan"]["notes"]
        assert notes["tile_m"] == bm, (m, g, notes)
        assert notes["row_tiles"] == -(-m // bm) + g, notes  # the capacity: ceil(M / BM) + G
        steps = plan["chosen"]["plan"]["steps"]
        assert [s["launch"]["symbol"] for s in steps][0] == "jax_aiter_grouped_gemm_schedule"
        assert steps[1]["launch"]["grid"] == [2, -(-m // bm) + g, 1]


# ---- clamped sizes, empty calls ----------------------------------------------------------------

def test_sizes_are_clamped():
    """Negative sizes count as 0; a group running past M keeps the rows below M; later groups get
    none (the reference's rule, spans())."""
    m, n, k = 200, 64, 64
    for sizes in ([-5, 150, 100, 30], [250, 10], [0, -1, 199, 5], [200]):
        x, w, gs = _operands(5, m, n, k, sizes, BF16)
        out = jax.jit(jax_aiter.grouped_gemm)(x, w, gs)
        ref, mag = reference(x, w, sizes)
        assert_close(f"sizes {sizes}", out, ref, mag, k, BF16)
        dx, dw = jax.grad(lambda x, w: (jax_aiter.grouped_gemm(x, w, gs, out_dtype=F32)).sum(),
                          (0, 1))(x, w)
        ones = np.ones((m, n))
        for g, r0, r1 in spans(sizes, m):
            np.testing.assert_allclose(to64(dw[g]), ones[r0:r1].T @ to64(x)[r0:r1],
                                       rtol=2**-7, atol=2**-6 * max(r1 - r0, 1))
        covered = spans(sizes, m)[-1][2]
        assert not np.any(to64(dx)[covered:])


def test_empty_calls_give_zeros():
    for m, n, k, g in ((0, 64, 32, 4), (16, 0, 32, 4), (16, 64, 0, 4), (16, 64, 32, 0)):
        x, w = jnp.ones((m, k), BF16), jnp.ones((g, n, k), BF16)
        out = jax_aiter.grouped_gemm(x, w, jnp.full((g,), 4, jnp.int32))
        assert out.shape == (m, n) and not np.any(to64(out))
        dx, dw = jax.grad(lambda x, w: jax_aiter.grouped_gemm(
            x, w, jnp.full((g,), 4, jnp.int32)).astype(F32).sum(), (0, 1))(x, w)
        assert dx.shape == (m, k) and dw.shape == (g, n, k)
        assert not np.any(to64(dx)) and not np.any(to64(dw))
    # Validated first: bad input is an error whatever its size.
    with pytest.raises(ValueError, match=r"aiter.grouped_gemm: operand w: expected bf16\[G,N,32\]"):
        jax_aiter.grouped_gemm(jnp.ones((0, 32), BF16), jnp.ones((4, 8, 31), BF16),
                               jnp.zeros((4,), jnp.int32))


# ---- gradients ---------------------------------------------------------------------------------

GRAD_CASES = [
    (300, 64, 128, [300], BF16, BF16),                              # G = 1
    (517, 96, 256, list(_random_sizes(4, 8, 500, 3)), BF16, F32),   # G = 8, empties, sum < M
    (400, 72, 64, list(_random_sizes(5, 64, 390, 4)), F16, F16),    # G = 64
    (211, 67, 129, [50, 0, 100, 40], BF16, BF16),                   # odd N, K: element-wise loads
]


@pytest.mark.parametrize("m,n,k,sizes,dtype,out_dtype", GRAD_CASES)
def test_gradients(m, n, k, sizes, dtype, out_dtype):
    x, w, gs = _operands(m + n, m, n, k, sizes, dtype)
    dy = jnp.asarray(np.random.default_rng(9).uniform(-1, 1, (m, n)), out_dtype)

    def body(x, w, gs, dy):
        out, vjp = jax.vjp(lambda x, w: jax_aiter.grouped_gemm(x, w, gs, out_dtype=out_dtype), x, w)
        return (out, *vjp(dy))

    out, dx, dw = run_poisoned(body, x, w, gs, dy)
    assert dx.dtype == dtype and dw.dtype == dtype
    dy_in = dy.astype(dtype)  # the backward multiplies dy in x's dtype
    ref, mag = reference(dy_in, w, sizes, transpose_w=True)
    assert_close("dx", dx, ref, mag, n, dtype)
    ref, mag = wgrad_reference(dy_in, x, sizes)
    assert_close("dw", dw, ref, mag, m, dtype)
    for g, r0, r1 in spans(sizes, m):
        if r0 == r1:
            assert not np.any(to64(dw[g])), f"empty group {g}: dw is zeros"
    # Against ragged_dot's own gradient (XLA's transpose rules), same cotangent.
    rd = lambda x, w: jax.lax.ragged_dot(x, jnp.swapaxes(w, 1, 2), gs,  # noqa: E731
                                         preferred_element_type=F32).astype(out_dtype)
    _, vjp = jax.vjp(rd, x, w)
    rdx, rdw = vjp(dy)
    for what, ours, theirs, depth in (("dx", dx, rdx, n), ("dw", dw, rdw, m)):
        scale = np.abs(to64(theirs)).max() + 1e-30
        err = np.abs(to64(ours) - to64(theirs)).max() / scale
        assert err <= 4 * U[dtype], (what, err)


def test_gradient_of_a_two_layer_expert_mlp():
    """An MoE expert MLP (up, relu, down) trains through grouped_gemm: grads of a loss against
    the same loss on ragged_dot."""
    m, h, f, g = 256, 64, 96, 8
    rng = np.random.default_rng(12)
    x = jnp.asarray(rng.standard_normal((m, h)), BF16)
    w1 = jnp.asarray(rng.standard_normal((g, f, h)) / 8, BF16)
    w2 = jnp.asarray(rng.standard_normal((g, h, f)) / 8, BF16)
    gs = jnp.asarray(_random_sizes(6, g, m, 4))

    def ours(x, w1, w2):
        hid = jax.nn.relu(jax_aiter.grouped_gemm(x, w1, gs))
        return (jax_aiter.grouped_gemm(hid, w2, gs, out_dtype=F32) ** 2).mean()

    def theirs(x, w1, w2):
        up = jax.lax.ragged_dot(x, jnp.swapaxes(w1, 1, 2), gs, preferred_element_type=F32)
        hid = jax.nn.relu(up.astype(BF16))
        down = jax.lax.ragged_dot(hid, jnp.swapaxes(w2, 1, 2), gs, preferred_element_type=F32)
        return (down ** 2).mean()

    a = jax.jit(jax.value_and_grad(ours, (0, 1, 2)))(x, w1, w2)
    b = jax.jit(jax.value_and_grad(theirs, (0, 1, 2)))(x, w1, w2)
    np.testing.assert_allclose(float(a[0]), float(b[0]), rtol=2e-2)
    for ga, gb in zip(a[1], b[1]):
        scale = np.abs(to64(gb)).max()
        assert np.abs(to64(ga) - to64(gb)).max() <= 0.05 * scale


# ---- fp8 block-scale forward ------------------------------------------------------------------

def _fp8_operands(seed, m, n, k, sizes):
    """x, w quantized by the package's quantizers (w per group; N not a multiple of 128: its
    last scale block covers the rows past N, padded with zeros to quantize)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((len(sizes), n, k)).astype(np.float32)
    xq, xs = jax_aiter.quantize_fp8_per_token_block(x, FP8)
    n_pad = -(-n // 128) * 128
    wp = np.zeros((len(sizes), n_pad, k), np.float32)
    wp[:, :n] = w
    wq, ws = quantize_fp8_blocks(wp, (128, 128), FP8)
    return xq, wq[:, :n], xs, ws, jnp.asarray(sizes, jnp.int32)


def fp8_reference(xq, wq, xs, ws, sizes):
    """float64 of the dequantized math: sum over K blocks of (x_kb . w_kb) * xs * ws."""
    x64, w64, xs64, ws64 = to64(xq), to64(wq), to64(xs), to64(ws)
    m, k = x64.shape
    n = w64.shape[1]
    ref, mag = np.zeros((m, n)), np.zeros((m, n))
    for g, r0, r1 in spans(sizes, m):
        for kb in range(k // 128):
            ks = slice(kb * 128, (kb + 1) * 128)
            s = xs64[r0:r1, kb][:, None] * np.repeat(ws64[g, :, kb], 128)[:n][None, :]
            ref[r0:r1] += (x64[r0:r1, ks] @ w64[g][:, ks].T) * s
            mag[r0:r1] += (np.abs(x64[r0:r1, ks]) @ np.abs(w64[g][:, ks]).T) * np.abs(s)
    return ref, mag


@pytest.mark.parametrize("m,n,k,sizes", [
    (300, 256, 256, [300]),                              # G = 1, t128
    (517, 128, 384, list(_random_sizes(7, 8, 500, 3))),  # G = 8, empties, sum < M, t64
    (260, 200, 128, list(_random_sizes(8, 64, 250, 5))),  # G = 64, N % 128 != 0, t16
])
def test_fp8_forward(m, n, k, sizes):
    xq, wq, xs, ws, gs = _fp8_operands(m + n, m, n, k, sizes)
    (out,) = run_poisoned(lambda *a: (jax_aiter.grouped_gemm(a[0], a[1], a[4], x_scale=a[2],
                                                             w_scale=a[3]),),
                          xq, wq, xs, ws, gs)
    assert out.dtype == BF16 and out.shape == (m, n)
    ref, mag = fp8_reference(xq, wq, xs, ws, sizes)
    assert_close(f"fp8 {m}x{n}x{k}", out, ref, mag, k, BF16)
    # And close to the bf16 product of the dequantized operands (the quantizers' own error aside).
    assert np.all(np.isfinite(to64(out)))


def test_fp8_has_no_gradient():
    xq, wq, xs, ws, gs = _fp8_operands(1, 16, 128, 128, [16])
    with pytest.raises(TypeError, match="inference op"):
        jax.grad(lambda xs: jax_aiter.grouped_gemm(xq, wq, gs, x_scale=xs, w_scale=ws)
                 .astype(F32).sum())(xs)


# ---- shardings ---------------------------------------------------------------------------------

def _mesh(n):
    devices = jax.devices()
    if len(devices) < n:
        pytest.skip("needs several devices (CPU: conftest forces 4)")
    return Mesh(np.array(devices[:n]), ("d",))


@pytest.mark.parametrize("x_spec,w_spec", [
    (P("d", None), P()),               # rows split (data parallel): local, sizes re-derived
    (P(), P(None, "d", None)),         # N split: local
    (P(None, "d"), P(None, None, "d")),  # K split: f32 partial products, all-reduced
    (P(), P("d", None, None)),         # experts split: gathered (no dispatch here)
])
def test_sharded_values_and_gradients(x_spec, w_spec):
    mesh = _mesh(4)
    m, n, k = 256, 128, 256
    sizes = [10, 0, 90, 60, 0, 40, 30, 20]  # 250 of 256 rows; groups straddle the row shards
    x, w, gs = _operands(21, m, n, k, sizes, BF16)
    dy = jnp.asarray(np.random.default_rng(22).uniform(-1, 1, (m, n)), F32)

    def loss(x, w):
        return (jax_aiter.grouped_gemm(x, w, gs, out_dtype=F32) * dy).sum()

    f = jax.jit(jax.value_and_grad(loss, (0, 1)))
    want = f(x, w)
    xs_ = jax.device_put(x, NamedSharding(mesh, x_spec))
    ws_ = jax.device_put(w, NamedSharding(mesh, w_spec))
    got = f(xs_, ws_)
    np.testing.assert_allclose(float(got[0]), float(want[0]), rtol=1e-5)
    for a, b in zip(got[1], want[1]):
        scale = np.abs(to64(b)).max()
        assert np.abs(to64(a) - to64(b)).max() <= 2 * U[BF16] * scale
    # The forward alone, against the reference.
    out = jax.jit(lambda x, w: jax_aiter.grouped_gemm(x, w, gs))(xs_, ws_)
    ref, mag = reference(x, w, sizes)
    assert_close(f"sharded {x_spec} {w_spec}", out, ref, mag, k, BF16, extra=2.0**-8)


@pytest.fixture(params=["shardy", "gspmd"])
def partitioner(request):
    old = jax.config.jax_use_shardy_partitioner
    jax.config.update("jax_use_shardy_partitioner", request.param == "shardy")
    yield request.param
    jax.config.update("jax_use_shardy_partitioner", old)


def test_sharded_collectives(partitioner):
    """The compiled programs move what the rules say (test_sharding.run: elements by collective
    kind, output shardings, values against the unsharded call): rows and N local, K all-reduced,
    the experts gathered; backward: rows -> dw all-reduced, N -> dx all-reduced."""
    from test_sharding import mesh1, run, vjp
    if len(jax.devices()) < 4:
        pytest.skip("needs 4 devices (CPU: conftest forces 4)")
    mesh = mesh1()
    m, n, k, g = 256, 128, 256, 8
    sizes = [10, 0, 90, 60, 0, 40, 30, 20]
    x, w, gs = _operands(31, m, n, k, sizes, BF16)
    dy = jnp.asarray(np.random.default_rng(32).uniform(-1, 1, (m, n)), BF16)
    fwd = lambda x, w, gs: jax_aiter.grouped_gemm(x, w, gs)  # noqa: E731
    bwd = vjp(fwd, (0, 1))
    rows, cols, red, experts = (P("x", None), P()), (P(), P(None, "x", None)), \
        (P(None, "x"), P(None, None, "x")), (P(), P("x", None, None))
    run(fwd, (x, w, gs), (*rows, P()), mesh, expect={}, out_specs=[P("x", None)], exact=(0,))
    run(fwd, (x, w, gs), (*cols, P()), mesh, expect={}, out_specs=[P(None, "x")], exact=(0,))
    run(fwd, (x, w, gs), (*red, P()), mesh, expect={"all-reduce": m * n}, out_specs=[P()],
        close=(0,))
    run(fwd, (x, w, gs), (*experts, P()), mesh, expect={"all-gather": g * n * k},
        out_specs=[P()], exact=(0,))
    run(bwd, (x, w, gs, dy), (*rows, P(), P("x", None)), mesh, expect={"all-reduce": g * n * k},
        out_specs=[P("x", None), P()], exact=(0,), close=(1,))
    run(bwd, (x, w, gs, dy), (*cols, P(), P(None, "x")), mesh, expect={"all-reduce": m * k},
        out_specs=[P(), P(None, "x", None)], close=(0,), exact=(1,))


def test_row_shard_local_sizes():
    """Each row shard's sizes: the rows of each group inside the shard (written out by hand)."""
    from jax_aiter.grouped_gemm import _local_sizes
    sizes = jnp.asarray([10, 0, 90, 60, 0, 40, 30, 20], jnp.int32)  # ends 10 10 100 160 160 200..
    want = {0: [10, 0, 54, 0, 0, 0, 0, 0], 64: [0, 0, 36, 28, 0, 0, 0, 0],
            128: [0, 0, 0, 32, 0, 32, 0, 0], 192: [0, 0, 0, 0, 0, 8, 30, 20]}
    for lo, local in want.items():
        np.testing.assert_array_equal(np.asarray(_local_sizes(sizes, 256, lo, 64)), local)
    # Clamping: negative sizes, and groups past M.
    np.testing.assert_array_equal(
        np.asarray(_local_sizes(jnp.asarray([-3, 300, 5], jnp.int32), 256, 192, 64)), [0, 64, 0])


# ---- errors ------------------------------------------------------------------------------------

def _bf(*shape):
    return jnp.ones(shape, BF16)


GS4 = jnp.full((4,), 2, jnp.int32)


@pytest.mark.parametrize("make,message", [
    (lambda: jax_aiter.grouped_gemm(jnp.ones((8, 64), F32), jnp.ones((4, 16, 64), F32), GS4),
     "aiter.grouped_gemm: operand x: expected bf16, f16, f8_e4m3fn or f8_e4m3fnuz [M,K], got "
     "f32[8,64]"),
    (lambda: jax_aiter.grouped_gemm(_bf(8, 64), _bf(4, 16, 63), GS4),
     "aiter.grouped_gemm: operand w: expected bf16[G,N,64] (K and dtype from x), got "
     "bf16[4,16,63]"),
    (lambda: jax_aiter.grouped_gemm(_bf(8, 64), jnp.ones((4, 16, 64), F16), GS4),
     "aiter.grouped_gemm: operand w: expected bf16[G,N,64]"),
    (lambda: jax_aiter.grouped_gemm(_bf(8, 64), _bf(4, 16, 64), jnp.full((3,), 2, jnp.int32)),
     "aiter.grouped_gemm: operand group_sizes: expected i32[4] (G from w), got i32[3]"),
    (lambda: jax_aiter.grouped_gemm(_bf(8, 64), _bf(4, 16, 64), jnp.full((4,), 2.0, F32)),
     "aiter.grouped_gemm: operand group_sizes: expected i32[4] (G from w), got f32[4]"),
    (lambda: jax_aiter.grouped_gemm(_bf(8, 64), _bf(4, 16, 64), GS4, out_dtype=jnp.int32),
     "aiter.grouped_gemm: operand out: expected bf16, f16 or f32[8,16] (M from x, N from w), got "
     "i32[8,16]"),
    (lambda: jax_aiter.grouped_gemm(_bf(8, 128), _bf(4, 16, 128), GS4,
                                    x_scale=jnp.ones((8, 1), F32), w_scale=jnp.ones((4, 1, 1))),
     "aiter.grouped_gemm: operand x_scale: expected none (x is bf16; scales go with fp8 x)"),
    (lambda: jax_aiter.grouped_gemm(jnp.ones((8, 128), FP8), jnp.ones((4, 16, 128), FP8), GS4,
                                    w_scale=jnp.ones((4, 1, 1), F32)),
     "aiter.grouped_gemm: operand x_scale: missing: fp8 x needs f32[8,1] (M x K/128)"),
    (lambda: jax_aiter.grouped_gemm(jnp.ones((8, 128), FP8), jnp.ones((4, 16, 128), FP8), GS4,
                                    x_scale=jnp.ones((1, 8), F32),
                                    w_scale=jnp.ones((4, 1, 1), F32)),
     "aiter.grouped_gemm: operand x_scale: expected f32[8,1] (M x K/128), got f32[1,8]"),
    (lambda: jax_aiter.grouped_gemm(jnp.ones((8, 128), FP8), jnp.ones((4, 16, 128), FP8), GS4,
                                    x_scale=jnp.ones((8, 1), F32), w_scale=jnp.ones((4, 1), F32)),
     "aiter.grouped_gemm: operand w_scale: expected f32[4,1,1] (G x ceil(N/128) x K/128), got "
     "f32[4,1]"),
    (lambda: jax_aiter.grouped_gemm(jnp.ones((8, 64), FP8), jnp.ones((4, 16, 64), FP8), GS4,
                                    x_scale=jnp.ones((8, 1), F32),
                                    w_scale=jnp.ones((4, 1, 1), F32)),
     "aiter.grouped_gemm: operand x: K=64 is not a multiple of 128"),
    (lambda: jax_aiter.grouped_gemm(jnp.ones((8, 128), FP8), jnp.ones((4, 16, 128), FP8), GS4,
                                    x_scale=jnp.ones((8, 1), F32), w_scale=jnp.ones((4, 1, 1), F32),
                                    out_dtype=F32),
     "aiter.grouped_gemm: operand out: the fp8 block-scale grouped GEMM gives bf16"),
])
def test_errors_name_the_operand(make, message):
    with pytest.raises(Exception) as e:
        jax.block_until_ready(make())
    assert message in str(e.value), str(e.value)


def test_python_side_errors():
    with pytest.raises(ValueError, match=r"expected x \[M, K\], w \[G, N, K\] and group_sizes"):
        jax_aiter.grouped_gemm(_bf(8, 64), _bf(16, 64), GS4)


def test_wgrad_and_dgrad_targets_name_their_operands():
    call = jax_aiter.plan
    ok, attrs = describe_wgrad(8, 16, 32, 4)
    assert call("aiter.grouped_gemm_wgrad", ok, attrs, "host")["chosen"]["tier"] == "portable"
    for name, bad, message in [
        ("dy", ("int32", (8, 16)), "aiter.grouped_gemm_wgrad: operand dy: expected bf16 or f16"),
        ("x", ("bfloat16", (7, 32)), "aiter.grouped_gemm_wgrad: operand x: expected bf16[8,K] "
                                     "(M and dtype from dy), got bf16[7,32]"),
        ("dw", ("bfloat16", (4, 32, 16)), "aiter.grouped_gemm_wgrad: operand dw: expected bf16, "
                                          "f16 or f32[4,16,32]"),
    ]:
        with pytest.raises(ValueError) as e:
            call("aiter.grouped_gemm_wgrad", {**ok, name: bad}, attrs, "host")
        assert message in str(e.value), str(e.value)
    ok, attrs = describe(8, 16, 32, 4, transpose_w=True)
    with pytest.raises(ValueError) as e:
        call("aiter.grouped_gemm", {**ok, "x": ("bfloat16", (8, 32))}, attrs, "host")
    assert "operand w: expected bf16[G,32,K] (N and dtype from x; transpose_w)" in str(e.value)
    fp8, fattrs = describe(8, 128, 128, 4, "float8_e4m3fn")
    with pytest.raises(ValueError, match="attribute transpose_w: the fp8 block-scale grouped GEMM "
                                         "is inference only"):
        call("aiter.grouped_gemm", {**fp8, "x": ("float8_e4m3fn", (8, 128))},
             {"transpose_w": True}, "host")
    # sm_90 reads OCP e4m3: an e4m3fnuz call is refused with the reason.
    nuz, nattrs = describe(8, 128, 128, 4, "float8_e4m3fnuz")
    plan = call("aiter.grouped_gemm", nuz, nattrs, "sm_90")
    assert plan["chosen"] is None and "f8_e4m3fn" in json.dumps(plan["tiers"])


# ---- the plan tool ----------------------------------------------------------------------------

def test_plan_tool_command_line():
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    for command, symbol in (("grouped_gemm", "jax_aiter_grouped_gemm_bf16_fwd_t128x128_aligned"),
                            ("grouped_gemm_dgrad",
                             "jax_aiter_grouped_gemm_bf16_dgrad_t128x128_aligned"),
                            ("grouped_gemm_wgrad",
                             "jax_aiter_grouped_gemm_bf16_wgrad_t128x128_aligned")):
        out = subprocess.run([sys.executable, "-m", "jax_aiter.tools", "plan", command, "--m",
                              "32768", "--n", "4096", "--k", "7168", "--groups", "256", "--arch",
                              "sm_90"], capture_output=True, text=True, env=env, check=True).stdout
        steps = json.loads(out)["chosen"]["plan"]["steps"]
        assert [s["launch"]["symbol"] for s in steps] == ["jax_aiter_grouped_gemm_schedule",
                                                          symbol], command
