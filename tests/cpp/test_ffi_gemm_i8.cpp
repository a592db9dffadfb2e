// aiter.gemm_i8 through its FFI handler on the Host backend (no XLA, no GPU): values of both tiers
// against a float64 reference computed here from the dequantized inputs, outputs poisoned first;
// every AITER i8gemm row forced through its ABI twin on its archs, split-K included, with the
// plan's own memsets and workspace; the heuristic's choices; every bad input.
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
#include "jax_aiter/ffi/gemm_i8.hpp"
#include "jax_aiter/host_twins/gemm_i8.hpp"
#include "jax_aiter/ops/gemm_i8.hpp"
#include "jax_aiter/runtime/host.hpp"
#include "jax_aiter/testing/fake_ffi.hpp"
#include "jax_aiter/testing/host_array.hpp"

namespace ja = jax_aiter;
namespace fake = jax_aiter::testing;
namespace ops = jax_aiter::ops;
using fake::Array;
using ja::DType;

JAX_AITER_DEFINE_HANDLER(test_gemm_i8_cpu, ops::GemmI8, ja::runtime::Host);

namespace {

using namespace ja::gemm_testing;

constexpr Dispatch kDispatch{"b_layout", "16x16"};

int8_t i8_at(const Array& a, int64_t i) { return static_cast<int8_t>(a.bytes[i]); }

// Only the shape matters for the workspace size.
ja::ops::GemmI8Params params_for_size(int64_t m, int64_t n, int64_t k) {
  ja::ops::GemmI8Params p{};
  p.a = ja::ops::Tensor::over(nullptr, DType::kI8, {m, k});
  p.b = ja::ops::Tensor::over(nullptr, DType::kI8, {n, k});
  return p;
}

// One call's buffers: int8 inputs over the whole range, positive scales, out poisoned, the
// workspace of the size the op asks for, filled with garbage.
struct I8Call {
  int64_t m, n, k;
  bool with_bias;
  Array a, b_plain, b, a_scale, b_scale, bias, out, workspace;

  I8Call(int64_t m_, int64_t n_, int64_t k_, bool bias_, uint64_t seed)
      : m(m_),
        n(n_),
        k(k_),
        with_bias(bias_),
        a(DType::kI8, {m_, k_}),
        b_plain(DType::kI8, {n_, k_}),
        b(DType::kI8, {n_, k_}),
        a_scale(DType::kF32, {m_, 1}),
        b_scale(DType::kF32, {1, n_}),
        bias(DType::kF32, {1, n_}),
        out(DType::kBF16, {m_, n_}),
        workspace(DType::kU8, {ja::ops::GemmI8::workspace_bytes(params_for_size(m_, n_, k_))}) {
    fake::Rng rng(seed);
    for (auto* arr : {&a, &b_plain}) {
      for (auto& byte : arr->bytes) {
        byte = static_cast<unsigned char>(static_cast<int8_t>(std::lround(rng.uniform(-127, 127))));
      }
    }
    if (n % 16 == 0 && k % 32 == 0) b.bytes = shuffle_16x16(b_plain.bytes, n, k);
    fake::fill(a_scale, rng, 1e-3, 2e-2);
    fake::fill(b_scale, rng, 1e-3, 2e-2);
    fake::fill(bias, rng, -1, 1);
    out.poison();
    std::fill(workspace.bytes.begin(), workspace.bytes.end(), 0xAB);
  }

  fake::CallFrame frame(const Options& o) {
    fake::CallFrame f;
    fake::add_arg(f, a);
    fake::add_arg(f, b);
    fake::add_arg(f, a_scale);
    fake::add_arg(f, b_scale);
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
    return fake::call(test_gemm_i8_cpu, f);
  }

