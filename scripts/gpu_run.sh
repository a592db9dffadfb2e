#!/usr/bin/env bash
# The GPU job (an NVIDIA Hopper machine with jax[cuda], nvcc and cmake; nothing to install):
# builds the CUDA handler library and checks, then
#   1. tests/gpu/cuda_rmsnorm_check    the CUDA backend with no XLA, every RMSNorm dtype, poisoned
#   2. tests/gpu/cuda_gemm_kernels     every GEMM kernel and ABI twin against a CPU reference
#      tests/gpu/cuda_gemm_i8_kernels  every INT8 GEMM kernel: int32 sums exact, bf16 out
#      tests/gpu/cuda_attention_kernels, cuda_attention_asm_twins: our attention kernels and the
#      ASM tiers' plans through AITER's v3 ABI twins, against a CPU reference
#   3. pytest tests/python             JAX on CUDA with command buffers on for custom calls
#   4. benchmarks (unless --no-bench): cuda_rmsnorm_bench, bench_rmsnorm.py, bench_gemm.py,
#      bench_attention.py
# Logs go to $1 (or $OUT, or /tmp/jax_aiter_gpu). Exit status: non-zero if a check or test failed.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-/tmp/jax_aiter_gpu}}
bench=1
[ "${2:-}" = "--no-bench" ] && bench=0
mkdir -p "$out"
export PYTHONUNBUFFERED=1
status=0
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
python3 -c "import jax; print('jax', jax.__version__, jax.devices())"
t0=$(date +%s)
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DJAX_AITER_BUILD_TESTS=OFF \
  -DJAX_AITER_BUILD_BENCHMARKS=OFF -DJAX_AITER_GPU_ARCHS=sm_90 \
  -DPython3_EXECUTABLE="$(command -v python3)" > "$out/build.log" 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" >> "$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"

build-gpu/tests/gpu/cuda_rmsnorm_check > "$out/cuda_rmsnorm_check.txt" 2>&1 || status=1
echo "cuda_rmsnorm_check: $(tail -1 "$out/cuda_rmsnorm_check.txt")"
grep ^FAIL "$out/cuda_rmsnorm_check.txt" | head -5
build-gpu/tests/gpu/cuda_gemm_kernels build-gpu/tests/gpu/jax_aiter_kernels/gemm.sm_90.cubin \
  build-gpu/tests/gpu/jax_aiter_kernels/aiter_bf16gemm.sm_90.cubin "$([ "$bench" = 1 ] && echo all || echo check)" \
  > "$out/cuda_gemm_kernels.txt" 2>&1 || status=1
grep -E "^FAIL" "$out/cuda_gemm_kernels.txt" | head -10
tail -30 "$out/cuda_gemm_kernels.txt"
k=build-gpu/tests/gpu/jax_aiter_kernels
build-gpu/tests/gpu/cuda_gemm_i8_kernels $k/gemm_i8.sm_90.cubin \
  "$([ "$bench" = 1 ] && echo all || echo check)" > "$out/cuda_gemm_i8_kernels.txt" 2>&1 || status=1
grep -E "^FAIL" "$out/cuda_gemm_i8_kernels.txt" | head -10
tail -10 "$out/cuda_gemm_i8_kernels.txt"
build-gpu/tests/gpu/cuda_attention_kernels $k/attention.sm_90.cubin \
  "$([ "$bench" = 1 ] && echo all || echo check)" > "$out/cuda_attention_kernels.txt" 2>&1 || status=1
grep -E "^FAIL" "$out/cuda_attention_kernels.txt" | head -10
tail -12 "$out/cuda_attention_kernels.txt"
build-gpu/tests/gpu/cuda_attention_asm_twins $k/aiter_fmha_v3.sm_90.cubin $k/attention.sm_90.cubin \
  > "$out/cuda_attention_asm_twins.txt" 2>&1 || status=1
grep -E "^FAIL" "$out/cuda_attention_asm_twins.txt" | head -10
tail -5 "$out/cuda_attention_asm_twins.txt"

# Command buffers on for custom calls at any graph size: our GPU handlers claim compatibility.
export XLA_FLAGS="--xla_gpu_enable_command_buffer=FUSION,CUSTOM_CALL --xla_gpu_graph_min_graph_size=1"
export PYTHONPATH="$PWD/build-gpu/python:$PWD/tests/python"
python3 -m pytest -q -rs -p no:cacheprovider tests/python > "$out/pytest.txt" 2>&1 || status=1
echo "pytest: $(tail -1 "$out/pytest.txt")"
grep -E "^(FAILED|ERROR)" "$out/pytest.txt" | head -10
python3 -m pytest -q -s -p no:cacheprovider tests/python -k command_buffers 2>&1 |
  grep -E "captured in command buffers" | cut -c1-400
if [ "$bench" = 1 ]; then
  build-gpu/tests/gpu/cuda_rmsnorm_bench > "$out/cuda_rmsnorm_bench.txt" 2>&1 || status=1
  python3 benchmarks/gpu/bench_rmsnorm.py --out "$out/bench_rmsnorm.json" > "$out/bench_rmsnorm.txt" 2>&1 || status=1
  grep -vE "^\s*\((device timing|wall)" "$out/bench_rmsnorm.txt"
  python3 benchmarks/gpu/bench_gemm.py --out "$out/bench_gemm.json" > "$out/bench_gemm.txt" 2>&1 || status=1
  cat "$out/bench_gemm.txt"
  python3 benchmarks/gpu/bench_attention.py --out "$out/bench_attention.json" > "$out/bench_attention.txt" 2>&1 || status=1
  cat "$out/bench_attention.txt"
fi
# A wheel built elsewhere (e.g. against jaxlib 0.10's FFI headers), if one was carried in
# .gpu-carry/: installed into this Python and run on its jax, from outside the tree.
for wheel in .gpu-carry/*.whl; do
  [ -f "$wheel" ] || continue
  python3 -m pip install -q --no-deps --force-reinstall "$wheel" > "$out/wheel.txt" 2>&1 &&
    (cd /tmp && env -u PYTHONPATH JAX_PLATFORMS=cpu python3 "$OLDPWD/tests/python/smoke_installed.py" \
      "$(basename "$wheel") on this machine's jax") 2>&1 | tail -2 || status=1
done
echo "total: $(( $(date +%s) - t0 )) s"
exit $status
