// The per-arch matrix primitive of our GEMM kernels and the shared-memory tile layout it reads.
//
//   sm_90:  mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32, operands loaded from
//           shared memory with ldmatrix (one warp of 32 threads).
//   gfx942/gfx950: v_mfma_f32_16x16x16_bf16 (builtin __builtin_amdgcn_mfma_f32_16x16x16bf16_1k)
//           and v_mfma_f32_16x16x16_f16 (one wave of 64 lanes), operands read from LDS.
//
// Everything above the `#if defined(__CUDACC__)` at the bottom is plain C++ that also compiles on
// the host (JA_HD is empty there): the tile layout, the warp arrangement and the AMD fragment code,
// which tests/cpp/test_mfma_fragments.cpp runs for all 64 lanes against an emulated MFMA.
#pragma once

// JA_UNROLL: loops over fragments and accumulators must unroll completely, or the arrays they index
// leave registers (clang put t128x128's accumulators in scratch without it).
#if defined(__CUDACC__)
#include "jax_aiter_device.hpp"
#define JA_HD __host__ __device__ __forceinline__
#define JA_UNROLL _Pragma("unroll")
#elif defined(__HIP__)
#include "jax_aiter_device.hpp"
#define JA_HD __attribute__((host, device)) inline __attribute__((always_inline))
#define JA_UNROLL _Pragma("unroll")
#else
#include <stdint.h>
#define JA_HD inline
#define JA_UNROLL
#endif

namespace ja {

// A tile of rows x BK 16-bit elements, K contiguous (both GEMM operands are K-major), stored as
// 16-byte chunks of 8 elements. Chunk positions are XOR-swizzled inside each 128-byte line (the
// width of one pass over the 32 four-byte banks) with a key taken from the line, so that
//   - ldmatrix (8 rows x 16 bytes at one logical chunk) and the 16-byte tile stores each touch 8
//     distinct 16-byte bank groups: no bank conflicts, no padding;
//   - moving 16 rows down adds 16 * BK to the offset (the key repeats every 16 rows), and moving
//     16 elements right (one MMA k-step) XORs the offset with 16 * kk: per-thread fragment
//     addresses are computed once, then offset by constants (checked by the CPU test).
template <int BK>
struct TileLayout {
  static_assert(BK >= 16 && (BK & (BK - 1)) == 0, "BK: a power of two, at least one k-step");
  static constexpr int kChunksPerRow = BK / 8;
  // Rows of 8+ chunks take the row as key; shorter rows share a line and take the line, masked so
  // that the key repeats after 16 rows (2 * kChunksPerRow lines).
  static constexpr int kKeyMask = kChunksPerRow >= 8 ? 7 : 2 * kChunksPerRow - 1;

