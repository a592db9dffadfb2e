// The INT8 family of the sm_90 wgmma engine (jax_aiter_gemm_wgmma.hpp): int8 A K-major, the int8
// weight B in AITER's shuffled (16, 16) layout read as it is, wgmma m64n256k32 s8.s8 -> s32 (exact
// integer sums). A K block is 128 bytes of K: one 128-byte swizzled row per operand row, 4 wgmma.
#pragma once

#include "jax_aiter/kernels/shared/aiter_i8gemm.h"
#include "jax_aiter_gemm_wgmma.hpp"

namespace ja {
namespace wgmma_i8 {
namespace L = jax_aiter::kernels::aiter_i8gemm;
// In the shuffled layout ([N/16, K/32, 2, 16, 16]) the 16 bytes of row n at K byte k (k % 16 == 0)
// lie at (n / 16) 16 K + (n % 16) 16 + 16 k: every 16-byte chunk stays contiguous, a K step of 16
// bytes moves it by 256 (the other 15 rows' chunks sit between), 16 rows move it by 16 K.
constexpr long long chunk_at(long long n, long long k, long long K) {
  return (n / L::kShuffleN) * L::kShuffleN * K + (n % L::kShuffleN) * 16 + L::kShuffleN * k;
}
static_assert(chunk_at(37, 48, 96) == L::shuffled_offset(37, 48, 96));
static_assert(chunk_at(15, 16, 64) == L::shuffled_offset(15, 16, 64));
static_assert(chunk_at(16, 0, 32) == L::shuffled_offset(16, 0, 32));
}  // namespace wgmma_i8
}  // namespace ja

#if defined(__CUDACC__)

namespace ja {

// AITER's shuffled (16, 16) int8 weight (wgmma_i8::chunk_at): o.base is row 0 of a 16-row block,
// o.stride the bytes of one 16-row block (16 K).
struct WgmmaShuffled16x16 {
  static constexpr int kBytesPerK = wgmma_i8::L::kShuffleN;
  JA_DEVICE static const unsigned char* row(const Operand& o, int r) {
    return o.base + (r / wgmma_i8::L::kShuffleN) * o.stride + (r % wgmma_i8::L::kShuffleN) * 16;
  }
  JA_DEVICE static int64_t rows16(const Operand& o) { return o.stride; }
};

struct WgmmaI8 {
  using Acc = int;
  using LayoutA = WgmmaKMajor;
  using LayoutB = WgmmaShuffled16x16;
  static constexpr int kElemBytes = 1;
  static constexpr int kBlockK = 128;  // bytes of K a block: one 128-byte row per operand row
  static constexpr int kStepK = 32;    // K of one wgmma
  JA_DEVICE static void mma(int (&acc)[128], uint64_t desc_a, uint64_t desc_b) {
    sm90::wgmma_m64n256k32_s8(acc, desc_a, desc_b, 1);
  }
};

}  // namespace ja

#endif  // __CUDACC__
