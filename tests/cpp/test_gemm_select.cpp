// The ASM tier's choice of AITER BF16 GEMM row and split (ops/gemm_asm.hpp) over a grid of shapes
// per arch, against the rule written again here independently: the rows transcribed from AITER's
// CSVs (not from our table), every candidate scored and the best found by sorting on the stated
// key (CU rounds, idle CUs, oob rows, efficiency, table order). Plus AITER's own choices for the
// shapes ABI-AND-RULES.md lists, where its hash order does not decide.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "jax_aiter/ops/gemm_asm.hpp"

#include "gemm_select_testing.hpp"

namespace {

namespace ja = jax_aiter;
using ja::Arch;
using namespace ja::gemm_testing;

// Non-preshuffled rows of hsa/<arch>/bf16gemm/bf16gemm_fp32bf16.csv, in CSV order (gfx950's adds
// bf16gemm_bf16_tn_256x256 first): name, tileM, tileN, splitK, bias, archs.
struct CsvRow {
  std::string_view name;
  int tm, tn;
  bool split_k, bias, gfx942, gfx950;
};
const std::vector<CsvRow> kCsv = {
    {"bf16gemm_bf16_tn_256x256", 256, 256, false, false, false, true},
    {"bf16gemm_fp32bf16_tn_32x64_pf3_splitk", 32, 64, false, true, true, true},
    {"bf16gemm_fp32bf16_tn_48x64_pf3_splitk", 48, 64, false, true, true, true},
    {"bf16gemm_fp32bf16_tn_64x64_pf3_splitk", 64, 64, false, true, true, true},
    {"bf16gemm_fp32bf16_tn_96x64_pf3_splitk", 96, 64, false, true, true, true},
    {"bf16gemm_fp32bf16_tn_96x64_splitk_clean", 96, 64, true, true, true, true},
    {"bf16gemm_fp32bf16_tn_32x64_splitk_clean", 32, 64, true, true, true, true},
    {"bf16gemm_fp32bf16_tn_48x64_splitk_clean", 48, 64, true, true, true, true},
    {"bf16gemm_fp32bf16_tn_64x64_splitk_clean", 64, 64, true, true, true, true},
    {"bf16gemm_fp32bf16_tn_80x64_splitk_clean", 80, 64, true, true, true, true},
};

// The rule, with every candidate scored and the minimum taken by key.
Expected reference(int64_t m, int64_t n, int64_t k, Arch arch, int cus, bool bias) {
  if (k % 64 != 0) return {};
  using Key = std::tuple<int64_t, int64_t, int64_t, double, size_t>;
  std::vector<std::pair<Key, Expected>> candidates;
  for (size_t i = 0; i < kCsv.size(); ++i) {
    const CsvRow& r = kCsv[i];
    if (!(arch == Arch::kGfx942 ? r.gfx942 : r.gfx950)) continue;
    if (n % r.tn != 0 || (bias && !r.bias)) continue;
    const int64_t tiles = (m + r.tm - 1) / r.tm * (n / r.tn);
    int64_t split = 1;
    if (r.split_k && k / 64 >= 2) {
      split = std::max<int64_t>(2, std::min({int64_t{cus} / tiles, int64_t{16}, k / 64}));
    }
    if (split > 1 && tiles > 1024) continue;
    const int64_t work = tiles * split;
    const int64_t rounds = (work + cus - 1) / cus;
    const int64_t idle = rounds * cus - work;
    const int64_t oob = m % r.tm == 0 ? 0 : r.tm - m % r.tm;
    const double eff = double(r.tm) * r.tn / (r.tm + r.tn);
    candidates.push_back({Key{rounds, idle, oob, -eff, i}, {true, std::string(r.name), split}});
  }
  if (candidates.empty()) return {};
  return std::min_element(candidates.begin(), candidates.end(),
                          [](const auto& a, const auto& b) { return a.first < b.first; })
      ->second;
}

using Bf16 = ja::ops::AiterBf16Gemm;
using Choice = ja::ops::AiterChoice<Bf16::Row>;

ja::ops::AiterQuery bf16_query(int64_t m, int64_t n, int64_t k, Arch arch, int cus,
                               bool bias = false, std::string_view kernel = "",
                               int64_t splitk = -1) {
  ja::ops::AiterQuery q = ja::gemm_testing::query(m, n, k, arch, cus, kernel, splitk);
  q.bias = bias;
  return q;
}

Expected ours(int64_t m, int64_t n, int64_t k, Arch arch, int cus, bool bias) {
  Choice c;
  const ja::Verdict v = select_row<Bf16>(bf16_query(m, n, k, arch, cus, bias), &c);
  if (!v.ok()) return {};
  return {true, std::string(ja::kernels::short_name(*c.row)), c.split};
}

class SelectionGrid : public ::testing::TestWithParam<std::tuple<Arch, int>> {};

TEST_P(SelectionGrid, MatchesTheIndependentRule) {
  const auto [arch, cus] = GetParam();
  const std::vector<int64_t> ms = {1,   2,   7,    16,   31,   32,   33,   47,   48,   63,  64,
                                   65,  79,  80,   95,   96,   100,  128,  200,  255,  256, 257,
                                   500, 777, 1024, 1500, 2048, 3000, 4096, 8192, 16384};
  const std::vector<int64_t> ns = {64,   128,  192,  256,  320,  512,  640,  768, 1024, 1280,
                                   1536, 2048, 2560, 3072, 4096, 5120, 8192, 100, 1000, 16384};
  const std::vector<int64_t> ks = {64, 128, 192, 320, 1024, 2048, 4096, 8192, 100, 28672};
  GridTally t;
  for (bool bias : {false, true}) {
    ASSERT_TRUE(matches_on_grid(
        ms, ns, ks,
        [&](int64_t m, int64_t n, int64_t k) { return reference(m, n, k, arch, cus, bias); },
        [&](int64_t m, int64_t n, int64_t k) { return ours(m, n, k, arch, cus, bias); }, t))
        << "bias " << bias;
  }
  const auto [checked, chosen, split] = t;
  EXPECT_GE(checked, 5000);
  // The grid exercises both outcomes and both kinds of rows.
  EXPECT_GT(chosen, checked / 2);
  EXPECT_GT(split, chosen / 10);
  std::printf("%s (%d CUs): %d shapes checked, %d with a row, %d of them split\n",
              std::string(name(arch)).c_str(), cus, checked, chosen, split);
}

INSTANTIATE_TEST_SUITE_P(Archs, SelectionGrid, grid_archs());

// AITER's own choices (ABI-AND-RULES.md section 4.1), where they do not depend on its hash order.
TEST(Selection, AgreesWithAiterWhereItsOrderDoesNotMatter) {
  struct Case {
    Arch arch;
    int cus;
    int64_t m, n, k;
    std::string_view row;
    int split;
  };
  const Case cases[] = {
      {Arch::kGfx942, 304, 1, 4096, 4096, "bf16gemm_fp32bf16_tn_32x64_splitk_clean", 4},
      {Arch::kGfx942, 304, 128, 8192, 8192, "bf16gemm_fp32bf16_tn_64x64_pf3_splitk", 1},
      {Arch::kGfx942, 304, 4096, 4096, 4096, "bf16gemm_fp32bf16_tn_96x64_pf3_splitk", 1},
      {Arch::kGfx950, 256, 1, 4096, 4096, "bf16gemm_fp32bf16_tn_32x64_splitk_clean", 4},
      {Arch::kGfx950, 256, 1024, 4096, 4096, "bf16gemm_bf16_tn_256x256", 1},
      {Arch::kGfx950, 256, 256, 1280, 8192, "bf16gemm_fp32bf16_tn_64x64_splitk_clean", 3},
  };
  for (const Case& c : cases) {
    const Expected got = ours(c.m, c.n, c.k, c.arch, c.cus, false);
    EXPECT_EQ(got.name, c.row) << c.m << "x" << c.n << "x" << c.k;
    EXPECT_EQ(got.split, c.split) << c.m << "x" << c.n << "x" << c.k;
  }
}

// Where AITER's hash order decides, ours is the stated key (docs/ops/gemm.md says why).
TEST(Selection, OrderSensitiveShapesFollowTheStatedKey) {
  // gfx942 256x1280x8192: AITER took 64x64_pf3 split 1 (80 blocks on 304 CUs: its later row had
  // less oob); fewer idle CUs first gives 96x64_splitk_clean split 5 (300 blocks).
  Expected a = ours(256, 1280, 8192, Arch::kGfx942, 304, false);
  EXPECT_EQ(a.name, "bf16gemm_fp32bf16_tn_96x64_splitk_clean");
  EXPECT_EQ(a.split, 5);
  // gfx950 100x768x2048: AITER took 64x64_splitk_clean split 10 (240 blocks); ours 48x64 split 7
  // (252 blocks on 256 CUs).
  Expected b = ours(100, 768, 2048, Arch::kGfx950, 256, false);
  EXPECT_EQ(b.name, "bf16gemm_fp32bf16_tn_48x64_splitk_clean");
  EXPECT_EQ(b.split, 7);
}

TEST(Selection, ForcedKernelAndSplit) {
  Choice c;
  auto select = [&](std::string_view kernel, int64_t splitk, int64_t m = 64, int64_t n = 4096,
                    int64_t k = 4096, bool bias = false) {
    return select_row<Bf16>(bf16_query(m, n, k, Arch::kGfx942, 304, bias, kernel, splitk), &c);
  };
  // By short name or by AITER's symbol, as its tuned configs name it.
  ASSERT_TRUE(select("bf16gemm_fp32bf16_tn_80x64_splitk_clean", 3).ok());
  EXPECT_EQ(c.row->tile_m, 80);
  EXPECT_EQ(c.split, 3);
  ASSERT_TRUE(select("_ZN5aiter37bf16gemm_fp32bf16_tn_48x64_pf3_splitkE", -1).ok());
  EXPECT_EQ(c.row->tile_m, 48);
  EXPECT_EQ(c.split, 1);
  // A forced split is clamped to 16 and to K/64.
  ASSERT_TRUE(select("bf16gemm_fp32bf16_tn_32x64_splitk_clean", 16, 1, 64, 192).ok());
  EXPECT_EQ(c.split, 3);
  // AITER's checks: a splitk_clean row needs a split above 1, the others exactly 1.
  EXPECT_FALSE(select("bf16gemm_fp32bf16_tn_32x64_splitk_clean", 1).ok());
  EXPECT_FALSE(select("bf16gemm_fp32bf16_tn_32x64_pf3_splitk", 2).ok());
  EXPECT_FALSE(select("bf16gemm_bf16_tn_256x256", -1).ok()) << "gfx950 only";
  EXPECT_FALSE(select("bf16gemm_fp32bf16_tn_64x64_pf3_splitk", -1, 64, 100).ok()) << "N % 64";
  EXPECT_FALSE(select("no_such_kernel", -1).ok());
  // A split grid may not outgrow the semaphore's 1024 counters.
  const ja::Verdict v = select("bf16gemm_fp32bf16_tn_32x64_splitk_clean", 2, 4096, 8192);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.text().find("1024"), std::string::npos) << v.text();
  // A split without a kernel keeps only rows that can run it.
  ASSERT_TRUE(select("", 4, 64, 4096, 4096).ok());
  EXPECT_TRUE(c.row->split_k);
  EXPECT_EQ(c.split, 4);
  ASSERT_TRUE(select("", 1, 64, 4096, 4096).ok());
  EXPECT_FALSE(c.row->split_k);
}

TEST(Selection, Declines) {
  Choice c;
  const auto k = select_row<Bf16>(bf16_query(64, 4096, 100, Arch::kGfx942, 304), &c);
  EXPECT_EQ(k.text(), "K = 100 is not a multiple of 64");
  EXPECT_FALSE(select_row<Bf16>(bf16_query(64, 100, 4096, Arch::kGfx942, 304), &c).ok());
  const auto sm90 = select_row<Bf16>(bf16_query(64, 4096, 4096, Arch::kSm90, 132), &c);
  EXPECT_NE(sm90.text().find("asm_arch"), std::string::npos) << sm90.text();
  // 256x256 takes no bias: with one, gfx950 picks another row where it would pick it.
  ASSERT_TRUE(select_row<Bf16>(bf16_query(1024, 4096, 4096, Arch::kGfx950, 256), &c).ok());
  EXPECT_EQ(ja::kernels::short_name(*c.row), "bf16gemm_bf16_tn_256x256");
  ASSERT_TRUE(select_row<Bf16>(bf16_query(1024, 4096, 4096, Arch::kGfx950, 256, true), &c).ok());
  EXPECT_NE(ja::kernels::short_name(*c.row), "bf16gemm_bf16_tn_256x256");
}

}  // namespace
