// The grouped GEMMs' validate and plan with no XLA and no GPU: every bad operand by name, the row
// tile rule against one written here, the plans' launches and packed arguments, the workspace
// bound, the fp8 formats per arch, and the schedule (through its host twin, which runs the
// plan's own packed bytes) against an independent cut of the rows into tiles.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "jax_aiter/host_twins/grouped_gemm.hpp"
#include "jax_aiter/kernels/grouped_gemm.hpp"
#include "jax_aiter/ops/grouped_gemm.hpp"

namespace ja = jax_aiter;
namespace ops = jax_aiter::ops;
namespace K = jax_aiter::kernels;
using ja::DType;
using ops::Tensor;

namespace {

void* fake(uintptr_t address) { return reinterpret_cast<void*>(address); }

// A valid bf16 forward call: x [m, k], w [g, n, k], out [m, n] at made-up aligned addresses.
ops::GroupedGemmParams forward(int64_t m, int64_t n, int64_t k, int64_t g, DType t = DType::kBF16) {
  ops::GroupedGemmParams p;
  p.x = Tensor::over(fake(0x10000), t, {m, k});
  p.w = Tensor::over(fake(0x20000), t, {g, n, k});
  p.group_sizes = Tensor::over(fake(0x30000), DType::kI32, {g});
  p.out = Tensor::over(fake(0x40000), DType::kBF16, {m, n});
  p.workspace = Tensor::over(fake(0x50000), DType::kU8, {ops::GroupedGemm::workspace_bytes(p)});
  return p;
}

ops::GroupedGemmParams fp8_forward(int64_t m, int64_t n, int64_t k, int64_t g,
                                   DType t = DType::kF8E4M3FN) {
  ops::GroupedGemmParams p = forward(m, n, k, g, t);
  p.x_scale = Tensor::over(fake(0x60000), DType::kF32, {m, k / 128});
  p.w_scale = Tensor::over(fake(0x70000), DType::kF32, {g, (n + 127) / 128, k / 128});
  return p;
}

ops::GroupedGemmWgradParams wgrad(int64_t m, int64_t n, int64_t k, int64_t g) {
  ops::GroupedGemmWgradParams p;
  p.dy = Tensor::over(fake(0x10000), DType::kBF16, {m, n});
  p.x = Tensor::over(fake(0x20000), DType::kBF16, {m, k});
  p.group_sizes = Tensor::over(fake(0x30000), DType::kI32, {g});
  p.dw = Tensor::over(fake(0x40000), DType::kF32, {g, n, k});
  p.workspace =
      Tensor::over(fake(0x50000), DType::kU8, {ops::GroupedGemmWgrad::workspace_bytes(p)});
  return p;
}

template <typename P>
::testing::AssertionResult Refused(const P& p, std::string_view message,
                                   ja::ErrorCode code = ja::ErrorCode::kInvalidArgument) {
  const ja::Status st = ops::grouped_gemm_detail::check(p);
  if (st.ok()) return ::testing::AssertionFailure() << "expected an error, got OK";
  if (st.code() != code) {
    return ::testing::AssertionFailure() << "code " << int(st.code()) << ": " << st.message();
  }
  if (st.message().find(message) == std::string::npos) {
    return ::testing::AssertionFailure() << "message lacks \"" << message << "\": " << st.message();
  }
  return ::testing::AssertionSuccess();
}

const ja::Target kSm90{ja::BackendKind::kCuda, ja::Arch::kSm90, 132};
const ja::Target kGfx942{ja::BackendKind::kHip, ja::Arch::kGfx942, 304};
const ja::Target kHost{ja::BackendKind::kHost, ja::Arch::kHost, 1};

}  // namespace

// ---- validate ---------------------------------------------------------------------------------

TEST(GroupedGemmValidate, ValidCallsPass) {
  EXPECT_TRUE(ops::grouped_gemm_detail::check(forward(100, 64, 32, 4)).ok());
  ops::GroupedGemmParams dgrad = forward(100, 64, 32, 4);
  dgrad.transpose_w = true;
  dgrad.x = Tensor::over(fake(0x10000), DType::kBF16, {100, 64});
  dgrad.out = Tensor::over(fake(0x40000), DType::kF32, {100, 32});
  EXPECT_TRUE(ops::grouped_gemm_detail::check(dgrad).ok());
  EXPECT_TRUE(ops::grouped_gemm_detail::check(fp8_forward(100, 200, 256, 4)).ok());
  EXPECT_TRUE(ops::grouped_gemm_detail::check(wgrad(100, 64, 32, 4)).ok());
}

