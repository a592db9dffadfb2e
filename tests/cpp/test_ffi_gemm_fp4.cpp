// aiter.gemm_fp4 through its FFI handler on the Host backend (no XLA, no GPU): values of both tiers
// against a float64 reference computed here from the dequantized inputs (e2m1 and e8m0 decoded
// here by table and ldexp), outputs poisoned first; every AITER f4gemm row forced through its ABI
// twin, split-K included, with the plan's own memset; the heuristic's choices; every bad input.
// The weight and scale layouts are written here as AITER writes them (view/permute loops).
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
#include "jax_aiter/ffi/gemm_fp4.hpp"
#include "jax_aiter/host_twins/gemm_fp4.hpp"
#include "jax_aiter/ops/gemm_fp4.hpp"
#include "jax_aiter/runtime/host.hpp"
#include "jax_aiter/testing/fake_ffi.hpp"
#include "jax_aiter/testing/host_array.hpp"

namespace ja = jax_aiter;
namespace fake = jax_aiter::testing;
namespace ops = jax_aiter::ops;
using fake::Array;
using ja::DType;

JAX_AITER_DEFINE_HANDLER(test_gemm_fp4_cpu, ops::GemmFp4, ja::runtime::Host);

namespace {

using namespace ja::gemm_testing;

// OCP MX e2m1, by table.
double e2m1(unsigned nibble) {
  static const double kTable[16] = {0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6};
  return kTable[nibble & 15u];
}
int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// AITER's shuffle_scale (e8m0_shuffle): pad [rows, cols] to [sm, sn] (with 127 here), view
// [sm/32, 2, 16, sn/8, 2, 4], permute (0, 3, 5, 2, 4, 1).
std::vector<unsigned char> shuffle_scale(const std::vector<unsigned char>& s, int64_t rows,
                                         int64_t cols) {
  const int64_t sm = round_up(rows, 256), sn = round_up(cols, 8);
  std::vector<unsigned char> padded(static_cast<size_t>(sm * sn), 127);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) padded[r * sn + c] = s[r * cols + c];
  }
  std::vector<unsigned char> out(padded.size());
  size_t i = 0;
  for (int64_t a0 = 0; a0 < sm / 32; ++a0) {
    for (int64_t d0 = 0; d0 < sn / 8; ++d0) {
      for (int64_t d2 = 0; d2 < 4; ++d2) {
        for (int64_t a2 = 0; a2 < 16; ++a2) {
          for (int64_t d1 = 0; d1 < 2; ++d1) {
            for (int64_t a1 = 0; a1 < 2; ++a1) {
              out[i++] = padded[(a0 * 32 + a1 * 16 + a2) * sn + d0 * 8 + d1 * 4 + d2];
            }
          }
        }
      }
    }
  }
  return out;
}

// One call's buffers: random fp4 bytes (every code), scales 2^-6 .. 2^6, out poisoned.
struct Fp4Call {
  int64_t m, n, k;
  bool shuffled;
  Array a, b_plain, b, sa_plain, sb_plain, a_scale, b_scale, out, workspace;

  Fp4Call(int64_t m_, int64_t n_, int64_t k_, uint64_t seed, bool shuffled_ = true)
      : m(m_),
        n(n_),
        k(k_),
        shuffled(shuffled_),
        a(DType::kU8, {m_, k_ / 2}),
        b_plain(DType::kU8, {n_, k_ / 2}),
        b(DType::kU8, {n_, k_ / 2}),
        sa_plain(DType::kU8, {m_, k_ / 32}),
        sb_plain(DType::kU8, {n_, k_ / 32}),
        a_scale(DType::kU8, {round_up(m_, 256), round_up(k_ / 32, 8)}),
        b_scale(DType::kU8, {round_up(n_, 256), round_up(k_ / 32, 8)}),
        out(DType::kBF16, {m_, n_}),
        // sized by the op's rule (the sm_90 decode kernel's partials; the host plans none)
        workspace(DType::kU8,
                  {std::max<int64_t>(jax_aiter::ops::stream_q_workspace_bytes(m_, n_), 1)}) {
    fake::Rng rng(seed);
    for (auto* arr : {&a, &b_plain}) {
      for (auto& byte : arr->bytes) byte = static_cast<unsigned char>(rng.uniform(0, 255.99));
    }
    for (auto* arr : {&sa_plain, &sb_plain}) {
      for (auto& byte : arr->bytes) byte = static_cast<unsigned char>(rng.uniform(121, 133.99));
    }
    b.bytes = shuffled && n % 16 == 0 && k % 64 == 0 ? shuffle_16x16(b_plain.bytes, n, k / 2)
                                                     : b_plain.bytes;
    a_scale.bytes = shuffle_scale(sa_plain.bytes, m, k / 32);
    b_scale.bytes = shuffle_scale(sb_plain.bytes, n, k / 32);
    out.poison();
  }

