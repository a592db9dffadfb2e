// aiter.gemm_fp8_blockscale through its FFI handler on the Host backend (no XLA, no GPU): values
// of every tier against a float64 reference computed here from the dequantized inputs (fp8
// decoded by bit arithmetic written here, not core/dtype.hpp), outputs poisoned first:
//  - the portable tier in both fp8 formats and both out dtypes, partial column blocks (N % 128);
//  - every row of AITER's three families forced through its ABI twin: fp8gemm_blockscale on both
//    archs with splits (the plan's own memsets and workspace), mi350 on gfx950, FlatMM on gfx942
//    after the plan's scale transpose into the workspace; the heuristics' own choices;
//  - the plans' packing as AITER packs it, field by field;
//  - which tier a call reaches (arch, out dtype, family), as jax-aiter-plan shows it;
//  - every bad input, named.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "gemm_ffi_testing.hpp"
#include "jax_aiter/ffi/describe.hpp"
#include "jax_aiter/ffi/gemm_fp8_blockscale.hpp"
#include "jax_aiter/host_twins/aiter_flatmm.hpp"
#include "jax_aiter/host_twins/aiter_fp8gemm_blockscale.hpp"
#include "jax_aiter/host_twins/aiter_mi350.hpp"
#include "jax_aiter/host_twins/gemm_fp8_blockscale.hpp"
#include "jax_aiter/ops/gemm_fp8_blockscale.hpp"
#include "jax_aiter/runtime/host.hpp"
#include "jax_aiter/testing/fake_ffi.hpp"
#include "jax_aiter/testing/host_array.hpp"

namespace ja = jax_aiter;
namespace fake = jax_aiter::testing;
namespace ops = jax_aiter::ops;
using fake::Array;
using ja::DType;

JAX_AITER_DEFINE_HANDLER(test_gemm_fp8_blockscale_cpu, ops::GemmFp8Blockscale, ja::runtime::Host);

namespace {

using namespace ja::gemm_testing;

constexpr Dispatch kDispatch{"b_layout", "16x16"};
constexpr const char* kFlatmmKernel = "flatmm_uk_gfx9_f16f8_128x256x128_1x4x1_16x16x32";

// e4m3 by its bits: fn (bias 7, 0x7F/0xFF NaN) or fnuz (bias 8, 0x80 NaN, no -0).
double e4m3(uint8_t code, bool fnuz) {
  const int e = (code >> 3) & 15, m = code & 7, bias = fnuz ? 8 : 7;
  const double mag = e == 0 ? std::ldexp(m / 8.0, 1 - bias) : std::ldexp(1 + m / 8.0, e - bias);
  return (code & 0x80) ? -mag : mag;
}
bool is_nan_code(uint8_t code, bool fnuz) { return fnuz ? code == 0x80 : (code & 0x7F) == 0x7F; }

// AITER's FlatMM op test's weight, as it writes it: w.view(N/16, 16, K/64, 4, 16)
// .permute(0, 2, 3, 1, 4). For 1-byte elements, shuffle_16x16's bytes (checked below).
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

// One call's buffers: fp8 codes of magnitude up to 3 (no NaN) in the given format, positive
// scales in the op's layouts (a_scale [K/128, M], b_scale [ceil(N/128), K/128]), out poisoned,
// the workspace (sized by the op's rule) filled with garbage.
struct Fp8Call {
  int64_t m, n, k;
  bool fnuz;
  std::string family;  // the family attribute ("" left out)
  Array a, b_plain, b, a_scale, b_scale, out, workspace;

  Fp8Call(int64_t m_, int64_t n_, int64_t k_, uint64_t seed, DType fp8 = DType::kF8E4M3FN,
          DType out_dtype = DType::kBF16)
      : m(m_),
        n(n_),
        k(k_),
        fnuz(fp8 == DType::kF8E4M3FNUZ),
        a(fp8, {m_, k_}),
        b_plain(fp8, {n_, k_}),
        b(fp8, {n_, k_}),
        a_scale(DType::kF32, {std::max<int64_t>(k_ / 128, 1), m_}),
        b_scale(DType::kF32,
                {std::max<int64_t>((n_ + 127) / 128, 1), std::max<int64_t>(k_ / 128, 1)}),
        out(out_dtype, {m_, n_}),
        workspace(DType::kU8, {workspace_for(m_, n_, k_)}) {
    fake::Rng rng(seed);
    for (auto* arr : {&a, &b_plain}) {
      for (auto& byte : arr->bytes) {
        uint8_t c;
        do {
          c = static_cast<uint8_t>(std::lround(rng.uniform(0, 255)));
        } while (is_nan_code(c, fnuz) || std::abs(e4m3(c, fnuz)) > 3);
        byte = c;
      }
    }
    if (n % 16 == 0 && k % 32 == 0) b.bytes = shuffle_16x16(b_plain.bytes, n, k);
    fake::fill(a_scale, rng, 1e-2, 1e-1);
    fake::fill(b_scale, rng, 1e-2, 1e-1);
    out.poison();
    std::fill(workspace.bytes.begin(), workspace.bytes.end(), 0xAB);
  }

