"""bench_moe_dispatch.py with one process per GPU (jax.distributed on one host): the peer tier
across processes (staging buffers exported as IPC handles) and XLA's tier, same shapes and bytes.

Run from the repository root on a machine with several GPUs:
    PYTHONPATH=build-gpu/python:benchmarks/gpu python benchmarks/gpu/bench_moe_dispatch_mp.py \
        [--gpus 2 4] [--tokens 4096 128] [--ragged]
spawns, per GPU count n, n workers (jax.distributed.initialize(local_device_ids=[i]): every GPU
visible, one addressable) that build the same global inputs, check that the peer tier's dispatch
and combine equal the xla tier's bit for bit, and time both (median device span of each process's
GPU; rank 0 prints). --ragged adds jax.lax.ragged_all_to_all, which across processes needs XLA's
send/recv fallback flag and has hung past minutes on the lent machines (benchmarks/gpu/NOTES.md).
A worker that does not finish within --timeout seconds is killed (its rank reported).
"""
import argparse
import os
import socket
import subprocess
import sys


def worker(n, rank, port, tokens, ragged):
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    jax.distributed.initialize(f"localhost:{port}", num_processes=n, process_id=rank,
                               local_device_ids=[rank])
    import bench_moe_dispatch as b
    from bench_sharding import timed

    mesh = Mesh(np.array(jax.devices()), ("ep",))
    sharding = NamedSharding(mesh, P("ep"))
    for t in tokens:
        host = [np.asarray(a) for a in b.routing(n, t)]
        x, ids, w, s = (jax.make_array_from_callback(a.shape, sharding, lambda i, a=a: a[i])
                        for a in host)
        rows = b.rows_sent(host[1], n, t)
        res, outs = {}, {}
        for tier in ("peer", "xla"):
            d, c = b.ours(mesh, tier)
            rx, rs, handle = d(x, ids, w, s)
            y = rx.astype(jnp.bfloat16)
            outs[tier] = (rx, rs, c(y, handle))
            res[f"{tier} dispatch"] = timed(d, (x, ids, w, s))
            res[f"{tier} combine"] = timed(c, (y, handle))
        for a, b_ in zip(outs["peer"], outs["xla"]):
            for sa, sb in zip(a.addressable_shards, b_.addressable_shards):
                np.testing.assert_array_equal(np.asarray(sa.data.astype(jnp.float32)),
                                              np.asarray(sb.data.astype(jnp.float32)))
        if ragged:
            rd, rc = b.ragged(mesh, n)
            gx, gs, src = rd(x, ids, w, s)
            res["ragged dispatch"] = timed(rd, (x, ids, w, s))
            res["ragged combine"] = timed(rc, (gx.astype(jnp.bfloat16), ids, src))
        if rank == 0:
            print(f"n={n} tokens/GPU={t}: one process per GPU; the peer tier's dispatch and "
                  f"combine equal the xla tier's bit for bit", flush=True)
            for name, (wall, span) in res.items():
                ms = span if span is not None else wall
                row_bytes = b.HIDDEN + 4 * b.HIDDEN // b.BLOCK if "dispatch" in name else \
                    2 * b.HIDDEN
                gbs = rows * row_bytes / (ms * 1e-3) / 1e9
                print(f"n={n} tokens/GPU={t:5d} {name:16s} {ms * 1e3:9.1f} us  {gbs:7.1f} "
                      f"GB/s/GPU  (wall {wall * 1e3:.1f} us)", flush=True)
    import jax_aiter
    assert jax_aiter.peer_errors() == [], jax_aiter.peer_errors()
    jax.distributed.shutdown()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpus", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--tokens", type=int, nargs="+", default=[4096, 128])
    ap.add_argument("--ragged", action="store_true")
    ap.add_argument("--timeout", type=float, default=240)
    ap.add_argument("--worker", type=int, nargs=3)  # n rank port
    args = ap.parse_args()
    if args.worker:
        worker(*args.worker, args.tokens, args.ragged)
        return
    env = dict(os.environ)
    if args.ragged:
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") +
                            " --xla_gpu_allow_ragged_all_to_all_nccl_send_recv_fallback=true")
    failed = False
    for n in args.gpus:
        with socket.socket() as sock:
            sock.bind(("localhost", 0))
            port = sock.getsockname()[1]
        procs = [subprocess.Popen(
            [sys.executable, __file__, "--worker", str(n), str(i), str(port), "--tokens",
             *map(str, args.tokens)] + (["--ragged"] if args.ragged else []), env=env)
            for i in range(n)]
        codes = []
        for i, p in enumerate(procs):
            try:
                codes.append(p.wait(timeout=args.timeout))
            except subprocess.TimeoutExpired:
                p.kill()
                codes.append(f"killed after {args.timeout:.0f} s")
        print(f"n={n}: workers exited {codes}", flush=True)
        failed |= any(c != 0 for c in codes)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