  // |out - ref| <= u |ref| + ((steps - 1) u + 8 u_f32) scale, scale = sum |a b| sa sb + |bias|:
  // the output is rounded to bf16 once (or once per split, when splits add into out), and the
  // float32 epilogue rounds a few times.
  ::testing::AssertionResult check(int steps = 1) const {
    const double u = 0x1.0p-8, u32 = 0x1.0p-24;
    Mismatches bad;
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < n; ++c) {
        double acc = 0, mag = 0;
        for (int64_t kk = 0; kk < k; ++kk) {
          const double t = double(i8_at(a, r * k + kk)) * i8_at(b_plain, c * k + kk);
          acc += t;
          mag += std::abs(t);
        }
        const double s = a_scale.at(r) * b_scale.at(c);
        double ref = acc * s, scale = mag * s;
        if (with_bias) {
          ref += bias.at(c);
          scale += std::abs(bias.at(c));
        }
        const double bound = u * std::abs(ref) + ((steps - 1) * u + 8 * u32) * scale + 1e-30;
        bad.expect_near(r, c, out.at(r * n + c), ref, bound);
      }
    }
    return bad.result(m * n);
  }
};

// ---- the portable tier ---------------------------------------------------------------------

TEST(GemmI8Portable, ValuesForOddAndLargeShapes) {
  const Shape shapes[] = {{1, 16, 32},     {7, 48, 96},     {33, 144, 160},   {130, 272, 4128},
                          {17, 4112, 256}, {1, 128, 32768}, {256, 512, 2048}, {300, 64, 64}};
  uint64_t seed = 1;
  for (const Shape& s : shapes) {
    for (bool bias : {false, true}) {
      I8Call c(s.m, s.n, s.k, bias, seed++);
      const fake::CallResult r = c.call(Options().with_tier("portable"));
      ASSERT_TRUE(r.ok()) << r.message;
      EXPECT_TRUE(c.check()) << s.m << "x" << s.n << "x" << s.k << " bias " << bias;
    }
  }
}

// The K split (forced: the host has one compute unit): exact int32 sums in the accumulator, the
// scales applied once by the finish kernel, so the output is the unsplit one, bit for bit.
TEST(GemmI8Portable, SplitKIsBitIdentical) {
  const Shape shapes[] = {{1, 16, 4096}, {5, 144, 1024}, {16, 256, 4128}, {130, 272, 640}};
  uint64_t seed = 50;
  for (const Shape& s : shapes) {
    I8Call whole(s.m, s.n, s.k, true, seed);
    ASSERT_TRUE(whole.call(Options().with_tier("portable")).ok());
    for (int64_t split : {2, 3, 7}) {
      I8Call c(s.m, s.n, s.k, true, seed);
      const fake::CallResult r = c.call(Options().with_tier("portable").with_split(split));
      // A split runs as asked or not at all: each split whole 64-wide K steps, none empty.
      const int64_t chunk = (s.k + split - 1) / split, steps = (chunk + 63) / 64 * 64;
      if ((s.k + steps - 1) / steps != split) {
        EXPECT_TRUE(Fails(r, {"splitk " + std::to_string(split), "whole K steps"}));
        continue;
      }
      ASSERT_TRUE(r.ok()) << r.message;
      EXPECT_EQ(c.out.bytes, whole.out.bytes)
          << s.m << "x" << s.n << "x" << s.k << " split " << split;
      EXPECT_TRUE(c.check());
    }
    ++seed;
  }
}

// On the host the ASM tier declines (AMD code) and the portable tier takes the call.
TEST(GemmI8Portable, AutoOnTheHostIsPortable) {
  I8Call c(9, 256, 512, true, 11);
  ASSERT_TRUE(c.call().ok());
  EXPECT_TRUE(c.check());
}

// ---- the ASM tier, through the ABI twins -----------------------------------------------------