TEST(GroupedGemmValidate, EveryBadOperandIsNamed) {
  auto p = forward(100, 64, 32, 4);
  p.x.dtype = DType::kF32;
  EXPECT_TRUE(Refused(p,
                      "aiter.grouped_gemm: operand x: expected bf16, f16, f8_e4m3fn or "
                      "f8_e4m3fnuz [M,K], got f32[100,32]"));
  p = forward(100, 64, 32, 4);
  p.x = Tensor::over(fake(0x10000), DType::kBF16, {2, 50, 32});
  EXPECT_TRUE(Refused(p,
                      "operand x: expected bf16, f16, f8_e4m3fn or f8_e4m3fnuz [M,K], got "
                      "bf16[2,50,32]"));
  p = forward(100, 64, 32, 4);
  p.w.dims[2] = 31;
  EXPECT_TRUE(Refused(p,
                      "operand w: expected bf16[G,N,32] (K and dtype from x), got "
                      "bf16[4,64,31]"));
  p = forward(100, 64, 32, 4);
  p.w.dtype = DType::kF16;
  EXPECT_TRUE(Refused(p, "operand w: expected bf16[G,N,32]"));
  p = forward(100, 64, 32, 4);
  p.w = Tensor::over(fake(0x20000), DType::kBF16, {64, 32});
  EXPECT_TRUE(Refused(p, "operand w: expected bf16[G,N,32] (K and dtype from x), got bf16[64,32]"));
  p = forward(100, 64, 32, 4);
  p.transpose_w = true;  // x [M, N] contracts w's N: 32 != 64
  EXPECT_TRUE(Refused(p,
                      "operand w: expected bf16[G,32,K] (N and dtype from x; transpose_w), "
                      "got bf16[4,64,32]"));
  p = forward(100, 64, 32, 4);
  p.group_sizes.dtype = DType::kU8;
  EXPECT_TRUE(Refused(p, "operand group_sizes: expected i32[4] (G from w), got u8[4]"));
  p = forward(100, 64, 32, 4);
  p.group_sizes.dims[0] = 5;
  EXPECT_TRUE(Refused(p, "operand group_sizes: expected i32[4] (G from w), got i32[5]"));
  p = forward(100, 64, 32, 70000);
  EXPECT_TRUE(Refused(p, "operand group_sizes: expected at most 65535 groups, got 70000"));
  p = forward(int64_t{1} << 31, 64, 32, 4);
  EXPECT_TRUE(Refused(p, "operand x: too large for 32-bit indexing: M=2147483648"));
  p = forward(100, 64, 32, 4);
  p.out.dtype = DType::kI32;
  EXPECT_TRUE(Refused(p,
                      "operand out: expected bf16, f16 or f32[100,64] (M from x, N from w), "
                      "got i32[100,64]"));
  p = forward(100, 64, 32, 4);
  p.out.dims[1] = 32;
  EXPECT_TRUE(Refused(p, "operand out: expected bf16, f16 or f32[100,64]"));
  p = forward(100, 64, 32, 4);
  p.x_scale = Tensor::over(fake(0x60000), DType::kF32, {100, 1});
  EXPECT_TRUE(Refused(p,
                      "operand x_scale: expected none (x is bf16; scales go with fp8 x), got "
                      "f32[100,1]"));
  p = forward(100, 64, 32, 4);
  p.w_scale = Tensor::over(fake(0x60000), DType::kF32, {4, 1, 1});
  EXPECT_TRUE(Refused(p, "operand w_scale: expected none (x is bf16"));
  for (const char* operand : {"x", "w", "group_sizes", "out"}) {
    p = forward(100, 64, 32, 4);
    Tensor* t = std::string_view(operand) == "x"   ? &p.x
                : std::string_view(operand) == "w" ? &p.w
                : operand[0] == 'g'                ? &p.group_sizes
                                                   : &p.out;
    t->data = nullptr;
    EXPECT_TRUE(Refused(p, std::string("operand ") + operand + ": null data pointer")) << operand;
  }
}

