"""FP8 forward attention (flash_attn_func with e4m3 q/k/v and per-tensor descales) against our bf16
forward and cuDNN's bf16 forward, device time (median span, gpu_timing.device_timed), and its
error against float64 of the dequantised inputs on a slice.

    PYTHONPATH=build-gpu/python:benchmarks/gpu python benchmarks/gpu/bench_attention_fp8.py
"""
import jax
import jax.numpy as jnp
import numpy as np

import jax_aiter
from gpu_timing import device_timed

SHAPES = [  # (b, s, hq, hk, d, causal)
    (4, 4096, 32, 8, 128, True),
    (4, 4096, 32, 32, 128, False),
    (1, 16384, 32, 8, 128, True),
]


def main():
    print(jax.devices()[0].device_kind, "jax", jax.__version__)
    f8 = jax_aiter.fp8_dtype()
    for b, s, hq, hk, d, causal in SHAPES:
        keys = jax.random.split(jax.random.key(0), 3)
        q, k, v = (jax.random.normal(kk, (b, s, h, d), jnp.float32)
                   for kk, h in zip(keys, (hq, hk, hk)))
        scales = [jnp.max(jnp.abs(t)) / 448.0 for t in (q, k, v)]
        q8, k8, v8 = (jnp.asarray(t / sc, f8) for t, sc in zip((q, k, v), scales))
        qb, kb, vb = (t.astype(jnp.bfloat16) for t in (q, k, v))
        fns = {
            "ours bf16": (jax.jit(lambda q, k, v: jax_aiter.flash_attn_func(
                q, k, v, causal=causal)), (qb, kb, vb)),
            "ours fp8": (jax.jit(lambda q, k, v, a, bb, c: jax_aiter.flash_attn_func(
                q, k, v, causal=causal, q_descale=a, k_descale=bb, v_descale=c)),
                (q8, k8, v8, *scales)),
            "cudnn bf16": (jax.jit(lambda q, k, v: jax.nn.dot_product_attention(
                q, k, v, is_causal=causal, implementation="cudnn")), (qb, kb, vb)),
        }
        flops = 4.0 * b * hq * s * s * d / (2 if causal else 1)
        times = {}
        for name, (fn, args) in fns.items():
            t, _ = device_timed(fn, args, 1)
            times[name] = t
            print(f"b{b} s{s} hq{hq} hk{hk} d{d} {'causal' if causal else 'full  '} {name:10s} "
                  f"{t * 1e3:8.3f} ms  {flops / t / 1e12:6.1f} TFLOP/s", flush=True)
        print(f"  fp8 / bf16 (ours) speed-up: {times['ours bf16'] / times['ours fp8']:.2f}x",
              flush=True)
        # Error on the first batch row, 2 heads and 512 query rows against float64 of the
        # dequantised inputs.
        rq = 512
        out = np.asarray(fns["ours fp8"][0](*fns["ours fp8"][1])[:1, :rq, :2], np.float64)
        dq, dk, dv = (np.asarray(t8[:1], np.float64) * float(sc)
                      for t8, sc in zip((q8, k8, v8), scales))
        heads = [0, 1] if hq == hk else [0, 0]  # q heads 0 and 1 read kv head 0 under GQA
        kk, vv = dk[:, :, heads], dv[:, :, heads]
        logits = np.einsum("bqhd,bkhd->bhqk", dq[:, :rq, :2], kk) / np.sqrt(d)
        if causal:
            logits = np.where(np.arange(rq)[:, None] >= np.arange(s)[None, :], logits, -np.inf)
        p = np.exp(logits - logits.max(-1, keepdims=True))
        ref = np.einsum("bhqk,bkhd->bqhd", p / p.sum(-1, keepdims=True), vv)
        print(f"  fp8 max |err| {np.abs(out - ref).max():.3g} (max |ref| {np.abs(ref).max():.3g})",
              flush=True)


if __name__ == "__main__":
    main()
