"""RMSNorm on a GPU through JAX: our kernels against XLA's own fusion of the same math.

Run from the repository root on a CUDA machine, with the build tree's package on the path:
    PYTHONPATH=build/python python benchmarks/gpu/bench_rmsnorm.py [--out results.json]

Method (../.library/device/METHOD.md): inputs are random (never zeros), rotated among sets larger
than L2 together; each timed call is one jitted program applying the op once to each of K input
sets, so K kernels are queued back to back and launch gaps hide behind device work; the time per
op is (wall time of a call after block_until_ready) / K, median of R calls after warm-up. The
copy reference is a device-to-device memcpy timed with CUDA events through CuPy when available,
and XLA's elementwise negation (the same bytes as a copy) timed like the ops.
Bytes counted are the fewest an op must move: each input read once, each output written once.
"""
import argparse
import json
import statistics
import time

import numpy as np
import jax
import jax.numpy as jnp

import jax_aiter

EPS = 1e-6
K = 4   # input sets per timed call
R = 30  # timed calls


def timed(fn, args, k):
    out = fn(*args)
    jax.block_until_ready(out)
    out = fn(*args)
    jax.block_until_ready(out)
    times = []
    for _ in range(R):
        t0 = time.perf_counter()
        out = fn(*args)
        jax.block_until_ready(out)
        times.append((time.perf_counter() - t0) / k)
    return statistics.median(times), (max(times) - min(times))


def xla_rms(x, g):
    x32 = x.astype(jnp.float32)
    r = jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + EPS)
    return (x32 * r * g.astype(jnp.float32)).astype(x.dtype)


def xla_rms_add(x, res, g):
    s = (x.astype(jnp.float32) + res.astype(jnp.float32)).astype(x.dtype)
    return xla_rms(s, g), s


