"""A pre-norm transformer attention block built only from jax_aiter ops, trained for a few steps,
beside the same block written in plain jax.numpy:

    h, residual = rms_norm_with_add(x, residual, gamma)        # pre-norm
    q, k, v     = gemm(h, w_qkv)                               # fused QKV projection (GQA heads)
    a           = flash_attn_func(q, k, v, causal=True)        # causal GQA attention
    y           = gemm(a, w_out)                               # output projection

It runs through our XLA FFI handlers on whatever JAX has (the Host backend's C++ twins on CPU by
default, our sm_90 kernels on CUDA), prints how far the outputs, the loss and every parameter
gradient are from the jnp block, and takes a few SGD steps with both, printing both losses.
"""

from __future__ import annotations

import math
import sys

import jax
import jax.numpy as jnp
import numpy as np

import jax_aiter

BF16, F32 = jnp.bfloat16, jnp.float32
BATCH, SEQ, HIDDEN, HEADS_Q, HEADS_K, HEAD_DIM = 2, 128, 512, 8, 2, 64
EPS = 1e-6


def init(key):
    k1, k2, k3 = jax.random.split(key, 3)
    qkv = (HEADS_Q + 2 * HEADS_K) * HEAD_DIM
    return {
        "gamma": jnp.ones((HIDDEN,), BF16),
        "w_qkv": (jax.random.normal(k1, (qkv, HIDDEN), F32) / math.sqrt(HIDDEN)).astype(BF16),
        "w_out": (jax.random.normal(k2, (HIDDEN, HEADS_Q * HEAD_DIM), F32)
                  / math.sqrt(HEADS_Q * HEAD_DIM)).astype(BF16),
    }, k3


def split_heads(qkv):
    b, s, _ = qkv.shape
    q, k, v = jnp.split(qkv, [HEADS_Q * HEAD_DIM, (HEADS_Q + HEADS_K) * HEAD_DIM], axis=-1)
    return (q.reshape(b, s, HEADS_Q, HEAD_DIM), k.reshape(b, s, HEADS_K, HEAD_DIM),
            v.reshape(b, s, HEADS_K, HEAD_DIM))


def block_aiter(p, x, residual):
    h, residual = jax_aiter.rms_norm_with_add(x, residual, p["gamma"], EPS)
    q, k, v = split_heads(jax_aiter.gemm(h, p["w_qkv"]))
    a = jax_aiter.flash_attn_func(q, k, v, causal=True)
    return jax_aiter.gemm(a.reshape(*a.shape[:2], -1), p["w_out"]), residual


def block_jnp(p, x, residual):
    s = (x.astype(F32) + residual.astype(F32)).astype(BF16)
    s32 = s.astype(F32)
    h = (s32 * jax.lax.rsqrt(jnp.mean(s32 * s32, -1, keepdims=True) + EPS)
         * p["gamma"].astype(F32)).astype(BF16)
    qkv = jnp.einsum("bsk,nk->bsn", h, p["w_qkv"], preferred_element_type=F32).astype(BF16)
    q, k, v = split_heads(qkv)
    a = jax.nn.dot_product_attention(q, k, v, is_causal=True, implementation="xla")
    a = a.reshape(*a.shape[:2], -1)
    return jnp.einsum("bsk,nk->bsn", a, p["w_out"], preferred_element_type=F32).astype(BF16), s


def loss_fn(block, p, x, residual, target):
    y, r = block(p, x, residual)
    return jnp.mean((y.astype(F32) - target) ** 2) + 1e-3 * jnp.mean(r.astype(F32) ** 2)


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def main() -> int:
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}")
    params, key = init(jax.random.key(0))
    k1, k2, k3 = jax.random.split(key, 3)
    x = jax.random.normal(k1, (BATCH, SEQ, HIDDEN), F32).astype(BF16)
    residual = jax.random.normal(k2, (BATCH, SEQ, HIDDEN), F32).astype(BF16)
    target = jax.random.normal(k3, (BATCH, SEQ, HIDDEN), F32) * 0.1

    y_a, r_a = jax.jit(block_aiter)(params, x, residual)
    y_j, r_j = jax.jit(block_jnp)(params, x, residual)
    errors = {"y": rel(y_a, y_j), "residual": rel(r_a, r_j)}
    print(f"forward [{BATCH}, {SEQ}, {HIDDEN}] bf16, {HEADS_Q}/{HEADS_K} heads of {HEAD_DIM}: "
          f"relative error vs jnp: y {errors['y']:.3g}, residual_out {errors['residual']:.3g}")

    grad_a = jax.jit(jax.value_and_grad(lambda p: loss_fn(block_aiter, p, x, residual, target)))
    grad_j = jax.jit(jax.value_and_grad(lambda p: loss_fn(block_jnp, p, x, residual, target)))
    (la, ga), (lj, gj) = grad_a(params), grad_j(params)
    print(f"loss {float(la):.6f} (jnp {float(lj):.6f})")
    for name in sorted(ga):
        errors[f"d{name}"] = rel(ga[name].astype(F32), gj[name].astype(F32))
        print(f"  d{name}: relative error vs jnp autodiff {errors[f'd{name}']:.3g}")

    lr = 0.5
    pa, pj = params, params
    for step in range(3):
        (la, ga), (lj, gj) = grad_a(pa), grad_j(pj)
        pa = jax.tree.map(lambda w, g: (w.astype(F32) - lr * g.astype(F32)).astype(w.dtype), pa, ga)
        pj = jax.tree.map(lambda w, g: (w.astype(F32) - lr * g.astype(F32)).astype(w.dtype), pj, gj)
        print(f"step {step}: loss aiter {float(la):.6f}, jnp {float(lj):.6f}")
    final_a = float(loss_fn(block_aiter, pa, x, residual, target))
    final_j = float(loss_fn(block_jnp, pj, x, residual, target))
    print(f"after 3 steps: loss aiter {final_a:.6f}, jnp {final_j:.6f}")
    ok = all(e < 3e-2 for e in errors.values()) and abs(final_a - final_j) < 1e-2 * abs(final_j)
    print("ok" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
