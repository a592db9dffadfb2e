// Our GEMM kernels on an sm_90 GPU with nothing but the CUDA driver API: no XLA, no jax_aiter
// runtime. Loads the cubins of kernels_co/gemm.kernel.cpp and kernels_co/aiter_bf16gemm.twin.cpp,
//   1. checks every kernel's parameter layout (cuFuncGetParamInfo) against our argument structs,
//   2. checks every portable kernel (tile x dtype x aligned/any, out bf16/f16/f32, bias on/off,
//      one split and several followed by jax_aiter_gemm_reduce) and every twin row (split 1 and,
//      for the splitk_clean rows, 2..16 through the semaphore, which must be left zero) against a
//      float64 reference on random data and odd shapes, outputs poisoned with NaN first and a guard
//      past the end that must stay untouched; prints PASS / FAIL lines and 'N passed, M failed',
//   3. times the portable kernels (bf16 in and out) with CUDA events at the benchmark shapes
//      (4096^3, 8192^3, M in {1, 16, 128} x (N, K) in {(4096, 4096), (8192, 28672)}): median of 25
//      runs rotating 4 input sets (together larger than L2), the tiles that matter for each shape
//      at a few split counts plus the plan rule's choice (marked *), TFLOP/s and the weight
//      stream's GB/s, after a device-to-device copy's bandwidth; then one line per shape: the
//      rule's choice and the best timed.
// Usage: cuda_gemm_kernels GEMM_CUBIN [TWIN_CUBIN] [check|bench|all]
// Build the cubins with
//   nvcc -cubin -arch=sm_90 -O3 -std=c++17 -x cu -I kernels_co/include -I include -o X.cubin
//        kernels_co/gemm.kernel.cpp   (and kernels_co/aiter_bf16gemm.twin.cpp)
// Exit status 1 when any check fails.
#include <cuda.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/kernels/aiter/bf16gemm.hpp"
#include "jax_aiter/kernels/gemm.hpp"
#include "jax_aiter/ops/gemm_portable.hpp"

#include "cuda_check.hpp"

namespace jk = jax_aiter::kernels;
using jax_aiter::bf16_to_float;
using jax_aiter::f16_to_float;
using jax_aiter::float_to_bf16;
using jax_aiter::float_to_f16;

