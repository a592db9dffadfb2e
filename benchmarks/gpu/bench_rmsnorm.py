"""RMSNorm on a GPU through JAX: our kernels against XLA's own fusion of the same math.

Run from the repository root on a CUDA machine, with the build tree's package on the path:
    PYTHONPATH=build/python python benchmarks/gpu/bench_rmsnorm.py [--out results.json]

Method (../.library/device/METHOD.md): inputs are random (never zeros), rotated among sets larger
than L2 together; each timed call is one jitted program applying the op once to each of K input
sets, so K ops run back to back. Two clocks, medians over R calls after warm-up:
  * device: the GPU's own timestamps of every kernel (CUPTI, through JAX's profiler, the same
    clock CUDA events read): a call's span from its first kernel's start to its last kernel's end,
    divided by K. This is the number reported as GB/s.
  * wall: host time of a call up to block_until_ready, divided by K (includes launch overhead).
The copy reference is a device-to-device cuMemcpyDtoDAsync timed with CUDA events (driver API
through ctypes), and XLA's elementwise negation (the same bytes as a copy) timed like the ops.
Bytes counted are the fewest an op must move: each input read once, each output written once.
"""
import argparse
import json
import os

import jax
import jax.numpy as jnp

import jax_aiter
from gpu_timing import K, copy_bandwidth_events, device_timed, timed

EPS = 1e-6


def xla_rms(x, g):
    x32 = x.astype(jnp.float32)
    r = jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + EPS)
    return (x32 * r * g.astype(jnp.float32)).astype(x.dtype)


def xla_rms_add(x, res, g):
    s = (x.astype(jnp.float32) + res.astype(jnp.float32)).astype(x.dtype)
    return xla_rms(s, g), s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--shapes", default="16384x4096,32768x8192",
                    help="comma-separated ROWSxN (small ones for a smoke test on CPU)")
    ap.add_argument("--chain-n", type=int, default=1024)
    args = ap.parse_args()
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",") if s]
    dev = jax.devices()[0]
    xla_flags = os.environ.get("XLA_FLAGS", "")
    print(f"device: {dev.device_kind} ({dev.platform}), jax {jax.__version__}, XLA_FLAGS={xla_flags!r}")
    results = {"device": dev.device_kind, "jax": jax.__version__, "xla_flags": xla_flags,
               "shapes": []}
    key = jax.random.PRNGKey(0)
    for rows, n in shapes:
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
            wall, spread = timed(fn, a, K)
            try:
                dev_t, per_kernel = device_timed(fn, a, K)
            except Exception as e:  # noqa: BLE001  (profiler API moved: fall back to wall time)
                print(f"  (device timing unavailable: {e!r})")
                dev_t, per_kernel = None, {}
            t = dev_t if dev_t else wall
            rows_out[name] = {"ms": t * 1e3, "clock": "device" if dev_t else "wall",
                              "wall_ms": wall * 1e3, "wall_spread_ms": spread * 1e3,
                              "GBps": nbytes / t / 1e9,
                              "kernels_us": {nm: sec * 1e6 for nm, sec in per_kernel.items()}}
        copy_bw = copy_bandwidth_events(t_bytes)
        ref_bw = copy_bw if copy_bw else rows_out["xla_negate"]["GBps"] * 1e9
        for v in rows_out.values():
            v["frac_of_copy"] = v["GBps"] * 1e9 / ref_bw
        entry = {"rows": rows, "n": n, "dtype": "bf16",
                 "copy_GBps_events": copy_bw / 1e9 if copy_bw else None,
                 "ops": rows_out, "rel_err_vs_xla": rel}
        results["shapes"].append(entry)
        print(f"\n[{rows}, {n}] bf16   D2D copy (CUDA events): "
              f"{copy_bw / 1e9 if copy_bw else float('nan'):.0f} GB/s   XLA negate: "
              f"{rows_out['xla_negate']['GBps']:.0f} GB/s")
        print(f"{'op':<16}{'ms':>9}{'GB/s':>9}{'of copy':>9}{'wall ms':>10}  clock")
        for k2, v in rows_out.items():
            print(f"{k2:<16}{v['ms']:>9.4f}{v['GBps']:>9.0f}{v['frac_of_copy']:>9.3f}"
                  f"{v['wall_ms']:>10.3f}  {v['clock']}")
        print("ours / XLA (time): " + ", ".join(
            f"{op} {rows_out[op]['ms'] / rows_out[op + '_xla']['ms']:.4f}"
            for op in ("fwd", "fused_fwd", "bwd")))
        for k2, v in rows_out.items():
            if len(v["kernels_us"]) > 1:
                parts = ", ".join(f"{nm[:40]} {us:.1f}" for nm, us in v["kernels_us"].items())
                print(f"  {k2} kernels (us per op): {parts}")

    # Per-op overhead: a chain of 200 dependent small RMSNorms in one jit (wall time / 200). Left
    # alone, XLA fuses its whole jnp chain into one kernel; an optimization_barrier between steps
    # keeps one kernel per step, as ours must be, so the two cost the same kind of thing. The fused
    # number is printed too, for what it is.
    x = jax.random.normal(key, (8, args.chain_n), jnp.float32).astype(jnp.bfloat16)
    g = jnp.ones((args.chain_n,), jnp.bfloat16)

    def chain(f, barrier=True):
        def run(x, g):
            for _ in range(200):
                x = f(x, g)
                if barrier:
                    x = jax.lax.optimization_barrier(x)
            return x
        return jax.jit(run)

    ours = lambda x, g: jax_aiter.rms_norm(x, g, EPS)
    t_ours, _ = timed(chain(ours), (x, g), 200)
    t_ours_plain, _ = timed(chain(ours, barrier=False), (x, g), 200)
    t_xla, _ = timed(chain(xla_rms), (x, g), 200)
    t_fused, _ = timed(chain(xla_rms, barrier=False), (x, g), 200)
    results["chain200"] = {"ours_us": t_ours * 1e6, "xla_one_kernel_per_step_us": t_xla * 1e6,
                           "ratio": t_ours / t_xla, "ours_without_barriers_us": t_ours_plain * 1e6,
                           "xla_whole_chain_fused_us": t_fused * 1e6}
    # Where a step's time goes on the device (kernel durations against the span of the chain).
    # Under the profiler XLA drops command buffers unless
    # --xla_enable_command_buffers_during_profiling=true is in XLA_FLAGS.
    for name, fn in (("ours", chain(ours)), ("xla", chain(xla_rms))):
        try:
            span, per_kernel = device_timed(fn, (x, g), 200)
        except Exception as e:  # noqa: BLE001
            print(f"  (device timing unavailable: {e!r})")
            span, per_kernel = None, {}
        if span:
            busy = sum(per_kernel.values())
            results["chain200"][f"{name}_device_us"] = {"span": span * 1e6, "kernels": busy * 1e6}
            print(f"  chain device time per step ({name}): span {span * 1e6:.2f} us, in kernels "
                  f"{busy * 1e6:.2f} us ({len(per_kernel)} kernel names)")
    print(f"\nchain of 200 dependent rms_norm [8,{args.chain_n}] bf16 in one jit, us per step:\n"
          f"  with a barrier between steps: ours {t_ours * 1e6:.2f}, XLA (one kernel a step) "
          f"{t_xla * 1e6:.2f}, ratio {t_ours / t_xla:.2f}\n"
          f"  without: ours {t_ours_plain * 1e6:.2f}, XLA (fuses the whole chain into one kernel) "
          f"{t_fused * 1e6:.2f}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
