// The AMD fragment code of kernels_co/include/jax_aiter_mma.hpp, run on the CPU for all 64 lanes
// of every wave of a block tile against an emulated v_mfma_f32_16x16x16_{bf16,f16}: the tile
// layout the loaders write (TileLayout), the per-lane A/B fragment reads from the LDS tile
// (MfmaWaveTile::step), the accumulation over several k-steps and k-tiles, and where each
// accumulator lands in C (acc_row / acc_col). The emulation takes the instruction's operand and
// result layout from explicit register-to-element tables (AMD's Matrix Instruction Calculator
// output, not the kernel's index helpers), and a deliberately transposed table must fail.
// A smaller check does the same for the sm_90 ldmatrix + mma.sync addressing (MmaSyncLayout).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "jax_aiter/kernels/shared/aiter_bf16gemm.h"
#include "jax_aiter/kernels/shared/gemm.h"
#include "jax_aiter_fp8.hpp"
#include "jax_aiter_mma.hpp"

namespace {

struct Entry {
  int row, col;
};

// v_mfma_f32_16x16x16_bf16 (and _f16: identical), CDNA3, from AMD's Matrix Instruction Calculator
// (github.com/ROCm/amd_matrix_instruction_calculator at 2ef9189):
//   matrix_calculator.py --architecture cdna3 --instruction v_mfma_f32_16x16x16_bf16
//       --matrix-layout -A (-B, -D) --csv
// Entry [lane][i]: the matrix element register part i of the lane holds: A[M][K] and B[K][N]
// (i = v0.[15:0], v0.[31:16], v1.[15:0], v1.[31:16]) and D[M][N] (i = v0..v3); {row, col}.
// clang-format off
constexpr Entry kMfmaA[64][4] = {
    {{0,0}, {0,1}, {0,2}, {0,3}},  {{1,0}, {1,1}, {1,2}, {1,3}},  {{2,0}, {2,1}, {2,2}, {2,3}},  {{3,0}, {3,1}, {3,2}, {3,3}},
    {{4,0}, {4,1}, {4,2}, {4,3}},  {{5,0}, {5,1}, {5,2}, {5,3}},  {{6,0}, {6,1}, {6,2}, {6,3}},  {{7,0}, {7,1}, {7,2}, {7,3}},
    {{8,0}, {8,1}, {8,2}, {8,3}},  {{9,0}, {9,1}, {9,2}, {9,3}},  {{10,0}, {10,1}, {10,2}, {10,3}},  {{11,0}, {11,1}, {11,2}, {11,3}},
    {{12,0}, {12,1}, {12,2}, {12,3}},  {{13,0}, {13,1}, {13,2}, {13,3}},  {{14,0}, {14,1}, {14,2}, {14,3}},  {{15,0}, {15,1}, {15,2}, {15,3}},
    {{0,4}, {0,5}, {0,6}, {0,7}},  {{1,4}, {1,5}, {1,6}, {1,7}},  {{2,4}, {2,5}, {2,6}, {2,7}},  {{3,4}, {3,5}, {3,6}, {3,7}},
    {{4,4}, {4,5}, {4,6}, {4,7}},  {{5,4}, {5,5}, {5,6}, {5,7}},  {{6,4}, {6,5}, {6,6}, {6,7}},  {{7,4}, {7,5}, {7,6}, {7,7}},
    {{8,4}, {8,5}, {8,6}, {8,7}},  {{9,4}, {9,5}, {9,6}, {9,7}},  {{10,4}, {10,5}, {10,6}, {10,7}},  {{11,4}, {11,5}, {11,6}, {11,7}},
    {{12,4}, {12,5}, {12,6}, {12,7}},  {{13,4}, {13,5}, {13,6}, {13,7}},  {{14,4}, {14,5}, {14,6}, {14,7}},  {{15,4}, {15,5}, {15,6}, {15,7}},
    {{0,8}, {0,9}, {0,10}, {0,11}},  {{1,8}, {1,9}, {1,10}, {1,11}},  {{2,8}, {2,9}, {2,10}, {2,11}},  {{3,8}, {3,9}, {3,10}, {3,11}},
    {{4,8}, {4,9}, {4,10}, {4,11}},  {{5,8}, {5,9}, {5,10}, {5,11}},  {{6,8}, {6,9}, {6,10}, {6,11}},  {{7,8}, {7,9}, {7,10}, {7,11}},
    {{8,8}, {8,9}, {8,10}, {8,11}},  {{9,8}, {9,9}, {9,10}, {9,11}},  {{10,8}, {10,9}, {10,10}, {10,11}},  {{11,8}, {11,9}, {11,10}, {11,11}},
    {{12,8}, {12,9}, {12,10}, {12,11}},  {{13,8}, {13,9}, {13,10}, {13,11}},  {{14,8}, {14,9}, {14,10}, {14,11}},  {{15,8}, {15,9}, {15,10}, {15,11}},
    {{0,12}, {0,13}, {0,14}, {0,15}},  {{1,12}, {1,13}, {1,14}, {1,15}},  {{2,12}, {2,13}, {2,14}, {2,15}},  {{3,12}, {3,13}, {3,14}, {3,15}},
    {{4,12}, {4,13}, {4,14}, {4,15}},  {{5,12}, {5,13}, {5,14}, {5,15}},  {{6,12}, {6,13}, {6,14}, {6,15}},  {{7,12}, {7,13}, {7,14}, {7,15}},
    {{8,12}, {8,13}, {8,14}, {8,15}},  {{9,12}, {9,13}, {9,14}, {9,15}},  {{10,12}, {10,13}, {10,14}, {10,15}},  {{11,12}, {11,13}, {11,14}, {11,15}},
    {{12,12}, {12,13}, {12,14}, {12,15}},  {{13,12}, {13,13}, {13,14}, {13,15}},  {{14,12}, {14,13}, {14,14}, {14,15}},  {{15,12}, {15,13}, {15,14}, {15,15}},
};
constexpr Entry kMfmaB[64][4] = {
    {{0,0}, {1,0}, {2,0}, {3,0}},  {{0,1}, {1,1}, {2,1}, {3,1}},  {{0,2}, {1,2}, {2,2}, {3,2}},  {{0,3}, {1,3}, {2,3}, {3,3}},
    {{0,4}, {1,4}, {2,4}, {3,4}},  {{0,5}, {1,5}, {2,5}, {3,5}},  {{0,6}, {1,6}, {2,6}, {3,6}},  {{0,7}, {1,7}, {2,7}, {3,7}},
    {{0,8}, {1,8}, {2,8}, {3,8}},  {{0,9}, {1,9}, {2,9}, {3,9}},  {{0,10}, {1,10}, {2,10}, {3,10}},  {{0,11}, {1,11}, {2,11}, {3,11}},
    {{0,12}, {1,12}, {2,12}, {3,12}},  {{0,13}, {1,13}, {2,13}, {3,13}},  {{0,14}, {1,14}, {2,14}, {3,14}},  {{0,15}, {1,15}, {2,15}, {3,15}},
    {{4,0}, {5,0}, {6,0}, {7,0}},  {{4,1}, {5,1}, {6,1}, {7,1}},  {{4,2}, {5,2}, {6,2}, {7,2}},  {{4,3}, {5,3}, {6,3}, {7,3}},
    {{4,4}, {5,4}, {6,4}, {7,4}},  {{4,5}, {5,5}, {6,5}, {7,5}},  {{4,6}, {5,6}, {6,6}, {7,6}},  {{4,7}, {5,7}, {6,7}, {7,7}},
    {{4,8}, {5,8}, {6,8}, {7,8}},  {{4,9}, {5,9}, {6,9}, {7,9}},  {{4,10}, {5,10}, {6,10}, {7,10}},  {{4,11}, {5,11}, {6,11}, {7,11}},
    {{4,12}, {5,12}, {6,12}, {7,12}},  {{4,13}, {5,13}, {6,13}, {7,13}},  {{4,14}, {5,14}, {6,14}, {7,14}},  {{4,15}, {5,15}, {6,15}, {7,15}},
    {{8,0}, {9,0}, {10,0}, {11,0}},  {{8,1}, {9,1}, {10,1}, {11,1}},  {{8,2}, {9,2}, {10,2}, {11,2}},  {{8,3}, {9,3}, {10,3}, {11,3}},
    {{8,4}, {9,4}, {10,4}, {11,4}},  {{8,5}, {9,5}, {10,5}, {11,5}},  {{8,6}, {9,6}, {10,6}, {11,6}},  {{8,7}, {9,7}, {10,7}, {11,7}},
    {{8,8}, {9,8}, {10,8}, {11,8}},  {{8,9}, {9,9}, {10,9}, {11,9}},  {{8,10}, {9,10}, {10,10}, {11,10}},  {{8,11}, {9,11}, {10,11}, {11,11}},
    {{8,12}, {9,12}, {10,12}, {11,12}},  {{8,13}, {9,13}, {10,13}, {11,13}},  {{8,14}, {9,14}, {10,14}, {11,14}},  {{8,15}, {9,15}, {10,15}, {11,15}},
    {{12,0}, {13,0}, {14,0}, {15,0}},  {{12,1}, {13,1}, {14,1}, {15,1}},  {{12,2}, {13,2}, {14,2}, {15,2}},  {{12,3}, {13,3}, {14,3}, {15,3}},
    {{12,4}, {13,4}, {14,4}, {15,4}},  {{12,5}, {13,5}, {14,5}, {15,5}},  {{12,6}, {13,6}, {14,6}, {15,6}},  {{12,7}, {13,7}, {14,7}, {15,7}},
    {{12,8}, {13,8}, {14,8}, {15,8}},  {{12,9}, {13,9}, {14,9}, {15,9}},  {{12,10}, {13,10}, {14,10}, {15,10}},  {{12,11}, {13,11}, {14,11}, {15,11}},
    {{12,12}, {13,12}, {14,12}, {15,12}},  {{12,13}, {13,13}, {14,13}, {15,13}},  {{12,14}, {13,14}, {14,14}, {15,14}},  {{12,15}, {13,15}, {14,15}, {15,15}},
};
constexpr Entry kMfmaD[64][4] = {
    {{0,0}, {1,0}, {2,0}, {3,0}},  {{0,1}, {1,1}, {2,1}, {3,1}},  {{0,2}, {1,2}, {2,2}, {3,2}},  {{0,3}, {1,3}, {2,3}, {3,3}},
    {{0,4}, {1,4}, {2,4}, {3,4}},  {{0,5}, {1,5}, {2,5}, {3,5}},  {{0,6}, {1,6}, {2,6}, {3,6}},  {{0,7}, {1,7}, {2,7}, {3,7}},
    {{0,8}, {1,8}, {2,8}, {3,8}},  {{0,9}, {1,9}, {2,9}, {3,9}},  {{0,10}, {1,10}, {2,10}, {3,10}},  {{0,11}, {1,11}, {2,11}, {3,11}},
    {{0,12}, {1,12}, {2,12}, {3,12}},  {{0,13}, {1,13}, {2,13}, {3,13}},  {{0,14}, {1,14}, {2,14}, {3,14}},  {{0,15}, {1,15}, {2,15}, {3,15}},
    {{4,0}, {5,0}, {6,0}, {7,0}},  {{4,1}, {5,1}, {6,1}, {7,1}},  {{4,2}, {5,2}, {6,2}, {7,2}},  {{4,3}, {5,3}, {6,3}, {7,3}},
    {{4,4}, {5,4}, {6,4}, {7,4}},  {{4,5}, {5,5}, {6,5}, {7,5}},  {{4,6}, {5,6}, {6,6}, {7,6}},  {{4,7}, {5,7}, {6,7}, {7,7}},
    {{4,8}, {5,8}, {6,8}, {7,8}},  {{4,9}, {5,9}, {6,9}, {7,9}},  {{4,10}, {5,10}, {6,10}, {7,10}},  {{4,11}, {5,11}, {6,11}, {7,11}},
    {{4,12}, {5,12}, {6,12}, {7,12}},  {{4,13}, {5,13}, {6,13}, {7,13}},  {{4,14}, {5,14}, {6,14}, {7,14}},  {{4,15}, {5,15}, {6,15}, {7,15}},
    {{8,0}, {9,0}, {10,0}, {11,0}},  {{8,1}, {9,1}, {10,1}, {11,1}},  {{8,2}, {9,2}, {10,2}, {11,2}},  {{8,3}, {9,3}, {10,3}, {11,3}},
    {{8,4}, {9,4}, {10,4}, {11,4}},  {{8,5}, {9,5}, {10,5}, {11,5}},  {{8,6}, {9,6}, {10,6}, {11,6}},  {{8,7}, {9,7}, {10,7}, {11,7}},
    {{8,8}, {9,8}, {10,8}, {11,8}},  {{8,9}, {9,9}, {10,9}, {11,9}},  {{8,10}, {9,10}, {10,10}, {11,10}},  {{8,11}, {9,11}, {10,11}, {11,11}},
    {{8,12}, {9,12}, {10,12}, {11,12}},  {{8,13}, {9,13}, {10,13}, {11,13}},  {{8,14}, {9,14}, {10,14}, {11,14}},  {{8,15}, {9,15}, {10,15}, {11,15}},
    {{12,0}, {13,0}, {14,0}, {15,0}},  {{12,1}, {13,1}, {14,1}, {15,1}},  {{12,2}, {13,2}, {14,2}, {15,2}},  {{12,3}, {13,3}, {14,3}, {15,3}},
    {{12,4}, {13,4}, {14,4}, {15,4}},  {{12,5}, {13,5}, {14,5}, {15,5}},  {{12,6}, {13,6}, {14,6}, {15,6}},  {{12,7}, {13,7}, {14,7}, {15,7}},
    {{12,8}, {13,8}, {14,8}, {15,8}},  {{12,9}, {13,9}, {14,9}, {15,9}},  {{12,10}, {13,10}, {14,10}, {15,10}},  {{12,11}, {13,11}, {14,11}, {15,11}},
    {{12,12}, {13,12}, {14,12}, {15,12}},  {{12,13}, {13,13}, {14,13}, {15,13}},  {{12,14}, {13,14}, {14,14}, {15,14}},  {{12,15}, {13,15}, {14,15}, {15,15}},
};
// clang-format on

enum class Kind { kBF16, kF16 };

float bf16_to_float(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
float f16_to_float(uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  const float s = (h & 0x8000) ? -1.f : 1.f;
  if (e == 0) return s * std::ldexp(static_cast<float>(m), -24);
  return s * std::ldexp(static_cast<float>(m + 1024), e - 25);
}
float decode(Kind k, uint16_t h) { return k == Kind::kBF16 ? bf16_to_float(h) : f16_to_float(h); }

// Small integers times 1/8 are exact in bf16 and f16 (and their products and sums in float), so
// every discrepancy is a mapping error, not rounding.
uint16_t encode_small(Kind k, int q) {  // q / 8, |q| <= 16
  const float v = static_cast<float>(q) / 8.f;
  if (k == Kind::kBF16) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    return static_cast<uint16_t>(u >> 16);
  }
  if (q == 0) return 0;
  const int sign = q < 0 ? 0x8000 : 0;
  int a = q < 0 ? -q : q;  // value a / 8 = mant * 2^(e - 25), mant in [1024, 2048)
  int e = 25 - 3;
  while (a < 1024) a *= 2, --e;
  return static_cast<uint16_t>(sign | (e << 10) | (a - 1024));
}

struct Tables {
  const Entry (*a)[4];
  const Entry (*b)[4];
  const Entry (*d)[4];
};

// One wave-wide MFMA: d = c + A . B for the 16x16x16 block the 64 lanes' registers hold.
void emulate_mfma(Kind kind, const Tables& t, const ja::Frag4 (&a)[64], const ja::Frag4 (&b)[64],
                  const float (&c)[64][4], float (&d)[64][4]) {
  double am[16][16] = {}, bm[16][16] = {}, cm[16][16] = {};
  for (int l = 0; l < 64; ++l) {
    for (int i = 0; i < 4; ++i) {
      am[t.a[l][i].row][t.a[l][i].col] = decode(kind, a[l].v[i]);
      bm[t.b[l][i].row][t.b[l][i].col] = decode(kind, b[l].v[i]);
      cm[t.d[l][i].row][t.d[l][i].col] = c[l][i];
    }
  }
  for (int l = 0; l < 64; ++l) {
    for (int i = 0; i < 4; ++i) {
      const int m = t.d[l][i].row, n = t.d[l][i].col;
      double s = cm[m][n];
      for (int k = 0; k < 16; ++k) s += am[m][k] * bm[k][n];
      d[l][i] = static_cast<float>(s);
    }
  }
}

// The MFMA as the kernel code sees it on the host: a call only records its operands and which
// accumulator it targets; the wave-wide instruction is applied once all 64 lanes have made it.
struct Recorder {
  struct Call {
    ja::Frag4 a, b;
    float* c;
  };
  static inline std::vector<Call>* log = nullptr;
  static void mma(const ja::Frag4& a, const ja::Frag4& b, float (&c)[4]) {
    log->push_back({a, b, c});
  }
};

// Runs the kernels' AMD fragment code for a BM x BN block tile of `waves` waves over nkt k-tiles
// of BK and returns the number of output elements that differ from the float64 reference (or are
// written other than exactly once).
template <int BM, int BN, int BK, int kWaves>
int run_block(Kind kind, const Tables& tables, int nkt, uint32_t seed) {
  using Warps = ja::WarpLayout<BM, BN, kWaves, 16>;
  using Wave = ja::MfmaWaveTile<BK, Warps::TM, Warps::TN>;
  using Layout = ja::TileLayout<BK>;
  const int K = nkt * BK;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-16, 16);
  std::vector<uint16_t> a(BM * K), b(BN * K);
  for (auto& x : a) x = encode_small(kind, dist(rng));
  for (auto& x : b) x = encode_small(kind, dist(rng));

