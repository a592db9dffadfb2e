"""Expert-parallel dispatch/combine (jax_aiter.moe_dispatch) on 4 forced host devices (conftest.py)
and, in a subprocess, on 8: the received rows against a NumPy model of the routing, round trips
and gradients against the same MoE computed densely, uneven loads, an expert with no tokens, a
rank receiving nothing, max_recv overflow (refused, or dropped and counted), bad inputs. Both
tiers: XLA's collectives and the peer kernels (on the CPU, the host devices' threads are the
peers), and the peer tier's bounded wait: a rank that never calls makes the others time out; the
tiers with two processes (jax.distributed), where the peer tier stages through shared memory."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, PartitionSpec as P

import jax_aiter
from jax_aiter import moe_combine, moe_dispatch

N = 4
pytestmark = pytest.mark.skipif(len(jax.devices()) < N, reason=f"needs {N} devices")


def _mesh(n=N):
    return Mesh(np.array(jax.devices()[:n]), ("ep",))


TIERS = ["xla", "peer"]


def _tier(tier, n=N):
    """moe_dispatch's keywords for a tier."""
    return {} if tier == "xla" else dict(tier="peer", mesh=_mesh(n), timeout_ms=20000)


def _routing(seed, n, t, e, k, experts=None):
    """x [n*T, H], ids [n*T, k] (distinct per token, drawn from `experts`), weights."""
    rng = np.random.default_rng(seed)
    pool = np.arange(e) if experts is None else np.asarray(experts)
    ids = np.stack([rng.choice(pool, size=k, replace=False) for _ in range(n * t)]).astype(np.int32)
    x = rng.standard_normal((n * t, 32)).astype(np.float32)
    w = rng.random((n * t, k)).astype(np.float32)
    return x, ids, w


def _dispatch(x, ids, w, e, n=N, **kw):
    def f(x, ids, w):
        r = moe_dispatch(x, ids, w, num_experts=e, axis_name="ep", **kw)
        return r.x, r.ids, r.weights, r.src_rank, r.src_index, r.counts, r.dropped[None]
    spec = P("ep")
    return jax.jit(jax.shard_map(f, mesh=_mesh(n), in_specs=(spec, spec, spec),
                                 out_specs=(spec,) * 7))(x, ids, w)