TEST(GroupedGemmValidate, Fp8OperandsAreNamed) {
  auto p = fp8_forward(100, 200, 256, 4);
  p.transpose_w = true;
  p.x = Tensor::over(fake(0x10000), DType::kF8E4M3FN, {100, 200});
  EXPECT_TRUE(Refused(p,
                      "aiter.grouped_gemm: attribute transpose_w: the fp8 block-scale grouped "
                      "GEMM is inference only"));
  p = fp8_forward(100, 200, 192, 4);
  EXPECT_TRUE(Refused(p, "operand x: K=192 is not a multiple of 128"));
  p = fp8_forward(100, 200, 256, 4);
  p.x_scale.reset();
  EXPECT_TRUE(Refused(p, "operand x_scale: missing: fp8 x needs f32[100,2] (M x K/128)"));
  p = fp8_forward(100, 200, 256, 4);
  p.x_scale = Tensor::over(fake(0x60000), DType::kF32, {2, 100});  // K-block-major: not ours
  EXPECT_TRUE(Refused(p, "operand x_scale: expected f32[100,2] (M x K/128), got f32[2,100]"));
  p = fp8_forward(100, 200, 256, 4);
  p.w_scale.reset();
  EXPECT_TRUE(Refused(p, "operand w_scale: missing: fp8 w needs f32[4,2,2]"));
  p = fp8_forward(100, 200, 256, 4);
  p.w_scale = Tensor::over(fake(0x70000), DType::kF32, {4, 1, 2});  // floor(N/128) rows
  EXPECT_TRUE(Refused(p,
                      "operand w_scale: expected f32[4,2,2] (G x ceil(N/128) x K/128), got "
                      "f32[4,1,2]"));
  p = fp8_forward(100, 200, 256, 4);
  p.out.dtype = DType::kF32;
  EXPECT_TRUE(Refused(p, "operand out: expected bf16[100,200]"));
  p = fp8_forward(100, 200, 256, 4);
  p.w.dtype = DType::kF8E4M3FNUZ;
  EXPECT_TRUE(Refused(p, "operand w: expected f8_e4m3fn[G,N,256]"));
  p = fp8_forward(100, 200, 256, 4);
  p.w_scale->data = nullptr;
  EXPECT_TRUE(Refused(p, "operand w_scale: null data pointer"));
}

TEST(GroupedGemmValidate, EmptyCallsAreEmptyProblemsCheckedLast) {
  for (auto [m, n, k, g] :
       {std::array<int64_t, 4>{0, 64, 32, 4}, {100, 0, 32, 4}, {100, 64, 0, 4}, {100, 64, 32, 0}}) {
    auto p = forward(m, n, k, g);
    EXPECT_TRUE(Refused(p, "expected a non-empty product", ops::kEmptyProblem)) << m << n << k << g;
    p.out.dtype = DType::kI8;  // a bad operand of an empty call is still an error
    EXPECT_TRUE(Refused(p, "operand out"));
  }
  EXPECT_TRUE(Refused(wgrad(0, 64, 32, 4), "expected a non-empty product", ops::kEmptyProblem));
  EXPECT_TRUE(Refused(wgrad(100, 64, 32, 0), "expected a non-empty product", ops::kEmptyProblem));
}

TEST(GroupedGemmValidate, WgradOperandsAreNamed) {
  auto p = wgrad(100, 64, 32, 4);
  p.dy.dtype = DType::kF32;
  EXPECT_TRUE(Refused(p,
                      "aiter.grouped_gemm_wgrad: operand dy: expected bf16 or f16 [M,N], got "
                      "f32[100,64]"));
  p = wgrad(100, 64, 32, 4);
  p.x.dims[0] = 99;
  EXPECT_TRUE(Refused(p, "operand x: expected bf16[100,K] (M and dtype from dy), got bf16[99,32]"));
  p = wgrad(100, 64, 32, 4);
  p.x.dtype = DType::kF16;
  EXPECT_TRUE(Refused(p, "operand x: expected bf16[100,K]"));
  p = wgrad(100, 64, 32, 4);
  p.group_sizes.dtype = DType::kF32;
  EXPECT_TRUE(Refused(p, "operand group_sizes: expected i32[G], got f32[4]"));
  p = wgrad(100, 64, 32, 4);
  p.dw.dims[1] = 32;
  EXPECT_TRUE(Refused(p,
                      "operand dw: expected bf16, f16 or f32[4,64,32] (G from group_sizes, N "
                      "from dy, K from x), got f32[4,32,32]"));
  p = wgrad(100, 64, 32, 4);
  p.dw.data = nullptr;
  EXPECT_TRUE(Refused(p, "operand dw: null data pointer"));
}

