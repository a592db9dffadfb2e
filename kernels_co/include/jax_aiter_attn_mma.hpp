// The warp-level matrix products of our flash-attention kernels (kernels_co/attention.kernel.cpp),
// on the per-arch primitives of jax_aiter_mma.hpp: mma.sync m16n8k16 + ldmatrix on sm_90 (warp of
// 32), MFMA 16x16x16 on gfx942/gfx950 (wave of 64).
//
// A warp computes a *logical* tile C[16 MI x kW NB] += A[16 MI x 16 KS] . B[16 KS x kW NB] and
// keeps C in registers, acc[i][j][e] (16-row block i, kW-column block j, element e < 4), at the
// positions AccLayout names:
//   sm_90: the mma.sync accumulator itself (kW = 8): row lane / 4 + 8 (e / 2), column
//          2 (lane % 4) + e % 2;
//   AMD:   the MFMA computes C^T = B^T A^T (A^T as its B operand, B^T as its A operand), whose
//          accumulator puts C[lane % 16][4 (lane / 16) + e] in register e (kW = 16).
// Either way a register tile C[M x K] is, element for element, the A operand of a next product
// with K as its reduction (sm_90: mma.sync's A fragment; AMD: the MFMA's B fragment, which holds
// B'[4 (lane / 16) + e][lane % 16] = A[lane % 16][4 (lane / 16) + e]), so P = softmax(Q K^T) and
// dS feed P V, dS K, ... from registers, as FlashAttention-2 does.
//
// Operands in shared memory are tiles of W 16-bit elements a row (W = the head-dim bucket, 64, 128
// or 256) in TileLayout<W>'s swizzle. Two products are needed:
//   mma_nk: A from a tile stored [m][k] (rows a_row0.., k contiguous), B from a tile stored [n][k]
//           (B[k][n] = tile[n][k]: Q K^T, K Q^T, dO V^T, V dO^T);
//   mma_rk: A from registers (a previous C converted by to_afrags), B from a tile stored [k][n]
//           (B[k][n] = tile[k][n]: P V, dS K, P^T dO, dS^T Q), columns b_col0 ...
// sm_90 reads the [n][k] tiles with ldmatrix and the [k][n] tiles with ldmatrix.trans; AMD reads 4
// k-consecutive elements of a row in one 8-byte LDS read for [m][k] and [n][k] tiles, and 4
// elements of 4 rows one at a time for [k][n] tiles (gfx942 has no transposing LDS read).
//
// Swizzle arithmetic: in a TileLayout<W> tile with W >= 64, the element offset of (row r, column
// c + 16 t) is offset(r, c) XOR 16 t whenever c % 16 < 16 - (c % 8) leaves the 16-column step's
// chunk pair (c / 8 % 2 in {0, 1}) and t < W / 16 (the line key XORs chunk bits 0-2 only; the row
// part lies above log2(W)): k-steps and column steps are therefore offsets of one per-lane base.
// jax_aiter_mma.hpp's GEMM tiles rely on the same identity.
#pragma once

#include "jax_aiter_mma.hpp"

