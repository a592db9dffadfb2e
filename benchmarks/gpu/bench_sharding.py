"""Our ops under jax.jit shardings on 1, 2 and 4 GPUs, against the jnp / cuDNN equivalent in the
same run, and what the partitioning rules cost at compile time.

Run from the repository root on a CUDA machine with several GPUs, the build tree's package on the
path:
    PYTHONPATH=build-gpu/python python benchmarks/gpu/bench_sharding.py [--out results.json]
    python benchmarks/gpu/bench_sharding.py --compile-only   # the compile cost, on any machine
(on a CPU: XLA_FLAGS=--xla_force_host_platform_device_count=4 for four devices).

Per call and device count: the median device span of a call (first kernel start to last kernel
end over all GPUs, from the profiler; gpu_timing.py) and the median wall time of the jitted call
(20 calls after warm-up, block_until_ready each: it adds about 0.2 ms of host work per call, which
does not shrink with n), the collectives in the compiled program (count and bytes of their
results, by kind), for ours and for the reference (jnp with XLA's own partitioning; cuDNN
attention through jax.nn.dot_product_attention). Goal (issue 22): for local splits, device time on
n GPUs <= 1.1 x (time on one / n); where a collective is needed, no more bytes than the
reference's.

The transformer block is the README example's, at training size, with FSDP on one mesh axis and
tensor parallelism on the other: x batch-split on fsdp, q/k/v projections column-parallel (N on
tp, K on fsdp: gathered for use, as FSDP does), attention heads on tp, the output projection
row-parallel (K on tp). Forward and backward of a mean-square loss, per step.

Compile cost: a 4-layer stack of that block, lowered (trace) and compiled on all devices with the
rules and without them (JAX_AITER_PARTITIONING's switch: the calls opaque, as before the rules).
"""
import argparse
import json
import math
import re
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

import gpu_timing
import jax_aiter
from jax_aiter import _partition

BF16, F32 = jnp.bfloat16, jnp.float32
KINDS = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute")
_BYTES = {"bf16": 2, "f16": 2, "f32": 4, "s32": 4, "u8": 1, "s8": 1, "pred": 1, "f64": 8}
R = 20


def timed(fn, args):
    """(median wall ms, median device-span ms or None): the span from the first kernel of a call on
    any GPU to the last one's end on any GPU (gpu_timing: the profiler's kernel records)."""
    out = fn(*args)
    jax.block_until_ready(out)
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(R):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t0)
    span = None
    if jax.devices()[0].platform == "gpu":
        try:
            span, _ = gpu_timing.device_timed(fn, args, 1)
        except Exception as e:  # noqa: BLE001 (the profiler unavailable: wall time only)
            print(f"  (device timing unavailable: {e!r})")
    return statistics.median(times) * 1e3, None if span is None else span * 1e3


def collectives(fn, args) -> dict:
    """kind -> [count, bytes of the results] in the compiled program."""
    hlo = fn.lower(*args).compile().as_text()
    out = {}
    for kind in KINDS:
        for ty in re.findall(r"= (\([^=]*?\)|\S+) " + kind + r"(?:-start)?\(", hlo):
            n = sum(_BYTES.get(dt, 4) * math.prod(int(d) for d in dims.split(",") if d)
                    for dt, dims in re.findall(r"(\w+)\[([\d,]*)\]", ty))
            c = out.setdefault(kind, [0, 0])
            c[0] += 1
            c[1] += n
    return out


def rms_norm_jnp(x, g, eps=1e-6):
    x32 = x.astype(F32)
    return (x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, -1, keepdims=True) + eps)
            * g.astype(F32)).astype(x.dtype)


def dot_jnp(a, b):
    return jnp.einsum("...k,nk->...n", a, b, preferred_element_type=F32).astype(a.dtype)


def attn_cudnn(q, k, v):
    return jax.nn.dot_product_attention(q, k, v, is_causal=True, implementation="cudnn")


def attn_ours(q, k, v):
    return jax_aiter.flash_attn_func(q, k, v, causal=True)


