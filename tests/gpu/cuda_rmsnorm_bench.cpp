// Device time of our RMSNorm kernels through the CUDA backend, timed with CUDA events: median of
// per-launch times, inputs rotated among sets larger than L2 together, random data. Prints GB/s
// (fewest bytes: inputs read once, outputs written once) and the fraction of a device-to-device
// memcpy's bandwidth measured the same way. Usage: cuda_rmsnorm_bench
#include <cuda.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <random>
#include <vector>

#include "jax_aiter/ffi/rmsnorm.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/kernels/rmsnorm.hpp"
#include "jax_aiter/runtime/cuda.hpp"

#include "cuda_check.hpp"

namespace ja = jax_aiter;
using ja::DType;

namespace {

constexpr int kSets = 4;  // rotating input sets
constexpr int kRepeats = 25;

ja::ops::Tensor tensor(CUdeviceptr p, DType t, std::initializer_list<int64_t> dims) {
  return ja::ops::Tensor::over(reinterpret_cast<void*>(p), t, dims);
}

// A launch or handler that fails ends the benchmark with its message.
void must(const ja::Status& st) {
  if (!st.ok()) {
    std::printf("error: %s\n", st.message().c_str());
    std::exit(1);
  }
}

// The plan RMSNorm's one tier makes for a call on `target`, its workspace where the call's is.
template <typename Tier, typename Params>
ja::kernels::Plan plan_of(const Params& p, const ja::Target& target) {
  ja::kernels::Plan plan;
  if constexpr (requires { p.workspace; }) plan.workspace_base = p.workspace.data;
  Tier::plan(p, target, plan);
  return plan;
}

// Launches one planned kernel (resolve loads it on first use, then only looks it up).
void launch(CUstream s, const ja::kernels::Launch& l) {
  const ja::runtime::Cuda::Kernel& kernel = ja::runtime::Cuda::resolve(0, *l.kernel);
  must(kernel.status);
  must(ja::runtime::Cuda::launch(0, s, kernel, l));
}

// Frees buffers, and every set of each rotating array of kSets.
template <typename... Sets>
void free_sets(std::initializer_list<CUdeviceptr> single, Sets&... sets) {
  for (CUdeviceptr p : single) cuMemFree(p);
  for (int i = 0; i < kSets; ++i) (cuMemFree(sets[i]), ...);
}

// The plain backward's parameters (dx written to dx, dgamma to dg, partials to ws).
ja::ops::RmsNormBwd::Params bwd_params(CUdeviceptr dy, CUdeviceptr x, CUdeviceptr g, CUdeviceptr dx,
                                       CUdeviceptr dg, CUdeviceptr ws, DType t, int64_t rows,
                                       int64_t n) {
  return {tensor(dy, t, {rows, n}),
          tensor(x, t, {rows, n}),
          tensor(g, t, {n}),
          {},
          tensor(dx, t, {rows, n}),
          tensor(dg, t, {n}),
          tensor(ws, DType::kU8, {ja::ops::rmsnorm_bwd_workspace_bytes(rows, n)}),
          1e-6f,
          {}};
}

// Random data of dtype t (normal, never zeros), tiled from one pool so that filling many GiB
// takes no time; each allocation starts at another offset of the pool.
CUdeviceptr alloc_random(DType t, size_t count, std::mt19937& rng) {
  static std::vector<float> pool = [&] {
    std::vector<float> h((size_t{1} << 22) + 4099);  // odd length: rows do not repeat in step
    std::normal_distribution<float> d(0.f, 1.f);
    for (auto& v : h) v = d(rng);
    return h;
  }();
  const size_t esz = ja::size_bytes(t);
  std::vector<uint8_t> h(count * esz);
  size_t at = rng() % pool.size();
  for (size_t i = 0; i < count; ++i) {
    const float v = pool[at];
    if (t == DType::kF32) {
      std::memcpy(&h[i * 4], &v, 4);
    } else {
      const uint16_t b = t == DType::kBF16 ? ja::float_to_bf16(v) : ja::float_to_f16(v);
      std::memcpy(&h[i * 2], &b, 2);
    }
    if (++at == pool.size()) at = 0;
  }
  CUdeviceptr p;
  CHECK_CU(cuMemAlloc(&p, h.size()));
  CHECK_CU(cuMemcpyHtoD(p, h.data(), h.size()));
  return p;
}

// Median over repeats of the event time of `batch` back-to-back calls (each rotating its input
// set), per call. One call per event pair for the big shapes; batches for kernels too short for
// one event pair to time.
double median_ms(CUstream s, const std::function<void(int)>& call, int batch = 1,
                 int repeats = kRepeats, int warmup = 3) {
  CUevent a, b;
  CHECK_CU(cuEventCreate(&a, CU_EVENT_DEFAULT));
  CHECK_CU(cuEventCreate(&b, CU_EVENT_DEFAULT));
  for (int i = 0; i < warmup; ++i) call(i % kSets);
  std::vector<float> ms;
  for (int rep = 0; rep < repeats; ++rep) {
    CHECK_CU(cuEventRecord(a, s));
    for (int i = 0; i < batch; ++i) call((rep * batch + i) % kSets);
    CHECK_CU(cuEventRecord(b, s));
    CHECK_CU(cuEventSynchronize(b));
    float t;
    CHECK_CU(cuEventElapsedTime(&t, a, b));
    ms.push_back(t / batch);
  }
  std::sort(ms.begin(), ms.end());
  cuEventDestroy(a);
  cuEventDestroy(b);
  return ms[ms.size() / 2];
}

// The fused forward with its rows staged in shared memory against loaded directly, by rows: the
// same launch with and without the shared memory (the kernel stages only into memory it is given).
// What the plan's staging rule (rmsnorm_fwd_shared_bytes) rests on.
void staging_sweep(CUstream s, std::mt19937& rng) {
  const ja::Target target = *ja::runtime::Cuda::target(0);
  std::printf(
      "\nfused forward bf16, rows staged in shared memory vs loaded directly "
      "(us per launch, batched)\n%-8s %-8s %-8s %10s %10s %8s %10s %10s %8s  plan\n",
      "n", "rows", "blocks", "staged", "direct", "ratio", "staged", "direct", "ratio");
  for (int64_t n : {1024, 4096, 8192}) {
    for (int64_t rows : {8, 64, 512, 2048, 8192, 32768}) {
      if (rows * n > (int64_t{1} << 27)) continue;  // host-side filling time
      const DType t = DType::kBF16;
      const size_t count = rows * n, bytes = count * 2;
      CUdeviceptr x[kSets], r[kSets], y[kSets], ro[kSets];
      for (int i = 0; i < kSets; ++i) {
        x[i] = alloc_random(t, count, rng);
        r[i] = alloc_random(t, count, rng);
        CHECK_CU(cuMemAlloc(&y[i], bytes));
        CHECK_CU(cuMemAlloc(&ro[i], bytes));
      }
      CUdeviceptr g = alloc_random(t, n, rng);
      CHECK_CU(cuCtxSynchronize());
      auto plan = [&](int i) {
        ja::ops::RmsNormWithAdd::Params p{tensor(x[i], t, {rows, n}),
                                          tensor(g, t, {n}),
                                          tensor(y[i], t, {rows, n}),
                                          tensor(r[i], t, {rows, n}),
                                          tensor(ro[i], t, {rows, n}),
                                          1e-6f,
                                          {}};
        return plan_of<ja::ops::RmsNormForwardPortable<true>>(p, target).steps[0].launch;
      };
      const auto l0 = plan(0);
      const auto a0 = l0.args.unpack<ja::kernels::RmsNormFwdArgs>();
      const uint32_t staged_bytes = static_cast<uint32_t>(2 * a0.rows_per_block * n * 2);
      auto timed = [&](uint32_t shared) {
        const auto call = [&](int i) {
          ja::kernels::Launch l = plan(i);
          l.shared_bytes = shared;
          launch(s, l);
        };
        return 1e3 * median_ms(s, call, /*batch=*/32, /*repeats=*/15, /*warmup=*/8);
      };
      double us[4];
      for (int k = 0; k < 4; ++k) us[k] = timed(k % 2 == 0 ? staged_bytes : 0);  // two rounds
      std::printf("%-8lld %-8lld %-8u %10.2f %10.2f %8.3f %10.2f %10.2f %8.3f  %s\n", (long long)n,
                  (long long)rows, l0.grid.x, us[0], us[1], us[0] / us[1], us[2], us[3],
                  us[2] / us[3], l0.shared_bytes ? "staged" : "direct");
      free_sets({g}, x, r, y, ro);
    }
  }
}

// The backward of rows past one block's registers, split over a thread-block cluster against
// streamed, by dtype, n and rows: the same plan made for CUDA (split where the rule allows) and as
// if the backend had no clusters (streamed), both launches of each timed together. What the plan's
// split rule (rmsnorm_bwd_split) rests on.
void split_sweep(CUstream s, std::mt19937& rng) {
  const ja::Target cuda = *ja::runtime::Cuda::target(0);
  ja::Target no_clusters = cuda;
  no_clusters.backend = ja::BackendKind::kHip;  // the plan's only question of the backend here
  std::printf(
      "\nbackward, rows split over a cluster vs streamed (us per call, both launches, batched)\n"
      "%-5s %-6s %-6s %-7s %10s %10s %8s %10s %10s %8s\n",
      "dtype", "n", "rows", "cluster", "split", "streamed", "ratio", "split", "streamed", "ratio");
  constexpr int64_t kMaxCount = int64_t{1} << 26;
  for (DType t : {DType::kBF16, DType::kF32}) {
    const size_t esz = ja::size_bytes(t);
    CUdeviceptr x[kSets], dy[kSets], dx[kSets];
    for (int i = 0; i < kSets; ++i) {
      x[i] = alloc_random(t, kMaxCount, rng);
      dy[i] = alloc_random(t, kMaxCount, rng);
      CHECK_CU(cuMemAlloc(&dx[i], kMaxCount * esz));
    }
    CUdeviceptr g = alloc_random(t, 65536, rng), dg, ws;
    CHECK_CU(cuMemAlloc(&dg, 65536 * esz));
    const size_t ws_bytes = ja::ops::rmsnorm_bwd_workspace_bytes(kMaxCount / 8192, 65536);
    CHECK_CU(cuMemAlloc(&ws, ws_bytes));
    CHECK_CU(cuCtxSynchronize());
    const std::vector<int64_t> ns = t == DType::kF32
                                        ? std::vector<int64_t>{6144, 8192, 16384, 32768}
                                        : std::vector<int64_t>{10240, 16384, 32768, 65536};
    for (int64_t n : ns) {
      for (int64_t rows : {8, 132, 1024, 4096, 8192}) {
        if (rows * n > kMaxCount ||
            static_cast<size_t>(ja::ops::rmsnorm_bwd_workspace_bytes(rows, n)) > ws_bytes) {
          continue;
        }
        auto plan = [&](int i, const ja::Target& target) {
          return plan_of<ja::ops::RmsNormBackwardPortable<false>>(
              bwd_params(dy[i], x[i], g, dx[i], dg, ws, t, rows, n), target);
        };
        auto timed = [&](const ja::Target& target) {
          const auto call = [&](int i) {
            const auto pl = plan(i, target);
            for (const ja::kernels::Step& step : pl.view()) launch(s, step.launch);
          };
          return 1e3 * median_ms(s, call, /*batch=*/rows * n >= (1 << 24) ? 1 : 16,
                                 /*repeats=*/15, /*warmup=*/4);
        };
        const int cluster = plan(0, cuda).steps[0].launch.cluster;
        double us[4];
        for (int k = 0; k < 4; ++k) us[k] = timed(k % 2 == 0 ? cuda : no_clusters);  // two rounds
        std::printf("%-5s %-6lld %-6lld %-7d %10.2f %10.2f %8.3f %10.2f %10.2f %8.3f\n",
                    std::string(ja::name(t)).c_str(), (long long)n, (long long)rows, cluster, us[0],
                    us[1], us[0] / us[1], us[2], us[3], us[2] / us[3]);
      }
    }
    free_sets({g, dg, ws}, x, dy, dx);
  }
}

}  // namespace

