"""Fused MoE on a GPU (jax_aiter.fused_moe, its portable tier on sm_90) against the same layer in
jnp (padded to the largest expert group: jnp_moe), at DeepSeek-V3's expert shape, in one run.

Run from the repository root on a CUDA machine, the build tree's package on the path:
    PYTHONPATH=build-gpu/python python benchmarks/gpu/bench_fused_moe.py [--tokens 1 128 4096]

Shape: hidden 7168, 256 experts, top-8, inter 2048 (w1 [256, 4096, 7168], w2 [256, 7168, 2048]).
Routing: uniform random top-8. Modes: bf16, and FP8 block-scale (1x128 activations, 128x128
weights) against the jnp layer on the dequantized bf16 weights (XLA has no block-scaled fp8 dot).
Times: the profiler's device span of a call, median (gpu_timing.py). Decode goal (issue 26): one
token within 1.2x the time the copy bandwidth takes to read its 8 experts' weights.
"""
import argparse
import functools

import jax
import jax.numpy as jnp
import numpy as np

import jax_aiter
from gpu_timing import copy_bandwidth_events, device_timed

HIDDEN, EXPERTS, TOPK, INTER = 7168, 256, 8, 2048
BF16 = jnp.bfloat16


def jnp_moe(x, w1, w2, tw, ids, capacity):
    """The layer in jnp as a jnp user writes it on GPUs: the (token, expert) entries sorted by
    expert and padded to the largest group (C), two batched dots over [E, C, .], the weighted sum
    back. (jax.lax.ragged_dot lowers to a dense dot over E*K on GPUs with jax 0.11: 112 GB here.)"""
    t, k = ids.shape
    e = w1.shape[0]
    flat = ids.reshape(-1)
    order = jnp.argsort(flat, stable=True)
    sizes = jnp.bincount(flat, length=e)
    starts = jnp.cumsum(sizes) - sizes
    pos = jnp.arange(capacity)
    slot = jnp.clip(starts[:, None] + pos[None, :], 0, t * k - 1)  # [E, C] sorted entries
    valid = pos[None, :] < sizes[:, None]
    entry = order[slot]
    xp = jnp.where(valid[..., None], x[entry // k], 0)
    h = jnp.einsum("ech,enh->ecn", xp, w1, preferred_element_type=jnp.float32)
    a = (jax.nn.silu(h[..., :INTER]) * h[..., INTER:]).astype(x.dtype)
    o = jnp.einsum("eci,ehi->ech", a, w2, preferred_element_type=jnp.float32)
    wgt = jnp.where(valid, tw.reshape(-1)[entry], 0.0)[..., None]
    out = jnp.zeros((t, x.shape[1]), jnp.float32).at[(entry // k).reshape(-1)].add(
        (o * wgt).reshape(-1, x.shape[1]))
    return out.astype(x.dtype)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, nargs="+", default=[1, 128, 4096])
    ap.add_argument("--modes", nargs="+", default=["bf16", "fp8_blockscale"])
    args = ap.parse_args()
    dev = jax.devices()[0]
    print(f"device: {dev.device_kind}, jax {jax.__version__}")
    copy_bw = copy_bandwidth_events(256 << 20)
    print(f"D2D copy (CUDA events, 256 MiB): {copy_bw / 1e9:.0f} GB/s")
    key = jax.random.PRNGKey(0)
    k1, k2, k3 = jax.random.split(key, 3)
    # bf16 straight away: an f32 w1 alone would be 30 GB.
    w1 = jax.jit(lambda k: jax.random.normal(k, (EXPERTS, 2 * INTER, HIDDEN), BF16) / 85)(k1)
    w2 = jax.jit(lambda k: jax.random.normal(k, (EXPERTS, HIDDEN, INTER), BF16) / 45)(k2)
    q = {}
    if "fp8_blockscale" in args.modes:
        # One expert at a time (lax.map): the quantizer's f32 copy of all of w1 would be 30 GB.
        quant = jax.jit(lambda w: jax.lax.map(jax_aiter.quantize_fp8_per_block, w))
        q1, s1 = quant(w1)
        q2, s2 = quant(w2)
        q = dict(q1=q1, s1=s1, q2=q2, s2=s2)
    rng = np.random.default_rng(0)
    print(f"{'mode':>15} {'tokens':>6} {'ours ms':>9} {'jnp ms':>9} {'jnp/ours':>8} {'rel err':>8}"
          f" {'GB/s of the experts read':>26}")
    for t in args.tokens:
        ids = jnp.asarray(np.stack([rng.choice(EXPERTS, TOPK, replace=False) for _ in range(t)]),
                          jnp.int32)
        tw = jax.nn.softmax(jax.random.normal(k3, (t, TOPK)), -1)
        x = jax.random.normal(jax.random.fold_in(k3, t), (t, HIDDEN), jnp.float32).astype(BF16)
        distinct = len(np.unique(np.asarray(ids)))
        for mode in args.modes:
            if mode == "bf16":
                ours = jax.jit(lambda x, w1, w2, tw, ids: jax_aiter.fused_moe(x, w1, w2, tw, ids))
                oargs = (x, w1, w2, tw, ids)
                wbytes = distinct * (w1[0].size + w2[0].size) * 2
            else:
                ours = jax.jit(lambda x, q1, q2, tw, ids, s1, s2: jax_aiter.fused_moe(
                    x, q1, q2, tw, ids, quant="fp8_blockscale", w1_scale=s1, w2_scale=s2))
                oargs = (x, q["q1"], q["q2"], tw, ids, q["s1"], q["s2"])
                wbytes = distinct * (w1[0].size + w2[0].size)
            cap = int(np.bincount(np.asarray(ids).ravel(), minlength=EXPERTS).max())
            ref = jax.jit(functools.partial(jnp_moe, capacity=cap))
            rargs = (x, w1, w2, tw, ids)
            got, want = ours(*oargs), ref(*rargs)
            err = float(jnp.linalg.norm((got - want).astype(jnp.float32)) /
                        jnp.linalg.norm(want.astype(jnp.float32)))
            t_ours, _ = device_timed(ours, oargs, 1)
            t_ref, _ = device_timed(ref, rargs, 1)
            gbs = wbytes / t_ours / 1e9 if t_ours else float("nan")
            print(f"{mode:>15} {t:6d} {t_ours * 1e3:9.3f} {t_ref * 1e3:9.3f} "
                  f"{t_ref / t_ours:8.2f} {err:8.1e} {gbs:10.0f} ({gbs * 1e9 / copy_bw:.2f} of copy)")


if __name__ == "__main__":
    main()
