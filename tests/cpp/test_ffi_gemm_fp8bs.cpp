// aiter.gemm_fp8_blockscale through its FFI handler on the Host backend (no XLA, no GPU): values of
// both tiers and both fp8 formats against a float64 reference computed here from the dequantized
// inputs, outputs poisoned first; every AITER fp8gemm_blockscale row forced through its ABI twin
// on both archs, split-K included, with the plan's own memsets and workspace; the heuristic's
// choices; the plan's packing; every bad input.
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
#include "jax_aiter/ffi/gemm_fp8bs.hpp"
#include "jax_aiter/host_twins/gemm_fp8bs.hpp"
#include "jax_aiter/ops/gemm_fp8bs.hpp"
#include "jax_aiter/runtime/host.hpp"
#include "jax_aiter/testing/fake_ffi.hpp"
#include "jax_aiter/testing/host_array.hpp"

namespace ja = jax_aiter;
namespace fake = jax_aiter::testing;
namespace ops = jax_aiter::ops;
using fake::Array;
using ja::DType;

JAX_AITER_DEFINE_HANDLER(test_gemm_fp8bs_cpu, ops::GemmFp8Bs, ja::runtime::Host);

namespace {

using namespace ja::gemm_testing;

constexpr Dispatch kDispatch{"b_layout", "16x16"};

// One call's buffers: fp8 inputs (random finite codes of the format), positive scales in
// AITER's layouts (a_scale [K/128, M], b_scale [N/128, K/128]), out poisoned, the workspace
// filled with garbage.
struct Fp8Call {
  int64_t m, n, k;
  DType fp8;
  Array a, b_plain, b, a_scale, b_scale, out, workspace;

  Fp8Call(int64_t m_, int64_t n_, int64_t k_, uint64_t seed, DType fp8_ = DType::kF8E4M3FN)
      : m(m_),
        n(n_),
        k(k_),
        fp8(fp8_),
        a(fp8_, {m_, k_}),
        b_plain(fp8_, {n_, k_}),
        b(fp8_, {n_, k_}),
        a_scale(DType::kF32, {k_ / 128 > 0 ? k_ / 128 : 1, m_}),
        b_scale(DType::kF32, {n_ / 128 > 0 ? n_ / 128 : 1, k_ / 128 > 0 ? k_ / 128 : 1}),
        out(DType::kBF16, {m_, n_}),
        workspace(DType::kU8, {n_ * 4}) {
    fake::Rng rng(seed);
    const ja::MiniFloat& f = *ja::format_of(fp8);
    for (auto* arr : {&a, &b_plain}) {
      for (auto& byte : arr->bytes) {
        byte = static_cast<unsigned char>(ja::encode(f, rng.uniform(-300, 300) / 100.0));
      }
    }
    if (n % 16 == 0 && k % 32 == 0) b.bytes = shuffle_16x16(b_plain.bytes, n, k);
    fake::fill(a_scale, rng, 1e-2, 1);
    fake::fill(b_scale, rng, 1e-2, 1);
    out.poison();
    std::fill(workspace.bytes.begin(), workspace.bytes.end(), 0xAB);
  }

  double val(const Array& arr, int64_t i) const {
    return ja::decode(*ja::format_of(fp8), arr.bytes[static_cast<size_t>(i)]);
  }

  fake::CallFrame frame(const Options& o) {
    fake::CallFrame f;
    fake::add_arg(f, a);
    fake::add_arg(f, b);
    fake::add_arg(f, a_scale);
    fake::add_arg(f, b_scale);
    fake::add_ret(f, out);
    fake::add_ret(f, workspace);
    add_dispatch_attrs(f, o, kDispatch);
    return f;
  }
  fake::CallResult call(const Options& o = {}) {
    fake::CallFrame f = frame(o);
    return fake::call(test_gemm_fp8bs_cpu, f);
  }

