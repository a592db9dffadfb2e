"""Expert-parallel dispatch and combine (jax_aiter.moe_dispatch: its XLA-collectives tier and its
peer tier) against jax.lax.ragged_all_to_all, at DeepSeek-V3's shape (hidden 7168, top-8, 256
experts over the GPUs).

Run from the repository root on a machine with several GPUs (one process, all of them):
    PYTHONPATH=build-gpu/python python benchmarks/gpu/bench_moe_dispatch.py [--tokens 4096 128]
On a CPU, XLA_FLAGS=--xla_force_host_platform_device_count=4 runs it (slowly) as a smoke test.

Per GPU count n (2 and 4 where present) and tokens per GPU: the median device span of one
dispatch (FP8 e4m3 tokens with their f32 1x128 block scales) and of one combine (bf16 rows back,
summed at the source), ours (each tier of --tiers) and the ragged_all_to_all version of the same
move, in one run.
GB/s per GPU = the bytes one GPU sends (tokens x the ranks each goes to x row bytes, its own rank
included, as MORI counts them) / the span. Routing: uniform random top-8 of 256 experts.
"""
import argparse
import statistics

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from bench_sharding import timed
import jax_aiter

HIDDEN, TOPK, EXPERTS = 7168, 8, 256
BLOCK = 128


