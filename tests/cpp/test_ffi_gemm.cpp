// aiter.gemm through its FFI handler on the Host backend (no XLA, no GPU): values of both tiers
// against a float64 reference (a b^T, reference_testing.hpp), outputs poisoned first; every AITER
// BF16 row forced through its ABI twin on both archs, split-K included, with the plan's own memset
// and workspace; the split-K contract (semaphore zero on entry, left zero on exit); every bad
// input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gemm_ffi_testing.hpp"
#include "jax_aiter/ffi/describe.hpp"
#include "jax_aiter/ffi/gemm.hpp"
#include "jax_aiter/host_twins/gemm.hpp"
#include "jax_aiter/ops/gemm.hpp"
#include "jax_aiter/runtime/host.hpp"
#include "jax_aiter/testing/fake_ffi.hpp"
#include "jax_aiter/testing/host_array.hpp"
#include "reference_testing.hpp"

namespace ja = jax_aiter;
namespace f64 = jax_aiter::reference;
namespace fake = jax_aiter::testing;
namespace ops = jax_aiter::ops;
using fake::Array;
using ja::DType;

JAX_AITER_DEFINE_HANDLER(test_gemm_cpu, ops::Gemm, ja::runtime::Host);

namespace {

using namespace ja::gemm_testing;

// No layout attribute: BF16 weights are plain.
constexpr Dispatch kDispatch{"", ""};

// One call's buffers: inputs filled with random values in [-1, 1] (rounded to the dtype), out
// poisoned, the workspace of the size the op asks for, filled with garbage.
struct GemmCall {
  int64_t m, n, k;
  DType in, out_type;
  bool with_bias;
  Array a, b, bias, out, workspace;

  static int64_t workspace_size(int64_t m, int64_t n) {
    ops::GemmParams p;
    p.a.rank = 2;
    p.a.dims[0] = m;
    p.a.dims[1] = 1;
    p.b.rank = 2;
    p.b.dims[0] = n;
    return ops::Gemm::workspace_bytes(p);
  }

  GemmCall(int64_t m_, int64_t n_, int64_t k_, DType in_, DType out_, bool bias_, uint64_t seed)
      : m(m_),
        n(n_),
        k(k_),
        in(in_),
        out_type(out_),
        with_bias(bias_),
        a(in_, {m_, k_}),
        b(in_, {n_, k_}),
        bias(in_, {n_}),
        out(out_, {m_, n_}),
        workspace(DType::kU8, {workspace_size(m_, n_)}) {
    fake::Rng rng(seed);
    fake::fill(a, rng, -1, 1);
    fake::fill(b, rng, -1, 1);
    fake::fill(bias, rng, -1, 1);
    out.poison();
    std::fill(workspace.bytes.begin(), workspace.bytes.end(), 0xAB);
  }

  fake::CallFrame frame(const Options& o) {
    fake::CallFrame f;
    fake::add_arg(f, a);
    fake::add_arg(f, b);
    if (with_bias) {
      fake::add_arg(f, bias);
    } else {
      fake::add_absent(f);
    }
    fake::add_ret(f, out);
    fake::add_ret(f, workspace);
    add_dispatch_attrs(f, o, kDispatch);
    return f;
  }
  fake::CallResult call(const Options& o = {}) {
    fake::CallFrame f = frame(o);
    return fake::call(test_gemm_cpu, f);
  }

  // |out - ref| <= u_out * |ref| + (16 u_f32 sqrt(K) + steps * u_out) * scale + floor, where
  // ref = a b^T (+ bias) in float64 and scale = sum |a_k b_k| (+ |bias|): the output is rounded
  // once (or `steps` times when a split's running sum is kept in out's dtype) and float32
  // accumulation error grows with the terms added.
  ::testing::AssertionResult check(int steps = 1) const {
    const double u_out = out_type == DType::kF32   ? 0x1.0p-24
                         : out_type == DType::kF16 ? 0x1.0p-11
                                                   : 0x1.0p-8;
    const double u32 = 0x1.0p-24;
    const f64::Product want = f64::matmul_nt(
        f64::tabulate(m, k, [&](int64_t r, int64_t kk) { return a.at(r * k + kk); }),
        f64::tabulate(n, k, [&](int64_t c, int64_t kk) { return b.at(c * k + kk); }));
    Mismatches bad;
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < n; ++c) {
        double ref = want.value(r, c), scale = want.magnitude(r, c);
        if (with_bias) {
          ref += bias.at(c);
          scale += std::abs(bias.at(c));
        }
        const double bound = u_out * std::abs(ref) +
                             (16 * u32 * std::sqrt(double(k)) + (steps - 1) * u_out) * scale +
                             0x1.0p-100;
        bad.expect_near(r, c, out.at(r * n + c), ref, bound);
      }
    }
    return bad.result(m * n);
  }
};