  using Acc = float[Wave::kMI][Wave::kNJ][4];
  std::vector<Acc> acc(kWaves * 64);
  for (auto& x : acc) std::memset(&x, 0, sizeof(Acc));

  std::vector<uint16_t> stage((BM + BN) * BK, 0xFFFF);
  for (int kt = 0; kt < nkt; ++kt) {
    // What the loaders store: chunk c (8 elements) of combined row r (A rows, then B rows).
    for (int r = 0; r < BM + BN; ++r) {
      for (int c = 0; c < BK / 8; ++c) {
        for (int e = 0; e < 8; ++e) {
          const int k = kt * BK + 8 * c + e;
          stage[Layout::chunk_offset(r, c) + e] = r < BM ? a[r * K + k] : b[(r - BM) * K + k];
        }
      }
    }
    const uint16_t* sa = stage.data();
    const uint16_t* sb = stage.data() + BM * BK;
    for (int w = 0; w < kWaves; ++w) {
      for (int kk = 0; kk < Wave::kSteps; ++kk) {
        std::vector<Recorder::Call> calls[64];
        for (int l = 0; l < 64; ++l) {
          Recorder::log = &calls[l];
          Wave::template step<Recorder>(sa, sb, Warps::m0(w), Warps::n0(w), kk, l, acc[w * 64 + l]);
        }
        for (size_t t = 0; t < calls[0].size(); ++t) {
          ja::Frag4 fa[64], fb[64];
          float c[64][4], d[64][4];
          const auto slot = calls[0][t].c - &acc[w * 64][0][0][0];
          for (int l = 0; l < 64; ++l) {
            EXPECT_EQ(calls[l].size(), calls[0].size());
            // One instruction has one accumulator operand: every lane must name the same one.
            EXPECT_EQ(calls[l][t].c - &acc[w * 64 + l][0][0][0], slot) << "lane " << l;
            fa[l] = calls[l][t].a;
            fb[l] = calls[l][t].b;
            std::memcpy(c[l], calls[l][t].c, sizeof(c[l]));
          }
          emulate_mfma(kind, tables, fa, fb, c, d);
          for (int l = 0; l < 64; ++l) std::memcpy(calls[l][t].c, d[l], sizeof(d[l]));
        }
      }
    }
  }