// ---- the rule and the plans -------------------------------------------------------------------

// Written independently of choose_grouped_tile: 128-row tiles when the mean group has at least
// 128 rows, 64-row tiles from 64, else 16.
int expected_bm(int64_t m, int64_t g) {
  const int64_t mean = m / g;
  return mean >= 128 ? 128 : mean >= 64 ? 64 : 16;
}

TEST(GroupedGemmPlan, TileRuleOverAGrid) {
  int checked = 0;
  for (int64_t g : {1, 2, 7, 8, 64, 256, 1000}) {
    for (int64_t m = 1; m <= 300000; m = m * 3 + 1) {
      const size_t t = ops::choose_grouped_tile(m, g);
      EXPECT_EQ(K::kGroupedGemmTiles[t].bm, expected_bm(m, g)) << m << " rows, " << g << " groups";
      ++checked;
    }
  }
  EXPECT_GT(checked, 60);
}

TEST(GroupedGemmPlan, ForwardAndDgradLaunches) {
  struct Case {
    int64_t m, n, k, g;
    bool transpose_w;
    DType t;
    bool aligned;
  };
  for (const Case& c : {Case{32768, 4096, 7168, 256, false, DType::kBF16, true},
                        Case{32768, 7168, 4096, 256, true, DType::kBF16, true},
                        Case{1000, 130, 67, 10, false, DType::kF16, false},
                        Case{1000, 130, 64, 10, true, DType::kF16, false},  // N % 8 != 0
                        Case{500, 128, 64, 64, true, DType::kBF16, true}}) {
    ops::GroupedGemmParams p = forward(c.m, c.n, c.k, c.g, c.t);
    p.transpose_w = c.transpose_w;
    const int64_t cols = c.transpose_w ? c.k : c.n, depth = c.transpose_w ? c.n : c.k;
    p.x = Tensor::over(fake(0x10000), c.t, {c.m, depth});
    p.out = Tensor::over(fake(0x40000), DType::kF32, {c.m, cols});
    ASSERT_TRUE(ops::grouped_gemm_detail::check(p).ok());
    const auto d = ops::GroupedGemmPortableTier::supports(p, kSm90);
    ASSERT_TRUE(d.ok()) << d.text();
    K::Plan plan;
    plan.workspace_base = p.workspace.data;
    ops::GroupedGemmPortableTier::plan(p, kSm90, *d, plan);
    ASSERT_EQ(plan.count, 2u);
    const int bm = expected_bm(c.m, c.g);
    const int64_t capacity = (c.m + bm - 1) / bm + c.g;
    const auto& s = plan.steps[0].launch;
    EXPECT_EQ(s.kernel->symbol, "jax_aiter_grouped_gemm_schedule");
    EXPECT_EQ(s.grid, (K::Dim3{1, 1, 1}));
    EXPECT_EQ(s.block, (K::Dim3{256, 1, 1}));
    const auto sa = s.args.unpack<K::GroupedScheduleArgs>();
    EXPECT_EQ(sa.group_sizes, p.group_sizes.data);
    EXPECT_EQ(sa.schedule, p.workspace.data);
    EXPECT_EQ(sa.G, c.g);
    EXPECT_EQ(sa.M, c.m);
    EXPECT_EQ(sa.bm, bm);
    EXPECT_EQ(sa.capacity, capacity);
    const auto& l = plan.steps[1].launch;
    const std::string symbol = std::string("jax_aiter_grouped_gemm_") +
                               (c.t == DType::kF16 ? "f16" : "bf16") +
                               (c.transpose_w ? "_dgrad_" : "_fwd_") + "t" + std::to_string(bm) +
                               "x128_" + (c.aligned ? "aligned" : "any");
    EXPECT_EQ(l.kernel->symbol, symbol);
    EXPECT_EQ(l.grid, (K::Dim3{static_cast<uint32_t>((cols + 127) / 128),
                               static_cast<uint32_t>(capacity), 1}));
    EXPECT_EQ(l.block, (K::Dim3{256, 1, 1}));
    const auto a = l.args.unpack<K::GroupedGemmArgs>();
    EXPECT_EQ(a.x, p.x.data);
    EXPECT_EQ(a.w, p.w.data);
    EXPECT_EQ(a.x_scale, nullptr);
    EXPECT_EQ(a.schedule, sa.schedule);
    EXPECT_EQ(a.out, p.out.data);
    EXPECT_EQ(a.M, c.m);
    EXPECT_EQ(a.N, cols);
    EXPECT_EQ(a.K, depth);
    EXPECT_EQ(a.G, c.g);
    EXPECT_EQ(a.out_dtype, K::grouped_gemm::kOutF32);
    // The workspace Python allocates (before the tile is known) holds the plan's schedule.
    EXPECT_LE(plan.workspace.total, ops::GroupedGemm::workspace_bytes(p));
    EXPECT_EQ(plan.workspace.total, K::grouped_gemm::schedule_words(c.g, capacity) * 4);
  }
}