// ---- the portable tier
// ---------------------------------------------------------------------------

TEST(GemmPortable, ValuesForEveryDtypeAndOddShapes) {
  const Shape shapes[] = {{1, 64, 64},     {7, 100, 72},   {33, 300, 1000}, {4096, 64, 64},
                          {1, 1024, 4100}, {130, 129, 67}, {16, 16384, 16}};
  const std::pair<DType, DType> types[] = {{DType::kBF16, DType::kBF16},
                                           {DType::kBF16, DType::kF32},
                                           {DType::kBF16, DType::kF16},
                                           {DType::kF16, DType::kF16},
                                           {DType::kF16, DType::kF32}};
  uint64_t seed = 1;
  for (const Shape& s : shapes) {
    for (auto [in, out] : types) {
      for (bool bias : {false, true}) {
        GemmCall c(s.m, s.n, s.k, in, out, bias, seed++);
        const fake::CallResult r = c.call(Options().with_tier("portable"));
        ASSERT_TRUE(r.ok()) << r.message;
        EXPECT_TRUE(c.check()) << s.m << "x" << s.n << "x" << s.k << " " << ja::name(in) << "->"
                               << ja::name(out) << " bias " << bias;
      }
    }
  }
}

// On the host, the ASM tier declines (its kernels are AMD code) and the portable tier takes the
// call; with few tiles the portable plan splits K and reduces the partials.
TEST(GemmPortable, AutoOnTheHostIsPortableAndSplitsSmallGrids) {
  GemmCall c(7, 100, 1000, DType::kBF16, DType::kBF16, true, 11);
  ASSERT_TRUE(c.call().ok());
  EXPECT_TRUE(c.check());
  const ops::GemmPortableChoice choice = ops::choose_portable_gemm(7, 100, 1000, 1);
  EXPECT_GT(choice.splits, 1);
  EXPECT_EQ(choice.splits * choice.k_chunk >= 1000, true);
}

// ---- the ASM tier, through the ABI twins -----------------------------------------------------

// Every row of each arch forced by name, with its heuristic split and (split rows) forced ones,
// bias where the row takes one, bf16 and f32 out; M not a multiple of any tile.
TEST(GemmAsmTwins, EveryRowForcedOnBothArchs) {
  int runs = 0, split_runs = 0;
  uint64_t seed = 100;
  for (const ArchCase& arch : kArchs) {
    const ja::Arch a = arch_of(arch);
    for (const auto& row : ja::kernels::kAiterBf16GemmRows) {
      if (!ja::kernels::on(row, a)) continue;
      const int64_t n = row.tile_n * 2, k = 640, m = row.tile_m + 37;
      std::vector<int64_t> splits = {-1};
      if (row.split_k) splits = {-1, 2, 5};
      for (int64_t splitk : splits) {
        for (DType out : {DType::kBF16, DType::kF32}) {
          const bool bias = row.bias && out == DType::kBF16;
          GemmCall c(m, n, k, DType::kBF16, out, bias, seed++);
          const Options o = Options()
                                .with_kernel(std::string(ja::kernels::short_name(row)), splitk)
                                .with_tier("asm")
                                .for_arch(arch.arch, arch.cus);
          const fake::CallResult r = c.call(o);
          ASSERT_TRUE(r.ok()) << ja::kernels::short_name(row) << ": " << r.message;
          ops::AiterQuery q;
          q.m = m;
          q.n = n;
          q.k = k;
          q.arch = a;
          q.compute_units = arch.cus;
          q.bias = bias;
          q.knobs.kernel = ja::kernels::short_name(row);
          if (splitk >= 0) q.knobs.splitk = splitk;
          const auto decided = ops::select_aiter<ops::AiterBf16Gemm>(q);
          ASSERT_TRUE(decided.ok());
          const auto& choice = *decided;
          ASSERT_EQ(choice.row, &row);
          // A bf16 running sum is rounded between splits (the twin's documented scheme).
          const int steps = out == DType::kBF16 ? choice.split : 1;
          EXPECT_TRUE(c.check(steps)) << arch.arch << " " << ja::kernels::short_name(row)
                                      << " split " << choice.split << " out " << ja::name(out);
          ++runs;
          split_runs += choice.split > 1;
        }
      }
    }
  }
  EXPECT_EQ(runs, 2 * (9 * 1 + 5 * 2) + 2 * (1 * 1 + 9 * 1 + 5 * 2));
  EXPECT_GT(split_runs, 20);
}

