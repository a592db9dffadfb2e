#!/usr/bin/env bash
# Everything the GPU machine runs, in one call (device time is scarce): build the CUDA handler
# library with nvcc there, run the Python tests through JAX on CUDA with command buffers on, then
# the benchmark. Usage on the device machine, from the repo root: scripts/gpu_run.sh [OUT_DIR]
set -euo pipefail
out=${1:-${OUT:-/tmp/jax_aiter_gpu}}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/nvidia-smi.txt"
python3 -c "import jax; print('jax', jax.__version__, jax.devices())"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DJAX_AITER_BUILD_TESTS=OFF \
  -DJAX_AITER_BUILD_BENCHMARKS=OFF -DJAX_AITER_GPU_ARCHS=sm_90 -DPython3_EXECUTABLE="$(command -v python3)" \
  > "$out/cmake.log" 2>&1 || { tail -30 "$out/cmake.log"; exit 1; }
cmake --build build-gpu -j 16 > "$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
ls build-gpu/python/jax_aiter/
build-gpu/tests/gpu/cuda_rmsnorm_check 2>&1 | tee "$out/cuda_check.txt" | grep -v "^PASS" | tail -20
# Command buffers on for custom calls, at any graph size: our GPU handlers claim compatibility.
export XLA_FLAGS="--xla_gpu_enable_command_buffer=FUSION,CUSTOM_CALL --xla_gpu_graph_min_graph_size=1"
export PYTHONPATH="$PWD/build-gpu/python"
python3 -m pytest -q -p no:cacheprovider tests/python 2>&1 | tee "$out/pytest.txt" | tail -15
python3 benchmarks/gpu/bench_rmsnorm.py --out "$out/bench.json" 2>&1 | tee "$out/bench.txt"
