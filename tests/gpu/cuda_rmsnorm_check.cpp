// RMSNorm through the CUDA backend with no XLA: Handler<Op, Cuda>::run on device buffers, for every
// dtype and a grid of shapes, against a float64 reference computed here; outputs poisoned first.
// Then device time per op with CUDA events. Runs on the GPU machine (scripts/gpu_run.sh); prints
// 'N passed, M failed'.
#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
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

int passed = 0, failed = 0;

double to_double(DType t, const void* p, size_t i) {
  switch (t) {
    case DType::kBF16: return ja::bf16_to_float(static_cast<const uint16_t*>(p)[i]);
    case DType::kF16: return ja::f16_to_float(static_cast<const uint16_t*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}
void from_double(DType t, void* p, size_t i, double v) {
  switch (t) {
    case DType::kBF16: static_cast<uint16_t*>(p)[i] = ja::float_to_bf16(float(v)); break;
    case DType::kF16: static_cast<uint16_t*>(p)[i] = ja::float_to_f16(float(v)); break;
    default: static_cast<float*>(p)[i] = float(v);
  }
}
double round_to(DType t, double v) {
  std::vector<uint32_t> tmp(1);
  from_double(t, tmp.data(), 0, v);
  return to_double(t, tmp.data(), 0);
}

struct Dev {
  CUdeviceptr ptr = 0;
  size_t bytes = 0;
  explicit Dev(size_t b) : bytes(std::max<size_t>(b, 16)) { CHECK_CU(cuMemAlloc(&ptr, bytes)); }
  ~Dev() { cuMemFree(ptr); }
  void* p() const { return reinterpret_cast<void*>(ptr); }
  void put(const std::vector<uint8_t>& h) { CHECK_CU(cuMemcpyHtoD(ptr, h.data(), h.size())); }
  std::vector<uint8_t> get(size_t b) const {
    std::vector<uint8_t> h(b);
    CHECK_CU(cuMemcpyDtoH(h.data(), ptr, b));
    return h;
  }
  // NaN in every float format. cuMemsetD8 and cuMemcpyHtoD run on the legacy stream and may
  // still be in flight when they return, and the launches go to a non-blocking stream that does
  // not wait for it: runs synchronise the context first (before_run).
  void poison() { CHECK_CU(cuMemsetD8(ptr, 0xff, bytes)); }
};

// Poisoning and uploads are complete before a handler runs (see Dev::poison).
void before_run() { CHECK_CU(cuCtxSynchronize()); }

ja::ops::Tensor tensor(const Dev& d, DType t, std::initializer_list<int64_t> dims) {
  return ja::ops::Tensor::over(d.p(), t, dims);
}

std::vector<uint8_t> random_host(DType t, size_t count, std::mt19937& rng, double mean, double sd) {
  std::normal_distribution<double> dist(mean, sd);
  std::vector<uint8_t> h(count * ja::size_bytes(t));
  for (size_t i = 0; i < count; ++i) from_double(t, h.data(), i, dist(rng));
  return h;
}

// |got - ref| <= atol + rtol * |ref| for every element, NaN never passes.
bool close(DType t, const std::vector<uint8_t>& got, const std::vector<double>& ref, double scale,
           const char* what, int64_t rows, int64_t n) {
  const double rtol = t == DType::kBF16 ? 1.6e-2 : t == DType::kF16 ? 2e-3 : 2e-5;
  const double atol = rtol * scale;
  size_t bad = 0;
  double worst = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double g = to_double(t, got.data(), i);
    const double err = std::fabs(g - ref[i]);
    if (!(err <= atol + rtol * std::fabs(ref[i]))) ++bad;
    if (std::isfinite(err)) worst = std::max(worst, err);
  }
  const bool ok = bad == 0;
  std::printf("%s %-22s %-4s rows=%-6lld n=%-6lld worst_abs_err=%.3g bad=%zu\n",
              ok ? "PASS" : "FAIL", what, std::string(ja::name(t)).c_str(), (long long)rows,
              (long long)n, worst, bad);
  (ok ? passed : failed)++;
  return ok;
}

// The plan RMSNorm's one tier makes for a call, with its workspace where the handler put it.
template <typename Tier, typename Params>
ja::kernels::Plan plan_of(const Params& p) {
  const ja::Target target = *ja::runtime::Cuda::target(0);
  ja::kernels::Plan plan;
  if constexpr (requires { p.workspace; }) plan.workspace_base = p.workspace.data;
  Tier::plan(p, target, plan);
  return plan;
}

// The backward is a fill_device launch: it must have run exactly as many blocks as the device
// holds at once (the driver's occupancy of that kernel at that block size, times the SMs; for rows
// split over a cluster, the clusters the device holds, a slot each), capped by the plan, and said
// so in the workspace header the reduction reads. The backend sizes that grid from the occupancy
// it measured when the kernel resolved: it must agree with the driver asked here.
int split_shapes = 0;  // backward launches whose rows were split over a cluster
void check_persistent_slots(const ja::ops::RmsNormWithAddBwd::Params& p, const Dev& ws) {
  const ja::Target target = *ja::runtime::Cuda::target(0);
  const auto plan = plan_of<ja::ops::RmsNormBackwardPortable<true>>(p);
  const ja::kernels::Launch& l = plan.steps[0].launch;
  const auto a = l.args.unpack<ja::kernels::RmsNormBwdArgs>();
  const ja::runtime::Cuda::Kernel& k = ja::runtime::Cuda::resolve(0, *l.kernel);
  if (!k.status.ok()) {
    std::printf("FAIL rms_norm_bwd slots: %s\n", k.status.message().c_str());
    ++failed;
    return;
  }
  const auto backend_grid = k.occupancy.grid(l);
  int per_sm = 0;
  CHECK_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k.function,
                                                       static_cast<int>(l.block.x), 0));
  int64_t want = 0, want_blocks = 0;
  if (l.cluster > 1) {
    ++split_shapes;
    CUlaunchAttribute cluster{};
    cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    cluster.value.clusterDim = {l.cluster, 1, 1};
    CUlaunchConfig config{};
    config.gridDimX = l.cluster;
    config.gridDimY = config.gridDimZ = config.blockDimY = config.blockDimZ = 1;
    config.blockDimX = l.block.x;
    config.attrs = &cluster;
    config.numAttrs = 1;
    int clusters = 0;
    CHECK_CU(cuOccupancyMaxActiveClusters(&clusters, k.function, &config));
    const int64_t slots = std::min<int64_t>(l.grid.x / l.cluster, clusters);
    want = std::min<int64_t>(a.max_slots, slots);
    want_blocks = slots * l.cluster;
  } else {
    const int64_t blocks = std::min<int64_t>(l.grid.x, int64_t{target.compute_units} * per_sm);
    want = std::min<int64_t>(a.max_slots, blocks * a.rows_per_block);
    want_blocks = blocks;
  }
  int32_t got = -1;
  const std::vector<uint8_t> header = ws.get(sizeof(got));
  std::memcpy(&got, header.data(), sizeof(got));
  const bool ok = got == want && backend_grid.ok() && int64_t{backend_grid->x} == want_blocks;
  (ok ? passed : failed)++;
  if (!ok || per_sm < 1) {
    std::printf(
        "FAIL rms_norm_bwd slots: header says %d, expected %lld (%d blocks/SM x %d SMs, "
        "cap %u blocks); the backend's grid %s%lld, the driver's %lld blocks\n",
        got, static_cast<long long>(want), per_sm, target.compute_units, l.grid.x,
        backend_grid.ok() ? "" : backend_grid.status().message().c_str(),
        backend_grid.ok() ? static_cast<long long>(backend_grid->x) : -1LL,
        static_cast<long long>(want_blocks));
  }
}

