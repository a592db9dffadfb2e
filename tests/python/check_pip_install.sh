#!/usr/bin/env bash
# pip install of the project into a fresh virtual environment (with the system's jax, as a user's
# environment would have it), then jax_aiter used from outside the source tree with no environment
# variables: the package must find its handler library by itself.
# Usage: check_pip_install.sh <python> <source dir> <scratch dir>
set -euo pipefail
python=$1 src=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
"$python" -m venv --system-site-packages "$work/venv"
# --no-build-isolation: the handlers are compiled against the FFI headers of the jaxlib they will
# run with (the environment's), not an isolated build environment's.
"$work/venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps \
  --no-build-isolation "$src" > "$work/pip.log" 2>&1 || { tail -30 "$work/pip.log"; exit 1; }
cd "$work"
env -u PYTHONPATH JAX_PLATFORMS=cpu "$work/venv/bin/python" - <<'PY'
import os
import numpy as np
import jax.numpy as jnp
import jax_aiter

here = os.path.dirname(jax_aiter.__file__)
assert "site-packages" in here, here
assert os.path.exists(os.path.join(here, "_jax_aiter_cpu.so")), os.listdir(here)
x = np.random.default_rng(0).standard_normal((3, 40)).astype(np.float32)
g = np.linspace(0.5, 1.5, 40).astype(np.float32)
got = np.asarray(jax_aiter.rms_norm(jnp.asarray(x), jnp.asarray(g), 1e-6), np.float64)
x64 = x.astype(np.float64)
want = x64 / np.sqrt(np.mean(x64 * x64, -1, keepdims=True) + 1e-6) * g
assert np.allclose(got, want, rtol=1e-6, atol=1e-6), np.abs(got - want).max()
print(f"installed jax_aiter at {here} runs: max |err| = {np.abs(got - want).max():.2g}")
PY
