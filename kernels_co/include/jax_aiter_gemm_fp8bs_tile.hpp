// The fp8 (e4m3) block-scale tile of every FP8 block-scale GEMM we build: our portable kernels
// (kernels_co/gemm_fp8_blockscale.kernel.cpp) and the ABI twins of AITER's
// (kernels_co/aiter_fp8gemm_blockscale.twin.cpp, aiter_mi350.twin.cpp, aiter_flatmm.twin.cpp):
//
//   total[r][c] = sum over 128-wide K blocks kb of xs(kb, r) * ws(kb) * (A[r, kb] . B[c, kb]),
//
// A fp8 row-major, B fp8 in AITER's shuffled (16, 16) layout (FlatMM's weight layout is the same
// bytes, kernels/shared/aiter_flatmm.h). The fp8 warp tiles plug into the 8-bit block tile of the
// INT8 GEMM (GemmI8Tile, jax_aiter_gemm_i8_tile.hpp: the same loader, the same shuffled B, the
// same shared-memory layout), since e4m3 fragments are laid out as s8 ones:
//   sm_90: mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 (PTX ISA, "Matrix Fragments for
//     mma.m16n8k32", .e4m3 as .s8), f32 accumulators as s32 ones. e4m3fnuz (a gfx942 plan's
//     format, kFnuz) has no sm_90 instruction: each 32-bit fragment register becomes two f16x2
//     ones exactly, and one m16n8k32 step two m16n8k16 f16 steps over the same products
//     (jax_aiter_fp8.hpp; tests/cpp/test_mfma_fragments.cpp checks both on the host).
//   gfx942/gfx950: v_mfma_f32_16x16x32_fp8_fp8 (operands as v_mfma_i32_16x16x32_i8's; gfx942
//     reads e4m3fnuz, gfx950 OCP e4m3fn: the plan's own format, so kFnuz changes nothing there).
// Block scales: the accumulators hold one 128-wide K block's partial sums; fold(s) adds them,
// times s(row) (= xs * ws of the block), into float totals and clears them. The tile calls fold
// after every second 64-byte k-tile (GemmI8Tile::run's hook). What differs between the families
// (where the scales live, the output type) stays in the kernels: scale functors or pointers here,
// the store in their epilogues.
#pragma once

#include "jax_aiter/kernels/shared/aiter_fp8gemm_blockscale.h"
#include "jax_aiter_fp8.hpp"
#include "jax_aiter_gemm_i8_tile.hpp"

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

template <int BK, int TM, int TN>
struct F8WarpTile {
  using Wave = MfmaI8WaveTile<BK, TM, TN>;
  static constexpr int kRun = 1;
  float acc[Wave::kMI][Wave::kNJ][4];
  float total[Wave::kMI][Wave::kNJ][4];
  int wm0, wn0, lane;

