// Our portable FP8 block-scale GEMM kernels (kernels_co/gemm_fp8_blockscale.kernel.cpp) on an
// sm_90 GPU with nothing but the CUDA driver API: no XLA, no jax_aiter runtime.
//   check: every tile (the mma tiles and the wgmma tile w128x256), bf16 and f16 out, the w tile
//     also split 2 and 3 ways into f32 slices then jax_aiter_gemm_fp8_blockscale_finish, on odd
//     shapes (M, N not multiples of the tile, N % 256 in {16, 144}: a tile's second 128-column
//     scale block partial or absent; K = 128 .. 8192 in scale blocks, which the op requires),
//     random e4m3fn data (|v| <= 16, zeros and subnormals included) with the weight in AITER's
//     shuffled (16, 16) layout, random scales in the op's one kernel layout (a_scale [K/128, M],
//     b_scale [ceil(N/128), K/128]; the Python wrappers' transposes happen before the kernel).
//     Reference: float64 of the dequantised inputs. Bound: |out - ref| <= u |ref| + e S, u the out
//     type's rounding (2^-8 bf16, 2^-11 f16), S = sum_kb |xs ws| sum_k |a b|: one rounding of the
//     f32 result plus the error of the block sums. e: 2^-16 for the mma tiles (the Python tests'
//     bound, test_gemm_fp8_blockscale.py assert_fp8bs_close: mma.sync's e4m3 sums measured within
//     2^-25 S here); 2^-9 for the w tile, whose wgmma e4m3 sums are not f32-exact: measured up to
//     2^-10.6 S (K = 128; H200, 2026-11-28), the tensor cores' fp8 accumulation of ~14 bits that
//     DeepSeek-V3 reports on H800 and that DeepGEMM bounds as we do, a fresh partial every 128 K.
//     With so loose an element bound a wrong K block's scale could hide in a long K, so every case
//     also needs ||out - ref|| <= 2^-7 ||ref|| (norm-wise; rounding and accumulation give about
//     2^-9.5, one wrong block of 64 about 2^-3). Each case prints the worst (|out - ref| - u |ref|)
//     / S and the norm-wise error as powers of two (VERBOSE=1). Outputs (and the split slices) are
//     poisoned (0xFF: NaN) first, with a guard past the end that must stay untouched.
//   bench: t128x128 (the mma tile the rule took before) and w128x256 (unsplit, and at M = 128
//     split 2 and 4, the rule's) at 8192^3, 4096^3, 128x8192x28672, 128x4096x4096; CUDA events,
//     median of 25 runs after 3, rotating input sets (together larger than L2 where memory
//     allows); a split run includes its finish kernel. '*' marks the rule's choice
//     (ops/gemm_fp8_blockscale_portable.hpp with the w tile on, 132 SMs or the device's count).
// Usage: cuda_gemm_fp8bs_kernels GEMM_FP8_BLOCKSCALE_CUBIN [check|bench|all]. Exit status 1 when a
// check fails.
#include <cuda.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "jax_aiter/host_twins/e4m3_values.hpp"
#include "jax_aiter/kernels/gemm_fp8_blockscale.hpp"
#include "jax_aiter/kernels/shared/aiter_i8gemm.h"
#include "jax_aiter/ops/gemm_fp8_blockscale_portable.hpp"

#include "cuda_kernel_launch.hpp"

