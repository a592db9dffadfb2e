#!/usr/bin/env bash
# The package as a user installs it, used from outside the source tree with no environment
# variables (it must find its handler library by itself), with each jaxlib of the range the README
# promises that this machine's Python can install:
#   1. `pip wheel .` with build isolation (the default): the build environment gets its own jaxlib
#      (pyproject.toml's build requirements) and the handlers are compiled against its FFI headers;
#      that wheel is installed into a venv with the system's jax (0.10.2) and into a fresh venv
#      with jax/jaxlib 0.9.2, and each runs rms_norm, gemm and both console scripts;
#   (`pip install --no-build-isolation .` compiles against the environment's jaxlib headers, as the
#   main build does with FindXlaFfi: not built a second time here, for CI's time.)
# GPU libraries are left out (no GPU archs, no HIP), the handlers are compiled at -O0 (the tests'
# sizes are tiny) and only for the two ops the smoke test calls (JAX_AITER_PYTHON_OPS): this checks
# packaging, not kernels or their speed.
# Usage: check_pip_install.sh <python> <source dir> <scratch dir>
set -euo pipefail
python=$1 src=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
no_gpu=(-C cmake.define.JAX_AITER_GPU_ARCHS= -C cmake.define.JAX_AITER_HIP=OFF
        -C cmake.define.CMAKE_CXX_FLAGS_RELEASE=-O0
        -C "cmake.define.JAX_AITER_PYTHON_OPS=rmsnorm;gemm")
pip_q=(-q --disable-pip-version-check)

smoke() {  # smoke <venv> <what>
  local venv=$1 what=$2
  (cd "$work" && env -u PYTHONPATH JAX_PLATFORMS=cpu "$venv/bin/python" "$here/smoke_installed.py" "$what")
  "$venv/bin/jax-aiter-plan" gemm --m 1 --n 4096 --k 4096 --arch gfx942 > "$work/plan.json"
  grep -q '"verdict": "taken"' "$work/plan.json"
  mkdir -p "$work/empty_aiter/hsa"  # a checkout with no code objects: every kernel missing
  "$venv/bin/jax-aiter-check-aiter" "$work/empty_aiter" > "$work/check.txt"
  grep -Eq "^0 ok, [1-9][0-9]* missing, 0 mismatch" "$work/check.txt" || { cat "$work/check.txt"; exit 1; }
  echo "$what: jax-aiter-plan and jax-aiter-check-aiter run"
}

# 1. Isolated build (the default).
"$python" -m pip wheel "${pip_q[@]}" --no-deps -w "$work/dist" "${no_gpu[@]}" "$src" \
  > "$work/wheel.log" 2>&1 || { tail -30 "$work/wheel.log"; exit 1; }
wheel=$(ls "$work"/dist/jax_aiter-*.whl)
echo "built $(basename "$wheel") in an isolated environment"
"$python" -m venv --system-site-packages "$work/system"
"$work/system/bin/python" -m pip install "${pip_q[@]}" --no-deps "$wheel"
smoke "$work/system" "isolated build, system jax"
"$python" -m venv "$work/jax09"
"$work/jax09/bin/python" -m pip install "${pip_q[@]}" "jax==0.9.2" "jaxlib==0.9.2" numpy "$wheel" \
  > "$work/jax09.log" 2>&1 || { tail -30 "$work/jax09.log"; exit 1; }
smoke "$work/jax09" "isolated build, jax 0.9.2"
