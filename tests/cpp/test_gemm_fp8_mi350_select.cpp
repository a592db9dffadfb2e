// The MI350 FP8 ASM tier's choice of AITER row (ops/gemm_fp8_mi350_asm.hpp) over a grid of
// shapes per arch, against AITER's launcher rule written again here from its source
// (csrc/py_itfs_cu/asm_mi350_a8w8_blockscale.cu as of 06de6e9aee^): its checks (N % 128, K % 128,
// M >= 16, K >= 512), "x32" if m <= 32 else "x128", grid ((n + 255) / 256, (m + TileM - 1) /
// TileM). Plus the forced-kernel path (x64 and x96 included) and the arch gate.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "jax_aiter/ops/gemm_fp8_mi350_asm.hpp"

namespace {

namespace ja = jax_aiter;
using ja::Arch;

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

}  // namespace