  // b_layout defaults to the flag of the weight written here.
  fake::CallFrame frame(const Options& o) {
    fake::CallFrame f;
    fake::add_arg(f, a);
    fake::add_arg(f, b);
    fake::add_arg(f, a_scale);
    fake::add_arg(f, b_scale);
    fake::add_ret(f, out);
    fake::add_ret(f, workspace);
    add_dispatch_attrs(f, o, {"b_layout", shuffled ? "16x16" : "none"});
    return f;
  }
  fake::CallResult call(const Options& o = {}) {
    fake::CallFrame f = frame(o);
    return fake::call(test_gemm_fp4_cpu, f);
  }

  double dequant(const Array& q, const Array& s, int64_t r, int64_t kk) const {
    const unsigned byte = q.bytes[r * (k / 2) + kk / 2];
    return e2m1(kk % 2 == 0 ? byte & 15u : byte >> 4) *
           std::ldexp(1.0, int{s.bytes[r * (k / 32) + kk / 32]} - 127);
  }

  // |out - ref| <= u |ref| + ((steps - 1) u + K/32 u_f32) sum |a b|: out is rounded to bf16 once
  // (or once per split, when splits add into out); each 32-block's float sum is exact, the
  // blocks are added in float.
  ::testing::AssertionResult check(int steps = 1) const {
    const double u = 0x1.0p-8, u32 = 0x1.0p-24;
    std::vector<double> da(static_cast<size_t>(m * k)), db(static_cast<size_t>(n * k));
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t kk = 0; kk < k; ++kk) da[r * k + kk] = dequant(a, sa_plain, r, kk);
    }
    for (int64_t c = 0; c < n; ++c) {
      for (int64_t kk = 0; kk < k; ++kk) db[c * k + kk] = dequant(b_plain, sb_plain, c, kk);
    }
    Mismatches bad;
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < n; ++c) {
        double ref = 0, mag = 0;
        for (int64_t kk = 0; kk < k; ++kk) {
          const double t = da[r * k + kk] * db[c * k + kk];
          ref += t;
          mag += std::abs(t);
        }
        const double bound =
            u * std::abs(ref) + ((steps - 1) * u + double(k / 32) * u32) * mag + 1e-30;
        bad.expect_near(r, c, out.at(r * n + c), ref, bound);
      }
    }
    return bad.result(m * n);
  }
};

// ---- the portable tier ---------------------------------------------------------------------

TEST(GemmFp4Portable, ValuesForOddAndLargeShapes) {
  const Shape shapes[] = {{1, 16, 64},    {7, 48, 192},  {33, 144, 320}, {130, 272, 1088},
                          {17, 400, 256}, {1, 32, 8192}, {96, 128, 512}, {300, 64, 64}};
  uint64_t seed = 1;
  for (const Shape& s : shapes) {
    for (bool shuffled : {true, false}) {
      Fp4Call c(s.m, s.n, s.k, seed++, shuffled);
      const fake::CallResult r = c.call(Options().with_tier("portable"));
      ASSERT_TRUE(r.ok()) << r.message;
      EXPECT_TRUE(c.check()) << s.m << "x" << s.n << "x" << s.k << " shuffled " << shuffled;
    }
  }
}