  std::vector<float> out(BM * BN, 0.f);
  std::vector<int> writes(BM * BN, 0);
  for (int w = 0; w < kWaves; ++w) {
    for (int l = 0; l < 64; ++l) {
      for (int i = 0; i < Wave::kMI; ++i) {
        for (int j = 0; j < Wave::kNJ; ++j) {
          for (int r = 0; r < 4; ++r) {
            const int row = Warps::m0(w) + Wave::acc_row(l, i, r);
            const int col = Warps::n0(w) + Wave::acc_col(l, j);
            out[row * BN + col] = acc[w * 64 + l][i][j][r];
            ++writes[row * BN + col];
          }
        }
      }
    }
  }
  int bad = 0;
  for (int m = 0; m < BM; ++m) {
    for (int n = 0; n < BN; ++n) {
      double ref = 0;
      for (int k = 0; k < K; ++k)
        ref += double(decode(kind, a[m * K + k])) * decode(kind, b[n * K + k]);
      if (writes[m * BN + n] != 1 || out[m * BN + n] != static_cast<float>(ref)) ++bad;
    }
  }
  return bad;
}

const Tables kDocumented{kMfmaA, kMfmaB, kMfmaD};

// The mutation: A's table transposed (lane l holding A[k][m] instead of A[m][k]).
struct Transposed {
  Entry a[64][4];
  Transposed() {
    for (int l = 0; l < 64; ++l) {
      for (int i = 0; i < 4; ++i) a[l][i] = {kMfmaA[l][i].col, kMfmaA[l][i].row};
    }
  }
};

}  // namespace