  // Element offset of chunk `chunk` of row `row`.
  JA_HD static constexpr int chunk_offset(int row, int chunk) {
    const int idx = row * kChunksPerRow + chunk;
    const int key = (kChunksPerRow >= 8 ? row : idx / 8) & kKeyMask;
    return ((idx & ~7) | ((idx & 7) ^ key)) * 8;
  }
  // Element offset of element k of row `row`.
  JA_HD static constexpr int offset(int row, int k) { return chunk_offset(row, k / 8) + k % 8; }
};

// How a block's warps (waves) share its BM x BN tile: WM x WN warps, each a TM x TN warp tile.
// kNGrain is the smallest N of one matrix instruction's B operand as the warp tile loads it (8 for
// mma.sync's n8, 16 for MFMA's 16x16). Picks the arrangement with the least operand traffic per
// warp (smallest TM + TN); ties go to fewer warps along M.
template <int BM, int BN, int kWarps, int kNGrain>
struct WarpLayout {
  static constexpr int pick_wm() {
    int best = 0, best_cost = 1 << 30;
    for (int wm = 1; wm <= kWarps; ++wm) {
      if (kWarps % wm != 0) continue;
      const int wn = kWarps / wm;
      if ((BM / 16) % wm != 0 || BM % 16 != 0 || BN % (wn * kNGrain) != 0) continue;
      const int cost = BM / wm + BN / wn;
      if (cost < best_cost) best = wm, best_cost = cost;
    }
    return best;
  }
  static constexpr int WM = pick_wm();
  static_assert(WM > 0, "no warp arrangement covers this block tile");
  static constexpr int WN = kWarps / WM;
  static constexpr int TM = BM / WM, TN = BN / WN;
  JA_HD static constexpr int m0(int warp) { return (warp / WN) * TM; }
  JA_HD static constexpr int n0(int warp) { return (warp % WN) * TN; }
};

// Whether a tile of JAX_AITER_GEMM_TILES (by name) is a decode tile (GemmStream on sm_90,
// jax_aiter_gemm_stream.hpp), and the GemmTile such a tile runs where GemmStream does not (its
// `any` kernels; every kernel on AMD): BM x max(BN, 64) with BK 32, so that a warp arrangement
// exists; it computes the block's BN columns (and zero columns past them).
JA_HD constexpr bool gemm_stream_tile(const char* name) { return name[0] == 's'; }
// Whether it is the wgmma tile (jax_aiter_gemm_wgmma.hpp on sm_90; elsewhere, and for its `any`
// kernels, t128x128's GemmTile on 256 of its threads, once per half of the tile).
JA_HD constexpr bool gemm_wgmma_tile(const char* name) { return name[0] == 'w'; }
inline constexpr int kGemmWgmmaFallbackBK = 32, kGemmWgmmaFallbackThreads = 256;
JA_HD constexpr int gemm_stream_fallback_bn(int bn) { return bn < 64 ? 64 : bn; }
inline constexpr int kGemmStreamFallbackBK = 32;

// ---- AMD MFMA 16x16x16 (bf16 or f16 in, f32 out), wave64 ----
//
// Operand and result layout of v_mfma_f32_16x16x16_bf16 / _f16 (one 16x16x16 block, no
// broadcast), as AMD's Matrix Instruction Calculator prints it for CDNA3
// (github.com/ROCm/amd_matrix_instruction_calculator, `--architecture cdna3 --instruction
// v_mfma_f32_16x16x16_bf16 --matrix-layout -A/-B/-D`; identical for _f16):
//   A[M][K]: lane l holds A[l % 16][4 * (l / 16) + i], i = 0..3 (v0.[15:0], v0.[31:16], v1.[15:0],
//            v1.[31:16])
//   B[K][N]: lane l holds B[4 * (l / 16) + i][l % 16]
//   D[M][N]: lane l holds D[4 * (l / 16) + i][l % 16] in v[i]
// gfx950 (CDNA4) keeps these instructions unchanged (that calculator version covers CDNA1-3 only).
// Our B is stored N x K (row n holds B[., n]), so both operands are 4 K-consecutive elements of
// one tile row: one 8-byte LDS read per fragment.
struct alignas(8) Frag4 {
  uint16_t v[4];
};

template <int BK, int TM, int TN>
struct MfmaWaveTile {
  static_assert(TM % 16 == 0 && TN % 16 == 0);
  static constexpr int kMI = TM / 16, kNJ = TN / 16, kSteps = BK / 16;
  using Layout = TileLayout<BK>;

  // This lane's first element in a tile (row of its 16-row block, k within k-step 0): the same
  // for A (row = M index) and B (row = N index).
  JA_HD static constexpr int lane_row(int lane) { return lane % 16; }
  JA_HD static constexpr int lane_k(int lane) { return 4 * (lane / 16); }
  // Element offset of this lane's fragment of the 16-row block at row0, k-step 0.
  JA_HD static constexpr int frag_offset(int row0, int lane) {
    return Layout::offset(row0 + lane_row(lane), lane_k(lane));
  }