def _model(x, ids, w, e, n, capacity):
    """NumPy: what each rank receives, block by block, in source token order."""
    t = x.shape[0] // n
    per = e // n
    out = []
    for r in range(n):
        rows = []
        for s in range(n):
            block = []
            for i in range(t):
                tok = s * t + i
                if any(ids[tok] // per == r) and len(block) < capacity:
                    mine = ids[tok] // per == r
                    block.append((s, i, x[tok], np.where(mine, ids[tok], -1),
                                  np.where(mine, w[tok], 0.0)))
            rows.append(block)
        out.append(rows)
    return out


@pytest.mark.parametrize("t,e,k,tier", [(16, 8, 2, "xla"), (8, 16, 8, "xla"), (24, 4, 1, "xla"),
                                        (8, 16, 8, "peer")])
def test_received_rows_match_the_routing_model(t, e, k, tier):
    x, ids, w = _routing(t * 7 + k, N, t, e, k)
    rx, rids, rw, rsrc, ridx, counts, dropped = map(np.asarray,
                                                    _dispatch(x, ids, w, e, **_tier(tier)))
    cap = t  # default max_recv = n * T
    model = _model(x, ids, w, e, N, cap)
    for r in range(N):
        base = r * N * cap
        for s in range(N):
            block = model[r][s]
            assert counts[r * N + s] == len(block)
            for c in range(cap):
                row = base + s * cap + c
                if c < len(block):
                    src, i, xv, idv, wv = block[c]
                    assert (rsrc[row], ridx[row]) == (src, i)
                    np.testing.assert_array_equal(rx[row], xv)
                    np.testing.assert_array_equal(rids[row], idv)
                    np.testing.assert_array_equal(rw[row], wv)
                else:
                    assert rsrc[row] == -1 and ridx[row] == -1
                    assert (rids[row] == -1).all() and (rx[row] == 0).all()
    assert (dropped == 0).all()


def _layer(n, e, **kw):
    scale = jnp.arange(e, dtype=jnp.float32) * 0.25 + 0.5

    def f(x, ids, w):
        r = moe_dispatch(x, ids, w, num_experts=e, axis_name="ep", **kw)
        s = jnp.where(r.ids >= 0, scale[jnp.maximum(r.ids, 0)], 0.0)
        y = jnp.tanh(r.x) * (r.weights * s).sum(-1, keepdims=True)  # each rank's experts
        return moe_combine(y, r.handle, axis_name="ep")

    def dense(x, ids, w):
        return jnp.tanh(x) * (w * scale[ids]).sum(-1, keepdims=True)

    sharded = jax.shard_map(f, mesh=_mesh(n), in_specs=(P("ep"),) * 3, out_specs=P("ep"))
    return sharded, dense


@pytest.mark.parametrize("case,tier", [(c, "xla") for c in ["uniform", "uneven",
                                                              "expert_without_tokens",
                                                              "rank_receives_nothing", "k1"]] +
                         [("uneven", "peer"), ("rank_receives_nothing", "peer")])
def test_round_trip_and_gradients(case, tier):
    e, t, k = 16, 12, 4
    experts = None
    if case == "uneven":  # most tokens on rank 0's experts
        experts = [0, 1, 2, 3, 0, 1, 2, 3, 5, 9]
    elif case == "expert_without_tokens":
        experts = [e_ for e_ in range(e) if e_ != 6]
    elif case == "rank_receives_nothing":  # rank 3 owns experts 12..15: none chosen
        experts = list(range(12))
    elif case == "k1":
        k = 1
    x, ids, w = _routing(len(case), N, t, e, k, experts)
    sharded, dense = _layer(N, e, **_tier(tier))
    np.testing.assert_allclose(jax.jit(sharded)(x, ids, w), dense(x, ids, w), rtol=1e-5, atol=1e-6)

    def loss(fn):
        return lambda x, w: jnp.sum(jnp.sin(fn(x, ids, w)) * jnp.arange(x.shape[1]))

    got = jax.jit(jax.grad(loss(sharded), argnums=(0, 1)))(x, w)
    want = jax.grad(loss(dense), argnums=(0, 1))(x, w)
    for g, r in zip(got, want):
        np.testing.assert_allclose(g, r, rtol=2e-4, atol=1e-4)  # f32, summed in another order


def test_scales_travel_with_the_tokens():
    e, t, k = 8, 8, 2
    x, ids, w = _routing(3, N, t, e, k)
    s = (np.arange(N * t, dtype=np.float32)[:, None] + np.zeros((1, 3), np.float32))

    def f(x, ids, w, s):
        r = moe_dispatch(x, ids, w, s, num_experts=e, axis_name="ep")
        return r.scales, r.src_rank, r.src_index

    got_s, src, idx = jax.jit(jax.shard_map(
        f, mesh=_mesh(), in_specs=(P("ep"),) * 4, out_specs=(P("ep"),) * 3))(x, ids, w, s)
    got_s, src, idx = map(np.asarray, (got_s, src, idx))
    valid = src >= 0
    np.testing.assert_array_equal(got_s[valid, 0], (src * t + idx)[valid])
    assert (got_s[~valid] == 0).all()


@pytest.mark.parametrize("tier", TIERS)
def test_overflow_dropped_and_counted(tier):
    e, t, k = 8, 16, 2
    x, ids, w = _routing(5, N, t, e, k)
    cap = 3
    rx, rids, rw, rsrc, ridx, counts, dropped = map(
        np.asarray, _dispatch(x, ids, w, e, max_recv=N * cap, on_overflow="drop", **_tier(tier)))
    model = _model(x, ids, w, e, N, cap)
    per = e // N
    for s in range(N):
        wanted = [sum(any(ids[s * t + i] // per == r) for i in range(t)) for r in range(N)]
        assert dropped[s] == sum(max(0, c - cap) for c in wanted)
    for r in range(N):
        for s in range(N):
            assert counts[r * N + s] == len(model[r][s])


def test_overflow_refused_with_a_clear_error():
    e, t, k = 8, 16, 2
    x, ids, w = _routing(5, N, t, e, k)
    with pytest.raises(Exception, match="max_recv overflow"):
        jax.block_until_ready(_dispatch(x, ids, w, e, max_recv=N * 2))


@pytest.mark.parametrize("bad,match", [
    (dict(num_experts=6), "num_experts: expected a positive multiple of the 4 ranks"),
    (dict(max_recv=10), "max_recv: expected a positive multiple of the 4 ranks"),
    (dict(ids_shape=(7, 2)), "operand topk_ids: expected"),
    (dict(w_shape=(8, 1)), "operand topk_weights: expected shape"),
    (dict(ids_dtype=np.float32), "operand topk_ids: expected an integer dtype"),
    (dict(x_shape=(8, 4, 2)), "operand x: expected"),
    (dict(on_overflow="wrap"), "on_overflow"),
    (dict(tier="nvshmem"), "attribute tier: expected"),
    (dict(tier="peer"), "attribute mesh: the peer tier needs the jax.sharding.Mesh"),
    (dict(tier="peer", mesh="m", timeout_ms=0), "attribute timeout_ms"),
])
def test_bad_inputs_are_named(bad, match):
    t = 8
    x = np.zeros(bad.pop("x_shape", (t, 4)), np.float32)
    ids = np.zeros(bad.pop("ids_shape", (t, 2)), bad.pop("ids_dtype", np.int32))
    w = np.zeros(bad.pop("w_shape", (t, 2)), np.float32)
    kw = dict(num_experts=8)
    kw.update(bad)
    if kw.get("mesh") == "m":
        kw["mesh"] = _mesh()

    def f(x, ids, w):
        return moe_dispatch(x, ids, w, axis_name="ep", **kw).x

    with pytest.raises(ValueError, match=match):
        jax.shard_map(f, mesh=_mesh(), in_specs=(P(),) * 3, out_specs=P())(x, ids, w)


def test_combine_rejects_a_foreign_handle():
    def f(y):
        return moe_combine(y, (jnp.zeros((4, 4), jnp.int32),), axis_name="ep")
    with pytest.raises(TypeError, match="operand handle: expected the DispatchHandle"):
        jax.shard_map(f, mesh=_mesh(), in_specs=P(), out_specs=P())(np.zeros((8, 4), np.float32))


_EIGHT = textwrap.dedent("""
    import os
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
    import jax, jax.numpy as jnp, numpy as np
    sys_path = {path!r}
    import sys; sys.path[:0] = sys_path
    import test_moe_dispatch as t
    assert len(jax.devices()) == 8
    for case, e, k, tier in (("dense", 16, 8, "xla"), ("sparse", 64, 2, "peer")):
        x, ids, w = t._routing(8, 8, 6, e, k)
        sharded, dense = t._layer(8, e, **t._tier(tier, 8))
        np.testing.assert_allclose(jax.jit(sharded)(x, ids, w), dense(x, ids, w), rtol=1e-5,
                                   atol=1e-6)
        loss = lambda fn: (lambda x, w: jnp.sum(jnp.sin(fn(x, ids, w))))
        g = jax.jit(jax.grad(loss(sharded), argnums=(0, 1)))(x, w)
        r = jax.grad(loss(dense), argnums=(0, 1))(x, w)
        for a, b in zip(g, r):
            np.testing.assert_allclose(a, b, rtol=2e-4, atol=1e-4)
    print("eight devices: ok")
""")


def test_eight_devices():
    if jax.default_backend() != "cpu":
        pytest.skip("8 forced host devices: the CPU backend's test")
    here = os.path.dirname(os.path.abspath(__file__))
    script = _EIGHT.format(path=[here] + sys.path)
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8")
    res = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "eight devices: ok" in res.stdout


@pytest.mark.parametrize("tier", TIERS)
def test_fp8_tokens_travel_bit_exact(tier):
    e, t, k = 8, 8, 2
    x, ids, w = _routing(4, N, t, e, k)
    # Moved as bytes (NCCL has no fp8 type); 24-byte rows: the peer tier packs them with the ids
    # (not whole 16-byte words), where 32-byte rows move as their own field.
    xq = jnp.asarray(x[:, :24], jnp.float8_e4m3fn)

    def f(x, ids, w):
        r = moe_dispatch(x, ids, w, num_experts=e, axis_name="ep", **_tier(tier))
        return r.x, r.src_rank, r.src_index

    got, src, idx = jax.jit(jax.shard_map(f, mesh=_mesh(), in_specs=(P("ep"),) * 3,
                                          out_specs=(P("ep"),) * 3))(xq, ids, w)
    assert got.dtype == jnp.float8_e4m3fn
    got, src, idx = np.asarray(got.astype(jnp.float32)), np.asarray(src), np.asarray(idx)
    valid = src >= 0
    want = np.asarray(xq.astype(jnp.float32))[(src * t + idx)[valid]]
    np.testing.assert_array_equal(got[valid], want)


def test_peer_tier_a_rank_that_never_calls_times_out_and_the_process_goes_on():
    """Rank 3 skips the dispatch (lax.cond): ranks 0-2 give up within the bound, say whom they
    waited for (status, peer_errors), every later exchange of the mesh is refused with an error
    saying why, and after reset_peer_groups() exchanges run and are right again."""
    e, t, k, bound_ms = 8, 8, 2, 300
    x, ids, w = _routing(9, N, t, e, k)
    kw = dict(num_experts=e, axis_name="ep", tier="peer", mesh=_mesh(), timeout_ms=bound_ms)

    def f(x, ids, w):
        def call(x, ids, w):
            r = moe_dispatch(x, ids, w, **kw)
            return r.x, r.status

        def skip(x, ids, w):  # the same types, varying over "ep" like call's
            zero = (x[0, 0] * 0).astype(jnp.int32)
            return jnp.zeros((N * t, x.shape[1]), x.dtype) + x[0, 0] * 0, jnp.full((4,), -1) + zero

        return jax.lax.cond(jax.lax.axis_index("ep") == 3, skip, call, x, ids, w)

    step = jax.jit(jax.shard_map(f, mesh=_mesh(), in_specs=(P("ep"),) * 3,
                                 out_specs=(P("ep"),) * 2))
    jax_aiter.reset_peer_groups()
    try:
        import time
        start = time.monotonic()
        _, status = step(x, ids, w)
        status = np.asarray(status).reshape(N, 4)
        assert time.monotonic() - start < 60  # bounded (compile included), not a hang
        for r in range(3):  # waited for rank 3 to start the exchange (code 1), at exchange 1
            assert status[r].tolist() == [1, 3, 1, 0]
        errors = jax_aiter.peer_errors()
        assert sorted(err["position"] for err in errors) == [0, 1, 2]
        assert all(err["peer"] == 3 and err["waited_ms"] == bound_ms for err in errors)
        with pytest.raises(Exception, match="a peer exchange timed out.*waiting for rank 3 .*"
                                            "reset_peer_groups"):
            jax.block_until_ready(step(x, ids, w))
    finally:
        jax_aiter.reset_peer_groups()
    assert jax_aiter.peer_errors() == []
    got = _dispatch(x, ids, w, e, **_tier("peer"))
    want = _dispatch(x, ids, w, e)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


_PROCESS = textwrap.dedent("""
    import os, sys
    n, rank, port = map(int, sys.argv[1:4])
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
    import jax, jax.numpy as jnp, numpy as np
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(f"localhost:{{port}}", num_processes=n, process_id=rank)
    sys.path[:0] = {path!r}
    from jax.sharding import NamedSharding, PartitionSpec as P
    import jax_aiter, test_moe_dispatch as t
    devices = len(jax.devices())
    assert devices == 2 * n and len(jax.local_devices()) == 2
    e, k = 16, 4
    x, ids, w = t._routing(11, devices, 6, e, k)
    sharding = NamedSharding(t._mesh(devices), P("ep"))
    glob = lambda a: jax.make_array_from_callback(a.shape, sharding, lambda i: a[i])
    gx, gids, gw = glob(x), glob(ids), glob(w)
    sharded, dense = t._layer(devices, e)
    loss = lambda fn: (lambda x, w, ids: jnp.sum(jnp.sin(fn(x, ids, w))))
    out = jax.jit(sharded)(gx, gids, gw)
    grads = jax.jit(jax.grad(loss(sharded), argnums=(0, 1)))(gx, gw, gids)
    want = dense(x, ids, w)
    want_g = jax.grad(loss(dense), argnums=(0, 1))(x, w, ids)
    for got, ref in ((out, want),) + tuple(zip(grads, want_g)):
        for shard in got.addressable_shards:
            np.testing.assert_allclose(shard.data, np.asarray(ref)[shard.index], rtol=2e-4,
                                       atol=1e-4)
    # The peer tier across processes (staging buffers in shared memory, set up through the
    # key-value store): the xla tier's values and gradients, bit for bit, twice (exchange 2 and 3
    # reuse the groups).
    peer, _ = t._layer(devices, e, **t._tier("peer", devices))
    for _ in range(2):
        got = (jax.jit(peer)(gx, gids, gw),) + jax.jit(jax.grad(loss(peer), argnums=(0, 1)))(
            gx, gw, gids)
        for a, b in zip(got, (out,) + grads):
            for sa, sb in zip(a.addressable_shards, b.addressable_shards):
                np.testing.assert_array_equal(sa.data, sb.data)
    assert jax_aiter.peer_errors() == []
    jax.distributed.shutdown()
    print(f"process {{rank}}: ok")
""")


def test_two_processes_two_devices_each():
    """Both tiers with several processes (jax.distributed, gloo on the CPU: one process per
    GPU's shape), values and gradients against the dense layer; the peer tier's equal the xla
    tier's bit for bit."""
    if jax.default_backend() != "cpu":
        pytest.skip("processes of forced host devices: the CPU backend's test")
    import socket
    here = os.path.dirname(os.path.abspath(__file__))
    with socket.socket() as sock:
        sock.bind(("localhost", 0))
        port = sock.getsockname()[1]
    script = _PROCESS.format(path=[here] + sys.path)
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    procs = [subprocess.Popen([sys.executable, "-c", script, "2", str(r), str(port)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for r in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    for r, (p, (out, err)) in enumerate(zip(procs, outs)):
        assert p.returncode == 0, err[-3000:]
        assert f"process {r}: ok" in out


def _peer_call(**change):
    """aiter.peer_all_to_all's operands (dtype, shape) and attributes for 4 ranks, 4 rows each,
    32-byte token rows, 16-byte side rows; `change` replaces any of them."""
    n, c = 4, 4
    call = dict(rows=(jnp.bfloat16, (8, 16)), side=(jnp.uint8, (8, 16)), src=(jnp.int32, (n, c)),
                position=(jnp.int32, (2,)), recv=(jnp.bfloat16, (n, c, 16)),
                side_recv=(jnp.uint8, (n, c, 16)), counts=(jnp.int32, (n,)),
                status=(jnp.int32, (4,)), devices="0,1,2,3", stride=1, timeout_ms=1000)
    call.update(change)
    return call


@pytest.mark.parametrize("change,match", [
    (dict(rows=(jnp.bfloat16, (8, 12))), "operand rows: expected .* multiple of 16 bytes"),
    (dict(side=(jnp.uint8, (7, 16))), "operand side: expected .* R from rows"),
    (dict(side=(jnp.uint8, (8, 20))), "operand side: expected"),
    (dict(src=(jnp.int32, (17, 4))), r"operand src: expected i32\[n, C\] with 1 <= n <= 16"),
    (dict(src=(jnp.float32, (4, 4))), "operand src: expected i32"),
    (dict(position=(jnp.int32, (3,))), r"operand position: expected i32\[2\]"),
    (dict(recv=(jnp.bfloat16, (4, 5, 16))), r"operand recv: expected bf16\[4, 4, 16\]"),
    (dict(side_recv=(jnp.int8, (4, 4, 16))), "operand side_recv: expected u8"),
    (dict(counts=(jnp.int32, (3,))), r"operand counts: expected i32\[4\]"),
    (dict(status=(jnp.int32, (2,))), r"operand status: expected i32\[4\]"),
    (dict(devices="0,1,1,3"), "attribute devices: expected distinct devices"),
    (dict(devices="0,x"), "attribute devices: expected comma-separated device ordinals"),
    (dict(devices="0,1,2"), "attribute devices: expected a multiple of the 4 ranks"),
    (dict(devices="0,1,2,3,"), "attribute devices: a trailing comma"),
    (dict(stride=0), "attribute stride: expected 1 <= stride"),
    (dict(devices="0,1,2,3,4,5,6,7", stride=3), "attribute stride: expected"),
    (dict(timeout_ms=0), "attribute timeout_ms: expected 1 to 3600000, got 0"),
    (dict(staging_bytes=100), "attribute staging_bytes: expected 0 .* or at least 768 "),
])
def test_peer_op_bad_inputs_are_named(change, match):
    from jax_aiter import _call
    call = _peer_call(**change)
    names = ("rows", "side", "src", "position")
    inputs = {k: jax.ShapeDtypeStruct(call[k][1], call[k][0]) for k in names}
    outputs = {k: (call[k][1], call[k][0]) for k in ("recv", "side_recv", "counts", "status")}
    attributes = {k: call[k] for k in ("devices", "stride", "timeout_ms", "staging_bytes")
                  if k in call}
    with pytest.raises(ValueError, match="aiter.peer_all_to_all: " + match):
        _call.validate("aiter.peer_all_to_all", inputs=inputs, outputs=outputs,
                       attributes=attributes)


def test_peer_op_valid_call_validates():
    from jax_aiter import _call
    call = _peer_call()
    inputs = {k: jax.ShapeDtypeStruct(call[k][1], call[k][0])
              for k in ("rows", "side", "src", "position")}
    outputs = {k: (call[k][1], call[k][0]) for k in ("recv", "side_recv", "counts", "status")}
    assert _call.validate("aiter.peer_all_to_all", inputs=inputs, outputs=outputs,
                          attributes={k: call[k] for k in ("devices", "stride", "timeout_ms")})