namespace {

namespace jk = jax_aiter::kernels;
namespace L = jax_aiter::kernels::aiter_i8gemm;
namespace F = jax_aiter::kernels::gemm_fp8_blockscale;
constexpr int kBlock = F::kScaleBlock;
struct Problem {
  int M, N, K;
  std::vector<uint8_t> a, w, ws;  // e4m3fn codes: a [M, K], w [N, K], ws: w shuffled
  std::vector<float> xs, sw;      // a_scale [K/128, M], b_scale [ceil(N/128), K/128]
  std::vector<double> ref, mag;   // float64 result and S (the bound's scale), [M, N]
  DevBuf da, dws, dxs, dsw;
};

Problem make_problem(int M, int N, int K, std::mt19937& rng) {
  const std::array<float, 256>& v = jax_aiter::host_twins::e4m3_values(false);
  std::vector<uint8_t> codes;  // every finite code with |value| <= 16
  for (int c = 0; c < 256; ++c) {
    if (!std::isnan(v[c]) && std::fabs(v[c]) <= 16.f) codes.push_back(static_cast<uint8_t>(c));
  }
  std::uniform_int_distribution<size_t> pick(0, codes.size() - 1);
  Problem p;
  p.M = M;
  p.N = N;
  p.K = K;
  const int kb = K / kBlock, nb = (N + kBlock - 1) / kBlock;
  p.a.resize(size_t(M) * K);
  p.w.resize(size_t(N) * K);
  for (auto& c : p.a) c = codes[pick(rng)];
  for (auto& c : p.w) c = codes[pick(rng)];
  p.ws.resize(p.w.size());
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < K; ++k) p.ws[L::shuffled_offset(n, k, K)] = p.w[size_t(n) * K + k];
  std::uniform_real_distribution<float> s(1e-2f, 1.f);
  p.xs.resize(size_t(kb) * M);
  p.sw.resize(size_t(nb) * kb);
  for (auto& x : p.xs) x = s(rng);
  for (auto& x : p.sw) x = s(rng);
  p.ref.assign(size_t(M) * N, 0.0);
  p.mag.assign(size_t(M) * N, 0.0);
  std::vector<double> av(p.a.size()), wv(p.w.size());
  for (size_t i = 0; i < av.size(); ++i) av[i] = v[p.a[i]];
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = v[p.w[i]];
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double y = 0, y_abs = 0;
      for (int b = 0; b < kb; ++b) {
        double part = 0, part_abs = 0;  // exact: products of 4-bit significands
        const double* x = &av[size_t(m) * K + size_t(b) * kBlock];
        const double* ww = &wv[size_t(n) * K + size_t(b) * kBlock];
        for (int k = 0; k < kBlock; ++k) {
          part += x[k] * ww[k];
          part_abs += std::fabs(x[k] * ww[k]);
        }
        const double sc = double{p.xs[size_t(b) * M + m]} * p.sw[size_t(n / kBlock) * kb + b];
        y += part * sc;
        y_abs += part_abs * sc;
      }
      p.ref[size_t(m) * N + n] = y;
      p.mag[size_t(m) * N + n] = y_abs;
    }
  p.da = upload(p.a);
  p.dws = upload(p.ws);
  p.dxs = upload(p.xs);
  p.dsw = upload(p.sw);
  return p;
}

std::string log2_of(double x) {
  if (!(x > 0)) return "0";
  char b[32];
  std::snprintf(b, sizeof b, "2^%.1f", std::log2(x));
  return b;
}

// The element bound's accumulation term (the header's e) for a tile.
int acc_exponent(const jk::GemmFp8BlockscaleTile& t) { return t.name[0] == 'w' ? -9 : -16; }
constexpr int kNormExponent = -7;

// out (bf16 or f16 [M, N]) within both bounds; report: the worst (|out - ref| - u |ref|) / S (the
// accumulation's share) and the norm-wise error.
bool out_ok(const Problem& p, const std::vector<unsigned char>& o, bool f16, int acc_exp,
            std::string& report) {
  const size_t n = size_t(p.M) * p.N;
  if (!guard_intact(o, n * 2)) {
    report = ": guard overwritten";
    return false;
  }
  const int u = f16 ? -11 : -8;
  bool ok = true;
  std::string first;
  double worst = 0, err2 = 0, ref2 = 0;
  for (size_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, &o[2 * i], 2);
    const double got = half_bits_to_double(h, f16), y = p.ref[i];
    const double err = std::fabs(got - y), round = std::ldexp(std::fabs(y), u);
    if (p.mag[i] > 0) worst = std::max(worst, (err - round) / p.mag[i]);
    err2 += (got - y) * (got - y);
    ref2 += y * y;
    if (!(err <= round + std::ldexp(p.mag[i], acc_exp) + 1e-30)) {
      if (ok) {
        first = ": out[" + std::to_string(i / p.N) + "," + std::to_string(i % p.N) +
                "] = " + std::to_string(got) + ", expected " + std::to_string(y);
      }
      ok = false;
    }
  }
  const double norm = std::sqrt(err2 / ref2);
  if (!(norm <= std::ldexp(1.0, kNormExponent))) ok = false;
  report = " acc err " + log2_of(worst) + " S (bound 2^" + std::to_string(acc_exp) +
           "), norm err " + log2_of(norm) + first;
  return ok;
}