// On the host the ASM tier declines (gfx950 code) and the portable tier takes the call.
TEST(GemmFp4Portable, AutoOnTheHostIsPortable) {
  Fp4Call c(9, 256, 512, 11);
  ASSERT_TRUE(c.call().ok());
  EXPECT_TRUE(c.check());
}

// The decode kernels (M <= 16) through their twins: M 1..16 (d4 and d16), N odd (B plain) or a
// multiple of 16 (not of 64), K from 1 to 130 32-blocks, so the 16 in-block K slices hold 0, 1,
// 2 or 9 blocks each; every output poisoned first (a block the grid misses stays NaN).
TEST(GemmFp4Decode, ValuesForOddShapes) {
  const Shape shapes[] = {{1, 16, 64},  {1, 1, 576},    {2, 33, 1088},  {4, 48, 4160},
                          {5, 17, 192}, {8, 272, 1024}, {13, 200, 576}, {16, 144, 4160},
                          {16, 7, 64},  {3, 400, 2048}, {16, 32, 8192}, {9, 96, 320}};
  uint64_t seed = 100;
  int runs = 0;
  for (const Shape& s : shapes) {
    for (bool shuffled : {true, false}) {
      if (shuffled && s.n % 16 != 0) continue;
      Fp4Call c(s.m, s.n, s.k, seed++, shuffled);
      const fake::CallResult r = c.call(Options().with_tier("portable"));
      ASSERT_TRUE(r.ok()) << r.message;
      EXPECT_TRUE(c.check()) << s.m << "x" << s.n << "x" << s.k << " shuffled " << shuffled;
      ++runs;
    }
  }
  EXPECT_EQ(runs, 19);
}

ops::GemmFp4Params decode_params(Fp4Call& c);

// The plan: M <= 16 with B 16-byte aligned takes d4 (M <= 4) or d16, grid (ceil(N / 16), 1),
// 256 threads, 16 slices; M 17, or B not 16-byte aligned, takes the tile kernels.
TEST(GemmFp4Decode, PlanRule) {
  const ja::Target host{ja::BackendKind::kHost, ja::Arch::kHost, 1};
  const struct {
    int64_t m, n;
    std::string_view symbol;
    uint32_t grid_x, grid_y;
  } cases[] = {
      {1, 4096, "jax_aiter_gemm_fp4_d4", 256, 1},  {4, 33, "jax_aiter_gemm_fp4_d4", 3, 1},
      {5, 48, "jax_aiter_gemm_fp4_d16", 3, 1},     {16, 17, "jax_aiter_gemm_fp4_d16", 2, 1},
      {17, 64, "jax_aiter_gemm_fp4_t16x64", 1, 2}, {64, 64, "jax_aiter_gemm_fp4_t64x64", 1, 1}};
  for (const auto& cs : cases) {
    Fp4Call c(cs.m, cs.n, 128, 3, cs.n % 16 == 0);
    ops::GemmFp4Params p = decode_params(c);
    ja::kernels::Plan plan;
    ops::GemmFp4PortableTier::plan(p, host, plan);
    ASSERT_EQ(plan.count, 1u);
    const ja::kernels::Launch& l = plan.steps[0].launch;
    EXPECT_EQ(l.kernel->symbol, cs.symbol) << cs.m << "x" << cs.n;
    EXPECT_EQ(l.grid.x, cs.grid_x) << cs.m << "x" << cs.n;
    EXPECT_EQ(l.grid.y, cs.grid_y) << cs.m << "x" << cs.n;
    EXPECT_EQ(l.grid.z, 1u);
    EXPECT_EQ(l.block.x, 256u);
  }
  // B one byte off 16-byte alignment: the tile kernel (the decode kernels load 16 bytes at once).
  Fp4Call c(1, 64, 128, 4, false);
  ops::GemmFp4Params p = decode_params(c);
  std::vector<unsigned char> shifted(c.b.bytes.size() + 32);
  unsigned char* base = shifted.data();
  while (reinterpret_cast<uintptr_t>(base) % 16 != 1) ++base;
  p.b.data = base;
  ja::kernels::Plan plan;
  ops::GemmFp4PortableTier::plan(p, host, plan);
  ASSERT_EQ(plan.count, 1u);
  EXPECT_EQ(plan.steps[0].launch.kernel->symbol, "jax_aiter_gemm_fp4_t16x64");
}

