// The FP8 block-scale family of the sm_90 wgmma engine (jax_aiter_gemm_wgmma.hpp): fp8 e4m3 A
// K-major, the fp8 weight B in AITER's shuffled (16, 16) layout read as it is (the INT8 family's
// WgmmaShuffled16x16: for 1-byte elements the same bytes), f32 accumulation, and a Step that
// applies the block scales:
//
//   total[r][c] += xs(kb, r) * ws(kb, c / 128) * partial_kb[r][c]   for each 128-wide K block kb,
//
// partial_kb a fresh f32 sum of the block's 4 wgmma m64n128k32 e4m3 (DeepGEMM's promotion: the
// block's products never sit in an accumulator that holds the other blocks' sums). A K block is
// one engine stage (128 bytes of K a row), so the Step finishes the block, folds it and the engine
// frees the stage (kInFlight 0).
//
// Registers: the 128 x 256 tile's totals (128 a consumer thread) plus one 64 x 128 partial (64):
// the 256 columns of a consumer warpgroup go as two halves of 128, one after the other, each into
// the same partial registers and then folded with that half's weight scale (the halves are the
// tile's two 128-column scale blocks, n0 % 256 == 0). A 64 x 256 partial would need 256
// accumulators a thread, past the 232 setmaxnreg gives. The other consumer warpgroup's wgmma run
// while one folds. ptxas: 168 registers at entry (the launch bound; setmaxnreg gives the
// consumers 232), no spills.
//
// Precision: wgmma's e4m3 block sums are not f32-exact as mma.sync's are. On an H200 the worst
// element error beyond the output's rounding was 2^-10.6 S (S = sum |xs ws a b|; K = 128, f16 out;
// 2^-14.1 S at K = 8192), mma.sync's at most 2^-25 S, and a fresh partial every wgmma still
// 2^-11.8 S: the loss is inside each k32 instruction (the ~14-bit fp8 accumulation DeepSeek-V3
// reports on H800). Norm-wise the bf16 results match the mma tiles' (2^-9.2, rounding); f16 shows
// it (2^-11.6 against 2^-12.2). benchmarks/gpu/NOTES.md, "FP8 block-scale on the wgmma engine".
#pragma once

#include "jax_aiter_gemm_wgmma_i8.hpp"

#if defined(__CUDACC__)

namespace ja {

struct WgmmaFp8 {
  using Acc = float;
  using LayoutA = WgmmaKMajor;
  using LayoutB = WgmmaShuffled16x16;
  static constexpr int kElemBytes = 1;
  static constexpr int kBlockK = 128;  // bytes of K a stage: one scale block
  static constexpr int kStepK = 32;    // K of one wgmma
};

// The Step of one tile (every consumer thread holds one). xs: a_scale at (the job's first K
// block, the tile's row 0), K blocks xs_stride (M) apart; rows: the tile's valid rows. ws: b_scale
// at (the tile's first 128-column block, the job's first K block), the next column block ws_stride
// (K / 128) further. cols: the tile's valid columns (a second half exists when cols > 128).
struct WgmmaFp8BlockScale {
  static constexpr int kInFlight = 0;
  static constexpr int kHalf = 128;  // columns a half: one b_scale block
  const float* xs;
  int64_t xs_stride;
  int rows;
  const float* ws;
  int ws_stride;
  int cols;

  JA_DEVICE void operator()(float (&total)[128], uint64_t da, uint64_t db, int kt) const {
    // This thread's two rows of the tile (the accumulator layout: row 16 w + l / 4 (+ 8) of its
    // warpgroup's 64), clamped to a valid row: a row past the end multiplies zeros.
    const int t = thread_id(), lane = t % kWarp;
    const int r = 64 * (t / 128 - 1) + 16 * ((t % 128) / kWarp) + lane / 4;
    const int r0 = r < rows ? r : rows - 1, r1 = r + 8 < rows ? r + 8 : rows - 1;
    const float* x = xs + kt * xs_stride;
    // Issued before the wgmma, needed after them: the loads' latency hides behind the block.
    const float x0 = x[r0], x1 = x[r1];
    const bool two = cols > kHalf;
    const float w0 = ws[kt], w1 = two ? ws[ws_stride + kt] : 0.f;
    float part[64];
    JA_UNROLL
    for (int h = 0; h < 2; ++h) {
      if (h == 1 && !two) break;
      // B's rows of this half: 128 rows of 128 bytes further (the descriptor's address >> 4).
      const uint64_t dbh = db + h * ((kHalf * 128) >> 4);
      sm90::wgmma_fence();
      JA_UNROLL
      for (int kk = 0; kk < WgmmaFp8::kBlockK / WgmmaFp8::kStepK; ++kk) {
        sm90::wgmma_m64n128k32_e4m3(part, da + kk * sm90::kSw128KStep, dbh + kk * sm90::kSw128KStep,
                                    kk > 0 ? 1 : 0);
      }
      sm90::wgmma_commit();
      sm90::hold_registers(part);
      sm90::wgmma_wait<0>();
      sm90::hold_registers(part);
      // The scale product first, as the other tiles and the host twins round it.
      const float w = h == 0 ? w0 : w1, s0 = x0 * w, s1 = x1 * w;
      JA_UNROLL
      for (int i = 0; i < 64; ++i) total[64 * h + i] += part[i] * ((i / 2) % 2 ? s1 : s0);
    }
  }
};

}  // namespace ja

#endif  // __CUDACC__
