// The FP8 block-scale ASM tier's choice of AITER fp8gemm_blockscale row and split
// (ops/gemm_fp8bs_asm.hpp) over a grid of shapes per arch, against the rule written again here
// independently: the rows transcribed from AITER's CSVs (not from our table, and in the CSVs'
// order, so the table-order tie-break is checked by the sort key, not by a shared iteration),
// every (row, split) pair scored and the best found by sorting on the stated key (CU rounds, idle
// CUs, efficiency, tile_m, split). Plus the forced-kernel and forced-split paths, and where ours
// and AITER's behaviour differ on purpose.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "jax_aiter/ops/gemm_fp8bs_asm.hpp"
#include "jax_aiter/ops/gemm_fp8bs_portable.hpp"

#include "gemm_select_testing.hpp"

namespace {

namespace ja = jax_aiter;
using ja::Arch;
using namespace ja::gemm_testing;

// hsa/<arch>/fp8gemm_blockscale/fp8gemm_bf16_blockscale.csv rows (tile_m, tile_n), CSV order;
// both archs have all six, every one splitK = 1.
struct CsvRow {
  std::string_view name;
  int tm, tn;
};
const std::vector<CsvRow> kCsv = {
    {"fp8gemm_bf16_blockscale_BpreShuffle_128x128", 128, 128},
    {"fp8gemm_bf16_blockscale_BpreShuffle_32x128", 32, 128},
    {"fp8gemm_bf16_blockscale_BpreShuffle_48x128", 48, 128},
    {"fp8gemm_bf16_blockscale_BpreShuffle_64x128", 64, 128},
    {"fp8gemm_bf16_blockscale_BpreShuffle_80x128", 80, 128},
    {"fp8gemm_bf16_blockscale_BpreShuffle_96x128", 96, 128},
};

// The rule, with every candidate scored and the minimum taken by key. Ties after efficiency
// cannot happen between rows (distinct efficiencies); the stated order is ascending tile_m.
Expected reference(int64_t m, int64_t n, int64_t k, int cus) {
  if (k % 128 != 0 || n % 128 != 0) return {};
  using Key = std::tuple<int64_t, int64_t, double, int, int64_t>;
  std::vector<std::pair<Key, Expected>> candidates;
  for (const CsvRow& r : kCsv) {
    for (int64_t s = 1; s <= 16; ++s) {
      if (corrected(k, s) != s) continue;
      const int64_t work = (m + r.tm - 1) / r.tm * (n / r.tn) * s;
      const int64_t rounds = (work + cus - 1) / cus;
      const double eff = double(r.tm) * r.tn / (r.tm + r.tn);
      candidates.push_back(
          {Key{rounds, rounds * cus - work, -eff, r.tm, s}, {true, std::string(r.name), s}});
    }
  }
  if (candidates.empty()) return {};
  return std::min_element(candidates.begin(), candidates.end(),
                          [](const auto& a, const auto& b) { return a.first < b.first; })
      ->second;
}

using Family = ja::ops::AiterFp8Bs;
using Choice = ja::ops::AiterChoice<Family::Row>;

Expected ours(int64_t m, int64_t n, int64_t k, Arch arch, int cus) {
  Choice c;
  const ja::Verdict v = select_row<Family>(query(m, n, k, arch, cus), &c);
  if (!v.ok()) return {};
  return {true, std::string(ja::kernels::short_name(*c.row)), c.split};
}

class Fp8BsSelectionGrid : public ::testing::TestWithParam<std::tuple<Arch, int>> {};

TEST_P(Fp8BsSelectionGrid, MatchesTheIndependentRule) {
  const auto [arch, cus] = GetParam();
  const std::vector<int64_t> ms = {1,   2,   7,    15,   16,   17,   31,   32,   33,   48,  63,
                                   64,  65,  80,   96,   100,  128,  160,  200,  255,  256, 257,
                                   500, 777, 1024, 1500, 2048, 3000, 4096, 8192, 16384};
  const std::vector<int64_t> ns = {128,  256,  384,  512,  640,  768,  1024, 1280,  1536,  2048,
                                   2112, 3072, 4096, 5120, 7168, 8192, 1008, 16384, 28672, 24576};
  const std::vector<int64_t> ks = {128, 256, 384, 640, 1024, 2048, 4096, 7168, 8192, 28672, 96};
  GridTally t;
  ASSERT_TRUE(matches_on_grid(
      ms, ns, ks, [&](int64_t m, int64_t n, int64_t k) { return reference(m, n, k, cus); },
      [&](int64_t m, int64_t n, int64_t k) { return ours(m, n, k, arch, cus); }, t));
  const auto [checked, chosen, split] = t;
  EXPECT_GE(checked, 5000);
  EXPECT_GT(chosen, checked / 2);
  EXPECT_GT(split, chosen / 10);
  EXPECT_LT(split, chosen);
  std::printf("%s (%d CUs): %d shapes checked, %d with a row, %d of them split\n",
              std::string(name(arch)).c_str(), cus, checked, chosen, split);
}

INSTANTIATE_TEST_SUITE_P(Archs, Fp8BsSelectionGrid, grid_archs());

// Worked examples of the stated rule.
TEST(Fp8BsSelection, WorkedExamples) {
  // Decode: 32 column blocks of 128 on 304 CUs; split 8 (K chunks of 512) fills 256 CUs in one
  // round with 48 idle, the fewest of the valid splits. Every row has the same 32 tiles, so
  // efficiency picks 128x128. AITER's own heuristic would run split 1 (272 CUs idle).
  Expected a = ours(1, 4096, 4096, Arch::kGfx942, 304);
  EXPECT_EQ(a.name, "fp8gemm_bf16_blockscale_BpreShuffle_128x128");
  EXPECT_EQ(a.split, 8);
  // A big GEMM runs unsplit with the tile that leaves the fewest CUs idle in its last round.
  Expected b = ours(4096, 4096, 4096, Arch::kGfx950, 256);
  EXPECT_EQ(b.split, 1);
  EXPECT_EQ(b.name, "fp8gemm_bf16_blockscale_BpreShuffle_128x128");  // 1024 tiles: 4 full rounds
  // M 96, N 7168 (56 column blocks), K 2048 on 304 CUs: with tile M >= 96, 56 tiles; split 4
  // (chunks of 512) fills 224 CUs in one round, 80 idle (split 5 corrects to 4, 6 needs two
  // rounds); 48x128 with split 2 ties on rounds and idle CUs, and 128x128's efficiency wins.
  Expected c = ours(96, 7168, 2048, Arch::kGfx942, 304);
  EXPECT_EQ(c.name, "fp8gemm_bf16_blockscale_BpreShuffle_128x128");
  EXPECT_EQ(c.split, 4);
}

TEST(Fp8BsSelection, ForcedKernelAndSplit) {
  Choice c;
  auto select = [&](std::string_view kernel, int64_t splitk, int64_t m = 64, int64_t n = 4096,
                    int64_t k = 4096, Arch arch = Arch::kGfx942) {
    return select_row<Family>(query(m, n, k, arch, 304, kernel, splitk), &c);
  };
  // By short name or by AITER's symbol; no split given: 1, as AITER's kernelName path.
  ASSERT_TRUE(select("fp8gemm_bf16_blockscale_BpreShuffle_80x128", -1).ok());
  EXPECT_EQ(c.row->tile_m, 80);
  EXPECT_EQ(c.split, 1);
  ASSERT_TRUE(select("_ZN5aiter42fp8gemm_bf16_blockscale_BpreShuffle_32x128E", 4).ok());
  EXPECT_EQ(c.row->tile_m, 32);
  EXPECT_EQ(c.split, 4);
  ASSERT_TRUE(
      select("fp8gemm_bf16_blockscale_BpreShuffle_128x128", 0, 64, 4096, 4096, Arch::kGfx950).ok());
  EXPECT_EQ(c.split, 1);
  // A split must cut K into 128-multiples with none empty (AITER's explicit-split check).
  const ja::Verdict bad = select("fp8gemm_bf16_blockscale_BpreShuffle_32x128", 9);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.text().find("chunks of 512"), std::string::npos) << bad.text();
  EXPECT_FALSE(select("", 9).ok());
  // A split without a kernel: every row is scored at that split alone.
  ASSERT_TRUE(select("", 4).ok());
  EXPECT_EQ(c.split, 4);
  ASSERT_TRUE(select("", 0).ok());
  EXPECT_EQ(c.split, 1);
  EXPECT_FALSE(select("no_such_kernel", -1).ok());
  EXPECT_FALSE(select("I8gemm_bf16_perTokenI8_BpreShuffle_32x128", -1).ok()) << "other family";
}