  // |out - ref| <= u |ref| + ((steps - 1) u + 2^-16) scale, scale = sum |a b| sa sb: one bf16
  // rounding (one per split, where splits add into out), float32 sums of 128-product blocks.
  ::testing::AssertionResult check(int steps = 1) const {
    const double u = 0x1.0p-8;
    Mismatches bad;
    const int64_t kb_count = k / 128;
    std::vector<double> av(a.bytes.size()), bv(b_plain.bytes.size());
    for (size_t i = 0; i < av.size(); ++i) av[i] = val(a, static_cast<int64_t>(i));
    for (size_t i = 0; i < bv.size(); ++i) bv[i] = val(b_plain, static_cast<int64_t>(i));
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < n; ++c) {
        double ref = 0, scale = 0;
        for (int64_t kb = 0; kb < kb_count; ++kb) {
          double acc = 0, mag = 0;
          for (int64_t kk = kb * 128; kk < kb * 128 + 128; ++kk) {
            const double t = av[r * k + kk] * bv[c * k + kk];
            acc += t;
            mag += std::abs(t);
          }
          const double s = a_scale.at(kb * m + r) * b_scale.at((c / 128) * kb_count + kb);
          ref += acc * s;
          scale += mag * s;
        }
        const double bound = u * std::abs(ref) + ((steps - 1) * u + 0x1.0p-16) * scale + 1e-30;
        bad.expect_near(r, c, out.at(r * n + c), ref, bound);
      }
    }
    return bad.result(m * n);
  }
};

// ---- the portable tier ---------------------------------------------------------------------

TEST(GemmFp8BsPortable, ValuesForOddAndLargeShapesBothFormats) {
  const Shape shapes[] = {{1, 128, 128},    {7, 256, 384},   {33, 384, 640},
                          {130, 256, 1024}, {17, 1152, 256}, {1, 128, 8192}};
  uint64_t seed = 1;
  for (const Shape& s : shapes) {
    for (DType f : {DType::kF8E4M3FN, DType::kF8E4M3FNUZ}) {
      Fp8Call c(s.m, s.n, s.k, seed++, f);
      const fake::CallResult r = c.call(Options().with_tier("portable"));
      ASSERT_TRUE(r.ok()) << r.message;
      EXPECT_TRUE(c.check()) << s.m << "x" << s.n << "x" << s.k << " " << name(f);
    }
  }
}

// On the host the ASM tier declines (AMD code) and the portable tier takes the call.
TEST(GemmFp8BsPortable, AutoOnTheHostIsPortable) {
  Fp8Call c(9, 256, 512, 11);
  ASSERT_TRUE(c.call().ok());
  EXPECT_TRUE(c.check());
}

// ---- the ASM tier, through the ABI twins -----------------------------------------------------

// The fp8 format each arch reads.
DType fp8_of(const ArchCase& a) {
  return arch_of(a) == ja::Arch::kGfx942 ? DType::kF8E4M3FNUZ : DType::kF8E4M3FN;
}

// Every row of each arch forced by name, unsplit and split 2, 3 and 5; M not a multiple of any
// tile; K with uneven split chunks (5 blocks).
TEST(GemmFp8BsAsmTwins, EveryRowForcedOnItsArchs) {
  int runs = 0, split_runs = 0;
  uint64_t seed = 100;
  for (const ArchCase& arch : kArchs) {
    for (const auto& row : ja::kernels::kAiterFp8BsRows) {
      if (!ja::kernels::on(row, arch_of(arch))) continue;
      const int64_t n = row.tile_n * 2, k = 640, m = row.tile_m + 37;
      for (int64_t splitk : {-1, 2, 3, 5}) {
        Fp8Call c(m, n, k, seed++, fp8_of(arch));
        const fake::CallResult r =
            c.call(Options()
                       .with_kernel(std::string(ja::kernels::short_name(row)), splitk)
                       .with_tier("asm")
                       .for_arch(arch.arch, arch.cus));
        ASSERT_TRUE(r.ok()) << ja::kernels::short_name(row) << ": " << r.message;
        const int split = splitk > 1 ? static_cast<int>(splitk) : 1;
        EXPECT_TRUE(c.check(split))
            << arch.arch << " " << ja::kernels::short_name(row) << " split " << split;
        ++runs;
        split_runs += split > 1;
      }
    }
  }
  EXPECT_EQ(runs, 2 * 6 * 4);
  EXPECT_EQ(split_runs, 2 * 6 * 3);
}

