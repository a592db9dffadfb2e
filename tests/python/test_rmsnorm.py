"""jax_aiter.rms_norm / rms_norm_with_add through JAX: forward and gradients against a float64 NumPy
reference, transformations (jit, vmap, shard_map), error messages and determinism.

Runs on whatever platform JAX has (CPU in CI: the Host backend's C++ twins; CUDA on the H100: the
portable kernels) -- nothing here names a platform except the shard_map fallback described there.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import re
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

import jax_aiter
from jax_aiter import _ffi
from poison import run_poisoned

BF16, F16, F32 = jnp.bfloat16, jnp.float16, jnp.float32
DTYPES = [BF16, F16, F32]
EPS = 1e-6

# ---- tolerances -----------------------------------------------------------------------------
#
# Every element must satisfy   |got - ref| <= rtol * |ref| + atol * scale + floor
# (the combined form, with the absolute part measured against `scale`), where
#   ref    is the exact float64 result for the very inputs the op saw (already rounded to dtype),
#   scale  is the sum of the magnitudes of the terms the reference adds up to form that element
#          (|y| for y; |r*g*dy| + r^3*|x|*mean|g*dy*x| (+ |dresidual|) for dx; sum_rows |dy*x*r|
#          for dgamma; |x| + |residual| for residual_out),
#   floor  is half the spacing of the dtype's subnormals (rounding there is absolute).
# Why this form: the op computes in float32 and rounds once to the output dtype, so its error is
# the sum of two parts -- the final rounding, at most one unit roundoff relative to the value
# (rtol = u of the dtype, no slack), and float32 arithmetic error, which is proportional to the
# terms being combined rather than to their result (atol = 64 float32 epsilons, ~5x the worst seen:
# sequential sums over n = 16384 reach ~13 eps). A plain absolute atol would have to be set for the
# largest outputs here (dgamma over 1030 rows is ~30) and would then excuse any relative error in
# y; a pure relative bound cannot hold where the result cancels (dx at n = 1 is ~eps/|x|^3 from
# O(1) terms). With the scale, neither part can hide an error the other should catch.
TOLERANCES = {
    # dtype: (rtol, atol, floor)
    BF16: (2.0**-8, 64 * 2.0**-24, 2.0**-134),
    F16: (2.0**-11, 64 * 2.0**-24, 2.0**-25),
    F32: (2.0**-24, 64 * 2.0**-24, 2.0**-150),
}


def to64(a) -> np.ndarray:
    return np.asarray(a).astype(np.float64)


def assert_close(what: str, got, ref: np.ndarray, scale: np.ndarray, dtype) -> None:
    rtol, atol, floor = TOLERANCES[dtype]
    got = to64(got)
    assert got.shape == ref.shape, f"{what}: shape {got.shape}, expected {ref.shape}"
    err = np.abs(got - ref)
    bound = rtol * np.abs(ref) + atol * scale + floor
    bad = ~(err <= bound)  # NaN (a poisoned, unwritten element) is bad too
    if bad.any():
        idx = [tuple(int(i) for i in t) for t in np.argwhere(bad)[:5]]
        detail = ", ".join(f"{i}: got {got[i]!r} ref {ref[i]!r} bound {bound[i]:.3g}" for i in idx)
        raise AssertionError(f"{what} ({jnp.dtype(dtype).name}): {int(bad.sum())} of {bad.size} "
                             f"elements out of tolerance, e.g. {detail}")


# ---- float64 reference and its analytic gradient ----------------------------------------------

def ref_rms_norm(x, g, eps):
    """y = x * r * g with r = 1/sqrt(mean(x^2) + eps) per row. Returns (y, r)."""
    r = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    return x * r * g, r


def ref_rms_norm_bwd(dy, x, g, eps):
    """Returns ((dx, dx_scale), (dgamma, dgamma_scale)) of y = rms_norm(x, g) for cotangent dy.

    dy_i/dx_j = r g_i delta_ij - r^3 x_i g_i x_j / n, so
    dx = r*g*dy - r^3 * x * mean(g*dy*x);  dgamma = sum over rows of dy * x * r.
    """
    n = x.shape[-1]
    _, r = ref_rms_norm(x, g, eps)
    gdy = g * dy
    dx = r * gdy - r**3 * x * np.mean(gdy * x, axis=-1, keepdims=True)
    dx_scale = np.abs(r * gdy) + r**3 * np.abs(x) * np.mean(np.abs(gdy * x), axis=-1, keepdims=True)
    t = (dy * x * r).reshape(-1, n)
    return (dx, dx_scale), (t.sum(0), np.abs(t).sum(0))


def round_to(a64: np.ndarray, dtype) -> np.ndarray:
    return a64.astype(jnp.dtype(dtype)).astype(np.float64)


def test_reference_gradient_matches_finite_differences():
    rng = np.random.default_rng(7)
    x, dy = rng.standard_normal((2, 3, 5)), rng.standard_normal((2, 3, 5))
    g = rng.standard_normal(5)
    eps = 1e-2
    (dx, _), (dg, _) = ref_rms_norm_bwd(dy, x, g, eps)
    loss = lambda x, g: np.sum(ref_rms_norm(x, g, eps)[0] * dy)
    h = 1e-6
    for arg, grad in ((0, dx), (1, dg)):
        base = [x, g]
        num = np.zeros_like(grad)
        for i in np.ndindex(grad.shape):
            plus, minus = [a.copy() for a in base], [a.copy() for a in base]
            plus[arg][i] += h
            minus[arg][i] -= h
            num[i] = (loss(*plus) - loss(*minus)) / (2 * h)
        np.testing.assert_allclose(grad, num, rtol=1e-7, atol=1e-8)


# ---- forward + vjp against the reference ------------------------------------------------------

SHAPES = [
    (1, 1), (64, 1), (3, 7), (5, 64), (4, 3584), (3, 4095), (2, 4096),
    (2, 3, 64), (2, 3, 4095),  # leading batch dims
    (600, 7), (1030, 64),      # more rows than the 1024 dgamma slots: rows fold onto slots
    (4113, 256), (2100, 2048),  # several rows per slot (the GPU kernels prefetch the next one)
    (2, 8192), (1, 16384), (3, 16384),
]


def _data(rng, shape, dtype, count):
    return [jnp.asarray(rng.standard_normal(shape), dtype) for _ in range(count)]


def _gamma(rng, n, dtype):
    return jnp.asarray(rng.standard_normal(n) * 0.5 + 1.0, dtype)


@functools.cache
def rms_norm_fwd_bwd(eps):
    def body(x, g, dy):
        y, vjp = jax.vjp(lambda x, g: jax_aiter.rms_norm(x, g, eps), x, g)
        return (y, *vjp(dy))
    return body


@functools.cache
def rms_norm_with_add_fwd_bwd(eps):
    def body(x, res, g, dy, dres):
        (y, ro), vjp = jax.vjp(lambda x, res, g: jax_aiter.rms_norm_with_add(x, res, g, eps),
                               x, res, g)
        return (y, ro, *vjp((dy, dres)))
    return body


def _check_rms_norm(shape, dtype, eps, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(2):  # two data sets through one compiled function (poisoning, point 2)
        x, dy = _data(rng, shape, dtype, 2)
        g = _gamma(rng, shape[-1], dtype)
        y, dx, dg = run_poisoned(rms_norm_fwd_bwd(eps), x, g, dy)
        x64, g64, dy64 = to64(x), to64(g), to64(dy)
        y_ref, _ = ref_rms_norm(x64, g64, eps)
        (dx_ref, dx_scale), (dg_ref, dg_scale) = ref_rms_norm_bwd(dy64, x64, g64, eps)
        assert y.dtype == dtype and dx.dtype == dtype and dg.dtype == dtype
        assert_close("y", y, y_ref, np.abs(y_ref), dtype)
        assert_close("dx", dx, dx_ref, dx_scale, dtype)
        assert_close("dgamma", dg, dg_ref, dg_scale, dtype)


def _check_rms_norm_with_add(shape, dtype, eps, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(2):
        x, res, dy, dres = _data(rng, shape, dtype, 4)
        g = _gamma(rng, shape[-1], dtype)
        y, ro, dx, dr, dg = run_poisoned(rms_norm_with_add_fwd_bwd(eps), x, res, g, dy, dres)
        x64, r64, g64, dy64, dres64 = map(to64, (x, res, g, dy, dres))
        s = round_to(x64 + r64, dtype)  # residual_out is stored in x's dtype, and normalised
        y_ref, _ = ref_rms_norm(s, g64, eps)
        (ds_ref, ds_scale), (dg_ref, dg_scale) = ref_rms_norm_bwd(dy64, s, g64, eps)
        assert_close("residual_out", ro, x64 + r64, np.abs(x64) + np.abs(r64), dtype)
        assert_close("y", y, y_ref, np.abs(y_ref), dtype)
        assert_close("dx", dx, ds_ref + dres64, ds_scale + np.abs(dres64), dtype)
        assert_close("dresidual", dr, ds_ref + dres64, ds_scale + np.abs(dres64), dtype)
        assert_close("dgamma", dg, dg_ref, dg_scale, dtype)


def _id(v):
    return jnp.dtype(v).name if v in DTYPES else "x".join(map(str, v))


def _skip_cpu_prefetch_shape(shape, dtype):
    """The [2100, 2048] case exists for the GPU kernels' prefetch; the host twins have none, so on
    the CPU (CI's time) it runs in bf16 only."""
    if shape == (2100, 2048) and dtype != BF16 and jax.default_backend() == "cpu":
        pytest.skip("the GPU kernels' prefetch shape: bf16 only on the CPU")


@pytest.mark.parametrize("shape", SHAPES, ids=_id)
@pytest.mark.parametrize("dtype", DTYPES, ids=_id)
def test_rms_norm_matches_reference(shape, dtype):
    _skip_cpu_prefetch_shape(shape, dtype)
    _check_rms_norm(shape, dtype, EPS)


@pytest.mark.parametrize("shape", SHAPES, ids=_id)
@pytest.mark.parametrize("dtype", DTYPES, ids=_id)
def test_rms_norm_with_add_matches_reference(shape, dtype):
    _skip_cpu_prefetch_shape(shape, dtype)
    _check_rms_norm_with_add(shape, dtype, EPS)


# Long rows: a float32 running sum's error grows with the row (the host twins once summed that way:
# 8e-6 relative at n = 65536, 2e-4 at 2^20, far outside the f32 tolerance); the statistics must
# stay within float32 rounding however long the row is.
@pytest.mark.parametrize("n", [65536, 2**20], ids=lambda n: f"n{n}")
def test_long_rows_keep_float32_accuracy(n):
    _check_rms_norm((2, n), F32, EPS, seed=n)


# Empty inputs behave as jnp does: empty results, and gradients of the inputs' shapes (zeros).
@pytest.mark.parametrize("shape", [(0, 8), (4, 0), (2, 0, 16)], ids=_id)
def test_empty_inputs_like_jnp(shape):
    x = jnp.ones(shape, F32)
    g = jnp.ones(shape[-1:], F32)

    def ref(x, g):
        r = jax.lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + EPS)
        return x * r * g

    for fn in (lambda x, g: jax_aiter.rms_norm(x, g, EPS),
               lambda x, g: jax_aiter.rms_norm_with_add(x, x, g, EPS)[0]):
        y = fn(x, g)
        assert y.shape == shape
        dx, dg = jax.grad(lambda x, g: fn(x, g).sum(), argnums=(0, 1))(x, g)
        rdx, rdg = jax.grad(lambda x, g: ref(x, g).sum(), argnums=(0, 1))(x, g)
        assert dx.shape == rdx.shape == shape and dg.shape == rdg.shape == shape[-1:]
        np.testing.assert_array_equal(np.asarray(dg), np.asarray(rdg))


