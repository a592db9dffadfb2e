#!/usr/bin/env bash
# The test command: set up, build, run every test (C++ gtest, the consumer example against the
# installed package, JAX on CPU through our handlers, the builds with clang-22 and sanitizers, the
# pip install) with ctest. The build has every gfx942/gfx950 code object (clang-22 compiles our
# kernels in every run); the sm_90 cubins, the CUDA library and its checks belong to the GPU job
# (scripts/gpu_run.sh), which runs them. Extra arguments go to CMake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh -DJAX_AITER_BUILD_TESTS=ON -DJAX_AITER_BUILD_BENCHMARKS=ON -DJAX_AITER_BUILD_PYTHON=ON \
  -DJAX_AITER_HIP=ON -DJAX_AITER_GPU_ARCHS="gfx942;gfx950" -DJAX_AITER_ROCM_LIB_O0=ON "$@"
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "$(nproc)"
