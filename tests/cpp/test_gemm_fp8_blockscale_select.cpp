// The ASM tiers of aiter.gemm_fp8_blockscale (ops/gemm_fp8_blockscale_asm.hpp), each AITER family's
// choice over a grid of shapes per arch against its rule written again here independently:
//  - fp8gemm_blockscale: row and split; the rows transcribed from AITER's CSVs (not from our table,
//    and in the CSVs' order, so the table-order tie-break is checked by the sort key, not by a
//    shared iteration), every (row, split) pair scored and the best found by sorting on the stated
//    key (CU rounds, idle CUs, efficiency, tile_m, split);
//  - mi350: AITER's launcher rule (csrc/py_itfs_cu/asm_mi350_a8w8_blockscale.cu as of
//    06de6e9aee^): its checks (N % 128, K % 128, M >= 16, K >= 512), "x32" if m <= 32 else
//    "x128", grid ((n + 255) / 256, (m + TileM - 1) / TileM);
//  - flatmm: AITER's launcher (asm_flatmm_a8w8_blockscale.cu: N % 256, K % 128, grid
//    (ceil(N/256), ceil(M/128), 1), block 256; gfx942 only) plus our one addition (at most 65536
//    blocks along y).
// Plus the forced-kernel and forced-split paths, the arch gates, the fp8 format and out dtype each
// family takes, which tier of the op a call reaches, and where ours and AITER's differ on purpose.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "jax_aiter/ops/gemm_fp8_blockscale.hpp"

#include "gemm_select_testing.hpp"

