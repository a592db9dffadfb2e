// The FP4 ASM tier's choice of AITER f4gemm row and split (ops/gemm_fp4_asm.hpp) over a grid of
// shapes, against the rule written again here independently: the rows transcribed from AITER's
// CSV (hsa/gfx950/f4gemm/f4gemm_bf16_per1x32Fp4.csv, not from our table), every (row, split) pair
// scored and the best found by sorting on the stated key (CU rounds, idle CUs, efficiency, table
// order, split). Plus the forced-kernel and forced-split paths and the declines.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "jax_aiter/ops/gemm_fp4_asm.hpp"

#include "gemm_select_testing.hpp"

namespace {

namespace ja = jax_aiter;
using ja::Arch;
using namespace ja::gemm_testing;

struct CsvRow {
  std::string_view name;
  int tm, tn;
  bool split_k, bpre;
};
// clang-format off
const std::vector<CsvRow> kCsv = {
    {"f4gemm_bf16_per1x32Fp4_noBpreShuffle_256x256", 256, 256, false, false},
    {"f4gemm_bf16_per1x32Fp4_BpreShuffle_256x256", 256, 256, true, true},
    {"f4gemm_bf16_per1x32Fp4_BpreShuffle_128x512", 128, 512, true, true},
    {"f4gemm_bf16_per1x32Fp4_BpreShuffle_192x256", 192, 256, false, true},
    {"f4gemm_bf16_per1x32Fp4_BpreShuffle_224x256", 224, 256, false, true},
    {"f4gemm_bf16_per1x32Fp4_BpreShuffle_128x128", 128, 128, false, true},
    {"f4gemm_bf16_per1x32Fp4_BpreShuffle_128x256", 128, 256, false, true},
    {"f4gemm_bf16_per1x32Fp4_BpreShuffle_128x384", 128, 384, false, true},
    {"f4gemm_bf16_per1x32Fp4_BpreShuffle_160x128", 160, 128, false, true},
    {"f4gemm_bf16_per1x32Fp4_BpreShuffle_160x256", 160, 256, false, true},
    {"f4gemm_bf16_per1x32Fp4_BpreShuffle_160x384", 160, 384, false, true},
    {"f4gemm_bf16_per1x32Fp4_BpreShuffle_192x128", 192, 128, false, true},
    {"f4gemm_bf16_per1x32Fp4_BpreShuffle_224x128", 224, 128, false, true},
    {"f4gemm_bf16_per1x32Fp4_BpreShuffle_256x128", 256, 128, false, true},
    {"f4gemm_bf16_per1x32Fp4_BpreShuffle_32x1024", 32, 1024, false, true},
    {"f4gemm_bf16_per1x32Fp4_BpreShuffle_32x128", 32, 128, false, true},
    {"f4gemm_bf16_per1x32Fp4_BpreShuffle_32x256", 32, 256, false, true},
    {"f4gemm_bf16_per1x32Fp4_BpreShuffle_32x384", 32, 384, false, true},
    {"f4gemm_bf16_per1x32Fp4_BpreShuffle_32x512", 32, 512, false, true},
    {"f4gemm_bf16_per1x32Fp4_BpreShuffle_32x640", 32, 640, false, true},
    {"f4gemm_bf16_per1x32Fp4_BpreShuffle_32x768", 32, 768, false, true},
    {"f4gemm_bf16_per1x32Fp4_BpreShuffle_32x896", 32, 896, false, true},
    {"f4gemm_bf16_per1x32Fp4_BpreShuffle_64x1024", 64, 1024, false, true},
    {"f4gemm_bf16_per1x32Fp4_BpreShuffle_64x128", 64, 128, false, true},
    {"f4gemm_bf16_per1x32Fp4_BpreShuffle_64x256", 64, 256, false, true},
    {"f4gemm_bf16_per1x32Fp4_BpreShuffle_64x384", 64, 384, false, true},
    {"f4gemm_bf16_per1x32Fp4_BpreShuffle_64x512", 64, 512, false, true},
    {"f4gemm_bf16_per1x32Fp4_BpreShuffle_64x640", 64, 640, false, true},
    {"f4gemm_bf16_per1x32Fp4_BpreShuffle_64x768", 64, 768, false, true},
    {"f4gemm_bf16_per1x32Fp4_BpreShuffle_64x896", 64, 896, false, true},
    {"f4gemm_bf16_per1x32Fp4_BpreShuffle_96x128", 96, 128, false, true},
    {"f4gemm_bf16_per1x32Fp4_BpreShuffle_96x256", 96, 256, false, true},
    {"f4gemm_bf16_per1x32Fp4_BpreShuffle_96x384", 96, 384, false, true},
    {"f4gemm_bf16_per1x32Fp4_BpreShuffle_96x512", 96, 512, false, true},
    {"f4gemm_bf16_per1x32Fp4_BpreShuffle_96x640", 96, 640, false, true},
};
// clang-format on

// The rule, with every candidate scored and the minimum taken by key.
Expected reference(int64_t m, int64_t n, int64_t k, bool shuffled, int cus) {
  if (k % 256 != 0 || m % 32 != 0) return {};
  using Key = std::tuple<int64_t, int64_t, double, size_t, int64_t>;
  std::vector<std::pair<Key, Expected>> candidates;
  for (size_t i = 0; i < kCsv.size(); ++i) {
    const CsvRow& r = kCsv[i];
    if (r.bpre != shuffled) continue;
    if (r.tm == 128 && r.tn == 512 && n % 512 != 0) continue;
    for (int64_t s : {1, 2, 4, 8, 16}) {
      if (s > 1 && !r.split_k) continue;
      if (k % (256 * s) != 0) continue;
      const int64_t work = (m + r.tm - 1) / r.tm * ((n + r.tn - 1) / r.tn) * s;
      const int64_t rounds = (work + cus - 1) / cus;
      const double eff = double(r.tm) * r.tn / (r.tm + r.tn);
      candidates.push_back(
          {Key{rounds, rounds * cus - work, -eff, i, s}, {true, std::string(r.name), s}});
    }
  }
  if (candidates.empty()) return {};
  return std::min_element(candidates.begin(), candidates.end(),
                          [](const auto& a, const auto& b) { return a.first < b.first; })
      ->second;
}

using Family = ja::ops::AiterF4Gemm;
using Choice = ja::ops::AiterChoice<Family::Row>;

ja::ops::AiterQuery f4_query(int64_t m, int64_t n, int64_t k, bool shuffled = true, int cus = 256,
                             std::string_view kernel = "", int64_t splitk = -1,
                             Arch arch = Arch::kGfx950) {
  ja::ops::AiterQuery q = query(m, n, k, arch, cus, kernel, splitk);
  q.b_shuffled = shuffled;
  return q;
}

// log2 of a choice's split (AITER's log2_k_split).
int log2_split(const Choice& c) { return Family::log2_of(c.split); }

Expected ours(int64_t m, int64_t n, int64_t k, bool shuffled, int cus) {
  Choice c;
  const ja::Verdict v = select_row<Family>(f4_query(m, n, k, shuffled, cus), &c);
  if (!v.ok()) return {};
  return {true, std::string(ja::kernels::short_name(*c.row)), c.split};
}

class F4SelectionGrid : public ::testing::TestWithParam<std::tuple<bool, int>> {};

TEST_P(F4SelectionGrid, MatchesTheIndependentRule) {
  const auto [shuffled, cus] = GetParam();
  const std::vector<int64_t> ms = {32,   64,   96,    128, 160, 192, 224,  256,  288,
                                   320,  384,  480,   512, 640, 768, 1024, 1536, 2048,
                                   4096, 8192, 16384, 1,   31,  33,  100};
  const std::vector<int64_t> ns = {16,   128,  256,  384,  512,  640,  768,  1024, 1280,  1536,
                                   2048, 3072, 4096, 5120, 7168, 8192, 1008, 112,  16384, 28672};
  const std::vector<int64_t> ks = {256,  512,  768,  1024,  1536, 2048,
                                   4096, 7168, 8192, 28672, 320,  64};
  GridTally t;
  ASSERT_TRUE(matches_on_grid(
      ms, ns, ks,
      [&](int64_t m, int64_t n, int64_t k) { return reference(m, n, k, shuffled, cus); },
      [&](int64_t m, int64_t n, int64_t k) { return ours(m, n, k, shuffled, cus); }, t));
  const auto [checked, chosen, split] = t;
  EXPECT_GE(checked, 5000);
  EXPECT_GT(chosen, checked / 2);
  if (shuffled) {
    EXPECT_GT(split, chosen / 20);
    EXPECT_LT(split, chosen);
  } else {
    EXPECT_EQ(split, 0);  // the one plain-B row may not split
  }
  std::printf("gfx950 (%d CUs, B %s): %d shapes checked, %d with a row, %d of them split\n", cus,
              shuffled ? "shuffled" : "plain", checked, chosen, split);
}

INSTANTIATE_TEST_SUITE_P(Layouts, F4SelectionGrid,
                         ::testing::Values(std::tuple{true, 256}, std::tuple{true, 80},
                                           std::tuple{false, 256}));

// Worked examples of the stated rule.
TEST(F4Selection, WorkedExamples) {
  // Decode (M padded to 32), N = K = 4096 on 256 CUs: 32x128 gives 32 tiles; 8 splits of 512 fill
  // all 256 CUs in one round (no idle CU), but only 256x256 and 128x512 may split: 256x256 has 16
  // tiles x 16 splits = 256, idle 0, efficiency 128 beats every other zero-idle pair.
  Expected a = ours(32, 4096, 4096, true, 256);
  EXPECT_EQ(a.name, "f4gemm_bf16_per1x32Fp4_BpreShuffle_256x256");
  EXPECT_EQ(a.split, 16);
  // A big GEMM runs unsplit.
  Expected b = ours(8192, 8192, 8192, true, 256);
  EXPECT_EQ(b.split, 1);
  // A plain B has one row.
  Expected c = ours(4096, 4096, 4096, false, 256);
  EXPECT_EQ(c.name, "f4gemm_bf16_per1x32Fp4_noBpreShuffle_256x256");
}

TEST(F4Selection, ForcedKernelAndSplit) {
  Choice c;
  auto select = [&](std::string_view kernel, int64_t splitk, int64_t m = 64, int64_t n = 4096,
                    int64_t k = 4096, bool shuffled = true) {
    return select_row<Family>(f4_query(m, n, k, shuffled, 256, kernel, splitk), &c);
  };
  ASSERT_TRUE(select("f4gemm_bf16_per1x32Fp4_BpreShuffle_96x640", -1).ok());
  EXPECT_EQ(c.row->tile_m, 96);
  EXPECT_EQ(log2_split(c), 0);
  ASSERT_TRUE(select("_ZN5aiter42f4gemm_bf16_per1x32Fp4_BpreShuffle_128x512E", 4).ok());
  EXPECT_EQ(c.row->tile_n, 512);
  EXPECT_EQ(log2_split(c), 2);  // the forced split is carried into the arguments
  EXPECT_FALSE(select("f4gemm_bf16_per1x32Fp4_BpreShuffle_96x640", 2).ok()) << "cannot split";
  EXPECT_FALSE(select("f4gemm_bf16_per1x32Fp4_BpreShuffle_128x512", -1, 64, 4352).ok()) << "N%512";
  EXPECT_FALSE(select("f4gemm_bf16_per1x32Fp4_noBpreShuffle_256x256", -1).ok()) << "b shuffled";
  EXPECT_TRUE(
      select("f4gemm_bf16_per1x32Fp4_noBpreShuffle_256x256", -1, 64, 4096, 4096, false).ok());
  EXPECT_FALSE(
      select("f4gemm_bf16_per1x32Fp4_BpreShuffle_256x256", -1, 64, 4096, 4096, false).ok());
  // A split must cut K into equal 256-multiples: 4096 / 32 = 128 is not.
  EXPECT_FALSE(select("f4gemm_bf16_per1x32Fp4_BpreShuffle_256x256", 32).ok());
  EXPECT_FALSE(select("", 16, 64, 4096, 2048).ok());
  ASSERT_TRUE(select("", 8, 64, 4096, 2048).ok());
  EXPECT_EQ(log2_split(c), 3);
  EXPECT_TRUE(c.row->split_k);
  ASSERT_TRUE(select("", 0).ok());
  EXPECT_EQ(log2_split(c), 0);
  EXPECT_FALSE(select("no_such_kernel", -1).ok());
}

TEST(F4Selection, Declines) {
  Choice c;
  EXPECT_EQ(select_row<Family>(f4_query(64, 4096, 4032), &c).text(),
            "K = 4032 is not a multiple of 256");
  EXPECT_NE(select_row<Family>(f4_query(40, 4096, 4096), &c).text().find("32-row"),
            std::string::npos);
  for (Arch a : {Arch::kGfx942, Arch::kSm90}) {
    const auto v = select_row<Family>(f4_query(64, 4096, 4096, true, 256, "", -1, a), &c);
    EXPECT_NE(v.text().find("gfx950"), std::string::npos) << v.text();
  }
}

}  // namespace