// On sm_90, decode with B shuffled takes the streaming kernel: grid (N / 16, 1, splits), split
// only where N / 16 blocks leave compute units idle, the finish kernel then adding the workspace's
// partial planes; plain B keeps the decode kernels.
TEST(GemmFp4Decode, PlanRuleOnSm90) {
  const ja::Target h100{ja::BackendKind::kCuda, ja::Arch::kSm90, 132};
  const struct {
    int64_t m, n, k;
    bool shuffled;
    std::string_view symbol;
    uint32_t grid_x, grid_z;
    uint32_t steps;
  } cases[] = {{1, 4096, 4096, true, "jax_aiter_gemm_fp4_stream", 256, 1, 1},
               {16, 1024, 8192, true, "jax_aiter_gemm_fp4_stream", 64, 2, 2},
               {3, 512, 4096, true, "jax_aiter_gemm_fp4_stream", 32, 1, 1},  // 8 steps: one a warp
               {16, 1024, 8192, false, "jax_aiter_gemm_fp4_d16", 64, 1, 1},
               {17, 1024, 8192, true, "jax_aiter_gemm_fp4_t16x64", 16, 1, 1}};
  for (const auto& cs : cases) {
    Fp4Call c(cs.m, cs.n, cs.k, 3, cs.shuffled);
    ops::GemmFp4Params p = decode_params(c);
    ja::kernels::Plan plan;
    plan.workspace_base = c.workspace.data();
    ops::GemmFp4PortableTier::plan(p, h100, plan);
    ASSERT_EQ(plan.count, cs.steps) << cs.m << "x" << cs.n;
    const ja::kernels::Launch& l = plan.steps[0].launch;
    EXPECT_EQ(l.kernel->symbol, cs.symbol) << cs.m << "x" << cs.n;
    EXPECT_EQ(l.grid.x, cs.grid_x) << cs.m << "x" << cs.n;
    EXPECT_EQ(l.grid.z, cs.grid_z) << cs.m << "x" << cs.n;
    if (cs.grid_z > 1) {
      EXPECT_EQ(plan.steps[1].launch.kernel->symbol, "jax_aiter_gemm_fp4_stream_finish");
      EXPECT_LE(plan.workspace.total, ops::GemmFp4::workspace_bytes(p));
      const auto a = l.args.unpack<ja::kernels::GemmFp4StreamArgs>();
      EXPECT_EQ(a.splits, 2);
      EXPECT_EQ(a.k_chunk, 4096);  // K values, whole 256-byte steps of a row
      EXPECT_EQ(a.sb_stride, 256);
    }
  }
}

// The decode twin computes exactly its grid: one block column short leaves those 16 outputs of
// each row unwritten (poisoned); the full grid then writes them all.
TEST(GemmFp4Decode, TwinComputesItsGrid) {
  const ja::Target host{ja::BackendKind::kHost, ja::Arch::kHost, 1};
  Fp4Call c(3, 64, 4160, 21);
  ops::GemmFp4Params p = decode_params(c);
  ja::kernels::Plan plan;
  ops::GemmFp4PortableTier::plan(p, host, plan);
  ASSERT_EQ(plan.count, 1u);
  ja::kernels::Launch launch = plan.steps[0].launch;
  ASSERT_EQ(launch.grid.x, 4u);
  launch.grid.x = 3;
  const auto& kernel = ja::runtime::Host::resolve(0, *launch.kernel);
  ASSERT_TRUE(ja::runtime::Host::launch(0, nullptr, kernel, launch).ok());
  for (int64_t r = 0; r < 3; ++r) {
    EXPECT_FALSE(std::isnan(c.out.at(r * 64 + 47)));
    EXPECT_TRUE(std::isnan(c.out.at(r * 64 + 48)));
  }
  launch.grid.x = 4;
  ASSERT_TRUE(ja::runtime::Host::launch(0, nullptr, kernel, launch).ok());
  EXPECT_TRUE(c.check());
}

