#!/usr/bin/env bash
# The main job: set up, build, and run the example JAX program on the CPU backend (pass
# JAX_PLATFORMS=cuda on a CUDA machine to run it there).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
JAX_PLATFORMS=${JAX_PLATFORMS:-cpu} PYTHONPATH="$PWD/${BUILD_DIR:-build}/python" \
  python3 examples/rmsnorm_example.py
