"""Quantized GEMMs on a GPU through JAX: ours (the portable tier on sm_90, and optionally an ASM
plan through its ABI twins) against XLA's own dots, in the same run.

Run from the repository root on a CUDA machine, with the build tree's package on the path:
    PYTHONPATH=build-gpu/python python benchmarks/gpu/bench_quant_gemm.py [--out r.json]
        [--ops i8,fp8_blockscale,...] [--shapes MxNxK,...]

Each op gets the same bf16 inputs, quantized its own way (per-token / per-channel int8,
per-128-block fp8, MX fp4). Baselines, both XLA on the same device:
  xla_fp8   XLA's scaled fp8 dot: e4m3fn a[M,K] . b[N,K]^T with f32 accumulation, times per-token
            and per-channel scales, bf16 out (the fp8 throughput the issue names: cuBLASLt fp8)
  xla_bf16  XLA's bf16 dot of the dequantized operands (the same math in bf16)
Shapes: 4096^3 and 8192^3 (compute-bound: TFLOP/s, goal >= 0.9x xla_fp8) and the decode shapes M in
{1, 16, 128} x (N, K) in {(4096, 4096), (8192, 28672)} (memory-bound: the weight read, N*K bytes
for 8-bit weights and N*K/2 for fp4 plus its scales, against the device-to-device copy bandwidth
measured with CUDA events in the same run; goal >= 0.9x). Inputs rotate among K sets
(gpu_timing.py) unless that would not fit; times are device spans from the profiler, medians.
"""
import argparse
import json
import os

import jax
import jax.numpy as jnp

import jax_aiter
from gpu_timing import K, copy_bandwidth_events, device_timed, timed

LARGE = [(4096, 4096, 4096), (8192, 8192, 8192)]
DECODE = [(m, n, k) for m in (1, 16, 128) for (n, k) in ((4096, 4096), (8192, 28672))]
F32, BF16, FP8 = jnp.float32, jnp.bfloat16, jnp.float8_e4m3fn


def dot_nt(a, b, out=F32):
    return jax.lax.dot_general(a, b, (((1,), (1,)), ((), ())), preferred_element_type=out)


def per_row_fp8(x):
    """e4m3fn per row of x [R, K] (scale = max|x| / 448) -> (fp8 [R, K], f32 [R, 1])."""
    s = jnp.maximum(jnp.max(jnp.abs(x), axis=1, keepdims=True), 1e-12) / 448.0
    return (x / s).astype(FP8), s.astype(F32)


def xla_fp8(a, b, sa, sb):
    return (dot_nt(a, b) * sa * sb.reshape(1, -1)).astype(BF16)


def xla_bf16(a, b):
    return dot_nt(a, b).astype(BF16)


# ---- each op: quantize the bf16 inputs its own way; its call; its dequantized operands --------
# prepare(x [M,K] f32, w [N,K] f32) -> (ours args tuple, fn(*args), (a_deq, w_deq) bf16, weight
# bytes read). Skipped when the package lacks the op.

def prep_i8(x, w):
    xq, sx = jax_aiter.quantize_per_token(x)
    wq, sw = jax_aiter.quantize_per_channel(w)
    ws = jax_aiter.shuffle_weight(wq)
    deq = ((xq.astype(F32) * sx).astype(BF16), (wq.astype(F32) * sw.reshape(-1, 1)).astype(BF16))
    return (xq, ws, sx, sw), jax_aiter.gemm_i8, deq, wq.size


def _fp8_blocks(x, w):
    """Per-(token, 128) and per-128x128 fp8 of x and w (quant.py), and their dequantized bf16."""
    xq, sx = jax_aiter.quantize_fp8_per_token_block(x, FP8)
    wq, sw = jax_aiter.quantize_fp8_per_block(w, FP8)
    xd = xq.astype(F32) * jnp.repeat(sx, 128, axis=1)
    wd = wq.astype(F32) * jnp.repeat(jnp.repeat(sw, 128, axis=0), 128, axis=1)
    return xq, sx, wq, sw, (xd.astype(BF16), wd.astype(BF16))


def prep_fp8_blockscale(x, w):
    xq, sx, wq, sw, deq = _fp8_blocks(x, w)
    args = (xq, jax_aiter.shuffle_weight(wq, jax_aiter.FP8BS_LAYOUT), sx, sw)
    return args, jax_aiter.gemm_fp8_blockscale, deq, wq.size


def prep_fp8_mi350(x, w):
    xq, sx, wq, sw, deq = _fp8_blocks(x, w)
    return ((xq, jax_aiter.shuffle_weight(wq), sx.T, sw), jax_aiter.gemm_fp8_mi350, deq, wq.size)


def prep_flatmm(x, w):
    xq, sx, wq, sw, deq = _fp8_blocks(x, w)
    return ((xq, jax_aiter.shuffle_weight(wq, "flatmm"), sx.T, sw.T), jax_aiter.flatmm_fp8, deq,
            wq.size)


def prep_fp4(x, w):
    xq, xs = jax_aiter.quantize_mxfp4(x)
    wq, ws = jax_aiter.quantize_mxfp4(w)
    deq = (jax_aiter.dequantize_mxfp4(xq, xs).astype(BF16),
           jax_aiter.dequantize_mxfp4(wq, ws).astype(BF16))
    args = (xq, jax_aiter.shuffle_fp4_weight(wq), xs, jax_aiter.shuffle_weight(ws, "e8m0_shuffle"))
    return args, jax_aiter.gemm_fp4, deq, wq.size + ws.size


