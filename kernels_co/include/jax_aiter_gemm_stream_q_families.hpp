// The quantized GEMMs' families of the weight-streaming decode engine (jax_aiter_gemm_stream_q.hpp)
// and the kernels' bodies: what each family's weight element is and where its scales apply.
//
// All three read the weight in AITER's shuffled (16, 16) layout as it is (16-byte chunk c of row
// n of a group at + 256 c + 16 (n % 16)) and feed mma.m16n8k32 (e4m3 or s8) with it as the A
// operand. The dot product does not care in which order K is summed, so a lane's k slots are any
// bijection the A operand (the activations) follows too:
//   1-byte weights (Bytes16): lane (g, t) reads 16-byte chunks t, t + 4, t + 8, t + 12 of a step
//     (rows g, g + 8), each the fragment of two k32 steps: word 2h of a chunk is a0 / a1 of step
//     h, word 2h + 1 a2 / a3; the A row reads the same chunk into b0, b1 (logical k 4t..4t+3 ->
//     physical word 2h, 16 + 4t.. -> word 2h + 1, for both operands). A k32 step then mixes four
//     chunks, which is fine while they share a scale: the FP8 scale block is 128 bytes, and chunks
//     t, t + 4 of a step half lie in one.
//   FP4 (e2m1 with an e8m0 scale per 32-value block = one 16-byte chunk): a k32 step must stay in
//     one chunk, so lane (g, t) reads 4 bytes of each chunk (bytes 4t..4t+3, 8 values), the four
//     lanes of a row the whole chunk. Each nibble becomes an e4m3 byte by shifts alone: s e1 e0 m
//     -> s 0 0 e1 e0 m 0 0 is e4m3 of exponent e, mantissa m/2, i.e. the e2m1 value times 2^-6
//     for normal and subnormal e2m1 alike; the odd nibbles of a word make one fragment register
//     (sign already in place), the even ones the other. The products carry 2^-12 (exact: a 32-
//     block's sum is a multiple of 2^-14 below 2^-1), which the store takes out.
// Scales: FP8 block-scale folds each 128-byte block's f32 sum times a_scale[kb][m] * b_scale[n /
// 128][kb] into the totals (the portable tile's fold, jax_aiter_gemm_fp8bs_tile.hpp); FP4 each
// 32-block's sum times e8m0(sb) * e8m0(sa) (AITER's e8m0_shuffle layout, lane t reading the scale
// word of j2 = t for its rows and handing it round by shuffles); INT8 sums exactly in int32 and
// scales once in the store (as jax_aiter_gemm_i8_finish does).
#pragma once

#include "jax_aiter_gemm_stream_q.hpp"

#if defined(__CUDACC__)

#include "jax_aiter/kernels/shared/aiter_f4gemm.h"
#include "jax_aiter_gemm_fp8bs_tile.hpp"  // mma_16832_e4m3
#include "jax_aiter_gemm_i8_tile.hpp"     // mma_16832_s8

namespace ja::stream_q {

// A lane's place: fragment row g (rows g, g + 8 of the group), k slot t.
struct Lane {
  int g, t;
  JA_DEVICE static Lane here() {
    const int lane = thread_id() % kWarp;
    return {lane / 4, lane % 4};
  }
};

// The 1-byte weights' step: rows g, g + 8; chunks t + 4 j of the step's 16.
struct Bytes16 {
  uint32_t w[2][4][4];
};

// Rows of A (8 i + g) and weight rows of one lane, for the 1-byte families.
struct Bytes16Rows {
  const unsigned char* w;  // the lane's row g of the group (row g + 8 at + 128)
  const unsigned char* a[2];
  bool a_ok[2];
  int t;

