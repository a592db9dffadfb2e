#!/usr/bin/env bash
# The test command: set up, build, run every test (C++ gtest, the consumer example against the
# installed package, JAX on CPU through our handlers) with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "$(nproc)"
