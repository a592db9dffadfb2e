#!/usr/bin/env bash
# Configures and builds the tree (tests, benchmarks, handler libraries) into ${BUILD_DIR:-build}.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo} -DJAX_AITER_WERROR=ON "$@"
cmake --build "$build" -j "$(nproc)"