TEST(Fp8BsSelection, Declines) {
  Choice c;
  const auto k = select_row<Family>(query(64, 4096, 4000, Arch::kGfx942, 304), &c);
  EXPECT_EQ(k.text(), "K = 4000 is not a multiple of 128");
  EXPECT_FALSE(select_row<Family>(query(64, 4112, 4096, Arch::kGfx942, 304), &c).ok());
  const auto sm90 = select_row<Family>(query(64, 4096, 4096, Arch::kSm90, 132), &c);
  EXPECT_NE(sm90.text().find("asm_arch"), std::string::npos) << sm90.text();
}

// The fp8 format each tier's supports() demands (ops/fp8_format.hpp): a plan for an arch takes that
// arch's format on every backend (an ASM plan's target is the planned arch, on any device; a
// portable plan's is the device's own).
TEST(Fp8BsSelection, FormatPerPlannedArch) {
  using ja::BackendKind;
  using ja::DType;
  ja::ops::GemmFp8BsParams p;
  p.a.dtype = DType::kF8E4M3FN;
  p.a.rank = 2;
  p.a.dims[0] = 64;
  p.a.dims[1] = 4096;
  p.b.rank = 2;
  p.b.dims[0] = 4096;
  p.b.dims[1] = 4096;
  using Asm = ja::ops::GemmFp8BsAsmTier;
  using Portable = ja::ops::GemmFp8BsPortableTier;
  // The ASM tier's targets: the arch it plans for, on each backend.
  for (BackendKind b : {BackendKind::kHip, BackendKind::kCuda, BackendKind::kHost}) {
    const ja::Target mi300{b, Arch::kGfx942, 304}, mi350{b, Arch::kGfx950, 256};
    p.a.dtype = DType::kF8E4M3FN;
    EXPECT_FALSE(Asm::supports(p, mi300).ok()) << int(b);
    EXPECT_NE(Asm::supports(p, mi300).text().find("gfx942 reads f8_e4m3fnuz"), std::string::npos);
    EXPECT_TRUE(Asm::supports(p, mi350).ok()) << int(b);
    p.a.dtype = DType::kF8E4M3FNUZ;
    EXPECT_TRUE(Asm::supports(p, mi300).ok()) << int(b);
    EXPECT_FALSE(Asm::supports(p, mi350).ok()) << int(b);
  }
  // The portable tier's: the device's own arch.
  const ja::Target host{BackendKind::kHost, Arch::kHost, 1};
  const ja::Target h100{BackendKind::kCuda, Arch::kSm90, 132};
  const ja::Target mi300{BackendKind::kHip, Arch::kGfx942, 304};
  p.a.dtype = DType::kF8E4M3FNUZ;
  EXPECT_TRUE(Portable::supports(p, host).ok());
  EXPECT_TRUE(Portable::supports(p, mi300).ok());
  EXPECT_FALSE(Portable::supports(p, h100).ok());
  EXPECT_NE(Portable::supports(p, h100).text().find("e4m3fn"), std::string::npos);
  p.a.dtype = DType::kF8E4M3FN;
  EXPECT_TRUE(Portable::supports(p, host).ok());
  EXPECT_TRUE(Portable::supports(p, h100).ok());
  EXPECT_FALSE(Portable::supports(p, mi300).ok());
}

}  // namespace