// The fused forward stages its rows in shared memory only when the launch gives it the bytes (the
// plan does so when x is at least the size of L2). Whatever the plan chose, the same launch is
// rerun with the staging bytes and with none: both must give the bits the handler gave, which were
// checked against the reference. Both paths do the same arithmetic on the same values.
int staged_shapes = 0;
void check_staging(CUstream stream, DType t, int64_t rows, int64_t n, const Dev& x, const Dev& r,
                   const Dev& g, Dev& y, Dev& ro, const std::vector<uint8_t>& y_want,
                   const std::vector<uint8_t>& ro_want) {
  ja::ops::RmsNormWithAdd::Params p{tensor(x, t, {rows, n}),
                                    tensor(g, t, {n}),
                                    tensor(y, t, {rows, n}),
                                    tensor(r, t, {rows, n}),
                                    tensor(ro, t, {rows, n}),
                                    1e-6f,
                                    {}};
  const ja::kernels::Launch planned =
      plan_of<ja::ops::RmsNormForwardPortable<true>>(p).steps[0].launch;
  const auto a = planned.args.unpack<ja::kernels::RmsNormFwdArgs>();
  const int64_t esz = int64_t(ja::size_bytes(t));
  const int64_t stage_bytes = 2 * a.rows_per_block * n * esz;
  if (stage_bytes > ja::kernels::rmsnorm::kMaxStagedBytes) return;
  // Where the kernel stages at all: 16-byte vectors (the widest), rows in registers.
  const int vec = ja::kernels::rmsnorm_max_vec(t);
  const ja::ops::RowLayout layout{vec, a.threads_per_row, a.rows_per_block};
  const bool stages = planned.kernel == &ja::kernels::rmsnorm_fwd_kernel(t, vec, true) &&
                      layout.row_in_registers(n, ja::kernels::rmsnorm::kChunksFwd);
  staged_shapes += stages;
  const ja::runtime::Cuda::Kernel& kernel = ja::runtime::Cuda::resolve(0, *planned.kernel);
  for (uint32_t shared : {static_cast<uint32_t>(stage_bytes), 0u}) {
    ja::kernels::Launch l = planned;
    l.shared_bytes = shared;
    y.poison();
    ro.poison();
    before_run();
    const ja::Status st =
        kernel.status.ok() ? ja::runtime::Cuda::launch(0, stream, kernel, l) : kernel.status;
    CHECK_CU(cuStreamSynchronize(stream));
    const size_t bytes = rows * n * esz;
    const bool ok = st.ok() && y.get(bytes) == y_want && ro.get(bytes) == ro_want;
    (ok ? passed : failed)++;
    if (!ok) {
      std::printf(
          "FAIL rms_norm_with_add %s rows=%lld n=%lld, %u bytes of shared memory: not the "
          "handler's bits%s%s\n",
          std::string(ja::name(t)).c_str(), (long long)rows, (long long)n, shared,
          st.ok() ? "" : ": ", st.message().c_str());
    }
  }
}

