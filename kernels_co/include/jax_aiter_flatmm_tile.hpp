// The fp8 block-scale tile shared by our portable FlatMM kernels (kernels_co/flatmm_fp8.kernel.cpp)
// and the ABI twin of AITER's FlatMM kernel (kernels_co/aiter_flatmm.twin.cpp):
//
//   total[BM x BN] (float32) = sum over K blocks b of 128:
//       x_scale[b][row] * ws_b * (A[rows, 128 b : 128 b + 128] . B[cols, same]^T),
//
// A e4m3 row-major (row r at a + r * lda bytes), B the e4m3 weight in the FlatMM layout
// (kernels/shared/aiter_flatmm.h: every 16-byte chunk of a row is contiguous, and moving 16 bytes
// along K moves the chunk by 256 bytes), ws_b the one w_scale value of the tile's 128 columns
// (BN <= 128, the columns inside one 128-block). Rows past the valid ones read as zero.
//
// The 8-bit operands are laid out as the int8 tile's (jax_aiter_gemm_i8_tile.hpp, which states the
// fragment layouts): the fp8 instructions take the same fragments as their int8 twins,
//   sm_90: mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 (PTX ISA, "Matrix Fragments for
//     mma.m16n8k32": .e4m3 and .s8 share the A/B layouts; D is the f32 m16n8 layout);
//   gfx942/gfx950: v_mfma_f32_16x16x32_fp8_fp8 (the i8 16x16x32 operand layout, f32 D as
//     16x16x16's). gfx942 reads e4m3fnuz, gfx950 OCP e4m3fn: the instruction decides.
// Each 128-wide K block is summed into float32 partials on the tensor cores, then folded into the
// totals with its scales (x_scale[b][row] * ws_b, one float32 multiply-add per accumulator).
// Loading: register-staged into two shared buffers, as the int8 tile.
// (A copy of GemmI8Tile's pipeline with float accumulators and the fold; the lead may merge them.)
#pragma once

#include "jax_aiter/kernels/shared/aiter_flatmm.h"
#include "jax_aiter_mma.hpp"

namespace ja {

// ---- AMD MFMA fp8 fragments (as MfmaI8WaveTile, float accumulators) ---------------------------
template <int BKBytes, int TM, int TN>
struct MfmaF8WaveTile {
  using Wave = MfmaWaveTile<BKBytes / 2, TM, TN>;
  static constexpr int kPairs = BKBytes / 2;
  static constexpr int kMI = Wave::kMI, kNJ = Wave::kNJ, kSteps = Wave::kSteps;  // 32-byte steps

  template <class Op>
  JA_HD static void step(const uint16_t* sa, const uint16_t* sb, int wm0, int wn0, int kk, int lane,
                         float (&acc)[kMI][kNJ][4]) {
    Frag4 a[kMI], b[kNJ];
    const int a0 = Wave::frag_offset(wm0, lane) ^ (16 * kk);
    const int b0 = Wave::frag_offset(wn0, lane) ^ (16 * kk);
    JA_UNROLL
    for (int i = 0; i < kMI; ++i) a[i] = *reinterpret_cast<const Frag4*>(sa + a0 + 16 * i * kPairs);
    JA_UNROLL
    for (int j = 0; j < kNJ; ++j) b[j] = *reinterpret_cast<const Frag4*>(sb + b0 + 16 * j * kPairs);
    JA_UNROLL
    for (int i = 0; i < kMI; ++i) {
      JA_UNROLL
      for (int j = 0; j < kNJ; ++j) Op::mma(a[i], b[j], acc[i][j]);
    }
  }
};

}  // namespace ja

#if defined(__HIP__) || defined(__CUDACC__)