namespace {

namespace ja = jax_aiter;
using ja::Arch;
using ja::BackendKind;
using ja::DType;
using namespace ja::gemm_testing;

// A call's parameters as the tiers' supports() read them: a [M, K], b [N, K], out [M, N].
ja::ops::GemmFp8BlockscaleParams params(int64_t m, int64_t n, int64_t k, DType fp8, DType out) {
  ja::ops::GemmFp8BlockscaleParams p;
  p.a.dtype = p.b.dtype = fp8;
  p.a.rank = p.b.rank = p.out.rank = 2;
  p.a.dims[0] = m;
  p.a.dims[1] = k;
  p.b.dims[0] = n;
  p.b.dims[1] = k;
  p.out.dtype = out;
  p.out.dims[0] = m;
  p.out.dims[1] = n;
  return p;
}

// ---- fp8gemm_blockscale ---------------------------------------------------------------------

namespace fp8bs {

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
  ja::ops::GemmFp8BlockscaleParams p = params(64, 4096, 4096, DType::kF8E4M3FN, DType::kBF16);
  using Asm = ja::ops::AiterTier<ja::ops::AiterFp8Bs>;
  using Portable = ja::ops::GemmFp8BlockscalePortableTier;
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

}  // namespace fp8bs

// ---- mi350 ----------------------------------------------------------------------------------

namespace mi350 {

struct Expected {
  bool any = false;
  std::string symbol;
  int64_t gdx = 0, gdy = 0;
};

// AITER's launcher, transcribed.
Expected reference(int64_t m, int64_t n, int64_t k, std::string_view forced = "") {
  int tile_m = 128;
  if (m <= 32) tile_m = 32;
  if (!(n % 128 == 0 && k % 128 == 0) || m < 16 || k < 512) return {};
  std::string symbol = m <= 32 ? "f8_block_scale_mi350_x32" : "f8_block_scale_mi350_x128";
  if (!forced.empty()) {
    symbol = std::string(forced);
    tile_m = std::stoi(symbol.substr(symbol.rfind('x') + 1));
  }
  return {true, symbol, (n + 128 * 2 - 1) / (128 * 2), (m + tile_m - 1) / tile_m};
}

// The family's selection for a call (256 CUs: the rule reads none).
ja::Decision<ja::ops::AiterChoice<ja::kernels::AiterMi350Row>> select(int64_t m, int64_t n,
                                                                      int64_t k, Arch arch,
                                                                      std::string_view forced) {
  ja::ops::AiterQuery q{.m = m, .n = n, .k = k, .arch = arch};
  q.knobs.kernel = forced;
  return ja::ops::select_aiter<ja::ops::AiterMi350>(q);
}

Expected ours(int64_t m, int64_t n, int64_t k, Arch arch, std::string_view forced = "") {
  const auto d = select(m, n, k, arch, forced);
  if (!d.ok()) return {};
  const ja::kernels::AiterMi350Row* row = d->row;
  return {true, std::string(row->kernel.symbol), (n + 255) / 256,
          (m + row->tile_m - 1) / row->tile_m};
}

TEST(GemmFp8Mi350Select, MatchesAitersRuleOverAGridOfShapes) {
  int64_t shapes = 0, taken = 0;
  const int64_t ms[] = {1,  2,   8,   15,  16,  17,  31,  32,  33,   63,   64,   65,   96,
                        97, 127, 128, 129, 200, 255, 256, 257, 1000, 1024, 4095, 4096, 16384};
  for (int64_t m : ms) {
    for (int64_t n = 64; n <= 8192; n += 64) {
      for (int64_t k : {128, 256, 384, 448, 512, 640, 1024, 1536, 4096, 7168}) {
        const Expected want = reference(m, n, k);
        const Expected got = ours(m, n, k, Arch::kGfx950);
        ASSERT_EQ(got.any, want.any) << m << "x" << n << "x" << k;
        EXPECT_EQ(got.symbol, want.symbol) << m << "x" << n << "x" << k;
        EXPECT_EQ(got.gdx, want.gdx) << m << "x" << n << "x" << k;
        EXPECT_EQ(got.gdy, want.gdy) << m << "x" << n << "x" << k;
        // No MI350 code on gfx942, nor on an arch that is not AMD's.
        EXPECT_FALSE(ours(m, n, k, Arch::kGfx942).any);
        ++shapes;
        taken += want.any ? 1 : 0;
      }
    }
  }
  EXPECT_GE(shapes, 5000);
  std::printf("%lld shapes, %lld taken by the ASM tier\n", static_cast<long long>(shapes),
              static_cast<long long>(taken));
}

TEST(GemmFp8Mi350Select, EveryRowCanBeForcedUnderTheSameGates) {
  for (int tm : {32, 64, 96, 128}) {
    const std::string name = "f8_block_scale_mi350_x" + std::to_string(tm);
    for (int64_t m : {16, 20, 32, 33, 100, 129, 4096}) {
      for (int64_t n : {128, 384, 1024}) {
        const Expected want = reference(m, n, 512, name);
        const Expected got = ours(m, n, 512, Arch::kGfx950, name);
        ASSERT_TRUE(got.any) << name << " " << m;
        EXPECT_EQ(got.symbol, want.symbol);
        EXPECT_EQ(got.gdy, want.gdy);
        EXPECT_EQ(got.gdx, want.gdx);
      }
    }
    EXPECT_FALSE(ours(15, 128, 512, Arch::kGfx950, name).any);  // the gates stay
    EXPECT_FALSE(ours(64, 128, 384, Arch::kGfx950, name).any);
  }
  EXPECT_FALSE(ours(64, 128, 512, Arch::kGfx950, "f8_block_scale_mi350_x48").any);
  EXPECT_FALSE(ours(64, 128, 512, Arch::kGfx950, "nope").any);
}

TEST(GemmFp8Mi350Select, ReasonsNameTheGate) {
  auto why = [&](int64_t m, int64_t n, int64_t k, Arch a) { return select(m, n, k, a, "").text(); };
  EXPECT_NE(why(8, 256, 512, Arch::kGfx950).find("M = 8 is below 16"), std::string::npos);
  EXPECT_NE(why(64, 256, 256, Arch::kGfx950).find("K = 256 is below 512"), std::string::npos);
  EXPECT_NE(why(64, 256, 512, Arch::kGfx942).find("gfx950 code only"), std::string::npos);
}

}  // namespace mi350

// ---- flatmm ---------------------------------------------------------------------------------

namespace flatmm {

struct Expected {
  bool any = false;
  uint32_t gx = 0, gy = 0;
};

Expected reference(int64_t m, int64_t n, int64_t k, Arch arch) {
  if (arch != Arch::kGfx942) return {};
  if (m < 1 || n % 256 != 0 || k % 128 != 0 || k == 0) return {};
  const int64_t gy = (m + 127) / 128;
  if (gy > 65536) return {};
  return {true, static_cast<uint32_t>(n / 256), static_cast<uint32_t>(gy)};
}

using Family = ja::ops::AiterFlatmm;

// The family's choice and the launch shape its plan packs.
struct Choice {
  const ja::kernels::AiterFlatmmRow* row = nullptr;
  ja::kernels::Dim3 grid{}, block{};
};

ja::Verdict select_flatmm(int64_t m, int64_t n, int64_t k, Arch arch, std::string_view kernel,
                          Choice* out) {
  ja::ops::AiterQuery q;
  q.m = m;
  q.n = n;
  q.k = k;
  q.arch = arch;
  q.knobs.kernel = kernel;
  const auto d = ja::ops::select_aiter<Family>(q);
  if (d.ok()) {
    *out = {d->row, Family::grid(*d->row, m, n), {ja::kernels::aiter_flatmm::kBlockThreads, 1, 1}};
  }
  return d.verdict();
}

class FlatmmSelectionGrid : public ::testing::TestWithParam<Arch> {};

TEST_P(FlatmmSelectionGrid, MatchesTheIndependentRule) {
  const Arch arch = GetParam();
  const std::vector<int64_t> ms = {1,     2,      7,       15,      16,      17,      31,    32,
                                   64,    100,    127,     128,     129,     255,     256,   257,
                                   500,   777,    1024,    1500,    4096,    8192,    16384, 20480,
                                   65535, 100000, 8388607, 8388608, 8388609, 16777216};
  const std::vector<int64_t> ns = {16,   128,  256,  384,  512,       640,  768,
                                   1024, 1280, 1536, 2048, 3072,      4096, 4608,
                                   7168, 7296, 8192, 272,  256 * 111, 28672};
  const std::vector<int64_t> ks = {128, 256, 384, 512, 1536, 2048, 2304, 7168, 64, 200};
  int checked = 0, chosen = 0;
  for (int64_t m : ms) {
    for (int64_t n : ns) {
      for (int64_t k : ks) {
        const Expected want = reference(m, n, k, arch);
        Choice c;
        const bool got = select_flatmm(m, n, k, arch, "", &c).ok();
        ASSERT_EQ(got, want.any) << m << "x" << n << "x" << k;
        if (want.any) {
          ASSERT_EQ(c.grid, (ja::kernels::Dim3{want.gx, want.gy, 1})) << m << "x" << n << "x" << k;
          ASSERT_EQ(c.block, (ja::kernels::Dim3{256, 1, 1}));
          ASSERT_EQ(c.row, &ja::kernels::kAiterFlatmmRows[0]);
          ++chosen;
        }
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 5000);
  if (arch == Arch::kGfx942) {
    EXPECT_GT(chosen, checked / 3);
    EXPECT_LT(chosen, checked);
  } else {
    EXPECT_EQ(chosen, 0);
  }
  std::printf("%s: %d shapes checked, %d run by AITER's FlatMM kernel\n",
              std::string(name(arch)).c_str(), checked, chosen);
}

INSTANTIATE_TEST_SUITE_P(Archs, FlatmmSelectionGrid,
                         ::testing::Values(Arch::kGfx942, Arch::kGfx950));

TEST(FlatmmSelection, ReasonsAndForcedKernel) {
  Choice c;
  auto select = [&](int64_t m, int64_t n, int64_t k, Arch arch, std::string_view kernel = "") {
    return select_flatmm(m, n, k, arch, kernel, &c);
  };
  EXPECT_EQ(select(64, 4224, 512, Arch::kGfx942).text(), "N = 4224 is not a multiple of 256");
  EXPECT_EQ(select(64, 4096, 448, Arch::kGfx942).text(), "K = 448 is not a multiple of 128");
  EXPECT_EQ(select(64, 4096, 512, Arch::kGfx950).text(),
            "AITER ships its FlatMM kernel for gfx942 only");
  EXPECT_NE(select(64, 4096, 512, Arch::kSm90).text().find("asm_arch"), std::string::npos);
  EXPECT_NE(select(8388609, 256, 128, Arch::kGfx942).text().find("65536"), std::string::npos);
  ASSERT_TRUE(
      select(300, 512, 256, Arch::kGfx942, "flatmm_uk_gfx9_f16f8_128x256x128_1x4x1_16x16x32").ok());
  EXPECT_EQ(c.grid, (ja::kernels::Dim3{2, 3, 1}));
  EXPECT_EQ(
      select(300, 512, 256, Arch::kGfx942, "I8gemm_bf16_perTokenI8_BpreShuffle_16x128").text(),
      "the forced kernel is not AITER's FlatMM kernel");
}

// Which fp8 format each tier takes (ops/fp8_format.hpp): the ASM tier's plan is gfx942's, so it
// takes e4m3fnuz on every backend (the MI300, its sm_90 twin, its host twin); the portable tier's
// plan is the device's own arch.
TEST(FlatmmSelection, Fp8FormatPerPlannedArch) {
  ja::ops::GemmFp8BlockscaleParams p = params(128, 512, 256, DType::kF8E4M3FNUZ, DType::kF16);
  const ja::Target gfx942{BackendKind::kHip, Arch::kGfx942, 304};
  const ja::Target gfx950{BackendKind::kHip, Arch::kGfx950, 256};
  const ja::Target host942{BackendKind::kHost, Arch::kGfx942, 304};
  const ja::Target sm90_942{BackendKind::kCuda, Arch::kGfx942, 304};
  const ja::Target host{BackendKind::kHost, Arch::kHost, 1};
  const ja::Target h100{BackendKind::kCuda, Arch::kSm90, 132};
  using Asm = ja::ops::AiterTier<ja::ops::AiterFlatmm>;
  using Portable = ja::ops::GemmFp8BlockscalePortableTier;
  EXPECT_TRUE(Asm::supports(p, gfx942).ok());
  EXPECT_TRUE(Asm::supports(p, host942).ok());
  EXPECT_TRUE(Asm::supports(p, sm90_942).ok());  // the sm_90 twin converts e4m3fnuz
  EXPECT_TRUE(Portable::supports(p, gfx942).ok());
  EXPECT_FALSE(Portable::supports(p, gfx950).ok());
  EXPECT_FALSE(Portable::supports(p, h100).ok());
  EXPECT_TRUE(Portable::supports(p, host).ok());
  p.a.dtype = p.b.dtype = DType::kF8E4M3FN;
  EXPECT_FALSE(Asm::supports(p, gfx942).ok());
  EXPECT_NE(Asm::supports(p, host942).text().find("e4m3fnuz"), std::string::npos);
  EXPECT_FALSE(Asm::supports(p, sm90_942).ok());
  EXPECT_TRUE(Portable::supports(p, gfx950).ok());
  EXPECT_TRUE(Portable::supports(p, h100).ok());
  EXPECT_TRUE(Portable::supports(p, host).ok());
  p.aiter.kernel = "flatmm_uk_gfx9_f16f8_128x256x128_1x4x1_16x16x32";
  EXPECT_FALSE(Portable::supports(p, host).ok());
  p.aiter.kernel = "";
  p.aiter.splitk = 2;  // neither FlatMM nor the portable tier splits K
  EXPECT_FALSE(Portable::supports(p, host).ok());
  p.a.dtype = p.b.dtype = DType::kF8E4M3FNUZ;
  EXPECT_NE(Asm::supports(p, gfx942).text().find("do not split K"), std::string::npos);
  p.aiter.splitk = 1;
  EXPECT_TRUE(Asm::supports(p, gfx942).ok());
}

}  // namespace flatmm

// ---- which tier of the op a call reaches --------------------------------------------------------

// The tiers in order on a target, and the first that takes the call ("" when none does).
std::string first_tier(const ja::ops::GemmFp8BlockscaleParams& p, const ja::Target& t) {
  std::string taken;
  ja::ops::for_each_tier<ja::ops::GemmFp8Blockscale>([&](auto i) {
    using T = ja::ops::TierAt<ja::ops::GemmFp8Blockscale, i>;
    if (!ja::ops::decide<T>(p, t).ok()) return false;
    const std::string_view family = ja::ops::tier_family<T>();
    taken = family.empty() ? std::string(T::kName)
                           : std::string(T::kName) + " (" + std::string(family) + ")";
    return true;
  });
  return taken;
}

// The arch and the out dtype pick the family; `family` narrows the choice to one; the portable
// tier takes the rest. AITER's current gfx950 path (fp8gemm_blockscale) comes before the MI350
// kernels of its deleted launcher.
TEST(Fp8BlockscaleTiers, ArchOutDtypeAndFamilyPickTheTier) {
  const ja::Target mi300{BackendKind::kHip, Arch::kGfx942, 304};
  const ja::Target mi355{BackendKind::kHip, Arch::kGfx950, 256};
  const ja::Target host{BackendKind::kHost, Arch::kHost, 1};
  const DType fnuz = DType::kF8E4M3FNUZ, fn = DType::kF8E4M3FN;
  EXPECT_EQ(first_tier(params(64, 4096, 4096, fnuz, DType::kBF16), mi300),
            "asm (fp8gemm_blockscale)");
  EXPECT_EQ(first_tier(params(64, 4096, 4096, fnuz, DType::kF16), mi300), "asm (flatmm)");
  EXPECT_EQ(first_tier(params(64, 4112, 4096, fnuz, DType::kF16), mi300), "portable");   // N % 256
  EXPECT_EQ(first_tier(params(64, 4112, 4096, fnuz, DType::kBF16), mi300), "portable");  // N % 128
  EXPECT_EQ(first_tier(params(64, 4096, 4096, fn, DType::kBF16), mi355),
            "asm (fp8gemm_blockscale)");
  EXPECT_EQ(first_tier(params(64, 4096, 4096, fn, DType::kF16), mi355), "portable");
  EXPECT_EQ(first_tier(params(64, 4096, 4096, fn, DType::kBF16), host), "portable");
  auto with_family = [](ja::ops::GemmFp8BlockscaleParams p, std::string_view family) {
    p.family = family;
    return p;
  };
  EXPECT_EQ(first_tier(with_family(params(64, 4096, 4096, fn, DType::kBF16), "mi350"), mi355),
            "asm (mi350)");
  EXPECT_EQ(first_tier(with_family(params(8, 4096, 4096, fn, DType::kBF16), "mi350"), mi355),
            "portable");  // M < 16: AITER's MI350 kernels refuse, fp8gemm_blockscale is not asked
  EXPECT_EQ(first_tier(with_family(params(64, 4096, 4096, fnuz, DType::kBF16), "flatmm"), mi300),
            "portable");  // flatmm writes f16
  // A forced kernel reaches its own family's tier.
  auto forced = params(64, 4096, 4096, fn, DType::kBF16);
  forced.aiter.kernel = "f8_block_scale_mi350_x64";
  EXPECT_EQ(first_tier(forced, mi355), "asm (mi350)");
  const auto why = ja::ops::decide<ja::ops::AiterTier<ja::ops::AiterFp8Bs>>(
      with_family(params(64, 4096, 4096, fn, DType::kBF16), "mi350"), mi355);
  EXPECT_EQ(why.text(), "the call asks for another AITER family (attribute family)");
  EXPECT_EQ(ja::ops::decide<ja::ops::AiterTier<ja::ops::AiterFlatmm>>(
                params(64, 4096, 4096, fnuz, DType::kBF16), mi300)
                .text(),
            "out is bf16: AITER's FlatMM kernel writes f16");
}

}  // namespace