// The backend launches every kernel as a programmatic dependent of the stream's previous one, so
// a kernel's blocks may start before that kernel has finished. Chains of dependent calls, with no
// host synchronisation between them, must give the bits of the same chain synchronised after every
// call. Forward: ping-pong between two buffers (each call reads what the previous wrote, and
// overwrites what the previous read). Backward: dx becomes the next dy, and every call reuses one
// workspace, which the previous call's dgamma reduction reads while the next row pass writes it.
void check_dependent_chain(CUstream stream, DType t, int64_t rows, int64_t n, std::mt19937& rng) {
  constexpr int kSteps = 8;
  const size_t count = rows * n, esz = ja::size_bytes(t);
  const auto hx = random_host(t, count, rng, 0.0, 1.5), hg = random_host(t, n, rng, 1.0, 0.2);
  Dev a(count * esz), b(count * esz), x(count * esz), g(n * esz), dg(n * esz),
      ws(ja::ops::rmsnorm_bwd_workspace_bytes(rows, n));
  g.put(hg);
  x.put(hx);
  ja::ffi::Where<ja::runtime::Cuda> where{stream, 0};
  auto run = [&](bool backward, bool synchronise) {
    a.put(hx);
    b.poison();
    ws.poison();
    before_run();
    for (int k = 0; k < kSteps; ++k) {
      const Dev& in = k % 2 == 0 ? a : b;
      const Dev& out = k % 2 == 0 ? b : a;
      ja::Status st;
      if (backward) {
        ja::ops::RmsNormBwd::Params p{tensor(in, t, {rows, n}),
                                      tensor(x, t, {rows, n}),
                                      tensor(g, t, {n}),
                                      {},
                                      tensor(out, t, {rows, n}),
                                      tensor(dg, t, {n}),
                                      tensor(ws, DType::kU8, {int64_t(ws.bytes)}),
                                      1e-6f,
                                      {}};
        st = ja::ffi::Handler<ja::ops::RmsNormBwd, ja::runtime::Cuda>::run(where, p);
      } else {
        ja::ops::RmsNorm::Params p{tensor(in, t, {rows, n}),
                                   tensor(g, t, {n}),
                                   tensor(out, t, {rows, n}),
                                   {},
                                   {},
                                   1e-6f,
                                   {}};
        st = ja::ffi::Handler<ja::ops::RmsNorm, ja::runtime::Cuda>::run(where, p);
      }
      if (!st.ok()) {
        std::printf("FAIL chain run: %s\n", st.message().c_str());
        ++failed;
      }
      if (synchronise) CHECK_CU(cuStreamSynchronize(stream));
    }
    CHECK_CU(cuStreamSynchronize(stream));
    std::vector<uint8_t> got = (kSteps % 2 == 0 ? a : b).get(count * esz);
    if (backward) {
      const auto d = dg.get(n * esz);
      got.insert(got.end(), d.begin(), d.end());
    }
    return got;
  };
  for (bool backward : {false, true}) {
    const auto chained = run(backward, false), synchronised = run(backward, true);
    bool finite = true;
    for (size_t i = 0; i < chained.size() / esz; ++i) {
      finite = finite && std::isfinite(to_double(t, chained.data(), i));
    }
    const bool ok = finite && chained == synchronised;
    (ok ? passed : failed)++;
    std::printf(
        "%s %-22s %-4s rows=%-6lld n=%-6lld %d dependent calls, the bits of the "
        "synchronised chain%s\n",
        ok ? "PASS" : "FAIL", backward ? "rms_norm_bwd chain" : "rms_norm chain",
        std::string(ja::name(t)).c_str(), (long long)rows, (long long)n, kSteps,
        finite ? "" : " (non-finite values)");
  }
}

