// The quantized GEMMs' decode kernels (jax_aiter_gemm_{fp8_blockscale,i8,fp4}_stream and their
// _finish kernels; kernels_co/include/jax_aiter_gemm_stream_q.hpp) on an sm_90 GPU with nothing
// but the CUDA driver API: no XLA, no jax_aiter runtime.
//   check: each family at M 1..16 and ragged N, K (as far as the op allows: FP8 block-scale
//     K % 128, INT8 K % 32, FP4 K % 64; N % 16), unsplit, split 3 ways and as the rule splits
//     (ops/gemm_stream_q_rule.hpp, 132 SMs), against float64: FP8 and FP4 within one output
//     rounding plus 2^-16 of the sum of |terms| (the f32 sums), INT8's int32 partial planes added
//     must equal the exact sums and its bf16 out be within one rounding of their float64
//     epilogue. Outputs and partials are poisoned (0xFF) first, with a guard past the end that
//     must stay untouched; every case runs twice and must give the same bits. FP4 also with the
//     extreme e8m0 codes (0 = 2^-127, 250..254). Prints PASS / FAIL and 'N passed, M failed'.
//   bench: M in {1, 16} x N x K in {8192 x 28672, 4096 x 4096}: the rule's plan, forced splits
//     1, 2, 4, 8, and the kernel the op took before (FP8 t16x128, INT8 t16x128 split into the int32
//     accumulator, FP4 d4 / d16), CUDA events, median of 25, weight sets rotated (together at
//     least 3 x L2); GB/s of weight bytes, beside a device-to-device copy of the same bytes in the
//     same run (its (read + write) / time, the copy bandwidth).
// Usage: cuda_gemm_stream_q_kernels FP8_BLOCKSCALE_CUBIN I8_CUBIN FP4_CUBIN [check|bench|all].
// Exit status 1 when a check fails.
#include <cuda.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "jax_aiter/host_twins/e4m3_values.hpp"
#include "jax_aiter/kernels/gemm_fp4.hpp"
#include "jax_aiter/kernels/gemm_fp8_blockscale.hpp"
#include "jax_aiter/kernels/gemm_i8.hpp"
#include "jax_aiter/ops/gemm_fp4_portable.hpp"
#include "jax_aiter/ops/gemm_i8_portable.hpp"
#include "jax_aiter/ops/gemm_stream_q_rule.hpp"

#include "cuda_kernel_launch.hpp"

namespace {

namespace jk = jax_aiter::kernels;
namespace S = jax_aiter::kernels::gemm_stream_q;
namespace F8 = jax_aiter::kernels::gemm_fp8_blockscale;
namespace L8 = jax_aiter::kernels::aiter_i8gemm;
namespace L4 = jax_aiter::kernels::aiter_f4gemm;
// The decode kernels of one family and the plan a call runs: the stream kernel over (N / 16, 1,
// splits) and, split, the finish kernel. `stream(z_chunk, splits, partials)` and
// `finish(splits, partials)` enqueue them; chunk is bytes of a weight row.
struct Plan {
  std::function<void(int64_t, int64_t, void*)> stream;
  std::function<void(int64_t, void*)> finish;
  void run(int64_t chunk, int64_t splits, void* partials) const {
    stream(chunk, splits, partials);
    if (splits > 1) finish(splits, partials);
  }
};

// Splits as the rule's (0), or forced: chunk in bytes of a row, whole kStepBytes.
std::pair<int64_t, int64_t> split_of(int64_t n, int64_t kbytes, int forced) {
  if (forced == 0) {
    const auto s = jax_aiter::ops::choose_stream_q_split(n, kbytes, 132);
    return {s.k_chunk, s.splits};
  }
  const int64_t steps = (kbytes + S::kStepBytes - 1) / S::kStepBytes;
  const int64_t chunk = (steps + forced - 1) / forced * S::kStepBytes;
  return {chunk, (kbytes + chunk - 1) / chunk};
}

// Runs plan p twice on poisoned outputs (and partials) and hands the first run's bytes to
// `judge`; the second run must give the same bits.
void check_plan(
    const std::string& tag, const Plan& p, int64_t n, int64_t kbytes, int M, size_t out_bytes,
    DevBuf& out, int forced,
    const std::function<bool(const std::vector<unsigned char>&, const std::vector<unsigned char>&,
                             int64_t, std::string&)>& judge) {
  const auto [chunk, splits] = split_of(n, kbytes, forced);
  std::vector<unsigned char> first;
  for (int run = 0; run < 2; ++run) {
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuMemsetD8(out.p, 0xFF, out.bytes));
    DevBuf partials = poisoned(size_t(splits) * M * n * 4);
    CHECK_CU(cuCtxSynchronize());
    p.run(chunk, splits, partials.ptr());
    CHECK_CU(cuCtxSynchronize());
    const std::vector<unsigned char> got = download(out);
    if (run == 0) {
      std::string why;
      bool ok = guard_intact(got, out_bytes);
      if (!ok) why = "guard overwritten";
      const std::vector<unsigned char> parts =
          splits > 1 ? download(partials) : std::vector<unsigned char>{};
      ok = ok && judge(got, parts, splits, why);
      verdict(ok, tag + " split " + std::to_string(splits) + (ok ? "" : ": " + why));
      first = got;
    } else {
      verdict(first == got, tag + " split " + std::to_string(splits) + " deterministic");
    }
  }
}

