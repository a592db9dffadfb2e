// Device time of our RMSNorm kernels through the CUDA backend, timed with CUDA events: median of
// per-launch times, inputs rotated among sets larger than L2 together, random data. Prints GB/s
// (fewest bytes: inputs read once, outputs written once) and the fraction of a device-to-device
// memcpy's bandwidth measured the same way. Usage: cuda_rmsnorm_bench
#include <cuda.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

#include "jax_aiter/ffi/rmsnorm.hpp"
#include "jax_aiter/runtime/cuda.hpp"

namespace ja = jax_aiter;
using ja::DType;

#define CHECK_CU(x)                                                    \
  do {                                                                 \
    CUresult r_ = (x);                                                 \
    if (r_ != CUDA_SUCCESS) {                                          \
      std::printf("CUDA error %d at %s:%d\n", r_, __FILE__, __LINE__); \
      std::exit(2);                                                    \
    }                                                                  \
  } while (0)

namespace {

constexpr int kSets = 4;  // rotating input sets
constexpr int kRepeats = 25;

ja::ops::Tensor tensor(CUdeviceptr p, DType t, std::vector<int64_t> dims) {
  ja::ops::Tensor out;
  out.data = reinterpret_cast<void*>(p);
  out.dtype = t;
  out.rank = static_cast<int>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) out.dims[i] = dims[i];
  return out;
}

// Random bf16 data (never zeros), tiled from one pool so that filling many GiB takes no time;
// each allocation starts at another offset of the pool.
CUdeviceptr alloc_random(size_t count, std::mt19937& rng) {
  static std::vector<uint16_t> pool = [&] {
    std::vector<uint16_t> h((size_t{1} << 22) + 4099);  // odd length: rows do not repeat in step
    std::normal_distribution<float> d(0.f, 1.f);
    for (auto& v : h) v = ja::float_to_bf16(d(rng));
    return h;
  }();
  std::vector<uint16_t> h(count);
  size_t at = rng() % pool.size();
  for (size_t i = 0; i < count; ++i) {
    h[i] = pool[at];
    if (++at == pool.size()) at = 0;
  }
  CUdeviceptr p;
  CHECK_CU(cuMemAlloc(&p, count * 2));
  CHECK_CU(cuMemcpyHtoD(p, h.data(), count * 2));
  return p;
}