  JA_DEVICE void init(const void* b, int n0, int kbytes, const void* a_base, int lda, int M) {
    const Lane l = Lane::here();
    t = l.t;
    w = static_cast<const unsigned char*>(b) + static_cast<int64_t>(n0) * kbytes + 16 * l.g;
    JA_UNROLL
    for (int i = 0; i < 2; ++i) {
      const int m = l.g + 8 * i;
      a_ok[i] = m < M;
      a[i] =
          static_cast<const unsigned char*>(a_base) + static_cast<int64_t>(a_ok[i] ? m : 0) * lda;
    }
  }
  JA_DEVICE void load(Bytes16& f, int k, int k_end) const {
    JA_UNROLL
    for (int j = 0; j < 4; ++j) {
      const int kc = k + 16 * (4 * j + t);
      JA_UNROLL
      for (int h = 0; h < 2; ++h) {
        load_stream_16(f.w[h][j], w + 16 * static_cast<int64_t>(kc) + 128 * h, kc < k_end);
      }
    }
  }
  // The A operand of chunk j (0..3) of the step at k, row group i.
  JA_DEVICE void load_a(uint32_t (&x)[4], int i, int k, int j, int k_end) const {
    const int kc = k + 16 * (4 * j + t);
    load_act_16(x, a[i] + kc, a_ok[i] && kc < k_end);
  }
  // The two k32 steps of chunk j: d += weight rows . A row group.
  template <class Mma, class D>
  JA_DEVICE static void mma_chunk(D (&d)[4], const Bytes16& f, int j, const uint32_t (&x)[4],
                                  Mma&& mma) {
    JA_UNROLL
    for (int h = 0; h < 2; ++h) {
      const uint32_t wa[4] = {f.w[0][j][2 * h], f.w[1][j][2 * h], f.w[0][j][2 * h + 1],
                              f.w[1][j][2 * h + 1]};
      const uint32_t xb[2] = {x[2 * h], x[2 * h + 1]};
      mma(d, wa, xb);
    }
  }
};

// FP8 (e4m3fn) block-scale: K % 128 == 0, so a split (whole steps) and each half-step (128 bytes)
// is one whole scale block.
struct Fp8BlockscaleFamily {
  static constexpr int kStepBytes = S::kStepBytes;
  using Acc = float;
  using Raw = Bytes16;
  Bytes16Rows rows;
  const float* sa;  // a_scale [K/128, M]
  const float* sb;  // the group's b_scale row (N block n0 / 128)
  int M, t;

  JA_DEVICE void load(Raw& f, int k, int k_end) const { rows.load(f, k, k_end); }

  template <int MT>
  JA_DEVICE void compute(Acc (&acc)[2][4], const Raw& f, int k, int k_end) const {
    JA_UNROLL
    for (int q = 0; q < 2; ++q) {
      const int kq = k + 128 * q;
      if (kq >= k_end) break;
      const int kb = kq / 128;
      const float s_b = sb[kb];
      JA_UNROLL
      for (int i = 0; i < MT; ++i) {
        const int m = 8 * i + 2 * t;
        const float* sak = sa + static_cast<int64_t>(kb) * M;
        const float s0 = m < M ? sak[m] * s_b : 0.f, s1 = m + 1 < M ? sak[m + 1] * s_b : 0.f;
        uint32_t x[2][4];
        JA_UNROLL
        for (int jj = 0; jj < 2; ++jj) rows.load_a(x[jj], i, k, 2 * q + jj, k_end);
        float d[4] = {0.f, 0.f, 0.f, 0.f};
        JA_UNROLL
        for (int jj = 0; jj < 2; ++jj) {
          Bytes16Rows::mma_chunk(d, f, 2 * q + jj, x[jj],
                                 [](float(&c)[4], const uint32_t(&a)[4], const uint32_t(&b)[2]) {
                                   mma_16832_e4m3(c, a, b);
                                 });
        }
        acc[i][0] += d[0] * s0;
        acc[i][1] += d[1] * s1;
        acc[i][2] += d[2] * s0;
        acc[i][3] += d[3] * s1;
      }
    }
  }
};

// INT8: exact int32 sums (K % 32 == 0: a step's chunks past K read as zeros).
struct I8Family {
  static constexpr int kStepBytes = S::kStepBytes;
  using Acc = int;
  using Raw = Bytes16;
  Bytes16Rows rows;