void check_shape(CUstream stream, DType t, int64_t rows, int64_t n, std::mt19937& rng) {
  const size_t count = rows * n, esz = ja::size_bytes(t);
  const double eps = 1e-6;
  auto hx = random_host(t, count, rng, 0.0, 1.5);
  auto hr = random_host(t, count, rng, 0.5, 1.0);
  auto hg = random_host(t, n, rng, 1.0, 0.2);
  auto hdy = random_host(t, count, rng, 0.0, 1.0);
  auto hdr = random_host(t, count, rng, 0.0, 1.0);
  Dev x(count * esz), r(count * esz), g(n * esz), y(count * esz), ro(count * esz), dy(count * esz),
      dr(count * esz), dx(count * esz), dg(n * esz),
      ws(ja::ops::rmsnorm_bwd_workspace_bytes(rows, n));
  x.put(hx);
  r.put(hr);
  g.put(hg);
  dy.put(hdy);
  dr.put(hdr);
  ja::ffi::Where<ja::runtime::Cuda> where{stream, 0};

  // Forward and fused forward.
  for (bool fused : {false, true}) {
    y.poison();
    ro.poison();
    before_run();
    ja::Status st;
    if (fused) {
      ja::ops::RmsNormWithAdd::Params p{tensor(x, t, {rows, n}),
                                        tensor(g, t, {n}),
                                        tensor(y, t, {rows, n}),
                                        tensor(r, t, {rows, n}),
                                        tensor(ro, t, {rows, n}),
                                        float(eps),
                                        {}};
      st = ja::ffi::Handler<ja::ops::RmsNormWithAdd, ja::runtime::Cuda>::run(where, p);
    } else {
      ja::ops::RmsNorm::Params p{tensor(x, t, {rows, n}),
                                 tensor(g, t, {n}),
                                 tensor(y, t, {rows, n}),
                                 {},
                                 {},
                                 float(eps),
                                 {}};
      st = ja::ffi::Handler<ja::ops::RmsNorm, ja::runtime::Cuda>::run(where, p);
    }
    if (!st.ok()) {
      std::printf("FAIL run: %s\n", st.message().c_str());
      ++failed;
      return;
    }
    CHECK_CU(cuStreamSynchronize(stream));
    std::vector<double> ref(count), res_ref(count);
    for (int64_t i = 0; i < rows; ++i) {
      double ss = 0;
      for (int64_t j = 0; j < n; ++j) {
        double v = to_double(t, hx.data(), i * n + j);
        if (fused) v = round_to(t, v + to_double(t, hr.data(), i * n + j));
        res_ref[i * n + j] = v;
        ss += v * v;
      }
      const double rstd = 1 / std::sqrt(ss / n + eps);
      for (int64_t j = 0; j < n; ++j)
        ref[i * n + j] = res_ref[i * n + j] * rstd * to_double(t, hg.data(), j);
    }
    const auto y_got = y.get(count * esz), ro_got = ro.get(count * esz);
    close(t, y_got, ref, 1.0, fused ? "rms_norm_with_add.y" : "rms_norm.y", rows, n);
    if (fused) close(t, ro_got, res_ref, 0.0, "rms_norm_with_add.res", rows, n);
    if (fused) check_staging(stream, t, rows, n, x, r, g, y, ro, y_got, ro_got);
  }

  // Backward (fused: dresidual added), dgamma reduced over rows.
  for (bool fused : {false, true}) {
    dx.poison();
    dg.poison();
    ws.poison();
    before_run();
    ja::ops::RmsNormWithAddBwd::Params p{tensor(dy, t, {rows, n}),
                                         tensor(x, t, {rows, n}),
                                         tensor(g, t, {n}),
                                         tensor(dr, t, {rows, n}),
                                         tensor(dx, t, {rows, n}),
                                         tensor(dg, t, {n}),
                                         tensor(ws, DType::kU8, {int64_t(ws.bytes)}),
                                         float(eps),
                                         {}};
    ja::Status st;
    if (fused) {
      st = ja::ffi::Handler<ja::ops::RmsNormWithAddBwd, ja::runtime::Cuda>::run(where, p);
    } else {
      ja::ops::RmsNormBwd::Params q{p.dy,     p.x,         p.gamma,   {}, p.dx,
                                    p.dgamma, p.workspace, p.epsilon, {}};
      st = ja::ffi::Handler<ja::ops::RmsNormBwd, ja::runtime::Cuda>::run(where, q);
    }
    if (!st.ok()) {
      std::printf("FAIL run: %s\n", st.message().c_str());
      ++failed;
      return;
    }
    CHECK_CU(cuStreamSynchronize(stream));
    check_persistent_slots(p, ws);
    std::vector<double> ref(count), dgref(n, 0.0);
    double dx_scale = 0;
    for (int64_t i = 0; i < rows; ++i) {
      double ss = 0, dot = 0;
      for (int64_t j = 0; j < n; ++j) {
        const double xv = to_double(t, hx.data(), i * n + j);
        ss += xv * xv;
        dot += to_double(t, hg.data(), j) * to_double(t, hdy.data(), i * n + j) * xv;
      }
      const double rstd = 1 / std::sqrt(ss / n + eps);
      for (int64_t j = 0; j < n; ++j) {
        const double xv = to_double(t, hx.data(), i * n + j),
                     d = to_double(t, hdy.data(), i * n + j);
        double v = rstd * to_double(t, hg.data(), j) * d - rstd * rstd * rstd * xv * dot / n;
        if (fused) v += to_double(t, hdr.data(), i * n + j);
        ref[i * n + j] = v;
        // dx is a difference of terms of this size: cancellation leaves an error relative to them.
        dx_scale =
            std::max({dx_scale, std::fabs(v), std::fabs(rstd * to_double(t, hg.data(), j) * d)});
        dgref[j] += d * xv * rstd;
      }
    }
    double dg_scale = 0;
    for (double v : dgref) dg_scale = std::max(dg_scale, std::fabs(v));
    close(t, dx.get(count * esz), ref, 0.05 * dx_scale,
          fused ? "rms_norm_with_add_bwd.dx" : "rms_norm_bwd.dx", rows, n);
    close(t, dg.get(n * esz), dgref, 0.05 * dg_scale, "rms_norm_bwd.dgamma", rows, n);
  }
}

}  // namespace