TEST(GroupedGemmPlan, UnalignedBasesTakeElementWiseLoads) {
  auto p = forward(300, 128, 64, 4);
  EXPECT_TRUE(ops::GroupedGemmPortableTier::supports(p, kSm90)->aligned);
  p.x.data = fake(0x10002);
  EXPECT_FALSE(ops::GroupedGemmPortableTier::supports(p, kSm90)->aligned);
  auto q = fp8_forward(300, 128, 128, 4);
  q.w.data = fake(0x20008);
  const auto d = ops::GroupedGemmPortableTier::supports(q, kSm90);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.text().find("16-byte aligned"), std::string::npos) << d.text();
}

TEST(GroupedGemmPlan, TooManyRowTilesIsRefused) {
  auto p = forward(60000 * 16, 64, 32, 20000);  // 48 rows a group: 16-row tiles, 60000 + 20000
  const auto d = ops::GroupedGemmPortableTier::supports(p, kSm90);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.text(), "80000 row tiles of 16 rows (M / BM + G) exceed the launch's 65535");
  EXPECT_TRUE(
      ops::GroupedGemmPortableTier::supports(forward(50000 * 16, 64, 32, 15000), kSm90).ok());
}

TEST(GroupedGemmPlan, Fp8ReadsTheArchsFormat) {
  const auto fn = fp8_forward(300, 256, 256, 4, DType::kF8E4M3FN);
  const auto nuz = fp8_forward(300, 256, 256, 4, DType::kF8E4M3FNUZ);
  EXPECT_TRUE(ops::GroupedGemmPortableTier::supports(fn, kSm90).ok());
  EXPECT_FALSE(ops::GroupedGemmPortableTier::supports(nuz, kSm90).ok());
  EXPECT_FALSE(ops::GroupedGemmPortableTier::supports(fn, kGfx942).ok());
  EXPECT_TRUE(ops::GroupedGemmPortableTier::supports(nuz, kGfx942).ok());
  EXPECT_TRUE(ops::GroupedGemmPortableTier::supports(nuz, kHost).ok());
  const auto d = ops::GroupedGemmPortableTier::supports(nuz, kGfx942);
  K::Plan plan;
  plan.workspace_base = nuz.workspace.data;
  ops::GroupedGemmPortableTier::plan(nuz, kGfx942, *d, plan);
  ASSERT_EQ(plan.count, 2u);
  EXPECT_EQ(plan.steps[1].launch.kernel->symbol, "jax_aiter_grouped_gemm_fp8_t64x128");
  const auto a = plan.steps[1].launch.args.unpack<K::GroupedGemmArgs>();
  EXPECT_EQ(a.x_scale, nuz.x_scale->data);
  EXPECT_EQ(a.w_scale, nuz.w_scale->data);
  EXPECT_EQ(a.fnuz, 1);
  EXPECT_EQ(plan.steps[1].launch.grid, (K::Dim3{2, (300 + 63) / 64 + 4, 1}));
}