namespace {

int passed = 0, failed = 0;

void verdict(bool ok, const std::string& what) {
  if (ok) {
    ++passed;
  } else {
    ++failed;
  }
  std::printf("%s %s\n", ok ? "PASS" : "FAIL", what.c_str());
}

enum class In { kBF16, kF16 };
const char* out_name(int o) { return o == 0 ? "bf16" : o == 1 ? "f16" : "f32"; }
int out_bytes(int o) { return o == 2 ? 4 : 2; }
float decode(In t, uint16_t h) { return t == In::kBF16 ? bf16_to_float(h) : f16_to_float(h); }
uint16_t encode(In t, float f) { return t == In::kBF16 ? float_to_bf16(f) : float_to_f16(f); }

std::vector<uint16_t> random_matrix(In t, size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<uint16_t> v(n);
  for (auto& x : v) x = encode(t, d(rng));
  return v;
}

// ---- kernels and launches ----
struct Kernel {
  CUfunction f = nullptr;
  size_t arg_bytes = 0;  // the end of the last parameter: what a launch passes
  uint32_t shared = 0;   // dynamic shared memory a launch gives (KernelInfo::dynamic_shared)
  std::string symbol;
};

// Resolves a kernel and checks its parameters against our struct: every field of ours that lies
// inside the kernel's parameter block must start a parameter of the field's size; the block must
// end within our struct. `fields_beyond` lists fields that may lie past the block (the semaphore of
// the AITER rows that declare none).
Kernel resolve(CUmodule m, std::string_view symbol, std::span<const jk::ArgField> fields,
               size_t struct_bytes, uint32_t shared = 0) {
  Kernel k;
  k.symbol = std::string(symbol);
  k.shared = shared;
  if (cuModuleGetFunction(&k.f, m, k.symbol.c_str()) != CUDA_SUCCESS) {
    verdict(false, "params " + k.symbol + ": not in the cubin");
    k.f = nullptr;
    return k;
  }
  if (shared > 48 * 1024) {
    CHECK_CU(cuFuncSetAttribute(k.f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                static_cast<int>(shared)));
  }
  std::map<size_t, size_t> params;  // offset -> size
  for (size_t i = 0;; ++i) {
    size_t off = 0, size = 0;
    if (cuFuncGetParamInfo(k.f, i, &off, &size) != CUDA_SUCCESS) break;
    params[off] = size;
    k.arg_bytes = std::max(k.arg_bytes, off + size);
  }
  std::string problems;
  for (const jk::ArgField& f : fields) {
    if (f.offset >= k.arg_bytes) continue;  // a field the kernel does not declare (checked below)
    const auto it = params.find(f.offset);
    if (it == params.end() || it->second != f.size) {
      problems += " " + std::string(f.name) + "@" + std::to_string(f.offset);
    }
  }
  const bool ok = problems.empty() && k.arg_bytes <= struct_bytes && !params.empty();
  verdict(ok, "params " + k.symbol + ": " + std::to_string(params.size()) + " parameters, " +
                  std::to_string(k.arg_bytes) + " bytes" +
                  (problems.empty() ? "" : "; mismatched:" + problems));
  return k;
}

struct Grid {
  unsigned x, y, z;
};

template <typename Args>
void launch(const Kernel& k, Grid g, unsigned block, const Args& args, CUstream s = nullptr) {
  size_t size = k.arg_bytes;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, const_cast<Args*>(&args),
                   CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  CHECK_CU(cuLaunchKernel(k.f, g.x, g.y, g.z, block, 1, 1, k.shared, s, nullptr, extra));
}

unsigned cdiv(int64_t a, int64_t b) { return static_cast<unsigned>((a + b - 1) / b); }

// C[m, n] = sum_k a[m, k] b[n, k] in float64 (a: M x lda, b: N x lda, K used), on all cores.
std::vector<double> reference(const std::vector<float>& a, const std::vector<float>& b, int M,
                              int N, int K, int lda) {
  std::vector<double> c(static_cast<size_t>(M) * N);
  const int workers = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (int w = 0; w < workers; ++w) {
    pool.emplace_back([&, w] {
      for (int m = w; m < M; m += workers) {
        for (int n = 0; n < N; ++n) {
          double s = 0;
          const float* x = &a[static_cast<size_t>(m) * lda];
          const float* y = &b[static_cast<size_t>(n) * lda];
          for (int k = 0; k < K; ++k) s += static_cast<double>(x[k]) * y[k];
          c[static_cast<size_t>(m) * N + n] = s;
        }
      }
    });
  }
  for (auto& t : pool) t.join();
  return c;
}

double read_out(const std::vector<unsigned char>& out, int o, size_t i) {
  if (o == 2) {
    float f;
    std::memcpy(&f, &out[i * 4], 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, &out[i * 2], 2);
  return o == 0 ? bf16_to_float(h) : f16_to_float(h);
}

// Norm-wise relative error ||got - ref|| / ||ref||; infinity when anything is not finite.
double rel_error(const std::vector<double>& ref, const std::vector<unsigned char>& out, int o) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double g = read_out(out, o, i);
    if (!std::isfinite(g)) return INFINITY;
    num += (g - ref[i]) * (g - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}
double tolerance(int o) { return o == 0 ? 1e-2 : o == 1 ? 2e-3 : 1e-3; }

constexpr size_t kGuard = 4096;  // poisoned bytes after each output that must stay poisoned

// ---- 2. portable kernels ----
struct Shape {
  int M, N, K;
};

void check_portable(CUmodule mod) {
  std::map<std::string, Kernel> kernels;
  for (size_t t = 0; t < jk::kGemmTiles.size(); ++t) {
    for (In in : {In::kBF16, In::kF16}) {
      for (bool aligned : {true, false}) {
        const auto& info = jk::gemm_kernel(
            t, in == In::kBF16 ? jax_aiter::DType::kBF16 : jax_aiter::DType::kF16, aligned);
        kernels[std::string(info.symbol)] =
            resolve(mod, info.symbol, info.fields, sizeof(jk::GemmArgs), info.dynamic_shared);
      }
    }
  }
  const Kernel reduce = resolve(mod, jk::kGemmReduceKernel.symbol, jk::kGemmReduceKernel.fields,
                                sizeof(jk::GemmReduceArgs));

  // The last four reach the decode tiles' K splits (BK up to 1024) and both of their row paths
  // (M <= 8 and 9..16 rows in a block), with ragged N and a last split of one 8-element chunk.
  const Shape shapes[] = {{1, 64, 64},     {7, 130, 72},   {33, 300, 1000}, {100, 256, 512},
                          {257, 200, 136}, {16, 128, 256}, {33, 100, 77},   {257, 129, 999},
                          {1, 300, 65},    {1, 136, 4104}, {5, 200, 3080},  {16, 72, 2056},
                          {9, 130, 4096}};
  std::mt19937 rng(1234);
  for (const Shape& s : shapes) {
    for (In in : {In::kBF16, In::kF16}) {
      const auto a = random_matrix(in, static_cast<size_t>(s.M) * s.K, rng);
      const auto b = random_matrix(in, static_cast<size_t>(s.N) * s.K, rng);
      const auto bias = random_matrix(in, s.N, rng);
      std::vector<float> af(a.size()), bf(b.size());
      for (size_t i = 0; i < a.size(); ++i) af[i] = decode(in, a[i]);
      for (size_t i = 0; i < b.size(); ++i) bf[i] = decode(in, b[i]);
      const auto ref = reference(af, bf, s.M, s.N, s.K, s.K);
      std::vector<double> ref_bias(ref);
      for (size_t i = 0; i < ref.size(); ++i) ref_bias[i] += decode(in, bias[i % s.N]);
      DevBuf da = upload(a), db = upload(b), dbias = upload(bias);
      const size_t mn = static_cast<size_t>(s.M) * s.N;
      DevBuf out(mn * 4 + kGuard);
      DevBuf partials(16 * mn * 4);
      std::vector<unsigned char> host(out.bytes);

      for (size_t t = 0; t < jk::kGemmTiles.size(); ++t) {
        const jk::GemmTile& tile = jk::kGemmTiles[t];
        for (bool aligned : {true, false}) {
          if (aligned && s.K % 8 != 0) continue;
          const auto& info = jk::gemm_kernel(
              t, in == In::kBF16 ? jax_aiter::DType::kBF16 : jax_aiter::DType::kF16, aligned);
          const Kernel& k = kernels[std::string(info.symbol)];
          if (!k.f) continue;
          int ok = 0, total = 0;
          std::string first_failure;
          for (int o = 0; o < 3; ++o) {
            for (bool with_bias : {false, true}) {
              for (int want_splits : {1, 3, 16}) {
                int k_chunk = s.K;
                if (want_splits > 1) {
                  k_chunk = static_cast<int>(cdiv(cdiv(s.K, want_splits), tile.bk)) * tile.bk;
                }
                const int splits = static_cast<int>(cdiv(s.K, k_chunk));
                if (want_splits > 1 && splits == 1) continue;
                CHECK_CU(cuMemsetD8(out.p, 0xFF, out.bytes));
                CHECK_CU(cuMemsetD8(partials.p, 0xFF, partials.bytes));
                jk::GemmArgs args{};
                args.a = da.ptr();
                args.b = db.ptr();
                args.bias = with_bias && splits == 1 ? dbias.ptr() : nullptr;
                args.out = out.ptr();
                args.partials = splits > 1 ? partials.ptr() : nullptr;
                args.M = s.M, args.N = s.N, args.K = s.K;
                args.k_chunk = k_chunk;
                args.out_dtype = o;
                args.splits = splits;
                launch(k, {cdiv(s.N, tile.bn), cdiv(s.M, tile.bm), static_cast<unsigned>(splits)},
                       tile.threads, args);
                if (splits > 1) {
                  jk::GemmReduceArgs r{};
                  r.partials = partials.ptr();
                  r.bias = with_bias ? dbias.ptr() : nullptr;
                  r.out = out.ptr();
                  r.M = s.M, r.N = s.N;
                  r.splits = splits;
                  r.out_dtype = o;
                  r.bias_dtype = in == In::kBF16 ? jk::gemm::kOutBF16 : jk::gemm::kOutF16;
                  launch(reduce,
                         {cdiv(static_cast<int64_t>(mn),
                               jk::gemm::kReduceThreads * jk::gemm::kReduceVec),
                          1, 1},
                         jk::gemm::kReduceThreads, r);
                }
                CHECK_CU(cuCtxSynchronize());
                CHECK_CU(cuMemcpyDtoH(host.data(), out.p, host.size()));
                const double e = rel_error(with_bias ? ref_bias : ref, host, o);
                const bool good = e < tolerance(o) && guard_intact(host, mn * out_bytes(o));
                ++total;
                if (good) {
                  ++ok;
                } else if (first_failure.empty()) {
                  char buf[160];
                  std::snprintf(
                      buf, sizeof buf, " (first failure: out %s bias %d splits %d err %.3g%s)",
                      out_name(o), with_bias, splits, e,
                      guard_intact(host, mn * out_bytes(o)) ? "" : ", wrote past the end");
                  first_failure = buf;
                }
              }
            }
          }
          char what[256];
          std::snprintf(what, sizeof what, "%s M=%d N=%d K=%d: %d/%d combinations%s",
                        k.symbol.c_str(), s.M, s.N, s.K, ok, total, first_failure.c_str());
          verdict(ok == total, what);
        }
      }
    }
  }
}

// ---- 2b. AITER BF16 GEMM twins ----
void check_twins(CUmodule mod) {
  struct TwinShape {
    int M, N, K, pad;  // pad: extra elements per A/B row (byte strides > K * 2)
  };
  const TwinShape shapes[] = {{1, 64, 64, 0},      {7, 192, 256, 0},   {33, 300, 640, 0},
                              {100, 128, 1024, 8}, {257, 256, 512, 0}, {33, 130, 999, 0}};
  DevBuf sem(jk::aiter_bf16gemm::kSemaphoreCounters * 4);
  CHECK_CU(cuMemsetD32(sem.p, 0, jk::aiter_bf16gemm::kSemaphoreCounters));  // once: kept zero
  std::vector<uint32_t> sem_host(jk::aiter_bf16gemm::kSemaphoreCounters);
  std::mt19937 rng(99);
  for (const auto& row : jk::kAiterBf16GemmRows) {
    const Kernel k =
        resolve(mod, row.kernel.symbol, row.kernel.fields, sizeof(jk::AiterBf16GemmArgs));
    if (!k.f) continue;
    const size_t expected_bytes = row.prefetch != 0 ? 336 : 352;
    verdict(k.arg_bytes == expected_bytes, "params " + k.symbol + ": segment " +
                                               std::to_string(k.arg_bytes) + ", AITER declares " +
                                               std::to_string(expected_bytes));
    for (const TwinShape& s : shapes) {
      const int lda = s.K + s.pad;
      const auto a = random_matrix(In::kBF16, static_cast<size_t>(s.M) * lda, rng);
      const auto b = random_matrix(In::kBF16, static_cast<size_t>(s.N) * lda, rng);
      const auto bias = random_matrix(In::kBF16, s.N, rng);
      std::vector<float> af(a.size()), bf(b.size());
      for (size_t i = 0; i < a.size(); ++i) af[i] = bf16_to_float(a[i]);
      for (size_t i = 0; i < b.size(); ++i) bf[i] = bf16_to_float(b[i]);
      const auto ab = reference(af, bf, s.M, s.N, s.K, lda);
      const size_t mn = static_cast<size_t>(s.M) * s.N;
      DevBuf da = upload(a), db = upload(b), dbias = upload(bias);
      DevBuf out(mn * 4 + kGuard), c(mn * 4);
      std::vector<unsigned char> host(out.bytes);
      std::uniform_real_distribution<float> d(-1.f, 1.f);
      std::vector<float> c32(mn);
      std::vector<uint16_t> c16(mn);
      for (size_t i = 0; i < mn; ++i) c16[i] = float_to_bf16(c32[i] = d(rng));
      std::vector<int> splits = {1};
      if (row.split_k && s.K % 64 == 0) splits = {1, 2, 3, 5, 16};
      for (int split : splits) {
        const unsigned gx = cdiv(s.N, row.tile_n), gy = cdiv(s.M, row.tile_m);
        if (split > 1 && gx * gy > static_cast<unsigned>(jk::aiter_bf16gemm::kSemaphoreCounters)) {
          continue;
        }
        int ok = 0, total = 0;
        std::string first_failure;
        for (int b16 : {1, 0}) {
          if (b16) {
            CHECK_CU(cuMemcpyHtoD(c.p, c16.data(), mn * 2));
          } else {
            CHECK_CU(cuMemcpyHtoD(c.p, c32.data(), mn * 4));
          }
          for (bool with_bias : {false, true}) {
            for (bool with_c : {false, true}) {
              const float alpha = with_c ? 0.5f : 1.f, beta = with_c ? 0.25f : 0.f;
              std::vector<double> ref(mn);
              for (size_t i = 0; i < mn; ++i) {
                ref[i] = alpha * ab[i] +
                         (with_c ? beta * (b16 ? bf16_to_float(c16[i]) : c32[i]) : 0.) +
                         (with_bias ? bf16_to_float(bias[i % s.N]) : 0.);
              }
              CHECK_CU(cuMemsetD8(out.p, 0xFF, out.bytes));  // NaN in bf16 and f32
              jk::AiterBf16GemmArgs args{};
              const uint32_t esize = b16 ? 2 : 4;
              args.D = out.ptr();
              args.C = with_c ? c.ptr() : nullptr;
              args.A = da.ptr();
              args.B = db.ptr();
              args.alpha = alpha;
              args.beta = beta;
              args.stride_D0 = s.N * esize;
              args.stride_C0 = s.N * esize;
              args.stride_A0 = lda * 2;
              args.stride_B0 = lda * 2;
              args.M = s.M, args.N = s.N, args.K = s.K;
              args.splitk = split;
              args.is_out_b16 = b16;
              args.bias = with_bias ? dbias.ptr() : nullptr;
              args.add_bias = with_bias ? 1 : 0;
              args.semaphore = split > 1 ? reinterpret_cast<void*>(sem.p) : nullptr;
              launch(k, {gx, gy, static_cast<unsigned>(split)}, 256, args);
              CHECK_CU(cuCtxSynchronize());
              CHECK_CU(cuMemcpyDtoH(host.data(), out.p, host.size()));
              CHECK_CU(cuMemcpyDtoH(sem_host.data(), sem.p, sem_host.size() * 4));
              const bool sem_zero =
                  std::all_of(sem_host.begin(), sem_host.end(), [](uint32_t v) { return v == 0; });
              const double e = rel_error(ref, host, b16 ? 0 : 2);
              const bool good =
                  e < (b16 ? 1e-2 : 1e-3) && sem_zero && guard_intact(host, mn * esize);
              ++total;
              if (good) {
                ++ok;
              } else if (first_failure.empty()) {
                char buf[200];
                std::snprintf(buf, sizeof buf, " (first failure: out %s bias %d C %d err %.3g%s%s)",
                              b16 ? "bf16" : "f32", with_bias, with_c, e,
                              sem_zero ? "" : ", semaphore not zero",
                              guard_intact(host, mn * esize) ? "" : ", wrote past the end");
                first_failure = buf;
                if (!sem_zero) CHECK_CU(cuMemsetD32(sem.p, 0, sem_host.size()));
              }
            }
          }
        }
        char what[320];
        std::snprintf(what, sizeof what, "%s M=%d N=%d K=%d lda=%d split=%d: %d/%d combinations%s",
                      k.symbol.c_str(), s.M, s.N, s.K, lda, split, ok, total,
                      first_failure.c_str());
        verdict(ok == total, what);
      }
    }
  }
}

// ---- 3. timing ----
constexpr int kSets = 4, kWarmup = 3, kRuns = 25;

// A buffer of `bytes` random bf16 values in [-1, 1] (a 16 MiB random block, repeated).
DevBuf random_device(size_t bytes, std::mt19937& rng) {
  static std::vector<uint16_t> block;
  if (block.empty()) block = random_matrix(In::kBF16, 8u << 20, rng);
  DevBuf b(bytes);
  for (size_t off = 0; off < bytes; off += block.size() * 2) {
    CHECK_CU(cuMemcpyHtoD(b.p + off, block.data(), std::min(bytes - off, block.size() * 2)));
  }
  return b;
}

struct Timing {
  std::string tile;
  int splits;
  double ms;
};

// What each benchmark shape times: tiles by name, each at these split counts (requested; the
// K chunk is rounded up to the tile's BK, so fewer may run), plus the plan rule's own choice.
struct BenchCase {
  int M, N, K;
  std::vector<const char*> tiles;
  std::vector<int> splits;
};

// Device-to-device copy bandwidth (bytes read + written), the decode shapes' ceiling.
double copy_gbs() {
  const size_t bytes = size_t{1} << 30;
  DevBuf src(bytes), dst(bytes);
  CHECK_CU(cuMemsetD8(src.p, 1, bytes));
  CUevent e0, e1;
  CHECK_CU(cuEventCreate(&e0, CU_EVENT_DEFAULT));
  CHECK_CU(cuEventCreate(&e1, CU_EVENT_DEFAULT));
  std::vector<double> ms;
  for (int r = 0; r < 8; ++r) {
    CHECK_CU(cuEventRecord(e0, nullptr));
    CHECK_CU(cuMemcpyDtoDAsync(dst.p, src.p, bytes, nullptr));
    CHECK_CU(cuEventRecord(e1, nullptr));
    CHECK_CU(cuEventSynchronize(e1));
    float x = 0;
    CHECK_CU(cuEventElapsedTime(&x, e0, e1));
    if (r >= 2) ms.push_back(x);
  }
  cuEventDestroy(e0);
  cuEventDestroy(e1);
  std::sort(ms.begin(), ms.end());
  return 2.0 * bytes / (ms[ms.size() / 2] * 1e-3) / 1e9;
}

void bench(CUmodule mod, int sms) {
  std::map<std::string, Kernel> kernels;
  for (size_t t = 0; t < jk::kGemmTiles.size(); ++t) {
    const auto& info = jk::gemm_kernel(t, jax_aiter::DType::kBF16, true);
    kernels[std::string(jk::kGemmTiles[t].name)] =
        resolve(mod, info.symbol, info.fields, sizeof(jk::GemmArgs), info.dynamic_shared);
  }
  const Kernel reduce = resolve(mod, jk::kGemmReduceKernel.symbol, jk::kGemmReduceKernel.fields,
                                sizeof(jk::GemmReduceArgs));
  const std::vector<const char*> big = {"t128x128w4", "w128x256"};
  const std::vector<const char*> mid = {"t128x128w4", "t64x128", "w128x256"};
  const std::vector<const char*> dec = {"t16x128", "s16x16", "s16x32", "s16x64"};
  const BenchCase cases[] = {
      {4096, 4096, 4096, big, {1}},         {8192, 8192, 8192, big, {1}},
      {1, 4096, 4096, dec, {1, 2, 4, 8}},   {16, 4096, 4096, dec, {1, 2, 4, 8}},
      {128, 4096, 4096, mid, {1, 2, 4, 8}}, {1, 8192, 28672, dec, {1, 2, 4, 8}},
      {16, 8192, 28672, dec, {1, 2, 4, 8}}, {128, 8192, 28672, mid, {1, 2, 4, 8}}};
  std::printf("\ndevice-to-device copy: %.0f GB/s (read + write)\n", copy_gbs());
  std::mt19937 rng(7);
  CUevent start[kRuns + kWarmup], stop[kRuns + kWarmup];
  for (int i = 0; i < kRuns + kWarmup; ++i) {
    CHECK_CU(cuEventCreate(&start[i], CU_EVENT_DEFAULT));
    CHECK_CU(cuEventCreate(&stop[i], CU_EVENT_DEFAULT));
  }
  std::printf("\n%-6s %5s %6s %6s %-10s %6s %5s %9s %9s %9s\n", "timing", "M", "N", "K", "tile",
              "splits", "rule", "ms", "TFLOP/s", "GB/s(B)");
  struct Best {
    BenchCase c;
    Timing best, rule;
  };
  std::vector<Best> results;
  for (const BenchCase& c : cases) {
    std::vector<DevBuf> a, b;
    for (int i = 0; i < kSets; ++i) {
      a.push_back(random_device(static_cast<size_t>(c.M) * c.K * 2, rng));
      b.push_back(random_device(static_cast<size_t>(c.N) * c.K * 2, rng));
    }
    DevBuf out(static_cast<size_t>(c.M) * c.N * 2);
    DevBuf partials(static_cast<size_t>(16) * c.M * c.N * 4);
    const jax_aiter::ops::GemmPortableChoice rule =
        jax_aiter::ops::choose_portable_gemm(c.M, c.N, c.K, sms, true);
    // (tile index, k_chunk) of every configuration, the rule's first.
    std::vector<std::pair<size_t, int>> configs = {{rule.tile, static_cast<int>(rule.k_chunk)}};
    for (const char* name : c.tiles) {
      const size_t t = jax_aiter::ops::gemm_tile_index(name);
      if (t >= jk::kGemmTiles.size()) continue;
      for (int want : c.splits) {
        const int bk = jk::kGemmTiles[t].bk;
        const int k_chunk = want == 1 ? c.K : static_cast<int>(cdiv(cdiv(c.K, want), bk)) * bk;
        if (want > 1 && cdiv(c.K, k_chunk) == 1) continue;
        if (std::find(configs.begin(), configs.end(), std::make_pair(t, k_chunk)) ==
            configs.end()) {
          configs.emplace_back(t, k_chunk);
        }
      }
    }
    Best res{c, {"", 0, 1e30}, {"", 0, 1e30}};
    for (size_t ci = 0; ci < configs.size(); ++ci) {
      const auto [t, k_chunk] = configs[ci];
      const jk::GemmTile& tile = jk::kGemmTiles[t];
      const Kernel& k = kernels[std::string(tile.name)];
      if (!k.f) continue;
      const int splits = static_cast<int>(cdiv(c.K, k_chunk));
      if (splits > 16) continue;  // the partials buffer holds 16
      for (int r = 0; r < kRuns + kWarmup; ++r) {
        jk::GemmArgs args{};
        args.a = a[r % kSets].ptr();
        args.b = b[r % kSets].ptr();
        args.out = out.ptr();
        args.partials = splits > 1 ? partials.ptr() : nullptr;
        args.M = c.M, args.N = c.N, args.K = c.K;
        args.k_chunk = k_chunk;
        args.out_dtype = jk::gemm::kOutBF16;
        args.splits = splits;
        CHECK_CU(cuEventRecord(start[r], nullptr));
        launch(k, {cdiv(c.N, tile.bn), cdiv(c.M, tile.bm), static_cast<unsigned>(splits)},
               tile.threads, args);
        if (splits > 1) {
          jk::GemmReduceArgs red{};
          red.partials = partials.ptr();
          red.out = out.ptr();
          red.M = c.M, red.N = c.N;
          red.splits = splits;
          red.out_dtype = jk::gemm::kOutBF16;
          red.bias_dtype = jk::gemm::kOutBF16;
          launch(reduce,
                 {cdiv(static_cast<int64_t>(c.M) * c.N,
                       jk::gemm::kReduceThreads * jk::gemm::kReduceVec),
                  1, 1},
                 jk::gemm::kReduceThreads, red);
        }
        CHECK_CU(cuEventRecord(stop[r], nullptr));
      }
      CHECK_CU(cuCtxSynchronize());
      std::vector<double> ms;
      for (int r = kWarmup; r < kRuns + kWarmup; ++r) {
        float x = 0;
        CHECK_CU(cuEventElapsedTime(&x, start[r], stop[r]));
        ms.push_back(x);
      }
      std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
      const double med = ms[ms.size() / 2];
      const double tflops = 2.0 * c.M * c.N * c.K / (med * 1e-3) / 1e12;
      const double gbs = 2.0 * c.N * c.K / (med * 1e-3) / 1e9;
      std::printf("%-6s %5d %6d %6d %-10s %6d %5s %9.4f %9.1f %9.0f\n", "timing", c.M, c.N, c.K,
                  std::string(tile.name).c_str(), splits, ci == 0 ? "*" : "", med, tflops, gbs);
      const Timing tm{std::string(tile.name), splits, med};
      if (ci == 0) res.rule = tm;
      if (med < res.best.ms) res.best = tm;
    }
    results.push_back(res);
  }
  std::printf(
      "\nper shape (bf16 in/out, kernel + reduce): the plan rule's choice (choose_portable_gemm, "
      "sm_90) and the best timed\n%5s %6s %6s  %-10s %3s %9s %8s %7s  %-10s %3s %9s %8s %7s\n",
      "M", "N", "K", "rule", "spl", "ms", "TFLOP/s", "GB/s", "best", "spl", "ms", "TFLOP/s",
      "GB/s");
  for (const Best& r : results) {
    const double flop = 2.0 * r.c.M * r.c.N * r.c.K, bytes = 2.0 * r.c.N * r.c.K;
    std::printf("%5d %6d %6d  %-10s %3d %9.4f %8.1f %7.0f  %-10s %3d %9.4f %8.1f %7.0f\n", r.c.M,
                r.c.N, r.c.K, r.rule.tile.c_str(), r.rule.splits, r.rule.ms,
                flop / (r.rule.ms * 1e-3) / 1e12, bytes / (r.rule.ms * 1e-3) / 1e9,
                r.best.tile.c_str(), r.best.splits, r.best.ms, flop / (r.best.ms * 1e-3) / 1e12,
                bytes / (r.best.ms * 1e-3) / 1e9);
  }
  for (int i = 0; i < kRuns + kWarmup; ++i) {
    cuEventDestroy(start[i]);
    cuEventDestroy(stop[i]);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::printf("usage: %s GEMM_CUBIN [TWIN_CUBIN] [check|bench|all]\n", argv[0]);
    return 2;
  }
  std::string mode = "all";
  const char* twin_path = nullptr;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "check" || arg == "bench" || arg == "all") {
      mode = arg;
    } else {
      twin_path = argv[i];
    }
  }
  const CUdevice dev = use_device0();
  char dev_name[256] = {};
  cuDeviceGetName(dev_name, sizeof dev_name, dev);
  int sms = 0;
  cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
  std::printf("device: %s, %d multiprocessors\n", dev_name, sms);

  const auto gemm_image = read_file(argv[1]);
  CUmodule gemm_mod;
  CHECK_CU(cuModuleLoadData(&gemm_mod, gemm_image.data()));
  if (mode != "bench") {
    check_portable(gemm_mod);
    if (twin_path) {
      const auto twin_image = read_file(twin_path);
      CUmodule twin_mod;
      CHECK_CU(cuModuleLoadData(&twin_mod, twin_image.data()));
      check_twins(twin_mod);
      cuModuleUnload(twin_mod);
    }
    std::printf("\n%d passed, %d failed\n", passed, failed);
  }
  if (mode != "check") bench(gemm_mod, sms);
  cuModuleUnload(gemm_mod);
  cuDevicePrimaryCtxRelease(dev);
  return failed ? 1 : 0;
}
