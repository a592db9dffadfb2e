"""XLA's scaled fp8 dot alone, the quantized GEMMs' anchor (bench_quant_gemm.py's xla_fp8), for
runs where the jax_aiter package is not built (e.g. beside tests/gpu/cuda_gemm_i8_kernels).

    python3 benchmarks/gpu/bench_xla_fp8_dot.py [--shapes MxNxK,...]

e4m3fn a[M,K] . b[N,K]^T, f32 accumulation, times per-token and per-channel f32 scales, bf16 out;
device time (gpu_timing.device_timed), input sets rotated as bench_quant_gemm.py does.
"""
import argparse

import jax
import jax.numpy as jnp

from gpu_timing import K, device_timed

F32, BF16, FP8 = jnp.float32, jnp.bfloat16, jnp.float8_e4m3fn
SHAPES = "8192x8192x8192,4096x4096x4096,128x8192x28672,128x4096x4096,1x8192x28672,16x8192x28672"


def xla_fp8(a, b, sa, sb):
    d = jax.lax.dot_general(a, b, (((1,), (1,)), ((), ())), preferred_element_type=F32)
    return (d * sa * sb.reshape(1, -1)).astype(BF16)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default=SHAPES)
    shapes = [tuple(int(v) for v in s.split("x")) for s in ap.parse_args().shapes.split(",")]
    print(f"device: {jax.devices()[0].device_kind}, jax {jax.__version__}")
    key = jax.random.PRNGKey(0)
    for m, n, k in shapes:
        sets = 1 if m * k + n * k > (1 << 30) else K
        keys = jax.random.split(key, 2 * sets + 1)
        key = keys[0]
        a = [jax.random.normal(keys[1 + i], (m, k), BF16).astype(FP8) for i in range(sets)]
        b = [jax.random.normal(keys[1 + sets + i], (n, k), BF16).astype(FP8) for i in range(sets)]
        sa = [jnp.full((m, 1), 1e-2, F32) for _ in range(sets)]
        sb = [jnp.full((n,), 1e-2, F32) for _ in range(sets)]
        f = jax.jit(lambda A, B, SA, SB: [xla_fp8(*t) for t in zip(A, B, SA, SB)])
        t, _ = device_timed(f, (a, b, sa, sb), sets)
        ms = t * 1e3 if t else float("nan")
        print(f"xla_fp8 {m}x{n}x{k}: {ms:.4f} ms {2.0 * m * n * k / (ms * 1e-3) / 1e12:.1f} TFLOP/s "
              f"({sets} sets)")


if __name__ == "__main__":
    main()
