// Our portable INT8 GEMM kernels (kernels_co/gemm_i8.kernel.cpp) on an sm_90 GPU with nothing but
// the CUDA driver API: no XLA, no jax_aiter runtime.
//   check: every tile (the mma tiles and the wgmma tile), unsplit into bf16 out and split into the
//     int32 accumulator (then jax_aiter_gemm_i8_finish), on odd shapes (M, N, K not multiples of
//     the tile), random int8 data and the weight in AITER's shuffled (16, 16) layout. The split
//     accumulator must equal the exact integer sums bit for bit; bf16 out must be within one bf16
//     rounding of the float64 epilogue of those sums. Outputs are poisoned (0xFF) first, with a
//     guard past the end that must stay untouched. Prints PASS / FAIL and 'N passed, M failed'.
//   bench: the plan rule's choice (ops/gemm_i8_portable.hpp, sm_90) and the mma tile t128x128 at
//     the benchmark shapes, CUDA events, median of 25 runs rotating input sets (together larger
//     than L2 where memory allows), splits as the rule's, with the memset and finish kernel of a
//     split plan included.
// Usage: cuda_gemm_i8_kernels GEMM_I8_CUBIN [check|bench|all]. Exit status 1 when a check fails.
#include <cuda.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "jax_aiter/kernels/gemm_i8.hpp"
#include "jax_aiter/ops/gemm_i8_portable.hpp"

#include "cuda_kernel_launch.hpp"

namespace {

namespace jk = jax_aiter::kernels;
namespace L = jax_aiter::kernels::aiter_i8gemm;
float bf16_to_float(uint16_t h) {
  const uint32_t u = uint32_t{h} << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

struct Problem {
  int M, N, K;
  std::vector<int8_t> a, w, ws;  // a [M, K], w [N, K], ws: w shuffled
  std::vector<float> sa, sb, bias;
  DevBuf da, dws, dsa, dsb, dbias;
};

Problem make_problem(int M, int N, int K, std::mt19937& rng, bool extremes = false) {
  Problem p;
  p.M = M;
  p.N = N;
  p.K = K;
  std::uniform_int_distribution<int> q(-128, 127);
  p.a.resize(size_t(M) * K);
  p.w.resize(size_t(N) * K);
  for (auto& v : p.a) v = static_cast<int8_t>(extremes ? -128 : q(rng));
  for (auto& v : p.w) v = static_cast<int8_t>(extremes ? -128 : q(rng));
  p.ws.resize(p.w.size());
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < K; ++k) p.ws[L::shuffled_offset(n, k, K)] = p.w[size_t(n) * K + k];
  std::uniform_real_distribution<float> s(0.5f, 2.f), b(-4.f, 4.f);
  p.sa.resize(M);
  p.sb.resize(N);
  p.bias.resize(N);
  for (auto& v : p.sa) v = s(rng) * 1e-4f;
  for (auto& v : p.sb) v = s(rng) * 1e-2f;
  for (auto& v : p.bias) v = b(rng);
  p.da = upload(p.a);
  p.dws = upload(p.ws);
  p.dsa = upload(p.sa);
  p.dsb = upload(p.sb);
  p.dbias = upload(p.bias);
  return p;
}

std::vector<int32_t> reference_sums(const Problem& p) {
  std::vector<int32_t> r(size_t(p.M) * p.N);
  for (int m = 0; m < p.M; ++m)
    for (int n = 0; n < p.N; ++n) {
      int64_t s = 0;
      const int8_t* x = &p.a[size_t(m) * p.K];
      const int8_t* y = &p.w[size_t(n) * p.K];
      for (int k = 0; k < p.K; ++k) s += int32_t{x[k]} * y[k];
      r[size_t(m) * p.N + n] = static_cast<int32_t>(s);
    }
  return r;
}

// bf16 out against the float64 epilogue of the exact sums: within one bf16 rounding (2^-8
// relative) plus the float epilogue's few ulps.
bool out_ok(const Problem& p, const std::vector<int32_t>& ref, const std::vector<unsigned char>& o,
            bool bias, std::string& why) {
  const size_t n = size_t(p.M) * p.N;
  if (!guard_intact(o, n * 2)) {
    why = "guard overwritten";
    return false;
  }
  for (size_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, &o[2 * i], 2);
    const int r = int(i / p.N), c = int(i % p.N);
    const double y = double(ref[i]) * p.sa[r] * p.sb[c] + (bias ? p.bias[c] : 0.0);
    const double got = bf16_to_float(h);
    if (!(std::fabs(got - y) <= std::ldexp(std::fabs(y), -8) + 1e-6)) {
      why = "out[" + std::to_string(r) + "," + std::to_string(c) + "] = " + std::to_string(got) +
            ", expected " + std::to_string(y);
      return false;
    }
  }
  return true;
}