  JA_DEVICE void load(Raw& f, int k, int k_end) const { rows.load(f, k, k_end); }

  template <int MT>
  JA_DEVICE void compute(Acc (&acc)[2][4], const Raw& f, int k, int k_end) const {
    JA_UNROLL
    for (int i = 0; i < MT; ++i) {
      uint32_t x[4][4];
      JA_UNROLL
      for (int j = 0; j < 4; ++j) rows.load_a(x[j], i, k, j, k_end);
      JA_UNROLL
      for (int j = 0; j < 4; ++j) {
        Bytes16Rows::mma_chunk(acc[i], f, j, x[j],
                               [](int(&c)[4], const uint32_t(&a)[4], const uint32_t(&b)[2]) {
                                 mma_16832_s8(c, a, b);
                               });
      }
    }
  }
};

// e2m1 nibbles -> e4m3 bytes (value times 2^-6; the header's note): the odd nibbles of w, and the
// even ones.
JA_DEVICE uint32_t e2m1_odd_as_e4m3(uint32_t w) {
  return (w & 0x80808080u) | ((w >> 2) & 0x1C1C1C1Cu);
}
JA_DEVICE uint32_t e2m1_even_as_e4m3(uint32_t w) {
  return ((w << 4) & 0x80808080u) | ((w << 2) & 0x1C1C1C1Cu);
}
// An e8m0 scale code as a float: 2^(code - 127); code 0 is 2^-127, 255 NaN (as fp4::e8m0).
JA_DEVICE float e8m0_value(uint32_t code) {
  return bits_to_float(code == 0 ? 0x00400000u : code == 255 ? 0x7FC00000u : code << 23);
}

// FP4's step: a lane's 4 bytes of each of the step's 16 chunks (rows g, g + 8), and its scale
// words (8-block group j0 of the step, row g + 8 h; j2 = t).
template <int kChunks>
struct Fp4Raw {
  uint32_t w[2][kChunks];
  uint32_t s[kChunks / 8][2];
};

// FP4 (MXFP4): K % 64 == 0 (32-byte rows), so a step's chunks past K read as zeros and their scale
// words are never used. Scale (r, c) of the e8m0_shuffle layout (kernels/shared/aiter_f4gemm.h):
// byte (r / 32 * sn / 8 + c / 8) 256 + (c % 4) 64 + (r % 16) 4 + ((c % 8) / 4) 2 + (r % 32) / 16.
struct Fp4Family {
  static constexpr int kStepBytes = S::kStepBytes / 2;  // 8 chunks: 256 left no registers (spills)
  static constexpr int kChunks = kStepBytes / 16, kGroups = kChunks / 8;
  using Acc = float;
  using Raw = Fp4Raw<kChunks>;
  const unsigned char* w;   // the lane's row g of the group, + 4t (row g + 8 at + 128)
  const unsigned char* sw;  // its scale words: row g, j2 = t, 8-block group 0 (row g + 8 at + 32)
  const unsigned char* a[2];
  const unsigned char* sa;  // A's scale words: rows 2t, 2t + 1, j2 0, group 0 (rows + 8 at + 32)
  bool a_ok[2];
  int g, t, i1;  // i1: the weight group's half of its 32-row scale block

  JA_DEVICE void init(const void* b, const void* b_scale, int sb_stride, const void* a_base,
                      int lda, const void* a_scale, int n0, int kbytes, int M) {
    const Lane l = Lane::here();
    g = l.g;
    t = l.t;
    i1 = (n0 / 16) % 2;
    w = static_cast<const unsigned char*>(b) + static_cast<int64_t>(n0) * kbytes + 16 * g + 4 * t;
    sw = static_cast<const unsigned char*>(b_scale) +
         static_cast<int64_t>(n0 / 32) * (sb_stride / 8) * 256 + 64 * t + 4 * g;
    JA_UNROLL
    for (int i = 0; i < 2; ++i) {
      const int m = g + 8 * i;
      a_ok[i] = m < M;
      a[i] = static_cast<const unsigned char*>(a_base) +
             static_cast<int64_t>(a_ok[i] ? m : 0) * lda + 4 * t;
    }
    sa = static_cast<const unsigned char*>(a_scale) +
         8 * t;  // rows < 16: r / 32 = (r % 32) / 16 = 0
  }

