// aiter.flatmm_fp8 through its FFI handler on the Host backend (no XLA, no GPU): values of both
// tiers against a float64 reference computed here from the dequantized inputs (fp8 decoded by bit
// arithmetic written here, not core/dtype.hpp), outputs poisoned first; AITER's FlatMM kernel
// forced through its ABI twin (the plan packed as AITER packs it, every field); every bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "gemm_ffi_testing.hpp"
#include "jax_aiter/ffi/describe.hpp"
#include "jax_aiter/ffi/flatmm_fp8.hpp"
#include "jax_aiter/host_twins/flatmm_fp8.hpp"
#include "jax_aiter/ops/flatmm_fp8.hpp"
#include "jax_aiter/runtime/host.hpp"
#include "jax_aiter/testing/fake_ffi.hpp"
#include "jax_aiter/testing/host_array.hpp"

namespace ja = jax_aiter;
namespace fake = jax_aiter::testing;
namespace ops = jax_aiter::ops;
using fake::Array;
using ja::DType;

JAX_AITER_DEFINE_HANDLER(test_flatmm_cpu, ops::FlatmmFp8, ja::runtime::Host);

namespace {

constexpr const char* kAiterName = "flatmm_uk_gfx9_f16f8_128x256x128_1x4x1_16x16x32";

using namespace ja::gemm_testing;

constexpr Dispatch kDispatch{"w_layout", "flatmm"};

// e4m3 by its bits: fn (bias 7, 0x7F/0xFF NaN) or fnuz (bias 8, 0x80 NaN, no -0).
double e4m3(uint8_t code, bool fnuz) {
  const int sign = code >> 7, e = (code >> 3) & 15, m = code & 7;
  const int bias = fnuz ? 8 : 7;
  const double mag = e == 0 ? std::ldexp(m / 8.0, 1 - bias) : std::ldexp(1 + m / 8.0, e - bias);
  return sign ? -mag : mag;
}
bool is_nan_code(uint8_t code, bool fnuz) { return fnuz ? code == 0x80 : (code & 0x7F) == 0x7F; }

// AITER's op test's FlatMM weight, as it writes it: w.view(N/16, 16, K/64, 4, 16)
// .permute(0, 2, 3, 1, 4).
std::vector<unsigned char> flatten(const std::vector<unsigned char>& w, int64_t n, int64_t k) {
  std::vector<unsigned char> out(w.size());
  size_t i = 0;
  for (int64_t a = 0; a < n / 16; ++a) {
    for (int64_t c = 0; c < k / 64; ++c) {
      for (int64_t d = 0; d < 4; ++d) {
        for (int64_t b = 0; b < 16; ++b) {
          for (int64_t e = 0; e < 16; ++e) out[i++] = w[(a * 16 + b) * k + c * 64 + d * 16 + e];
        }
      }
    }
  }
  return out;
}

// One call's buffers: random e4m3 codes of magnitude up to 8 (no NaN), positive scales, out
// poisoned.
struct FlatCall {
  int64_t m, n, k;
  bool fnuz;
  Array x, w_plain, w, x_scale, w_scale, out;

  FlatCall(int64_t m_, int64_t n_, int64_t k_, bool fnuz_, uint64_t seed)
      : m(m_),
        n(n_),
        k(k_),
        fnuz(fnuz_),
        x(fnuz_ ? DType::kF8E4M3FNUZ : DType::kF8E4M3FN, {m_, k_}),
        w_plain(x.dtype, {n_, k_}),
        w(x.dtype, {n_, k_}),
        x_scale(DType::kF32, {k_ / 128, m_}),
        w_scale(DType::kF32, {k_ / 128, (n_ + 127) / 128}),
        out(DType::kF16, {m_, n_}) {
    fake::Rng rng(seed);
    for (auto* arr : {&x, &w_plain}) {
      for (auto& byte : arr->bytes) {
        uint8_t c;
        do {
          c = static_cast<uint8_t>(std::lround(rng.uniform(0, 255)));
        } while (is_nan_code(c, fnuz) || std::abs(e4m3(c, fnuz)) > 8);
        byte = c;
      }
    }
    if (n % 16 == 0 && k % 64 == 0) w.bytes = flatten(w_plain.bytes, n, k);
    fake::fill(x_scale, rng, 0.01, 0.1);
    fake::fill(w_scale, rng, 0.01, 0.1);
    out.poison();
  }