// |got - ref| <= eps |ref| + 2^-16 absum (one output rounding, and the f32 sums' error).
bool near(double got, double ref, double absum, double eps) {
  return std::fabs(got - ref) <= eps * std::fabs(ref) + std::ldexp(absum, -16) + 1e-30;
}

// ---- FP8 block-scale -------------------------------------------------------------------------

void check_fp8(CUmodule mod, std::mt19937& rng) {
  const CuKernel ks = resolve(mod, jk::kGemmFp8BlockscaleStream),
                 kf = resolve(mod, jk::kGemmFp8BlockscaleFinish);
  const auto& lut = jax_aiter::host_twins::e4m3_values(false);
  struct Shape {
    int M, N, K;
  };
  const Shape shapes[] = {{1, 16, 128},     {3, 48, 384},   {8, 272, 1152}, {9, 144, 640},
                          {16, 1040, 4096}, {5, 528, 8320}, {16, 32, 2176}};
  for (const Shape& s : shapes) {
    const int kb = s.K / 128, nb = (s.N + 127) / 128;
    std::uniform_int_distribution<int> byte(0, 255);
    auto fp8 = [&] {  // |value| <= 15 (exponent field <= 9), never NaN
      for (;;) {
        const int b = byte(rng);
        if (((b >> 3) & 15) <= 9) return uint8_t(b);
      }
    };
    std::vector<uint8_t> a(size_t(s.M) * s.K), w(size_t(s.N) * s.K), ws(w.size());
    for (auto& v : a) v = fp8();
    for (auto& v : w) v = fp8();
    for (int n = 0; n < s.N; ++n)
      for (int k = 0; k < s.K; ++k) ws[L8::shuffled_offset(n, k, s.K)] = w[size_t(n) * s.K + k];
    std::uniform_real_distribution<float> sc(0.5f, 2.f);
    std::vector<float> sa(size_t(kb) * s.M), sb(size_t(nb) * kb);
    for (auto& v : sa) v = sc(rng) * 0.125f;
    for (auto& v : sb) v = sc(rng) * 0.25f;
    std::vector<double> ref(size_t(s.M) * s.N), absum(ref.size());
    for (int m = 0; m < s.M; ++m)
      for (int n = 0; n < s.N; ++n) {
        double r = 0, ab = 0;
        for (int b = 0; b < kb; ++b) {
          double part = 0, pa = 0;
          for (int k = 128 * b; k < 128 * b + 128; ++k) {
            const double t = double(lut[a[size_t(m) * s.K + k]]) * lut[w[size_t(n) * s.K + k]];
            part += t;
            pa += std::fabs(t);
          }
          const double f = double(sa[size_t(b) * s.M + m]) * sb[size_t(n / 128) * kb + b];
          r += part * f;
          ab += pa * f;
        }
        ref[size_t(m) * s.N + n] = r;
        absum[size_t(m) * s.N + n] = ab;
      }
    DevBuf da = upload(a), dw = upload(ws), dsa = upload(sa), dsb = upload(sb);
    for (int f16 : {0, 1}) {
      const size_t out_bytes = size_t(s.M) * s.N * 2;
      DevBuf out = poisoned(out_bytes);
      Plan p;
      p.stream = [&](int64_t chunk, int64_t splits, void* partials) {
        const jk::GemmFp8BlockscaleStreamArgs args{
            da.ptr(), dw.ptr(), dsa.ptr(), dsb.ptr(),  out.ptr(),   partials, s.M,
            s.N,      s.K,      s.K,       int(chunk), int(splits), f16};
        launch_async(ks, cdiv(s.N, S::kRows), 1, unsigned(splits), S::kThreads, args);
      };
      p.finish = [&](int64_t splits, void* partials) {
        const jk::GemmFp8BlockscaleFinishArgs args{partials, out.ptr(), s.M, s.N, int(splits), f16};
        launch_async(kf, cdiv(int64_t(s.M) * s.N, F8::kFinishThreads * F8::kFinishVec), 1, 1,
                     F8::kFinishThreads, args);
      };
      const std::string tag = std::string("fp8bs ") + (f16 ? "f16 " : "bf16 ") +
                              std::to_string(s.M) + "x" + std::to_string(s.N) + "x" +
                              std::to_string(s.K);
      for (int forced : {1, 3, 0}) {
        check_plan(tag, p, s.N, s.K, s.M, out_bytes, out, forced,
                   [&](const std::vector<unsigned char>& o, const std::vector<unsigned char>&,
                       int64_t, std::string& why) {
                     for (size_t i = 0; i < ref.size(); ++i) {
                       uint16_t h;
                       std::memcpy(&h, &o[2 * i], 2);
                       const double got = static_cast<float>(half_bits_to_double(h, f16));
                       if (!near(got, ref[i], absum[i], f16 ? 0x1p-11 : 0x1p-8)) {
                         why = "out[" + std::to_string(i / s.N) + "," + std::to_string(i % s.N) +
                               "] = " + std::to_string(got) + ", expected " +
                               std::to_string(ref[i]);
                         return false;
                       }
                     }
                     return true;
                   });
      }
    }
  }
}