  // The op's rule (GemmFp8Blockscale::workspace_bytes), restated: fp8gemm_blockscale's bias,
  // FlatMM's transposed scales or the portable tier's split partials (w tile or decode), the
  // largest.
  static int64_t workspace_for(int64_t m, int64_t n, int64_t k) {
    const int64_t splits =
        ops::kGemmFp8BlockscaleWgmmaOn ? ops::gemm_fp8_blockscale_max_split(m, n) : 1;
    return std::max({n * 4, std::max<int64_t>(k / 128, 1) * ((n + 127) / 128) * 4,
                     splits > 1 ? splits * m * n * 4 : int64_t{0},
                     jax_aiter::ops::stream_q_workspace_bytes(m, n)});
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
    if (!family.empty()) f.string_attr("family", family);
    return f;
  }
  fake::CallResult call(const Options& o = {}) {
    fake::CallFrame f = frame(o);
    return fake::call(test_gemm_fp8_blockscale_cpu, f);
  }

  // |out - ref| <= u |ref| + ((steps - 1) u + (K/128 + 160) 2^-24) scale (+ 2^-24 for f16's
  // subnormals), scale = sum |a b| sa sb: float32 partials of 128 products, K/128 float32 folds,
  // one rounding to the out dtype (one per split where splits add into a bf16 out).
  ::testing::AssertionResult check(int steps = 1) const {
    const bool f16 = out.dtype == DType::kF16;
    const double u = f16 ? 0x1.0p-11 : 0x1.0p-8, floor = f16 ? 0x1.0p-24 : 1e-30;
    const int64_t kb_count = k / 128;
    double value[256];
    for (int c = 0; c < 256; ++c) value[c] = e4m3(static_cast<uint8_t>(c), fnuz);
    Mismatches bad;
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < n; ++c) {
        double ref = 0, scale = 0;
        for (int64_t kb = 0; kb < kb_count; ++kb) {
          double acc = 0, mag = 0;
          for (int64_t kk = kb * 128; kk < kb * 128 + 128; ++kk) {
            const double t = value[a.bytes[r * k + kk]] * value[b_plain.bytes[c * k + kk]];
            acc += t;
            mag += std::abs(t);
          }
          const double s = a_scale.at(kb * m + r) * b_scale.at((c / 128) * kb_count + kb);
          ref += acc * s;
          scale += mag * s;
        }
        const double bound =
            u * std::abs(ref) + ((steps - 1) * u + (kb_count + 160) * 0x1.0p-24) * scale + floor;
        bad.expect_near(r, c, out.at(r * n + c), ref, bound);
      }
    }
    return bad.result(m * n);
  }
};

// The fp8 format each arch reads.
DType fp8_of(const ArchCase& a) {
  return arch_of(a) == ja::Arch::kGfx942 ? DType::kF8E4M3FNUZ : DType::kF8E4M3FN;
}

ops::GemmFp8BlockscaleParams params_of(Fp8Call& c) {
  ops::GemmFp8BlockscaleParams p;
  p.a = tensor(c.a);
  p.b = tensor(c.b);
  p.a_scale = tensor(c.a_scale);
  p.b_scale = tensor(c.b_scale);
  p.out = tensor(c.out);
  p.workspace = tensor(c.workspace);
  p.b_layout = "16x16";
  p.family = c.family;
  return p;
}

// ---- the portable tier ---------------------------------------------------------------------

TEST(GemmFp8BlockscalePortable, ValuesForOddShapesBothFormatsBothOutDtypes) {
  const Shape shapes[] = {{1, 16, 128},    {7, 48, 256},    {33, 144, 384}, {130, 272, 1024},
                          {17, 1152, 256}, {300, 64, 128},  {65, 400, 640}, {1, 128, 8192},
                          {7, 256, 384},   {130, 256, 1024}};
  uint64_t seed = 1;
  for (const Shape& s : shapes) {
    for (DType fp8 : {DType::kF8E4M3FN, DType::kF8E4M3FNUZ}) {
      for (DType out : {DType::kBF16, DType::kF16}) {
        Fp8Call c(s.m, s.n, s.k, seed++, fp8, out);
        const fake::CallResult r = c.call(Options().with_tier("portable"));
        ASSERT_TRUE(r.ok()) << r.message;
        EXPECT_TRUE(c.check()) << s.m << "x" << s.n << "x" << s.k << " " << name(fp8) << " -> "
                               << name(out);
      }
    }
  }
}

// On the host AITER's tiers decline (AMD code) and the portable tier takes the call; the FlatMM
// layout's name is as good as the (16, 16) one (the same bytes for fp8).
TEST(GemmFp8BlockscalePortable, AutoOnTheHostAndBothLayoutNames) {
  Fp8Call c(9, 256, 512, 11);
  ASSERT_TRUE(c.call().ok());
  EXPECT_TRUE(c.check());
  EXPECT_EQ(flatten(c.b_plain.bytes, 256, 512), c.b.bytes);
  Fp8Call f(9, 256, 512, 12, DType::kF8E4M3FN, DType::kF16);
  f.b.bytes = flatten(f.b_plain.bytes, 256, 512);
  ASSERT_TRUE(f.call(Options().with_layout("flatmm")).ok());
  EXPECT_TRUE(f.check());
}