  // One k-step (16 of the tile's BK) of the wave tile at (wm0, wn0) of the block tile: reads the
  // lane's A and B fragments from the A and B tiles and accumulates every 16x16 block with Op::mma
  // (the MFMA on the device; an emulation on the host).
  template <class Op>
  JA_HD static void step(const uint16_t* sa, const uint16_t* sb, int wm0, int wn0, int kk, int lane,
                         float (&acc)[kMI][kNJ][4]) {
    Frag4 a[kMI], b[kNJ];
    const int a0 = frag_offset(wm0, lane) ^ (16 * kk);
    const int b0 = frag_offset(wn0, lane) ^ (16 * kk);
    JA_UNROLL
    for (int i = 0; i < kMI; ++i) a[i] = *reinterpret_cast<const Frag4*>(sa + a0 + 16 * i * BK);
    JA_UNROLL
    for (int j = 0; j < kNJ; ++j) b[j] = *reinterpret_cast<const Frag4*>(sb + b0 + 16 * j * BK);
    JA_UNROLL
    for (int i = 0; i < kMI; ++i) {
      JA_UNROLL
      for (int j = 0; j < kNJ; ++j) Op::mma(a[i], b[j], acc[i][j]);
    }
  }

  // Where accumulator register r of 16x16 block (i, j) of this lane lands in the wave tile.
  JA_HD static constexpr int acc_row(int lane, int i, int r) {
    return 16 * i + 4 * (lane / 16) + r;
  }
  JA_HD static constexpr int acc_col(int lane, int j) { return 16 * j + lane % 16; }
};

// ---- sm_90 mma.sync m16n8k16 fed by ldmatrix, warp of 32 ----
//
// ldmatrix.x4 (.x2) loads 4 (2) 8x8 matrices of 16-bit elements, each 8 rows of 16 bytes whose
// row addresses come from threads 8q..8q+7 (matrix q); thread t receives row t / 4, elements
// 2 (t % 4) and 2 (t % 4) + 1 of each matrix, in register q. mma.m16n8k16 (PTX ISA, "Matrix
// Fragments for mma.m16n8k16 with floating point type"), g = lane / 4, c = 2 (lane % 4):
//   A (row-major 16x16): a0 (row g, k c..c+1), a1 (row g+8), a2 (row g, k c+8..), a3 (row g+8,
//   k c+8..); B ("col", i.e. our N x K rows): b0 (n g, k c..c+1), b1 (n g, k c+8..);
//   D: d0, d1 (row g, cols c, c+1), d2, d3 (row g+8).
// So A's four matrices are (rows 0-7 | 8-15) x (k 0-7 | 8-15) in the order a0..a3, and one x4 of B
// is (n 0-7: k 0-7, k 8-15; n 8-15: k 0-7, k 8-15) = b0, b1 of two n8 blocks.
template <int BK>
struct MmaSyncLayout {
  using Layout = TileLayout<BK>;
  // Element offset of the row this lane addresses for the A x4 of the 16-row block at m0, k-step
  // 0 (threads 0-15: rows 0-15 at k 0-7; threads 16-31: the same rows at k 8-15).
  JA_HD static constexpr int a_offset(int m0, int lane) {
    return Layout::offset(m0 + lane % 16, 8 * (lane / 16));
  }
  // The same for the B x4 of the 16 n-rows at n0 (threads 0-7 / 8-15: n 0-7 at k 0-7 / 8-15;
  // threads 16-31: n 8-15); an x2 of the 8 n-rows at n0 uses threads 0-15 of the same offsets.
  JA_HD static constexpr int b_offset(int n0, int lane) {
    return Layout::offset(n0 + lane % 8 + 8 * (lane / 16), 8 * ((lane / 8) % 2));
  }
  // Where accumulator r (0..3) of a 16x8 block lands in it.
  JA_HD static constexpr int acc_row(int lane, int r) { return lane / 4 + 8 * (r / 2); }
  JA_HD static constexpr int acc_col(int lane, int r) { return 2 * (lane % 4) + r % 2; }
};

}  // namespace ja

#if defined(__HIP__)