void check(CUmodule mod) {
  const CuKernel finish = resolve(mod, jk::kGemmFp8BlockscaleFinish);
  std::mt19937 rng(17);
  struct Shape {
    int M, N, K;
  };
  // M past a tile edge (and below 128: the w tile takes any M, the rule only M >= 128); N % 256
  // of 0, 16 (the last tile's second half absent) and 144 (present, partial), N % 128 != 0; K from
  // one scale block to 64 (the 4-stage ring wraps 16 times).
  const Shape shapes[] = {{128, 256, 128}, {300, 272, 384},  {129, 528, 1024}, {1, 16, 128},
                          {77, 400, 640},  {256, 768, 8192}, {200, 144, 2304}};
  for (const Shape& s : shapes) {
    Problem p = make_problem(s.M, s.N, s.K, rng);
    for (const jk::GemmFp8BlockscaleTile& t : jk::kGemmFp8BlockscaleTiles) {
      const CuKernel k = resolve(mod, t.kernel);
      const std::string tag = std::string(t.name) + " " + std::to_string(s.M) + "x" +
                              std::to_string(s.N) + "x" + std::to_string(s.K);
      for (bool f16 : {false, true}) {
        DevBuf out = poisoned(size_t(s.M) * s.N * 2);
        const jk::GemmFp8BlockscaleArgs args{
            p.da.ptr(), p.dws.ptr(), p.dxs.ptr(), p.dsw.ptr(), out.ptr(), s.M,
            s.N,        s.K,         s.K,         f16 ? 1 : 0, 0};
        launch(k, cdiv(s.N, t.bn), cdiv(s.M, t.bm), 1, t.threads, args);
        std::string report;
        const bool ok = out_ok(p, download(out), f16, acc_exponent(t), report);
        verdict(ok, tag + (f16 ? " f16" : " bf16") + report);
      }
      if (t.split_kernel.symbol.empty()) continue;
      const CuKernel ks = resolve(mod, t.split_kernel);
      for (int splits : {2, 3}) {
        const int64_t chunk = ((s.K + splits - 1) / splits + kBlock - 1) / kBlock * kBlock;
        const unsigned z = cdiv(s.K, chunk);
        if (z == 1 || (splits == 3 && z == 2)) continue;  // K too short: as a smaller split
        const size_t slice = size_t(s.M) * s.N * 4;
        DevBuf partial = poisoned(slice * z);
        const jk::GemmFp8BlockscaleSplitArgs sargs{
            p.da.ptr(), p.dws.ptr(), p.dxs.ptr(), p.dsw.ptr(), partial.ptr(),
            s.M,        s.N,         s.K,         s.K,         static_cast<int32_t>(chunk)};
        launch(ks, cdiv(s.N, t.bn), cdiv(s.M, t.bm), z, t.threads, sargs);
        const bool guard = guard_intact(download(partial), slice * z);
        for (bool f16 : {false, true}) {
          DevBuf out = poisoned(size_t(s.M) * s.N * 2);
          const jk::GemmFp8BlockscaleFinishArgs fargs{partial.ptr(),           out.ptr(),  s.M, s.N,
                                                      static_cast<int32_t>(z), f16 ? 1 : 0};
          launch(finish, cdiv(int64_t(s.M) * s.N, F::kFinishThreads * F::kFinishVec), 1, 1,
                 F::kFinishThreads, fargs);
          std::string report;
          const bool ok = out_ok(p, download(out), f16, acc_exponent(t), report) && guard;
          verdict(ok, tag + " split " + std::to_string(z) + (f16 ? " f16" : " bf16") + report +
                          (guard ? "" : "; the partial slices' guard overwritten"));
        }
      }
    }
  }
}

double median_ms(const std::vector<float>& v) {
  std::vector<float> s = v;
  std::sort(s.begin(), s.end());
  return s[s.size() / 2];
}

