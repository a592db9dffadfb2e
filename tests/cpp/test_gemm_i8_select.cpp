// The INT8 ASM tier's choice of AITER i8gemm row and split (ops/gemm_i8_asm.hpp) over a grid of
// shapes per arch, against the rule written again here independently: the rows transcribed from
// AITER's CSVs (not from our table), every (row, split) pair scored and the best found by sorting
// on the stated key (CU rounds, idle CUs, efficiency, table order, split). Plus the forced-kernel
// and forced-split paths, and where ours and AITER's behaviour differ on purpose.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "jax_aiter/ops/gemm_i8_asm.hpp"

#include "gemm_select_testing.hpp"

namespace {

namespace ja = jax_aiter;
using ja::Arch;
using namespace ja::gemm_testing;

// hsa/<arch>/i8gemm/i8gemm_bf16_perTokenI8.csv rows (tile_m, tile_n, splitK), ordered by tile_m
// (gfx950's CSV order; gfx942's adds 112x256 with splitK 0).
struct CsvRow {
  std::string_view name;
  int tm, tn;
  bool split_k, gfx942, gfx950;
};
const std::vector<CsvRow> kCsv = {
    {"I8gemm_bf16_perTokenI8_BpreShuffle_112x256", 112, 256, false, true, false},
    {"I8gemm_bf16_perTokenI8_BpreShuffle_16x128", 16, 128, true, true, true},
    {"I8gemm_bf16_perTokenI8_BpreShuffle_32x128", 32, 128, true, true, true},
    {"I8gemm_bf16_perTokenI8_BpreShuffle_48x128", 48, 128, true, true, true},
    {"I8gemm_bf16_perTokenI8_BpreShuffle_64x128", 64, 128, true, true, true},
    {"I8gemm_bf16_perTokenI8_BpreShuffle_80x128", 80, 128, true, true, true},
    {"I8gemm_bf16_perTokenI8_BpreShuffle_96x128", 96, 128, true, true, true},
    {"I8gemm_bf16_perTokenI8_BpreShuffle_128x128", 128, 128, true, true, true},
    {"I8gemm_bf16_perTokenI8_BpreShuffle_160x128", 160, 128, true, true, true},
};

// The rule, with every candidate scored and the minimum taken by key.
Expected reference(int64_t m, int64_t n, int64_t k, Arch arch, int cus) {
  if (k % 128 != 0) return {};
  using Key = std::tuple<int64_t, int64_t, double, size_t, int64_t>;
  std::vector<std::pair<Key, Expected>> candidates;
  for (size_t i = 0; i < kCsv.size(); ++i) {
    const CsvRow& r = kCsv[i];
    if (!(arch == Arch::kGfx942 ? r.gfx942 : r.gfx950) || !r.split_k || n % r.tn != 0) continue;
    for (int64_t s = 1; s <= 16; ++s) {
      if (corrected(k, s) != s) continue;
      const int64_t work = (m + r.tm - 1) / r.tm * (n / r.tn) * s;
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

using Family = ja::ops::AiterI8Gemm;
using Choice = ja::ops::AiterChoice<Family::Row>;

Expected ours(int64_t m, int64_t n, int64_t k, Arch arch, int cus) {
  Choice c;
  const ja::Verdict v = select_row<Family>(query(m, n, k, arch, cus), &c);
  if (!v.ok()) return {};
  return {true, std::string(ja::kernels::short_name(*c.row)), c.split};
}

class I8SelectionGrid : public ::testing::TestWithParam<std::tuple<Arch, int>> {};

TEST_P(I8SelectionGrid, MatchesTheIndependentRule) {
  const auto [arch, cus] = GetParam();
  const std::vector<int64_t> ms = {1,   2,   7,    15,   16,   17,   31,   32,   33,   48,  63,
                                   64,  65,  80,   96,   100,  128,  160,  200,  255,  256, 257,
                                   500, 777, 1024, 1500, 2048, 3000, 4096, 8192, 16384};
  const std::vector<int64_t> ns = {16,   128,  256,  384,  512,  640,  768,  1024, 1280,  1536,
                                   2048, 3072, 4096, 5120, 7168, 8192, 1008, 112,  16384, 28672};
  const std::vector<int64_t> ks = {128, 256, 384, 640, 1024, 2048, 4096, 7168, 8192, 28672, 96};
  GridTally t;
  ASSERT_TRUE(matches_on_grid(
      ms, ns, ks, [&](int64_t m, int64_t n, int64_t k) { return reference(m, n, k, arch, cus); },
      [&](int64_t m, int64_t n, int64_t k) { return ours(m, n, k, arch, cus); }, t));
  const auto [checked, chosen, split] = t;
  EXPECT_GE(checked, 5000);
  EXPECT_GT(chosen, checked / 2);
  EXPECT_GT(split, chosen / 10);
  EXPECT_LT(split, chosen);
  std::printf("%s (%d CUs): %d shapes checked, %d with a row, %d of them split\n",
              std::string(name(arch)).c_str(), cus, checked, chosen, split);
}

INSTANTIATE_TEST_SUITE_P(Archs, I8SelectionGrid, grid_archs());

// Worked examples of the stated rule.
TEST(I8Selection, WorkedExamples) {
  // Decode: 32 column blocks of 128 on 304 CUs; splits 8 (K chunks of 512) fill 256 CUs in one
  // round with 48 idle, the fewest of the valid splits (9 and 10 correct to 8; 11 needs 2
  // rounds). Every 128-wide row has the same 32 tiles, so efficiency picks 160x128.
  Expected a = ours(1, 4096, 4096, Arch::kGfx942, 304);
  EXPECT_EQ(a.name, "I8gemm_bf16_perTokenI8_BpreShuffle_160x128");
  EXPECT_EQ(a.split, 8);
  // A big GEMM runs unsplit with the tile that leaves the fewest CUs idle in its last round.
  Expected b = ours(4096, 4096, 4096, Arch::kGfx950, 256);
  EXPECT_EQ(b.split, 1);
  EXPECT_EQ(b.name, "I8gemm_bf16_perTokenI8_BpreShuffle_128x128");  // 1024 tiles: 4 full rounds
}

TEST(I8Selection, ForcedKernelAndSplit) {
  Choice c;
  auto select = [&](std::string_view kernel, int64_t splitk, int64_t m = 64, int64_t n = 4096,
                    int64_t k = 4096, Arch arch = Arch::kGfx942) {
    return select_row<Family>(query(m, n, k, arch, 304, kernel, splitk), &c);
  };
  // By short name or by AITER's symbol; no split given: 1, as AITER's kernelName path.
  ASSERT_TRUE(select("I8gemm_bf16_perTokenI8_BpreShuffle_80x128", -1).ok());
  EXPECT_EQ(c.row->tile_m, 80);
  EXPECT_EQ(c.split, 1);
  ASSERT_TRUE(select("_ZN5aiter41I8gemm_bf16_perTokenI8_BpreShuffle_32x128E", 4).ok());
  EXPECT_EQ(c.row->tile_m, 32);
  EXPECT_EQ(c.split, 4);
  // 112x256 (gfx942 only) runs by name, unsplit; the heuristic never picks it.
  ASSERT_TRUE(select("I8gemm_bf16_perTokenI8_BpreShuffle_112x256", 0).ok());
  EXPECT_EQ(c.row->tile_n, 256);
  EXPECT_EQ(c.split, 1);
  EXPECT_TRUE(c.row->wide());
  EXPECT_FALSE(select("I8gemm_bf16_perTokenI8_BpreShuffle_112x256", 2).ok());
  EXPECT_FALSE(
      select("I8gemm_bf16_perTokenI8_BpreShuffle_112x256", -1, 64, 4096, 4096, Arch::kGfx950).ok());
  EXPECT_FALSE(select("I8gemm_bf16_perTokenI8_BpreShuffle_112x256", -1, 64, 4224).ok()) << "N%256";
  // A split must cut K into 128-multiples with none empty (AITER's explicit-split check).
  const ja::Verdict bad = select("I8gemm_bf16_perTokenI8_BpreShuffle_16x128", 9);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.text().find("chunks of 512"), std::string::npos) << bad.text();
  EXPECT_FALSE(select("", 9).ok());
  // A split without a kernel: every row that may split is scored at that split alone.
  ASSERT_TRUE(select("", 4).ok());
  EXPECT_EQ(c.split, 4);
  ASSERT_TRUE(select("", 0).ok());
  EXPECT_EQ(c.split, 1);
  EXPECT_FALSE(select("no_such_kernel", -1).ok());
}

TEST(I8Selection, Declines) {
  Choice c;
  const auto k = select_row<Family>(query(64, 4096, 4000, Arch::kGfx942, 304), &c);
  EXPECT_EQ(k.text(), "K = 4000 is not a multiple of 128");
  EXPECT_FALSE(select_row<Family>(query(64, 4112, 4096, Arch::kGfx942, 304), &c).ok());
  const auto sm90 = select_row<Family>(query(64, 4096, 4096, Arch::kSm90, 132), &c);
  EXPECT_NE(sm90.text().find("asm_arch"), std::string::npos) << sm90.text();
}

}  // namespace
