// The FP4 (MXFP4) sub-tile shared by our portable FP4 GEMM kernels (kernels_co/gemm_fp4.kernel.cpp)
// and the ABI twins of AITER's FP4 GEMM (kernels_co/aiter_f4gemm.twin.cpp):
//
//   acc[SM x 64] (float) = sum over 32-blocks kb in [k_begin, k_end) of
//       (sum_{k in kb} e2m1(A[r][k]) e2m1(B[c][k])) * (e8m0(SA[r][kb]) * e8m0(SB[c][kb]))
//
// A fp4x2 row-major (row r at a + r * lda bytes, low nibble first), B fp4x2 [N, K/2] shuffled
// (16, 16) or plain, the scales in AITER's e8m0_shuffle layout (kernels/shared/aiter_f4gemm.h).
// Each 32-block's sum is exact in float (multiples of 1/4 below 2^11), then scaled and added in
// K order: the host twins (include/jax_aiter/host_twins/gemm_fp4.hpp) compute the same floats.
// FP4 is dequantised in the kernel into shared memory and multiplied with plain float FMAs on
// every target (256 threads: 16 column groups of 4 x 16 row groups of SM / 16).
#pragma once

#include "jax_aiter/kernels/shared/aiter_f4gemm.h"
#include "jax_aiter_gemm_i8_tile.hpp"  // atomic_add_bf16

namespace ja::fp4 {

namespace L = jax_aiter::kernels::aiter_f4gemm;
inline constexpr int kThreads = 256;
inline constexpr int kSN = 64;

JA_DEVICE float e2m1(uint32_t n) {
  const uint32_t e = (n >> 1) & 3u, m = n & 1u;
  const float mag = e == 0
                        ? 0.5f * static_cast<float>(m)
                        : (1.0f + 0.5f * static_cast<float>(m)) * static_cast<float>(1u << (e - 1));
  return (n & 8u) ? -mag : mag;
}
JA_DEVICE float e8m0(uint32_t code) {
  if (code == 0xFFu) return bits_to_float(0x7FC00000u);
  return bits_to_float(code == 0 ? 0x00400000u : code << 23);
}

struct Operands {
  const unsigned char* a;  // row 0 of the whole A
  long long lda;
  const unsigned char* b;
  bool b_shuffled;
  const unsigned char* sa;
  long long sa_stride;
  const unsigned char* sb;
  long long sb_stride;
  int M, N, K;
};

template <int SM>
struct Shared {
  float a[SM][33];
  float b[kSN][33];
  float sa[SM];
  float sb[kSN];
};

// The SM x 64 sub-tile at (m0, n0) over K [k_begin, k_end) (32-multiples); store(r, c, v) for
// each valid element (r, c relative to m0, n0).
template <int SM, class Store>
JA_DEVICE void subtile(Shared<SM>& sh, const Operands& o, int m0, int n0, int k_begin, int k_end,
                       Store store) {
  constexpr int kRM = SM / 16;
  const int t = thread_id();
  const int tc = t % 16, tr = t / 16;  // columns 4 tc .. 4 tc + 3, rows tr + 16 i
  float acc[kRM][4];
  for (int i = 0; i < kRM; ++i) {
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.f;
  }
  const long long kbytes = o.K / 2;
  for (int k = k_begin; k < k_end; k += L::kScaleBlock) {
    barrier();
    // (SM + 64) rows x 4 quads of 4 bytes (8 values) each.
    for (int q = t; q < (SM + kSN) * 4; q += kThreads) {
      const int row = q / 4, part = q % 4;
      const bool is_a = row < SM;
      const int rr = is_a ? row : row - SM;
      const int g = is_a ? m0 + rr : n0 + rr;
      const bool valid = g < (is_a ? o.M : o.N);
      float* dst = is_a ? sh.a[rr] : sh.b[rr];
      const long long kb = k / 2 + part * 4;
      const unsigned char* src =
          is_a ? o.a + g * o.lda + kb
               : (o.b_shuffled ? o.b + L::shuffled_b_offset(g, kb, kbytes) : o.b + g * kbytes + kb);
      for (int e = 0; e < 4; ++e) {
        const uint32_t byte = valid ? src[e] : 0u;
        dst[part * 8 + 2 * e] = e2m1(byte & 15u);
        dst[part * 8 + 2 * e + 1] = e2m1(byte >> 4);
      }
      if (part == 0) {
        const long long blk = k / L::kScaleBlock;
        const uint32_t code = valid ? (is_a ? o.sa[L::shuffled_scale_offset(g, blk, o.sa_stride)]
                                            : o.sb[L::shuffled_scale_offset(g, blk, o.sb_stride)])
                                    : 127u;
        (is_a ? sh.sa : sh.sb)[rr] = e8m0(code);
      }
    }
    barrier();
    float part[kRM][4];
    for (int i = 0; i < kRM; ++i) {
      for (int j = 0; j < 4; ++j) part[i][j] = 0.f;
    }
    for (int kk = 0; kk < L::kScaleBlock; ++kk) {
      float av[kRM], bv[4];
      for (int i = 0; i < kRM; ++i) av[i] = sh.a[tr + 16 * i][kk];
      for (int j = 0; j < 4; ++j) bv[j] = sh.b[4 * tc + j][kk];
      for (int i = 0; i < kRM; ++i) {
        for (int j = 0; j < 4; ++j) part[i][j] += av[i] * bv[j];
      }
    }
    for (int i = 0; i < kRM; ++i) {
      for (int j = 0; j < 4; ++j)
        acc[i][j] += part[i][j] * (sh.sa[tr + 16 * i] * sh.sb[4 * tc + j]);
    }
  }
  for (int i = 0; i < kRM; ++i) {
    for (int j = 0; j < 4; ++j) {
      const int r = tr + 16 * i, c = 4 * tc + j;
      if (m0 + r < o.M && n0 + c < o.N) store(r, c, acc[i][j]);
    }
  }
}

}  // namespace ja::fp4