// Every row of each arch forced by name, unsplit and (rows that split) split 2, 3 and 5; with and
// without bias; M not a multiple of any tile.
TEST(GemmI8AsmTwins, EveryRowForcedOnItsArchs) {
  int runs = 0, split_runs = 0;
  uint64_t seed = 100;
  for (const ArchCase& arch : kArchs) {
    for (const auto& row : ja::kernels::kAiterI8GemmRows) {
      if (!ja::kernels::on(row, arch_of(arch))) continue;
      const int64_t n = row.tile_n * 2, k = 640, m = row.tile_m + 37;
      std::vector<int64_t> splits = {-1};
      if (row.split_k) splits = {-1, 2, 3, 5};
      for (int64_t splitk : splits) {
        for (bool bias : {false, true}) {
          I8Call c(m, n, k, bias, seed++);
          const fake::CallResult r =
              c.call(Options()
                         .with_kernel(std::string(ja::kernels::short_name(row)), splitk)
                         .with_tier("asm")
                         .for_arch(arch.arch, arch.cus));
          ASSERT_TRUE(r.ok()) << ja::kernels::short_name(row) << ": " << r.message;
          const int split = splitk > 1 ? static_cast<int>(splitk) : 1;
          EXPECT_TRUE(c.check(split)) << arch.arch << " " << ja::kernels::short_name(row)
                                      << " split " << split << " bias " << bias;
          ++runs;
          split_runs += split > 1;
        }
      }
    }
  }
  EXPECT_EQ(runs, 2 * (1 + 8 * 4) + 2 * (8 * 4));
  EXPECT_EQ(split_runs, 2 * 3 * 16);
}

// The heuristic's own choice (no kernel forced) on both archs, for shapes that split and ones that
// do not.
TEST(GemmI8AsmTwins, HeuristicChoices) {
  const Shape shapes[] = {{1, 4096, 1024}, {100, 768, 512}, {300, 256, 128}, {640, 1024, 256}};
  uint64_t seed = 300;
  int split = 0;
  for (const ArchCase& arch : kArchs) {
    for (const Shape& s : shapes) {
      I8Call c(s.m, s.n, s.k, true, seed++);
      const fake::CallResult r = c.call(Options().with_tier("asm").for_arch(arch.arch, arch.cus));
      ASSERT_TRUE(r.ok()) << r.message;
      ops::AiterQuery q;
      q.m = s.m;
      q.n = s.n;
      q.k = s.k;
      q.arch = arch_of(arch);
      q.compute_units = arch.cus;
      const auto decided = ops::select_aiter<ops::AiterI8Gemm>(q);
      ASSERT_TRUE(decided.ok());
      const auto& choice = *decided;
      split += choice.split > 1;
      EXPECT_TRUE(c.check(choice.split)) << arch.arch << " " << s.m << "x" << s.n << "x" << s.k;
    }
  }
  EXPECT_GT(split, 0);
  EXPECT_LT(split, 8);
}