namespace ja {

#if defined(__CUDACC__)

// Where accumulator element e of a 16 x kW block lives, for this lane.
struct AccLayout {
  static constexpr int kW = 8;      // columns of one accumulator block
  static constexpr int kSlots = 2;  // rows of a 16-row block one lane holds
  static constexpr int kRun = 2;    // consecutive columns of one row a lane holds (e, e + 1)
  JA_DEVICE static constexpr int slot(int e) { return e >> 1; }
  JA_DEVICE static int row(int lane, int e) { return (lane >> 2) + 8 * (e >> 1); }
  JA_DEVICE static int col(int lane, int e) { return 2 * (lane & 3) + (e & 1); }
  JA_DEVICE static int slot_row(int lane, int s) { return (lane >> 2) + 8 * s; }
  // The one lane of each row group that stores a per-row value.
  JA_DEVICE static bool row_leader(int lane) { return (lane & 3) == 0; }
  // Reductions over the lanes that share a row (all of them get the result).
  JA_DEVICE static float row_max(float v) {
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
    return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
  }
  JA_DEVICE static float row_sum(float v) {
    v += __shfl_xor_sync(0xffffffffu, v, 1);
    return v + __shfl_xor_sync(0xffffffffu, v, 2);
  }
};

// One 16 x 16 A operand from registers.
struct AFrag {
  uint32_t r[4];
};

JA_DEVICE void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// Two floats as one register of two 16-bit values (lo in bits 0-15), rounded to nearest even.
template <typename E>
JA_DEVICE uint32_t pack2(float lo, float hi);
template <>
JA_DEVICE uint32_t pack2<BF16>(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}
template <>
JA_DEVICE uint32_t pack2<F16>(float lo, float hi) {
  const __half2 v = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

// A register tile C[16 MI x 16 KS] (2 KS accumulator blocks of 8 columns) as the A operand of the
// next product: a0 = (row g, k 2c..), a1 = (row g + 8, k 2c..), a2 = (row g, k 8 + 2c..),
// a3 = (row g + 8, k 8 + 2c..).
template <typename E, int MI, int KS>
JA_DEVICE void to_afrags(const float (&c)[MI][2 * KS][4], AFrag (&a)[MI][KS]) {
  JA_UNROLL
  for (int i = 0; i < MI; ++i) {
    JA_UNROLL
    for (int kk = 0; kk < KS; ++kk) {
      a[i][kk].r[0] = pack2<E>(c[i][2 * kk][0], c[i][2 * kk][1]);
      a[i][kk].r[1] = pack2<E>(c[i][2 * kk][2], c[i][2 * kk][3]);
      a[i][kk].r[2] = pack2<E>(c[i][2 * kk + 1][0], c[i][2 * kk + 1][1]);
      a[i][kk].r[3] = pack2<E>(c[i][2 * kk + 1][2], c[i][2 * kk + 1][3]);
    }
  }
}

// c += A . B with A rows [a_row0, a_row0 + 16 MI) of tile sa ([m][k], width WA) and B[k][n] =
// sb[b_row0 + n][k] (width WB), over k in [0, 16 KS).
template <typename E, int WA, int WB, int MI, int NB, int KS>
JA_DEVICE void mma_nk(float (&c)[MI][NB][4], const uint16_t* sa, int a_row0, const uint16_t* sb,
                      int b_row0, int lane) {
  static_assert(NB % 2 == 0 && WA >= 64 && WB >= 64 && 16 * KS <= WA && 16 * KS <= WB);
  const uint32_t a_base = shared_address(sa), b_base = shared_address(sb);
  // ldmatrix rows: A x4 = (rows 0-7 | 8-15) x (k 0-7 | 8-15) by lane / 8; B x4 = (n 0-7, k 0-7),
  // (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15).
  const uint32_t a_off = 2u * TileLayout<WA>::offset(a_row0 + (lane & 15), 8 * (lane >> 4));
  const uint32_t b_off =
      2u * TileLayout<WB>::offset(b_row0 + (lane & 7) + 8 * (lane >> 4), 8 * ((lane >> 3) & 1));
  JA_UNROLL
  for (int kk = 0; kk < KS; ++kk) {
    uint32_t a[MI][4], b[NB][2];
    JA_UNROLL
    for (int i = 0; i < MI; ++i) ldmatrix_x4(a[i], a_base + (a_off ^ (32u * kk)) + i * 32u * WA);
    JA_UNROLL
    for (int jp = 0; jp < NB / 2; ++jp) {
      uint32_t r[4];
      ldmatrix_x4(r, b_base + (b_off ^ (32u * kk)) + jp * 32u * WB);
      b[2 * jp][0] = r[0], b[2 * jp][1] = r[1], b[2 * jp + 1][0] = r[2], b[2 * jp + 1][1] = r[3];
    }
    JA_UNROLL
    for (int i = 0; i < MI; ++i) {
      JA_UNROLL
      for (int j = 0; j < NB; ++j) mma_16816<E>(c[i][j], a[i], b[j]);
    }
  }
}

// c += A . B with A from registers (to_afrags) and B[k][n] = sb[b_row0 + k][b_col0 + n] (width
// WB), over k in [0, 16 KS), n in [0, 8 NB). b_col0 is a multiple of 8 NB rounded up to a power
// of two (0 or the column part of a split warp).
template <typename E, int WB, int MI, int NB, int KS>
JA_DEVICE void mma_rk(float (&c)[MI][NB][4], const AFrag (&a)[MI][KS], const uint16_t* sb,
                      int b_row0, int b_col0, int lane) {
  static_assert(NB % 2 == 0 && WB >= 64 && 8 * NB <= WB);
  const uint32_t b_base = shared_address(sb);
  // ldmatrix.trans x4 = (k 0-7, n 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15): b0 and
  // b1 of two n8 blocks.
  const uint32_t b_off = 2u * TileLayout<WB>::offset(b_row0 + (lane & 7) + 8 * ((lane >> 3) & 1),
                                                     b_col0 + 8 * (lane >> 4));
  JA_UNROLL
  for (int kk = 0; kk < KS; ++kk) {
    JA_UNROLL
    for (int jp = 0; jp < NB / 2; ++jp) {
      uint32_t r[4];
      ldmatrix_x4_trans(r, b_base + (b_off ^ (32u * jp)) + kk * 32u * WB);
      const uint32_t b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
      JA_UNROLL
      for (int i = 0; i < MI; ++i) {
        mma_16816<E>(c[i][2 * jp], a[i][kk].r, b0);
        mma_16816<E>(c[i][2 * jp + 1], a[i][kk].r, b1);
      }
    }
  }
}

JA_DEVICE float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
JA_DEVICE float fast_log2(float x) {
  float y;
  asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
JA_DEVICE float fmax_(float a, float b) { return fmaxf(a, b); }

// Global -> shared copies of 16 bytes, asynchronous on sm_90 (zero-filled when !valid).
JA_DEVICE void copy_16(uint16_t* dst, const uint16_t* src, bool valid) {
  cp_async_16(shared_address(dst), src, valid);
}
JA_DEVICE void async_commit() { cp_async_commit(); }
template <int kPending>
JA_DEVICE void async_wait() {
  cp_async_wait<kPending>();
}

#elif defined(__HIP__)

struct AccLayout {
  static constexpr int kW = 16;
  static constexpr int kSlots = 1;
  static constexpr int kRun = 4;  // e = 0..3 are 4 consecutive columns of one row
  JA_DEVICE static constexpr int slot(int) { return 0; }
  JA_DEVICE static int row(int lane, int) { return lane & 15; }
  JA_DEVICE static int col(int lane, int e) { return 4 * (lane >> 4) + e; }
  JA_DEVICE static int slot_row(int lane, int) { return lane & 15; }
  JA_DEVICE static bool row_leader(int lane) { return lane < 16; }
  JA_DEVICE static float row_max(float v) {
    v = __builtin_fmaxf(v, shuffle_xor(v, 16));
    return __builtin_fmaxf(v, shuffle_xor(v, 32));
  }
  JA_DEVICE static float row_sum(float v) {
    v += shuffle_xor(v, 16);
    return v + shuffle_xor(v, 32);
  }
};

// One 16 x 16 A operand from registers: the MFMA's B fragment (4 k-consecutive elements).
struct AFrag {
  Frag4 f;
};

template <typename E, int MI, int KS>
JA_DEVICE void to_afrags(const float (&c)[MI][KS][4], AFrag (&a)[MI][KS]) {
  JA_UNROLL
  for (int i = 0; i < MI; ++i) {
    JA_UNROLL
    for (int kk = 0; kk < KS; ++kk) {
      JA_UNROLL
      for (int e = 0; e < 4; ++e) a[i][kk].f.v[e] = E::store(c[i][kk][e]);
    }
  }
}

template <typename E, int WA, int WB, int MI, int NB, int KS>
JA_DEVICE void mma_nk(float (&c)[MI][NB][4], const uint16_t* sa, int a_row0, const uint16_t* sb,
                      int b_row0, int lane) {
  static_assert(WA >= 64 && WB >= 64 && 16 * KS <= WA && 16 * KS <= WB);
  const int a_off = TileLayout<WA>::offset(a_row0 + (lane & 15), 4 * (lane >> 4));
  const int b_off = TileLayout<WB>::offset(b_row0 + (lane & 15), 4 * (lane >> 4));
  JA_UNROLL
  for (int kk = 0; kk < KS; ++kk) {
    Frag4 a[MI], b[NB];
    JA_UNROLL
    for (int i = 0; i < MI; ++i) {
      a[i] = *reinterpret_cast<const Frag4*>(sa + (a_off ^ (16 * kk)) + 16 * i * WA);
    }
    JA_UNROLL
    for (int j = 0; j < NB; ++j) {
      b[j] = *reinterpret_cast<const Frag4*>(sb + (b_off ^ (16 * kk)) + 16 * j * WB);
    }
    JA_UNROLL
    for (int i = 0; i < MI; ++i) {
      JA_UNROLL
      for (int j = 0; j < NB; ++j) MfmaOp<E>::mma(b[j], a[i], c[i][j]);  // C^T = B^T A^T
    }
  }
}

template <typename E, int WB, int MI, int NB, int KS>
JA_DEVICE void mma_rk(float (&c)[MI][NB][4], const AFrag (&a)[MI][KS], const uint16_t* sb,
                      int b_row0, int b_col0, int lane) {
  static_assert(WB >= 64 && 16 * NB <= WB);
  // The MFMA's A operand B^T: lane holds B[k = 4 (lane / 16) + e][n = lane % 16], 4 rows apart.
  int off[4];
  JA_UNROLL
  for (int e = 0; e < 4; ++e) {
    off[e] = TileLayout<WB>::offset(b_row0 + 4 * (lane >> 4) + e, b_col0 + (lane & 15));
  }
  JA_UNROLL
  for (int kk = 0; kk < KS; ++kk) {
    JA_UNROLL
    for (int j = 0; j < NB; ++j) {
      Frag4 b;
      JA_UNROLL
      for (int e = 0; e < 4; ++e) b.v[e] = sb[(off[e] ^ (16 * j)) + 16 * kk * WB];
      JA_UNROLL
      for (int i = 0; i < MI; ++i) MfmaOp<E>::mma(b, a[i][kk].f, c[i][j]);
    }
  }
}

JA_DEVICE float fast_exp2(float x) { return __builtin_amdgcn_exp2f(x); }
JA_DEVICE float fast_log2(float x) { return __builtin_amdgcn_logf(x); }
JA_DEVICE float fmax_(float a, float b) { return __builtin_fmaxf(a, b); }

// No asynchronous copy on AMD: through registers, synchronously (a barrier publishes it).
JA_DEVICE void copy_16(uint16_t* dst, const uint16_t* src, bool valid) {
  Pack<uint16_t, 8> v = {};
  if (valid) v = *reinterpret_cast<const Pack<uint16_t, 8>*>(src);
  *reinterpret_cast<Pack<uint16_t, 8>*>(dst) = v;
}
JA_DEVICE void async_commit() {}
template <int kPending>
JA_DEVICE void async_wait() {}

#endif

}  // namespace ja