// The host twin computes exactly its grid, and writes the dtype its struct names.
TEST(GemmFp8BlockscalePortable, TheTwinReadsItsStruct) {
  Fp8Call c(40, 256, 256, 13, DType::kF8E4M3FN, DType::kF16);
  ops::GemmFp8BlockscaleParams p = params_of(c);
  ja::kernels::Plan plan;
  ASSERT_TRUE(ops::decide_and_plan<ops::GemmFp8BlockscalePortableTier>(
                  p, {ja::BackendKind::kHost, ja::Arch::kHost, 1}, plan)
                  .ok());
  ASSERT_EQ(plan.count, 1u);
  ja::kernels::Launch launch = plan.steps[0].launch;
  EXPECT_EQ(launch.kernel->symbol, "jax_aiter_gemm_fp8_blockscale_t32x128");
  EXPECT_EQ(launch.grid, (ja::kernels::Dim3{2, 2, 1}));
  const auto args = launch.args.unpack<ja::kernels::GemmFp8BlockscaleArgs>();
  EXPECT_EQ(args.out_f16, 1);
  EXPECT_EQ(args.fnuz, 0);
  EXPECT_EQ(args.lda, 256);
  launch.grid.y = 1;  // one block row short: rows 32..39 stay unwritten
  const auto& k = ja::runtime::Host::resolve(0, *launch.kernel);
  ASSERT_TRUE(ja::runtime::Host::launch(0, nullptr, k, launch).ok());
  EXPECT_FALSE(std::isnan(c.out.at(31 * 256 + 255)));
  EXPECT_TRUE(std::isnan(c.out.at(32 * 256)));
}

// sm_90's w tile (taken when kGemmFp8BlockscaleWgmmaOn): the rule's choice planned and run on its
// host twins, unsplit (one 128 x 256 tile per block, partial last tile) and split (f32 slices in
// the workspace, then the finish adding them in order); the packed fields and the grid. With the
// switch off the op reserves no slices, so the test gives the workspace the plan needs.
TEST(GemmFp8BlockscalePortable, TheWgmmaTilesPlanAndTwins) {
  const ja::Target h100{ja::BackendKind::kCuda, ja::Arch::kSm90, 132};
  struct Case {
    int64_t m, n, k, splits;
    DType out;
  };
  // Small enough for the twins (well under a second): a partial last tile (rows and columns, the
  // second 128-column half partial), 2 and 4 splits (one tile of 16 columns).
  for (const Case& s : {Case{200, 400, 256, 1, DType::kBF16}, Case{130, 272, 1024, 2, DType::kF16},
                        Case{128, 16, 2048, 4, DType::kBF16}}) {
    Fp8Call c(s.m, s.n, s.k, 40 + s.m, DType::kF8E4M3FN, s.out);
    c.workspace = Array(
        DType::kU8,
        {std::max<int64_t>(c.workspace.bytes.size(), s.splits > 1 ? s.splits * s.m * s.n * 4 : 0)});
    ops::GemmFp8BlockscaleParams p = params_of(c);
    ASSERT_TRUE(ops::GemmFp8Blockscale::validate(p).ok());
    const auto choice = ops::choose_portable_gemm_fp8_blockscale(s.m, s.n, s.k, 132, true);
    ASSERT_EQ(ja::kernels::kGemmFp8BlockscaleTiles[choice.tile].name, "w128x256");
    ASSERT_EQ(choice.splits, s.splits) << s.m << "x" << s.n << "x" << s.k;
    ja::kernels::Plan plan;
    plan.workspace_base = c.workspace.data();
    ops::GemmFp8BlockscalePortableTier::plan(p, h100, choice, plan);
    EXPECT_LE(plan.workspace.total, static_cast<int64_t>(c.workspace.bytes.size()));
    if (ops::kGemmFp8BlockscaleWgmmaOn) {
      EXPECT_LE(plan.workspace.total, ops::GemmFp8Blockscale::workspace_bytes(p));
    }
    const ja::kernels::Launch& main = plan.steps[0].launch;
    EXPECT_EQ(main.grid, (ja::kernels::Dim3{static_cast<uint32_t>((s.n + 255) / 256),
                                            static_cast<uint32_t>((s.m + 127) / 128),
                                            static_cast<uint32_t>(s.splits)}));
    EXPECT_EQ(main.block, (ja::kernels::Dim3{384, 1, 1}));
    EXPECT_EQ(main.shared_bytes, ja::kernels::gemm_fp8_blockscale::kWgmmaSmemBytes);
    if (s.splits == 1) {
      ASSERT_EQ(plan.count, 1u);
      EXPECT_EQ(main.kernel->symbol, "jax_aiter_gemm_fp8_blockscale_w128x256");
    } else {
      ASSERT_EQ(plan.count, 2u);
      EXPECT_EQ(main.kernel->symbol, "jax_aiter_gemm_fp8_blockscale_split_w128x256");
      const auto a = main.args.unpack<ja::kernels::GemmFp8BlockscaleSplitArgs>();
      EXPECT_EQ(a.partial, c.workspace.data());
      EXPECT_EQ(a.k_chunk * s.splits, s.k);
      EXPECT_EQ(plan.steps[1].launch.kernel->symbol, "jax_aiter_gemm_fp8_blockscale_finish");
      const auto f = plan.steps[1].launch.args.unpack<ja::kernels::GemmFp8BlockscaleFinishArgs>();
      EXPECT_EQ(f.splits, s.splits);
      EXPECT_EQ(f.out_f16, s.out == DType::kF16 ? 1 : 0);
    }
    ASSERT_TRUE(run_on_host(plan));
    EXPECT_TRUE(c.check()) << s.m << "x" << s.n << "x" << s.k << " split " << s.splits;
  }
}

