// The fp8 (e4m3) block-scale tile of our MI350-FP8 GEMM kernels (kernels_co/gemm_fp8_mi350.kernel.
// cpp) and the ABI twins of AITER's MI350 kernels (kernels_co/aiter_mi350.twin.cpp):
//
//   out[r][c] = sum over 128-wide K blocks kb of xs(kb, r) * ws(kb) * (A[r, kb] . B[c, kb]),
//
// A fp8 row-major, B fp8 in AITER's shuffled (16, 16) layout: the loading of the INT8 tile
// (jax_aiter_gemm_i8_tile.hpp, GemmI8Tile: both are 1-byte operands in the same layouts), with
// fp8 tensor-core k-steps and float32 accumulators in place of the int8 ones. The fp8 fragments
// are the int8 ones byte for byte:
//   sm_90: mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 (PTX ISA, "Matrix Fragments for
//     mma.m16n8k32": .e4m3/.e5m2 share the .s8/.u8 layout), reads OCP e4m3fn;
//   gfx942/gfx950: v_mfma_f32_16x16x32_fp8_fp8 (the 16x16x32 i8 layout), reads e4m3fnuz on gfx942
//     and OCP e4m3fn on gfx950 (ops/fp8_format.hpp).
// Each 128-wide K block is one GemmI8Tile::run (two 64-byte k-tiles); its float32 partial sums are
// scaled and added into float32 totals held per thread, in the order the tile visits them.
#pragma once

#include "jax_aiter_gemm_i8_tile.hpp"

#if defined(__HIP__) || defined(__CUDACC__)

namespace ja {

#if defined(__HIP__)

struct MfmaFp8Op {
  JA_DEVICE static void mma(const Frag4& a, const Frag4& b, float (&c)[4]) {
    typedef float V4f __attribute__((ext_vector_type(4)));
    const V4f d = __builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8(__builtin_bit_cast(long, a),
                                                             __builtin_bit_cast(long, b),
                                                             V4f{c[0], c[1], c[2], c[3]}, 0, 0, 0);
    JA_UNROLL
    for (int r = 0; r < 4; ++r) c[r] = d[r];
  }
};

// One wave's TM x TN float32 accumulators and the MFMA k-steps over one shared stage.
template <int BK, int TM, int TN>
struct Fp8WarpTile {
  using Wave = MfmaI8WaveTile<BK, TM, TN>;
  static constexpr int kRun = 1;
  static constexpr int kAccs = Wave::kMI * Wave::kNJ * 4;
  float acc[Wave::kMI][Wave::kNJ][4];
  int wm0, wn0, lane;

  JA_DEVICE void init(int m0, int n0, int lane_id) {
    wm0 = m0, wn0 = n0, lane = lane_id;
    JA_UNROLL
    for (int i = 0; i < Wave::kMI; ++i) {
      JA_UNROLL
      for (int j = 0; j < Wave::kNJ; ++j) {
        JA_UNROLL
        for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.f;
      }
    }
  }
  JA_DEVICE void compute(const uint16_t* sa, const uint16_t* sb) {
    JA_UNROLL
    for (int kk = 0; kk < Wave::kSteps; ++kk) {
      Wave::template step<MfmaFp8Op>(sa, sb, wm0, wn0, kk, lane, acc);
    }
  }
  template <class F>
  JA_DEVICE void for_each(F&& f) const {
    JA_UNROLL
    for (int i = 0; i < Wave::kMI; ++i) {
      JA_UNROLL
      for (int j = 0; j < Wave::kNJ; ++j) {
        JA_UNROLL
        for (int r = 0; r < 4; ++r) {
          f(wm0 + Wave::Wave::acc_row(lane, i, r), wn0 + Wave::Wave::acc_col(lane, j), acc[i][j][r],
            0.f);
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

// As I8WarpTile (CUDA), with e4m3 k-steps and float32 accumulators.
template <int BK, int TM, int TN>
struct Fp8WarpTile {
  static_assert(TM % 16 == 0 && TN % 8 == 0);
  static constexpr int kMI = TM / 16, kNI = TN / 8, kSteps = BK / 32;
  static constexpr int kRun = 2;
  static constexpr int kAccs = kMI * kNI * 4;
  static constexpr uint32_t kRowBytes = BK;
  using Addr = MmaSyncLayout<BK / 2>;
  float acc[kMI][kNI][4];
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
        for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.f;
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
        for (int j = 0; j < kNI; ++j) mma_16832_e4m3(acc[i][j], a[i], b[j]);
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
            acc[i][j][2 * h], acc[i][j][2 * h + 1]);
        }
      }
    }
  }
};

#endif

template <int BM, int BN, int BK, int THREADS>
using GemmFp8Tile = GemmI8Tile<BM, BN, BK, THREADS, Fp8WarpTile>;

// One BM x BN tile of the block-scale product over K (a multiple of 128): a = row 0 of the tile
// (row r at a + r * lda), rows valid; b = the shuffled weight laid out for rows of b_k bytes, the
// tile's columns n0 .. n0 + cols. xs(kb, r) and ws(kb) give the scales; store(r, c, v) receives
// each valid element once. Every thread calls it (it holds barriers).
template <int BM, int BN, int BK, int THREADS, class XS, class WS, class Store>
JA_DEVICE void fp8_block_scale_tile(uint16_t* smem, const unsigned char* a, int64_t lda, int rows,
                                    const unsigned char* b, int64_t b_k, int n0, int cols, int K,
                                    XS&& xs, WS&& ws, Store&& store) {
  using T = GemmFp8Tile<BM, BN, BK, THREADS>;
  constexpr int kAccs = T::Tile::kAccs;
  constexpr int kBlock = jax_aiter::kernels::aiter_i8gemm::kSplitKAlign;  // 128
  float total[kAccs];
  JA_UNROLL
  for (int i = 0; i < kAccs; ++i) total[i] = 0.f;
  T t;
  for (int kb = 0; kb < K / kBlock; ++kb) {
    t.run(smem, a, lda, rows, b, b_k, n0, cols, kb * kBlock, (kb + 1) * kBlock);
    const float sw = ws(kb);
    int i = 0;
    t.for_each([&](int r, int, float v0, float v1) {
      const float s = (r < rows ? xs(kb, r) : 0.f) * sw;
      total[i++] += v0 * s;
      if constexpr (T::kRun == 2) total[i++] += v1 * s;
    });
  }
  int i = 0;
  t.for_each([&](int r, int c, float, float) {
    if (r < rows && c < cols) store(r, c, total[i]);
    ++i;
    if constexpr (T::kRun == 2) {
      if (r < rows && c + 1 < cols) store(r, c + 1, total[i]);
      ++i;
    }
  });
}

}  // namespace ja

#endif
