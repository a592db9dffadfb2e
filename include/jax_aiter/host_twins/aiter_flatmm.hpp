// Host ABI twin of AITER's FlatMM fp8 block-scale kernel (kernels/aiter/flatmm.hpp), registered
// under its symbol. It reads the very bytes the plan packed and computes exactly the tiles its
// grid covers: the contract of kernels_co/aiter_flatmm.twin.cpp, grid (ceil(N / 256),
// ceil(M / 128)), block (x, y) writing rows [128 y, +128) (clipped to M) and columns [256 x, +256)
// of d_f16_ptr, rows intermediate_size f16 apart; a's rows hidden_size bytes apart (AITER's kernel
// ignores stride_token; so does the twin); sb_ptr read K-block-major, [K/128, N/128]. e4m3fnuz,
// what gfx942 reads; the arithmetic is host_twins/fp8_block_product.hpp's, rounded to f16.
#pragma once

#include <algorithm>
#include <cstdint>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/host_twins/fp8_block_product.hpp"
#include "jax_aiter/kernels/aiter/flatmm.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/runtime/host.hpp"

namespace jax_aiter::host_twins {

inline void aiter_flatmm(const kernels::KernelArgs& packed, kernels::Dim3 grid,
                         kernels::Dim3 /*block*/) {
  namespace L = kernels::aiter_flatmm;
  const auto a = packed.unpack<kernels::AiterFlatmmArgs>();
  const int64_t M = a.num_tokens, N = a.intermediate_size, K = a.hidden_size;
  const Fp8BlockProduct op{static_cast<const uint8_t*>(a.a_ptr),
                           K,
                           static_cast<const uint8_t*>(a.b_ptr),
                           K,
                           static_cast<const float*>(a.sa_ptr),
                           M,
                           static_cast<const float*>(a.sb_ptr),
                           1,
                           N / L::kScaleBlock,
                           &e4m3_values(true)};
  auto* out = static_cast<uint16_t*>(a.d_f16_ptr);
  for (uint32_t y = 0; y < grid.y; ++y) {
    for (uint32_t x = 0; x < grid.x; ++x) {
      const int64_t r_end = std::min<int64_t>(M, (int64_t{y} + 1) * L::kTileM);
      const int64_t c_end = std::min<int64_t>(N, (int64_t{x} + 1) * L::kTileN);
      for (int64_t r = int64_t{y} * L::kTileM; r < r_end; ++r) {
        for (int64_t c = int64_t{x} * L::kTileN; c < c_end; ++c) {
          out[r * N + c] = float_to_f16(op.value(r, c, 0, K));
        }
      }
    }
  }
}

namespace aiter_flatmm_detail {
inline const bool kRegistered =
    (runtime::HostTwins::add(kernels::kAiterFlatmmRows[0].kernel.symbol, &aiter_flatmm), true);
}  // namespace aiter_flatmm_detail

}  // namespace jax_aiter::host_twins
