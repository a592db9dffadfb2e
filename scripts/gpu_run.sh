#!/usr/bin/env bash
# The GPU job (an NVIDIA Hopper machine with jax[cuda], nvcc and cmake; nothing to install):
# builds the CUDA handler library and checks, then
#   1. tests/gpu/cuda_rmsnorm_check   the CUDA backend with no XLA, every dtype, outputs poisoned
#   2. tests/gpu/cuda_rmsnorm_bench   device time per kernel (CUDA events) against a D2D copy
#   3. pytest tests/python            JAX on CUDA with command buffers on for custom calls
#   4. benchmarks/gpu/bench_rmsnorm.py  ours against XLA's fusions of the same math
# Logs go to $1 (or $OUT, or /tmp/jax_aiter_gpu). Exit status: non-zero if a check or test failed.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-/tmp/jax_aiter_gpu}}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
status=0
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
python3 -c "import jax; print('jax', jax.__version__, jax.devices())"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DJAX_AITER_BUILD_TESTS=OFF \
  -DJAX_AITER_BUILD_BENCHMARKS=OFF -DJAX_AITER_GPU_ARCHS=sm_90 \
  -DPython3_EXECUTABLE="$(command -v python3)" > "$out/build.log" 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" >> "$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }

build-gpu/tests/gpu/cuda_rmsnorm_check > "$out/cuda_check.txt" 2>&1 || status=1
echo "cuda_rmsnorm_check: $(tail -1 "$out/cuda_check.txt")"
grep ^FAIL "$out/cuda_check.txt" | head -5
build-gpu/tests/gpu/cuda_rmsnorm_bench > "$out/cuda_bench.txt" 2>&1 || status=1
cat "$out/cuda_bench.txt"

# Command buffers on for custom calls at any graph size: our GPU handlers claim compatibility.
export XLA_FLAGS="--xla_gpu_enable_command_buffer=FUSION,CUSTOM_CALL --xla_gpu_graph_min_graph_size=1"
export PYTHONPATH="$PWD/build-gpu/python"
python3 -m pytest -q -rs -p no:cacheprovider tests/python > "$out/pytest.txt" 2>&1 || status=1
echo "pytest: $(tail -1 "$out/pytest.txt")"
python3 -m pytest -q -s -p no:cacheprovider tests/python -k command_buffers 2>&1 |
  grep -E "captured in command buffers" | cut -c1-400
python3 benchmarks/gpu/bench_rmsnorm.py --out "$out/bench.json" > "$out/bench.txt" 2>&1 || status=1
grep -vE "^\s*\((device timing|wall)" "$out/bench.txt"
exit $status
