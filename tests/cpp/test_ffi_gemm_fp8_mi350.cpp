// aiter.gemm_fp8_mi350 through its FFI handler on the Host backend (no XLA, no GPU): values of
// both tiers against a float64 reference computed here (fp8 decoded by bit arithmetic written in
// this file), outputs poisoned first; every AITER MI350 row forced through its ABI twin; the
// plan's packed bytes as AITER's launcher fills them; every bad input named.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "gemm_ffi_testing.hpp"
#include "jax_aiter/ffi/gemm_fp8_mi350.hpp"
#include "jax_aiter/host_twins/gemm_fp8_mi350.hpp"
#include "jax_aiter/ops/gemm_fp8_mi350.hpp"
#include "jax_aiter/runtime/host.hpp"
#include "jax_aiter/testing/fake_ffi.hpp"
#include "jax_aiter/testing/host_array.hpp"

namespace ja = jax_aiter;
namespace fake = jax_aiter::testing;
namespace ops = jax_aiter::ops;
using fake::Array;
using ja::DType;

JAX_AITER_DEFINE_HANDLER(test_gemm_fp8_mi350_cpu, ops::GemmFp8Mi350, ja::runtime::Host);

namespace {

using namespace ja::gemm_testing;

constexpr Dispatch kDispatch{"b_layout", "16x16"};

// e4m3: sign, 4 exponent bits, 3 mantissa bits; bias 7 (fn) or 8 (fnuz). NaN codes are not drawn.
double e4m3(unsigned char c, bool fnuz) {
  const int e = (c >> 3) & 15, m = c & 7, bias = fnuz ? 8 : 7;
  const double v = e == 0 ? std::ldexp(m / 8.0, 1 - bias) : std::ldexp(1 + m / 8.0, e - bias);
  return (c & 0x80) ? -v : v;
}
bool is_nan(unsigned char c, bool fnuz) { return fnuz ? c == 0x80 : (c & 0x7F) == 0x7F; }

struct Fp8Call {
  int64_t m, n, k;
  bool fnuz;
  Array xq, w_plain, wq, x_scale, w_scale, out;

  Fp8Call(int64_t m_, int64_t n_, int64_t k_, uint64_t seed, bool fnuz_ = false)
      : m(m_),
        n(n_),
        k(k_),
        fnuz(fnuz_),
        xq(fnuz_ ? DType::kF8E4M3FNUZ : DType::kF8E4M3FN, {m_, k_}),
        w_plain(xq.dtype, {n_, k_}),
        wq(xq.dtype, {n_, k_}),
        x_scale(DType::kF32, {k_ / 128, m_}),
        w_scale(DType::kF32, {n_ / 128, k_ / 128}),
        out(DType::kBF16, {m_, n_}) {
    fake::Rng rng(seed);
    for (auto* arr : {&xq, &w_plain}) {
      for (auto& byte : arr->bytes) {
        do {
          byte = static_cast<unsigned char>(std::lround(rng.uniform(0, 255)));
        } while (is_nan(byte, fnuz));
      }
    }
    if (n % 16 == 0 && k % 32 == 0) wq.bytes = shuffle_16x16(w_plain.bytes, n, k);
    fake::fill(x_scale, rng, 1e-3, 1e-1);
    fake::fill(w_scale, rng, 1e-3, 1e-1);
    out.poison();
  }

  fake::CallFrame frame(const Options& o) {
    fake::CallFrame f;
    fake::add_arg(f, xq);
    fake::add_arg(f, wq);
    fake::add_arg(f, x_scale);
    fake::add_arg(f, w_scale);
    fake::add_ret(f, out);
    add_dispatch_attrs(f, o, kDispatch);
    return f;
  }
  fake::CallResult call(const Options& o = {}) {
    fake::CallFrame f = frame(o);
    return fake::call(test_gemm_fp8_mi350_cpu, f);
  }