// Rows x n: tiny, odd, Llama/Qwen sizes, rows past one block's registers in the backward (split
// over clusters of 2 to 8 blocks, evenly or not, or streamed past 8), and many rows per dgamma
// slot.
const std::vector<std::pair<int64_t, int64_t>> kShapes = {
    {1, 1},        {3, 7},       {5, 64},      {600, 64},   {7, 3584},   {4, 4095},    {33, 4096},
    {2, 5120},     {3, 8192},    {2, 16384},   {1, 16383},  {5000, 256}, {2100, 33},   {9000, 2048},
    {2100, 10240}, {130, 12000}, {300, 32768}, {64, 65536}, {40, 10001}, {1000, 16384}};

int main() {
  use_device0();
  CUstream stream;
  CHECK_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  // What the initialize stage does for every kernel a plan names, here for all of them up front:
  // resolve loads the code object once per device and each kernel on first use (checking its
  // parameters, measuring the occupancy of fill_device kernels: 32 block sizes, and cluster sizes
  // 2..8 for the split ones). Timed.
  const size_t modules_before = ja::runtime::Cuda::loaded_modules(0);
  const size_t kernels_before = ja::runtime::Cuda::resolved_kernels(0);
  const auto t0 = std::chrono::steady_clock::now();
  ja::Status st;
  bool one_module = true;
  size_t resolved = 0;
  for (const ja::kernels::KernelInfo* k : ja::kernels::kRmsNormKernels) {
    const ja::runtime::Cuda::Kernel& kernel = ja::runtime::Cuda::resolve(0, *k);
    if (st.ok() && !kernel.status.ok()) st = kernel.status;
    ++resolved;
    one_module = one_module && ja::runtime::Cuda::loaded_modules(0) == modules_before + 1 &&
                 ja::runtime::Cuda::resolved_kernels(0) == kernels_before + resolved;
  }
  const double load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%s code object load + cuFuncGetParamInfo check of %zu kernels (%.2f ms)%s%s\n",
              st.ok() ? "PASS" : "FAIL", ja::kernels::kRmsNormKernels.size(), load_ms,
              st.ok() ? "" : ": ", st.message().c_str());
  (st.ok() ? passed : failed)++;
  // One module load for the code object, one cache entry per kernel, and a second resolve of a
  // kernel is the same entry (a lookup).
  const ja::kernels::KernelInfo& first = *ja::kernels::kRmsNormKernels[0];
  const bool cached =
      one_module && modules_before == 0 && kernels_before == 0 &&
      &ja::runtime::Cuda::resolve(0, first) == &ja::runtime::Cuda::resolve(0, first) &&
      ja::runtime::Cuda::resolved_kernels(0) == ja::kernels::kRmsNormKernels.size();
  std::printf("%s resolve loads the code object once (%zu module) and each kernel once (%zu)\n",
              cached ? "PASS" : "FAIL", ja::runtime::Cuda::loaded_modules(0),
              ja::runtime::Cuda::resolved_kernels(0));
  (cached ? passed : failed)++;
  std::mt19937 rng(1234);
  for (DType t : {DType::kBF16, DType::kF16, DType::kF32}) {
    for (auto [rows, n] : kShapes) {
      check_shape(stream, t, rows, n, rng);
    }
  }
  // One wave of blocks, many waves, split over clusters.
  for (DType t : {DType::kBF16, DType::kF32}) {
    for (auto [rows, n] :
         std::vector<std::pair<int64_t, int64_t>>{{8, 1024}, {16384, 4096}, {1000, 16384}}) {
      check_dependent_chain(stream, t, rows, n, rng);
    }
  }
  std::printf("fused forward shapes rerun with rows staged in shared memory and without: %d\n",
              staged_shapes);
  std::printf("backward launches with rows split over a thread-block cluster: %d\n", split_shapes);
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