# ---- the calls of the table ----------------------------------------------------------

def calls(key):
    ks = jax.random.split(key, 8)
    r = lambda k, s, sc=1.0: (jax.random.normal(k, s, F32) * sc).astype(BF16)  # noqa: E731
    a, b = r(ks[0], (16384, 8192)), r(ks[1], (8192, 8192), 0.01)
    q = r(ks[2], (8, 4096, 32, 128))
    kk, v = r(ks[3], (8, 4096, 8, 128)), r(ks[4], (8, 4096, 8, 128))
    x, g = r(ks[5], (65536, 8192)), r(ks[6], (8192,), 0.1) + 1
    gemm_ours = lambda a, b: jax_aiter.gemm(a, b)  # noqa: E731
    # name: (ours, reference, args, in specs, out spec, local?)
    return {
        "gemm rows (M) split": (gemm_ours, dot_jnp, (a, b), (P("d"), P()), P("d"), True),
        "gemm column-parallel (N)": (gemm_ours, dot_jnp, (a, b), (P(), P("d")), P(None, "d"),
                                     True),
        "gemm row-parallel (K)": (gemm_ours, dot_jnp, (a, b), (P(None, "d"), P(None, "d")), P(),
                                  False),
        "attention batch split": (attn_ours, attn_cudnn, (q, kk, v), (P("d"),) * 3, P("d"),
                                  True),
        "attention heads split": (attn_ours, attn_cudnn, (q, kk, v),
                                  (P(None, None, "d"),) * 3, P(None, None, "d"), True),
        "rms_norm rows split": (jax_aiter.rms_norm, rms_norm_jnp, (x, g), (P("d"), P()), P("d"),
                                True),
    }


# ---- the transformer block, FSDP x TP --------------------------------------------------------

B, S, H, HQ, HK, D = 8, 2048, 4096, 32, 8, 128


def block_params(key):
    ks = jax.random.split(key, 4)
    w = lambda k, n, m: (jax.random.normal(k, (n, m), F32) / math.sqrt(m)).astype(BF16)  # noqa
    return {"gamma": jnp.ones((H,), BF16), "wq": w(ks[0], HQ * D, H), "wk": w(ks[1], HK * D, H),
            "wv": w(ks[2], HK * D, H), "wo": w(ks[3], H, HQ * D)}


PARAM_SPECS = {"gamma": P(), "wq": P("tp", "fsdp"), "wk": P("tp", "fsdp"), "wv": P("tp", "fsdp"),
               "wo": P("fsdp", "tp")}


def block(norm, dot, attn):
    def f(p, x):
        h = norm(x, p["gamma"])
        b, s, _ = x.shape
        q = dot(h, p["wq"]).reshape(b, s, HQ, D)
        k = dot(h, p["wk"]).reshape(b, s, HK, D)
        v = dot(h, p["wv"]).reshape(b, s, HK, D)
        a = attn(q, k, v).reshape(b, s, HQ * D)
        return x + dot(a, p["wo"])
    return f


BLOCK_OURS = block(jax_aiter.rms_norm, lambda a, b: jax_aiter.gemm(a, b), attn_ours)
BLOCK_REF = block(rms_norm_jnp, dot_jnp, attn_cudnn)


def train_step(blk, layers=1):
    def loss(p, x):
        for _ in range(layers):
            x = blk(p, x)
        return jnp.mean(x.astype(F32) ** 2)
    return jax.value_and_grad(loss)