// The tables themselves: each covers its 16x16 matrix exactly once.
TEST(MfmaTables, EachIsABijection) {
  for (const auto* t : {kMfmaA, kMfmaB, kMfmaD}) {
    int seen[16][16] = {};
    for (int l = 0; l < 64; ++l) {
      for (int i = 0; i < 4; ++i) ++seen[t[l][i].row][t[l][i].col];
    }
    for (auto& row : seen) {
      for (int x : row) EXPECT_EQ(x, 1);
    }
  }
}

// The swizzle the loaders and fragment reads share: a bijection on each tile, additive over 16
// rows (the loaders and the fragment reads add 16 * BK per 16 rows) and XOR-stepped over k-steps.
template <int BK>
void check_layout() {
  using L = ja::TileLayout<BK>;
  constexpr int kRows = 144;
  std::vector<int> seen(kRows * BK, 0);
  for (int r = 0; r < kRows; ++r) {
    for (int c = 0; c < BK / 8; ++c) {
      const int o = L::chunk_offset(r, c);
      ASSERT_EQ(o % 8, 0);
      ASSERT_GE(o, 0);
      ASSERT_LT(o, kRows * BK);
      ++seen[o];
      if (r + 16 < kRows) {
        EXPECT_EQ(L::chunk_offset(r + 16, c), o + 16 * BK) << r << " " << c;
      }
    }
    for (int k = 0; k < 16; k += 4) {
      for (int kk = 0; kk < BK / 16; ++kk) {
        EXPECT_EQ(L::offset(r, k + 16 * kk), L::offset(r, k) ^ (16 * kk)) << r << " " << k;
      }
    }
  }
  for (int o = 0; o < kRows * BK; o += 8) EXPECT_EQ(seen[o], 1) << o;
  // Bank conflicts: 8 rows of one 16-byte chunk column (an ldmatrix phase) and 8 consecutive
  // chunks (a store phase) each cover the 8 bank groups of a 128-byte line.
  for (int r0 = 0; r0 < kRows; r0 += 8) {
    for (int c = 0; c < BK / 8; ++c) {
      int groups = 0;
      for (int r = r0; r < r0 + 8; ++r) groups |= 1 << ((L::chunk_offset(r, c) / 8) % 8);
      EXPECT_EQ(groups, 0xFF) << "rows " << r0 << " chunk " << c;
    }
  }
  for (int idx = 0; idx < kRows * BK / 8; idx += 8) {
    int groups = 0;
    for (int i = idx; i < idx + 8; ++i) {
      groups |= 1 << ((L::chunk_offset(i / (BK / 8), i % (BK / 8)) / 8) % 8);
    }
    EXPECT_EQ(groups, 0xFF) << "chunks " << idx;
  }
}
TEST(TileLayout, SwizzleBK16) { check_layout<16>(); }
TEST(TileLayout, SwizzleBK32) { check_layout<32>(); }
TEST(TileLayout, SwizzleBK64) { check_layout<64>(); }
TEST(TileLayout, SwizzleBK128) { check_layout<128>(); }