// ---- the ASM tier, through the ABI twins -----------------------------------------------------

// Every row forced by name, unsplit and (rows that split) split 2 and 4; M a multiple of 32 but
// not of the tile, N not a multiple of the tile (but of 512 where 128x512 needs it).
TEST(GemmFp4AsmTwins, EveryRowForced) {
  int runs = 0, split_runs = 0;
  uint64_t seed = 100;
  for (const auto& row : ja::kernels::kAiterF4GemmRows) {
    const int64_t m = row.tile_m + 32, k = 1024;
    const int64_t n = row.tile_n == 512 && row.tile_m == 128 ? 1024 : row.tile_n + 48;
    std::vector<int64_t> splits = {-1};
    if (row.split_k) splits = {-1, 2, 4};
    for (int64_t splitk : splits) {
      Fp4Call c(m, n, k, seed++, row.bpreshuffle);
      const fake::CallResult r =
          c.call(Options()
                     .with_kernel(std::string(ja::kernels::short_name(row)), splitk)
                     .with_tier("asm")
                     .for_arch("gfx950", 256));
      ASSERT_TRUE(r.ok()) << ja::kernels::short_name(row) << ": " << r.message;
      const int split = splitk > 1 ? static_cast<int>(splitk) : 1;
      EXPECT_TRUE(c.check(split)) << ja::kernels::short_name(row) << " split " << split;
      ++runs;
      split_runs += split > 1;
    }
  }
  EXPECT_EQ(runs, 35 + 2 * 2);
  EXPECT_EQ(split_runs, 4);
}

// The heuristic's own choice (no kernel forced), for shapes that split and ones that do not.
TEST(GemmFp4AsmTwins, HeuristicChoices) {
  const Shape shapes[] = {{32, 2048, 2048}, {64, 768, 512}, {288, 256, 256}, {640, 1024, 256}};
  uint64_t seed = 300;
  int split = 0;
  for (const Shape& s : shapes) {
    for (bool shuffled : {true, false}) {
      Fp4Call c(s.m, s.n, s.k, seed++, shuffled);
      const fake::CallResult r = c.call(Options().with_tier("asm").for_arch("gfx950", 256));
      ASSERT_TRUE(r.ok()) << r.message;
      ops::AiterQuery q;
      q.arch = ja::Arch::kGfx950;
      q.m = s.m;
      q.n = s.n;
      q.k = s.k;
      q.b_shuffled = shuffled;
      q.compute_units = 256;
      const auto decided = ops::select_aiter<ops::AiterF4Gemm>(q);
      ASSERT_TRUE(decided.ok());
      split += decided->split > 1;
      EXPECT_TRUE(c.check(static_cast<int>(decided->split))) << s.m << "x" << s.n << "x" << s.k;
    }
  }
  EXPECT_GT(split, 0);
  EXPECT_LT(split, 8);
}

ops::GemmFp4Params decode_params(Fp4Call& c) {
  ops::GemmFp4Params p;
  p.a = tensor(c.a);
  p.b = tensor(c.b);
  p.a_scale = tensor(c.a_scale);
  p.b_scale = tensor(c.b_scale);
  p.out = tensor(c.out);
  p.workspace = tensor(c.workspace);
  p.b_layout = c.shuffled && c.n % 16 == 0 ? "16x16" : "none";
  return p;
}