// The heuristic's own choice (no kernel forced) on both archs, for shapes that split and ones that
// do not.
TEST(GemmFp8BsAsmTwins, HeuristicChoices) {
  const Shape shapes[] = {{1, 2048, 1024}, {100, 768, 512}, {300, 256, 128}, {640, 1024, 256}};
  uint64_t seed = 300;
  int split = 0;
  for (const ArchCase& arch : kArchs) {
    for (const Shape& s : shapes) {
      Fp8Call c(s.m, s.n, s.k, seed++, fp8_of(arch));
      const fake::CallResult r = c.call(Options().with_tier("asm").for_arch(arch.arch, arch.cus));
      ASSERT_TRUE(r.ok()) << r.message;
      ops::AiterQuery q;
      q.m = s.m;
      q.n = s.n;
      q.k = s.k;
      q.arch = arch_of(arch);
      q.compute_units = arch.cus;
      const auto decided = ops::select_aiter<ops::AiterFp8Bs>(q);
      ASSERT_TRUE(decided.ok());
      const auto& choice = *decided;
      split += choice.split > 1;
      EXPECT_TRUE(c.check(choice.split)) << arch.arch << " " << s.m << "x" << s.n << "x" << s.k;
    }
  }
  EXPECT_GT(split, 0);
  EXPECT_LT(split, 8);
}

// The plan as AITER packs it: the struct's fields, the grid, and the memsets (zero bias; out
// zeroed before a split launch).
TEST(GemmFp8BsAsmTwins, PlanPacksAsAiterDoes) {
  Fp8Call c(100, 256, 640, 7, DType::kF8E4M3FNUZ);
  ops::GemmFp8BsParams p;
  p.a = tensor(c.a);
  p.b = tensor(c.b);
  p.a_scale = tensor(c.a_scale);
  p.b_scale = tensor(c.b_scale);
  p.out = tensor(c.out);
  p.workspace = tensor(c.workspace);
  p.b_layout = "16x16";
  p.aiter.kernel = "fp8gemm_bf16_blockscale_BpreShuffle_32x128";
  p.aiter.splitk = 3;
  ja::Target gfx942{ja::BackendKind::kHip, ja::Arch::kGfx942, 304};
  ja::kernels::Plan plan;
  plan.workspace_base = c.workspace.data();
  EXPECT_TRUE(ops::decide_and_plan<ops::GemmFp8BsAsmTier>(p, gfx942, plan).ok());
  ASSERT_EQ(plan.count, 3u);
  ASSERT_EQ(plan.steps[0].kind, ja::kernels::Step::Kind::kMemset);
  EXPECT_EQ(plan.steps[0].memset.what, "zero_bias");
  EXPECT_EQ(plan.steps[0].memset.bytes, 256u * 4);
  ASSERT_EQ(plan.steps[1].kind, ja::kernels::Step::Kind::kMemset);
  EXPECT_EQ(plan.steps[1].memset.dst, c.out.data());
  EXPECT_EQ(plan.steps[1].memset.bytes, 100u * 256 * 2);
  const ja::kernels::Launch& launch = plan.steps[2].launch;
  EXPECT_EQ(launch.grid, (ja::kernels::Dim3{2 * 3, 4, 1}));
  EXPECT_EQ(launch.block, (ja::kernels::Dim3{256, 1, 1}));
  EXPECT_EQ(launch.args.size, 256u);
  const auto args = launch.args.unpack<ja::kernels::AiterFp8BsArgs>();
  EXPECT_EQ(args.C.value, c.out.data());
  EXPECT_EQ(args.A.value, c.a.data());
  EXPECT_EQ(args.SA.value, c.a_scale.data());
  EXPECT_EQ(args.SB.value, c.b_scale.data());
  EXPECT_EQ(args.BIAS.value, c.workspace.data());
  EXPECT_EQ(args.lda.value, 640u);
  EXPECT_EQ(args.ldb.value, 640u);
  EXPECT_EQ(args.ldc.value, 512u);
  EXPECT_EQ(args.ks.value, 3u);
  EXPECT_EQ(args.M.value, 100u);
  EXPECT_EQ(args.scale_m.value, 100u);
  EXPECT_EQ(args.scale_n.value, 2u);
  EXPECT_EQ(args.scale_k.value, 5u);
  for (std::byte pad : args.ks.pad) EXPECT_EQ(pad, std::byte{0});
  EXPECT_EQ(args.scale_k.pad[0], std::byte{1}) << "the host twins' format byte: fnuz";
  // Run the steps by hand: the result is right only with both memsets.
  ASSERT_TRUE(run_on_host(plan));
  EXPECT_TRUE(c.check(3));
  // Without the out memset, the poisoned out stays NaN.
  c.out.poison();
  const auto& k = ja::runtime::Host::resolve(0, *launch.kernel);
  ASSERT_TRUE(ja::runtime::Host::launch(0, nullptr, k, launch).ok());
  EXPECT_TRUE(std::isnan(c.out.at(0)));
}