  // |out - ref| <= u |ref| + (K/128 + 160) u_f32 sum |terms|.
  ::testing::AssertionResult check() const {
    const double u = 0x1.0p-8, u32 = 0x1.0p-24;
    Mismatches bad;
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < n; ++c) {
        double ref = 0, mag = 0;
        for (int64_t kb = 0; kb < k / 128; ++kb) {
          double acc = 0, am = 0;
          for (int64_t kk = kb * 128; kk < kb * 128 + 128; ++kk) {
            const double t =
                e4m3(xq.bytes[r * k + kk], fnuz) * e4m3(w_plain.bytes[c * k + kk], fnuz);
            acc += t;
            am += std::abs(t);
          }
          const double s = x_scale.at(kb * m + r) * w_scale.at((c / 128) * (k / 128) + kb);
          ref += acc * s;
          mag += am * s;
        }
        const double bound = u * std::abs(ref) + (k / 128.0 + 160) * u32 * mag + 1e-30;
        bad.expect_near(r, c, out.at(r * n + c), ref, bound);
      }
    }
    return bad.result(m * n);
  }
};

TEST(GemmFp8Mi350Portable, ValuesForOddShapesBothFormats) {
  const Shape shapes[] = {{1, 128, 128}, {7, 384, 640}, {33, 256, 1024}, {130, 128, 256}};
  uint64_t seed = 1;
  for (const Shape& s : shapes) {
    for (bool fnuz : {false, true}) {
      Fp8Call c(s.m, s.n, s.k, seed++, fnuz);
      const fake::CallResult r = c.call(Options().with_tier("portable"));
      ASSERT_TRUE(r.ok()) << r.message;
      EXPECT_TRUE(c.check()) << s.m << "x" << s.n << "x" << s.k << " fnuz " << fnuz;
    }
  }
}

TEST(GemmFp8Mi350AsmTwins, EveryRowForcedAndTheRule) {
  uint64_t seed = 50;
  for (const auto& row : ja::kernels::kAiterMi350Rows) {
    Fp8Call c(row.tile_m + 5, 384, 512, seed++);  // partial row and column blocks
    const fake::CallResult r = c.call(Options()
                                          .with_kernel(std::string(ja::kernels::short_name(row)))
                                          .with_tier("asm")
                                          .for_arch("gfx950"));
    ASSERT_TRUE(r.ok()) << ja::kernels::short_name(row) << ": " << r.message;
    EXPECT_TRUE(c.check()) << ja::kernels::short_name(row);
  }
  for (int64_t m : {16, 32, 33, 160}) {  // x32, x32, x128, x128
    Fp8Call c(m, 256, 512, seed++);
    ASSERT_TRUE(c.call(Options().with_tier("asm").for_arch("gfx950")).ok());
    EXPECT_TRUE(c.check()) << m;
  }
}

// The bytes AITER's launcher writes, field by field, for a call that the rule sends to x128.
TEST(GemmFp8Mi350AsmTwins, PlanPacksAsAiterDoes) {
  Fp8Call c(200, 640, 1024, 7);
  ops::GemmFp8Mi350Params p;
  p.xq = tensor(c.xq);
  p.wq = tensor(c.wq);
  p.x_scale = tensor(c.x_scale);
  p.w_scale = tensor(c.w_scale);
  p.out = tensor(c.out);
  p.b_layout = "16x16";
  ASSERT_TRUE(ops::GemmFp8Mi350::validate(p).ok());
  ja::Target t{.backend = ja::BackendKind::kHip,
               .arch = ja::Arch::kGfx950,
               .compute_units = 256,
               .l2_bytes = 0,
               .pci_chip_id = 0};
  ASSERT_TRUE(ops::GemmFp8Mi350AsmTier::supports(p, t).ok());
  ja::kernels::Plan plan;
  EXPECT_TRUE(ops::decide_and_plan<ops::GemmFp8Mi350AsmTier>(p, t, plan).ok());
  ASSERT_EQ(plan.count, 1u);
  ASSERT_EQ(plan.steps[0].kind, ja::kernels::Step::Kind::kLaunch);
  const ja::kernels::Launch& launch = plan.steps[0].launch;
  EXPECT_EQ(launch.kernel->symbol, "f8_block_scale_mi350_x128");
  EXPECT_EQ(launch.grid, (ja::kernels::Dim3{3, 2, 1}));  // (ceil(640 / 256), ceil(200 / 128))
  EXPECT_EQ(launch.block, (ja::kernels::Dim3{256, 1, 1}));
  const auto a = launch.args.unpack<ja::kernels::AiterMi350Args>();
  EXPECT_EQ(a.ptr_C.value, c.out.data());
  EXPECT_EQ(a.ptr_X.value, c.xq.data());
  EXPECT_EQ(a.ptr_W.value, c.wq.data());
  EXPECT_EQ(a.ptr_XQ.value, c.x_scale.data());
  EXPECT_EQ(a.ptr_WQ.value, c.w_scale.data());
  EXPECT_EQ(a.ptr_XC.value, nullptr);
  EXPECT_EQ(a.K.value, 1024u);
  EXPECT_EQ(a.N.value, 640u);
  EXPECT_EQ(a.M.value, 200u);
  EXPECT_EQ(a.eprt_cnt.value, 1u);
  EXPECT_EQ(a.Xs.value, 1024u);
  EXPECT_EQ(a.Ws.value, 1024u);
  EXPECT_EQ(a.Cs.value, 1280u);
  EXPECT_EQ(a.splitk.value, 0u);
  EXPECT_EQ(a.activation.value, 0u);
  EXPECT_EQ(a.ptr_tmp3.value, 0u);
  EXPECT_EQ(launch.args.size, 368u);
}