  JA_DEVICE void load(Raw& f, int k, int k_end) const {
    JA_UNROLL
    for (int c = 0; c < kChunks; ++c) {
      const int kc = k + 16 * c;
      JA_UNROLL
      for (int h = 0; h < 2; ++h) {
        f.w[h][c] = load_weight_4(w + 16 * static_cast<int64_t>(kc) + 128 * h, kc < k_end);
      }
    }
    JA_UNROLL
    for (int j0 = 0; j0 < kGroups; ++j0) {
      const int kg = k + 128 * j0;  // the group's first chunk, 16 bytes a 32-block
      JA_UNROLL
      for (int h = 0; h < 2; ++h) {
        f.s[j0][h] = load_weight_4(sw + static_cast<int64_t>(kg / 128) * 256 + 32 * h, kg < k_end);
      }
    }
  }

  template <int MT>
  JA_DEVICE void compute(Acc (&acc)[2][4], const Raw& f, int k, int k_end) const {
    JA_UNROLL
    for (int j0 = 0; j0 < kGroups; ++j0) {
      const int kg = k + 128 * j0;
      if (kg >= k_end) break;
      JA_UNROLL
      for (int j2 = 0; j2 < 4; ++j2) {
        const int src = 4 * g + j2;  // the lane holding rows g, g + 8's words of this j2
        const uint32_t wn[2] = {__shfl_sync(0xffffffffu, f.s[j0][0], src),
                                __shfl_sync(0xffffffffu, f.s[j0][1], src)};
        uint32_t wm[2][2];
        JA_UNROLL
        for (int i = 0; i < MT; ++i) {
          load_act_8(wm[i], sa + static_cast<int64_t>(kg / 128) * 256 + 64 * j2 + 32 * i, true);
        }
        JA_UNROLL
        for (int j1 = 0; j1 < 2; ++j1) {
          const int c = 8 * j0 + 4 * j1 + j2, kc = k + 16 * c;
          if (kc >= k_end) continue;
          const int shift = 8 * (2 * j1 + i1);
          const float sn[2] = {e8m0_value((wn[0] >> shift) & 0xFFu),
                               e8m0_value((wn[1] >> shift) & 0xFFu)};
          const uint32_t wa[4] = {e2m1_odd_as_e4m3(f.w[0][c]), e2m1_odd_as_e4m3(f.w[1][c]),
                                  e2m1_even_as_e4m3(f.w[0][c]), e2m1_even_as_e4m3(f.w[1][c])};
          JA_UNROLL
          for (int i = 0; i < MT; ++i) {
            const uint32_t xw = load_act_4(a[i] + kc, a_ok[i]);
            const uint32_t xb[2] = {e2m1_odd_as_e4m3(xw), e2m1_even_as_e4m3(xw)};
            float d[4] = {0.f, 0.f, 0.f, 0.f};
            mma_16832_e4m3(d, wa, xb);
            const float sm[2] = {e8m0_value((wm[i][0] >> (16 * j1)) & 0xFFu),
                                 e8m0_value((wm[i][1] >> (16 * j1)) & 0xFFu)};
            JA_UNROLL
            for (int r = 0; r < 4; ++r) acc[i][r] += d[r] * (sn[r / 2] * sm[r % 2]);
          }
        }
      }
    }
  }
};

// The products' 2^-12 (e2m1 read as e4m3 times 2^-6, both operands), taken out in the store.
inline constexpr float kFp4Unscale = 4096.f;

// ---- the kernels' bodies (parameter lists: kernels/gemm_*.hpp's Stream / StreamFinish args) ----

JA_DEVICE void gemm_fp8_blockscale_stream(const void* a, const void* b, const void* a_scale,
                                          const void* b_scale, void* out, void* partials, int M,
                                          int N, int K, int lda, int k_chunk, int splits,
                                          int out_f16) {
  const int n0 = block_id() * S::kRows;
  if (n0 >= N) return;
  Fp8BlockscaleFamily f;
  f.rows.init(b, n0, K, a, lda, M);
  f.sa = static_cast<const float*>(a_scale);
  f.sb = static_cast<const float*>(b_scale) + static_cast<int64_t>(n0 / 128) * (K / 128);
  f.M = M;
  f.t = Lane::here().t;
  auto* o = static_cast<uint16_t*>(out);
  stream_split(f, M, N, n0, K, k_chunk, splits, partials, [&](int m, int n, float v) {
    o[static_cast<int64_t>(m) * N + n] = out_f16 ? F16::store(v) : BF16::store(v);
  });
}

// y = sum * a_scale[m] * b_scale[n] (+ bias[n]) as bf16: jax_aiter_gemm_i8_finish's epilogue.
JA_DEVICE void store_i8(uint16_t* o, int m, int n, int N, int v, const float* sa, const float* sb,
                        const float* bias) {
  const float y = static_cast<float>(v) * sa[m] * sb[n] + (bias != nullptr ? bias[n] : 0.f);
  o[static_cast<int64_t>(m) * N + n] = BF16::store(y);
}

JA_DEVICE void gemm_i8_stream(const void* a, const void* b, const void* a_scale,
                              const void* b_scale, const void* bias, void* out, void* partials,
                              int M, int N, int K, int lda, int k_chunk, int splits) {
  const int n0 = block_id() * S::kRows;
  if (n0 >= N) return;
  I8Family f;
  f.rows.init(b, n0, K, a, lda, M);
  stream_split(f, M, N, n0, K, k_chunk, splits, partials, [&](int m, int n, int v) {
    store_i8(static_cast<uint16_t*>(out), m, n, N, v, static_cast<const float*>(a_scale),
             static_cast<const float*>(b_scale), static_cast<const float*>(bias));
  });
}

JA_DEVICE void gemm_i8_stream_finish(const void* partials, const void* a_scale, const void* b_scale,
                                     const void* bias, void* out, int M, int N, int splits) {
  stream_finish<int>(partials, M, N, splits, [&](int m, int n, int v) {
    store_i8(static_cast<uint16_t*>(out), m, n, N, v, static_cast<const float*>(a_scale),
             static_cast<const float*>(b_scale), static_cast<const float*>(bias));
  });
}

// k_chunk: K values a split (a multiple of 2 kStepBytes).
JA_DEVICE void gemm_fp4_stream(const void* a, const void* b, const void* a_scale,
                               const void* b_scale, void* out, void* partials, int M, int N, int K,
                               int lda, int sb_stride, int k_chunk, int splits) {
  const int n0 = block_id() * S::kRows;
  if (n0 >= N) return;
  Fp4Family f;
  f.init(b, b_scale, sb_stride, a, lda, a_scale, n0, K / 2, M);
  auto* o = static_cast<uint16_t*>(out);
  stream_split(f, M, N, n0, K / 2, k_chunk / 2, splits, partials, [&](int m, int n, float v) {
    o[static_cast<int64_t>(m) * N + n] = BF16::store(v * kFp4Unscale);
  });
}

JA_DEVICE void gemm_fp4_stream_finish(const void* partials, void* out, int M, int N, int splits) {
  auto* o = static_cast<uint16_t*>(out);
  stream_finish<float>(partials, M, N, splits, [&](int m, int n, float v) {
    o[static_cast<int64_t>(m) * N + n] = BF16::store(v * kFp4Unscale);
  });
}

}  // namespace ja::stream_q

#endif  // __CUDACC__