void check(CUmodule mod) {
  const CuKernel finish = resolve(mod, jk::kGemmI8Finish);
  std::mt19937 rng(11);
  struct Shape {
    int M, N, K;
  };
  // Odd shapes: M, N past a tile edge, K not a multiple of a 128-byte block; one with K long
  // enough to wrap the 4-stage ring many times; one at the int32 range's edge (all -128).
  const Shape shapes[] = {{128, 256, 128}, {300, 272, 160},  {129, 528, 4096},
                          {1, 16, 32},     {77, 1040, 1056}, {256, 768, 8192}};
  for (const Shape& s : shapes) {
    Problem p = make_problem(s.M, s.N, s.K, rng);
    const std::vector<int32_t> ref = reference_sums(p);
    for (const jk::GemmI8Tile& t : jk::kGemmI8Tiles) {
      const CuKernel k = resolve(mod, t.kernel), ks = resolve(mod, t.split_kernel);
      const std::string tag = std::string(t.name) + " " + std::to_string(s.M) + "x" +
                              std::to_string(s.N) + "x" + std::to_string(s.K);
      for (bool bias : {false, true}) {
        DevBuf out = poisoned(size_t(s.M) * s.N * 2);
        const jk::GemmI8Args args{
            p.da.ptr(), p.dws.ptr(), p.dsa.ptr(), p.dsb.ptr(), bias ? p.dbias.ptr() : nullptr,
            out.ptr(),  s.M,         s.N,         s.K,         s.K};
        launch(k, cdiv(s.N, t.bn), cdiv(s.M, t.bm), 1, t.threads, args);
        std::string why;
        const bool ok = out_ok(p, ref, download(out), bias, why);
        verdict(ok, tag + (bias ? " bias" : "") + " unsplit" + (ok ? "" : ": " + why));
      }
      for (int splits : {1, 3}) {
        const int64_t chunk = (((s.K + splits - 1) / splits + t.bk - 1) / t.bk) * t.bk;
        const unsigned z = cdiv(s.K, chunk);
        DevBuf acc(size_t(s.M) * s.N * 4);
        CHECK_CU(cuMemsetD8(acc.p, 0, acc.bytes));
        const jk::GemmI8SplitArgs sargs{
            p.da.ptr(), p.dws.ptr(), acc.ptr(), s.M, s.N, s.K, s.K, static_cast<int32_t>(chunk)};
        launch(ks, cdiv(s.N, t.bn), cdiv(s.M, t.bm), z, t.threads, sargs);
        const std::vector<unsigned char> got = download(acc);
        const bool exact = std::memcmp(got.data(), ref.data(), ref.size() * 4) == 0;
        DevBuf out = poisoned(size_t(s.M) * s.N * 2);
        const jk::GemmI8FinishArgs fargs{acc.ptr(), p.dsa.ptr(), p.dsb.ptr(), p.dbias.ptr(),
                                         out.ptr(), s.M,         s.N};
        launch(finish, cdiv(int64_t(s.M) * s.N, jk::kGemmI8FinishThreads), 1, 1,
               jk::kGemmI8FinishThreads, fargs);
        std::string why;
        const bool ok = exact && out_ok(p, ref, download(out), true, why);
        verdict(ok, tag + " split " + std::to_string(z) + " (int32 exact, then finish)" +
                        (exact ? "" : ": int32 sums differ") + (ok || !exact ? "" : ": " + why));
      }
    }
  }
  // The int32 range's edge: K = 131040 of (-128) x (-128) sums to 2^31 - 2^21 (< 2^31).
  {
    Problem p = make_problem(128, 256, 131040, rng, true);
    const std::vector<int32_t> ref(size_t(128) * 256, 128 * 128 * 131040);
    const jk::GemmI8Tile& t = jk::kGemmI8Tiles.back();
    const CuKernel ks = resolve(mod, t.split_kernel);
    DevBuf acc(size_t(128) * 256 * 4);
    CHECK_CU(cuMemsetD8(acc.p, 0, acc.bytes));
    const jk::GemmI8SplitArgs sargs{p.da.ptr(), p.dws.ptr(), acc.ptr(), 128,
                                    256,        131040,      131040,    131040};
    launch(ks, 1, 1, 1, t.threads, sargs);
    const std::vector<unsigned char> got = download(acc);
    verdict(std::memcmp(got.data(), ref.data(), ref.size() * 4) == 0,
            std::string(t.name) + " 128x256x131040 all -128: int32 exact at 2^31 - 2^21");
  }
}