def routing(n, t, seed=0):
    rng = np.random.default_rng(seed)
    ids = np.stack([rng.choice(EXPERTS, TOPK, replace=False) for _ in range(n * t)]).astype(
        np.int32)
    w = rng.random((n * t, TOPK)).astype(np.float32)
    x = jnp.asarray(rng.standard_normal((n * t, HIDDEN)) * 0.5, jnp.float8_e4m3fn)
    s = jnp.asarray(rng.random((n * t, HIDDEN // BLOCK)), jnp.float32)
    return x, jnp.asarray(ids), jnp.asarray(w), s


def rows_sent(ids, n, t):
    """Rows each GPU sends (a token once per owning rank), summed over GPUs / n."""
    owner = np.asarray(ids) // (EXPERTS // n)
    per_token = np.array([len(set(r)) for r in owner])
    return per_token.sum() / n


# ---- ours ------------------------------------------------------------------------------------

def ours(mesh, tier):
    kw = {} if tier == "xla" else dict(tier=tier, mesh=mesh)

    def dispatch(x, ids, w, s):
        r = jax_aiter.moe_dispatch(x, ids, w, s, num_experts=EXPERTS, axis_name="ep", **kw)
        return r.x, r.scales, r.handle  # the handle's tier and mesh travel in its tree

    def combine(y, handle):
        return jax_aiter.moe_combine(y, handle, axis_name="ep")

    spec = P("ep")
    d = jax.jit(jax.shard_map(dispatch, mesh=mesh, in_specs=(spec,) * 4, out_specs=(spec,) * 3))
    c = jax.jit(jax.shard_map(combine, mesh=mesh, in_specs=(spec, spec), out_specs=spec))
    return d, c


# ---- ragged_all_to_all -----------------------------------------------------------------------

def _plan(ids, n):
    """Per rank: the rows to send sorted by destination, and ragged_all_to_all's offsets."""
    t = ids.shape[0]
    goes = ((ids // (EXPERTS // n))[:, :, None] == jnp.arange(n)[None, None, :]).any(axis=1)
    flat = goes.T.reshape(-1)  # destination-major
    pos = jnp.cumsum(flat) - 1
    src = jnp.zeros((n * t,), jnp.int32).at[jnp.where(flat, pos, n * t)].set(
        jnp.tile(jnp.arange(t, dtype=jnp.int32), n), mode="drop")
    send_sizes = goes.sum(axis=0).astype(jnp.int32)
    in_off = (jnp.cumsum(send_sizes) - send_sizes).astype(jnp.int32)
    sizes = jax.lax.all_gather(send_sizes, "ep")  # [src, dst]
    me = jax.lax.axis_index("ep")
    recv_sizes = sizes[:, me]
    out_off = (jnp.cumsum(sizes, axis=0) - sizes)[me, :].astype(jnp.int32)
    return src, send_sizes, in_off, out_off, recv_sizes


def ragged(mesh, n):
    def dispatch(x, ids, w, s):
        src, send_sizes, in_off, out_off, recv_sizes = _plan(ids, n)
        t = x.shape[0]
        rx = jax.lax.ragged_all_to_all(x[src], jnp.zeros((n * t, HIDDEN), x.dtype), in_off,
                                       send_sizes, out_off, recv_sizes, axis_name="ep")
        rs = jax.lax.ragged_all_to_all(s[src], jnp.zeros((n * t, s.shape[1]), s.dtype), in_off,
                                       send_sizes, out_off, recv_sizes, axis_name="ep")
        return rx, rs, src

    def combine(y, ids, src):
        _, send_sizes, in_off, out_off, recv_sizes = _plan(ids, n)
        t = ids.shape[0]
        recv_off = (jnp.cumsum(recv_sizes) - recv_sizes).astype(jnp.int32)
        # Back: what I received from s goes to s at the offset s sent it from.
        back_off = jax.lax.all_to_all(in_off.reshape(n, 1), "ep", 0, 0).reshape(n)
        back = jax.lax.ragged_all_to_all(y, jnp.zeros((n * t, HIDDEN), y.dtype), recv_off,
                                         recv_sizes, back_off, send_sizes, axis_name="ep")
        valid = jnp.arange(n * t) < send_sizes.sum()
        return jax.ops.segment_sum(jnp.where(valid[:, None], back.astype(jnp.float32), 0), src,
                                   num_segments=t).astype(y.dtype)

    spec = P("ep")
    d = jax.jit(jax.shard_map(dispatch, mesh=mesh, in_specs=(spec,) * 4, out_specs=(spec,) * 3))
    c = jax.jit(jax.shard_map(combine, mesh=mesh, in_specs=(spec,) * 3, out_specs=spec))
    return d, c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, nargs="+", default=[4096, 128])
    ap.add_argument("--gpus", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--tiers", nargs="+", default=["xla", "peer"])
    args = ap.parse_args()
    devs = jax.devices()
    print(f"devices: {len(devs)} x {devs[0].device_kind}; jax {jax.__version__}")
    for n in args.gpus:
        if n > len(devs):
            continue
        mesh = Mesh(np.array(devs[:n]), ("ep",))
        for t in args.tokens:
            # Each rank's tokens on its GPU before timing (else every call first scatters them
            # from GPU 0, which is what the first version of this benchmark timed).
            x, ids, w, s = jax.device_put(routing(n, t), NamedSharding(mesh, P("ep")))
            rows = rows_sent(ids, n, t)
            fp8_row = HIDDEN + 4 * HIDDEN // BLOCK
            bf16_row = 2 * HIDDEN
            res, combines = {}, {}
            for tier in args.tiers:
                d, c = ours(mesh, tier)
                rx, rs, handle = d(x, ids, w, s)
                y = jnp.asarray(rx.astype(jnp.bfloat16))
                res[f"{tier} dispatch"] = timed(d, (x, ids, w, s))
                res[f"{tier} combine"] = timed(c, (y, handle))
                combines[tier] = c(y, handle)
            if len(combines) == 2:
                err = float(jnp.max(jnp.abs(combines["xla"].astype(jnp.float32) -
                                            combines["peer"].astype(jnp.float32))))
                print(f"n={n} tokens/GPU={t}: the tiers' round trips agree to {err:.3g} (max abs)")
            y = next(iter(combines.values()))  # a round trip of ours, for the check below
            try:
                rd, rc = ragged(mesh, n)
                gx, gs, src = rd(x, ids, w, s)
                gy = gx.astype(jnp.bfloat16)
                res["ragged dispatch"] = timed(rd, (x, ids, w, s))
                res["ragged combine"] = timed(rc, (gy, ids, src))
                # Both versions' round trips must give the same sums (ours: the round trip of
                # the dispatched rows cast to bf16, as gy).
                err = float(jnp.max(jnp.abs(y.astype(jnp.float32) -
                                            rc(gy, ids, src).astype(jnp.float32))))
                print(f"n={n} tokens/GPU={t}: ours and ragged agree to {err:.3g} (max abs)")
            except jax.errors.JaxRuntimeError as e:  # XLA:CPU has no ragged-all-to-all
                print(f"n={n}: ragged_all_to_all not run: {str(e).splitlines()[0]}")
            for name, (wall, span) in res.items():
                ms = span if span is not None else wall
                row_bytes = fp8_row if "dispatch" in name else bf16_row
                gbs = rows * row_bytes / (ms * 1e-3) / 1e9
                print(f"n={n} tokens/GPU={t:5d} {name:16s} {ms * 1e3:9.1f} us  {gbs:7.1f} GB/s/GPU"
                      f"  (wall {wall * 1e3:.1f} us)")


if __name__ == "__main__":
    main()