// ---- INT8 --------------------------------------------------------------------------------------

void check_i8(CUmodule mod, std::mt19937& rng) {
  const CuKernel ks = resolve(mod, jk::kGemmI8Stream), kf = resolve(mod, jk::kGemmI8StreamFinish);
  struct Shape {
    int M, N, K;
  };
  const Shape shapes[] = {{1, 16, 32},     {2, 48, 96},      {8, 272, 1056}, {11, 1040, 4128},
                          {16, 528, 8224}, {16, 16, 131040}, {7, 64, 544}};
  for (const Shape& s : shapes) {
    const bool extremes = s.K == 131040;  // all -128: sums at 2^31 - 2^21
    std::uniform_int_distribution<int> q(-128, 127);
    std::vector<int8_t> a(size_t(s.M) * s.K), w(size_t(s.N) * s.K), ws(w.size());
    for (auto& v : a) v = int8_t(extremes ? -128 : q(rng));
    for (auto& v : w) v = int8_t(extremes ? -128 : q(rng));
    for (int n = 0; n < s.N; ++n)
      for (int k = 0; k < s.K; ++k) ws[L8::shuffled_offset(n, k, s.K)] = w[size_t(n) * s.K + k];
    std::uniform_real_distribution<float> sc(0.5f, 2.f), b(-4.f, 4.f);
    std::vector<float> sa(s.M), sb(s.N), bias(s.N);
    for (auto& v : sa) v = sc(rng) * 1e-4f;
    for (auto& v : sb) v = sc(rng) * 1e-2f;
    for (auto& v : bias) v = b(rng);
    std::vector<int32_t> sums(size_t(s.M) * s.N);
    for (int m = 0; m < s.M; ++m)
      for (int n = 0; n < s.N; ++n) {
        int64_t t = 0;
        for (int k = 0; k < s.K; ++k) t += int32_t{a[size_t(m) * s.K + k]} * w[size_t(n) * s.K + k];
        sums[size_t(m) * s.N + n] = int32_t(t);
      }
    DevBuf da = upload(a), dw = upload(ws), dsa = upload(sa), dsb = upload(sb),
           dbias = upload(bias);
    for (bool with_bias : {false, true}) {
      const size_t out_bytes = size_t(s.M) * s.N * 2;
      DevBuf out = poisoned(out_bytes);
      const void* bp = with_bias ? dbias.ptr() : nullptr;
      Plan p;
      p.stream = [&](int64_t chunk, int64_t splits, void* partials) {
        const jk::GemmI8StreamArgs args{da.ptr(),  dw.ptr(),   dsa.ptr(),  dsb.ptr(), bp,
                                        out.ptr(), partials,   s.M,        s.N,       s.K,
                                        s.K,       int(chunk), int(splits)};
        launch_async(ks, cdiv(s.N, S::kRows), 1, unsigned(splits), S::kThreads, args);
      };
      p.finish = [&](int64_t splits, void* partials) {
        const jk::GemmI8StreamFinishArgs args{partials,  dsa.ptr(), dsb.ptr(), bp,
                                              out.ptr(), s.M,       s.N,       int(splits)};
        launch_async(kf, cdiv(int64_t(s.M) * s.N, S::kFinishThreads), 1, 1, S::kFinishThreads,
                     args);
      };
      const std::string tag = std::string("i8 ") + (with_bias ? "bias " : "") +
                              std::to_string(s.M) + "x" + std::to_string(s.N) + "x" +
                              std::to_string(s.K);
      for (int forced : {1, 3, 0}) {
        check_plan(
            tag, p, s.N, s.K, s.M, out_bytes, out, forced,
            [&](const std::vector<unsigned char>& o, const std::vector<unsigned char>& parts,
                int64_t splits, std::string& why) {
              const size_t mn = sums.size();
              if (splits > 1) {  // the planes add to the exact sums
                for (size_t i = 0; i < mn; ++i) {
                  uint32_t t = 0;
                  for (int64_t z = 0; z < splits; ++z) {
                    uint32_t v;
                    std::memcpy(&v, &parts[4 * (z * mn + i)], 4);
                    t += v;
                  }
                  if (int32_t(t) != sums[i]) {
                    why = "int32 partials of [" + std::to_string(i / s.N) + "," +
                          std::to_string(i % s.N) + "] add to " + std::to_string(int32_t(t)) +
                          ", expected " + std::to_string(sums[i]);
                    return false;
                  }
                }
              }
              for (size_t i = 0; i < mn; ++i) {
                uint16_t h;
                std::memcpy(&h, &o[2 * i], 2);
                const int r = int(i / s.N), c = int(i % s.N);
                const double y = double(sums[i]) * sa[r] * sb[c] + (with_bias ? bias[c] : 0.0);
                const double got = static_cast<float>(half_bits_to_double(h, false));
                if (!(std::fabs(got - y) <= std::ldexp(std::fabs(y), -8) + 1e-6)) {
                  why = "out[" + std::to_string(r) + "," + std::to_string(c) +
                        "] = " + std::to_string(got) + ", expected " + std::to_string(y);
                  return false;
                }
              }
              return true;
            });
      }
    }
  }
}