// The twin reads the scales through the struct's strides: a wrong scale_m (AITER's row stride
// of the K-block-major a_scale) gives wrong values.
TEST(GemmFp8BsAsmTwins, TheTwinReadsScalesByTheStructsStrides) {
  Fp8Call c(32, 128, 256, 9);
  ja::kernels::AiterFp8BsArgs args{};
  args.C = c.out.data();
  args.A = c.a.data();
  args.B = c.b.data();
  args.SA = c.a_scale.data();
  args.SB = c.b_scale.data();
  std::vector<float> zero(128, 0.f);
  args.BIAS = zero.data();
  args.M = 32;
  args.N = 128;
  args.K = 256;
  args.lda = 256;
  args.ldb = 256;
  args.ldc = 256;
  args.ks = 1;
  args.scale_m = 32;
  args.scale_n = 1;
  args.scale_k = 2;
  const auto& row = ja::kernels::kAiterFp8BsRows[0];  // 32x128
  ASSERT_EQ(row.tile_m, 32);
  ja::kernels::Plan plan;
  const auto& launch = plan.launch(row.kernel, {1, 1, 1}, {256, 1, 1}, args);
  const auto& kernel = ja::runtime::Host::resolve(0, row.kernel);
  ASSERT_TRUE(ja::runtime::Host::launch(0, nullptr, kernel, launch).ok());
  EXPECT_TRUE(c.check());
  args.scale_m = 1;  // as if a_scale were [M, K/128] read K-block-major
  ja::kernels::Plan wrong;
  const auto& launch2 = wrong.launch(row.kernel, {1, 1, 1}, {256, 1, 1}, args);
  ASSERT_TRUE(ja::runtime::Host::launch(0, nullptr, kernel, launch2).ok());
  EXPECT_FALSE(c.check());
  // One block row short (tile 16 would need y = 2) leaves those outputs unwritten.
  args.scale_m = 32;
  c.out.poison();
  const auto& row16 = ja::kernels::kAiterFp8BsRows[0];
  ja::kernels::Plan short_grid;
  const auto& launch3 = short_grid.launch(row16.kernel, {1, 0, 1}, {256, 1, 1}, args);
  ASSERT_TRUE(ja::runtime::Host::launch(0, nullptr, kernel, launch3).ok());
  EXPECT_TRUE(std::isnan(c.out.at(0)));
}

// ---- which tier, as jax-aiter-plan shows it -----------------------------------------------------

TEST(GemmFp8BsTiers, PlanToolShowsTheChosenPlan) {
  auto call = [](std::string_view fp8) {
    return std::string(R"({"operands": {"a": {"dtype": ")") + std::string(fp8) +
           R"(", "shape": [1, 4096]}, "b": {"dtype": ")" + std::string(fp8) +
           R"(", "shape": [4096, 4096]},
          "a_scale": {"dtype": "f32", "shape": [32, 1]}, "b_scale": {"dtype": "f32", "shape": [32, 32]},
          "out": {"dtype": "bf16", "shape": [1, 4096]}}, "attributes": {"b_layout": "16x16"}})";
  };
  auto gfx942 =
      ja::ffi::plan_json<ops::GemmFp8Bs>(call("f8_e4m3fnuz"), *ja::ffi::plan_target("gfx942", 304));
  ASSERT_TRUE(gfx942.ok()) << gfx942.status().message();
  EXPECT_NE(gfx942->find(R"("tier": "asm", "verdict": "taken")"), std::string::npos) << *gfx942;
  EXPECT_NE(gfx942->find("fp8gemm_bf16_blockscale_BpreShuffle_128x128"), std::string::npos)
      << *gfx942;
  EXPECT_NE(gfx942->find(R"("split": 8)"), std::string::npos) << *gfx942;
  EXPECT_NE(gfx942->find(R"({"name": "KS", "offset": 192, "size": 4, "value": 8})"),
            std::string::npos)
      << *gfx942;
  // gfx942 reads e4m3fnuz: e4m3fn operands are refused by every tier, with the reason.
  auto wrong =
      ja::ffi::plan_json<ops::GemmFp8Bs>(call("f8_e4m3fn"), *ja::ffi::plan_target("gfx942", 304));
  ASSERT_TRUE(wrong.ok());
  EXPECT_NE(wrong->find("gfx942 reads f8_e4m3fnuz"), std::string::npos) << *wrong;
  auto sm90 =
      ja::ffi::plan_json<ops::GemmFp8Bs>(call("f8_e4m3fn"), *ja::ffi::plan_target("sm_90", 132));
  ASSERT_TRUE(sm90.ok());
  EXPECT_NE(sm90->find(R"("tier": "portable", "verdict": "taken")"), std::string::npos) << *sm90;
  EXPECT_NE(sm90->find("jax_aiter_gemm_fp8bs_t16x128"), std::string::npos) << *sm90;
}

