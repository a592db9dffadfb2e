"""Flash attention on a GPU through JAX: ours (jax_aiter.flash_attn_func, the portable tier on
sm_90) against cuDNN (jax.nn.dot_product_attention(implementation="cudnn")) and XLA's own
attention (implementation="xla"), in the same run, bf16, forward and forward+backward.

Run from the repository root on a CUDA machine, with the build tree's package on the path:
    PYTHONPATH=build-gpu/python python benchmarks/gpu/bench_attention.py [--out results.json]

Shapes (b, s, hq, hk, d, causal): the issue's four, plus a varlen batch (ours packed THD against
cuDNN on the padded batch with per-sequence lengths). --features: the first shape again with
dropout 0.1, a bias [1, hq, s, s], ALiBi and a window (1024, 0), each against our plain call
(issue 25: within 15 %) and cuDNN / XLA where jax.nn.dot_product_attention has the feature (bias,
window); --no-shapes leaves out the shapes above. FLOPs: 4 b hq sq sk d forward (two
products), halved for causal (only the visible half is computed, as FlashAttention counts), 2.5x
that for the backward (five products, FA2's count), so forward+backward is 3.5x. Times: the
median wall time of the whole jitted call (20 calls after warm-up, block_until_ready each), and
the median device span of a call from the profiler's kernel records (gpu_timing.py).
"""
import argparse
import json
import os

import jax
import jax.numpy as jnp
import numpy as np

import gpu_timing
import jax_aiter
from gpu_timing import device_timed, timed

gpu_timing.R = 20  # the method: medians of 20 calls

BF16 = jnp.bfloat16
SHAPES = [  # b, s, hq, hk, d, causal
    (4, 4096, 32, 8, 128, True),
    (4, 4096, 32, 32, 128, False),
    (16, 1024, 16, 16, 64, True),
    (1, 16384, 32, 8, 128, True),
]
VARLEN_LENS = [3100, 517, 2048, 1, 4096, 999, 1500, 3211]  # 15472 rows; hq 32, hk 8, d 128


def flops(lens_q, lens_k, hq, d, causal):
    f = sum(4.0 * hq * sq * sk * d for sq, sk in zip(lens_q, lens_k))
    return f / 2 if causal else f


def fwd_fns(causal):
    ours = jax.jit(lambda q, k, v: jax_aiter.flash_attn_func(q, k, v, causal=causal))
    cudnn = jax.jit(lambda q, k, v: jax.nn.dot_product_attention(
        q, k, v, is_causal=causal, implementation="cudnn"))
    xla = jax.jit(lambda q, k, v: jax.nn.dot_product_attention(
        q, k, v, is_causal=causal, implementation="xla"))
    return {"ours": ours, "cudnn": cudnn, "xla": xla}


def fwd_bwd(f):
    def loss(q, k, v, do):
        return jnp.sum(f(q, k, v).astype(jnp.float32) * do.astype(jnp.float32))
    return jax.jit(jax.grad(loss, argnums=(0, 1, 2)))