// The plan as AITER packs it, every stride filled: the struct's fields, the grid, the memset.
TEST(GemmFp4AsmTwins, PlanPacksAsAiterDoes) {
  Fp4Call c(96, 512, 1024, 7);
  ops::GemmFp4Params p;
  p.a = tensor(c.a);
  p.b = tensor(c.b);
  p.a_scale = tensor(c.a_scale);
  p.b_scale = tensor(c.b_scale);
  p.out = tensor(c.out);
  p.b_layout = "16x16";
  p.aiter.kernel = "f4gemm_bf16_per1x32Fp4_BpreShuffle_256x256";
  p.aiter.splitk = 4;
  ja::Target gfx950{ja::BackendKind::kHip, ja::Arch::kGfx950, 256};
  ja::kernels::Plan plan;
  EXPECT_TRUE(ops::decide_and_plan<ops::GemmFp4AsmTier>(p, gfx950, plan).ok());
  ASSERT_EQ(plan.count, 2u);
  ASSERT_EQ(plan.steps[0].kind, ja::kernels::Step::Kind::kMemset);
  EXPECT_EQ(plan.steps[0].memset.dst, c.out.data());
  EXPECT_EQ(plan.steps[0].memset.bytes, 96u * 512 * 2);
  const ja::kernels::Launch& launch = plan.steps[1].launch;
  EXPECT_EQ(launch.grid, (ja::kernels::Dim3{2, 1, 4}));
  EXPECT_EQ(launch.block, (ja::kernels::Dim3{256, 1, 1}));
  EXPECT_EQ(launch.args.size, 384u);
  const auto args = launch.args.unpack<ja::kernels::AiterF4GemmArgs>();
  EXPECT_EQ(args.D.value, c.out.data());
  EXPECT_EQ(args.C.value, nullptr);
  EXPECT_EQ(args.alpha.value, 1.0f);
  EXPECT_EQ(args.beta.value, 0.0f);
  EXPECT_EQ(args.stride_A0.value, 1024u);
  EXPECT_EQ(args.stride_B0.value, 1024u);
  EXPECT_EQ(args.stride_C0.value, 512u);
  EXPECT_EQ(args.stride_D0.value, 512u);
  for (uint32_t s : {args.stride_D1.value, args.stride_C1.value, args.stride_A1.value,
                     args.stride_B1.value, args.stride_ScaleA1.value, args.stride_ScaleB1.value}) {
    EXPECT_EQ(s, 1u);
  }
  EXPECT_EQ(args.stride_ScaleA0.value, 32u);
  EXPECT_EQ(args.stride_ScaleB0.value, 32u);
  EXPECT_EQ(args.M.value, 96u);
  EXPECT_EQ(args.K.value, 1024u);
  EXPECT_EQ(args.log2_k_split.value, 2);
  for (std::byte pad : args.log2_k_split.pad) EXPECT_EQ(pad, std::byte{0});
  // Run the steps by hand: the result is right only with the memset.
  ASSERT_TRUE(run_on_host(plan));
  EXPECT_TRUE(c.check(4));
  c.out.poison();
  const auto& k = ja::runtime::Host::resolve(0, *launch.kernel);
  ASSERT_TRUE(ja::runtime::Host::launch(0, nullptr, k, launch).ok());
  EXPECT_TRUE(std::isnan(c.out.at(0)));
  // A row that may not split is packed with log2_k_split 0 and one z.
  p.aiter.kernel = "f4gemm_bf16_per1x32Fp4_BpreShuffle_32x128";
  p.aiter.splitk.reset();
  ja::kernels::Plan one;
  EXPECT_TRUE(ops::decide_and_plan<ops::GemmFp4AsmTier>(p, gfx950, one).ok());
  ASSERT_EQ(one.count, 1u);
  EXPECT_EQ(one.steps[0].launch.grid, (ja::kernels::Dim3{4, 3, 1}));
  EXPECT_EQ(one.steps[0].launch.args.unpack<ja::kernels::AiterF4GemmArgs>().log2_k_split.value, 0);
}