// The heuristic's own choice (no kernel forced) on both archs, for shapes that split and ones
// that do not.
TEST(GemmAsmTwins, HeuristicChoices) {
  const Shape shapes[] = {{1, 4096, 256}, {100, 768, 512}, {300, 256, 128}, {64, 512, 1024}};
  uint64_t seed = 300;
  for (const ArchCase& arch : kArchs) {
    for (const Shape& s : shapes) {
      GemmCall c(s.m, s.n, s.k, DType::kBF16, DType::kF32, false, seed++);
      const fake::CallResult r = c.call(Options().with_tier("asm").for_arch(arch.arch, arch.cus));
      ASSERT_TRUE(r.ok()) << r.message;
      EXPECT_TRUE(c.check()) << arch.arch << " " << s.m << "x" << s.n << "x" << s.k;
    }
  }
}

// The split-K contract, run step by step: the twin leaves the semaphore zero (a second launch
// without the plan's memset is still right), and a semaphore that is not zero on entry poisons
// the tiles instead of hanging or computing garbage.
TEST(GemmAsmTwins, SemaphoreIsLeftZeroAndMustBeZeroOnEntry) {
  GemmCall c(100, 256, 640, DType::kBF16, DType::kF32, true, 7);
  ops::GemmParams p;
  p.a = tensor(c.a);
  p.b = tensor(c.b);
  p.bias = tensor(c.bias);
  p.out = tensor(c.out);
  p.workspace = tensor(c.workspace);
  p.aiter.kernel = "bf16gemm_fp32bf16_tn_32x64_splitk_clean";
  p.aiter.splitk = 4;
  ja::Target gfx942{ja::BackendKind::kHip, ja::Arch::kGfx942, 304};
  ja::kernels::Plan plan;
  plan.workspace_base = c.workspace.data();
  EXPECT_TRUE(ops::decide_and_plan<ops::GemmAsmTier>(p, gfx942, plan).ok());
  ASSERT_EQ(plan.count, 2u);
  ASSERT_EQ(plan.steps[0].kind, ja::kernels::Step::Kind::kMemset);
  EXPECT_EQ(plan.steps[0].memset.bytes, 4096u);
  EXPECT_EQ(plan.steps[0].memset.value, 0u);
  const ja::kernels::Launch& launch = plan.steps[1].launch;
  EXPECT_EQ(launch.grid, (ja::kernels::Dim3{4, 4, 4}));
  const auto& kernel = ja::runtime::Host::resolve(0, *launch.kernel);
  ASSERT_TRUE(kernel.status.ok()) << kernel.status.message();
  ASSERT_TRUE(ja::runtime::Host::memset(0, nullptr, plan.steps[0].memset).ok());
  auto semaphore = [&] {
    std::vector<uint32_t> s(1024);
    std::memcpy(s.data(), c.workspace.data(), 4096);
    return s;
  };
  for (int round = 0; round < 2; ++round) {  // the second without a memset
    c.out.poison();
    ASSERT_TRUE(ja::runtime::Host::launch(0, nullptr, kernel, launch).ok());
    EXPECT_TRUE(c.check(1)) << "round " << round;
    for (uint32_t v : semaphore()) ASSERT_EQ(v, 0u) << "round " << round;
  }
  // Counters left at garbage: every arrival past the split count poisons its tile.
  std::fill(c.workspace.bytes.begin(), c.workspace.bytes.begin() + 4096, 0x07);
  c.out.poison();
  ASSERT_TRUE(ja::runtime::Host::launch(0, nullptr, kernel, launch).ok());
  EXPECT_TRUE(std::isnan(c.out.at(0)));
}

// A twin computes exactly its grid: a launch one block row short leaves those outputs unwritten,
// so a plan with a wrong grid cannot pass a values test.
TEST(GemmAsmTwins, AShortGridLeavesOutputsUnwritten) {
  GemmCall c(96, 128, 128, DType::kBF16, DType::kF32, false, 9);
  ja::kernels::AiterBf16GemmArgs args{};
  args.D = c.out.data();
  args.A = c.a.data();
  args.B = c.b.data();
  args.alpha = 1.0f;
  args.stride_A0 = 256;
  args.stride_B0 = 256;
  args.stride_D0 = 512;
  args.M = 96;
  args.N = 128;
  args.K = 128;
  args.splitk = 1;
  const auto& row = ja::kernels::kAiterBf16GemmRows[3];  // 64x64_pf3
  ASSERT_EQ(row.tile_m, 64);
  ja::kernels::Plan plan;
  const auto& launch = plan.launch(row.kernel, {2, 1, 1}, {256, 1, 1}, args);  // needs y = 2
  const auto& kernel = ja::runtime::Host::resolve(0, row.kernel);
  ASSERT_TRUE(ja::runtime::Host::launch(0, nullptr, kernel, launch).ok());
  EXPECT_FALSE(std::isnan(c.out.at(63 * 128)));
  EXPECT_TRUE(std::isnan(c.out.at(64 * 128)));
}

