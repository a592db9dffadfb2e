"""A transformer block's pre-norm with jax_aiter: rms_norm_with_add forward and its gradients,
through our XLA FFI handlers (the Host backend on CPU, embedded cubins on CUDA, code objects on
ROCm), checked against the same math written in jax.numpy."""
import jax
import jax.numpy as jnp
import numpy as np

import jax_aiter


def reference(x, residual, gamma, eps):
    s = (x.astype(jnp.float32) + residual.astype(jnp.float32)).astype(x.dtype)
    s32 = s.astype(jnp.float32)
    y = s32 * jax.lax.rsqrt(jnp.mean(s32 * s32, axis=-1, keepdims=True) + eps) * gamma.astype(jnp.float32)
    return y.astype(x.dtype), s


def main():
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}")
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(0), 3)
    batch, seq, hidden = 2, 128, 4096
    x = jax.random.normal(k1, (batch, seq, hidden), jnp.float32).astype(jnp.bfloat16)
    residual = jax.random.normal(k2, (batch, seq, hidden), jnp.float32).astype(jnp.bfloat16)
    gamma = (1 + 0.1 * jax.random.normal(k3, (hidden,), jnp.float32)).astype(jnp.bfloat16)

    block = jax.jit(lambda x, r, g: jax_aiter.rms_norm_with_add(x, r, g, 1e-6))
    y, new_residual = block(x, residual, gamma)
    y_ref, r_ref = reference(x, residual, gamma, 1e-6)
    err = float(jnp.max(jnp.abs(y.astype(jnp.float32) - y_ref.astype(jnp.float32))))
    print(f"rms_norm_with_add {x.shape} bf16: max |y - y_ref| = {err:.3g}; "
          f"residual_out identical: {bool(jnp.all(new_residual == r_ref))}")

    def loss(x, r, g, f):
        y, s = f(x, r, g)
        return jnp.sum(y.astype(jnp.float32) ** 2) + jnp.sum(s.astype(jnp.float32))

    grads = jax.jit(jax.grad(lambda x, r, g: loss(x, r, g, lambda *a: jax_aiter.rms_norm_with_add(*a, 1e-6)),
                             argnums=(0, 1, 2)))(x, residual, gamma)
    grads_ref = jax.grad(lambda x, r, g: loss(x, r, g, lambda *a: reference(*a, 1e-6)), argnums=(0, 1, 2))(
        x, residual, gamma)
    for name, g, gr in zip(("dx", "dresidual", "dgamma"), grads, grads_ref):
        g32, gr32 = np.asarray(g, np.float32), np.asarray(gr, np.float32)
        rel = np.linalg.norm(g32 - gr32) / np.linalg.norm(gr32)
        print(f"{name}: relative error vs jnp autodiff = {rel:.3g}")
        assert rel < 2e-2, name
    assert err < 0.1
    print("ok")


if __name__ == "__main__":
    main()