  fake::CallFrame frame(const Options& o) {
    fake::CallFrame f;
    fake::add_arg(f, x);
    fake::add_arg(f, w);
    fake::add_arg(f, x_scale);
    fake::add_arg(f, w_scale);
    fake::add_ret(f, out);
    add_dispatch_attrs(f, o, kDispatch);
    return f;
  }
  fake::CallResult call(const Options& o = {}) {
    fake::CallFrame f = frame(o);
    return fake::call(test_flatmm_cpu, f);
  }

  // |out - ref| <= u16 |ref| + (128 + K/128 + 8) u32 scale + 2^-24, scale = sum_b xs ws sum |x w|:
  // float32 partials of 128 products, K/128 float32 folds, one f16 rounding (absolute 2^-24 below
  // f16's normal range).
  ::testing::AssertionResult check() const {
    const double u16 = 0x1.0p-11, u32 = 0x1.0p-24;
    const int64_t nb = (n + 127) / 128;
    double value[256];
    for (int code = 0; code < 256; ++code) value[code] = e4m3(static_cast<uint8_t>(code), fnuz);
    Mismatches bad;
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < n; ++c) {
        double ref = 0, mag = 0;
        for (int64_t b = 0; b < k / 128; ++b) {
          double part = 0, pmag = 0;
          for (int64_t kk = b * 128; kk < (b + 1) * 128; ++kk) {
            const double t = value[x.bytes[r * k + kk]] * value[w_plain.bytes[c * k + kk]];
            part += t;
            pmag += std::abs(t);
          }
          const double s = x_scale.at(b * m + r) * w_scale.at(b * nb + c / 128);
          ref += part * s;
          mag += pmag * s;
        }
        const double bound = u16 * std::abs(ref) + (128 + k / 128 + 8) * u32 * mag + 0x1.0p-24;
        bad.expect_near(r, c, out.at(r * n + c), ref, bound);
      }
    }
    return bad.result(m * n);
  }
};

// ---- the portable tier ---------------------------------------------------------------------

TEST(FlatmmPortable, ValuesForOddAndLargeShapes) {
  const Shape shapes[] = {{1, 16, 128},     {7, 48, 256},    {33, 144, 384},
                          {130, 272, 1024}, {17, 4112, 128}, {256, 512, 2048},
                          {300, 64, 128},   {1, 128, 8192},  {65, 400, 640}};
  uint64_t seed = 1;
  for (const Shape& s : shapes) {
    for (bool fnuz : {false, true}) {
      FlatCall c(s.m, s.n, s.k, fnuz, seed++);
      const fake::CallResult r = c.call(Options().with_tier("portable"));
      ASSERT_TRUE(r.ok()) << r.message;
      EXPECT_TRUE(c.check()) << s.m << "x" << s.n << "x" << s.k << " fnuz " << fnuz;
    }
  }
}

// On the host the ASM tier declines (AMD code) and the portable tier takes the call.
TEST(FlatmmPortable, AutoOnTheHostIsPortable) {
  FlatCall c(9, 256, 512, false, 11);
  ASSERT_TRUE(c.call().ok());
  EXPECT_TRUE(c.check());
}

// ---- the ASM tier, through the ABI twin ------------------------------------------------------

TEST(FlatmmAsmTwin, ForcedAndChosenOnGfx942) {
  const Shape shapes[] = {
      {1, 256, 128}, {130, 512, 640}, {300, 768, 256}, {128, 256, 1024}, {257, 1024, 384}};
  uint64_t seed = 100;
  for (const Shape& s : shapes) {
    for (bool forced : {false, true}) {
      FlatCall c(s.m, s.n, s.k, true, seed++);
      Options o = Options().with_tier("asm").for_arch("gfx942");
      if (forced) o.with_kernel(kAiterName);
      const fake::CallResult r = c.call(o);
      ASSERT_TRUE(r.ok()) << r.message;
      EXPECT_TRUE(c.check()) << s.m << "x" << s.n << "x" << s.k << " forced " << forced;
    }
  }
  // auto with asm_arch gfx942: the ASM tier takes what it can, the portable tier the rest.
  FlatCall c(40, 512, 256, true, 7);
  ASSERT_TRUE(c.call(Options().for_arch("gfx942")).ok());
  EXPECT_TRUE(c.check());
}

