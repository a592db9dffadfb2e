// The weight-streaming block algorithm of our portable GEMM's decode tiles (M <= 16; tiles whose
// name starts with 's' in JAX_AITER_GEMM_TILES, kernels_co/gemm.kernel.cpp), sm_90 only:
//
//   acc[16 x BN] = A[rows, k_begin:k_end] . B[BN rows, k_begin:k_end]^T, fp32 accumulation,
//
// both operands K-major 16-bit, 16-byte aligned rows and K % 8 == 0 (the `aligned` kernels; the
// others, and every AMD build, run GemmTile instead). No shared-memory staging: B (the weights,
// read once) goes from global memory straight into mma.sync operand registers, in long runs per
// row, double-buffered in registers so that two steps of loads are in flight per thread.
//
// Warps: BN / 16 along N (16 B rows each) times kWK along K. A step of the block covers BK of K:
// warp (wn, wk) takes [k + wk * kWarpK, + kWarpK) of it, so one B row is read as a contiguous
// run of BK * 2 bytes per step by the block (kWarpK * 2 bytes per warp). At the end the kWK warps
// of each wn sum their accumulators through shared memory, in wk order (deterministic).
//
// mma.m16n8k16 with B as the A operand (16 n-rows) and A as the B operand (8 m-columns; a second
// mma for rows 8..15 only when the block has more than 8 rows). The dot product does not care in
// which order K is summed, so each thread loads 16 contiguous bytes (8 k) of a row and uses them
// as its fragment of two consecutive mma k-steps; A is loaded with the same k mapping:
//   thread (g = lane / 4, t = lane % 4), 16-byte load j of a step: row elements
//   k + 32 j + 8 t .. + 8, words w0..w3 (2 elements each); mma k-step 2 j + h takes
//   a0 = B[n g] w(2h), a1 = B[n g + 8] w(2h), a2 = B[n g] w(2h+1), a3 = B[n g + 8] w(2h+1),
//   b0 = A[m g] w(2h), b1 = A[m g] w(2h+1)
// which are, for k-step 2 j + h, logical k {2t, 2t+1} -> physical 32 j + 8 t + 4 h + {0, 1} and
// logical {2t+8, 2t+9} -> physical + {2, 3}: the same bijection for both operands.
// Result: d0, d1 = (n g, m 2t, 2t+1), d2, d3 = (n g + 8, m 2t, 2t+1).
#pragma once

#include "jax_aiter_gemm_tile.hpp"
#include "jax_aiter_stream_loads.hpp"

namespace ja {

#if defined(__CUDACC__)

template <typename E, int BN, int BK, int THREADS>
struct GemmStream {
  static constexpr int kWarps = THREADS / kWarp;
  static constexpr int kWN = BN / 16;
  static_assert(BN % 16 == 0 && kWarps % kWN == 0, "warps: BN / 16 along N, the rest along K");
  static constexpr int kWK = kWarps / kWN;
  static constexpr int kWarpK = BK / kWK;  // K of one warp per step
  static_assert(kWarpK % 32 == 0 && kWarpK * kWK == BK);
  static constexpr int kLoads = kWarpK / 32;  // 16-byte loads per row per thread per step
  static constexpr int kRun = 1;
  // Shared memory of the cross-warp sum: floats as [warp][register][lane], in 16-bit elements
  // (a multiple of 8, as GemmTile's).
  static constexpr int kSmemFloats = kWK > 1 ? kWarps * 8 * kWarp : 4;
  static constexpr int kSmemElems = 2 * kSmemFloats;
  static constexpr int kMinBlocks = 2;

  float acc[2][4];
  int wn, wk, lane;

  // Computes the tile into the accumulators (see for_each); a: the block's first A row, b: its
  // first B row. Every thread of the block calls it; smem: kSmemElems elements, 16-byte aligned.
  JA_DEVICE void run(uint16_t* smem16, Operand a, int rows_a, Operand b, int rows_b, int k_begin,
                     int k_end) {
    (void)smem16;  // unused with one warp along K
    const int warp = thread_id() / kWarp;
    lane = thread_id() % kWarp;
    wn = warp % kWN;
    wk = warp / kWN;
    JA_UNROLL
    for (int i = 0; i < 2; ++i) {
      JA_UNROLL
      for (int r = 0; r < 4; ++r) acc[i][r] = 0.f;
    }
    if (rows_a <= 8) {
      main_loop<1>(a, rows_a, b, rows_b, k_begin, k_end);
    } else {
      main_loop<2>(a, rows_a, b, rows_b, k_begin, k_end);
    }
    if constexpr (kWK > 1) {
      float* smem = reinterpret_cast<float*>(smem16);
      if (wk > 0) {
        JA_UNROLL
        for (int i = 0; i < 2; ++i) {
          JA_UNROLL
          for (int r = 0; r < 4; ++r) smem[(warp * 8 + 4 * i + r) * kWarp + lane] = acc[i][r];
        }
      }
      barrier();
      if (wk == 0) {
        for (int w = 1; w < kWK; ++w) {
          const int src = w * kWN + wn;
          JA_UNROLL
          for (int i = 0; i < 2; ++i) {
            JA_UNROLL
            for (int r = 0; r < 4; ++r) acc[i][r] += smem[(src * 8 + 4 * i + r) * kWarp + lane];
          }
        }
      }
    }
  }