// A twin computes exactly its grid: one block row short leaves those outputs unwritten.
TEST(GemmFp4AsmTwins, AShortGridLeavesOutputsUnwritten) {
  Fp4Call c(64, 128, 256, 9);
  ja::kernels::AiterF4GemmArgs args{};
  args.D = c.out.data();
  args.A = c.a.data();
  args.B = c.b.data();
  args.alpha = 1.0f;
  args.stride_C0 = 128;
  args.stride_A0 = 256;
  args.stride_B0 = 256;
  args.M = 64;
  args.N = 128;
  args.K = 256;
  args.ScaleA = c.a_scale.data();
  args.ScaleB = c.b_scale.data();
  args.stride_ScaleA0 = 8;
  args.stride_ScaleB0 = 8;
  const auto* row = &ja::kernels::kAiterF4GemmRows[0];
  for (const auto& r : ja::kernels::kAiterF4GemmRows) {
    if (r.tile_m == 32 && r.tile_n == 128) row = &r;
  }
  ASSERT_EQ(row->tile_m, 32);
  ja::kernels::Plan plan;
  const auto& launch = plan.launch(row->kernel, {1, 1, 1}, {256, 1, 1}, args);  // needs y = 2
  const auto& kernel = ja::runtime::Host::resolve(0, row->kernel);
  ASSERT_TRUE(ja::runtime::Host::launch(0, nullptr, kernel, launch).ok());
  EXPECT_FALSE(std::isnan(c.out.at(31 * 128)));
  EXPECT_TRUE(std::isnan(c.out.at(32 * 128)));
}

// ---- which tier, as jax-aiter-plan shows it -----------------------------------------------------

TEST(GemmFp4Tiers, PlanToolShowsTheChosenPlan) {
  const std::string call =
      R"({"operands": {"a": {"dtype": "u8", "shape": [32, 2048]}, "b": {"dtype": "u8", "shape": [4096, 2048]},
          "a_scale": {"dtype": "u8", "shape": [256, 128]}, "b_scale": {"dtype": "u8", "shape": [4096, 128]},
          "out": {"dtype": "bf16", "shape": [32, 4096]}}, "attributes": {"b_layout": "16x16"}})";
  auto gfx950 = ja::ffi::plan_json<ops::GemmFp4>(call, *ja::ffi::plan_target("gfx950", 256));
  ASSERT_TRUE(gfx950.ok()) << gfx950.status().message();
  EXPECT_NE(gfx950->find(R"("tier": "asm", "family": "f4gemm", "verdict": "taken")"),
            std::string::npos)
      << *gfx950;
  EXPECT_NE(gfx950->find("f4gemm_bf16_per1x32Fp4_BpreShuffle_256x256"), std::string::npos)
      << *gfx950;
  EXPECT_NE(gfx950->find(R"("split": 16)"), std::string::npos) << *gfx950;
  EXPECT_NE(gfx950->find(R"({"name": "log2_k_split", "offset": 368, "size": 4, "value": 4})"),
            std::string::npos)
      << *gfx950;
  auto gfx942 = ja::ffi::plan_json<ops::GemmFp4>(call, *ja::ffi::plan_target("gfx942", 304));
  ASSERT_TRUE(gfx942.ok());
  EXPECT_NE(gfx942->find(R"("tier": "portable", "verdict": "taken")"), std::string::npos)
      << *gfx942;
  EXPECT_NE(gfx942->find("jax_aiter_gemm_fp4_t16x64"), std::string::npos) << *gfx942;
}

// ---- bad input --------------------------------------------------------------------------------