// ---- fp8gemm_blockscale, through its ABI twins -----------------------------------------------

// Every row of each arch forced by name, unsplit and split 2, 3 and 5; M not a multiple of any
// tile; K with uneven split chunks (5 blocks).
TEST(GemmFp8BlockscaleFp8BsTwins, EveryRowForcedOnItsArchs) {
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
TEST(GemmFp8BlockscaleFp8BsTwins, HeuristicChoices) {
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
      split += decided->split > 1;
      EXPECT_TRUE(c.check(static_cast<int>(decided->split)))
          << arch.arch << " " << s.m << "x" << s.n << "x" << s.k;
    }
  }
  EXPECT_GT(split, 0);
  EXPECT_LT(split, 8);
}

// The plan as AITER packs it: the struct's fields, the grid, and the memsets (zero bias; out
// zeroed before a split launch).
TEST(GemmFp8BlockscaleFp8BsTwins, PlanPacksAsAiterDoes) {
  Fp8Call c(100, 256, 640, 7, DType::kF8E4M3FNUZ);
  ops::GemmFp8BlockscaleParams p = params_of(c);
  p.aiter.kernel = "fp8gemm_bf16_blockscale_BpreShuffle_32x128";
  p.aiter.splitk = 3;
  ASSERT_TRUE(ops::GemmFp8Blockscale::validate(p).ok());
  ja::Target gfx942{ja::BackendKind::kHip, ja::Arch::kGfx942, 304};
  ja::kernels::Plan plan;
  plan.workspace_base = c.workspace.data();
  EXPECT_TRUE(ops::decide_and_plan<ops::AiterTier<ops::AiterFp8Bs>>(p, gfx942, plan).ok());
  ASSERT_EQ(plan.count, 3u);
  ASSERT_EQ(plan.steps[0].kind, ja::kernels::Step::Kind::kMemset);
  EXPECT_EQ(plan.steps[0].memset.what, "zero_bias");
  EXPECT_EQ(plan.steps[0].memset.bytes, 256u * 4);
  ASSERT_EQ(plan.steps[1].kind, ja::kernels::Step::Kind::kMemset);
  EXPECT_EQ(plan.steps[1].memset.dst, c.out.data());
  EXPECT_EQ(plan.steps[1].memset.bytes, 100u * 256 * 2);
  EXPECT_LE(plan.workspace.total, ops::GemmFp8Blockscale::workspace_bytes(p));
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
// of the K-block-major a_scale) gives wrong values; a short grid leaves outputs unwritten.
TEST(GemmFp8BlockscaleFp8BsTwins, TheTwinReadsScalesByTheStructsStrides) {
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
  const auto& kernel = ja::runtime::Host::resolve(0, row.kernel);
  auto run = [&](ja::kernels::Dim3 grid) {
    ja::kernels::Plan plan;
    const auto& launch = plan.launch(row.kernel, grid, {256, 1, 1}, args);
    return ja::runtime::Host::launch(0, nullptr, kernel, launch).ok();
  };
  ASSERT_TRUE(run({1, 1, 1}));
  EXPECT_TRUE(c.check());
  args.scale_m = 1;  // as if a_scale were [M, K/128] read K-block-major
  ASSERT_TRUE(run({1, 1, 1}));
  EXPECT_FALSE(c.check());
  args.scale_m = 32;
  c.out.poison();
  ASSERT_TRUE(run({1, 0, 1}));
  EXPECT_TRUE(std::isnan(c.out.at(0)));
}

// ---- mi350, through its ABI twins --------------------------------------------------------------

// Every row forced by name (the kernel reaches its family's tier), and AITER's rule where the
// call asks for the family.
TEST(GemmFp8BlockscaleMi350Twins, EveryRowForcedAndTheRule) {
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
    c.family = "mi350";
    ASSERT_TRUE(c.call(Options().with_tier("asm").for_arch("gfx950")).ok());
    EXPECT_TRUE(c.check()) << m;
  }
}