@pytest.mark.parametrize("eps", [0.0, 0.1, 3.0])
def test_epsilon_reaches_the_kernel(eps):
    # A large epsilon changes y visibly: an attribute dropped or mis-typed on the way fails here.
    _check_rms_norm((5, 64), F32, eps, seed=1)
    _check_rms_norm_with_add((3, 7), BF16, eps, seed=2)


# ---- errors: C++ validates, the message names the operand, Python passes it on unchanged ---------

def _ones(shape, dtype=BF16):
    return jnp.ones(shape, dtype)


@pytest.mark.parametrize("call, message", [
    (lambda: jax_aiter.rms_norm(_ones((4, 64)), _ones((63,))),
     r"aiter\.rms_norm: operand gamma: expected bf16\[64\].*got bf16\[63\]"),
    (lambda: jax_aiter.rms_norm(_ones((4, 64)), _ones((64,), F32)),
     r"aiter\.rms_norm: operand gamma: .*got f32\[64\]"),
    (lambda: jax_aiter.rms_norm(_ones((4, 64), jnp.int32), _ones((64,), jnp.int32)),
     r"aiter\.rms_norm: operand x: expected dtype bf16, f16 or f32"),
    (lambda: jax_aiter.rms_norm(_ones((4, 64)), _ones((64,)), epsilon=-1.0),
     r"aiter\.rms_norm: attribute epsilon"),
    (lambda: jax_aiter.rms_norm_with_add(_ones((4, 64)), _ones((4, 63)), _ones((64,)))[0],
     r"aiter\.rms_norm_with_add: operand residual: .*got bf16\[4,63\]"),
    (lambda: jax_aiter.rms_norm_with_add(_ones((4, 64)), _ones((4, 64)), _ones((64,), F16))[0],
     r"aiter\.rms_norm_with_add: operand gamma: .*got f16\[64\]"),
    (lambda: jax.grad(lambda g: jnp.sum(jax_aiter.rms_norm(_ones((4, 64)), g)))(_ones((65,))),
     r"aiter\.rms_norm(_bwd)?: operand gamma"),  # which error surfaces first varies
])
def test_errors_name_the_operand(call, message):
    with pytest.raises(Exception, match=message):
        jax.block_until_ready(call())