def copy_bandwidth_cupy(nbytes):
    try:
        import cupy as cp
    except Exception:  # noqa: BLE001
        return None
    a = cp.random.random(nbytes // 4, dtype=cp.float32)
    b = cp.empty_like(a)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(3):
        b[...] = a
    ts = []
    for _ in range(20):
        start.record()
        cp.cuda.runtime.memcpyAsync(b.data.ptr, a.data.ptr, nbytes, cp.cuda.runtime.memcpyDeviceToDevice,
                                    cp.cuda.get_current_stream().ptr)
        stop.record()
        stop.synchronize()
        ts.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
    return 2 * nbytes / statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    dev = jax.devices()[0]
    print(f"device: {dev.device_kind} ({dev.platform}), jax {jax.__version__}")
    results = {"device": dev.device_kind, "jax": jax.__version__, "shapes": []}
    key = jax.random.PRNGKey(0)
    for rows, n in [(16384, 4096), (32768, 8192)]:
        dt = jnp.bfloat16
        esz = 2
        t_bytes = rows * n * esz
        ks = jax.random.split(key, 4 * K + 1)
        key = ks[0]
        xs = [jax.random.normal(ks[1 + i], (rows, n), jnp.float32).astype(dt) for i in range(K)]
        rs = [jax.random.normal(ks[1 + K + i], (rows, n), jnp.float32).astype(dt) for i in range(K)]
        dys = [jax.random.normal(ks[1 + 2 * K + i], (rows, n), jnp.float32).astype(dt) for i in range(K)]
        g = (1.0 + 0.1 * jax.random.normal(ks[-1], (n,), jnp.float32)).astype(dt)

        ours_fwd = jax.jit(lambda xs, g: [jax_aiter.rms_norm(x, g, EPS) for x in xs])
        xla_fwd = jax.jit(lambda xs, g: [xla_rms(x, g) for x in xs])
        ours_add = jax.jit(lambda xs, rs, g: [jax_aiter.rms_norm_with_add(x, r, g, EPS) for x, r in zip(xs, rs)])
        xla_add = jax.jit(lambda xs, rs, g: [xla_rms_add(x, r, g) for x, r in zip(xs, rs)])

        def bwd_of(f):
            def run(xs, dys, g):
                outs = []
                for x, dy in zip(xs, dys):
                    _, vjp = jax.vjp(f, x, g)
                    outs.append(vjp(dy))
                return outs
            return jax.jit(run)

        ours_bwd = bwd_of(lambda x, g: jax_aiter.rms_norm(x, g, EPS))
        xla_bwd = bwd_of(xla_rms)
        neg = jax.jit(lambda xs: [-x for x in xs])

        # Correctness gate before timing: ours against XLA on the same inputs.
        y0 = ours_fwd(xs[:1], g)[0].astype(jnp.float32)
        y1 = xla_fwd(xs[:1], g)[0].astype(jnp.float32)
        rel = float(jnp.linalg.norm(y0 - y1) / jnp.linalg.norm(y1))
        assert rel < 1e-2, rel

        rows_out = {}
        for name, fn, a, nbytes in [
            ("fwd", ours_fwd, (xs, g), 2 * t_bytes),
            ("fwd_xla", xla_fwd, (xs, g), 2 * t_bytes),
            ("fused_fwd", ours_add, (xs, rs, g), 4 * t_bytes),
            ("fused_fwd_xla", xla_add, (xs, rs, g), 4 * t_bytes),
            ("bwd", ours_bwd, (xs, dys, g), 3 * t_bytes),
            ("bwd_xla", xla_bwd, (xs, dys, g), 3 * t_bytes),
            ("xla_negate", neg, (xs,), 2 * t_bytes),
        ]:
            t, spread = timed(fn, a, K)
            rows_out[name] = {"ms": t * 1e3, "spread_ms": spread * 1e3, "GBps": nbytes / t / 1e9}
        copy_bw = copy_bandwidth_cupy(t_bytes)
        ref_bw = copy_bw if copy_bw else rows_out["xla_negate"]["GBps"] * 1e9
        for v in rows_out.values():
            v["frac_of_copy"] = v["GBps"] * 1e9 / ref_bw
        entry = {"rows": rows, "n": n, "dtype": "bf16", "copy_GBps_cupy_events": copy_bw / 1e9 if copy_bw else None,
                 "ops": rows_out, "rel_err_vs_xla": rel}
        results["shapes"].append(entry)
        print(f"\n[{rows}, {n}] bf16   D2D copy (CuPy events): "
              f"{copy_bw / 1e9 if copy_bw else float('nan'):.0f} GB/s   XLA negate: {rows_out['xla_negate']['GBps']:.0f} GB/s")
        print(f"{'op':<16}{'ms':>9}{'GB/s':>9}{'of copy':>9}   spread ms")
        for k2, v in rows_out.items():
            print(f"{k2:<16}{v['ms']:>9.3f}{v['GBps']:>9.0f}{v['frac_of_copy']:>9.2f}   {v['spread_ms']:.3f}")

    # Per-op overhead: a chain of 200 dependent small RMSNorms in one jit.
    x = jax.random.normal(key, (8, 1024), jnp.float32).astype(jnp.bfloat16)
    g = jnp.ones((1024,), jnp.bfloat16)

    def chain(f):
        def run(x, g):
            for _ in range(200):
                x = f(x, g)
            return x
        return jax.jit(run)

    t_ours, _ = timed(chain(lambda x, g: jax_aiter.rms_norm(x, g, EPS)), (x, g), 200)
    t_xla, _ = timed(chain(xla_rms), (x, g), 200)
    results["chain200"] = {"ours_us": t_ours * 1e6, "xla_us": t_xla * 1e6, "ratio": t_ours / t_xla}
    print(f"\nchain of 200 dependent rms_norm [8,1024] bf16 in one jit: ours {t_ours * 1e6:.2f} us/op, "
          f"XLA {t_xla * 1e6:.2f} us/op, ratio {t_ours / t_xla:.2f}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