namespace ja {

inline constexpr int kMmaNGrain = 16;

template <typename E>
struct MfmaOp;
template <>
struct MfmaOp<BF16> {
  JA_DEVICE static void mma(const Frag4& a, const Frag4& b, float (&c)[4]) {
    typedef short V4s __attribute__((ext_vector_type(4)));
    typedef float V4f __attribute__((ext_vector_type(4)));
    const V4f d = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(__builtin_bit_cast(V4s, a),
                                                            __builtin_bit_cast(V4s, b),
                                                            V4f{c[0], c[1], c[2], c[3]}, 0, 0, 0);
    JA_UNROLL
    for (int r = 0; r < 4; ++r) c[r] = d[r];
  }
};
template <>
struct MfmaOp<F16> {
  JA_DEVICE static void mma(const Frag4& a, const Frag4& b, float (&c)[4]) {
    typedef _Float16 V4h __attribute__((ext_vector_type(4)));
    typedef float V4f __attribute__((ext_vector_type(4)));
    const V4f d = __builtin_amdgcn_mfma_f32_16x16x16f16(__builtin_bit_cast(V4h, a),
                                                        __builtin_bit_cast(V4h, b),
                                                        V4f{c[0], c[1], c[2], c[3]}, 0, 0, 0);
    JA_UNROLL
    for (int r = 0; r < 4; ++r) c[r] = d[r];
  }
};

// One wave's TM x TN accumulators and the MFMA k-steps over one shared-memory stage.
template <typename E, int BK, int TM, int TN>
struct WarpTile {
  using Wave = MfmaWaveTile<BK, TM, TN>;
  static constexpr int kRun = 1;  // a lane owns single columns (consecutive across lanes)
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
  // sa, sb: the stage's A and B tiles.
  JA_DEVICE void compute(const uint16_t* sa, const uint16_t* sb) {
    JA_UNROLL
    for (int kk = 0; kk < Wave::kSteps; ++kk) {
      Wave::template step<MfmaOp<E>>(sa, sb, wm0, wn0, kk, lane, acc);
    }
  }
  // f(row, col, v0, v1) for every accumulator, rows and columns in the block tile; v1 unused.
  template <class F>
  JA_DEVICE void for_each(F&& f) const {
    JA_UNROLL
    for (int i = 0; i < Wave::kMI; ++i) {
      JA_UNROLL
      for (int j = 0; j < Wave::kNJ; ++j) {
        JA_UNROLL
        for (int r = 0; r < 4; ++r) {
          f(wm0 + Wave::acc_row(lane, i, r), wn0 + Wave::acc_col(lane, j), acc[i][j][r], 0.f);
        }
      }
    }
  }
};

}  // namespace ja

#elif defined(__CUDACC__)

namespace ja {

inline constexpr int kMmaNGrain = 8;

// ldmatrix and mma.sync as MmaSyncLayout describes them.
JA_DEVICE void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
JA_DEVICE void ldmatrix_x2(uint32_t (&r)[2], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(addr));
}

// d += a . b for one m16n8k16 block.
template <typename E>
JA_DEVICE void mma_16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]);
template <>
JA_DEVICE void mma_16816<BF16>(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
template <>
JA_DEVICE void mma_16816<F16>(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// One warp's TM x TN accumulators (16 x 8 blocks) and the mma.sync k-steps over one stage.
template <typename E, int BK, int TM, int TN>
struct WarpTile {
  static_assert(TM % 16 == 0 && TN % 8 == 0);
  static constexpr int kMI = TM / 16, kNI = TN / 8, kSteps = BK / 16;
  static constexpr int kRun = 2;  // a thread owns pairs of adjacent columns
  static constexpr uint32_t kRowBytes = BK * 2;
  using Addr = MmaSyncLayout<BK>;
  float acc[kMI][kNI][4];
  uint32_t a_off, b_off;  // byte offsets of this thread's ldmatrix rows at k-step 0
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
        for (int j = 0; j < kNI; ++j) mma_16816<E>(acc[i][j], a[i], b[j]);
      }
    }
  }
  // f(row, col, v0, v1): v0 at (row, col), v1 at (row, col + 1), in the block tile.
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

}  // namespace ja

#endif