// The bytes AITER's launcher writes, field by field, for a call that the rule sends to x128.
TEST(GemmFp8BlockscaleMi350Twins, PlanPacksAsAiterDoes) {
  Fp8Call c(200, 640, 1024, 7);
  c.family = "mi350";
  ops::GemmFp8BlockscaleParams p = params_of(c);
  ASSERT_TRUE(ops::GemmFp8Blockscale::validate(p).ok());
  const ja::Target t{ja::BackendKind::kHip, ja::Arch::kGfx950, 256};
  ja::kernels::Plan plan;
  plan.workspace_base = c.workspace.data();
  EXPECT_TRUE(ops::decide_and_plan<ops::AiterTier<ops::AiterMi350>>(p, t, plan).ok());
  ASSERT_EQ(plan.count, 1u);
  ASSERT_EQ(plan.steps[0].kind, ja::kernels::Step::Kind::kLaunch);
  EXPECT_EQ(plan.workspace.total, 0);
  const ja::kernels::Launch& launch = plan.steps[0].launch;
  EXPECT_EQ(launch.kernel->symbol, "f8_block_scale_mi350_x128");
  EXPECT_EQ(launch.grid, (ja::kernels::Dim3{3, 2, 1}));  // (ceil(640 / 256), ceil(200 / 128))
  EXPECT_EQ(launch.block, (ja::kernels::Dim3{256, 1, 1}));
  const auto a = launch.args.unpack<ja::kernels::AiterMi350Args>();
  EXPECT_EQ(a.ptr_C.value, c.out.data());
  EXPECT_EQ(a.ptr_X.value, c.a.data());
  EXPECT_EQ(a.ptr_W.value, c.b.data());
  EXPECT_EQ(a.ptr_XQ.value, c.a_scale.data());
  EXPECT_EQ(a.ptr_WQ.value, c.b_scale.data());
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
  ASSERT_TRUE(run_on_host(plan));
  EXPECT_TRUE(c.check());
}

// ---- flatmm, through its ABI twin after the scale transpose -------------------------------------

TEST(GemmFp8BlockscaleFlatmmTwin, ForcedAndChosenOnGfx942) {
  const Shape shapes[] = {
      {1, 256, 128}, {130, 512, 640}, {300, 768, 256}, {128, 256, 1024}, {257, 1024, 384}};
  uint64_t seed = 100;
  for (const Shape& s : shapes) {
    for (bool forced : {false, true}) {
      Fp8Call c(s.m, s.n, s.k, seed++, DType::kF8E4M3FNUZ, DType::kF16);
      Options o = Options().with_tier("asm").for_arch("gfx942");
      if (forced) o.with_kernel(kFlatmmKernel);
      const fake::CallResult r = c.call(o);
      ASSERT_TRUE(r.ok()) << r.message;
      EXPECT_TRUE(c.check()) << s.m << "x" << s.n << "x" << s.k << " forced " << forced;
    }
  }
  // auto with asm_arch gfx942: the ASM tier takes what it can, the portable tier the rest.
  for (int64_t n : {512, 272}) {
    Fp8Call c(40, n, 256, 7, DType::kF8E4M3FNUZ, DType::kF16);
    c.family = "flatmm";
    ASSERT_TRUE(c.call(Options().for_arch("gfx942")).ok());
    EXPECT_TRUE(c.check()) << n;
  }
}

// The plan: the scale transpose into the workspace, then AITER's kernel packed as AITER packs it
// plus the fields AITER leaves uninitialised (every byte is ours), reading the transposed piece.
TEST(GemmFp8BlockscaleFlatmmTwin, PlanTransposesThenPacksEveryField) {
  Fp8Call c(300, 512, 640, 7, DType::kF8E4M3FNUZ, DType::kF16);
  ops::GemmFp8BlockscaleParams p = params_of(c);
  ASSERT_TRUE(ops::GemmFp8Blockscale::validate(p).ok());
  const ja::Target gfx942{ja::BackendKind::kHip, ja::Arch::kGfx942, 304};
  ja::kernels::Plan plan;
  plan.workspace_base = c.workspace.data();
  EXPECT_TRUE(ops::decide_and_plan<ops::AiterTier<ops::AiterFlatmm>>(p, gfx942, plan).ok());
  ASSERT_EQ(plan.count, 2u);  // two launches, no memset
  ASSERT_EQ(plan.workspace.count, 1u);
  EXPECT_EQ(plan.workspace.pieces[0].name, "b_scale_t");
  EXPECT_EQ(plan.workspace.pieces[0].bytes, 5 * 4 * 4);  // K/128 x N/128 floats
  EXPECT_LE(plan.workspace.total, ops::GemmFp8Blockscale::workspace_bytes(p));
  const ja::kernels::Launch& transpose = plan.steps[0].launch;
  EXPECT_EQ(transpose.kernel->code_object, "gemm_fp8_blockscale");
  EXPECT_EQ(transpose.kernel->symbol, "jax_aiter_gemm_fp8_blockscale_transpose_scales");
  EXPECT_EQ(transpose.grid, (ja::kernels::Dim3{1, 1, 1}));
  EXPECT_EQ(transpose.block, (ja::kernels::Dim3{256, 1, 1}));
  const auto t = transpose.args.unpack<ja::kernels::GemmFp8BlockscaleTransposeArgs>();
  EXPECT_EQ(t.src, c.b_scale.data());
  EXPECT_EQ(t.dst, c.workspace.data());
  EXPECT_EQ(t.rows, 4);
  EXPECT_EQ(t.cols, 5);
  const ja::kernels::Launch& launch = plan.steps[1].launch;
  EXPECT_EQ(launch.kernel->symbol, kFlatmmKernel);
  EXPECT_EQ(launch.kernel->code_object, std::string(kFlatmmKernel) + ".co");
  EXPECT_EQ(launch.grid, (ja::kernels::Dim3{2, 3, 1}));
  EXPECT_EQ(launch.block, (ja::kernels::Dim3{256, 1, 1}));
  EXPECT_EQ(launch.args.size, 112u);
  const auto a = launch.args.unpack<ja::kernels::AiterFlatmmArgs>();
  EXPECT_EQ(a.a_ptr, c.a.data());
  EXPECT_EQ(a.b_ptr, c.b.data());
  EXPECT_EQ(a.c_ptr, nullptr);
  EXPECT_EQ(a.sa_ptr, c.a_scale.data());
  EXPECT_EQ(a.sb_ptr, c.workspace.data());
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
  // AITER's kernel alone reads the garbage workspace: wrong. After the transpose: right.
  const auto& kernel = ja::runtime::Host::resolve(0, *launch.kernel);
  ASSERT_TRUE(kernel.status.ok());
  ASSERT_TRUE(ja::runtime::Host::launch(0, nullptr, kernel, launch).ok());
  EXPECT_FALSE(c.check());
  c.out.poison();
  ASSERT_TRUE(run_on_host(plan));
  EXPECT_TRUE(c.check());
  const float* transposed = reinterpret_cast<const float*>(c.workspace.data());
  EXPECT_EQ(transposed[1 * 4 + 3], static_cast<float>(c.b_scale.at(3 * 5 + 1)));  // [kb 1][nb 3]
}