double median_ms(const std::vector<float>& v) {
  std::vector<float> s = v;
  std::sort(s.begin(), s.end());
  return s[s.size() / 2];
}

void bench(CUmodule mod, int sms) {
  const CuKernel finish = resolve(mod, jk::kGemmI8Finish);
  struct Shape {
    int M, N, K;
  };
  const Shape shapes[] = {{8192, 8192, 8192}, {4096, 4096, 4096}, {128, 8192, 28672},
                          {128, 4096, 4096},  {1, 8192, 28672},   {16, 8192, 28672}};
  std::mt19937 rng(5);
  std::printf("\n%-18s %-10s %6s %9s %9s %8s\n", "M x N x K", "tile", "splits", "ms", "TOP/s",
              "W GB/s");
  for (const Shape& s : shapes) {
    const size_t abytes = size_t(s.M) * s.K, wbytes = size_t(s.N) * s.K;
    const int sets = std::max<int>(1, std::min<int>(4, int((size_t(1) << 30) / (abytes + wbytes))));
    std::vector<DevBuf> A, W, SA, SB;
    std::vector<uint8_t> host(std::max(abytes, wbytes));
    for (auto& v : host) v = static_cast<uint8_t>(rng());
    std::vector<float> scale(std::max(s.M, s.N), 1e-3f);
    for (int i = 0; i < sets; ++i) {
      A.emplace_back(abytes);
      W.emplace_back(wbytes);
      CHECK_CU(cuMemcpyHtoD(A.back().p, host.data(), abytes));
      CHECK_CU(cuMemcpyHtoD(W.back().p, host.data(), wbytes));
      SA.push_back(upload(std::vector<float>(scale.begin(), scale.begin() + s.M)));
      SB.push_back(upload(std::vector<float>(scale.begin(), scale.begin() + s.N)));
    }
    DevBuf out(size_t(s.M) * s.N * 2), acc(size_t(s.M) * s.N * 4);
    const auto rule = jax_aiter::ops::choose_portable_gemm_i8(s.M, s.N, s.K, sms, true);
    const size_t base = jax_aiter::ops::choose_portable_gemm_i8(s.M, s.N, s.K, sms, false).tile;
    for (size_t ti : {rule.tile, base}) {
      const auto c = jax_aiter::ops::choose_portable_gemm_i8(s.M, s.N, s.K, sms,
                                                             jk::kGemmI8Tiles[ti].name[0] == 'w');
      const jk::GemmI8Tile& t = jk::kGemmI8Tiles[ti];
      const CuKernel k = resolve(mod, t.kernel), ks = resolve(mod, t.split_kernel);
      CUevent e0, e1;
      CHECK_CU(cuEventCreate(&e0, CU_EVENT_DEFAULT));
      CHECK_CU(cuEventCreate(&e1, CU_EVENT_DEFAULT));
      std::vector<float> ms;
      for (int r = 0; r < 28; ++r) {
        const int i = r % sets;
        auto go = [&](auto&& args, const CuKernel& kk, unsigned z) {
          size_t size = kk.arg_bytes;
          void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &args, CU_LAUNCH_PARAM_BUFFER_SIZE,
                           &size, CU_LAUNCH_PARAM_END};
          CHECK_CU(cuLaunchKernel(kk.f, cdiv(s.N, t.bn), cdiv(s.M, t.bm), z, t.threads, 1, 1,
                                  kk.shared, nullptr, nullptr, extra));
        };
        CHECK_CU(cuEventRecord(e0, nullptr));
        if (c.splits == 1) {
          jk::GemmI8Args args{A[i].ptr(), W[i].ptr(), SA[i].ptr(), SB[i].ptr(), nullptr,
                              out.ptr(),  s.M,        s.N,         s.K,         s.K};
          go(args, k, 1);
        } else {
          CHECK_CU(cuMemsetD8Async(acc.p, 0, acc.bytes, nullptr));
          jk::GemmI8SplitArgs args{
              A[i].ptr(), W[i].ptr(), acc.ptr(), s.M,
              s.N,        s.K,        s.K,       static_cast<int32_t>(c.k_chunk)};
          go(args, ks, static_cast<unsigned>(c.splits));
          jk::GemmI8FinishArgs fargs{acc.ptr(), SA[i].ptr(), SB[i].ptr(), nullptr,
                                     out.ptr(), s.M,         s.N};
          size_t size = finish.arg_bytes;
          void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &fargs, CU_LAUNCH_PARAM_BUFFER_SIZE,
                           &size, CU_LAUNCH_PARAM_END};
          CHECK_CU(cuLaunchKernel(finish.f, cdiv(int64_t(s.M) * s.N, jk::kGemmI8FinishThreads), 1,
                                  1, jk::kGemmI8FinishThreads, 1, 1, 0, nullptr, nullptr, extra));
        }
        CHECK_CU(cuEventRecord(e1, nullptr));
        CHECK_CU(cuEventSynchronize(e1));
        float x = 0;
        CHECK_CU(cuEventElapsedTime(&x, e0, e1));
        if (r >= 3) ms.push_back(x);
      }
      cuEventDestroy(e0);
      cuEventDestroy(e1);
      const double m = median_ms(ms);
      std::printf(
          "%-18s %-10s %6lld %9.4f %9.1f %8.0f%s\n",
          (std::to_string(s.M) + "x" + std::to_string(s.N) + "x" + std::to_string(s.K)).c_str(),
          std::string(t.name).c_str(), static_cast<long long>(c.splits), m,
          2.0 * s.M * s.N * s.K / (m * 1e-3) / 1e12, wbytes / (m * 1e-3) / 1e9,
          ti == rule.tile ? " *" : "");
      if (base == rule.tile) break;  // the rule's choice is the mma tile (decode): timed once
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::printf("usage: %s GEMM_I8_CUBIN [check|bench|all]\n", argv[0]);
    return 2;
  }
  const std::string mode = argc > 2 ? argv[2] : "check";
  const CUdevice dev = use_device0();
  int sms = 0;
  CHECK_CU(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  const std::vector<char> image = read_file(argv[1]);
  CUmodule mod;
  CHECK_CU(cuModuleLoadData(&mod, image.data()));
  if (mode == "check" || mode == "all") {
    check(mod);
    std::printf("%d passed, %d failed\n", g_pass, g_fail);
  }
  if (mode == "bench" || mode == "all") bench(mod, sms);
  return g_fail == 0 ? 0 : 1;
}