  JA_DEVICE void init(int m0, int n0, int lane_id) {
    wm0 = m0, wn0 = n0, lane = lane_id;
    JA_UNROLL
    for (int i = 0; i < Wave::kMI; ++i) {
      JA_UNROLL
      for (int j = 0; j < Wave::kNJ; ++j) {
        JA_UNROLL
        for (int r = 0; r < 4; ++r) acc[i][j][r] = total[i][j][r] = 0.f;
      }
    }
  }
  JA_DEVICE void compute(const uint16_t* sa, const uint16_t* sb) {
    JA_UNROLL
    for (int kk = 0; kk < Wave::kSteps; ++kk) {
      Wave::template step<MfmaF8Op>(sa, sb, wm0, wn0, kk, lane, acc);
    }
  }
  // total += acc * s(row); acc = 0 (row in block-tile coordinates).
  template <class S>
  JA_DEVICE void fold(S&& s) {
    JA_UNROLL
    for (int i = 0; i < Wave::kMI; ++i) {
      JA_UNROLL
      for (int r = 0; r < 4; ++r) {
        const float f = s(wm0 + Wave::Wave::acc_row(lane, i, r));
        JA_UNROLL
        for (int j = 0; j < Wave::kNJ; ++j) {
          total[i][j][r] += acc[i][j][r] * f;
          acc[i][j][r] = 0.f;
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

// The warp tile of a format (kFnuz: e4m3fnuz): the hardware reads the plan's own.
template <bool kFnuz>
struct F8Warp {
  template <int BK, int TM, int TN>
  using Tile = F8WarpTile<BK, TM, TN>;
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

// d += a . b for one m16n8k32 e4m3fnuz block, as two m16n8k16 f16 steps (the header's note).
JA_DEVICE void mma_16832_e4m3fnuz(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  uint32_t a0[4], b0[2], a1[4], b1[2];
  fnuz_fragments_as_f16(a, b, a0, b0, a1, b1);
  mma_16816<F16>(d, a0, b0);
  mma_16816<F16>(d, a1, b1);
}

template <int BK, int TM, int TN, bool kFnuz>
struct F8WarpTileOf {
  static_assert(TM % 16 == 0 && TN % 8 == 0);
  static constexpr int kMI = TM / 16, kNI = TN / 8, kSteps = BK / 32;
  // The f16 path's sums carry 2^-14 (jax_aiter_fp8.hpp); fold takes it out.
  static constexpr float kRescale = kFnuz ? kFnuzF16Rescale : 1.f;
  static constexpr int kRun = 2;
  static constexpr uint32_t kRowBytes = BK;
  using Addr = MmaSyncLayout<BK / 2>;
  float acc[kMI][kNI][4];
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
        for (int r = 0; r < 4; ++r) acc[i][j][r] = total[i][j][r] = 0.f;
      }
    }
  }
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
        for (int j = 0; j < kNI; ++j) {
          if constexpr (kFnuz) {
            mma_16832_e4m3fnuz(acc[i][j], a[i], b[j]);
          } else {
            mma_16832_e4m3(acc[i][j], a[i], b[j]);
          }
        }
      }
    }
  }
  template <class S>
  JA_DEVICE void fold(S&& s) {
    JA_UNROLL
    for (int i = 0; i < kMI; ++i) {
      JA_UNROLL
      for (int h = 0; h < 2; ++h) {
        const float f = s(wm0 + 16 * i + Addr::acc_row(lane, 2 * h)) * kRescale;
        JA_UNROLL
        for (int j = 0; j < kNI; ++j) {
          JA_UNROLL
          for (int e = 2 * h; e < 2 * h + 2; ++e) {
            total[i][j][e] += acc[i][j][e] * f;
            acc[i][j][e] = 0.f;
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

// The warp tile of a format (kFnuz: e4m3fnuz, converted in registers).
template <bool kFnuz>
struct F8Warp {
  template <int BK, int TM, int TN>
  using Tile = F8WarpTileOf<BK, TM, TN, kFnuz>;
};

#endif

// One block's tile of the block-scale product over K [k_begin, k_end) (multiples of 128), reading
// fp8 as e4m3fnuz when kFnuz (a gfx942 plan on sm_90; on AMD the hardware's own format either way):
// a, b, lda, K as GemmI8Tile::run (K: the bytes of a B row, which lays out the shuffled weight).
// xs(kb): the A scales of K block kb, tile row r at xs(kb)[r] (r < rows_a); ws(kb): the B scale of
// K block kb for the tile's columns (BN <= 128: one scale column block a tile).
template <int BM, int BN, int BK, int THREADS, bool kFnuz = false>
struct GemmFp8BsTile {
  static_assert(BN <= 128 && 128 % BK == 0, "one b_scale row a block; whole k-tiles a scale block");
  using Base = GemmI8Tile<BM, BN, BK, THREADS, F8Warp<kFnuz>::template Tile>;
  static constexpr int kSmemElems = Base::kSmemElems;
  static constexpr int kRun = Base::kRun;
  static constexpr int kScaleK = jax_aiter::kernels::aiter_fp8bs::kScaleK;  // 128
  Base t;

  template <class XS, class WS>
  JA_DEVICE void run(uint16_t* smem, const unsigned char* a, int64_t lda, int rows_a,
                     const unsigned char* b, int64_t K, int n0, int rows_b, int k_begin, int k_end,
                     XS&& xs, WS&& ws) {
    t.run(smem, a, lda, rows_a, b, K, n0, rows_b, k_begin, k_end, [&](int kt) {
      const int k_next = k_begin + (kt + 1) * BK;
      if (k_next % kScaleK != 0 && k_next < k_end) return;
      const int kb = (k_next - 1) / kScaleK;
      const float* sak = xs(kb);
      const float s_b = ws(kb);
      t.tile.fold([&](int r) { return r < rows_a ? sak[r] * s_b : 0.f; });
    });
  }
  // The scales as arrays: sa, a_scale's K-block-major rows (row m0 of block kb at
  // sa[kb * sa_stride]); sb, this block's b_scale row (N block n0 / 128), sb[kb].
  JA_DEVICE void run(uint16_t* smem, const unsigned char* a, int64_t lda, int rows_a,
                     const unsigned char* b, int64_t K, int n0, int rows_b, int k_begin, int k_end,
                     const float* sa, int64_t sa_stride, const float* sb) {
    run(
        smem, a, lda, rows_a, b, K, n0, rows_b, k_begin, k_end,
        [&](int kb) { return sa + static_cast<int64_t>(kb) * sa_stride; },
        [&](int kb) { return sb[kb]; });
  }
  template <class F>
  JA_DEVICE void for_each(F&& f) const {
    t.for_each(f);
  }
};

// Calls f(row, col, value) for each valid total of a tile (rows x cols valid).
template <class T, class F>
JA_DEVICE void for_each_valid_f32(const T& t, int rows, int cols, F&& f) {
  t.for_each([&](int r, int c, float v0, float v1) {
    if (r >= rows) return;
    if (c < cols) f(r, c, v0);
    if (T::kRun == 2 && c + 1 < cols) f(r, c + 1, v1);
  });
}

}  // namespace ja

#endif