def test_python_side_errors():
    with pytest.raises(ValueError, match=r"aiter\.rms_norm: operand x: expected rank >= 1"):
        jax_aiter.rms_norm(jnp.float32(1.0), _ones((1,), F32))
    with pytest.raises(TypeError, match=r"aiter\.rms_norm: attribute epsilon: expected a static"):
        jax.jit(jax_aiter.rms_norm)(_ones((2, 8)), _ones((8,)), 0.5)


def test_missing_platform_library_is_a_clear_call_time_error():
    jax_aiter.register()
    jax_aiter.register()  # idempotent
    assert "cpu" in jax_aiter.registered_platforms()
    missing = [p for p in ("rocm", "cuda") if p.upper() not in jax_aiter.registered_platforms()]
    if not missing:
        pytest.skip("every handler library is present")
    with pytest.raises(_ffi.JaxAiterUnavailableError, match=r"_jax_aiter_\w+\.so"):
        _ffi._check_platform(missing[0])


# ---- jit: traced once, then reused -------------------------------------------------------------

def test_jit_does_not_retrace():
    traces = []

    @jax.jit
    def step(x, res, g):
        traces.append(1)
        y, ro = jax_aiter.rms_norm_with_add(x, res, g)
        loss = lambda x, g: jnp.sum(jax_aiter.rms_norm(x, g).astype(F32) ** 2)
        return y, ro, jax.grad(loss, (0, 1))(x, g)

    rng = np.random.default_rng(3)
    for _ in range(4):
        x, res = _data(rng, (4, 96), BF16, 2)
        jax.block_until_ready(step(x, res, _gamma(rng, 96, BF16)))
    assert len(traces) == 1
    assert step._cache_size() == 1