int main() {
  const CUdevice dev = use_device0();
  CUstream s;
  CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  char name[128];
  cuDeviceGetName(name, sizeof name, dev);
  std::printf("device: %s\n", name);
  std::mt19937 rng(5);
  ja::ffi::Where<ja::runtime::Cuda> where{s, 0};
  // The benchmark shapes of issue 3, then rows that do not fit a thread group's registers and are
  // streamed twice (bf16 backward past n = 8192, bf16 forward past 16384, f32 backward past 4096).
  struct Shape {
    int64_t rows, n;
    DType t;
  };
  for (auto [rows, n, t] : std::vector<Shape>{{16384, 4096, DType::kBF16},
                                              {32768, 8192, DType::kBF16},
                                              {4096, 16384, DType::kBF16},
                                              {2048, 32768, DType::kBF16},
                                              {8192, 8192, DType::kF32}}) {
    const size_t count = rows * n, bytes = count * ja::size_bytes(t);
    CUdeviceptr x[kSets], r[kSets], dy[kSets], y[kSets], ro[kSets];
    for (int i = 0; i < kSets; ++i) {
      x[i] = alloc_random(t, count, rng);
      r[i] = alloc_random(t, count, rng);
      dy[i] = alloc_random(t, count, rng);
      CHECK_CU(cuMemAlloc(&y[i], bytes));
      CHECK_CU(cuMemAlloc(&ro[i], bytes));
    }
    CUdeviceptr g = alloc_random(t, n, rng), dg, ws;
    CHECK_CU(cuMemAlloc(&dg, n * ja::size_bytes(t)));
    CHECK_CU(cuMemAlloc(&ws, ja::ops::rmsnorm_bwd_workspace_bytes(rows, n)));
    CHECK_CU(cuCtxSynchronize());  // uploads (legacy stream) done before the timed stream runs
    const double copy =
        median_ms(s, [&](int i) { CHECK_CU(cuMemcpyDtoDAsync(y[i], x[i], bytes, s)); });
    const double fwd = median_ms(s, [&](int i) {
      ja::ops::RmsNorm::Params p{tensor(x[i], t, {rows, n}),
                                 tensor(g, t, {n}),
                                 tensor(y[i], t, {rows, n}),
                                 {},
                                 {},
                                 1e-6f,
                                 {}};
      must(ja::ffi::Handler<ja::ops::RmsNorm, ja::runtime::Cuda>::run(where, p));
    });
    const double fused = median_ms(s, [&](int i) {
      ja::ops::RmsNormWithAdd::Params p{tensor(x[i], t, {rows, n}),
                                        tensor(g, t, {n}),
                                        tensor(y[i], t, {rows, n}),
                                        tensor(r[i], t, {rows, n}),
                                        tensor(ro[i], t, {rows, n}),
                                        1e-6f,
                                        {}};
      must(ja::ffi::Handler<ja::ops::RmsNormWithAdd, ja::runtime::Cuda>::run(where, p));
    });
    // Backward on input set i (dx written into y[i]).
    auto bwd_at = [&](int i) { return bwd_params(dy[i], x[i], g, y[i], dg, ws, t, rows, n); };
    const double bwd = median_ms(s, [&](int i) {
      must(ja::ffi::Handler<ja::ops::RmsNormBwd, ja::runtime::Cuda>::run(where, bwd_at(i)));
    });
    // The backward's two launches timed apart: the row pass (dx, partial dgamma rows) and the
    // reduction of the partial rows.
    const auto target = ja::runtime::Cuda::target(0);
    double bwd_launch_ms[2] = {0, 0};
    for (size_t k = 0; k < 2; ++k) {
      bwd_launch_ms[k] = median_ms(s, [&](int i) {
        const auto plan = plan_of<ja::ops::RmsNormBackwardPortable<false>>(bwd_at(i), *target);
        launch(s, plan.steps[k].launch);
      });
    }
    const double copy_gbps = 2.0 * bytes / copy / 1e6;
    std::printf("\n[%lld, %lld] %s (CUDA events, median of %d)\n", (long long)rows, (long long)n,
                std::string(ja::name(t)).c_str(), kRepeats);
    std::printf("%-22s %9s %9s %9s\n", "op", "ms", "GB/s", "of copy");
    auto row = [&](const char* op, double ms, double moved) {
      const double gbps = moved / ms / 1e6;
      std::printf("%-22s %9.4f %9.0f %9.3f\n", op, ms, gbps, gbps / copy_gbps);
    };
    row("d2d memcpy", copy, 2.0 * bytes);
    row("rms_norm", fwd, 2.0 * bytes);
    row("rms_norm_with_add", fused, 4.0 * bytes);
    row("rms_norm_bwd", bwd, 3.0 * bytes);
    const double partial_bytes = double(ja::ops::rmsnorm_bwd_workspace_bytes(rows, n));
    row("  bwd row pass", bwd_launch_ms[0], 3.0 * bytes + partial_bytes);
    row("  bwd dgamma reduce", bwd_launch_ms[1], partial_bytes);
    free_sets({g, dg, ws}, x, r, dy, y, ro);
  }
  staging_sweep(s, rng);
  split_sweep(s, rng);
  return 0;
}