// The plan as AITER packs it, plus the fields AITER leaves uninitialised: every byte is ours.
TEST(FlatmmAsmTwin, PlanPacksEveryField) {
  FlatCall c(300, 512, 640, true, 7);
  ops::FlatmmFp8Params p;
  p.x = tensor(c.x);
  p.w = tensor(c.w);
  p.x_scale = tensor(c.x_scale);
  p.w_scale = tensor(c.w_scale);
  p.out = tensor(c.out);
  p.w_layout = "flatmm";
  ASSERT_TRUE(ops::FlatmmFp8::validate(p).ok());
  ja::Target gfx942{ja::BackendKind::kHip, ja::Arch::kGfx942, 304};
  ASSERT_TRUE(ops::FlatmmFp8AsmTier::supports(p, gfx942).ok());
  ja::kernels::Plan plan;
  EXPECT_TRUE(ops::decide_and_plan<ops::FlatmmFp8AsmTier>(p, gfx942, plan).ok());
  ASSERT_EQ(plan.count, 1u);  // one launch, no memset
  const ja::kernels::Launch& launch = plan.steps[0].launch;
  EXPECT_EQ(launch.kernel->symbol, kAiterName);
  EXPECT_EQ(launch.kernel->code_object, std::string(kAiterName) + ".co");
  EXPECT_EQ(launch.grid, (ja::kernels::Dim3{2, 3, 1}));
  EXPECT_EQ(launch.block, (ja::kernels::Dim3{256, 1, 1}));
  EXPECT_EQ(launch.args.size, 112u);
  const auto a = launch.args.unpack<ja::kernels::AiterFlatmmArgs>();
  EXPECT_EQ(a.a_ptr, c.x.data());
  EXPECT_EQ(a.b_ptr, c.w.data());
  EXPECT_EQ(a.c_ptr, nullptr);
  EXPECT_EQ(a.sa_ptr, c.x_scale.data());
  EXPECT_EQ(a.sb_ptr, c.w_scale.data());
  EXPECT_EQ(a.d_ptr, nullptr);
  EXPECT_EQ(a.d_f16_ptr, c.out.data());
  EXPECT_EQ(a.dbg_int_ptr, nullptr);
  EXPECT_EQ(a.dbg_fp8_ptr, nullptr);
  EXPECT_EQ(a.dbg_f16_ptr, nullptr);
  EXPECT_EQ(a.dbg_fp32_ptr, nullptr);
  EXPECT_EQ(a.hidden_size, 640);
  EXPECT_EQ(a.intermediate_size, 512);
  EXPECT_EQ(a.num_tokens, 300);
  EXPECT_EQ(a.num_experts, 0);
  EXPECT_EQ(a.topk, 1);
  EXPECT_EQ(a.stride_token, 640);
  // The dense offsets, read back from the raw bytes.
  int32_t at88 = 0, at96 = 0;
  std::memcpy(&at88, launch.args.bytes.data() + 88, 4);
  std::memcpy(&at96, launch.args.bytes.data() + 96, 4);
  EXPECT_EQ(at88, 640);
  EXPECT_EQ(at96, 300);
  const auto& k = ja::runtime::Host::resolve(0, *launch.kernel);
  ASSERT_TRUE(k.status.ok());
  ASSERT_TRUE(ja::runtime::Host::launch(0, nullptr, k, launch).ok());
  EXPECT_TRUE(c.check());
}

