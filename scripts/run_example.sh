#!/usr/bin/env bash
# The main job: set up, build what the example runs (the CPU handler library and the Python
# package; no tests, no GPU code), and run the example JAX program, a pre-norm transformer attention
# block built from our ops and trained a few steps beside the same block in jnp, on the CPU backend.
# Extra arguments go to CMake's configure step: on a CUDA machine,
#   JAX_PLATFORMS=cuda scripts/run_example.sh -DJAX_AITER_GPU_ARCHS=sm_90   (builds the CUDA library)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build=${BUILD_DIR:-build-example}
BUILD_DIR=$build scripts/build.sh -DJAX_AITER_BUILD_TESTS=OFF -DJAX_AITER_BUILD_BENCHMARKS=OFF \
  -DJAX_AITER_BUILD_GPU_CHECKS=OFF -DJAX_AITER_HIP=OFF -DJAX_AITER_GPU_ARCHS= "$@"
JAX_PLATFORMS=${JAX_PLATFORMS:-cpu} PYTHONPATH="$PWD/$build/python" \
  python3 examples/transformer_block.py
