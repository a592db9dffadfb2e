#!/usr/bin/env bash
# The main job: set up, build, and run the example JAX program, a pre-norm transformer attention
# block built from our ops and trained a few steps beside the same block in jnp, on the CPU
# backend (pass JAX_PLATFORMS=cuda on a CUDA machine to run it there).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
JAX_PLATFORMS=${JAX_PLATFORMS:-cpu} PYTHONPATH="$PWD/${BUILD_DIR:-build}/python" \
  python3 examples/transformer_block.py
