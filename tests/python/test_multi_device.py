"""Two devices (issue 17): our ops inside one program over a 2-device mesh, and two host threads
driving two devices at once.

On CPU (CI) the devices are XLA's forced host devices (conftest.py); on a machine with two GPUs
they are the GPUs, where the handlers' per-device caches are what is under test: each device must
resolve and load its own kernels, once, however many calls and threads there are (a cache that
ignored the device ordinal hands device 1 a function of device 0's context, which these tests
catch: the launch fails or the counts differ).
"""

from __future__ import annotations

import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

import jax_aiter
from jax_aiter import _ffi

DEVICES = jax.devices()
pytestmark = pytest.mark.skipif(len(DEVICES) < 2, reason="needs two devices")
BF16 = jnp.bfloat16


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    x = jnp.asarray(rng.standard_normal((64, 256)), BF16)
    res = jnp.asarray(rng.standard_normal((64, 256)), BF16)
    g = jnp.asarray(rng.uniform(0.5, 1.5, 256), BF16)
    w = jnp.asarray(rng.standard_normal((128, 256)) * 0.05, BF16)
    q = jnp.asarray(rng.standard_normal((2, 96, 8, 64)), BF16)
    k = jnp.asarray(rng.standard_normal((2, 96, 4, 64)), BF16)
    v = jnp.asarray(rng.standard_normal((2, 96, 4, 64)), BF16)
    return x, res, g, w, q, k, v


def _program(x, res, g, w, q, k, v):
    """rms_norm_with_add -> rms_norm -> gemm on the rows; causal GQA attention; and their
    gradients."""
    def loss(x, w, q, k, v):
        y, r = jax_aiter.rms_norm_with_add(x, res, g)
        h = jax_aiter.gemm(jax_aiter.rms_norm(y + r, g), w)
        o = jax_aiter.flash_attn_func(q, k, v, causal=True)
        return jnp.sum(h.astype(jnp.float32) ** 2) + jnp.sum(o.astype(jnp.float32) ** 2), (h, o)
    (_, (h, o)), grads = jax.value_and_grad(loss, argnums=(0, 1, 2, 3, 4), has_aux=True)(
        x, w, q, k, v)
    return h, o, grads


def _single(args):
    return jax.jit(_program)(*jax.device_put(args, DEVICES[0]))


def _assert_equal_where_exact(got, ref):
    """Heads computed on their own device are the single-device bits (the same kernels in the same
    order); the row-sharded GEMM may take another tile or K split for half the rows (and XLA's dot
    in its backward another algorithm), and dw sums rows split across the mesh: those are close."""
    h, o, (dx, dw, dq, dk, dv) = got
    h1, o1, (dx1, dw1, dq1, dk1, dv1) = ref
    for name, a, b in (("attention out", o, o1), ("dq", dq, dq1), ("dk", dk, dk1), ("dv", dv, dv1)):
        np.testing.assert_array_equal(np.asarray(a, np.float32), np.asarray(b, np.float32),
                                      err_msg=name)
    for name, a, b in (("gemm out", h, h1), ("dx", dx, dx1), ("dw", dw, dw1)):
        _assert_close(a, b, name)


def _assert_close(a, b, what):
    """Within two bf16 roundings of the largest value (a bf16 sum of two rounded halves)."""
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    np.testing.assert_allclose(a, b, rtol=2**-7, atol=2**-7 * float(np.abs(b).max()),
                               err_msg=what)


def test_shard_map_over_two_devices_matches_one():
    args = _inputs()
    mesh = Mesh(np.asarray(DEVICES[:2]), ("d",))
    rows, heads, rep = P("d", None), P(None, None, "d", None), P()

    # w is replicated: gemm's backward sums its gradient over the mesh itself (psum).
    sharded = jax.jit(jax.shard_map(
        _program, mesh=mesh, in_specs=(rows, rows, rep, rep, heads, heads, heads),
        out_specs=(rows, heads, (rows, rep, heads, heads, heads))))
    _assert_equal_where_exact(sharded(*args), _single(args))


def test_jit_sharding_annotations_match_one():
    args = _inputs(1)
    mesh = Mesh(np.asarray(DEVICES[:2]), ("d",))
    shard = lambda spec: NamedSharding(mesh, spec)  # noqa: E731
    rows, heads, rep = shard(P("d", None)), shard(P(None, None, "d", None)), shard(P())
    placed = jax.device_put(args, (rows, rows, rep, rep, heads, heads, heads))
    got = jax.jit(_program)(*placed)
    ref = _single(args)
    for i, (a, b) in enumerate(zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(ref))):
        _assert_close(a, b, f"output {i}")


def test_two_threads_drive_two_devices():
    """Each thread runs the program on its own device `calls` times (a few inputs in turn); every
    result equals that input's reference; each GPU resolves the same kernels, once."""
    calls = 300 if DEVICES[0].platform == "cpu" else 2000  # the CPU twins are slow
    sets = [_inputs(s) for s in range(3)]
    refs = [jax.tree_util.tree_map(np.asarray, _single(a)) for a in sets]
    errors: list[str] = []
    f = jax.jit(_program)

    def drive(device):
        try:
            local = [jax.device_put(a, device) for a in sets]
            for i in range(calls):
                got = f(*local[i % len(local)])
                if i % 97 == 0 or i >= calls - len(local):
                    for a, b in zip(jax.tree_util.tree_leaves(got),
                                    jax.tree_util.tree_leaves(refs[i % len(local)])):
                        if not np.array_equal(np.asarray(a), b):
                            errors.append(f"device {device.id}, call {i}: wrong result")
                            return
            jax.block_until_ready(got)
        except Exception as e:  # noqa: BLE001 (reported below, with the device)
            errors.append(f"device {device.id}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=drive, args=(d,)) for d in DEVICES[:2]]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:4]
    platform = {"gpu": "CUDA", "cuda": "CUDA", "rocm": "ROCM"}.get(DEVICES[0].platform)
    counts = [_ffi.device_cache_counts(platform, d.local_hardware_id) if platform else None
              for d in DEVICES[:2]]
    print(f"per-device caches (kernels resolved, code objects loaded): {counts}")
    if counts[0] is not None:
        # Each device holds its own kernels and code objects (one entry per kernel: the cache
        # loads each once); a cache keyed without the ordinal leaves device 1's empty.
        assert all(c[0] > 0 and c[1] > 0 for c in counts), counts