// Median over repeats of the event time of one call (which rotates its input set per call).
double median_ms(CUstream s, const std::function<void(int)>& call) {
  CUevent a, b;
  CHECK_CU(cuEventCreate(&a, CU_EVENT_DEFAULT));
  CHECK_CU(cuEventCreate(&b, CU_EVENT_DEFAULT));
  for (int i = 0; i < 3; ++i) call(i % kSets);
  std::vector<float> ms;
  for (int i = 0; i < kRepeats; ++i) {
    CHECK_CU(cuEventRecord(a, s));
    call(i % kSets);
    CHECK_CU(cuEventRecord(b, s));
    CHECK_CU(cuEventSynchronize(b));
    float t;
    CHECK_CU(cuEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  cuEventDestroy(a);
  cuEventDestroy(b);
  return ms[ms.size() / 2];
}

}  // namespace

int main() {
  CHECK_CU(cuInit(0));
  CUdevice dev;
  CHECK_CU(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK_CU(cuCtxSetCurrent(ctx));
  CUstream s;
  CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  char name[128];
  cuDeviceGetName(name, sizeof name, dev);
  std::printf("device: %s\n", name);
  std::mt19937 rng(5);
  ja::ffi::Where<ja::runtime::Cuda> where{s, 0};
  for (auto [rows, n] : std::vector<std::pair<int64_t, int64_t>>{{16384, 4096}, {32768, 8192}}) {
    const size_t count = rows * n, bytes = count * 2;
    CUdeviceptr x[kSets], r[kSets], dy[kSets], y[kSets], ro[kSets];
    for (int i = 0; i < kSets; ++i) {
      x[i] = alloc_random(count, rng);
      r[i] = alloc_random(count, rng);
      dy[i] = alloc_random(count, rng);
      CHECK_CU(cuMemAlloc(&y[i], bytes));
      CHECK_CU(cuMemAlloc(&ro[i], bytes));
    }
    CUdeviceptr g = alloc_random(n, rng), dg, ws;
    CHECK_CU(cuMemAlloc(&dg, n * 2));
    CHECK_CU(cuMemAlloc(&ws, ja::ops::rmsnorm_bwd_workspace_bytes(rows, n)));
    CHECK_CU(cuCtxSynchronize());  // uploads (legacy stream) done before the timed stream runs
    auto must = [](const ja::Status& st) {
      if (!st.ok()) {
        std::printf("error: %s\n", st.message().c_str());
        std::exit(1);
      }
    };
    const double copy =
        median_ms(s, [&](int i) { CHECK_CU(cuMemcpyDtoDAsync(y[i], x[i], bytes, s)); });
    const double fwd = median_ms(s, [&](int i) {
      ja::ops::RmsNorm::Params p{tensor(x[i], DType::kBF16, {rows, n}),
                                 tensor(g, DType::kBF16, {n}),
                                 tensor(y[i], DType::kBF16, {rows, n}),
                                 {},
                                 {},
                                 1e-6f};
      must(ja::ffi::Handler<ja::ops::RmsNorm, ja::runtime::Cuda>::run(where, p));
    });
    const double fused = median_ms(s, [&](int i) {
      ja::ops::RmsNormWithAdd::Params p{
          tensor(x[i], DType::kBF16, {rows, n}),  tensor(g, DType::kBF16, {n}),
          tensor(y[i], DType::kBF16, {rows, n}),  tensor(r[i], DType::kBF16, {rows, n}),
          tensor(ro[i], DType::kBF16, {rows, n}), 1e-6f};
      must(ja::ffi::Handler<ja::ops::RmsNormWithAdd, ja::runtime::Cuda>::run(where, p));
    });
    // Backward on input set i (dx written into y[i]).
    auto bwd_params = [&](int i) {
      return ja::ops::RmsNormBwd::Params{
          tensor(dy[i], DType::kBF16, {rows, n}),
          tensor(x[i], DType::kBF16, {rows, n}),
          tensor(g, DType::kBF16, {n}),
          {},
          tensor(y[i], DType::kBF16, {rows, n}),
          tensor(dg, DType::kBF16, {n}),
          tensor(ws, DType::kU8, {ja::ops::rmsnorm_bwd_workspace_bytes(rows, n)}),
          1e-6f};
    };
    const double bwd = median_ms(s, [&](int i) {
      must(ja::ffi::Handler<ja::ops::RmsNormBwd, ja::runtime::Cuda>::run(where, bwd_params(i)));
    });
    // The backward's two launches timed apart: the row pass (dx, partial dgamma rows) and the
    // reduction of the partial rows.
    const auto target = ja::runtime::Cuda::target(0);
    double bwd_launch_ms[2] = {0, 0};
    for (size_t k = 0; k < 2; ++k) {
      bwd_launch_ms[k] = median_ms(s, [&](int i) {
        const auto plan = ja::ops::RmsNormBwd::plan(bwd_params(i), *target);
        must(ja::runtime::Cuda::launch<ja::kernels::RmsNormModule>(0, s, plan.launches.view()[k]));
      });
    }
    const double copy_gbps = 2.0 * bytes / copy / 1e6;
    std::printf("\n[%lld, %lld] bf16 (CUDA events, median of %d)\n", (long long)rows, (long long)n,
                kRepeats);
    std::printf("%-22s %9s %9s %9s\n", "op", "ms", "GB/s", "of copy");
    auto row = [&](const char* op, double ms, double moved) {
      const double gbps = moved / ms / 1e6;
      std::printf("%-22s %9.3f %9.0f %9.2f\n", op, ms, gbps, gbps / copy_gbps);
    };
    row("d2d memcpy", copy, 2.0 * bytes);
    row("rms_norm", fwd, 2.0 * bytes);
    row("rms_norm_with_add", fused, 4.0 * bytes);
    row("rms_norm_bwd", bwd, 3.0 * bytes);
    const double partial_bytes = double(ja::ops::rmsnorm_bwd_workspace_bytes(rows, n));
    row("  bwd row pass", bwd_launch_ms[0], 3.0 * bytes + partial_bytes);
    row("  bwd dgamma reduce", bwd_launch_ms[1], partial_bytes);
    for (int i = 0; i < kSets; ++i) {
      cuMemFree(x[i]);
      cuMemFree(r[i]);
      cuMemFree(dy[i]);
      cuMemFree(y[i]);
      cuMemFree(ro[i]);
    }
    cuMemFree(g);
    cuMemFree(dg);
    cuMemFree(ws);
  }
  return 0;
}
