// The FlatMM ASM tier's gate and launch shape (ops/flatmm_fp8_asm.hpp) over a grid of shapes per
// arch, against the rule written again here independently from AITER's launcher
// (asm_flatmm_a8w8_blockscale.cu: N % 256, K % 128, grid (ceil(N/256), ceil(M/128), 1), block
// 256; gfx942 only) plus our one addition (at most 65536 blocks along y). Plus the forced-kernel
// path and the fp8-format verdicts of both tiers.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "jax_aiter/ops/flatmm_fp8.hpp"

namespace {

namespace ja = jax_aiter;
using ja::Arch;

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
  ja::ops::FlatmmFp8Params p;
  p.x.dtype = ja::DType::kF8E4M3FNUZ;
  p.x.rank = 2;
  p.x.dims[0] = 128;
  p.x.dims[1] = 256;
  p.w = p.x;
  p.w.dims[0] = 512;
  const ja::Target gfx942{ja::BackendKind::kHip, Arch::kGfx942, 304};
  const ja::Target gfx950{ja::BackendKind::kHip, Arch::kGfx950, 256};
  const ja::Target host942{ja::BackendKind::kHost, Arch::kGfx942, 304};
  const ja::Target sm90_942{ja::BackendKind::kCuda, Arch::kGfx942, 304};
  const ja::Target host{ja::BackendKind::kHost, Arch::kHost, 1};
  const ja::Target h100{ja::BackendKind::kCuda, Arch::kSm90, 132};
  using Asm = ja::ops::FlatmmFp8AsmTier;
  using Portable = ja::ops::FlatmmFp8PortableTier;
  EXPECT_TRUE(Asm::supports(p, gfx942).ok());
  EXPECT_TRUE(Asm::supports(p, host942).ok());
  EXPECT_TRUE(Asm::supports(p, sm90_942).ok());  // the sm_90 twin converts e4m3fnuz
  EXPECT_TRUE(Portable::supports(p, gfx942).ok());
  EXPECT_FALSE(Portable::supports(p, gfx950).ok());
  EXPECT_FALSE(Portable::supports(p, h100).ok());
  EXPECT_TRUE(Portable::supports(p, host).ok());
  p.x.dtype = p.w.dtype = ja::DType::kF8E4M3FN;
  EXPECT_FALSE(Asm::supports(p, gfx942).ok());
  EXPECT_NE(Asm::supports(p, host942).text().find("e4m3fnuz"), std::string::npos);
  EXPECT_FALSE(Asm::supports(p, sm90_942).ok());
  EXPECT_TRUE(Portable::supports(p, gfx950).ok());
  EXPECT_TRUE(Portable::supports(p, h100).ok());
  EXPECT_TRUE(Portable::supports(p, host).ok());
  p.aiter.kernel = "flatmm_uk_gfx9_f16f8_128x256x128_1x4x1_16x16x32";
  EXPECT_FALSE(Portable::supports(p, host).ok());
  p.aiter.kernel = "";
  p.aiter.splitk = 2;  // no tier splits K
  EXPECT_FALSE(Portable::supports(p, host).ok());
  p.x.dtype = p.w.dtype = ja::DType::kF8E4M3FNUZ;
  EXPECT_NE(Asm::supports(p, gfx942).text().find("do not split K"), std::string::npos);
  p.aiter.splitk = 1;
  EXPECT_TRUE(Asm::supports(p, gfx942).ok());
}

}  // namespace
