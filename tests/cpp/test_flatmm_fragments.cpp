// The AMD fp8 fragment code of the FlatMM kernels (MfmaI8WaveTile of jax_aiter_gemm_i8_tile.hpp
// with float accumulators, as GemmFp8BsTile of jax_aiter_gemm_fp8bs_tile.hpp runs it; code which
// the gfx942/gfx950 kernels run and no machine of ours can), run on the CPU for every lane of every
// wave of the block tiles we build, against v_mfma_f32_16x16x32_fp8_fp8 emulated from its
// documented operand layout (the int8 16x16x32's: lane l holds A[l % 16][8 (l / 16) + j] and
// B[8 (l / 16) + j][l % 16], byte j of its 64-bit operand; D[4 (l / 16) + r][l % 16] in v[r]),
// fp8 decoded here by bit arithmetic (e4m3fnuz, gfx942's). The stage is filled as GemmI8Tile's
// loader fills it: A rows, and B chunks read from a FlatMM weight built here as AITER's op test
// builds it, at the loader's addresses (i8_tile::b_chunk, the shuffled (16, 16) layout: FlatMM's
// bytes). Each 128-wide K block's partials are folded with per-row and per-block scales at the rows
// the kernel's fold uses (acc_row), and the result must match a float64 reference. (The sm_90 path
// ran on an H100 through tests/python/test_flatmm.py.) A deliberately wrong layout must fail.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "jax_aiter/kernels/shared/aiter_flatmm.h"
#include "jax_aiter_gemm_fp8bs_tile.hpp"