// ---- FP4 ---------------------------------------------------------------------------------------

double e2m1(uint32_t n) {
  const uint32_t e = (n >> 1) & 3u, m = n & 1u;
  const double mag = e == 0 ? 0.5 * m : (1.0 + 0.5 * m) * double(1u << (e - 1));
  return (n & 8u) ? -mag : mag;
}

void check_fp4(CUmodule mod, std::mt19937& rng) {
  const CuKernel ks = resolve(mod, jk::kGemmFp4Stream), kf = resolve(mod, jk::kGemmFp4StreamFinish);
  struct Shape {
    int M, N, K;
    bool extreme_codes;
  };
  const Shape shapes[] = {{1, 16, 64, false},      {4, 48, 192, false},    {8, 272, 1088, false},
                          {13, 1040, 4160, false}, {16, 528, 8256, false}, {16, 64, 1024, true},
                          {2, 32, 576, true}};
  for (const Shape& s : shapes) {
    const int Kb = s.K / 2, nblk = s.K / 32;
    const int sn = int(L4::round_up(nblk, L4::kScaleColPad));
    std::uniform_int_distribution<int> byte(0, 255);
    std::vector<uint8_t> a(size_t(s.M) * Kb), w(size_t(s.N) * Kb), ws(w.size());
    for (auto& v : a) v = uint8_t(byte(rng));
    for (auto& v : w) v = uint8_t(byte(rng));
    for (int n = 0; n < s.N; ++n)
      for (int kb = 0; kb < Kb; ++kb) ws[L4::shuffled_b_offset(n, kb, Kb)] = w[size_t(n) * Kb + kb];
    // Scale codes: 120..134, or the extremes (A 0..2 with B 250..254: products 2^-4..2^2).
    std::uniform_int_distribution<int> mid(120, 134), lo(0, 2), hi(250, 254);
    std::vector<uint8_t> ca(size_t(s.M) * nblk), cb(size_t(s.N) * nblk);
    for (auto& v : ca) v = uint8_t(s.extreme_codes ? lo(rng) : mid(rng));
    for (auto& v : cb) v = uint8_t(s.extreme_codes ? hi(rng) : mid(rng));
    auto shuffle_scales = [&](const std::vector<uint8_t>& c, int rows) {
      std::vector<uint8_t> out(size_t(L4::round_up(rows, L4::kScaleRowPad)) * sn, 127);
      for (int r = 0; r < rows; ++r)
        for (int b = 0; b < nblk; ++b)
          out[L4::shuffled_scale_offset(r, b, sn)] = c[size_t(r) * nblk + b];
      return out;
    };
    const std::vector<uint8_t> sa = shuffle_scales(ca, s.M), sb = shuffle_scales(cb, s.N);
    std::vector<double> ref(size_t(s.M) * s.N), absum(ref.size());
    for (int m = 0; m < s.M; ++m)
      for (int n = 0; n < s.N; ++n) {
        double r = 0, ab = 0;
        for (int b = 0; b < nblk; ++b) {
          double part = 0, pa = 0;
          for (int kb = 16 * b; kb < 16 * b + 16; ++kb) {
            const uint8_t x = a[size_t(m) * Kb + kb], y = w[size_t(n) * Kb + kb];
            for (int h = 0; h < 2; ++h) {
              const double t = e2m1((x >> (4 * h)) & 15) * e2m1((y >> (4 * h)) & 15);
              part += t;
              pa += std::fabs(t);
            }
          }
          const double f = std::ldexp(1.0, int(ca[size_t(m) * nblk + b]) - 127) *
                           std::ldexp(1.0, int(cb[size_t(n) * nblk + b]) - 127);
          r += part * f;
          ab += pa * f;
        }
        ref[size_t(m) * s.N + n] = r;
        absum[size_t(m) * s.N + n] = ab;
      }
    DevBuf da = upload(a), dw = upload(ws), dsa = upload(sa), dsb = upload(sb);
    const size_t out_bytes = size_t(s.M) * s.N * 2;
    DevBuf out = poisoned(out_bytes);
    Plan p;
    p.stream = [&](int64_t chunk, int64_t splits, void* partials) {
      const jk::GemmFp4StreamArgs args{
          da.ptr(), dw.ptr(), dsa.ptr(), dsb.ptr(), out.ptr(),      partials,   s.M,
          s.N,      s.K,      Kb,        sn,        int(2 * chunk), int(splits)};
      launch_async(ks, cdiv(s.N, S::kRows), 1, unsigned(splits), S::kThreads, args);
    };
    p.finish = [&](int64_t splits, void* partials) {
      const jk::GemmFp4StreamFinishArgs args{partials, out.ptr(), s.M, s.N, int(splits)};
      launch_async(kf, cdiv(int64_t(s.M) * s.N, S::kFinishThreads), 1, 1, S::kFinishThreads, args);
    };
    const std::string tag = std::string("fp4 ") + (s.extreme_codes ? "extreme codes " : "") +
                            std::to_string(s.M) + "x" + std::to_string(s.N) + "x" +
                            std::to_string(s.K);
    for (int forced : {1, 3, 0}) {
      check_plan(tag, p, s.N, Kb, s.M, out_bytes, out, forced,
                 [&](const std::vector<unsigned char>& o, const std::vector<unsigned char>&,
                     int64_t, std::string& why) {
                   for (size_t i = 0; i < ref.size(); ++i) {
                     uint16_t h;
                     std::memcpy(&h, &o[2 * i], 2);
                     const double got = static_cast<float>(half_bits_to_double(h, false));
                     if (!near(got, ref[i], absum[i], 0x1p-8)) {
                       why = "out[" + std::to_string(i / s.N) + "," + std::to_string(i % s.N) +
                             "] = " + std::to_string(got) + ", expected " + std::to_string(ref[i]);
                       return false;
                     }
                   }
                   return true;
                 });
    }
  }
}

