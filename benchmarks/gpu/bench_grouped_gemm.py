"""Grouped GEMM on a GPU through JAX: ours (jax_aiter.grouped_gemm, the portable tier) against
XLA's ragged dot of the same math, forward and forward + backward, in the same run.

Run from the repository root on a CUDA (or ROCm) machine, with the build tree's package on the
path:
    PYTHONPATH=build-gpu/python python benchmarks/gpu/bench_grouped_gemm.py [--out results.json]

Shapes: DeepSeek-V3's routed experts (hidden 7168, moe_intermediate 2048, 256 experts, top-8)
at 4096 tokens, i.e. M = 4096 * 8 = 32768 rows grouped by expert. The routing is random top-8
(seed 0; about 128 rows an expert, a few more or fewer). The layer's two expert GEMMs:
    up    x [M, 7168] . w1[g]^T    w1 [256, 4096, 7168]   (gate and up fused: 2 x 2048)
    down  h [M, 2048] . w2[g]^T    w2 [256, 7168, 2048]
bf16 in and out, fp32 accumulation on both sides. XLA gets the same w [G, N, K] through
jax.lax.ragged_dot_general (contracting w's dim 2: no transpose of ours to pay for); with
--xla-rhs gkn it gets jax.lax.ragged_dot on a [G, K, N] copy made once, outside the timing (its
canonical layout; 15 GB more memory for w1). The backward: ours is the custom VJP (dgrad with w
read transposed, wgrad over each group's rows); XLA's is its transpose of the ragged dot.

Memory: w1 alone is 15 GB in bf16, its gradient 15 GB more: the up GEMM's forward + backward
needs about 35 GB beside XLA's own buffers. --experts E runs E experts at M = tokens * top-k
(~ M / E rows an expert), --tokens, --topk, --hidden, --inter scale the rest (a CPU smoke run:
--experts 4 --tokens 64 --topk 2 --hidden 256 --inter 128), --gemm picks up, down or both.

Times are device spans from the profiler (gpu_timing.device_timed; medians of 30 calls, one
input set: the weights are far larger than L2 anyway). TFLOP/s count 2 M N K per GEMM (M the
rows the groups cover), 3x that forward + backward.
"""
import argparse
import json
import os

import jax
import jax.numpy as jnp
import numpy as np

import jax_aiter
from gpu_timing import device_timed, timed

HIDDEN, INTER, EXPERTS, TOPK, TOKENS = 7168, 2048, 256, 8, 4096
BF16, F32 = jnp.bfloat16, jnp.float32


def routing(tokens, experts, topk, seed=0):
    """Rows per expert of a random top-k routing: each token picks topk distinct experts."""
    rng = np.random.default_rng(seed)
    picks = np.argsort(rng.random((tokens, experts)), axis=1)[:, :topk]
    return np.bincount(picks.ravel(), minlength=experts).astype(np.int32)


def padded_fn(capacity):
    """The classic jnp MoE GEMM: each group's rows gathered into a [G, C, K] batch padded to the
    largest group (C), one batched dot with w [G, N, K], the rows gathered back. XLA's ragged
    dot on GPUs (jax 0.11) lowers to a dense dot over G*K (112 GB at 256 experts): this is what
    a jnp user runs instead."""
    def f(x, w, gs):
        g, m = w.shape[0], x.shape[0]
        ends = jnp.cumsum(gs)
        starts = ends - gs
        pos = jnp.arange(capacity)
        xp = jnp.where((pos[None, :] < gs[:, None])[..., None],
                       x[jnp.clip(starts[:, None] + pos[None, :], 0, m - 1)], 0)
        yp = jnp.einsum("gck,gnk->gcn", xp, w, preferred_element_type=F32)
        gid = jnp.searchsorted(ends, jnp.arange(m), side="right")
        gid_c = jnp.clip(gid, 0, g - 1)
        y = yp[gid_c, jnp.clip(jnp.arange(m) - starts[gid_c], 0, capacity - 1)]
        return jnp.where((gid < g)[:, None], y, 0).astype(BF16)
    return f