// The twin computes exactly its grid: one block row short leaves those outputs unwritten.
TEST(FlatmmAsmTwin, AShortGridLeavesOutputsUnwritten) {
  FlatCall c(200, 512, 256, true, 9);
  ja::kernels::AiterFlatmmArgs args{};
  args.a_ptr = c.x.data();
  args.b_ptr = c.w.data();
  args.sa_ptr = c.x_scale.data();
  args.sb_ptr = c.w_scale.data();
  args.d_f16_ptr = c.out.data();
  args.hidden_size = 256;
  args.intermediate_size = 512;
  args.num_tokens = 200;
  args.topk = 1;
  args.stride_token = 256;
  const auto& row = ja::kernels::kAiterFlatmmRows[0];
  ja::kernels::Plan plan;
  const auto& launch = plan.launch(row.kernel, {1, 2, 1}, {256, 1, 1}, args);  // needs x = 2
  const auto& kernel = ja::runtime::Host::resolve(0, row.kernel);
  ASSERT_TRUE(ja::runtime::Host::launch(0, nullptr, kernel, launch).ok());
  EXPECT_FALSE(std::isnan(c.out.at(199 * 512 + 255)));
  EXPECT_TRUE(std::isnan(c.out.at(199 * 512 + 256)));
  EXPECT_TRUE(std::isnan(c.out.at(256)));
}

// ---- which tier, as jax-aiter-plan shows it -----------------------------------------------------

TEST(FlatmmTiers, PlanToolShowsTheChosenPlan) {
  auto call = [](std::string_view dtype) {
    return "{\"operands\": {\"x\": {\"dtype\": \"" + std::string(dtype) +
           "\", \"shape\": [200, 1024]}, \"w\": {\"dtype\": \"" + std::string(dtype) +
           "\", \"shape\": [4096, 1024]}, \"x_scale\": {\"dtype\": \"f32\", \"shape\": [8, 200]}, "
           "\"w_scale\": {\"dtype\": \"f32\", \"shape\": [8, 32]}, \"out\": {\"dtype\": \"f16\", "
           "\"shape\": [200, 4096]}}, \"attributes\": {\"w_layout\": \"flatmm\"}}";
  };
  auto gfx942 =
      ja::ffi::plan_json<ops::FlatmmFp8>(call("f8_e4m3fnuz"), *ja::ffi::plan_target("gfx942", 304));
  ASSERT_TRUE(gfx942.ok()) << gfx942.status().message();
  EXPECT_NE(gfx942->find(R"("tier": "asm", "verdict": "taken")"), std::string::npos) << *gfx942;
  EXPECT_NE(gfx942->find(kAiterName), std::string::npos) << *gfx942;
  EXPECT_NE(gfx942->find(R"({"name": "num_tokens", "offset": 96, "size": 4, "value": 200})"),
            std::string::npos)
      << *gfx942;
  auto gfx950 =
      ja::ffi::plan_json<ops::FlatmmFp8>(call("f8_e4m3fn"), *ja::ffi::plan_target("gfx950", 256));
  ASSERT_TRUE(gfx950.ok());
  EXPECT_NE(gfx950->find("gfx942 only"), std::string::npos) << *gfx950;
  EXPECT_NE(gfx950->find(R"("tier": "portable", "verdict": "taken")"), std::string::npos)
      << *gfx950;
  auto sm90 =
      ja::ffi::plan_json<ops::FlatmmFp8>(call("f8_e4m3fn"), *ja::ffi::plan_target("sm_90", 132));
  ASSERT_TRUE(sm90.ok());
  EXPECT_NE(sm90->find(R"("tier": "portable", "verdict": "taken")"), std::string::npos) << *sm90;
  EXPECT_NE(sm90->find("jax_aiter_flatmm_fp8_t128x128"), std::string::npos) << *sm90;
}

// ---- bad input --------------------------------------------------------------------------------