TEST(GroupedGemmPlan, WgradLaunches) {
  for (auto [n, k, aligned] : {std::tuple{4096, 7168, true}, {130, 64, false}, {128, 67, false}}) {
    auto p = wgrad(1000, n, k, 8);
    const auto d = ops::GroupedWgradPortableTier::supports(p, kSm90);
    ASSERT_TRUE(d.ok());
    K::Plan plan;
    plan.workspace_base = p.workspace.data;
    ops::GroupedWgradPortableTier::plan(p, kSm90, plan);
    ASSERT_EQ(plan.count, 2u);
    const auto sa = plan.steps[0].launch.args.unpack<K::GroupedScheduleArgs>();
    EXPECT_EQ(sa.capacity, 0);
    EXPECT_EQ(sa.G, 8);
    const auto& l = plan.steps[1].launch;
    EXPECT_EQ(l.kernel->symbol, std::string("jax_aiter_grouped_gemm_bf16_wgrad_t128x128_") +
                                    (aligned ? "aligned" : "any"));
    EXPECT_EQ(l.grid, (K::Dim3{static_cast<uint32_t>((k + 127) / 128),
                               static_cast<uint32_t>((n + 127) / 128), 8}));
    const auto a = l.args.unpack<K::GroupedWgradArgs>();
    EXPECT_EQ(a.schedule, p.workspace.data);
    EXPECT_EQ(a.dw, p.dw.data);
    EXPECT_EQ(a.N, n);
    EXPECT_EQ(a.K, k);
    EXPECT_EQ(a.out_dtype, K::grouped_gemm::kOutF32);
    EXPECT_EQ(plan.workspace.total, ops::GroupedGemmWgrad::workspace_bytes(p));
  }
}

// ---- the schedule -----------------------------------------------------------------------------

// The schedule twin on the bytes a plan would pack, against tiles cut here: every row of [0, M)
// labelled with its part (the groups by the clamping rule, then the tail), runs of one label cut
// every bm rows.
TEST(GroupedGemmSchedule, TilesCoverTheRowsInOrder) {
  uint64_t state = 12345;
  auto next = [&](int64_t lo, int64_t hi) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return lo + static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(hi - lo + 1));
  };
  int cases = 0;
  for (int64_t g : {1, 3, 8, 64, 255, 256, 257, 600}) {
    for (int64_t m : {1, 17, 128, 1000, 4097}) {
      for (int bm : {16, 64, 128}) {
        std::vector<int32_t> sizes(g);
        for (auto& s : sizes) {
          const int64_t kind = next(0, 9);
          s = static_cast<int32_t>(kind == 0   ? -next(1, 50)    // negative: 0 rows
                                   : kind == 1 ? 0               // empty
                                   : kind == 2 ? next(m, 3 * m)  // past M
                                               : next(0, 2 * m / g + 2));
        }
        std::vector<int32_t> label(m, static_cast<int32_t>(g));  // the tail unless claimed
        int64_t row = 0;
        for (int64_t i = 0; i < g; ++i) {
          for (int64_t r = 0; r < sizes[i] && row < m; ++r) label[row++] = static_cast<int32_t>(i);
        }
        std::vector<std::array<int32_t, 3>> want;  // {part, first row, rows}
        for (int64_t r = 0; r < m;) {
          int64_t end = r;
          while (end < m && label[end] == label[r] && end - r < bm) ++end;
          want.push_back({label[r], static_cast<int32_t>(r), static_cast<int32_t>(end - r)});
          r = end;
        }
        const int64_t capacity = K::grouped_gemm::tile_capacity(m, g, bm);
        ASSERT_LE(static_cast<int64_t>(want.size()), capacity) << "the capacity bound";
        std::vector<int32_t> schedule(K::grouped_gemm::schedule_words(g, capacity), -7);
        const K::GroupedScheduleArgs args{sizes.data(),
                                          schedule.data(),
                                          static_cast<int32_t>(g),
                                          static_cast<int32_t>(m),
                                          bm,
                                          static_cast<int32_t>(capacity)};
        K::KernelArgs packed;
        packed.set(args);
        ja::host_twins::grouped_gemm_schedule(packed, {1, 1, 1}, {256, 1, 1});
        ASSERT_EQ(schedule[0], static_cast<int32_t>(want.size()));
        const int32_t* tiles = schedule.data() + K::grouped_gemm::tiles_at(g);
        for (size_t t = 0; t < want.size(); ++t) {
          ASSERT_EQ(tiles[4 * t], want[t][0]) << "tile " << t;
          ASSERT_EQ(tiles[4 * t + 1], want[t][1]) << "tile " << t;
          ASSERT_EQ(tiles[4 * t + 2], want[t][2]) << "tile " << t;
        }
        const int32_t* offsets = schedule.data() + K::grouped_gemm::offsets_at();
        EXPECT_EQ(offsets[g + 1], m);
        EXPECT_EQ(schedule[1], offsets[g]);
        for (int64_t i = 0; i < g; ++i) {
          EXPECT_EQ(std::count(label.begin(), label.end(), i), offsets[i + 1] - offsets[i]);
        }
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 8 * 5 * 3);
}
