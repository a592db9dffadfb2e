#!/usr/bin/env bash
# Configures and builds the tree (tests, benchmarks, handler libraries) into ${BUILD_DIR:-build}.
# Extra arguments go to CMake's configure step, e.g. -DJAX_AITER_GPU_ARCHS="gfx942;gfx950".
#   BUILD_TYPE  CMake build type (default Release at -O2: optimised host twins without the compile
#               time of -O3 or of debug info; RelWithDebInfo to debug)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" \
  -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" -DJAX_AITER_WERROR=ON "$@"
cmake --build "$build" -j "$(nproc)"