namespace ja {

#if defined(__HIP__)

struct MfmaF8Op {
  JA_DEVICE static void mma(const Frag4& a, const Frag4& b, float (&c)[4]) {
    typedef float V4f __attribute__((ext_vector_type(4)));
    const V4f d = __builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8(__builtin_bit_cast(long, a),
                                                             __builtin_bit_cast(long, b),
                                                             V4f{c[0], c[1], c[2], c[3]}, 0, 0, 0);
    JA_UNROLL
    for (int r = 0; r < 4; ++r) c[r] = d[r];
  }
};

// One wave's TM x TN partials and totals, the MFMA k-steps over one shared stage.
template <int BK, int TM, int TN>
struct F8WarpTile {
  using Wave = MfmaF8WaveTile<BK, TM, TN>;
  static constexpr int kRun = 1;
  float part[Wave::kMI][Wave::kNJ][4];
  float total[Wave::kMI][Wave::kNJ][4];
  int wm0, wn0, lane;

  JA_DEVICE void init(int m0, int n0, int lane_id) {
    wm0 = m0, wn0 = n0, lane = lane_id;
    JA_UNROLL
    for (int i = 0; i < Wave::kMI; ++i) {
      JA_UNROLL
      for (int j = 0; j < Wave::kNJ; ++j) {
        JA_UNROLL
        for (int r = 0; r < 4; ++r) part[i][j][r] = 0.f, total[i][j][r] = 0.f;
      }
    }
  }
  JA_DEVICE void compute(const uint16_t* sa, const uint16_t* sb) {
    JA_UNROLL
    for (int kk = 0; kk < Wave::kSteps; ++kk) {
      Wave::template step<MfmaF8Op>(sa, sb, wm0, wn0, kk, lane, part);
    }
  }
  // total += part * xs[row] * ws, part = 0 (rows >= rows: nothing to add).
  JA_DEVICE void fold(const float* xs, int rows, float ws) {
    JA_UNROLL
    for (int i = 0; i < Wave::kMI; ++i) {
      JA_UNROLL
      for (int r = 0; r < 4; ++r) {
        const int row = wm0 + Wave::Wave::acc_row(lane, i, r);
        const float s = row < rows ? xs[row] * ws : 0.f;
        JA_UNROLL
        for (int j = 0; j < Wave::kNJ; ++j) {
          total[i][j][r] += part[i][j][r] * s;
          part[i][j][r] = 0.f;
        }
      }
    }
  }
  // f(row, col, v0, v1) for every total (block-tile coordinates); v1 unused.
  template <class F>
  JA_DEVICE void for_each(F&& f) const {
    JA_UNROLL
    for (int i = 0; i < Wave::kMI; ++i) {
      JA_UNROLL
      for (int j = 0; j < Wave::kNJ; ++j) {
        JA_UNROLL
        for (int r = 0; r < 4; ++r) {
          f(wm0 + Wave::Wave::acc_row(lane, i, r), wn0 + Wave::Wave::acc_col(lane, j),
            total[i][j][r], 0.f);
        }
      }
    }
  }
};

#else  // __CUDACC__

// d += a . b for one m16n8k32 e4m3 block (a, b: the registers ldmatrix gives for 16-bit pairs).
JA_DEVICE void mma_16832_e4m3(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

template <int BK, int TM, int TN>
struct F8WarpTile {
  static_assert(TM % 16 == 0 && TN % 8 == 0);
  static constexpr int kMI = TM / 16, kNI = TN / 8, kSteps = BK / 32;
  static constexpr int kRun = 2;
  static constexpr uint32_t kRowBytes = BK;
  using Addr = MmaSyncLayout<BK / 2>;
  float part[kMI][kNI][4];
  float total[kMI][kNI][4];
  uint32_t a_off, b_off;
  int wm0, wn0, lane;

  JA_DEVICE void init(int m0, int n0, int lane_id) {
    wm0 = m0, wn0 = n0, lane = lane_id;
    a_off = 2u * Addr::a_offset(m0, lane);
    b_off = 2u * Addr::b_offset(n0, lane);
    JA_UNROLL
    for (int i = 0; i < kMI; ++i) {
      JA_UNROLL
      for (int j = 0; j < kNI; ++j) {
        JA_UNROLL
        for (int r = 0; r < 4; ++r) part[i][j][r] = 0.f, total[i][j][r] = 0.f;
      }
    }
  }
  // sa, sb: shared-memory addresses of the stage's A and B tiles.
  JA_DEVICE void compute(uint32_t sa, uint32_t sb) {
    JA_UNROLL
    for (int kk = 0; kk < kSteps; ++kk) {
      uint32_t a[kMI][4], b[kNI][2];
      const uint32_t ak = sa + (a_off ^ (32u * kk)), bk = sb + (b_off ^ (32u * kk));
      JA_UNROLL
      for (int i = 0; i < kMI; ++i) ldmatrix_x4(a[i], ak + i * 16 * kRowBytes);
      JA_UNROLL
      for (int jp = 0; jp < kNI / 2; ++jp) {
        uint32_t r[4];
        ldmatrix_x4(r, bk + jp * 16 * kRowBytes);
        b[2 * jp][0] = r[0], b[2 * jp][1] = r[1], b[2 * jp + 1][0] = r[2], b[2 * jp + 1][1] = r[3];
      }
      if constexpr (kNI % 2 == 1) ldmatrix_x2(b[kNI - 1], bk + (kNI - 1) * 8 * kRowBytes);
      JA_UNROLL
      for (int i = 0; i < kMI; ++i) {
        JA_UNROLL
        for (int j = 0; j < kNI; ++j) mma_16832_e4m3(part[i][j], a[i], b[j]);
      }
    }
  }
  JA_DEVICE void fold(const float* xs, int rows, float ws) {
    JA_UNROLL
    for (int i = 0; i < kMI; ++i) {
      JA_UNROLL
      for (int h = 0; h < 2; ++h) {
        const int row = wm0 + 16 * i + Addr::acc_row(lane, 2 * h);
        const float s = row < rows ? xs[row] * ws : 0.f;
        JA_UNROLL
        for (int j = 0; j < kNI; ++j) {
          JA_UNROLL
          for (int e = 0; e < 2; ++e) {
            total[i][j][2 * h + e] += part[i][j][2 * h + e] * s;
            part[i][j][2 * h + e] = 0.f;
          }
        }
      }
    }
  }
  template <class F>
  JA_DEVICE void for_each(F&& f) const {
    JA_UNROLL
    for (int i = 0; i < kMI; ++i) {
      JA_UNROLL
      for (int j = 0; j < kNI; ++j) {
        JA_UNROLL
        for (int h = 0; h < 2; ++h) {
          f(wm0 + 16 * i + Addr::acc_row(lane, 2 * h), wn0 + 8 * j + Addr::acc_col(lane, 2 * h),
            total[i][j][2 * h], total[i][j][2 * h + 1]);
        }
      }
    }
  }
};

#endif

// The block tile: BM x BN (BN <= 128: one w_scale column block), BK bytes of K a stage.
template <int BM, int BN, int BK, int THREADS>
struct FlatmmF8Tile {
  static constexpr int kWarps = THREADS / kWarp;
  using Warps = WarpLayout<BM, BN, kWarps, kMmaNGrain>;
  using Tile = F8WarpTile<BK, Warps::TM, Warps::TN>;
  static constexpr int kRun = Tile::kRun;
  using Layout = TileLayout<BK / 2>;
  static constexpr int kScaleBlock = jax_aiter::kernels::aiter_flatmm::kScaleBlock;
  static_assert(BK % 32 == 0 && kScaleBlock % BK == 0, "whole k-steps; stages inside a block");
  static_assert(BN <= kScaleBlock, "one w_scale value a tile");
  static constexpr int kStagesPerBlock = kScaleBlock / BK;
  static constexpr int kCpr = BK / 16;  // 16-byte chunks a row
  static constexpr int kChunks = (BM + BN) * kCpr;
  static constexpr int kPasses = (kChunks + THREADS - 1) / THREADS;
  static_assert(kPasses <= 32);
  static constexpr int kStageElems = (BM + BN) * (BK / 2);  // 16-bit units
  static constexpr int kSmemElems = 2 * kStageElems;
  using Chunk = Pack<uint16_t, 8>;

  Tile tile;

  // a: row 0 of the tile (row r at a + r * lda); b: the FlatMM weight of K columns, the tile's
  // rows n0 .. n0 + rows_b; xs: x_scale + m0 (block b's row at xs + b * M); ws: w_scale + the
  // tile's column block (block b's value at ws[b * scale_n]). K a multiple of 128. Every thread
  // calls it; it ends with a barrier.
  JA_DEVICE void run(uint16_t* smem, const unsigned char* a, int64_t lda, int rows_a,
                     const unsigned char* b, int64_t K, int n0, int rows_b, const float* xs,
                     int64_t M, const float* ws, int64_t scale_n) {
    namespace L = jax_aiter::kernels::aiter_flatmm;
    const int tid = thread_id();
    const int warp = tid / kWarp;
    tile.init(Warps::m0(warp), Warps::n0(warp), tid % kWarp);

    const unsigned char* src[kPasses];
    int64_t step[kPasses];  // bytes of source per byte of K
    int dst[kPasses];
    uint32_t row_ok = 0, active = 0;
    JA_UNROLL
    for (int p = 0; p < kPasses; ++p) {
      const int i = tid + p * THREADS;
      const int r = i / kCpr, c = i % kCpr;
      const bool here = i < kChunks;
      const bool in_a = r < BM;
      const bool ok = here && (in_a ? r < rows_a : r - BM < rows_b);
      const int rr = ok ? (in_a ? r : r - BM) : 0;
      src[p] = in_a ? a + rr * lda + 16 * c : b + L::flat_chunk(n0 + rr, c, K);
      step[p] = in_a ? 1 : 16;
      dst[p] = here ? Layout::chunk_offset(r, c) : 0;
      row_ok |= (ok ? 1u : 0u) << p;
      active |= (here ? 1u : 0u) << p;
    }
    const int ktiles = static_cast<int>(K / BK);
    Chunk regs[kPasses];
    auto load = [&](int kt) {
      const int64_t k0 = static_cast<int64_t>(kt) * BK;
      JA_UNROLL
      for (int p = 0; p < kPasses; ++p) {
        if ((row_ok >> p) & 1u) {
          regs[p] = *reinterpret_cast<const Chunk*>(src[p] + step[p] * k0);
        } else {
          JA_UNROLL
          for (int e = 0; e < 8; ++e) regs[p].v[e] = 0;
        }
      }
    };
    auto store = [&](int stage) {
      uint16_t* base = smem + stage * kStageElems;
      JA_UNROLL
      for (int p = 0; p < kPasses; ++p) {
        if ((active >> p) & 1u) *reinterpret_cast<Chunk*>(base + dst[p]) = regs[p];
      }
    };
    if (ktiles > 0) {
      load(0);
      store(0);
    }
    barrier();
    for (int kt = 0; kt < ktiles; ++kt) {
      if (kt + 1 < ktiles) load(kt + 1);
      compute_stage(smem, kt & 1);
      if ((kt + 1) % kStagesPerBlock == 0) {
        const int64_t blk = kt / kStagesPerBlock;
        tile.fold(xs + blk * M, rows_a, ws[blk * scale_n]);
      }
      if (kt + 1 < ktiles) store((kt + 1) & 1);
      barrier();
    }
  }

  // f(row, col, v0, v1) for each total (kRun == 2: v1 at col + 1), block-tile coordinates.
  template <class F>
  JA_DEVICE void for_each(F&& f) const {
    tile.for_each(f);
  }

 private:
  JA_DEVICE void compute_stage(uint16_t* smem, int stage) {
    uint16_t* st = smem + stage * kStageElems;
#if defined(__CUDACC__)
    const uint32_t s = shared_address(st);
    tile.compute(s, s + BM * BK);
#else
    tile.compute(st, st + BM * (BK / 2));
#endif
  }
};

// Calls f(row, col, total) for each valid total of a tile (rows x cols valid).
template <class T, class F>
JA_DEVICE void for_each_valid_f8(const T& t, int rows, int cols, F&& f) {
  t.for_each([&](int r, int c, float v0, float v1) {
    if (r >= rows) return;
    if (c < cols) f(r, c, v0);
    if (T::kRun == 2 && c + 1 < cols) f(r, c + 1, v1);
  });
}

}  // namespace ja

#endif