namespace {

namespace L = jax_aiter::kernels::aiter_flatmm;

double fnuz(uint8_t c) {
  const int e = (c >> 3) & 15, m = c & 7;
  const double mag = e == 0 ? std::ldexp(m / 8.0, -7) : std::ldexp(1 + m / 8.0, e - 8);
  return (c >> 7) ? -mag : mag;
}

// w.view(N/16, 16, K/64, 4, 16).permute(0, 2, 3, 1, 4), as AITER's op test.
std::vector<uint8_t> flatten(const std::vector<uint8_t>& w, int n, int k) {
  std::vector<uint8_t> out(w.size());
  size_t i = 0;
  for (int a = 0; a < n / 16; ++a)
    for (int c = 0; c < k / 64; ++c)
      for (int d = 0; d < 4; ++d)
        for (int b = 0; b < 16; ++b)
          for (int e = 0; e < 16; ++e) out[i++] = w[(a * 16 + b) * k + c * 64 + d * 16 + e];
  return out;
}

struct Record {
  static inline std::vector<std::pair<ja::Frag4, ja::Frag4>>* calls = nullptr;
  static void mma(const ja::Frag4& a, const ja::Frag4& b, float (&)[4]) {
    calls->push_back({a, b});
  }
};

uint8_t byte_of(const ja::Frag4& f, int j) {
  return reinterpret_cast<const unsigned char*>(f.v)[j];
}

// Outputs of one BM x BN block tile (4 waves) out of tolerance (or written other than once).
template <int BM, int BN, int BK>
int run_block(int kblocks, uint32_t seed, bool wrong = false) {
  constexpr int kWaves = 4;
  using Warps = ja::WarpLayout<BM, BN, kWaves, 16>;
  using Wave = ja::MfmaI8WaveTile<BK, Warps::TM, Warps::TN>;
  using Layout = ja::TileLayout<BK / 2>;
  constexpr int MI = Wave::kMI, NJ = Wave::kNJ;
  const int K = kblocks * 128;
  std::mt19937 rng(seed);
  auto code = [&] {
    uint8_t c;
    do c = static_cast<uint8_t>(rng() & 0xFF);
    while (c == 0x80 || std::abs(fnuz(c)) > 8);
    return c;
  };
  std::vector<uint8_t> a(BM * K), b(BN * K);
  for (auto& x : a) x = code();
  for (auto& x : b) x = code();
  const std::vector<uint8_t> bf = flatten(b, BN, K);
  std::uniform_real_distribution<double> sdist(0.01, 0.1);
  std::vector<float> xs(kblocks * BM);  // [K/128, M]
  for (auto& s : xs) s = static_cast<float>(sdist(rng));
  std::vector<float> ws(kblocks);  // one 128-column block
  for (auto& s : ws) s = static_cast<float>(sdist(rng));

  const size_t lanes_total = static_cast<size_t>(kWaves) * 64 * MI * NJ * 4;
  std::vector<double> part(lanes_total, 0), total(lanes_total, 0);
  auto idx = [&](int w, int l, int i, int j, int r) {
    return ((((static_cast<size_t>(w) * 64 + l) * MI + i) * NJ + j) * 4) + r;
  };
  for (int kt = 0; kt < K / BK; ++kt) {
    std::vector<uint16_t> st((BM + BN) * (BK / 2));
    for (int r = 0; r < BM + BN; ++r) {
      for (int c = 0; c < BK / 16; ++c) {
        const uint8_t* src = r < BM ? a.data() + r * K + 16 * c + kt * BK
                                    : bf.data() + ja::i8_tile::b_chunk(K, r - BM, c) +
                                          ja::i8_tile::kBStride * (kt * BK);
        std::memcpy(&st[Layout::chunk_offset(r, c)], src, 16);
      }
    }
    for (int w = 0; w < kWaves; ++w) {
      for (int kk = 0; kk < Wave::kSteps; ++kk) {
        std::vector<std::vector<std::pair<ja::Frag4, ja::Frag4>>> lanes(64);
        for (int l = 0; l < 64; ++l) {
          Record::calls = &lanes[l];
          float dummy[MI][NJ][4] = {};
          Wave::template step<Record>(st.data(), st.data() + BM * (BK / 2), Warps::m0(w),
                                      Warps::n0(w), kk, l, dummy);
        }
        for (int i = 0; i < MI; ++i) {
          for (int j = 0; j < NJ; ++j) {
            double am[16][32], bm[32][16];
            for (int l = 0; l < 64; ++l) {
              const auto& [fa, fb] = lanes[l][i * NJ + j];
              for (int e = 0; e < 8; ++e) {
                const int k = wrong ? 4 * (l / 16) + e : 8 * (l / 16) + e;
                am[l % 16][k % 32] = fnuz(byte_of(fa, e));
                bm[8 * (l / 16) + e][l % 16] = fnuz(byte_of(fb, e));
              }
            }
            for (int l = 0; l < 64; ++l) {
              for (int r = 0; r < 4; ++r) {
                double s = 0;
                for (int k = 0; k < 32; ++k) s += am[4 * (l / 16) + r][k] * bm[k][l % 16];
                part[idx(w, l, i, j, r)] += s;
              }
            }
          }
        }
      }
    }
    if ((kt + 1) % (128 / BK) == 0) {  // the fold, at the rows F8WarpTile::fold reads
      const int blk = kt / (128 / BK);
      for (int w = 0; w < kWaves; ++w)
        for (int l = 0; l < 64; ++l)
          for (int i = 0; i < MI; ++i)
            for (int r = 0; r < 4; ++r) {
              const int row = Warps::m0(w) + Wave::Wave::acc_row(l, i, r);
              for (int j = 0; j < NJ; ++j) {
                total[idx(w, l, i, j, r)] +=
                    part[idx(w, l, i, j, r)] * xs[blk * BM + row] * ws[blk];
                part[idx(w, l, i, j, r)] = 0;
              }
            }
    }
  }
  std::vector<double> out(BM * BN, 0);
  std::vector<int> writes(BM * BN, 0);
  for (int w = 0; w < kWaves; ++w)
    for (int l = 0; l < 64; ++l)
      for (int i = 0; i < MI; ++i)
        for (int j = 0; j < NJ; ++j)
          for (int r = 0; r < 4; ++r) {
            const int row = Warps::m0(w) + Wave::Wave::acc_row(l, i, r);
            const int col = Warps::n0(w) + Wave::Wave::acc_col(l, j);
            out[row * BN + col] = total[idx(w, l, i, j, r)];
            ++writes[row * BN + col];
          }
  int bad = 0;
  for (int m = 0; m < BM; ++m) {
    for (int n = 0; n < BN; ++n) {
      double ref = 0, mag = 0;
      for (int blk = 0; blk < kblocks; ++blk) {
        double p = 0, pm = 0;
        for (int k = blk * 128; k < blk * 128 + 128; ++k) {
          p += fnuz(a[m * K + k]) * fnuz(b[n * K + k]);
          pm += std::abs(fnuz(a[m * K + k]) * fnuz(b[n * K + k]));
        }
        ref += p * xs[blk * BM + m] * ws[blk];
        mag += pm * xs[blk * BM + m] * ws[blk];
      }
      bad += writes[m * BN + n] != 1 || !(std::abs(out[m * BN + n] - ref) <= 1e-12 * mag);
    }
  }
  return bad;
}

TEST(FlatmmFragments, AmdBlockTilesMatchTheEmulatedInstruction) {
  // The portable tiles (kernels/shared/gemm_fp8_blockscale.h) and the twin's 128 x 128 halves:
  // BK 64.
  EXPECT_EQ((run_block<128, 128, 64>(2, 1)), 0);
  EXPECT_EQ((run_block<64, 128, 64>(2, 2)), 0);
  EXPECT_EQ((run_block<32, 128, 64>(1, 3)), 0);
  EXPECT_EQ((run_block<16, 128, 64>(3, 4)), 0);
}

TEST(FlatmmFragments, AWrongLayoutFails) { EXPECT_GT((run_block<32, 128, 64>(1, 5, true)), 0); }

}  // namespace