// The twin computes exactly its grid: one block column short leaves those outputs unwritten.
TEST(GemmFp8BlockscaleFlatmmTwin, AShortGridLeavesOutputsUnwritten) {
  Fp8Call c(200, 512, 256, 9, DType::kF8E4M3FNUZ, DType::kF16);
  std::vector<float> scales_t(2 * 4);  // [K/128, N/128]
  for (int kb = 0; kb < 2; ++kb) {
    for (int nb = 0; nb < 4; ++nb) scales_t[kb * 4 + nb] = c.b_scale.at(nb * 2 + kb);
  }
  ja::kernels::AiterFlatmmArgs args{};
  args.a_ptr = c.a.data();
  args.b_ptr = c.b.data();
  args.sa_ptr = c.a_scale.data();
  args.sb_ptr = scales_t.data();
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

std::string plan_call(std::string_view fp8, int64_t m, int64_t n, int64_t k, std::string_view out,
                      std::string_view family = "") {
  const int64_t kb = k / 128, nb = (n + 127) / 128;
  const std::string dims = "[" + std::to_string(m) + ", " + std::to_string(k) + "]";
  return std::string(R"({"operands": {"a": {"dtype": ")") + std::string(fp8) + R"(", "shape": )" +
         dims + R"(}, "b": {"dtype": ")" + std::string(fp8) + R"(", "shape": [)" +
         std::to_string(n) + ", " + std::to_string(k) +
         R"(]}, "a_scale": {"dtype": "f32", "shape": [)" + std::to_string(kb) + ", " +
         std::to_string(m) + R"(]}, "b_scale": {"dtype": "f32", "shape": [)" + std::to_string(nb) +
         ", " + std::to_string(kb) + R"(]}, "out": {"dtype": ")" + std::string(out) +
         R"(", "shape": [)" + std::to_string(m) + ", " + std::to_string(n) +
         R"(]}}, "attributes": {"b_layout": "16x16", "family": ")" + std::string(family) + R"("}})";
}

TEST(GemmFp8BlockscaleTiers, PlanToolShowsTheChosenPlanAndItsFamily) {
  using ja::ffi::plan_json;
  using ja::ffi::plan_target;
  using Op = ops::GemmFp8Blockscale;
  auto gfx942 =
      plan_json<Op>(plan_call("f8_e4m3fnuz", 1, 4096, 4096, "bf16"), *plan_target("gfx942", 304));
  ASSERT_TRUE(gfx942.ok()) << gfx942.status().message();
  EXPECT_NE(gfx942->find(R"("tier": "asm", "family": "fp8gemm_blockscale", "verdict": "taken")"),
            std::string::npos)
      << *gfx942;
  EXPECT_NE(gfx942->find(R"("tier": "asm", "family": "mi350", "verdict": "not reached")"),
            std::string::npos)
      << *gfx942;
  EXPECT_NE(gfx942->find(R"("chosen": {"tier": "asm", "family": "fp8gemm_blockscale")"),
            std::string::npos)
      << *gfx942;
  EXPECT_NE(gfx942->find("fp8gemm_bf16_blockscale_BpreShuffle_128x128"), std::string::npos);
  EXPECT_NE(gfx942->find(R"("split": 8)"), std::string::npos) << *gfx942;
  EXPECT_NE(gfx942->find(R"({"name": "KS", "offset": 192, "size": 4, "value": 8})"),
            std::string::npos)
      << *gfx942;
  // f16 out on gfx942: FlatMM, after the transpose into the workspace.
  auto flat =
      plan_json<Op>(plan_call("f8_e4m3fnuz", 200, 4096, 1024, "f16"), *plan_target("gfx942", 304));
  ASSERT_TRUE(flat.ok());
  EXPECT_NE(flat->find(R"("tier": "asm", "family": "fp8gemm_blockscale", "verdict": "out is f16)"),
            std::string::npos)
      << *flat;
  EXPECT_NE(flat->find(R"("tier": "asm", "family": "flatmm", "verdict": "taken")"),
            std::string::npos)
      << *flat;
  EXPECT_NE(flat->find("jax_aiter_gemm_fp8_blockscale_transpose_scales"), std::string::npos);
  EXPECT_NE(
      flat->find(R"({"name": "sb_ptr", "offset": 32, "size": 8, "value": "workspace.b_scale_t"})"),
      std::string::npos)
      << *flat;
  EXPECT_NE(flat->find(R"({"name": "num_tokens", "offset": 96, "size": 4, "value": 200})"),
            std::string::npos)
      << *flat;
  // gfx950: AITER's fp8gemm_blockscale rows, or its MI350 kernels when the call asks for them.
  auto gfx950 = plan_json<Op>(plan_call("f8_e4m3fn", 64, 4096, 4096, "bf16", "mi350"),
                              *plan_target("gfx950", 256));
  ASSERT_TRUE(gfx950.ok());
  EXPECT_NE(gfx950->find(R"("tier": "asm", "family": "mi350", "verdict": "taken")"),
            std::string::npos)
      << *gfx950;
  EXPECT_NE(gfx950->find("f8_block_scale_mi350_x128"), std::string::npos) << *gfx950;
  // gfx942 reads e4m3fnuz: e4m3fn operands are refused by every tier, with the reason.
  auto wrong =
      plan_json<Op>(plan_call("f8_e4m3fn", 1, 4096, 4096, "bf16"), *plan_target("gfx942", 304));
  ASSERT_TRUE(wrong.ok());
  EXPECT_NE(wrong->find("gfx942 reads f8_e4m3fnuz"), std::string::npos) << *wrong;
  auto sm90 =
      plan_json<Op>(plan_call("f8_e4m3fn", 1, 4096, 4096, "bf16"), *plan_target("sm_90", 132));
  ASSERT_TRUE(sm90.ok());
  EXPECT_NE(sm90->find(R"("tier": "portable", "verdict": "taken")"), std::string::npos) << *sm90;
  // Decode on sm_90: the streaming kernel, a block per 16 rows, unsplit (256 blocks, 132 SMs).
  EXPECT_NE(sm90->find("jax_aiter_gemm_fp8_blockscale_stream"), std::string::npos) << *sm90;
  EXPECT_NE(sm90->find(R"("grid": [256, 1, 1])"), std::string::npos) << *sm90;
  EXPECT_EQ(sm90->find("_finish"), std::string::npos) << *sm90;
  // N = 512: 32 blocks, so K is split, 2 ways (16 steps of 256 bytes: at least one a warp of a
  // split), and the w tile's finish kernel adds the partial planes in order (4 a thread).
  auto split =
      plan_json<Op>(plan_call("f8_e4m3fn", 3, 512, 4096, "f16"), *plan_target("sm_90", 132));
  ASSERT_TRUE(split.ok());
  EXPECT_NE(split->find(R"("grid": [32, 1, 2])"), std::string::npos) << *split;
  EXPECT_NE(split->find(R"("symbol": "jax_aiter_gemm_fp8_blockscale_finish", "grid": [2, 1, 1])"),
            std::string::npos)
      << *split;
  EXPECT_NE(split->find(R"({"name": "splits", "offset": 68, "size": 4, "value": 2})"),
            std::string::npos)
      << *split;
  // M = 17: the t16x128 tile.
  auto tile =
      plan_json<Op>(plan_call("f8_e4m3fn", 17, 4096, 4096, "bf16"), *plan_target("sm_90", 132));
  ASSERT_TRUE(tile.ok());
  EXPECT_NE(tile->find("jax_aiter_gemm_fp8_blockscale_t16x128"), std::string::npos) << *tile;
}

// ---- bad input --------------------------------------------------------------------------------

TEST(GemmFp8BlockscaleErrors, EveryOperandIsNamed) {
  auto with = [](auto mutate) {
    Fp8Call c(8, 256, 256, 1);
    mutate(c);
    return c.call();
  };
  EXPECT_TRUE(Fails(with([](Fp8Call& c) {
                      c.a = Array(DType::kBF16, {8, 256});
                    }),
                    {"aiter.gemm_fp8_blockscale: operand a:",
                     "expected f8_e4m3fn or f8_e4m3fnuz [M,K]", "got bf16[8,256]"}));
  EXPECT_TRUE(Fails(with([](Fp8Call& c) {
                      c.b = Array(DType::kF8E4M3FNUZ, {256, 256});
                    }),
                    {"operand b:", "expected f8_e4m3fn[N,256]", "got f8_e4m3fnuz[256,256]"}));
  EXPECT_TRUE(Fails(with([](Fp8Call& c) {
                      c.b = Array(DType::kF8E4M3FN, {256, 128});
                    }),
                    {"operand b:", "got f8_e4m3fn[256,128]"}));
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
                    {"operand b_scale:", "expected f32[2,2]", "got f32[2,1]"}));
  EXPECT_TRUE(Fails(with([](Fp8Call& c) {
                      c.out = Array(DType::kF32, {8, 256});
                    }),
                    {"operand out:", "expected bf16[8,256] or f16[8,256]", "got f32[8,256]"}));
  EXPECT_TRUE(Fails(with([](Fp8Call& c) { c.workspace = Array(DType::kU8, {100}); }),
                    {"operand workspace:", "expected u8[>= 65536]", "got u8[100]"}));
  {
    Fp8Call c(8, 120, 256, 1);
    EXPECT_TRUE(Fails(c.call(), {"operand b:", "N=120 is not a multiple of 16"}));
  }
  {
    Fp8Call c(8, 256, 192, 1);
    EXPECT_TRUE(Fails(c.call(), {"operand a:", "K=192 is not a multiple of 128"}));
  }
  {
    Fp8Call c(0, 128, 128, 1);
    EXPECT_TRUE(Fails(c.call(), {"operand a:", "non-empty", "M=0"}));
  }
}