# ---- vmap -------------------------------------------------------------------------------------

def _bits(a) -> np.ndarray:
    a = np.asarray(a)
    return a.view(np.uint16 if a.dtype.itemsize == 2 else np.uint32)


def assert_bitwise_equal(a, b):
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_array_equal(_bits(a), _bits(b))


@pytest.mark.parametrize("dtype", [BF16, F32], ids=_id)
def test_vmap_gamma_unbatched_is_rows(dtype):
    rng = np.random.default_rng(4)
    x, res = _data(rng, (3, 5, 96), dtype, 2)
    g = _gamma(rng, 96, dtype)
    # Batch axis in front or in the middle: per-row results are those of the unbatched call.
    assert_bitwise_equal(jax.vmap(jax_aiter.rms_norm, in_axes=(0, None))(x, g),
                         jax_aiter.rms_norm(x, g))
    xt = jnp.swapaxes(x, 0, 1)
    assert_bitwise_equal(jax.vmap(jax_aiter.rms_norm, in_axes=(1, None), out_axes=1)(xt, g),
                         jax_aiter.rms_norm(xt, g))
    # One custom call on all rows, no loop.
    jaxpr = str(jax.make_jaxpr(jax.vmap(jax_aiter.rms_norm, in_axes=(0, None)))(x, g))
    assert jaxpr.count("ffi_call") == 1 and "scan" not in jaxpr and "while" not in jaxpr
    # Fused op, residual unbatched (broadcast), x batched.
    y, ro = jax.vmap(jax_aiter.rms_norm_with_add, in_axes=(0, None, None))(x, res[0], g)
    y_ref, ro_ref = jax_aiter.rms_norm_with_add(x, jnp.broadcast_to(res[0], x.shape), g)
    assert_bitwise_equal(y, y_ref)
    assert_bitwise_equal(ro, ro_ref)
    # Nested vmap.
    assert_bitwise_equal(jax.vmap(jax.vmap(jax_aiter.rms_norm, in_axes=(0, None)),
                                  in_axes=(0, None))(x, g),
                         jax_aiter.rms_norm(x, g))