// Every portable tile (AMD: THREADS / 64 waves; a decode or wgmma tile as the GemmTile it runs
// there) and every twin's compute tile, bf16 and f16.
TEST(MfmaFragments, PortableTiles) {
  uint32_t seed = 1;
#define JA_CHECK_TILE(name, BM, BN, BK, THREADS)                                                   \
  for (Kind kind : {Kind::kBF16, Kind::kF16}) {                                                    \
    constexpr bool kStream = ja::gemm_stream_tile(#name), kWgmma = ja::gemm_wgmma_tile(#name);     \
    constexpr int kBN = kStream ? ja::gemm_stream_fallback_bn(BN) : kWgmma ? BN / 2 : BN;          \
    constexpr int kBK = kStream  ? ja::kGemmStreamFallbackBK                                       \
                        : kWgmma ? ja::kGemmWgmmaFallbackBK                                        \
                                 : BK;                                                             \
    constexpr int kThreads = kWgmma ? ja::kGemmWgmmaFallbackThreads : THREADS;                     \
    EXPECT_EQ((run_block<BM, kBN, kBK, kThreads / 64>(kind, kDocumented, 3, seed++)), 0) << #name; \
  }
  JAX_AITER_GEMM_TILES(JA_CHECK_TILE)
#undef JA_CHECK_TILE
}

TEST(MfmaFragments, TwinTiles) {
  uint32_t seed = 100;
  // The twins compute min(tile, 128) x min(tile, 128) at a time with BK 32 and 256 threads.
#define JA_CHECK_TWIN(symbol, co, tm, tn, pf, sk, bias, g942, g950)                              \
  for (Kind kind : {Kind::kBF16, Kind::kF16}) {                                                  \
    EXPECT_EQ((run_block<(tm < 128 ? tm : 128), (tn < 128 ? tn : 128), 32, 4>(kind, kDocumented, \
                                                                              4, seed++)),       \
              0)                                                                                 \
        << #symbol;                                                                              \
  }
  JAX_AITER_BF16GEMM_ROWS(JA_CHECK_TWIN)
#undef JA_CHECK_TWIN
}

// The check must be able to fail: with A's layout transposed, the same code gives wrong tiles.
TEST(MfmaFragments, TransposedLayoutFails) {
  static const Transposed t;
  const Tables mutated{t.a, kMfmaB, kMfmaD};
  EXPECT_GT((run_block<128, 128, 32, 4>(Kind::kBF16, mutated, 2, 7)), 1000);
  EXPECT_GT((run_block<48, 64, 32, 4>(Kind::kF16, mutated, 2, 8)), 1000);
}

// sm_90: ldmatrix + mma.m16n8k16 emulated from the PTX ISA's descriptions, fed with the
// addresses MmaSyncLayout gives each thread, the way WarpTile::compute (CUDA) forms them: A x4 at
// a_offset ^ 16 kk (+ 16 i BK), B x4 at b_offset ^ 16 kk (+ 16 jp BK).
template <int BM, int BN, int BK, int kWarps>
int run_block_sm90(int nkt, uint32_t seed) {
  using Warps = ja::WarpLayout<BM, BN, kWarps, 8>;
  using Addr = ja::MmaSyncLayout<BK>;
  using Layout = ja::TileLayout<BK>;
  constexpr int TM = Warps::TM, TN = Warps::TN, MI = TM / 16, NI = TN / 8;
  const int K = nkt * BK;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-16, 16);
  std::vector<uint16_t> a(BM * K), b(BN * K);
  for (auto& x : a) x = encode_small(Kind::kBF16, dist(rng));
  for (auto& x : b) x = encode_small(Kind::kBF16, dist(rng));
  std::vector<float> acc(static_cast<size_t>(kWarps) * 32 * MI * NI * 4, 0.f);
  auto at = [&](int w, int l, int i, int j, int r) -> float& {
    return acc[((((static_cast<size_t>(w) * 32 + l) * MI + i) * NI + j) * 4) + r];
  };
  std::vector<uint16_t> stage((BM + BN) * BK);
  // ldmatrix: matrix q's row ra comes from thread 8q + ra; thread t gets row t / 4, elements
  // 2 (t % 4), 2 (t % 4) + 1 (one 32-bit register, low half first).
  auto ldmatrix = [&](const int(&addr)[32], int count, uint16_t(*regs)[4][2]) {
    for (int q = 0; q < count; ++q) {
      for (int t = 0; t < 32; ++t) {
        const int src = addr[8 * q + t / 4] + 2 * (t % 4);
        regs[t][q][0] = stage[src];
        regs[t][q][1] = stage[src + 1];
      }
    }
  };
  for (int kt = 0; kt < nkt; ++kt) {
    for (int r = 0; r < BM + BN; ++r) {
      for (int k = 0; k < BK; ++k) {
        stage[Layout::offset(r, k)] =
            r < BM ? a[r * K + kt * BK + k] : b[(r - BM) * K + kt * BK + k];
      }
    }
    for (int w = 0; w < kWarps; ++w) {
      for (int kk = 0; kk < BK / 16; ++kk) {
        uint16_t fa[MI][32][4][2], fb[NI][32][2][2];
        for (int i = 0; i < MI; ++i) {
          int addr[32];
          for (int t = 0; t < 32; ++t)
            addr[t] = (Addr::a_offset(Warps::m0(w), t) ^ (16 * kk)) + 16 * i * BK;
          ldmatrix(addr, 4, fa[i]);
        }
        for (int j = 0; j + 1 < NI; j += 2) {
          int addr[32];
          uint16_t r4[32][4][2];
          for (int t = 0; t < 32; ++t) {
            addr[t] = BM * BK + (Addr::b_offset(Warps::n0(w), t) ^ (16 * kk)) + 8 * j * BK;
          }
          ldmatrix(addr, 4, r4);
          for (int t = 0; t < 32; ++t) {
            std::memcpy(fb[j][t], r4[t][0], sizeof(fb[j][t]));
            std::memcpy(fb[j + 1][t], r4[t][2], sizeof(fb[j][t]));
          }
        }
        if (NI % 2 == 1) {
          int addr[32];
          uint16_t r4[32][4][2];
          for (int t = 0; t < 32; ++t) {
            addr[t] = BM * BK + (Addr::b_offset(Warps::n0(w), t) ^ (16 * kk)) + 8 * (NI - 1) * BK;
          }
          ldmatrix(addr, 2, r4);
          for (int t = 0; t < 32; ++t) std::memcpy(fb[NI - 1][t], r4[t][0], sizeof(fb[0][t]));
        }
        // mma.m16n8k16 (PTX ISA): g = lane / 4, c = 2 (lane % 4); a_q: row g + 8 (q % 2),
        // k c + 8 (q / 2) + {0, 1}; b_q: n g, k c + 8 q + {0, 1}; d_r: row g + 8 (r / 2), col
        // c + r % 2.
        for (int i = 0; i < MI; ++i) {
          for (int j = 0; j < NI; ++j) {
            double am[16][16], bm[16][8];
            for (int t = 0; t < 32; ++t) {
              const int g = t / 4, c = 2 * (t % 4);
              for (int q = 0; q < 4; ++q) {
                for (int h = 0; h < 2; ++h) {
                  am[g + 8 * (q % 2)][c + 8 * (q / 2) + h] = decode(Kind::kBF16, fa[i][t][q][h]);
                }
              }
              for (int q = 0; q < 2; ++q) {
                for (int h = 0; h < 2; ++h)
                  bm[c + 8 * q + h][g] = decode(Kind::kBF16, fb[j][t][q][h]);
              }
            }
            for (int t = 0; t < 32; ++t) {
              for (int r = 0; r < 4; ++r) {
                const int row = t / 4 + 8 * (r / 2), col = 2 * (t % 4) + r % 2;
                double s = at(w, t, i, j, r);
                for (int k = 0; k < 16; ++k) s += am[row][k] * bm[k][col];
                at(w, t, i, j, r) = static_cast<float>(s);
              }
            }
          }
        }
      }
    }
  }
  std::vector<float> out(BM * BN, 0.f);
  std::vector<int> writes(BM * BN, 0);
  for (int w = 0; w < kWarps; ++w) {
    for (int t = 0; t < 32; ++t) {
      for (int i = 0; i < MI; ++i) {
        for (int j = 0; j < NI; ++j) {
          for (int r = 0; r < 4; ++r) {
            const int row = Warps::m0(w) + 16 * i + Addr::acc_row(t, r);
            const int col = Warps::n0(w) + 8 * j + Addr::acc_col(t, r);
            out[row * BN + col] = at(w, t, i, j, r);
            ++writes[row * BN + col];
          }
        }
      }
    }
  }
  int bad = 0;
  for (int m = 0; m < BM; ++m) {
    for (int n = 0; n < BN; ++n) {
      double ref = 0;
      for (int k = 0; k < K; ++k) {
        ref += double(decode(Kind::kBF16, a[m * K + k])) * decode(Kind::kBF16, b[n * K + k]);
      }
      if (writes[m * BN + n] != 1 || out[m * BN + n] != static_cast<float>(ref)) ++bad;
    }
  }
  return bad;
}

