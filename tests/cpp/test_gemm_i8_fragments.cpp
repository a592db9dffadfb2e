// The int8 tensor-core fragment code of kernels_co/include/jax_aiter_gemm_i8_tile.hpp, run on the
// CPU for every lane of every wave (warp) of each block tile we build, against the matrix
// instructions emulated from their documented operand layouts (not from the kernel's helpers):
//   gfx942/gfx950 v_mfma_i32_16x16x32_i8: lane l holds A[l % 16][8 (l / 16) + j] and
//     B[8 (l / 16) + j][l % 16] (byte j of its 64-bit operand), D[4 (l / 16) + r][l % 16] in v[r];
//   sm_90 ldmatrix + mma.m16n8k32.s8 (PTX ISA): a_q byte e = A[g + 8 (q % 2)][4 t + e + 16 (q /
//   2)],
//     b_q byte e = B[4 t + e + 16 q][g], d_r = D[g + 8 (r / 2)][2 t + r % 2], g = lane / 4,
//     t = lane % 4.
// The shared tile is filled the way GemmI8Tile's loader fills it (16-byte chunks at
// TileLayout<BK / 2>::chunk_offset, B chunks read from a weight shuffled here as AITER's
// shuffle_weight does, at the loader's own addresses), and the result must equal the exact
// integer product. A deliberately wrong MFMA layout must fail.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "jax_aiter/kernels/shared/aiter_i8gemm.h"
#include "jax_aiter/kernels/shared/gemm_i8.h"
#include "jax_aiter_gemm_i8_tile.hpp"

namespace {

// AITER's shuffle_weight(w, (16, 16)) for int8 as its view/permute.
std::vector<int8_t> shuffle(const std::vector<int8_t>& w, int n, int k) {
  std::vector<int8_t> out(w.size());
  size_t i = 0;
  for (int n0 = 0; n0 < n / 16; ++n0)
    for (int k0 = 0; k0 < k / 32; ++k0)
      for (int h = 0; h < 2; ++h)
        for (int r = 0; r < 16; ++r)
          for (int e = 0; e < 16; ++e) out[i++] = w[(n0 * 16 + r) * k + k0 * 32 + h * 16 + e];
  return out;
}

// One block tile's operands: a [BM, K], b [BN, K] (plain, and shuffled as the kernels read it),
// and the stage of k-tile kt as GemmI8Tile's loader writes it (16-bit units).
template <int BM, int BN, int BK>
struct Block {
  int K;
  std::vector<int8_t> a, b, bs;
  Block(int nkt, uint32_t seed) : K(nkt * BK), a(BM * K), b(BN * K) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> dist(-128, 127);
    for (auto& x : a) x = static_cast<int8_t>(dist(rng));
    for (auto& x : b) x = static_cast<int8_t>(dist(rng));
    bs = shuffle(b, BN, K);
  }
  std::vector<uint16_t> stage(int kt) const {
    using Layout = ja::TileLayout<BK / 2>;
    std::vector<uint16_t> s((BM + BN) * (BK / 2));
    const int k0 = kt * BK;
    for (int r = 0; r < BM + BN; ++r) {
      for (int c = 0; c < BK / 16; ++c) {
        const int8_t* src =
            r < BM ? a.data() + ja::i8_tile::a_chunk(K, r, c) + k0
                   : bs.data() + ja::i8_tile::b_chunk(K, r - BM, c) + ja::i8_tile::kBStride * k0;
        std::memcpy(&s[Layout::chunk_offset(r, c)], src, 16);
      }
    }
    return s;
  }
  int64_t ref(int m, int n) const {
    int64_t s = 0;
    for (int k = 0; k < K; ++k) s += int64_t{a[m * K + k]} * b[n * K + k];
    return s;
  }
};

int8_t byte_of(const ja::Frag4& f, int j) {
  int8_t v;
  std::memcpy(&v, reinterpret_cast<const unsigned char*>(f.v) + j, 1);
  return v;
}

// Records the operands each lane's step hands the instruction, in call order.
struct Record {
  static inline std::vector<std::pair<ja::Frag4, ja::Frag4>>* calls = nullptr;
  static void mma(const ja::Frag4& a, const ja::Frag4& b, int (&)[4]) { calls->push_back({a, b}); }
};