def test_vmap_gamma_batched_is_per_element():
    rng = np.random.default_rng(5)
    x, res = _data(rng, (3, 4, 64), BF16, 2)
    gs = jnp.stack([_gamma(rng, 64, BF16) for _ in range(3)])
    y = jax.vmap(jax_aiter.rms_norm)(x, gs)
    for b in range(3):
        assert_bitwise_equal(y[b], jax_aiter.rms_norm(x[b], gs[b]))
    y = jax.vmap(jax_aiter.rms_norm, in_axes=(None, 0))(x[0], gs)
    for b in range(3):
        assert_bitwise_equal(y[b], jax_aiter.rms_norm(x[0], gs[b]))
    y, ro = jax.vmap(jax_aiter.rms_norm_with_add, in_axes=(0, None, 0))(x, res[0], gs)
    for b in range(3):
        yb, rob = jax_aiter.rms_norm_with_add(x[b], res[0], gs[b])
        assert_bitwise_equal(y[b], yb)
        assert_bitwise_equal(ro[b], rob)


def test_vmap_of_grad_gives_per_example_gradients():
    rng = np.random.default_rng(6)
    x, w = _data(rng, (3, 4, 64), F32, 2)
    g = _gamma(rng, 64, F32)
    loss = lambda x, g, w: jnp.sum(jax_aiter.rms_norm(x, g) * w)
    dx, dg = jax.jit(jax.vmap(jax.grad(loss, (0, 1)), in_axes=(0, None, 0)))(x, g, w)
    assert dg.shape == (3, 64)
    for b in range(3):
        dxb, dgb = jax.grad(loss, (0, 1))(x[b], g, w[b])
        assert_bitwise_equal(dx[b], dxb)
        assert_bitwise_equal(dg[b], dgb)
    # Fused op, gradients of all three inputs.
    loss2 = lambda x, r, g, w: sum(jnp.sum(o * w) for o in jax_aiter.rms_norm_with_add(x, r, g))
    grads = jax.vmap(jax.grad(loss2, (0, 1, 2)), in_axes=(0, 0, None, 0))(x, w, g, w)
    for b in range(3):
        for got, want in zip(grads, jax.grad(loss2, (0, 1, 2))(x[b], w[b], g, w[b])):
            assert_bitwise_equal(got[b], want)