// The plan as AITER packs it: the struct's fields, the grid, and the memsets (zero bias for a call
// without one; out zeroed before a split launch).
TEST(GemmI8AsmTwins, PlanPacksAsAiterDoes) {
  I8Call c(100, 256, 640, false, 7);
  ops::GemmI8Params p;
  p.a = tensor(c.a);
  p.b = tensor(c.b);
  p.a_scale = tensor(c.a_scale);
  p.b_scale = tensor(c.b_scale);
  p.out = tensor(c.out);
  p.workspace = tensor(c.workspace);
  p.b_layout = "16x16";
  p.aiter.kernel = "I8gemm_bf16_perTokenI8_BpreShuffle_32x128";
  p.aiter.splitk = 3;
  ja::Target gfx942{ja::BackendKind::kHip, ja::Arch::kGfx942, 304};
  ja::kernels::Plan plan;
  plan.workspace_base = c.workspace.data();
  EXPECT_TRUE(ops::decide_and_plan<ops::GemmI8AsmTier>(p, gfx942, plan).ok());
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
  EXPECT_EQ(launch.args.size, 208u);
  const auto args = launch.args.unpack<ja::kernels::AiterI8GemmArgs>();
  EXPECT_EQ(args.C.value, c.out.data());
  EXPECT_EQ(args.BIAS.value, c.workspace.data());
  EXPECT_EQ(args.lda.value, 640u);
  EXPECT_EQ(args.ldb.value, 640u);
  EXPECT_EQ(args.ldc.value, 512u);
  EXPECT_EQ(args.ks.value, 3u);
  EXPECT_EQ(args.M.value, 100u);
  for (std::byte pad : args.ks.pad) EXPECT_EQ(pad, std::byte{0});
  // Run the steps by hand: the result is right only with both memsets.
  ASSERT_TRUE(run_on_host(plan));
  EXPECT_TRUE(c.check(3));
  // Without the out memset, the poisoned out stays NaN; without the bias memset, garbage is added.
  c.out.poison();
  const auto& k = ja::runtime::Host::resolve(0, *launch.kernel);
  ASSERT_TRUE(ja::runtime::Host::launch(0, nullptr, k, launch).ok());
  EXPECT_TRUE(std::isnan(c.out.at(0)));
  // The 112x256 row is launched with the 256-byte struct, its three extra slots null.
  p.aiter.kernel = "I8gemm_bf16_perTokenI8_BpreShuffle_112x256";
  p.aiter.splitk.reset();
  ja::kernels::Plan wide;
  wide.workspace_base = c.workspace.data();
  EXPECT_TRUE(ops::decide_and_plan<ops::GemmI8AsmTier>(p, gfx942, wide).ok());
  ASSERT_EQ(wide.count, 2u);
  EXPECT_EQ(wide.steps[1].launch.args.size, 256u);
  EXPECT_EQ(wide.steps[1].launch.grid, (ja::kernels::Dim3{1, 1, 1}));
  const auto w = wide.steps[1].launch.args.unpack<ja::kernels::AiterI8GemmWideArgs>();
  EXPECT_EQ(w.extra0.value, nullptr);
  EXPECT_EQ(w.extra2.value, nullptr);
}

// A twin computes exactly its grid: one block row short leaves those outputs unwritten.
TEST(GemmI8AsmTwins, AShortGridLeavesOutputsUnwritten) {
  I8Call c(32, 128, 128, true, 9);
  ja::kernels::AiterI8GemmArgs args{};
  args.C = c.out.data();
  args.A = c.a.data();
  args.B = c.b.data();
  args.SA = c.a_scale.data();
  args.SB = c.b_scale.data();
  args.BIAS = c.bias.data();
  args.M = 32;
  args.N = 128;
  args.K = 128;
  args.lda = 128;
  args.ldb = 128;
  args.ldc = 256;
  args.ks = 1;
  const auto& row = ja::kernels::kAiterI8GemmRows[1];  // 16x128
  ASSERT_EQ(row.tile_m, 16);
  ja::kernels::Plan plan;
  const auto& launch = plan.launch(row.kernel, {1, 1, 1}, {256, 1, 1}, args);  // needs y = 2
  const auto& kernel = ja::runtime::Host::resolve(0, row.kernel);
  ASSERT_TRUE(ja::runtime::Host::launch(0, nullptr, kernel, launch).ok());
  EXPECT_FALSE(std::isnan(c.out.at(15 * 128)));
  EXPECT_TRUE(std::isnan(c.out.at(16 * 128)));
}

// ---- which tier, as jax-aiter-plan shows it -----------------------------------------------------

