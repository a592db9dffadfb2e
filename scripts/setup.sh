#!/usr/bin/env bash
# Installs everything jax-aiter needs on a fresh Debian 12 machine (idempotent: quick when done).
set -euo pipefail
apt_packages=(cmake g++ ninja-build libeigen3-dev libgtest-dev libgmock-dev libbenchmark-dev
              libamdhip64-dev libmsgpack-cxx-dev clang-format)
llvm_packages=(clang-22 lld-22 llvm-22)  # gfx942/gfx950 device code (Debian's clang-19 lacks gfx950)
missing=()
for p in "${apt_packages[@]}" "${llvm_packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo_cmd=""; [ "$(id -u)" = 0 ] || sudo_cmd="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -q
  $sudo_cmd apt-get install -y -q "${apt_packages[@]}"
  $sudo_cmd apt-get install -y -q --no-install-recommends "${llvm_packages[@]}"
fi
# jaxlib 0.10.x is the newest for Python 3.11; its FFI headers come with it (jax.ffi.include_dir()).
python3 -m pip install -q --disable-pip-version-check "jax==0.10.2" "jaxlib==0.10.2" "numpy>=1.26" \
  "pytest>=8" "scikit-build-core>=0.10"