// ---- bench -------------------------------------------------------------------------------------

double median_ms(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median of 25 timed runs (after 3 warm-ups) of f(set), sets rotated.
double time_ms(int sets, const std::function<void(int)>& f) {
  CUevent e0, e1;
  CHECK_CU(cuEventCreate(&e0, CU_EVENT_DEFAULT));
  CHECK_CU(cuEventCreate(&e1, CU_EVENT_DEFAULT));
  std::vector<float> ms;
  for (int r = 0; r < 28; ++r) {
    CHECK_CU(cuEventRecord(e0, nullptr));
    f(r % sets);
    CHECK_CU(cuEventRecord(e1, nullptr));
    CHECK_CU(cuEventSynchronize(e1));
    float x = 0;
    CHECK_CU(cuEventElapsedTime(&x, e0, e1));
    if (r >= 3) ms.push_back(x);
  }
  cuEventDestroy(e0);
  cuEventDestroy(e1);
  return median_ms(ms);
}

// A device buffer of `bytes` bytes, every 32-bit word `word` (timing does not depend on the values;
// the patterns are no NaN in any of the formats).
DevBuf filled(size_t bytes, uint32_t word) {
  DevBuf b(bytes);
  CHECK_CU(cuMemsetD32(b.p, word, (bytes + 3) / 4));
  return b;
}
uint32_t float_word(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

void bench(CUmodule fp8, CUmodule i8, CUmodule fp4, int sms, int64_t l2) {
  struct Shape {
    int N, K;
  };
  const Shape shapes[] = {{8192, 28672}, {4096, 4096}};
  std::printf("\n%-6s %-16s %-22s %6s %9s %8s %8s %7s\n", "family", "M x N x K", "kernel", "splits",
              "ms", "W GB/s", "copy", "W/copy");
  for (int family = 0; family < 3; ++family) {
    const char* fam = family == 0 ? "fp8bs" : family == 1 ? "i8" : "fp4";
    const CUmodule mod = family == 0 ? fp8 : family == 1 ? i8 : fp4;
    const jk::KernelInfo& sk = family == 0   ? jk::kGemmFp8BlockscaleStream
                               : family == 1 ? jk::kGemmI8Stream
                                             : jk::kGemmFp4Stream;
    const jk::KernelInfo& fk = family == 0   ? jk::kGemmFp8BlockscaleFinish
                               : family == 1 ? jk::kGemmI8StreamFinish
                                             : jk::kGemmFp4StreamFinish;
    const CuKernel ks = resolve(mod, sk), kf = resolve(mod, fk);
    for (const Shape& sh : shapes) {
      const int64_t kbytes = family == 2 ? sh.K / 2 : sh.K;
      const int64_t wbytes = int64_t(sh.N) * kbytes;
      const int sets = int(std::clamp<int64_t>((3 * l2 + wbytes - 1) / wbytes, 2, 32));
      std::vector<DevBuf> W;
      for (int i = 0; i < sets; ++i)
        W.push_back(filled(wbytes, 0x3A3B3C3Du + 0x01000000u * (i % 3)));
      DevBuf dst(wbytes);
      const double copy = time_ms(
          sets, [&](int i) { CHECK_CU(cuMemcpyDtoDAsync(dst.p, W[i].p, wbytes, nullptr)); });
      const double copy_gbs = 2.0 * wbytes / (copy * 1e-3) / 1e9;
      for (int M : {1, 16}) {
        const int nblk32 = sh.K / 32, sn = int(L4::round_up(nblk32, 8));
        const int64_t abytes = int64_t(M) * kbytes;
        DevBuf A = filled(abytes, 0x3C3B3A39u), SA, SB;
        if (family == 0) {
          SA = filled(size_t(sh.K / 128) * M * 4, float_word(1e-2f));
          SB = filled(size_t(sh.N / 128) * (sh.K / 128) * 4, float_word(1e-2f));
        } else if (family == 1) {
          SA = filled(size_t(M) * 4, float_word(1e-3f));
          SB = filled(size_t(sh.N) * 4, float_word(1e-3f));
        } else {
          SA = filled(size_t(256) * sn, 0x7F7F7F7Fu);
          SB = filled(size_t(L4::round_up(sh.N, 256)) * sn, 0x7F7F7F7Fu);
        }
        DevBuf out(size_t(M) * sh.N * 2), partials(size_t(S::kMaxSplits) * M * sh.N * 4);
        const std::string shape =
            std::to_string(M) + "x" + std::to_string(sh.N) + "x" + std::to_string(sh.K);
        std::printf("%-6s %-16s %-22s %6s %9.4f %8s %8.0f\n", "copy", shape.c_str(), "cuMemcpyDtoD",
                    "", copy, "", copy_gbs);
        auto report = [&](const std::string& kernel, int64_t splits, double ms) {
          const double gbs = wbytes / (ms * 1e-3) / 1e9;
          std::printf("%-6s %-16s %-22s %6lld %9.4f %8.0f %8.0f %7.2f\n", fam, shape.c_str(),
                      kernel.c_str(), static_cast<long long>(splits), ms, gbs, copy_gbs,
                      gbs / copy_gbs);
        };
        auto run_stream = [&](int i, int64_t chunk, int64_t splits) {
          void* pp = partials.ptr();
          const unsigned gx = cdiv(sh.N, S::kRows), fx = cdiv(int64_t(M) * sh.N, S::kFinishThreads);
          if (family == 0) {
            const jk::GemmFp8BlockscaleStreamArgs args{
                A.ptr(), W[i].ptr(), SA.ptr(), SB.ptr(),   out.ptr(),   pp, M,
                sh.N,    sh.K,       sh.K,     int(chunk), int(splits), 0};
            launch_async(ks, gx, 1, unsigned(splits), S::kThreads, args);
            if (splits > 1) {
              const jk::GemmFp8BlockscaleFinishArgs f{pp, out.ptr(), M, sh.N, int(splits), 0};
              launch_async(kf, cdiv(int64_t(M) * sh.N, F8::kFinishThreads * F8::kFinishVec), 1, 1,
                           F8::kFinishThreads, f);
            }
          } else if (family == 1) {
            const jk::GemmI8StreamArgs args{A.ptr(),   W[i].ptr(), SA.ptr(),   SB.ptr(), nullptr,
                                            out.ptr(), pp,         M,          sh.N,     sh.K,
                                            sh.K,      int(chunk), int(splits)};
            launch_async(ks, gx, 1, unsigned(splits), S::kThreads, args);
            if (splits > 1) {
              const jk::GemmI8StreamFinishArgs f{pp,        SA.ptr(), SB.ptr(), nullptr,
                                                 out.ptr(), M,        sh.N,     int(splits)};
              launch_async(kf, fx, 1, 1, S::kFinishThreads, f);
            }
          } else {
            const jk::GemmFp4StreamArgs args{
                A.ptr(), W[i].ptr(), SA.ptr(), SB.ptr(), out.ptr(),      pp,         M,
                sh.N,    sh.K,       sh.K / 2, sn,       int(2 * chunk), int(splits)};
            launch_async(ks, gx, 1, unsigned(splits), S::kThreads, args);
            if (splits > 1) {
              const jk::GemmFp4StreamFinishArgs f{pp, out.ptr(), M, sh.N, int(splits)};
              launch_async(kf, fx, 1, 1, S::kFinishThreads, f);
            }
          }
        };
        const auto rule = jax_aiter::ops::choose_stream_q_split(sh.N, kbytes, sms);
        report("stream (rule)", rule.splits,
               time_ms(sets, [&](int i) { run_stream(i, rule.k_chunk, rule.splits); }));
        for (int forced : {1, 2, 4, 8}) {
          const auto [chunk, splits] = split_of(sh.N, kbytes, forced);
          if (splits == rule.splits) continue;
          report("stream", splits,
                 time_ms(sets, [&, c = chunk, z = splits](int i) { run_stream(i, c, z); }));
        }
        // The kernel the op took before, in the same run.
        if (family == 0) {
          const jk::GemmFp8BlockscaleTile& t = jk::kGemmFp8BlockscaleTiles.back();  // t16x128
          const CuKernel k = resolve(mod, t.kernel);
          report("before: " + std::string(t.name), 1, time_ms(sets, [&](int i) {
                   const jk::GemmFp8BlockscaleArgs args{A.ptr(),   W[i].ptr(), SA.ptr(), SB.ptr(),
                                                        out.ptr(), M,          sh.N,     sh.K,
                                                        sh.K,      0,          0};
                   launch_async(k, cdiv(sh.N, t.bn), cdiv(M, t.bm), 1, t.threads, args);
                 }));
        } else if (family == 1) {
          const auto c = jax_aiter::ops::choose_portable_gemm_i8(M, sh.N, sh.K, sms, true);
          const jk::GemmI8Tile& t = jk::kGemmI8Tiles[c.tile];
          const CuKernel k = resolve(mod, t.split_kernel), fin = resolve(mod, jk::kGemmI8Finish);
          report("before: " + std::string(t.name), c.splits, time_ms(sets, [&](int i) {
                   CHECK_CU(cuMemsetD8Async(partials.p, 0, size_t(M) * sh.N * 4, nullptr));
                   const jk::GemmI8SplitArgs args{A.ptr(), W[i].ptr(), partials.ptr(), M, sh.N,
                                                  sh.K,    sh.K,       int(c.k_chunk)};
                   launch_async(k, cdiv(sh.N, t.bn), cdiv(M, t.bm), unsigned(c.splits), t.threads,
                                args);
                   const jk::GemmI8FinishArgs f{partials.ptr(), SA.ptr(), SB.ptr(), nullptr,
                                                out.ptr(),      M,        sh.N};
                   launch_async(fin, cdiv(int64_t(M) * sh.N, jk::kGemmI8FinishThreads), 1, 1,
                                jk::kGemmI8FinishThreads, f);
                 }));
        } else {
          const jk::GemmFp4Decode& d =
              jk::kGemmFp4Decodes[jax_aiter::ops::choose_gemm_fp4_decode(M)];
          const CuKernel k = resolve(mod, d.kernel);
          report("before: " + std::string(d.name), 1, time_ms(sets, [&](int i) {
                   const jk::GemmFp4Args args{A.ptr(),   W[i].ptr(), SA.ptr(), SB.ptr(),
                                              out.ptr(), M,          sh.N,     sh.K,
                                              sh.K / 2,  sn,         sn,       1};
                   launch_async(k, cdiv(sh.N, jk::kGemmFp4DecodeRows), cdiv(M, d.bm), 1,
                                jk::kGemmFp4DecodeThreads, args);
                 }));
        }
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::printf("usage: %s FP8_BLOCKSCALE_CUBIN I8_CUBIN FP4_CUBIN [check|bench|all]\n", argv[0]);
    return 2;
  }
  const std::string mode = argc > 4 ? argv[4] : "check";
  const CUdevice dev = use_device0();
  int sms = 0, l2 = 0;
  CHECK_CU(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  CHECK_CU(cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev));
  char name[256] = {};
  CHECK_CU(cuDeviceGetName(name, sizeof(name), dev));
  std::printf("device: %s, %d SMs, L2 %d MiB\n", name, sms, l2 >> 20);
  CUmodule mods[3];
  for (int i = 0; i < 3; ++i) {
    const std::vector<char> image = read_file(argv[1 + i]);
    CHECK_CU(cuModuleLoadData(&mods[i], image.data()));
  }
  if (mode == "check" || mode == "all") {
    std::mt19937 rng(7);
    check_fp8(mods[0], rng);
    check_i8(mods[1], rng);
    check_fp4(mods[2], rng);
    std::printf("%d passed, %d failed\n", g_pass, g_fail);
  }
  if (mode == "bench" || mode == "all") bench(mods[0], mods[1], mods[2], sms, l2);
  return g_fail == 0 ? 0 : 1;
}