TEST(GemmI8Tiers, PlanToolShowsTheChosenPlan) {
  const std::string call =
      R"({"operands": {"a": {"dtype": "i8", "shape": [1, 4096]}, "b": {"dtype": "i8", "shape": [4096, 4096]},
          "a_scale": {"dtype": "f32", "shape": [1, 1]}, "b_scale": {"dtype": "f32", "shape": [1, 4096]},
          "out": {"dtype": "bf16", "shape": [1, 4096]}}, "attributes": {"b_layout": "16x16"}})";
  auto gfx942 = ja::ffi::plan_json<ops::GemmI8>(call, *ja::ffi::plan_target("gfx942", 304));
  ASSERT_TRUE(gfx942.ok()) << gfx942.status().message();
  EXPECT_NE(gfx942->find(R"("tier": "asm", "family": "i8gemm", "verdict": "taken")"),
            std::string::npos)
      << *gfx942;
  EXPECT_NE(gfx942->find("I8gemm_bf16_perTokenI8_BpreShuffle_160x128"), std::string::npos)
      << *gfx942;
  EXPECT_NE(gfx942->find(R"("split": 8)"), std::string::npos) << *gfx942;
  EXPECT_NE(gfx942->find(R"({"name": "KS", "offset": 192, "size": 4, "value": 8})"),
            std::string::npos)
      << *gfx942;
  auto sm90 = ja::ffi::plan_json<ops::GemmI8>(call, *ja::ffi::plan_target("sm_90", 132));
  ASSERT_TRUE(sm90.ok());
  EXPECT_NE(sm90->find(R"("tier": "portable", "verdict": "taken")"), std::string::npos) << *sm90;
  // Decode on sm_90: the streaming kernel, a block per 16 rows of b (256 blocks for 132 SMs:
  // unsplit, no accumulator to clear).
  EXPECT_NE(sm90->find("jax_aiter_gemm_i8_stream"), std::string::npos) << *sm90;
  EXPECT_NE(sm90->find(R"("grid": [256, 1, 1])"), std::string::npos) << *sm90;
  EXPECT_EQ(sm90->find("memset"), std::string::npos) << *sm90;
  EXPECT_EQ(sm90->find("_finish"), std::string::npos) << *sm90;
  // A forced split keeps the mma tile: 32 blocks, K split 16 ways (256 each) into the int32
  // accumulator.
  std::string forced = call;
  forced.replace(forced.find(R"("b_layout": "16x16")"), 19, R"("b_layout": "16x16", "splitk": 16)");
  auto split = ja::ffi::plan_json<ops::GemmI8>(forced, *ja::ffi::plan_target("sm_90", 132));
  ASSERT_TRUE(split.ok()) << split.status().message();
  EXPECT_NE(split->find("jax_aiter_gemm_i8_split_t16x128"), std::string::npos) << *split;
  EXPECT_NE(split->find(R"("grid": [32, 1, 16])"), std::string::npos) << *split;
  EXPECT_NE(split->find(R"({"memset": {"what": "acc", "dst": "workspace.acc", "bytes": 16384)"),
            std::string::npos)
      << *split;
  EXPECT_NE(split->find("jax_aiter_gemm_i8_finish"), std::string::npos) << *split;
}

// ---- bad input --------------------------------------------------------------------------------

