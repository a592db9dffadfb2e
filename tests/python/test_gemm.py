"""jax_aiter.gemm through JAX: values and gradients against float64 NumPy, each tier forced (the
ASM tier's plans run through the ABI twins of AITER's kernels off AMD hardware), transformations
(jit, vmap, grad, shard_map), empty products, errors, and the plan tool.

Runs on whatever platform JAX has (CPU in CI: the Host backend's C++ twins; CUDA on the H100: our
sm_90 kernels and twin cubins).
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, PartitionSpec as P

import jax_aiter
from jax_aiter import Dispatch
from jax_aiter.gemm import describe as describe_gemm
from poison import run_poisoned

BF16, F16, F32 = jnp.bfloat16, jnp.float16, jnp.float32
# Unit roundoff of each output dtype.
U = {BF16: 2.0**-8, F16: 2.0**-11, F32: 2.0**-24}

ASM_942 = Dispatch("asm", "gfx942", 304)
ASM_950 = Dispatch("asm", "gfx950", 256)
PORTABLE = Dispatch("portable")


def to64(a) -> np.ndarray:
    return np.asarray(a).astype(np.float64)


def assert_gemm_close(what, got, a, b, bias, out_dtype, rounding_steps=1):
    """Element-wise |got - ref| <= u_out |ref| + (16 u_f32 sqrt(K) + (steps - 1) u_out) scale,
    with ref the float64 product of the very inputs the op saw and scale = sum_k |a b| (+ |bias|):
    one rounding to the output dtype (or `steps` of them where a split's running sum is kept in
    out's dtype) and float32 accumulation error, which grows with the terms added. NaN fails."""
    a64, b64 = to64(a).reshape(-1, a.shape[-1]), to64(b)
    ref = a64 @ b64.T
    scale = np.abs(a64) @ np.abs(b64).T
    if bias is not None:
        ref = ref + to64(bias)
        scale = scale + np.abs(to64(bias))
    k = a.shape[-1]
    u = U[out_dtype]
    bound = u * np.abs(ref) + (16 * 2.0**-24 * np.sqrt(k) + (rounding_steps - 1) * u) * scale
    got = to64(got).reshape(ref.shape)
    bad = ~(np.abs(got - ref) <= bound + 2.0**-120)
    if bad.any():
        i = tuple(int(v) for v in np.argwhere(bad)[0])
        raise AssertionError(f"{what}: {int(bad.sum())} of {bad.size} outputs out of tolerance, "
                             f"e.g. {i}: got {got[i]!r} ref {ref[i]!r} bound {bound[i]:.3g}")


def _inputs(rng, m, n, k, dtype, bias, lead=()):
    a = jnp.asarray(rng.uniform(-1, 1, (*lead, m, k)), dtype)
    b = jnp.asarray(rng.uniform(-1, 1, (n, k)), dtype)
    c = jnp.asarray(rng.uniform(-1, 1, (n,)), dtype) if bias else None
    return a, b, c


@functools.cache
def _forward(out_dtype, dispatch, kernel=None, splitk=None):
    def body(a, b, bias):
        return jax_aiter.gemm(a, b, bias, out_dtype=out_dtype, kernel=kernel, splitk=splitk,
                              dispatch=dispatch)
    return body


def _split_of(a, b, bias, out_dtype, dispatch, kernel=None, splitk=None):
    """The split the ASM tier's plan chose (jax-aiter-plan), for the tolerance."""
    if dispatch.tier != "asm":
        return 1
    m = int(np.prod(a.shape[:-1]))
    operands, attrs = describe_gemm(m, b.shape[0], a.shape[-1], a.dtype, out_dtype,
                                    bias is not None, kernel, splitk)
    plan = jax_aiter.plan("aiter.gemm", operands, {**attrs, **dispatch.attributes()}, "host")
    assert plan["chosen"]["tier"] == "asm", plan["tiers"]
    return plan["chosen"]["plan"]["notes"]["split"]


# M = 1, 7, 4096 (and odd), N = 64..16384, K = 64..8192 (and odd), within what the CPU twins
# compute in a few seconds.
VALUE_CASES = [
    # (m, n, k, in dtype, out dtype, bias)
    (1, 16384, 4096, BF16, BF16, True),
    (1, 64, 8192, BF16, F32, False),
    (7, 4096, 1024, BF16, BF16, False),
    (7, 1000, 72, F16, F16, True),
    (4096, 128, 256, BF16, F32, True),
    (4096, 64, 64, F16, F32, False),
    (33, 300, 1000, BF16, F16, True),
    (130, 4096, 64, BF16, BF16, True),
]


@pytest.mark.parametrize("m,n,k,dtype,out_dtype,bias", VALUE_CASES)
@pytest.mark.parametrize("dispatch", [Dispatch(), PORTABLE], ids=["auto", "portable"])
def test_values(m, n, k, dtype, out_dtype, bias, dispatch):
    rng = np.random.default_rng(m * 131 + n + k)
    for _ in range(2):  # two data sets through one compiled function (see poison.py)
        a, b, c = _inputs(rng, m, n, k, dtype, bias)
        (out,) = run_poisoned(lambda a, b, c: (_forward(out_dtype, dispatch)(a, b, c),), a, b, c)
        assert out.dtype == out_dtype and out.shape == (m, n)
        assert_gemm_close(f"{m}x{n}x{k}", out, a, b, c, out_dtype)


# The ASM tier forced, planned for gfx942 and gfx950: on CPU and CUDA the plan runs through the ABI
# twins of AITER's kernels (same packed bytes, grid, split and semaphore memset).
ASM_CASES = [
    (1, 4096, 4096, BF16, False),   # 32x64_splitk_clean, split 4
    (100, 768, 2048, BF16, True),   # split on both archs
    (300, 1280, 512, F32, True),
    (1024, 512, 256, BF16, False),  # gfx950: 256x256 without bias
    (7, 64, 64, F32, False),
]


@pytest.mark.parametrize("m,n,k,out_dtype,bias", ASM_CASES)
@pytest.mark.parametrize("dispatch", [ASM_942, ASM_950], ids=["gfx942", "gfx950"])
def test_asm_tier_through_its_twins(m, n, k, out_dtype, bias, dispatch):
    rng = np.random.default_rng(m + n + k)
    a, b, c = _inputs(rng, m, n, k, BF16, bias)
    (out,) = run_poisoned(lambda a, b, c: (_forward(out_dtype, dispatch)(a, b, c),), a, b, c)
    split = _split_of(a, b, c, out_dtype, dispatch)
    assert_gemm_close(f"{dispatch.asm_arch} {m}x{n}x{k}", out, a, b, c, out_dtype,
                      rounding_steps=split if out_dtype == BF16 else 1)


@pytest.mark.parametrize("kernel,splitk", [
    ("bf16gemm_fp32bf16_tn_48x64_pf3_splitk", None),
    ("bf16gemm_fp32bf16_tn_80x64_splitk_clean", 3),
    ("_ZN5aiter39bf16gemm_fp32bf16_tn_96x64_splitk_cleanE", 16),
])
def test_asm_kernel_forced_by_name(kernel, splitk):
    rng = np.random.default_rng(5)
    a, b, c = _inputs(rng, 97, 192, 1024, BF16, True)
    out = jax.jit(_forward(BF16, ASM_942, kernel, splitk))(a, b, c)
    split = _split_of(a, b, c, BF16, ASM_942, kernel, splitk)
    assert split == (splitk or 1)
    assert_gemm_close(kernel, out, a, b, c, BF16, rounding_steps=split)


def test_leading_dims_fold_into_m():
    rng = np.random.default_rng(3)
    a, b, c = _inputs(rng, 5, 64, 128, BF16, True, lead=(2, 3))
    out = jax_aiter.gemm(a, b, c)
    assert out.shape == (2, 3, 5, 64)
    assert_gemm_close("leading dims", out, a, b, c, BF16)


# ---- gradients ------------------------------------------------------------------------------

@pytest.mark.parametrize("m,n,k,dtype,out_dtype", [
    (7, 64, 128, BF16, BF16), (33, 100, 72, F16, F32), (1, 256, 64, BF16, F32)])
def test_gradients(m, n, k, dtype, out_dtype):
    rng = np.random.default_rng(11)
    a, b, c = _inputs(rng, m, n, k, dtype, True, lead=(2,))
    dout = jnp.asarray(rng.uniform(-1, 1, (2, m, n)), out_dtype)

    def body(a, b, c, dout):
        out, vjp = jax.vjp(lambda a, b, c: jax_aiter.gemm(a, b, c, out_dtype=out_dtype), a, b, c)
        return (out, *vjp(dout))

    out, da, db, dc = run_poisoned(body, a, b, c, dout)
    d64, a64, b64 = to64(dout).reshape(-1, n), to64(a).reshape(-1, k), to64(b)
    u_in = U[dtype]
    # The backward is XLA's dot_general: with an f32 cotangent, XLA's default precision on a GPU
    # rounds the operands to TF32 (10-bit mantissas); on the CPU it multiplies in f32.
    u_dot = 2.0**-10 if jax.default_backend() == "gpu" else 16 * 2.0**-24 * np.sqrt(2 * m)
    for what, got, ref, scale in (
            ("da", da, d64 @ b64, np.abs(d64) @ np.abs(b64)),
            ("db", db, d64.T @ a64, np.abs(d64).T @ np.abs(a64)),
            ("dbias", dc, d64.sum(0), np.abs(d64).sum(0))):
        got = to64(got).reshape(ref.shape)
        bound = u_in * np.abs(ref) + u_dot * scale + u_in * 2.0**-10
        assert got.dtype == np.float64 and not np.isnan(got).any(), what
        assert (np.abs(got - ref) <= bound).all(), (what, np.abs(got - ref).max())
    assert da.dtype == dtype and db.dtype == dtype and dc.dtype == dtype


# ---- transformations -----------------------------------------------------------------------

def test_jit_does_not_retrace():
    traces = []

    @jax.jit
    def f(a, b):
        traces.append(1)
        return jax_aiter.gemm(a, b)

    rng = np.random.default_rng(0)
    a, b, _ = _inputs(rng, 8, 64, 64, BF16, False)
    for _ in range(3):
        f(a, b).block_until_ready()
    assert len(traces) == 1


def test_vmap():
    rng = np.random.default_rng(1)
    a, b, c = _inputs(rng, 6, 64, 128, BF16, True, lead=(3,))
    # Only a batched: the batch folds into M, one call.
    out = jax.vmap(lambda x: jax_aiter.gemm(x, b, c))(a)
    assert_gemm_close("vmap a", out, a, b, c, BF16)
    # b batched too: one call per element.
    bs = jnp.stack([b, b * 2, -b])
    out = jax.vmap(jax_aiter.gemm)(a, bs)
    for i in range(3):
        assert_gemm_close(f"vmap b[{i}]", out[i], a[i], bs[i], None, BF16)
    # grad of vmap and vmap of grad.
    g = jax.grad(lambda a: jax.vmap(lambda x: jax_aiter.gemm(x, b, out_dtype=F32))(a).sum())(a)
    ref = np.broadcast_to(to64(b).sum(0), a.shape)
    np.testing.assert_allclose(to64(g), ref, rtol=2**-7, atol=1e-2)
    per = jax.vmap(jax.grad(lambda x: jax_aiter.gemm(x, b, out_dtype=F32).sum()))(a)
    np.testing.assert_allclose(to64(per), ref, rtol=2**-7, atol=1e-2)


def test_shard_map_rows_sharded_weight_replicated():
    devices = jax.devices()
    if len(devices) < 2:
        pytest.skip("needs several devices (CPU: conftest forces 4)")
    mesh = Mesh(np.array(devices[:2]), ("rows",))
    rng = np.random.default_rng(2)
    a, b, c = _inputs(rng, 64, 128, 256, BF16, True)

    def loss(a, b, c):
        out = jax_aiter.gemm(a, b, c, out_dtype=F32)
        return jax.lax.psum((out * out).sum(), "rows")

    sharded = jax.shard_map(jax.value_and_grad(loss, argnums=(0, 1, 2)), mesh=mesh,
                            in_specs=(P("rows"), P(), P()), out_specs=(P(), (P("rows"), P(), P())))
    value, grads = jax.jit(sharded)(a, b, c)
    single = jax.value_and_grad(lambda a, b, c: (jax_aiter.gemm(a, b, c, out_dtype=F32) ** 2).sum(),
                                argnums=(0, 1, 2))
    value1, grads1 = jax.jit(single)(a, b, c)
    np.testing.assert_allclose(to64(value), to64(value1), rtol=1e-5)
    for g, g1 in zip(grads, grads1):
        np.testing.assert_allclose(to64(g), to64(g1), rtol=2**-7, atol=2**-7 * np.abs(to64(g1)).max())


# ---- empty products, as jnp.dot gives them --------------------------------------------------

def test_empty_products():
    b = jnp.ones((64, 32), BF16)
    assert jax_aiter.gemm(jnp.ones((0, 32), BF16), b).shape == (0, 64)
    bias = jnp.arange(64, dtype=BF16)
    k0 = jax_aiter.gemm(jnp.ones((3, 0), BF16), jnp.ones((64, 0), BF16), bias)
    np.testing.assert_array_equal(to64(k0), np.broadcast_to(to64(bias), (3, 64)))
    g = jax.grad(lambda a: jax_aiter.gemm(a, b).astype(F32).sum())(jnp.ones((0, 32), BF16))
    assert g.shape == (0, 32)


# ---- errors ---------------------------------------------------------------------------------

@pytest.mark.parametrize("make,message", [
    (lambda: jax_aiter.gemm(jnp.ones((4, 64), BF16), jnp.ones((32, 63), BF16)),
     "aiter.gemm: operand b: expected bf16[N,64] (K and dtype from a), got bf16[32,63]"),
    (lambda: jax_aiter.gemm(jnp.ones((4, 64), F32), jnp.ones((32, 64), F32)),
     "aiter.gemm: operand a: expected dtype bf16 or f16, got f32"),
    (lambda: jax_aiter.gemm(jnp.ones((4, 64), BF16), jnp.ones((32, 64), F16)),
     "aiter.gemm: operand b: expected bf16[N,64]"),
    (lambda: jax_aiter.gemm(jnp.ones((4, 64), BF16), jnp.ones((32, 64), BF16), jnp.ones(31, BF16)),
     "aiter.gemm: operand bias: expected bf16[32]"),
    (lambda: jax_aiter.gemm(jnp.ones((4, 64), BF16), jnp.ones((32, 64), BF16), out_dtype=jnp.int32),
     "aiter.gemm: operand out: expected bf16, f16 or f32[4,32]"),
    (lambda: jax_aiter.gemm(jnp.ones((4, 64), F16), jnp.ones((32, 64), F16), dispatch=ASM_942),
     "AITER's bf16gemm kernels take bf16 inputs"),
    (lambda: jax_aiter.gemm(jnp.ones((4, 64), BF16), jnp.ones((32, 64), BF16),
                            dispatch=Dispatch("asm")),
     "plan them for one with asm_arch"),
])
def test_errors_name_the_operand(make, message):
    with pytest.raises(Exception, match=None) as e:
        jax.block_until_ready(make())
    assert message in str(e.value), str(e.value)


def test_python_side_errors():
    with pytest.raises(ValueError, match="rank 2"):
        jax_aiter.gemm(jnp.ones((4, 64), BF16), jnp.ones((64,), BF16))


# ---- the plan tool ----------------------------------------------------------------------------

def test_plan_tool_command_line():
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    out = subprocess.run([sys.executable, "-m", "jax_aiter.tools", "plan", "gemm", "--m", "1",
                          "--n", "4096", "--k", "4096", "--arch", "gfx950"],
                         capture_output=True, text=True, env=env, check=True).stdout
    plan = json.loads(out)
    assert plan["tiers"][0] == {"tier": "asm", "family": "bf16gemm", "verdict": "taken"}
    launch = plan["chosen"]["plan"]["steps"][1]["launch"]
    assert launch["symbol"] == "_ZN5aiter39bf16gemm_fp32bf16_tn_32x64_splitk_cleanE"
    assert launch["grid"] == [64, 1, 4]
    args = {f["name"]: f["value"] for f in launch["args"]}
    assert args["strideA0"] == 8192 and args["ptr_semaphore"] == "workspace.semaphore"
    bad = subprocess.run([sys.executable, "-m", "jax_aiter.tools", "plan", "gemm", "--m", "1",
                          "--n", "4096", "--k", "4096", "--arch", "gfx1100"],
                         capture_output=True, text=True, env=env)
    assert bad.returncode == 2 and "unknown arch 'gfx1100'" in bad.stderr