def xla_fn(rhs_layout, capacity=None):
    if rhs_layout == "padded":
        return padded_fn(capacity)
    if rhs_layout == "gnk":
        dn = jax.lax.RaggedDotDimensionNumbers(dot_dimension_numbers=(([1], [2]), ([], [])),
                                               lhs_ragged_dimensions=[0], rhs_group_dimensions=[0])

        def f(x, w, gs):  # w [G, N, K]
            return jax.lax.ragged_dot_general(x, w, gs, dn, preferred_element_type=F32).astype(BF16)
    else:
        def f(x, w, gs):  # w [G, K, N]
            return jax.lax.ragged_dot(x, w, gs, preferred_element_type=F32).astype(BF16)
    return f


def ours_fn(x, w, gs):
    return jax_aiter.grouped_gemm(x, w, gs)


def forward_backward(f):
    """out, dx, dw of f at a fixed cotangent dy (the forward included: what a training step
    runs)."""
    def fb(x, w, gs, dy):
        out, vjp = jax.vjp(lambda x, w: f(x, w, gs), x, w)
        return (out, *vjp(dy))
    return fb


@jax.jit
def _sq_norms(a, b):
    a, b = a.astype(F32), b.astype(F32)
    return jnp.sum((a - b) ** 2), jnp.sum(b * b)


def rel_err(a, b):
    """||a - b|| / ||b||, one expert slice at a time for [G, N, K] (an f32 copy of dw alone is
    28 GB at DeepSeek's shape)."""
    parts = [_sq_norms(a[i], b[i]) for i in range(a.shape[0])] if a.ndim == 3 else [
        _sq_norms(a, b)]
    num = sum(float(p[0]) for p in parts)
    den = sum(float(p[1]) for p in parts)
    return (num / (den + 1e-30)) ** 0.5


def time_one(name, fn, args):
    wall, _ = timed(fn, args, 1)
    try:
        t, per_kernel = device_timed(fn, args, 1)
    except Exception as e:  # noqa: BLE001 (profiler API moved: fall back to wall time)
        print(f"  (device timing unavailable for {name}: {e!r})")
        t, per_kernel = None, {}
    return {"ms": (t or wall) * 1e3, "clock": "device" if t else "wall", "wall_ms": wall * 1e3,
            "kernels_us": {nm: s * 1e6 for nm, s in per_kernel.items()}}