def test_grad_of_vmap_sums_over_the_batch():
    rng = np.random.default_rng(8)
    x, w = _data(rng, (3, 4, 64), F32, 2)
    g = _gamma(rng, 64, F32)
    batched = lambda x, g: jnp.sum(jax.vmap(jax_aiter.rms_norm, in_axes=(0, None))(x, g) * w)
    flat = lambda x, g: jnp.sum(jax_aiter.rms_norm(x, g) * w)
    (dx, dg), (dx2, dg2) = jax.grad(batched, (0, 1))(x, g), jax.grad(flat, (0, 1))(x, g)
    assert_bitwise_equal(dx, dx2)  # per row: identical
    # dgamma: a sum of per-example sums vs one sum over all rows -- same value, other order.
    np.testing.assert_allclose(dg, dg2, rtol=1e-6, atol=1e-6)


# ---- shard_map: rows sharded, gamma replicated --------------------------------------------------

def _mesh() -> Mesh:
    devices = jax.devices()
    if len(devices) < 2:  # e.g. one GPU: use the host devices conftest.py asked XLA for
        devices = jax.devices("cpu")
    devices = devices[: min(4, len(devices))]
    assert len(devices) >= 2, "conftest.py should have made several CPU devices"
    return Mesh(np.array(devices), ("i",))


@pytest.mark.parametrize("check_vma", [True, False])
def test_shard_map_rows_sharded_gamma_replicated(check_vma):
    mesh = _mesh()
    rng = np.random.default_rng(9)
    x, res, w = _data(rng, (mesh.devices.size * 3, 2, 128), F32, 3)
    g = _gamma(rng, 128, F32)
    # The sharded run and the unsharded reference run on the mesh's platform.
    rows = NamedSharding(mesh, P("i"))
    xs, rs, ws = (jax.device_put(a, rows) for a in (x, res, w))
    gs = jax.device_put(g, NamedSharding(mesh, P()))
    x, res, w, g = jax.device_put((x, res, w, g), mesh.devices.flat[0])

    def smap(f, in_specs, out_specs):
        return jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                             check_vma=check_vma)

    norm = smap(jax_aiter.rms_norm, (P("i"), P()), P("i"))
    fused = smap(jax_aiter.rms_norm_with_add, (P("i"), P("i"), P()), (P("i"), P("i")))
    loss = lambda x, g, w, f: jnp.sum(f(x, g) * w)
    loss2 = lambda x, r, g, w, f: sum(jnp.sum(o * w) for o in f(x, r, g))

    # Gradient taken inside the shard_map: with check_vma JAX psums the replicated gamma's dgamma
    # over shards by itself (our backward must type it right for that); without, the user does,
    # exactly as for a jnp implementation.
    def inner(x, g, w):
        dx, dg = jax.grad(loss, (0, 1))(x, g, w, jax_aiter.rms_norm)
        return dx, dg if check_vma else jax.lax.psum(dg, "i")

    y = jax.jit(norm)(xs, gs)
    y2, ro = jax.jit(fused)(xs, rs, gs)
    grads = jax.jit(jax.grad(functools.partial(loss, f=norm), (0, 1)))(xs, gs, ws)
    fgrads = jax.jit(jax.grad(functools.partial(loss2, f=fused), (0, 1, 2)))(xs, rs, gs, ws)
    sgrads = jax.jit(smap(inner, (P("i"), P(), P("i")), (P("i"), P())))(xs, gs, ws)

    host = lambda a: np.asarray(jax.device_get(a))
    assert_bitwise_equal(host(y), host(jax_aiter.rms_norm(x, g)))
    y_ref, ro_ref = jax_aiter.rms_norm_with_add(x, res, g)
    assert_bitwise_equal(host(y2), host(y_ref))
    assert_bitwise_equal(host(ro), host(ro_ref))
    dx_ref, dg_ref = jax.grad(loss, (0, 1))(x, g, w, jax_aiter.rms_norm)
    for dx, dg in (grads, sgrads):
        assert_bitwise_equal(host(dx), host(dx_ref))  # per row: identical
        # dgamma: per-shard partials summed across shards vs one reduction: same up to order.
        np.testing.assert_allclose(host(dg), host(dg_ref), rtol=1e-5, atol=1e-5)
    f_ref = jax.grad(loss2, (0, 1, 2))(x, res, g, w, jax_aiter.rms_norm_with_add)
    assert_bitwise_equal(host(fgrads[0]), host(f_ref[0]))
    assert_bitwise_equal(host(fgrads[1]), host(f_ref[1]))
    np.testing.assert_allclose(host(fgrads[2]), host(f_ref[2]), rtol=1e-5, atol=1e-5)