// The AMD block tile, 4 waves of 64 lanes. wrong: emulate with A's lanes holding k 4 (l / 16)
// .. + 7 (a plausible misreading) instead.
template <int BM, int BN, int BK>
int run_block_amd(int nkt, uint32_t seed, bool wrong = false) {
  constexpr int kWaves = 4;
  using Warps = ja::WarpLayout<BM, BN, kWaves, 16>;
  using Wave = ja::MfmaI8WaveTile<BK, Warps::TM, Warps::TN>;
  constexpr int MI = Wave::kMI, NJ = Wave::kNJ;
  const Block<BM, BN, BK> blk(nkt, seed);
  std::vector<int64_t> acc(static_cast<size_t>(kWaves) * 64 * MI * NJ * 4, 0);
  auto at = [&](int w, int l, int i, int j, int r) -> int64_t& {
    return acc[((((static_cast<size_t>(w) * 64 + l) * MI + i) * NJ + j) * 4) + r];
  };
  for (int kt = 0; kt < nkt; ++kt) {
    const std::vector<uint16_t> st = blk.stage(kt);
    for (int w = 0; w < kWaves; ++w) {
      for (int kk = 0; kk < Wave::kSteps; ++kk) {
        std::vector<std::vector<std::pair<ja::Frag4, ja::Frag4>>> lanes(64);
        for (int l = 0; l < 64; ++l) {
          Record::calls = &lanes[l];
          int dummy[MI][NJ][4] = {};
          Wave::template step<Record>(st.data(), st.data() + BM * (BK / 2), Warps::m0(w),
                                      Warps::n0(w), kk, l, dummy);
        }
        for (int i = 0; i < MI; ++i) {
          for (int j = 0; j < NJ; ++j) {
            int am[16][32], bm[32][16];
            for (int l = 0; l < 64; ++l) {
              const auto& [fa, fb] = lanes[l][i * NJ + j];
              for (int e = 0; e < 8; ++e) {
                const int k = wrong ? 4 * (l / 16) + e : 8 * (l / 16) + e;
                am[l % 16][k % 32] = byte_of(fa, e);
                bm[8 * (l / 16) + e][l % 16] = byte_of(fb, e);
              }
            }
            for (int l = 0; l < 64; ++l) {
              for (int r = 0; r < 4; ++r) {
                int64_t s = 0;
                for (int k = 0; k < 32; ++k) s += int64_t{am[4 * (l / 16) + r][k]} * bm[k][l % 16];
                at(w, l, i, j, r) += s;
              }
            }
          }
        }
      }
    }
  }
  std::vector<int64_t> out(BM * BN, 0);
  std::vector<int> writes(BM * BN, 0);
  for (int w = 0; w < kWaves; ++w)
    for (int l = 0; l < 64; ++l)
      for (int i = 0; i < MI; ++i)
        for (int j = 0; j < NJ; ++j)
          for (int r = 0; r < 4; ++r) {
            const int row = Warps::m0(w) + Wave::Wave::acc_row(l, i, r);
            const int col = Warps::n0(w) + Wave::Wave::acc_col(l, j);
            out[row * BN + col] = at(w, l, i, j, r);
            ++writes[row * BN + col];
          }
  int bad = 0;
  for (int m = 0; m < BM; ++m)
    for (int n = 0; n < BN; ++n) bad += writes[m * BN + n] != 1 || out[m * BN + n] != blk.ref(m, n);
  return bad;
}