def run_gemm(name, m_rows, n, k, gs_np, rhs_layouts, key):
    g = gs_np.shape[0]
    k1, k2, k3 = jax.random.split(key, 3)
    x = jax.random.normal(k1, (m_rows, k), F32).astype(BF16)
    w = (jax.random.normal(k2, (g, n, k), F32) * (1.0 / np.sqrt(k))).astype(BF16)
    dy = jax.random.normal(k3, (m_rows, n), F32).astype(BF16)
    gs = jnp.asarray(gs_np)
    rows = int(np.minimum(gs_np, m_rows).sum())
    flops = 2.0 * rows * n * k
    entry = {"gemm": name, "m": m_rows, "n": n, "k": k, "groups": g, "rows": rows,
             "weight_GB": g * n * k * 2 / 1e9, "xla": {}}
    print(f"\n{name}: x [{m_rows}, {k}] . w [{g}, {n}, {k}]^T, {rows} rows in {g} groups "
          f"({gs_np.min()}..{gs_np.max()} a group)")

    ours_f = jax.jit(ours_fn)
    ours_fb = jax.jit(forward_backward(ours_fn))
    out, dx, dw = ours_fb(x, w, gs, dy)
    jax.block_until_ready(dw)
    entry["ours"] = {"fwd": time_one("ours fwd", ours_f, (x, w, gs)),
                     "fwd_bwd": time_one("ours fwd+bwd", ours_fb, (x, w, gs, dy))}
    for layout in rhs_layouts:
        rhs = jnp.swapaxes(w, 1, 2).copy() if layout == "gkn" else w
        f = xla_fn(layout, int(gs_np.max()))
        xla_f = jax.jit(f)
        xla_fb = jax.jit(forward_backward(f))
        xout, xdx, xdw = xla_fb(x, rhs, gs, dy)
        if layout == "gkn":
            xdw = jnp.swapaxes(xdw, 1, 2)
        errs = {"out": rel_err(out, xout), "dx": rel_err(dx, xdx), "dw": rel_err(dw, xdw)}
        assert all(e < 2e-2 for e in errs.values()), errs  # correctness gate before timing
        del xout, xdx, xdw
        entry["xla"][layout] = {"fwd": time_one(f"xla {layout} fwd", xla_f, (x, rhs, gs)),
                                "fwd_bwd": time_one(f"xla {layout} fwd+bwd", xla_fb,
                                                    (x, rhs, gs, dy)),
                                "rel_err_vs_ours": errs}
        del rhs
    del out, dx, dw
    for phase, mult in (("fwd", 1), ("fwd_bwd", 3)):
        o = entry["ours"][phase]
        o["TFLOPs"] = mult * flops / (o["ms"] * 1e-3) / 1e12
        line = f"  {phase:>7}: ours {o['ms']:9.3f} ms {o['TFLOPs']:6.1f} TFLOP/s"
        for layout, xr in entry["xla"].items():
            xr[phase]["TFLOPs"] = mult * flops / (xr[phase]["ms"] * 1e-3) / 1e12
            line += (f" | xla {layout} {xr[phase]['ms']:9.3f} ms {xr[phase]['TFLOPs']:6.1f} "
                     f"TFLOP/s, ours/xla {o['ms'] / xr[phase]['ms']:.3f}")
        print(line)
        if len(o["kernels_us"]) > 1:
            print("    ours kernels (us): " + ", ".join(
                f"{nm[:48]} {us:.1f}" for nm, us in o["kernels_us"].items()))
    for layout, xr in entry["xla"].items():
        print(f"  xla {layout} rel err vs ours: " + ", ".join(
            f"{k} {v:.1e}" for k, v in xr["rel_err_vs_ours"].items()))
    return entry


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--gemm", choices=("up", "down", "both"), default="both")
    ap.add_argument("--experts", type=int, default=EXPERTS)
    ap.add_argument("--hidden", type=int, default=HIDDEN)
    ap.add_argument("--inter", type=int, default=INTER)
    ap.add_argument("--tokens", type=int, default=TOKENS)
    ap.add_argument("--topk", type=int, default=TOPK)
    ap.add_argument("--xla-rhs", choices=("gnk", "gkn", "both", "padded"), default="padded",
                    help="XLA's version: ragged_dot_general on the same [G, N, K], ragged_dot "
                         "on a [G, K, N] copy, both, or (default: XLA's ragged dot runs out of "
                         "memory at 256 experts on GPUs) the jnp MoE padded to the largest group")
    args = ap.parse_args()
    dev = jax.devices()[0]
    print(f"device: {dev.device_kind} ({dev.platform}), jax {jax.__version__}, "
          f"XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}")
    m_rows = args.tokens * args.topk
    gs = routing(args.tokens, args.experts, args.topk)
    layouts = ("gnk", "gkn") if args.xla_rhs == "both" else (args.xla_rhs,)
    shapes = {"up": (2 * args.inter, args.hidden), "down": (args.hidden, args.inter)}
    results = {"device": dev.device_kind, "jax": jax.__version__, "tokens": args.tokens,
               "topk": args.topk, "experts": args.experts, "gemms": []}
    key = jax.random.PRNGKey(0)
    for name in (("up", "down") if args.gemm == "both" else (args.gemm,)):
        key, sub = jax.random.split(key)
        n, k = shapes[name]
        results["gemms"].append(run_gemm(name, m_rows, n, k, gs, layouts, sub))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