TEST(GemmFp8BlockscaleErrors, LayoutAttributesAndTiers) {
  Fp8Call c(8, 256, 256, 1);
  EXPECT_TRUE(Fails(c.call(Options().with_layout("none")),
                    {"operand b:", "pre-shuffled in the (16, 16) layout or the FlatMM layout",
                     "got b_layout \"none\""}));
  fake::CallFrame no_layout = c.frame(Options());
  no_layout.remove_attr("b_layout");
  EXPECT_TRUE(Fails(fake::call(test_gemm_fp8_blockscale_cpu, no_layout),
                    {"attribute b_layout: missing (string)"}));
  EXPECT_TRUE(Fails(c.call(Options().with_split(17)), {"attribute splitk", "got 17"}));
  // An unknown kernel lists the three families.
  EXPECT_TRUE(
      Fails(c.call(Options().with_kernel("nope")),
            {"attribute kernel: expected \"\"", "fp8gemm_blockscale kernels (e.g. ",
             "mi350 kernels (e.g. f8_block_scale_mi350_x32)", "or flatmm kernels", "got 'nope'"}));
  c.family = "i8gemm";
  EXPECT_TRUE(Fails(c.call(), {"attribute family: expected \"\"", "\"mi350\"", "got 'i8gemm'"}));
  c.family = "";
  // Off AMD the ASM tiers need asm_arch; every tier's reason names its family.
  EXPECT_TRUE(Fails(c.call(Options().with_tier("asm")),
                    {"no tier runs this call (asm (fp8gemm_blockscale): ", "asm_arch",
                     "; asm (mi350): ", "; asm (flatmm): ",
                     "; portable: the call forces another "
                     "tier"}));
  EXPECT_TRUE(Fails(c.call(Options().with_kernel("", 3).with_tier("asm").for_arch("gfx950")),
                    {"split 3 does not cut K = 256"}));
}