TEST(GemmFp4Errors, EveryOperandIsNamed) {
  auto with = [](auto mutate) {
    Fp4Call c(8, 128, 128, 1);
    mutate(c);
    return c.call();
  };
  EXPECT_TRUE(Fails(with([](Fp4Call& c) {
                      c.a = Array(DType::kBF16, {8, 64});
                    }),
                    {"aiter.gemm_fp4: operand a:", "expected u8[M,K/2]", "got bf16[8,64]"}));
  EXPECT_TRUE(Fails(with([](Fp4Call& c) {
                      c.b = Array(DType::kI8, {128, 64});
                    }),
                    {"operand b:", "expected u8[N,64]", "got i8[128,64]"}));
  EXPECT_TRUE(Fails(with([](Fp4Call& c) {
                      c.b = Array(DType::kU8, {128, 32});
                    }),
                    {"operand b:", "got u8[128,32]"}));
  EXPECT_TRUE(Fails(with([](Fp4Call& c) {
                      c.a_scale = Array(DType::kU8, {8, 4});
                    }),
                    {"operand a_scale:", "expected u8[256,8]", "e8m0_shuffle", "got u8[8,4]"}));
  EXPECT_TRUE(Fails(with([](Fp4Call& c) {
                      c.a_scale = Array(DType::kF32, {256, 8});
                    }),
                    {"operand a_scale:", "got f32[256,8]"}));
  EXPECT_TRUE(Fails(with([](Fp4Call& c) {
                      c.b_scale = Array(DType::kU8, {128, 8});
                    }),
                    {"operand b_scale:", "expected u8[256,8]", "got u8[128,8]"}));
  EXPECT_TRUE(Fails(with([](Fp4Call& c) {
                      c.out = Array(DType::kF32, {8, 128});
                    }),
                    {"operand out:", "expected bf16[8,128]", "got f32[8,128]"}));
  {
    Fp4Call c(8, 120, 128, 1);
    EXPECT_TRUE(Fails(c.call(), {"operand b:", "N=120 is not a multiple of 16"}));
    Fp4Call plain(8, 120, 128, 1, false);
    EXPECT_TRUE(plain.call().ok()) << "a plain B needs no N multiple";
  }
  {
    Fp4Call c(8, 128, 96, 1);
    EXPECT_TRUE(Fails(c.call(), {"operand a:", "K=96 is not a multiple of 64"}));
  }
  {
    Fp4Call c(0, 128, 128, 1);
    EXPECT_TRUE(Fails(c.call(), {"operand a:", "non-empty", "M=0"}));
  }
}

TEST(GemmFp4Errors, LayoutFlagAttributesAndTiers) {
  Fp4Call c(32, 128, 256, 1);
  EXPECT_TRUE(Fails(c.call(Options().with_layout("32x16")),
                    {"operand b:", "\"16x16\"", "\"none\"", "got b_layout \"32x16\""}));
  fake::CallFrame no_layout = c.frame(Options());
  no_layout.remove_attr("b_layout");
  EXPECT_TRUE(
      Fails(fake::call(test_gemm_fp4_cpu, no_layout), {"attribute b_layout: missing (string)"}));
  EXPECT_TRUE(Fails(c.call(Options().with_tier("asm")), {"no tier runs this call", "gfx950"}));
  EXPECT_TRUE(Fails(c.call(Options().with_split(3)), {"attribute splitk", "2, 4, 8 or 16"}));
  EXPECT_TRUE(Fails(c.call(Options().with_split(32)), {"attribute splitk"}));
  EXPECT_TRUE(Fails(c.call(Options().with_kernel("nope").with_tier("asm").for_arch("gfx950")),
                    {"attribute kernel: expected \"\"", "f4gemm kernels", "got 'nope'"}));
  EXPECT_TRUE(Fails(c.call(Options().with_tier("asm").for_arch("gfx942")), {"gfx950 code"}));
  Fp4Call odd_m(40, 128, 256, 1);
  EXPECT_TRUE(Fails(odd_m.call(Options().with_tier("asm").for_arch("gfx950")),
                    {"M = 40 is not a multiple of 32"}));
  Fp4Call odd_k(32, 128, 320, 1);
  EXPECT_TRUE(Fails(odd_k.call(Options().with_tier("asm").for_arch("gfx950")),
                    {"K = 320 is not a multiple of 256"}));
  fake::CallFrame frame = c.frame(Options());
  frame.attr("split_k", int64_t{2});
  EXPECT_TRUE(Fails(fake::call(test_gemm_fp4_cpu, frame),
                    {"unknown attribute 'split_k'", "b_layout, kernel, splitk, tier"}));
}

}  // namespace
