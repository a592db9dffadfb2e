#!/usr/bin/env python3
"""gemm_fp4 (portable tier on CUDA: FP4 decoded in the kernel, plain FMAs) against XLA's bf16 dot
of the same dequantized operands. Median of wall-clock timings of jitted calls."""
import time

import jax
import jax.numpy as jnp
import numpy as np

from jax_aiter.gemm_fp4 import dequantize_mxfp4, gemm_fp4, quantize_mxfp4, shuffle_fp4_weight
from jax_aiter.quant import shuffle_weight


def timeit(f, *args, iters=10):
    jax.block_until_ready(f(*args))
    ts = []
    for _ in range(iters):
        t = time.perf_counter()
        jax.block_until_ready(f(*args))
        ts.append(time.perf_counter() - t)
    return float(np.median(ts))


print(jax.devices())
shapes = [(1, 4096, 4096), (16, 4096, 4096), (128, 4096, 4096), (1, 8192, 28672),
          (128, 8192, 28672), (8192, 8192, 8192)]
key = jax.random.PRNGKey(0)
for m, n, k in shapes:
    x = jax.random.normal(key, (m, k), jnp.float32)
    w = jax.random.normal(key, (n, k), jnp.float32)
    xq, xs = quantize_mxfp4(x)
    wq, ws = quantize_mxfp4(w)
    w4, ws4 = shuffle_fp4_weight(wq), shuffle_weight(ws, "e8m0_shuffle")
    f = jax.jit(lambda a, b, sa, sb: gemm_fp4(a, b, sa, sb))
    xd = dequantize_mxfp4(xq, xs).astype(jnp.bfloat16)
    wd = dequantize_mxfp4(wq, ws).astype(jnp.bfloat16)
    g = jax.jit(lambda a, b: jnp.dot(a, b.T, preferred_element_type=jnp.float32)
                .astype(jnp.bfloat16))
    iters = 2 if m * n * k > 1e11 else 10
    t4 = timeit(f, xq, w4, xs, ws4, iters=iters)
    tb = timeit(g, xd, wd, iters=iters)
    flop = 2.0 * m * n * k
    wbytes = n * k / 2 + n * k / 32
    diff = f(xq, w4, xs, ws4).astype(jnp.float32) - g(xd, wd).astype(jnp.float32)
    err = float(jnp.max(jnp.abs(diff)))
    print(f"M={m:5d} N={n:5d} K={k:5d}: gemm_fp4 {t4*1e3:8.3f} ms ({flop/t4/1e12:6.2f} TFLOP/s, "
          f"{wbytes/t4/1e9:7.1f} GB/s of fp4 weight) | XLA bf16 dot {tb*1e3:8.3f} ms "
          f"({flop/tb/1e12:6.1f} TFLOP/s) | max |diff| {err:.3g}", flush=True)