TEST(GemmFp8BlockscaleErrors, EachFamilysGates) {
  // mi350: AITER's gates, and gfx950 only.
  Fp8Call small(8, 128, 512, 1);
  small.family = "mi350";
  EXPECT_TRUE(Fails(small.call(Options().with_tier("asm").for_arch("gfx950")),
                    {"asm (mi350): M = 8 is below 16"}));
  EXPECT_TRUE(Fails(small.call(Options().with_tier("asm").for_arch("gfx942")),
                    {"asm (mi350): AITER's MI350 FP8 block-scale kernels are gfx950 code only"}));
  ASSERT_TRUE(small.call(Options().for_arch("gfx950")).ok());  // the portable tier takes it
  EXPECT_TRUE(small.check());
  // flatmm: gfx942 plans read e4m3fnuz, N % 256, gfx942 only.
  Fp8Call fn16(8, 256, 256, 1, DType::kF8E4M3FN, DType::kF16);
  EXPECT_TRUE(Fails(fn16.call(Options().with_tier("asm").for_arch("gfx942")),
                    {"asm (flatmm): gfx942 reads f8_e4m3fnuz"}));
  EXPECT_TRUE(Fails(fn16.call(Options().with_tier("asm").for_arch("gfx950")),
                    {"asm (flatmm): AITER ships its FlatMM kernel for gfx942 only"}));
  Fp8Call odd_n(8, 272, 256, 1, DType::kF8E4M3FNUZ, DType::kF16);
  EXPECT_TRUE(Fails(odd_n.call(Options().with_tier("asm").for_arch("gfx942")),
                    {"asm (flatmm): N = 272 is not a multiple of 256"}));
  ASSERT_TRUE(odd_n.call(Options().for_arch("gfx942")).ok());
  EXPECT_TRUE(odd_n.check());
  // Neither FlatMM nor the portable tier splits K: a forced split is refused by each, with its
  // reason (none drops it).
  Fp8Call fnuz16(8, 256, 256, 2, DType::kF8E4M3FNUZ, DType::kF16);
  EXPECT_TRUE(Fails(fnuz16.call(Options().with_split(2).for_arch("gfx942")),
                    {"no tier runs this call",
                     "asm (flatmm): AITER's kernels of this family do "
                     "not split K (split 2)",
                     "portable: our kernels for this op do not split K (splitk 2)"}));
  ASSERT_TRUE(odd_n.call(Options().with_split(1).for_arch("gfx942")).ok());
}

}  // namespace