def mesh_of(n):
    devs = np.asarray(jax.devices()[:n])
    fsdp = 2 if n >= 4 else 1
    return Mesh(devs.reshape(fsdp, n // fsdp), ("fsdp", "tp"))


def run_block(n, key, results):
    mesh = mesh_of(n)
    params = block_params(key)
    x = jax.random.normal(key, (B, S, H), F32).astype(BF16)
    ps = {k: jax.device_put(v, NamedSharding(mesh, PARAM_SPECS[k])) for k, v in params.items()}
    xs = jax.device_put(x, NamedSharding(mesh, P("fsdp")))
    row = {}
    for name, blk in (("ours", BLOCK_OURS), ("ref", BLOCK_REF)):
        fn = jax.jit(train_step(blk))
        wall, span = timed(fn, (ps, xs))
        row[name] = {"ms": wall, "device_ms": span, "collectives": collectives(fn, (ps, xs))}
    results.append({"call": "transformer block fwd+bwd (FSDP x TP)", "n": n, **row})
    return row


def compile_cost(layers=4):
    n = len(jax.devices())
    mesh = mesh_of(n)
    key = jax.random.key(1)
    params = block_params(key)
    shapes = {k: jax.ShapeDtypeStruct(v.shape, v.dtype,
                                      sharding=NamedSharding(mesh, PARAM_SPECS[k]))
              for k, v in params.items()}
    xs = jax.ShapeDtypeStruct((B, S, H), BF16, sharding=NamedSharding(mesh, P("fsdp")))
    out = {}
    for on in (True, False):
        _partition.set_enabled(on)
        trace, comp = [], []
        for _ in range(3):
            fn = jax.jit(train_step(BLOCK_OURS, layers))
            t0 = time.perf_counter()
            lowered = fn.lower(shapes, xs)
            t1 = time.perf_counter()
            lowered.compile()
            t2 = time.perf_counter()
            trace.append(t1 - t0)
            comp.append(t2 - t1)
        out["with rules" if on else "without"] = {"trace_s": min(trace), "compile_s": min(comp)}
    _partition.set_enabled(True)
    print(f"compile cost, {layers}-layer block stack, {n} {jax.devices()[0].platform} devices "
          f"(best of 3): " + "; ".join(f"{k}: trace {v['trace_s']:.2f} s, compile "
                                       f"{v['compile_s']:.2f} s" for k, v in out.items()))
    return out


def show(r):
    span = f"{r['device_ms']:7.3f}" if r["device_ms"] else "    n/a"
    return f"{span} ms (wall {r['ms']:7.3f}) [{fmt_coll(r['collectives'])}]"


def fmt_coll(c):
    return ", ".join(f"{k} {v[0]}x {v[1] / 2**20:.1f} MiB" for k, v in sorted(c.items())) or "none"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--compile-only", action="store_true")
    args = ap.parse_args()
    devs = jax.devices()
    print(f"{len(devs)} x {devs[0].device_kind} ({devs[0].platform}), jax {jax.__version__}")
    results = {"devices": len(devs), "device": devs[0].device_kind, "jax": jax.__version__,
               "calls": []}
    if not args.compile_only:
        counts = [n for n in (1, 2, 4) if n <= len(devs)]
        base = {}
        for name, (ours, ref, arrs, specs, out_spec, local) in calls(jax.random.key(0)).items():
            for n in counts:
                mesh = Mesh(np.asarray(devs[:n]), ("d",))
                placed = [jax.device_put(a, NamedSharding(mesh, s)) for a, s in zip(arrs, specs)]
                row = {"call": name, "n": n}
                for who, f in (("ours", ours), ("ref", ref)):
                    fn = jax.jit(f, out_shardings=NamedSharding(mesh, out_spec))
                    wall, span = timed(fn, placed)
                    row[who] = {"ms": wall, "device_ms": span,
                                "collectives": collectives(fn, placed)}
                t = row["ours"]["device_ms"] or row["ours"]["ms"]
                base.setdefault(name, t)
                row["ours_vs_goal"] = t / (base[name] / n * 1.1) if local else None
                results["calls"].append(row)
                print(f"{name:<26} n={n}: ours {show(row['ours'])}  ref {show(row['ref'])}"
                      + (f"  ours/(1.1 x one/n) {row['ours_vs_goal']:.2f}" if local else ""))
                del placed
        for n in counts:
            row = run_block(n, jax.random.key(2), results["calls"])
            print(f"{'block fwd+bwd FSDP x TP':<26} n={n}: ours {show(row['ours'])}  "
                  f"ref {show(row['ref'])}")
    results["compile"] = compile_cost()
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
