// e4m3fnuz (gfx942's fp8) read by hardware that has none: the sm_90 ABI twins of AITER's gfx942
// FP8 kernels (a gfx942 plan reads e4m3fnuz on every backend: include/jax_aiter/ops/fp8_format.hpp)
// turn each operand byte into f16 in registers and multiply with f16 tensor cores.
//
// Exact: an e4m3fnuz byte s eeee mmm is (-1)^s 2^(e-8) (1 + m/8) for e > 0 and (-1)^s 2^-7 (m/8)
// for e = 0 (0x80 is the format's one NaN). Placing its bits at f16's sign, exponent and mantissa
// top ((b & 0x80) << 8 | (b & 0x7f) << 7) gives the f16 (-1)^s 2^(e-15) (1 + m/8), or the f16
// subnormal (-1)^s 2^-14 (m/8): the byte's value times 2^-7 in both cases, with no rounding (f16's
// exponent reaches 2^-24 and it keeps 10 mantissa bits). A product of two such operands is the
// true product times 2^-14; f32 sums of them are the true sums times 2^-14 (a power of two scales
// without rounding: the smallest product, 2^-34, is far above f32's normal range), so multiplying
// the f32 total by 2^14 restores it exactly. 0x80 becomes an f16 NaN, as e4m3fnuz reads it.
//
// Plain C++ on the host (JA_HD is empty there) so tests/cpp/test_mfma_fragments.cpp checks all 256
// bytes against the format's definition.
#pragma once

#include "jax_aiter_mma.hpp"

namespace ja {

// f16 bits of an e4m3fnuz byte's value times 2^-7.
JA_HD uint32_t fnuz_to_f16_bits(uint32_t byte) {
  const uint32_t f = ((byte & 0x80u) << 8) | ((byte & 0x7fu) << 7);
  return byte == 0x80u ? 0x7e00u : f;
}

// The four e4m3fnuz bytes of `w` (byte 0 lowest) as two f16x2 words, each element the byte's value
// times 2^-7: lo holds bytes 0 and 1, hi bytes 2 and 3 (the lower half the lower index).
JA_HD void fnuz4_to_f16x2(uint32_t w, uint32_t& lo, uint32_t& hi) {
  lo = fnuz_to_f16_bits(w & 0xffu) | (fnuz_to_f16_bits((w >> 8) & 0xffu) << 16);
  hi = fnuz_to_f16_bits((w >> 16) & 0xffu) | (fnuz_to_f16_bits(w >> 24) << 16);
}

// One mma.m16n8k32 step's e4m3fnuz fragment registers (A: 4, B: 2, as ldmatrix gives them) as the
// operands of two mma.m16n8k16 f16 steps, (a0, b0) then (a1, b1). A thread's 8-bit register holds
// k 4t..4t+3 of its row (A) or column (B), m16n8k32's layout; its low f16x2 half goes where
// m16n8k16 reads k 2t, 2t+1, its high half where it reads k 2t+8, 2t+9, for A and B alike: each
// k of the 32 meets the same k of the other operand, so the two steps sum the same products.
JA_HD void fnuz_fragments_as_f16(const uint32_t (&a)[4], const uint32_t (&b)[2], uint32_t (&a0)[4],
                                 uint32_t (&b0)[2], uint32_t (&a1)[4], uint32_t (&b1)[2]) {
  uint32_t lo[4], hi[4], blo[2], bhi[2];
  JA_UNROLL
  for (int r = 0; r < 4; ++r) fnuz4_to_f16x2(a[r], lo[r], hi[r]);
  JA_UNROLL
  for (int r = 0; r < 2; ++r) fnuz4_to_f16x2(b[r], blo[r], bhi[r]);
  a0[0] = lo[0], a0[1] = lo[1], a0[2] = hi[0], a0[3] = hi[1];
  a1[0] = lo[2], a1[1] = lo[3], a1[2] = hi[2], a1[3] = hi[3];
  b0[0] = blo[0], b0[1] = bhi[0];
  b1[0] = blo[1], b1[1] = bhi[1];
}

// What a sum of products of fnuz4_to_f16x2 operands is multiplied by to give the true sum.
inline constexpr float kFnuzF16Rescale = 16384.f;  // 2^14

}  // namespace ja
