"""Smoke test of an installed jax_aiter (run from outside the source tree, no PYTHONPATH): the
package finds its handler library by itself and runs rms_norm and gemm on the CPU.
Usage: python smoke_installed.py <what is being checked>
"""
import os, sys
import numpy as np
import jax, jax.numpy as jnp
import jax_aiter

here = os.path.dirname(jax_aiter.__file__)
assert "site-packages" in here, here
assert os.path.exists(os.path.join(here, "_jax_aiter_cpu.so")), os.listdir(here)
rng = np.random.default_rng(0)
x = rng.standard_normal((3, 40)).astype(np.float32)
g = np.linspace(0.5, 1.5, 40).astype(np.float32)
got = np.asarray(jax_aiter.rms_norm(jnp.asarray(x), jnp.asarray(g), 1e-6), np.float64)
x64 = x.astype(np.float64)
want = x64 / np.sqrt(np.mean(x64 * x64, -1, keepdims=True) + 1e-6) * g
assert np.allclose(got, want, rtol=1e-6, atol=1e-6), np.abs(got - want).max()
a = jnp.asarray(rng.standard_normal((5, 128)), jnp.bfloat16)
b = jnp.asarray(rng.standard_normal((64, 128)), jnp.bfloat16)
out = np.asarray(jax_aiter.gemm(a, b, out_dtype=jnp.float32), np.float64)
ref = np.asarray(a, np.float64) @ np.asarray(b, np.float64).T
assert np.abs(out - ref).max() < 1e-3 * np.abs(ref).max(), np.abs(out - ref).max()
import jaxlib
print(f"{sys.argv[1]}: jax {jax.__version__} (jaxlib {jaxlib.__version__}): installed jax_aiter "
      f"at {here} runs rms_norm and gemm")