TEST(GemmFp8Mi350Errors, EveryOperandIsNamed) {
  auto with = [](auto mutate) {
    Fp8Call c(32, 256, 512, 1);
    mutate(c);
    return c.call();
  };
  EXPECT_TRUE(
      Fails(with([](Fp8Call& c) {
              c.xq = Array(DType::kBF16, {32, 512});
            }),
            {"aiter.gemm_fp8_mi350: operand xq:", "expected f8_e4m3fn[M,K]", "got bf16[32,512]"}));
  EXPECT_TRUE(Fails(with([](Fp8Call& c) {
                      c.wq = Array(DType::kF8E4M3FNUZ, {256, 512});
                    }),
                    {"operand wq:", "expected f8_e4m3fn[N,512]", "got f8_e4m3fnuz[256,512]"}));
  EXPECT_TRUE(Fails(with([](Fp8Call& c) {
                      c.x_scale = Array(DType::kF32, {32, 4});
                    }),
                    {"operand x_scale:", "expected f32[4,32]", "got f32[32,4]"}));
  EXPECT_TRUE(Fails(with([](Fp8Call& c) {
                      c.w_scale = Array(DType::kF32, {4, 2});
                    }),
                    {"operand w_scale:", "expected f32[2,4]", "got f32[4,2]"}));
  EXPECT_TRUE(Fails(with([](Fp8Call& c) {
                      c.out = Array(DType::kF32, {32, 256});
                    }),
                    {"operand out:", "expected bf16[32,256]", "got f32[32,256]"}));
  {
    Fp8Call c(8, 192, 512, 1);
    EXPECT_TRUE(Fails(c.call(), {"operand wq:", "N=192 is not a multiple of 128"}));
  }
  {
    Fp8Call c(8, 128, 96, 1);
    EXPECT_TRUE(Fails(c.call(), {"operand xq:", "K=96 is not a multiple of 128"}));
  }
  Fp8Call c(8, 128, 512, 1);
  EXPECT_TRUE(
      Fails(c.call(Options().with_layout("none")),
            {"operand wq:", "pre-shuffled in the (16, 16) layout", "got b_layout \"none\""}));
  EXPECT_TRUE(Fails(c.call(Options().with_tier("asm").for_arch("gfx950")), {"M = 8 is below 16"}));
  EXPECT_TRUE(Fails(c.call(Options().with_tier("asm").for_arch("gfx942")), {"gfx950 code only"}));
  Fp8Call big(32, 128, 512, 1);
  EXPECT_TRUE(Fails(big.call(Options().with_kernel("x48").with_tier("asm").for_arch("gfx950")),
                    {"attribute kernel: expected \"\"", "mi350 kernels", "got 'x48'"}));
  EXPECT_TRUE(Fails(big.call(Options().with_kernel("x48")), {"attribute kernel:", "got 'x48'"}));
}

}  // namespace