OPS = {"i8": prep_i8, "fp8_blockscale": prep_fp8_blockscale, "fp8_mi350": prep_fp8_mi350,
       "flatmm_fp8": prep_flatmm, "fp4": prep_fp4}
# Shapes an op's portable sm_90 kernel is too slow to time within a run: (op, M x N x K).
SKIP = {("fp4", (8192, 8192, 8192))}  # FMA-only FP4 kernel (no tensor cores yet): ~0.1 s a call


def measure(fn, args, sets):
    wall, _ = timed(fn, args, sets)
    try:
        t, per_kernel = device_timed(fn, args, sets)
    except Exception as e:  # noqa: BLE001 (profiler API moved: fall back to wall time)
        print(f"  (device timing unavailable: {e!r})")
        t, per_kernel = None, {}
    return {"ms": (t or wall) * 1e3, "clock": "device" if t else "wall", "wall_ms": wall * 1e3,
            "kernels_us": {nm: s * 1e6 for nm, s in per_kernel.items()}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--shapes", default="", help="comma-separated MxNxK")
    args = ap.parse_args()
    shapes = ([tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
              if args.shapes else LARGE + DECODE)
    dev = jax.devices()[0]
    print(f"device: {dev.device_kind} ({dev.platform}), jax {jax.__version__}, "
          f"XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}")
    copy_bw = copy_bandwidth_events(256 << 20)
    print(f"D2D copy (CUDA events, 256 MiB): {copy_bw / 1e9 if copy_bw else float('nan'):.0f} GB/s")
    results = {"device": dev.device_kind, "jax": jax.__version__,
               "copy_GBps": copy_bw / 1e9 if copy_bw else None, "runs": []}
    key = jax.random.PRNGKey(0)
    print(f"{'op':>15} {'M x N x K':>17} {'ms':>8} {'TFLOP/s':>8} {'W GB/s':>7} {'of copy':>7} "
          f"{'xla_fp8 ms':>10} {'xla_bf16 ms':>11} {'vs fp8':>7} {'rel err':>8}")
    for m, n, k in shapes:
        big = m * k * 4 + n * k * 4 > (1 << 30)
        sets = 1 if big else K
        keys = jax.random.split(key, 2 * sets + 1)
        key = keys[0]
        xs = [jax.random.normal(keys[1 + i], (m, k), F32) for i in range(sets)]
        ws = [jax.random.normal(keys[1 + sets + i], (n, k), F32) / k ** 0.5 for i in range(sets)]
        # XLA's fp8 and bf16 dots on the same shapes (per-row scaled fp8; bf16 of the inputs).
        q8 = [(*per_row_fp8(x), *per_row_fp8(w)) for x, w in zip(xs, ws)]
        f8_args = ([a for a, _, _, _ in q8], [b for _, _, b, _ in q8], [s for _, s, _, _ in q8],
                   [s for _, _, _, s in q8])
        f8 = jax.jit(lambda A, B, SA, SB: [xla_fp8(*t) for t in zip(A, B, SA, SB)])
        base = {"xla_fp8": measure(f8, f8_args, sets)}
        flops = 2.0 * m * n * k
        for op in [o for o in args.ops.split(",") if o]:
            if (op, (m, n, k)) in SKIP:
                print(f"{op:>15} {f'{m}x{n}x{k}':>17} skipped (SKIP)")
                continue
            try:
                prepped = [OPS[op](x, w) for x, w in zip(xs, ws)]
            except (AttributeError, ImportError) as e:
                print(f"{op:>15} skipped: {e}")
                continue
            fn = prepped[0][1]
            ours = jax.jit(lambda A: [fn(*a) for a in A])
            bf = jax.jit(lambda D: [xla_bf16(a, b) for a, b in D])
            ours_args, deq = [p[0] for p in prepped], [p[2] for p in prepped]
            y = ours(ours_args[:1])[0].astype(F32)
            ref = bf(deq[:1])[0].astype(F32)
            rel = float(jnp.linalg.norm(y - ref) / jnp.linalg.norm(ref))
            assert rel < 2e-2, (op, m, n, k, rel)  # the same dequantized math, bf16-rounded
            o = measure(ours, (ours_args,), sets)
            b16 = measure(bf, (deq,), sets)
            wbytes = prepped[0][3]
            o["TFLOPs"] = flops / o["ms"] * 1e-9
            o["weight_GBps"] = wbytes / o["ms"] * 1e-6
            frac = o["weight_GBps"] * 1e9 / copy_bw if copy_bw else float("nan")
            results["runs"].append({"op": op, "m": m, "n": n, "k": k, "sets": sets,
                                    "rel_err_vs_bf16_dequant": rel, "ours": o, "xla_bf16": b16,
                                    **base, "weight_frac_of_copy": frac})
            print(f"{op:>15} {f'{m}x{n}x{k}':>17} {o['ms']:>8.4f} {o['TFLOPs']:>8.1f} "
                  f"{o['weight_GBps']:>7.0f} {frac:>7.2f} {base['xla_fp8']['ms']:>10.4f} "
                  f"{b16['ms']:>11.4f} {base['xla_fp8']['ms'] / o['ms']:>7.3f} {rel:>8.1e}")
            if len(o["kernels_us"]) > 1:
                print("    kernels (us per op): " + ", ".join(
                    f"{nm[:40]} {us:.1f}" for nm, us in o["kernels_us"].items()))
        x8 = base["xla_fp8"]
        print(f"{'(xla_fp8)':>15} {f'{m}x{n}x{k}':>17} {x8['ms']:>8.4f} "
              f"{flops / x8['ms'] * 1e-9:>8.1f}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