# ---- determinism --------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [BF16, F32], ids=_id)
def test_backward_is_bit_identical_run_to_run(dtype):
    rng = np.random.default_rng(10)
    x, dy, res, dres = _data(rng, (1030, 1024), dtype, 4)
    g = _gamma(rng, 1024, dtype)
    f, fa = rms_norm_fwd_bwd(EPS), rms_norm_with_add_fwd_bwd(EPS)
    first, first_a = run_poisoned(f, x, g, dy), run_poisoned(fa, x, res, g, dy, dres)
    for _ in range(2):
        for a, b in itertools.chain(zip(run_poisoned(f, x, g, dy), first),
                                    zip(run_poisoned(fa, x, res, g, dy, dres), first_a)):
            assert_bitwise_equal(a, b)


# ---- command buffers (GPU): the handlers claim compatibility, so XLA must capture them ---------
#
# XLA (jax 0.11) builds command buffers from the thunk sequence after HLO optimisation, so the HLO
# cannot show them; its conversion pass logs each command buffer it creates with the thunks inside
# (named like their HLO instructions). A child process compiles a program of our four custom
# calls with command buffers on and that log enabled, reports which instruction calls which target,
# runs the program, and compares its results with jnp's autodiff of the same math. Older XLA made
# command buffers an HLO pass (computations named "command_buffer"): that evidence counts too.