TEST(GemmI8Errors, EveryOperandIsNamed) {
  auto with = [](auto mutate) {
    I8Call c(8, 128, 128, true, 1);
    mutate(c);
    return c.call();
  };
  EXPECT_TRUE(Fails(with([](I8Call& c) {
                      c.a = Array(DType::kBF16, {8, 128});
                    }),
                    {"aiter.gemm_i8: operand a:", "expected i8[M,K]", "got bf16[8,128]"}));
  EXPECT_TRUE(Fails(with([](I8Call& c) {
                      c.b = Array(DType::kU8, {128, 128});
                    }),
                    {"operand b:", "expected i8[N,128]", "got u8[128,128]"}));
  EXPECT_TRUE(Fails(with([](I8Call& c) {
                      c.b = Array(DType::kI8, {128, 96});
                    }),
                    {"operand b:", "got i8[128,96]"}));
  EXPECT_TRUE(Fails(with([](I8Call& c) { c.a_scale = Array(DType::kF32, {8}); }),
                    {"operand a_scale:", "expected f32[8,1]", "got f32[8]"}));
  EXPECT_TRUE(Fails(with([](I8Call& c) {
                      c.a_scale = Array(DType::kBF16, {8, 1});
                    }),
                    {"operand a_scale:", "got bf16[8,1]"}));
  EXPECT_TRUE(Fails(with([](I8Call& c) {
                      c.b_scale = Array(DType::kF32, {128, 1});
                    }),
                    {"operand b_scale:", "expected f32[1,128]", "got f32[128,1]"}));
  EXPECT_TRUE(Fails(with([](I8Call& c) { c.bias = Array(DType::kF32, {128}); }),
                    {"operand bias:", "expected f32[1,128]", "got f32[128]"}));
  EXPECT_TRUE(Fails(with([](I8Call& c) {
                      c.bias = Array(DType::kBF16, {1, 128});
                    }),
                    {"operand bias:", "got bf16[1,128]"}));
  EXPECT_TRUE(Fails(with([](I8Call& c) {
                      c.out = Array(DType::kF32, {8, 128});
                    }),
                    {"operand out:", "expected bf16[8,128]", "got f32[8,128]"}));
  EXPECT_TRUE(Fails(with([](I8Call& c) { c.workspace = Array(DType::kU8, {100}); }),
                    {"operand workspace:", "expected u8[>= 32768]", "got u8[100]"}));
  {
    I8Call c(8, 120, 128, false, 1);
    EXPECT_TRUE(Fails(c.call(), {"operand b:", "N=120 is not a multiple of 16"}));
  }
  {
    I8Call c(8, 128, 100, false, 1);
    EXPECT_TRUE(Fails(c.call(), {"operand a:", "K=100 is not a multiple of 32"}));
  }
  {
    I8Call c(0, 128, 128, false, 1);
    EXPECT_TRUE(Fails(c.call(), {"operand a:", "non-empty", "M=0"}));
  }
  {
    // K = 2^17: the -128 x -128 rows would sum to 2^31, past int32 (it wrapped to -2^31).
    I8Call c(1, 16, int64_t{1} << 17, false, 1);
    EXPECT_TRUE(Fails(c.call(), {"operand a:", "K=131072", "K <= 131071"}));
  }
}

TEST(GemmI8Errors, LayoutFlagAttributesAndTiers) {
  I8Call c(8, 128, 128, false, 1);
  // A weight not flagged as shuffled in the family's layout is refused.
  EXPECT_TRUE(
      Fails(c.call(Options().with_layout("none")),
            {"operand b:", "pre-shuffled in the (16, 16) layout", "got b_layout \"none\""}));
  EXPECT_TRUE(Fails(c.call(Options().with_layout("32x16")), {"got b_layout \"32x16\""}));
  fake::CallFrame no_layout = c.frame(Options());
  no_layout.remove_attr("b_layout");
  EXPECT_TRUE(
      Fails(fake::call(test_gemm_i8_cpu, no_layout), {"attribute b_layout: missing (string)"}));
  EXPECT_TRUE(Fails(c.call(Options().with_tier("fastest")),
                    {"attribute tier: expected one of auto, asm, portable; got 'fastest'"}));
  EXPECT_TRUE(Fails(c.call(Options().with_tier("asm")), {"no tier runs this call", "asm_arch"}));
  EXPECT_TRUE(Fails(c.call(Options().with_split(17)), {"attribute splitk"}));
  EXPECT_TRUE(Fails(c.call(Options().with_kernel("nope").with_tier("asm").for_arch("gfx942")),
                    {"attribute kernel: expected \"\"", "i8gemm kernels", "got 'nope'"}));
  EXPECT_TRUE(Fails(c.call(Options()
                               .with_kernel("I8gemm_bf16_perTokenI8_BpreShuffle_112x256")
                               .with_tier("asm")
                               .for_arch("gfx950")),
                    {"asm (i8gemm): the forced kernel is not an i8gemm row for this arch"}));
  I8Call odd_k(8, 128, 96, false, 1);
  EXPECT_TRUE(Fails(odd_k.call(Options().with_tier("asm").for_arch("gfx950")),
                    {"K = 96 is not a multiple of 128"}));
  fake::CallFrame frame = c.frame(Options());
  frame.attr("split_k", int64_t{2});
  EXPECT_TRUE(Fails(fake::call(test_gemm_i8_cpu, frame),
                    {"unknown attribute 'split_k'", "b_layout, kernel, splitk, tier"}));
}

}  // namespace