// ---- bad input --------------------------------------------------------------------------------

TEST(GemmFp8BsErrors, EveryOperandIsNamed) {
  auto with = [](auto mutate) {
    Fp8Call c(8, 128, 256, 1);
    mutate(c);
    return c.call();
  };
  EXPECT_TRUE(Fails(with([](Fp8Call& c) {
                      c.a = Array(DType::kBF16, {8, 256});
                    }),
                    {"aiter.gemm_fp8_blockscale: operand a:",
                     "expected f8_e4m3fn or f8_e4m3fnuz [M,K]", "got bf16[8,256]"}));
  EXPECT_TRUE(Fails(with([](Fp8Call& c) {
                      c.b = Array(DType::kF8E4M3FNUZ, {128, 256});
                    }),
                    {"operand b:", "expected f8_e4m3fn[N,256]", "got f8_e4m3fnuz[128,256]"}));
  EXPECT_TRUE(Fails(with([](Fp8Call& c) {
                      c.b = Array(DType::kF8E4M3FN, {128, 128});
                    }),
                    {"operand b:", "got f8_e4m3fn[128,128]"}));
  EXPECT_TRUE(Fails(with([](Fp8Call& c) {
                      c.a_scale = Array(DType::kF32, {8, 2});
                    }),
                    {"operand a_scale:", "expected f32[2,8]", "K-block-major", "got f32[8,2]"}));
  EXPECT_TRUE(Fails(with([](Fp8Call& c) {
                      c.a_scale = Array(DType::kBF16, {2, 8});
                    }),
                    {"operand a_scale:", "got bf16[2,8]"}));
  EXPECT_TRUE(Fails(with([](Fp8Call& c) {
                      c.b_scale = Array(DType::kF32, {2, 1});
                    }),
                    {"operand b_scale:", "expected f32[1,2]", "got f32[2,1]"}));
  EXPECT_TRUE(Fails(with([](Fp8Call& c) {
                      c.out = Array(DType::kF32, {8, 128});
                    }),
                    {"operand out:", "expected bf16[8,128]", "got f32[8,128]"}));
  EXPECT_TRUE(Fails(with([](Fp8Call& c) { c.workspace = Array(DType::kU8, {100}); }),
                    {"operand workspace:", "expected u8[>= 512]", "got u8[100]"}));
  {
    Fp8Call c(8, 144, 256, 1);
    EXPECT_TRUE(Fails(c.call(), {"operand b:", "N=144 is not a multiple of 128"}));
  }
  {
    Fp8Call c(8, 128, 96, 1);
    EXPECT_TRUE(Fails(c.call(), {"operand a:", "K=96 is not a multiple of 128"}));
  }
  {
    Fp8Call c(0, 128, 128, 1);
    EXPECT_TRUE(Fails(c.call(), {"operand a:", "non-empty", "M=0"}));
  }
}

TEST(GemmFp8BsErrors, LayoutFlagAttributesAndTiers) {
  Fp8Call c(8, 128, 128, 1);
  EXPECT_TRUE(
      Fails(c.call(Options().with_layout("none")),
            {"operand b:", "pre-shuffled in the (16, 16) layout", "got b_layout \"none\""}));
  fake::CallFrame no_layout = c.frame(Options());
  no_layout.remove_attr("b_layout");
  EXPECT_TRUE(
      Fails(fake::call(test_gemm_fp8bs_cpu, no_layout), {"attribute b_layout: missing (string)"}));
  EXPECT_TRUE(Fails(c.call(Options().with_tier("asm")), {"no tier runs this call", "asm_arch"}));
  EXPECT_TRUE(Fails(c.call(Options().with_split(17)), {"attribute splitk"}));
  EXPECT_TRUE(
      Fails(c.call(Options().with_kernel("nope").with_tier("asm").for_arch("gfx942")),
            {"attribute kernel: expected \"\"", "fp8gemm_blockscale kernels", "got 'nope'"}));
  EXPECT_TRUE(Fails(c.call(Options().with_kernel("", 3).with_tier("asm").for_arch("gfx950")),
                    {"split 3 does not cut K = 128"}));
}

}  // namespace