// ---- which tier, as jax-aiter-plan shows it
// ------------------------------------------------------

TEST(GemmTiers, PlanToolShowsVerdictsAndTheChosenPlan) {
  const std::string call =
      R"({"operands": {"a": {"dtype": "bf16", "shape": [1, 4096]}, "b": {"dtype": "bf16", "shape": [4096, 4096]},
          "out": {"dtype": "bf16", "shape": [1, 4096]}}, "attributes": {}})";
  auto gfx942 = ja::ffi::plan_json<ops::Gemm>(call, *ja::ffi::plan_target("gfx942", 304));
  ASSERT_TRUE(gfx942.ok()) << gfx942.status().message();
  EXPECT_NE(gfx942->find(R"("tier": "asm", "family": "bf16gemm", "verdict": "taken")"),
            std::string::npos)
      << *gfx942;
  EXPECT_NE(gfx942->find("_ZN5aiter39bf16gemm_fp32bf16_tn_32x64_splitk_cleanE"), std::string::npos);
  EXPECT_NE(gfx942->find(R"("split": 4)"), std::string::npos);
  EXPECT_NE(gfx942->find(R"("memset": {"what": "semaphore", "dst": "workspace.semaphore")"),
            std::string::npos);
  EXPECT_NE(gfx942->find(R"({"name": "Kdim", "offset": 256, "size": 4, "value": 4096})"),
            std::string::npos);
  auto sm90 = ja::ffi::plan_json<ops::Gemm>(call, *ja::ffi::plan_target("sm_90", 132));
  ASSERT_TRUE(sm90.ok());
  EXPECT_NE(sm90->find(R"("tier": "portable", "verdict": "taken")"), std::string::npos) << *sm90;
  EXPECT_NE(sm90->find("asm_arch"), std::string::npos) << "the ASM tier says how to run it here";
  // f16 goes to the portable tier on AMD too, with the reason.
  const std::string f16 =
      R"({"operands": {"a": {"dtype": "f16", "shape": [64, 256]}, "b": {"dtype": "f16", "shape": [128, 256]},
          "out": {"dtype": "f16", "shape": [64, 128]}}})";
  auto amd = ja::ffi::plan_json<ops::Gemm>(f16, *ja::ffi::plan_target("gfx950", 0));
  ASSERT_TRUE(amd.ok());
  EXPECT_NE(amd->find("take bf16 inputs"), std::string::npos) << *amd;
}

// ---- bad input --------------------------------------------------------------------------------