TEST(FlatmmErrors, EveryOperandIsNamed) {
  auto with = [](auto mutate) {
    FlatCall c(8, 256, 256, false, 1);
    mutate(c);
    return c.call();
  };
  EXPECT_TRUE(
      Fails(with([](FlatCall& c) {
              c.x = Array(DType::kBF16, {8, 256});
            }),
            {"aiter.flatmm_fp8: operand x:", "f8_e4m3fn or f8_e4m3fnuz [M,K]", "got bf16[8,256]"}));
  EXPECT_TRUE(Fails(with([](FlatCall& c) {
                      c.w = Array(DType::kF8E4M3FNUZ, {256, 256});
                    }),
                    {"operand w:", "expected f8_e4m3fn[N,256]", "got f8_e4m3fnuz[256,256]"}));
  EXPECT_TRUE(Fails(with([](FlatCall& c) {
                      c.w = Array(DType::kF8E4M3FN, {256, 128});
                    }),
                    {"operand w:", "got f8_e4m3fn[256,128]"}));
  EXPECT_TRUE(Fails(with([](FlatCall& c) {
                      c.x_scale = Array(DType::kF32, {8, 2});
                    }),
                    {"operand x_scale:", "expected f32[2,8] ([K/128, M]", "got f32[8,2]"}));
  EXPECT_TRUE(Fails(with([](FlatCall& c) {
                      c.x_scale = Array(DType::kBF16, {2, 8});
                    }),
                    {"operand x_scale:", "got bf16[2,8]"}));
  EXPECT_TRUE(Fails(with([](FlatCall& c) {
                      c.w_scale = Array(DType::kF32, {2, 1});
                    }),
                    {"operand w_scale:", "expected f32[2,2]", "got f32[2,1]"}));
  EXPECT_TRUE(Fails(with([](FlatCall& c) {
                      c.out = Array(DType::kBF16, {8, 256});
                    }),
                    {"operand out:", "expected f16[8,256]", "got bf16[8,256]"}));
  {
    FlatCall c(8, 120, 256, false, 1);
    EXPECT_TRUE(Fails(c.call(), {"operand w:", "N=120 is not a multiple of 16"}));
  }
  {
    FlatCall c(8, 256, 192, false, 1);
    c.x_scale = Array(DType::kF32, {1, 8});
    c.w_scale = Array(DType::kF32, {1, 2});
    EXPECT_TRUE(Fails(c.call(), {"operand x:", "K=192 is not a multiple of 128"}));
  }
  {
    FlatCall c(0, 256, 256, false, 1);
    EXPECT_TRUE(Fails(c.call(), {"operand x:", "non-empty", "M=0"}));
  }
}

TEST(FlatmmErrors, LayoutFlagAttributesAndTiers) {
  FlatCall c(8, 256, 256, false, 1);
  EXPECT_TRUE(Fails(c.call(Options().with_layout("16x16")),
                    {"operand w:", "FlatMM layout", "got w_layout \"16x16\""}));
  fake::CallFrame no_layout = c.frame(Options());
  no_layout.remove_attr("w_layout");
  EXPECT_TRUE(
      Fails(fake::call(test_flatmm_cpu, no_layout), {"attribute w_layout: missing (string)"}));
  EXPECT_TRUE(Fails(c.call(Options().with_tier("asm")), {"no tier runs this call", "asm_arch"}));
  // The host twin stands for the MI300's kernel: a gfx942 plan reads e4m3fnuz only.
  EXPECT_TRUE(
      Fails(c.call(Options().with_tier("asm").for_arch("gfx942")), {"gfx942 reads f8_e4m3fnuz"}));
  EXPECT_TRUE(Fails(c.call(Options().with_tier("asm").for_arch("gfx950")), {"gfx942 only"}));
  EXPECT_TRUE(Fails(c.call(Options().with_kernel("nope").for_arch("gfx942")),
                    {"attribute kernel: expected \"\"", "flatmm kernels", "got 'nope'"}));
  FlatCall odd_n(8, 272, 256, true, 1);
  EXPECT_TRUE(Fails(odd_n.call(Options().with_tier("asm").for_arch("gfx942")),
                    {"N = 272 is not a multiple of 256"}));
  ASSERT_TRUE(odd_n.call(Options().for_arch("gfx942")).ok());  // the portable tier takes it
  EXPECT_TRUE(odd_n.check());
  // No tier splits K: a forced split is refused by each, with its reason (none drops it).
  FlatCall fnuz(8, 256, 256, true, 2);
  EXPECT_TRUE(Fails(fnuz.call(Options().with_split(2).for_arch("gfx942")),
                    {"no tier runs this call", "do not split K (split 2)",
                     "our kernels for this op do not split K (splitk 2)"}));
  EXPECT_TRUE(Fails(c.call(Options().with_split(17)), {"attribute splitk", "got 17"}));
  ASSERT_TRUE(odd_n.call(Options().with_split(1).for_arch("gfx942")).ok());
}

}  // namespace
