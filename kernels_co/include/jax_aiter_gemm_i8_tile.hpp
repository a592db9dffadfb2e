// The int8 block tile shared by our portable INT8 GEMM kernels (kernels_co/gemm_i8.kernel.cpp) and
// the ABI twins of AITER's INT8 GEMM (kernels_co/aiter_i8gemm.twin.cpp):
//
//   acc[BM x BN] (int32, exact) = A[rows, k_begin:k_end] . B[rows, k_begin:k_end]^T,
//
// A int8 row-major (row r at a + r * lda bytes), B the int8 weight in AITER's shuffled (16, 16)
// layout (kernels/shared/aiter_i8gemm.h: every 16-byte chunk of a row is contiguous), K range a
// multiple of 32. Rows past the valid ones and K past k_end read as zero.
//
// The int8 tensor-core operands are laid out like the 16-bit ones, pair by pair of K: a tile of
// BK bytes a row is stored as BK / 2 16-bit "pairs" with TileLayout<BK / 2> (jax_aiter_mma.hpp),
// and one 32-byte k-step of an int8 instruction reads the registers a 16-pair k-step of the
// 16-bit one would:
//   sm_90: mma.sync.m16n8k32.row.col.s32.s8.s8.s32 (PTX ISA, "Matrix Fragments for
//     mma.m16n8k32", .s8): a0 = row g, bytes 4t..4t+3; a1 = row g+8; a2 = row g, bytes 16+4t..;
//     a3 = row g+8, 16+4t..; b0 = n g, bytes 4t..; b1 = n g, 16+4t..; d as m16n8k16's
//     (g = lane / 4, t = lane % 4). In pairs that is m16n8k16's bf16 layout, so ldmatrix on the
//     pair tile (MmaSyncLayout<BK / 2>) feeds it unchanged.
//   gfx942/gfx950: v_mfma_i32_16x16x32_i8: lane l holds A[l % 16][8 (l / 16) + j], j = 0..7 (one
//     64-bit register), B[8 (l / 16) + j][l % 16], D as 16x16x16's (the 16x16xK rule of AMD's
//     Matrix Instruction Calculator: K / 4 consecutive k a lane). In pairs: 4 (l / 16) + 0..3, the
//     bf16 16x16x16 fragment (MfmaWaveTile<BK / 2>), one 8-byte LDS read.
// Loading: register-staged into two shared buffers (the next k-tile's 16-byte chunks are loaded
// before the current tile's MMAs and stored after them), on every target.
#pragma once

#include "jax_aiter/kernels/shared/aiter_i8gemm.h"
#include "jax_aiter_mma.hpp"

namespace ja {

// ---- AMD MFMA i8 fragments: plain C++ on the host too (tests/cpp/test_gemm_i8_fragments.cpp) --
template <int BKBytes, int TM, int TN>
struct MfmaI8WaveTile {
  using Wave = MfmaWaveTile<BKBytes / 2, TM, TN>;
  static constexpr int kPairs = BKBytes / 2;
  static constexpr int kMI = Wave::kMI, kNJ = Wave::kNJ, kSteps = Wave::kSteps;  // 32-byte steps

  // One 32-byte k-step of the wave tile at (wm0, wn0): Op::mma(a, b, acc) on each 16x16 block
  // (Acc: int for the i8 instruction, float for the fp8 one, whose fragments are the same).
  template <class Op, class Acc>
  JA_HD static void step(const uint16_t* sa, const uint16_t* sb, int wm0, int wn0, int kk, int lane,
                         Acc (&acc)[kMI][kNJ][4]) {
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

// Where the 16-byte chunk c (bytes 16c..16c+15 of the k-tile at k0) of a tile row comes from.
// A: row r at base + r * lda (+ k0); B (shuffled): row n, and moving k0 by 32 moves the chunk by
// 32 * kShuffleN bytes, so a k-tile of BK bytes is BK * kShuffleN further.
namespace i8_tile {
namespace L = jax_aiter::kernels::aiter_i8gemm;
JA_HD int64_t a_chunk(int64_t lda, int r, int c) { return r * lda + 16 * c; }
JA_HD int64_t b_chunk(int64_t K, int n, int c) {
  return static_cast<int64_t>(L::shuffled_chunk(n, c, K));
}
inline constexpr int kBStride = L::kShuffleN;  // bytes of B per byte of K, along a chunk column
}  // namespace i8_tile

}  // namespace ja

#if defined(__HIP__) || defined(__CUDACC__)

namespace ja {

#if defined(__HIP__)

struct MfmaI8Op {
  JA_DEVICE static void mma(const Frag4& a, const Frag4& b, int (&c)[4]) {
    typedef int V4i __attribute__((ext_vector_type(4)));
    const V4i d = __builtin_amdgcn_mfma_i32_16x16x32_i8(__builtin_bit_cast(long, a),
                                                        __builtin_bit_cast(long, b),
                                                        V4i{c[0], c[1], c[2], c[3]}, 0, 0, 0);
    JA_UNROLL
    for (int r = 0; r < 4; ++r) c[r] = d[r];
  }
};

// One wave's TM x TN int32 accumulators and the MFMA k-steps over one shared stage.
template <int BK, int TM, int TN>
struct I8WarpTile {
  using Wave = MfmaI8WaveTile<BK, TM, TN>;
  static constexpr int kRun = 1;
  int acc[Wave::kMI][Wave::kNJ][4];
  int wm0, wn0, lane;

