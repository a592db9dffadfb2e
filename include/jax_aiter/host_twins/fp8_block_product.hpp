// The arithmetic every host twin of an FP8 block-scale kernel shares (our portable kernels,
// host_twins/gemm_fp8_blockscale.hpp, and the ABI twins of AITER's three families,
// host_twins/aiter_{fp8gemm_blockscale,mi350,flatmm}.hpp): the GPU kernels' order of roundings,
// each 128-wide K block's dot product as one float32 (summed exactly here, rounded once), scaled
// by a_scale * b_scale in float32 and added into a float32 total. B is read through AITER's
// shuffled (16, 16) layout, byte for byte the FlatMM layout (kernels/shared/aiter_flatmm.h); the
// scales through the strides a kernel's struct carries, so a wrong stride gives a wrong answer.
#pragma once

#include <array>
#include <cstdint>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/host_twins/e4m3_values.hpp"
#include "jax_aiter/kernels/shared/aiter_i8gemm.h"

namespace jax_aiter::host_twins {

// The block-scaled product of a [M, K] (rows lda bytes apart) and a shuffled b [N, K]:
//   a_scale of (row r, K block kb) at a_scale[kb * a_scale_stride + r];
//   b_scale of (column c, K block kb) at b_scale[(c / 128) * b_row_stride + kb * b_kb_stride].
struct Fp8BlockProduct {
  static constexpr int64_t kBlock = 128;
  const uint8_t* a;
  int64_t lda;
  const uint8_t* b;
  int64_t k;  // b's row length, which lays out the shuffle
  const float* a_scale;
  int64_t a_scale_stride;
  const float* b_scale;
  int64_t b_row_stride, b_kb_stride;
  const std::array<float, 256>* values;

  // sum over the K blocks in [k0, k1) (multiples of 128) of out[r][c]'s scaled block products.
  float value(int64_t r, int64_t c, int64_t k0, int64_t k1) const {
    const std::array<float, 256>& v = *values;
    const uint8_t* row = a + r * lda;
    float total = 0.f;
    for (int64_t kb0 = k0; kb0 < k1; kb0 += kBlock) {
      double part = 0;  // exact: at most 128 products of 4-bit significands
      for (int64_t kk = kb0; kk < kb0 + kBlock; kk += 16) {
        const uint8_t* chunk = b + kernels::aiter_i8gemm::shuffled_chunk(c, kk / 16, k);
        for (int e = 0; e < 16; ++e) part += double{v[row[kk + e]]} * double{v[chunk[e]]};
      }
      const int64_t kb = kb0 / kBlock;
      total += static_cast<float>(part) * (a_scale[kb * a_scale_stride + r] *
                                           b_scale[(c / kBlock) * b_row_stride + kb * b_kb_stride]);
    }
    return total;
  }
};

}  // namespace jax_aiter::host_twins
