"""BF16 GEMM on a GPU through JAX: ours (jax_aiter.gemm, the portable tier on sm_90) against XLA's
own dot (cuBLAS) of the same math, in the same run.

Run from the repository root on a CUDA machine, with the build tree's package on the path:
    PYTHONPATH=build-gpu/python python benchmarks/gpu/bench_gemm.py [--out results.json]

out[M,N] = a[M,K] . b[N,K]^T, bf16 in and out, fp32 accumulation on both sides (XLA:
dot_general contracting K of both operands, no transpose materialised). Shapes: 4096^3 and
8192^3 (compute-bound: TFLOP/s), and the decode shapes M in {1, 16, 128} x (N, K) in
{(4096, 4096), (8192, 28672)} (memory-bound: the weight read, N*K*2 bytes, against the
device-to-device copy bandwidth measured with CUDA events in the same run). Inputs are random,
rotated among K sets (gpu_timing.py); times are device spans from the profiler, medians.
"""
import argparse
import json
import os

import jax
import jax.numpy as jnp
import numpy as np

import jax_aiter
from gpu_timing import K, copy_bandwidth_events, device_timed, timed

LARGE = [(4096, 4096, 4096), (8192, 8192, 8192)]
DECODE = [(m, n, k) for m in (1, 16, 128) for (n, k) in ((4096, 4096), (8192, 28672))]


def xla_gemm(a, b):
    return jax.lax.dot_general(a, b, (((1,), (1,)), ((), ())),
                               preferred_element_type=jnp.float32).astype(a.dtype)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--shapes", default="",
                    help="comma-separated MxNxK (default: the large and decode shapes)")
    args = ap.parse_args()
    shapes = ([tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
              if args.shapes else LARGE + DECODE)
    dev = jax.devices()[0]
    print(f"device: {dev.device_kind} ({dev.platform}), jax {jax.__version__}, "
          f"XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}")
    copy_bw = copy_bandwidth_events(256 << 20)
    print(f"D2D copy (CUDA events, 256 MiB): {copy_bw / 1e9 if copy_bw else float('nan'):.0f} GB/s")
    results = {"device": dev.device_kind, "jax": jax.__version__,
               "copy_GBps": copy_bw / 1e9 if copy_bw else None, "shapes": []}
    key = jax.random.PRNGKey(0)
    print(f"{'M x N x K':>20} {'ours ms':>9} {'TFLOP/s':>8} {'GB/s':>7} {'XLA ms':>9} "
          f"{'TFLOP/s':>8} {'GB/s':>7} {'ours/XLA':>9} {'rel err':>8}")
    for m, n, k in shapes:
        keys = jax.random.split(key, 2 * K + 1)
        key = keys[0]
        sets = 1 if m * k * 2 + n * k * 2 > (2 << 30) else K
        a_s = [jax.random.uniform(keys[1 + i], (m, k), jnp.float32, -1, 1).astype(jnp.bfloat16)
               for i in range(sets)]
        b_s = [jax.random.uniform(keys[1 + K + i], (n, k), jnp.float32, -1, 1).astype(jnp.bfloat16)
               for i in range(sets)]
        ours = jax.jit(lambda a_s, b_s: [jax_aiter.gemm(a, b) for a, b in zip(a_s, b_s)])
        xla = jax.jit(lambda a_s, b_s: [xla_gemm(a, b) for a, b in zip(a_s, b_s)])
        # Correctness gate before timing: ours against XLA (both bf16 out) on the same inputs.
        y0 = ours(a_s[:1], b_s[:1])[0].astype(jnp.float32)
        y1 = xla(a_s[:1], b_s[:1])[0].astype(jnp.float32)
        rel = float(jnp.linalg.norm(y0 - y1) / jnp.linalg.norm(y1))
        assert rel < 1e-2, rel
        entry = {"m": m, "n": n, "k": k, "sets": sets, "rel_err_vs_xla": rel}
        flops, weight_bytes = 2.0 * m * n * k, 2.0 * n * k
        for name, fn in (("ours", ours), ("xla", xla)):
            wall, _ = timed(fn, (a_s, b_s), sets)
            try:
                t, per_kernel = device_timed(fn, (a_s, b_s), sets)
            except Exception as e:  # noqa: BLE001 (profiler API moved: fall back to wall time)
                print(f"  (device timing unavailable: {e!r})")
                t, per_kernel = None, {}
            clock = "device" if t else "wall"
            t = t or wall
            entry[name] = {"ms": t * 1e3, "clock": clock, "wall_ms": wall * 1e3,
                           "TFLOPs": flops / t / 1e12, "weight_GBps": weight_bytes / t / 1e9,
                           "kernels_us": {nm: s * 1e6 for nm, s in per_kernel.items()}}
        if copy_bw:
            for name in ("ours", "xla"):
                entry[name]["weight_frac_of_copy"] = entry[name]["weight_GBps"] * 1e9 / copy_bw
        results["shapes"].append(entry)
        o, x = entry["ours"], entry["xla"]
        print(f"{f'{m}x{n}x{k}':>20} {o['ms']:>9.4f} {o['TFLOPs']:>8.1f} {o['weight_GBps']:>7.0f} "
              f"{x['ms']:>9.4f} {x['TFLOPs']:>8.1f} {x['weight_GBps']:>7.0f} "
              f"{o['ms'] / x['ms']:>9.3f} {rel:>8.1e}")
        if len(o["kernels_us"]) > 1:
            print("    ours kernels (us per op): " + ", ".join(
                f"{nm[:36]} {us:.1f}" for nm, us in o["kernels_us"].items()))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