TEST(GemmErrors, EveryOperandIsNamed) {
  {
    GemmCall c(8, 64, 64, DType::kBF16, DType::kBF16, false, 1);
    c.b = Array(DType::kBF16, {64, 63});
    EXPECT_TRUE(Fails(c.call(), {"aiter.gemm: operand b:",
                                 "expected bf16[N,64] (K and dtype from a)", "got bf16[64,63]"}));
  }
  {
    GemmCall c(8, 64, 64, DType::kF32, DType::kF32, false, 1);
    EXPECT_TRUE(Fails(c.call(), {"aiter.gemm: operand a:", "bf16 or f16", "got f32"}));
  }
  {
    GemmCall c(8, 64, 64, DType::kBF16, DType::kBF16, false, 1);
    c.b = Array(DType::kF16, {64, 64});
    EXPECT_TRUE(Fails(c.call(), {"operand b:", "got f16[64,64]"}));
  }
  {
    GemmCall c(8, 64, 64, DType::kBF16, DType::kBF16, false, 1);
    c.b = Array(DType::kBF16, {64});
    EXPECT_TRUE(Fails(c.call(), {"operand b:", "got bf16[64]"}));
  }
  {
    GemmCall c(8, 64, 64, DType::kBF16, DType::kBF16, true, 1);
    c.bias = Array(DType::kBF16, {63});
    EXPECT_TRUE(Fails(c.call(), {"operand bias:", "expected bf16[64]", "got bf16[63]"}));
  }
  {
    GemmCall c(8, 64, 64, DType::kBF16, DType::kBF16, false, 1);
    c.out = Array(DType::kBF16, {8, 63});
    EXPECT_TRUE(
        Fails(c.call(), {"operand out:", "expected bf16, f16 or f32[8,64]", "got bf16[8,63]"}));
  }
  {
    GemmCall c(8, 64, 64, DType::kBF16, DType::kI32, false, 1);
    EXPECT_TRUE(Fails(c.call(), {"operand out:", "got i32[8,64]"}));
  }
  {
    GemmCall c(0, 64, 64, DType::kBF16, DType::kBF16, false, 1);
    EXPECT_TRUE(Fails(c.call(), {"operand a:", "non-empty", "M=0"}));
  }
  {
    // Emptiness is checked last (ops/tensor.hpp's kEmptyProblem): an empty call with a bad
    // operand or attribute is that operand's error, so Python can validate before short-cutting.
    GemmCall c(0, 64, 64, DType::kBF16, DType::kBF16, false, 1);
    c.b = Array(DType::kBF16, {64, 32});
    EXPECT_TRUE(Fails(c.call(), {"operand b:", "expected bf16[N,64]", "got bf16[64,32]"}));
    GemmCall k0(8, 64, 0, DType::kBF16, DType::kBF16, false, 1);
    EXPECT_TRUE(Fails(k0.call(Options().with_split(17)), {"attribute splitk"}));
    k0.a = Array(DType::kI32, {8, 0});
    k0.b = Array(DType::kI32, {64, 0});
    EXPECT_TRUE(Fails(k0.call(), {"operand a:", "expected dtype bf16 or f16, got i32"}));
  }
  {
    GemmCall c(8, 64, 64, DType::kBF16, DType::kBF16, false, 1);
    c.workspace = Array(DType::kU8, {100});
    // Room for the portable tier's 16 float32 partial outputs of [8, 64].
    EXPECT_TRUE(Fails(c.call(), {"operand workspace:", "expected u8[>= 32768]", "got u8[100]"}));
  }
}

TEST(GemmErrors, AttributesAndTiers) {
  GemmCall c(8, 64, 64, DType::kBF16, DType::kBF16, false, 1);
  EXPECT_TRUE(Fails(c.call(Options().with_tier("fastest")),
                    {"attribute tier: expected one of auto, asm, portable; got 'fastest'"}));
  EXPECT_TRUE(Fails(c.call(Options().with_tier("asm")), {"no tier runs this call", "asm_arch"}));
  EXPECT_TRUE(Fails(c.call(Options().for_arch("gfx1100")),
                    {"attribute asm_arch: expected gfx942 or gfx950"}));
  EXPECT_TRUE(Fails(c.call(Options().with_split(17)), {"attribute splitk"}));
  EXPECT_TRUE(Fails(c.call(Options().with_kernel("nope").with_tier("asm").for_arch("gfx942")),
                    {"attribute kernel: expected \"\"", "bf16gemm kernels", "got 'nope'"}));
  EXPECT_TRUE(Fails(c.call(Options().with_kernel("nope")),  // under tier auto too
                    {"attribute kernel:", "got 'nope'"}));
  EXPECT_TRUE(Fails(c.call(Options()  // gfx950's 256x256 row, forced on gfx942
                               .with_kernel("bf16gemm_bf16_tn_256x256")
                               .with_tier("asm")
                               .for_arch("gfx942")),
                    {"asm (bf16gemm): the forced kernel is not a bf16gemm row for this arch"}));
  GemmCall f16(8, 64, 64, DType::kF16, DType::kF16, false, 1);
  EXPECT_TRUE(Fails(f16.call(Options().with_tier("asm").for_arch("gfx942")), {"take bf16 inputs"}));
  fake::CallFrame frame = c.frame(Options());
  frame.attr("split_k", int64_t{2});
  EXPECT_TRUE(Fails(fake::call(test_gemm_cpu, frame),
                    {"unknown attribute 'split_k'", "kernel, splitk, tier, asm_arch, asm_cus"}));
  fake::CallFrame wrong_type = c.frame(Options());
  wrong_type.string_attr("splitk", "2");
  EXPECT_TRUE(Fails(fake::call(test_gemm_cpu, wrong_type),
                    {"attribute splitk: expected integer (S32 or S64), got a string"}));
  // An absent bias is u8[0]; any other empty stand-in is a shape error.
  fake::CallFrame no_bias;
  fake::add_arg(no_bias, c.a);
  fake::add_arg(no_bias, c.b);
  no_bias.arg(XLA_FFI_DataType_BF16, {0}, nullptr);
  fake::add_ret(no_bias, c.out);
  fake::add_ret(no_bias, c.workspace);
  EXPECT_TRUE(Fails(fake::call(test_gemm_cpu, no_bias), {"operand bias:", "got bf16[0]"}));
}

}  // namespace