_CHILD = r"""
import json, re, sys
import jax, jax.numpy as jnp, numpy as np
import jax_aiter
EPS = 1e-6
def norm(v, g):
    v32 = v.astype(jnp.float32)
    r = jax.lax.rsqrt(jnp.mean(v32 * v32, -1, keepdims=True) + EPS)
    return (v32 * r * g.astype(jnp.float32)).astype(v.dtype)
def add_norm(x, r, g):
    s = (x.astype(jnp.float32) + r.astype(jnp.float32)).astype(x.dtype)
    return norm(s, g), s
def mm(a, w):
    return jnp.dot(a, w.T, preferred_element_type=jnp.float32).astype(a.dtype)
def program(add_norm, norm, mm, mm_split):
    def step(x, res, g, dy, w):
        (y, ro), vjp = jax.vjp(add_norm, x, res, g)
        z, vjp2 = jax.vjp(norm, y, g)
        dz_y, dz_g = vjp2(dy)
        # A GEMM of each tier's kind: the ASM tier's plan (through its ABI twin here) splits K
        # with a memset of its semaphore, which must be captured too.
        return (z, *vjp((dz_y, ro)), dz_g, mm(z, w), mm_split(z, w))
    return jax.jit(step)
split = jax_aiter.Dispatch("asm", "gfx942", 304)
ours = program(lambda x, r, g: jax_aiter.rms_norm_with_add(x, r, g, EPS),
               lambda y, g: jax_aiter.rms_norm(y, g, EPS), jax_aiter.gemm,
               lambda a, w: jax_aiter.gemm(a, w, out_dtype=jnp.float32, dispatch=split)
               .astype(a.dtype))
rng = np.random.default_rng(11)
x, res, dy = (jnp.asarray(rng.standard_normal((64, 1024)), jnp.bfloat16) for _ in range(3))
g = jnp.asarray(rng.standard_normal(1024) * 0.5 + 1.0, jnp.bfloat16)
w = jnp.asarray(rng.standard_normal((256, 1024)) * 0.05, jnp.bfloat16)
hlo = ours.lower(x, res, g, dy, w).compile().as_text()
calls = dict(re.findall(r'%([\w.\-]+) = .*custom_call_target="(aiter\.[\w.]+)"', hlo))
in_hlo_buffers = []
for computation in re.split(r"\n(?=\S)", hlo):
    if "command_buffer" in computation.split("\n", 1)[0]:
        in_hlo_buffers += re.findall(r'custom_call_target="(aiter\.[\w.]+)"', computation)
errors = {}
for name, a, b in zip(("z", "dx", "dres", "dgamma", "dgamma2", "gemm", "gemm_split"),
                      ours(x, res, g, dy, w), program(add_norm, norm, mm, mm)(x, res, g, dy, w)):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    errors[name] = float(np.linalg.norm(a - b) / np.linalg.norm(b))
print("RESULT " + json.dumps({"calls": calls, "in_hlo_buffers": in_hlo_buffers, "errors": errors}))
"""


@pytest.mark.skipif(jax.default_backend() == "cpu", reason="command buffers are a GPU feature")
def test_gpu_handlers_run_inside_command_buffers():
    env = dict(os.environ,
               XLA_FLAGS="--xla_gpu_enable_command_buffer=FUSION,CUSTOM_CALL "
                         "--xla_gpu_graph_min_graph_size=1",
               TF_CPP_MIN_LOG_LEVEL="0", TF_CPP_VMODULE="command_buffer_conversion_pass=2")
    proc = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(proc.stdout.split("RESULT ", 1)[1])
    calls = result["calls"]  # HLO instruction -> aiter.* target
    assert sorted(set(calls.values())) == ["aiter.gemm", "aiter.rms_norm", "aiter.rms_norm_bwd",
                                           "aiter.rms_norm_with_add", "aiter.rms_norm_with_add_bwd"]
    captured = set()
    for line in proc.stderr.splitlines():
        m = re.search(r"Creating command buffer thunk with the following thunks: (.*)", line)
        if m:
            captured |= {t.strip() for t in m.group(1).split(",")}
    captured_targets = {calls[i] for i in calls if i in captured} | set(result["in_hlo_buffers"])
    print(f"custom calls {calls}; captured in command buffers: {sorted(captured_targets)}")
    assert captured_targets == set(calls.values()), (
        f"not captured: {sorted(set(calls.values()) - captured_targets)}; conversion log: "
        + " | ".join(l for l in proc.stderr.splitlines() if "command buffer" in l.lower())[-3000:])
    # What ran captured is right: against jnp's autodiff of the same math (bf16 end to end).
    for name, rel in result["errors"].items():
        assert rel < 2e-2, f"{name}: relative error {rel:.3g} against jnp"