void bench(CUmodule mod, int sms) {
  const CuKernel finish = resolve(mod, jk::kGemmFp8BlockscaleFinish);
  struct Shape {
    int M, N, K;
  };
  const Shape shapes[] = {
      {8192, 8192, 8192}, {4096, 4096, 4096}, {128, 8192, 28672}, {128, 4096, 4096}};
  std::mt19937 rng(5);
  std::printf("\n%-18s %-10s %6s %9s %9s %8s\n", "M x N x K", "tile", "splits", "ms", "TFLOP/s",
              "W GB/s");
  for (const Shape& s : shapes) {
    const size_t abytes = size_t(s.M) * s.K, wbytes = size_t(s.N) * s.K;
    const int kb = s.K / kBlock, nb = (s.N + kBlock - 1) / kBlock;
    const int sets = std::max<int>(1, std::min<int>(4, int((size_t(1) << 30) / (abytes + wbytes))));
    std::vector<DevBuf> A, W, XS, SW;
    std::vector<uint8_t> host(std::max(abytes, wbytes));
    for (auto& v : host) v = static_cast<uint8_t>(rng() & 0x77);  // finite e4m3fn, |v| <= 240
    for (int i = 0; i < sets; ++i) {
      A.emplace_back(abytes);
      W.emplace_back(wbytes);
      CHECK_CU(cuMemcpyHtoD(A.back().p, host.data(), abytes));
      CHECK_CU(cuMemcpyHtoD(W.back().p, host.data(), wbytes));
      XS.push_back(upload(std::vector<float>(size_t(kb) * s.M, 1e-3f)));
      SW.push_back(upload(std::vector<float>(size_t(nb) * kb, 1e-3f)));
    }
    const auto rule = jax_aiter::ops::choose_portable_gemm_fp8_blockscale(s.M, s.N, s.K, sms, true);
    const size_t old = jax_aiter::ops::choose_portable_gemm_fp8_blockscale(s.M, s.N, s.K, sms).tile;
    struct Run {
      size_t tile;
      int64_t splits;
    };
    std::vector<Run> runs{{old, 1}, {rule.tile, 1}};
    if (s.M <= 128) runs.insert(runs.end(), {{rule.tile, 2}, {rule.tile, 4}});
    DevBuf out(size_t(s.M) * s.N * 2), partial(size_t(s.M) * s.N * 4 * 4);
    for (const Run& run : runs) {
      const jk::GemmFp8BlockscaleTile& t = jk::kGemmFp8BlockscaleTiles[run.tile];
      const CuKernel k = resolve(mod, t.kernel);
      const CuKernel ks = t.split_kernel.symbol.empty() ? k : resolve(mod, t.split_kernel);
      const int64_t chunk =
          run.splits > 1 ? ((s.K + run.splits - 1) / run.splits + kBlock - 1) / kBlock * kBlock
                         : s.K;
      const unsigned z = cdiv(s.K, chunk);
      CUevent e0, e1;
      CHECK_CU(cuEventCreate(&e0, CU_EVENT_DEFAULT));
      CHECK_CU(cuEventCreate(&e1, CU_EVENT_DEFAULT));
      std::vector<float> ms;
      for (int r = 0; r < 28; ++r) {
        const int i = r % sets;
        CHECK_CU(cuEventRecord(e0, nullptr));
        if (z == 1) {
          const jk::GemmFp8BlockscaleArgs args{
              A[i].ptr(), W[i].ptr(), XS[i].ptr(), SW[i].ptr(), out.ptr(), s.M,
              s.N,        s.K,        s.K,         0,           0};
          launch_async(k, cdiv(s.N, t.bn), cdiv(s.M, t.bm), 1, t.threads, args);
        } else {
          const jk::GemmFp8BlockscaleSplitArgs args{
              A[i].ptr(), W[i].ptr(), XS[i].ptr(), SW[i].ptr(), partial.ptr(),
              s.M,        s.N,        s.K,         s.K,         static_cast<int32_t>(chunk)};
          launch_async(ks, cdiv(s.N, t.bn), cdiv(s.M, t.bm), z, t.threads, args);
          const jk::GemmFp8BlockscaleFinishArgs fargs{partial.ptr(),           out.ptr(), s.M, s.N,
                                                      static_cast<int32_t>(z), 0};
          launch_async(finish, cdiv(int64_t(s.M) * s.N, F::kFinishThreads * F::kFinishVec), 1, 1,
                       F::kFinishThreads, fargs);
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
      const bool chosen = run.tile == rule.tile && z == rule.splits;
      std::printf(
          "%-18s %-10s %6u %9.4f %9.1f %8.0f%s\n",
          (std::to_string(s.M) + "x" + std::to_string(s.N) + "x" + std::to_string(s.K)).c_str(),
          std::string(t.name).c_str(), z, m, 2.0 * s.M * s.N * s.K / (m * 1e-3) / 1e12,
          wbytes / (m * 1e-3) / 1e9, chosen ? " *" : "");
    }
  }
  // What ptxas gave the kernels (registers a thread at launch; local memory = spills).
  for (const jk::GemmFp8BlockscaleTile& t : jk::kGemmFp8BlockscaleTiles) {
    const CuKernel k = resolve(mod, t.kernel);
    int regs = 0, local = 0;
    CHECK_CU(cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, k.f));
    CHECK_CU(cuFuncGetAttribute(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, k.f));
    std::printf("%s: %d registers, %d bytes local\n", k.symbol.c_str(), regs, local);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::printf("usage: %s GEMM_FP8_BLOCKSCALE_CUBIN [check|bench|all]\n", argv[0]);
    return 2;
  }
  const std::string mode = argc > 2 ? argv[2] : "check";
  const CUdevice dev = use_device0();
  int sms = 0;
  CHECK_CU(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  char name[256] = {};
  CHECK_CU(cuDeviceGetName(name, sizeof name, dev));
  std::printf("device: %s, %d SMs\n", name, sms);
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