  JA_DEVICE void init(int m0, int n0, int lane_id) {
    wm0 = m0, wn0 = n0, lane = lane_id;
    JA_UNROLL
    for (int i = 0; i < Wave::kMI; ++i) {
      JA_UNROLL
      for (int j = 0; j < Wave::kNJ; ++j) {
        JA_UNROLL
        for (int r = 0; r < 4; ++r) acc[i][j][r] = 0;
      }
    }
  }
  JA_DEVICE void compute(const uint16_t* sa, const uint16_t* sb) {
    JA_UNROLL
    for (int kk = 0; kk < Wave::kSteps; ++kk) {
      Wave::template step<MfmaI8Op>(sa, sb, wm0, wn0, kk, lane, acc);
    }
  }
  // f(row, col, v0, v1) for every accumulator (block-tile coordinates); v1 unused.
  template <class F>
  JA_DEVICE void for_each(F&& f) const {
    JA_UNROLL
    for (int i = 0; i < Wave::kMI; ++i) {
      JA_UNROLL
      for (int j = 0; j < Wave::kNJ; ++j) {
        JA_UNROLL
        for (int r = 0; r < 4; ++r) {
          f(wm0 + Wave::Wave::acc_row(lane, i, r), wn0 + Wave::Wave::acc_col(lane, j), acc[i][j][r],
            0);
        }
      }
    }
  }
};

JA_DEVICE uint32_t atomic_cas_device(uint32_t* p, uint32_t expected, uint32_t desired) {
  __hip_atomic_compare_exchange_strong(p, &expected, desired, __ATOMIC_RELAXED, __ATOMIC_RELAXED,
                                       __HIP_MEMORY_SCOPE_AGENT);
  return expected;
}

#else  // __CUDACC__

// d += a . b for one m16n8k32 s8 block (a, b: the registers ldmatrix gives for 16-bit pairs).
JA_DEVICE void mma_16832_s8(int (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

template <int BK, int TM, int TN>
struct I8WarpTile {
  static_assert(TM % 16 == 0 && TN % 8 == 0);
  static constexpr int kMI = TM / 16, kNI = TN / 8, kSteps = BK / 32;
  static constexpr int kRun = 2;
  static constexpr uint32_t kRowBytes = BK;
  using Addr = MmaSyncLayout<BK / 2>;
  int acc[kMI][kNI][4];
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
        for (int r = 0; r < 4; ++r) acc[i][j][r] = 0;
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
        for (int j = 0; j < kNI; ++j) mma_16832_s8(acc[i][j], a[i], b[j]);
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

JA_DEVICE uint32_t atomic_cas_device(uint32_t* p, uint32_t expected, uint32_t desired) {
  return atomicCAS(p, expected, desired);
}

#endif

// out[0] += v in bf16, atomically (a compare-and-swap on the aligned 32-bit word holding it).
JA_DEVICE void atomic_add_bf16(uint16_t* p, float v) {
  const uintptr_t addr = reinterpret_cast<uintptr_t>(p);
  uint32_t* word = reinterpret_cast<uint32_t*>(addr & ~uintptr_t{3});
  const uint32_t shift = (addr & 2u) ? 16u : 0u;
  uint32_t old = load_coherent(word), assumed;
  do {
    assumed = old;
    const float sum = BF16::load(static_cast<uint16_t>(assumed >> shift)) + v;
    const uint32_t next =
        (assumed & ~(0xFFFFu << shift)) | (static_cast<uint32_t>(BF16::store(sum)) << shift);
    old = atomic_cas_device(word, assumed, next);
  } while (old != assumed);
}

// Nothing to do after a k-tile (GemmI8Tile::run's default hook).
struct NoKTileHook {
  JA_DEVICE void operator()(int) const {}
};

// WarpTile: the warp's accumulators and tensor-core steps (I8WarpTile; the FP8 block-scale GEMMs
// pass their own, jax_aiter_gemm_fp8bs_tile.hpp, over the same 8-bit operand tiles).
template <int BM, int BN, int BK, int THREADS, template <int, int, int> class WarpTile = I8WarpTile>
struct GemmI8Tile {
  static constexpr int kWarps = THREADS / kWarp;
  using Warps = WarpLayout<BM, BN, kWarps, kMmaNGrain>;
  using Tile = WarpTile<BK, Warps::TM, Warps::TN>;
  static constexpr int kRun = Tile::kRun;
  using Layout = TileLayout<BK / 2>;
  static_assert(BK % 32 == 0, "whole 32-byte k-steps");
  static constexpr int kCpr = BK / 16;  // 16-byte chunks a row
  static constexpr int kChunks = (BM + BN) * kCpr;
  static constexpr int kPasses = (kChunks + THREADS - 1) / THREADS;
  static_assert(kPasses <= 32);
  static constexpr int kStageElems = (BM + BN) * (BK / 2);  // 16-bit units
  static constexpr int kSmemElems = 2 * kStageElems;
  using Chunk = Pack<uint16_t, 8>;

  Tile tile;

  // a: row 0 of the tile (row r at a + r * lda); b: the shuffled weight of K columns, the tile's
  // rows n0 .. n0 + rows_b. [k_begin, k_end): multiples of 32. Every thread calls it; it ends with
  // a barrier. after(kt) runs once each k-tile kt has been multiplied in.
  template <class After = NoKTileHook>
  JA_DEVICE void run(uint16_t* smem, const unsigned char* a, int64_t lda, int rows_a,
                     const unsigned char* b, int64_t K, int n0, int rows_b, int k_begin, int k_end,
                     After after = {}) {
    const int tid = thread_id();
    const int warp = tid / kWarp;
    tile.init(Warps::m0(warp), Warps::n0(warp), tid % kWarp);

    const unsigned char* src[kPasses];
    int64_t step[kPasses];  // bytes of source per byte of K
    int dst[kPasses], col[kPasses];
    uint32_t row_ok = 0, active = 0;
    JA_UNROLL
    for (int p = 0; p < kPasses; ++p) {
      const int i = tid + p * THREADS;
      const int r = i / kCpr, c = i % kCpr;
      const bool here = i < kChunks;
      const bool in_a = r < BM;
      const bool ok = here && (in_a ? r < rows_a : r - BM < rows_b);
      const int rr = ok ? (in_a ? r : r - BM) : 0;
      src[p] = in_a ? a + i8_tile::a_chunk(lda, rr, c) : b + i8_tile::b_chunk(K, n0 + rr, c);
      step[p] = in_a ? 1 : i8_tile::kBStride;
      dst[p] = here ? Layout::chunk_offset(r, c) : 0;
      col[p] = c;
      row_ok |= (ok ? 1u : 0u) << p;
      active |= (here ? 1u : 0u) << p;
    }
    const int ktiles = k_end > k_begin ? (k_end - k_begin + BK - 1) / BK : 0;
    Chunk regs[kPasses];
    auto load = [&](int kt) {
      const int k0 = k_begin + kt * BK;
      JA_UNROLL
      for (int p = 0; p < kPasses; ++p) {
        if (((row_ok >> p) & 1u) && k0 + 16 * col[p] < k_end) {
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
      after(kt);
      if (kt + 1 < ktiles) store((kt + 1) & 1);
      barrier();
    }
  }

  // f(row, col, v0, v1) for each accumulator (kRun == 2: v1 at col + 1), block-tile coordinates.
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

// Calls f(row, col, acc) for each valid accumulator of a tile (rows x cols valid).
template <class T, class F>
JA_DEVICE void for_each_valid_i8(const T& t, int rows, int cols, F&& f) {
  t.for_each([&](int r, int c, int v0, int v1) {
    if (r >= rows) return;
    if (c < cols) f(r, c, v0);
    if (T::kRun == 2 && c + 1 < cols) f(r, c + 1, v1);
  });
}

}  // namespace ja

#endif