  // f(row, col, v, 0) for each accumulator of the block tile (warps of wk 0 hold the sums).
  template <class F>
  JA_DEVICE void for_each(F&& f) const {
    if (wk != 0) return;
    const int g = lane / 4, t = lane % 4;
    JA_UNROLL
    for (int i = 0; i < 2; ++i) {
      JA_UNROLL
      for (int r = 0; r < 4; ++r) {
        f(8 * i + 2 * t + r % 2, 16 * wn + g + 8 * (r / 2), acc[i][r], 0.f);
      }
    }
  }

 private:
  // One step's B operands of this thread: rows g, g + 8.
  struct Frags {
    uint32_t b[2][kLoads][4];
  };

  template <int MT>
  JA_DEVICE void main_loop(Operand a, int rows_a, Operand b, int rows_b, int k_begin, int k_end) {
    const int g = lane / 4, t = lane % 4;
    const unsigned char* brow[2];
    bool b_ok[2];
    JA_UNROLL
    for (int h = 0; h < 2; ++h) {
      const int r = 16 * wn + g + 8 * h;
      b_ok[h] = r < rows_b;
      brow[h] = b.base + (b_ok[h] ? r : 0) * b.stride + 16 * t;
    }
    const unsigned char* arow[MT];
    bool a_ok[MT];
    JA_UNROLL
    for (int i = 0; i < MT; ++i) {
      const int r = g + 8 * i;
      a_ok[i] = r < rows_a;
      arow[i] = a.base + (a_ok[i] ? r : 0) * a.stride + 16 * t;
    }
    // The step at k: this thread's chunk j starts at element k + 32 j + 8 t. B is loaded a step
    // ahead (two register buffers); A, an L1/L2 hit, right before the step's mma.
    auto load = [&](Frags& f, int k) {
      JA_UNROLL
      for (int j = 0; j < kLoads; ++j) {
        const int kc = k + 32 * j;
        const bool k_ok = kc + 8 * t < k_end;
        JA_UNROLL
        for (int h = 0; h < 2; ++h) load_stream_16(f.b[h][j], brow[h] + 2 * kc, k_ok && b_ok[h]);
      }
    };
    // A's 8-row tiles one after the other: a tile's A registers are live for its mma only.
    auto compute = [&](const Frags& f, int k) {
      JA_UNROLL
      for (int i = 0; i < MT; ++i) {
        uint32_t x[kLoads][4];
        JA_UNROLL
        for (int j = 0; j < kLoads; ++j) {
          const int kc = k + 32 * j;
          load_reused_16(x[j], arow[i] + 2 * kc, kc + 8 * t < k_end && a_ok[i]);
        }
        JA_UNROLL
        for (int j = 0; j < kLoads; ++j) {
          JA_UNROLL
          for (int h = 0; h < 2; ++h) {
            const uint32_t wa[4] = {f.b[0][j][2 * h], f.b[1][j][2 * h], f.b[0][j][2 * h + 1],
                                    f.b[1][j][2 * h + 1]};
            const uint32_t xb[2] = {x[j][2 * h], x[j][2 * h + 1]};
            mma_16816<E>(acc[i], wa, xb);
          }
        }
      }
    };
    // Two register buffers, used alternately (no copies: a copy would wait for the loads).
    Frags f0, f1;
    int k = k_begin + wk * kWarpK;
    if (k >= k_end) return;
    load(f0, k);
    for (;;) {
      load(f1, k + BK);
      compute(f0, k);
      k += BK;
      if (k >= k_end) break;
      load(f0, k + BK);
      compute(f1, k);
      k += BK;
      if (k >= k_end) break;
    }
  }
};

#endif  // __CUDACC__

}  // namespace ja