// The sm_90 block tile, 8 warps of 32 threads: ldmatrix on the 16-bit stage and mma.m16n8k32 s8,
// at the addresses I8WarpTile::compute (CUDA) forms: A x4 at a_offset ^ 16 kk (+ 16 i BK/2 pairs),
// B x4 at b_offset ^ 16 kk (+ 16 jp BK/2), an x2 for an odd last n8 block.
template <int BM, int BN, int BK>
int run_block_sm90(int nkt, uint32_t seed) {
  constexpr int kWarps = 8;
  constexpr int P = BK / 2;  // pairs a row
  using Warps = ja::WarpLayout<BM, BN, kWarps, 8>;
  using Addr = ja::MmaSyncLayout<P>;
  constexpr int MI = Warps::TM / 16, NI = Warps::TN / 8;
  const Block<BM, BN, BK> blk(nkt, seed);
  std::vector<int64_t> acc(static_cast<size_t>(kWarps) * 32 * MI * NI * 4, 0);
  auto at = [&](int w, int l, int i, int j, int r) -> int64_t& {
    return acc[((((static_cast<size_t>(w) * 32 + l) * MI + i) * NI + j) * 4) + r];
  };
  for (int kt = 0; kt < nkt; ++kt) {
    const std::vector<uint16_t> st = blk.stage(kt);
    // ldmatrix: matrix q's row from thread 8q + t/4...; thread t gets 2 pairs = 4 bytes.
    auto ldmatrix = [&](const int(&addr)[32], int count, uint32_t(*regs)[4]) {
      for (int q = 0; q < count; ++q)
        for (int t = 0; t < 32; ++t) {
          const int src = addr[8 * q + t / 4] + 2 * (t % 4);
          std::memcpy(&regs[t][q], &st[src], 4);
        }
    };
    auto byte = [](uint32_t reg, int e) { return static_cast<int8_t>((reg >> (8 * e)) & 0xFF); };
    for (int w = 0; w < kWarps; ++w) {
      for (int kk = 0; kk < BK / 32; ++kk) {
        uint32_t fa[MI][32][4], fb[NI][32][4];
        for (int i = 0; i < MI; ++i) {
          int addr[32];
          for (int t = 0; t < 32; ++t)
            addr[t] = (Addr::a_offset(Warps::m0(w), t) ^ (16 * kk)) + 16 * i * P;
          ldmatrix(addr, 4, fa[i]);
        }
        for (int j = 0; j + 1 < NI; j += 2) {
          int addr[32];
          uint32_t r4[32][4];
          for (int t = 0; t < 32; ++t)
            addr[t] = BM * P + (Addr::b_offset(Warps::n0(w), t) ^ (16 * kk)) + 8 * j * P;
          ldmatrix(addr, 4, r4);
          for (int t = 0; t < 32; ++t) {
            fb[j][t][0] = r4[t][0], fb[j][t][1] = r4[t][1];
            fb[j + 1][t][0] = r4[t][2], fb[j + 1][t][1] = r4[t][3];
          }
        }
        if (NI % 2 == 1) {
          int addr[32];
          uint32_t r4[32][4];
          for (int t = 0; t < 32; ++t)
            addr[t] = BM * P + (Addr::b_offset(Warps::n0(w), t) ^ (16 * kk)) + 8 * (NI - 1) * P;
          ldmatrix(addr, 2, r4);
          for (int t = 0; t < 32; ++t) fb[NI - 1][t][0] = r4[t][0], fb[NI - 1][t][1] = r4[t][1];
        }
        for (int i = 0; i < MI; ++i) {
          for (int j = 0; j < NI; ++j) {
            int am[16][32], bm[32][8];
            for (int t = 0; t < 32; ++t) {
              const int g = t / 4, c = t % 4;
              for (int q = 0; q < 4; ++q)
                for (int e = 0; e < 4; ++e)
                  am[g + 8 * (q % 2)][4 * c + e + 16 * (q / 2)] = byte(fa[i][t][q], e);
              for (int q = 0; q < 2; ++q)
                for (int e = 0; e < 4; ++e) bm[4 * c + e + 16 * q][g] = byte(fb[j][t][q], e);
            }
            for (int t = 0; t < 32; ++t)
              for (int r = 0; r < 4; ++r) {
                const int row = t / 4 + 8 * (r / 2), col = 2 * (t % 4) + r % 2;
                int64_t s = 0;
                for (int k = 0; k < 32; ++k) s += int64_t{am[row][k]} * bm[k][col];
                at(w, t, i, j, r) += s;
              }
          }
        }
      }
    }
  }
  std::vector<int64_t> out(BM * BN, 0);
  std::vector<int> writes(BM * BN, 0);
  for (int w = 0; w < kWarps; ++w)
    for (int t = 0; t < 32; ++t)
      for (int i = 0; i < MI; ++i)
        for (int j = 0; j < NI; ++j)
          for (int r = 0; r < 4; ++r) {
            const int row = Warps::m0(w) + 16 * i + Addr::acc_row(t, r);
            const int col = Warps::n0(w) + 8 * j + Addr::acc_col(t, r);
            out[row * BN + col] = at(w, t, i, j, r);
            ++writes[row * BN + col];
          }
  int bad = 0;
  for (int m = 0; m < BM; ++m)
    for (int n = 0; n < BN; ++n) bad += writes[m * BN + n] != 1 || out[m * BN + n] != blk.ref(m, n);
  return bad;
}

// The mma tiles; the w tile runs t128x128's tile on AMD and wgmma on sm_90 (tests/gpu).
TEST(I8Fragments, PortableTilesAmd) {
  uint32_t seed = 1;
#define JA_CHECK(name, BM, BN, BK, THREADS) \
  EXPECT_EQ((run_block_amd<BM, BN, BK>(2, seed++)), 0) << #name;
  JAX_AITER_GEMM_I8_MMA_TILES(JA_CHECK)
#undef JA_CHECK
}

TEST(I8Fragments, TwinTilesAmd) {
  uint32_t seed = 50;
#define JA_CHECK(symbol, co, tm, tn, sk, kernarg, g942, g950) \
  EXPECT_EQ((run_block_amd<tm, tn, 64>(2, seed++)), 0) << #symbol;
  JAX_AITER_I8GEMM_ROWS(JA_CHECK)
#undef JA_CHECK
}

TEST(I8Fragments, WrongMfmaLayoutFails) { EXPECT_GT((run_block_amd<32, 128, 64>(1, 7, true)), 0); }

TEST(I8Fragments, PortableTilesSm90) {
  uint32_t seed = 100;
#define JA_CHECK(name, BM, BN, BK, THREADS) \
  EXPECT_EQ((run_block_sm90<BM, BN, BK>(2, seed++)), 0) << #name;
  JAX_AITER_GEMM_I8_MMA_TILES(JA_CHECK)
#undef JA_CHECK
}

TEST(I8Fragments, TwinTilesSm90) {
  uint32_t seed = 150;
#define JA_CHECK(symbol, co, tm, tn, sk, kernarg, g942, g950) \
  EXPECT_EQ((run_block_sm90<tm, tn, 64>(2, seed++)), 0) << #symbol;
  JAX_AITER_I8GEMM_ROWS(JA_CHECK)
#undef JA_CHECK
}

}  // namespace