def measure(fn, args):
    try:
        wall, _ = timed(fn, args, 1)
    except Exception as e:  # noqa: BLE001 (out of memory, an unsupported shape: report, go on)
        return {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"}
    try:
        t, per_kernel = device_timed(fn, args, 1)
    except Exception as e:  # noqa: BLE001
        print(f"  (device timing unavailable: {e!r})")
        t, per_kernel = None, {}
    return {"wall_ms": wall * 1e3, "device_ms": t * 1e3 if t else None,
            "kernels_us": {nm: s * 1e6 for nm, s in per_kernel.items()}}


def rel_err(a, b):
    a = [x.astype(jnp.float32) for x in jax.tree_util.tree_leaves(a)]
    b = [x.astype(jnp.float32) for x in jax.tree_util.tree_leaves(b)]
    return max(float(jnp.linalg.norm(x - y) / jnp.linalg.norm(y)) for x, y in zip(a, b))


def line(label, fl, res):
    cells = []
    for name in ("ours", "cudnn", "xla"):
        r = res.get(name, {})
        if "wall_ms" not in r:
            cells.append(f"{name} {'n/a':>8}")
            continue
        ms = r["device_ms"] or r["wall_ms"]
        r["TFLOPs"] = fl / (ms * 1e-3) / 1e12
        r["TFLOPs_wall"] = fl / (r["wall_ms"] * 1e-3) / 1e12
        cells.append(f"{name} {ms:8.3f} ms {r['TFLOPs']:6.0f} TF/s (wall {r['TFLOPs_wall']:4.0f})")
    o, c, x = (res.get(n, {}).get("TFLOPs") for n in ("ours", "cudnn", "xla"))
    ratio = (f"ours/cudnn {o / c:5.2f}" if o and c else "") + (f"  ours/xla {o / x:5.2f}"
                                                             if o and x else "")
    print(f"{label:<34} " + " | ".join(cells) + "  " + ratio)


def features(key, results, s=4096, skip_xla=False):
    b, hq, hk, d = 4, 32, 8, 128
    keys = jax.random.split(key, 7)
    q = jax.random.normal(keys[1], (b, s, hq, d), jnp.float32).astype(BF16)
    k = jax.random.normal(keys[2], (b, s, hk, d), jnp.float32).astype(BF16)
    v = jax.random.normal(keys[3], (b, s, hk, d), jnp.float32).astype(BF16)
    do = jax.random.normal(keys[4], (b, s, hq, d), jnp.float32).astype(BF16)
    bias = jax.random.normal(keys[5], (1, hq, s, s), jnp.float32).astype(BF16)
    slopes = jnp.asarray(2.0 ** (-8.0 * (np.arange(hq) + 1) / hq), jnp.float32)
    dkey = jax.random.PRNGKey(7)
    fl = flops([s] * b, [s] * b, hq, d, True)
    ours = jax_aiter.flash_attn_func
    cases = {  # name: {impl: fn(q, k, v)}
        "plain": {"ours": lambda q, k, v: ours(q, k, v, causal=True),
                  "cudnn": lambda q, k, v: jax.nn.dot_product_attention(
                      q, k, v, is_causal=True, implementation="cudnn"),
                  "xla": lambda q, k, v: jax.nn.dot_product_attention(
                      q, k, v, is_causal=True, implementation="xla")},
        "dropout 0.1": {"ours": lambda q, k, v: ours(q, k, v, dropout_p=0.1, causal=True,
                                                     dropout_key=dkey)},
        "bias [1,h,s,s]": {
            "ours": lambda q, k, v: ours(q, k, v, causal=True, bias=bias),
            "cudnn": lambda q, k, v: jax.nn.dot_product_attention(
                q, k, v, bias=bias, is_causal=True, implementation="cudnn"),
            "xla": lambda q, k, v: jax.nn.dot_product_attention(
                q, k, v, bias=bias, is_causal=True, implementation="xla")},
        "alibi": {"ours": lambda q, k, v: ours(q, k, v, causal=True, alibi_slopes=slopes)},
        "window (1024, 0)": {
            "ours": lambda q, k, v: ours(q, k, v, causal=True, window_size=(1024, 0)),
            "cudnn": lambda q, k, v: jax.nn.dot_product_attention(
                q, k, v, is_causal=True, local_window_size=(1024, 0), implementation="cudnn"),
            "xla": lambda q, k, v: jax.nn.dot_product_attention(
                q, k, v, is_causal=True, local_window_size=(1024, 0), implementation="xla")},
    }
    out = []
    plain = {}
    for name, fns in cases.items():
        fns = {n: f for n, f in fns.items() if not (skip_xla and n == "xla")}
        # A window's FLOPs: the visible keys only (<= 1025 a row), as FlashAttention counts.
        f = fl if "window" not in name else 4.0 * b * hq * d * sum(min(i + 1, 1025)
                                                                   for i in range(s))
        entry = {"feature": name}
        for mode, wrap, scale in (("fwd", jax.jit, 1.0), ("fwd_bwd", fwd_bwd, 3.5)):
            args = (q, k, v) if mode == "fwd" else (q, k, v, do)
            entry[mode] = {n: measure(wrap(fn), args) for n, fn in fns.items()}
            line(f"{name} {mode}", scale * f, entry[mode])
            o = entry[mode].get("ours", {})
            ms = o.get("device_ms") or o.get("wall_ms")
            if name == "plain":
                plain[mode] = ms
            elif ms and plain.get(mode) and "window" not in name:
                print(f"    ours {name} / ours plain, {mode}: {ms / plain[mode]:.2f}x the time")
        out.append(entry)
    results["features"] = out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--skip-xla", action="store_true")
    ap.add_argument("--features", action="store_true")
    ap.add_argument("--no-shapes", action="store_true")
    ap.add_argument("--features-seq", type=int, default=4096, help="s of the features' shape")
    args = ap.parse_args()
    dev = jax.devices()[0]
    print(f"device: {dev.device_kind} ({dev.platform}), jax {jax.__version__}, "
          f"XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}")
    results = {"device": dev.device_kind, "jax": jax.__version__, "shapes": []}
    key = jax.random.PRNGKey(0)
    if args.features:
        features(key, results, args.features_seq, args.skip_xla)
    for b, s, hq, hk, d, causal in [] if args.no_shapes else SHAPES:
        keys = jax.random.split(key, 5)
        key = keys[0]
        q = jax.random.normal(keys[1], (b, s, hq, d), jnp.float32).astype(BF16)
        k = jax.random.normal(keys[2], (b, s, hk, d), jnp.float32).astype(BF16)
        v = jax.random.normal(keys[3], (b, s, hk, d), jnp.float32).astype(BF16)
        do = jax.random.normal(keys[4], (b, s, hq, d), jnp.float32).astype(BF16)
        fl = flops([s] * b, [s] * b, hq, d, causal)
        label = f"b{b} s{s} h{hq}/{hk} d{d}{' causal' if causal else ''}"
        entry = {"b": b, "s": s, "hq": hq, "hk": hk, "d": d, "causal": causal}
        fns = fwd_fns(causal)
        if args.skip_xla:
            fns.pop("xla")
        ref = fns["cudnn"](q, k, v)
        entry["fwd_rel_err_vs_cudnn"] = rel_err(fns["ours"](q, k, v), ref)
        entry["fwd"] = {n: measure(f, (q, k, v)) for n, f in fns.items()}
        line(label + " fwd", fl, entry["fwd"])
        bwds = {n: fwd_bwd(f) for n, f in fns.items()}
        entry["bwd_rel_err_vs_cudnn"] = rel_err(bwds["ours"](q, k, v, do),
                                                bwds["cudnn"](q, k, v, do))
        entry["fwd_bwd"] = {n: measure(f, (q, k, v, do)) for n, f in bwds.items()}
        line(label + " fwd+bwd", 3.5 * fl, entry["fwd_bwd"])
        print(f"    rel err vs cuDNN: fwd {entry['fwd_rel_err_vs_cudnn']:.1e}, "
              f"grads {entry['bwd_rel_err_vs_cudnn']:.1e}")
        results["shapes"].append(entry)
        del q, k, v, do

    if args.no_shapes:
        if args.out:
            with open(args.out, "w") as f:
                json.dump(results, f, indent=1)
        return
    # Varlen: ours on the packed rows, cuDNN on the padded batch with per-sequence lengths.
    lens = np.asarray(VARLEN_LENS, np.int32)
    hq, hk, d, smax = 32, 8, 128, int(lens.max())
    cu = jnp.asarray(np.concatenate([[0], np.cumsum(lens)]), jnp.int32)
    total = int(lens.sum())
    keys = jax.random.split(key, 4)
    q = jax.random.normal(keys[1], (total, hq, d), jnp.float32).astype(BF16)
    k = jax.random.normal(keys[2], (total, hk, d), jnp.float32).astype(BF16)
    v = jax.random.normal(keys[3], (total, hk, d), jnp.float32).astype(BF16)
    ours = jax.jit(lambda q, k, v, cu: jax_aiter.flash_attn_varlen(
        q, k, v, cu, cu, smax, smax, causal=True))
    rows = np.concatenate([np.arange(n) + i * smax for i, n in enumerate(lens)])

    def pad(x):
        return jnp.zeros((len(lens) * smax,) + x.shape[1:], x.dtype).at[rows].set(x).reshape(
            (len(lens), smax) + x.shape[1:])
    qp, kp, vp = pad(q), pad(k), pad(v)
    seq = jnp.asarray(lens)
    cudnn = jax.jit(lambda q, k, v: jax.nn.dot_product_attention(
        q, k, v, is_causal=True, query_seq_lengths=seq, key_value_seq_lengths=seq,
        implementation="cudnn"))
    fl = flops(lens, lens, hq, d, True)
    got = ours(q, k, v, cu)
    ref = cudnn(qp, kp, vp).reshape((-1, hq, d))[rows]
    entry = {"varlen_lens": VARLEN_LENS, "hq": hq, "hk": hk, "d": d, "causal": True,
             "fwd_rel_err_vs_cudnn": rel_err(got, ref),
             "fwd": {"ours": measure(ours, (q, k, v, cu)),
                     "cudnn": measure(cudnn, (qp, kp, vp))}}
    line(f"varlen {len(lens)} seqs {total} rows fwd", fl, entry["fwd"])
    print(f"    rel err vs cuDNN (padded): fwd {entry['fwd_rel_err_vs_cudnn']:.1e}")
    results["shapes"].append(entry)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