TEST(MmaSyncFragments, PortableAndTwinTiles) {
  uint32_t seed = 200;
  // A decode or wgmma tile as the GemmTile its `any` kernels run (its streaming / wgmma kernels
  // use no ldmatrix: the GPU check, tests/gpu/cuda_gemm_kernels.cpp, covers them).
#define JA_CHECK_TILE(name, BM, BN, BK, THREADS)                                               \
  {                                                                                            \
    constexpr bool kStream = ja::gemm_stream_tile(#name), kWgmma = ja::gemm_wgmma_tile(#name); \
    constexpr int kBN = kStream ? ja::gemm_stream_fallback_bn(BN) : kWgmma ? BN / 2 : BN;      \
    constexpr int kBK = kStream  ? ja::kGemmStreamFallbackBK                                   \
                        : kWgmma ? ja::kGemmWgmmaFallbackBK                                    \
                                 : BK;                                                         \
    constexpr int kThreads = kWgmma ? ja::kGemmWgmmaFallbackThreads : THREADS;                 \
    EXPECT_EQ((run_block_sm90<BM, kBN, kBK, kThreads / 32>(3, seed++)), 0) << #name;           \
  }
  JAX_AITER_GEMM_TILES(JA_CHECK_TILE)
#undef JA_CHECK_TILE
#define JA_CHECK_TWIN(symbol, co, tm, tn, pf, sk, bias, g942, g950)                              \
  EXPECT_EQ((run_block_sm90<(tm < 128 ? tm : 128), (tn < 128 ? tn : 128), 32, 8>(2, seed++)), 0) \
      << #symbol;
  JAX_AITER_BF16GEMM_ROWS(JA_CHECK_TWIN)
#undef JA_CHECK_TWIN
}

// ---- e4m3fnuz on sm_90 (kernels_co/include/jax_aiter_fp8.hpp) ----------------------------------

// e4m3fnuz from its definition: bias 8, no infinities, no -0; 0x80 is the one NaN.
double fnuz_value(uint32_t byte) {
  if (byte == 0x80) return std::nan("");
  const int e = (byte >> 3) & 0xf, m = byte & 7;
  const double v = e == 0 ? std::ldexp(m / 8.0, -7) : std::ldexp(1 + m / 8.0, e - 8);
  return byte & 0x80 ? -v : v;
}

TEST(Fp8Fnuz, EveryByteIsAnExactF16) {
  for (uint32_t b = 0; b < 256; ++b) {
    const uint32_t bits = ja::fnuz_to_f16_bits(b);
    if (b == 0x80) {  // an f16 NaN: exponent all ones, mantissa not zero
      EXPECT_EQ(bits & 0x7c00u, 0x7c00u);
      EXPECT_NE(bits & 0x3ffu, 0u);
      continue;
    }
    EXPECT_EQ(double(f16_to_float(static_cast<uint16_t>(bits))), std::ldexp(fnuz_value(b), -7))
        << b;
  }
  // Four bytes a word, low byte first, into two f16x2 words.
  uint32_t lo = 0, hi = 0;
  ja::fnuz4_to_f16x2(0x7f01c840u, lo, hi);
  EXPECT_EQ(lo, ja::fnuz_to_f16_bits(0x40) | ja::fnuz_to_f16_bits(0xc8) << 16);
  EXPECT_EQ(hi, ja::fnuz_to_f16_bits(0x01) | ja::fnuz_to_f16_bits(0x7f) << 16);
}

// One m16n8k32 step of e4m3fnuz fragments (PTX ISA layout: thread t, g = t / 4, c = 4 (t % 4);
// a_r: row g + 8 (r % 2), k c + 16 (r / 2) + byte; b_r: column g, k c + 16 r + byte) against the
// two m16n8k16 f16 steps fnuz_fragments_as_f16 makes of them (a_q: row g + 8 (q % 2), k 2 (t % 4)
// + 8 (q / 2) + h; b_q: column g, k 2 (t % 4) + 8 q + h), rescaled: the same sums, exactly.
TEST(Fp8Fnuz, TwoF16StepsSumTheSameProducts) {
  std::mt19937 rng(17);
  std::uniform_int_distribution<uint32_t> byte(0, 255);
  for (int trial = 0; trial < 20; ++trial) {
    uint8_t A[16][32], B[8][32];  // B as [column][k]
    auto draw = [&] {             // any byte but the NaN
      uint32_t x = byte(rng);
      while (x == 0x80) x = byte(rng);
      return static_cast<uint8_t>(x);
    };
    for (auto& row : A) {
      for (auto& x : row) x = draw();
    }
    for (auto& row : B) {
      for (auto& x : row) x = draw();
    }
    double want[16][8] = {}, got[16][8] = {};
    for (int m = 0; m < 16; ++m) {
      for (int n = 0; n < 8; ++n) {
        for (int k = 0; k < 32; ++k) want[m][n] += fnuz_value(A[m][k]) * fnuz_value(B[n][k]);
      }
    }
    for (int t = 0; t < 32; ++t) {
      const int g = t / 4, c = 4 * (t % 4);
      uint32_t a[4], b[2];
      for (int r = 0; r < 4; ++r) {
        a[r] = 0;
        for (int i = 0; i < 4; ++i)
          a[r] |= uint32_t{A[g + 8 * (r % 2)][c + 16 * (r / 2) + i]} << 8 * i;
      }
      for (int r = 0; r < 2; ++r) {
        b[r] = 0;
        for (int i = 0; i < 4; ++i) b[r] |= uint32_t{B[g][c + 16 * r + i]} << 8 * i;
      }
      uint32_t a0[4], b0[2], a1[4], b1[2];
      ja::fnuz_fragments_as_f16(a, b, a0, b0, a1, b1);
      // Scatter this thread's f16 operands into the two k16 steps' matrices.
      static double am[2][16][16], bm[2][16][8];
      const uint32_t* as[2] = {a0, a1};
      const uint32_t* bs[2] = {b0, b1};
      for (int s = 0; s < 2; ++s) {
        const int c2 = 2 * (t % 4);
        for (int q = 0; q < 4; ++q) {
          for (int h = 0; h < 2; ++h) {
            am[s][g + 8 * (q % 2)][c2 + 8 * (q / 2) + h] =
                f16_to_float(static_cast<uint16_t>(as[s][q] >> 16 * h));
          }
        }
        for (int q = 0; q < 2; ++q) {
          for (int h = 0; h < 2; ++h) {
            bm[s][c2 + 8 * q + h][g] = f16_to_float(static_cast<uint16_t>(bs[s][q] >> 16 * h));
          }
        }
      }
      if (t == 31) {
        for (int m = 0; m < 16; ++m) {
          for (int n = 0; n < 8; ++n) {
            for (int s = 0; s < 2; ++s) {
              for (int k = 0; k < 16; ++k) got[m][n] += am[s][m][k] * bm[s][k][n];
            }
            got[m][n] *= ja::kFnuzF16Rescale;
          }
        }
      }
    }
    for (int m = 0; m < 16; ++m) {
      for (int n = 0; n < 8; ++n) ASSERT_EQ(got[m][n], want[m][n]) << trial << " " << m << "," << n;
    }
  }
}
