// Host ABI twins of AITER's MI350 FP8 block-scale ASM kernels (kernels/aiter/mi350.hpp), one per
// row, registered under the row's symbol. Each reads the very bytes the plan packed (X rows Xs
// bytes apart, the shuffled G laid out for rows of Ws bytes, XQ [K/128, M] and GQ [N/128, K/128]
// by the indices of kernels/shared/aiter_mi350.h, out rows Cs bytes apart) and computes exactly
// the tiles its grid covers: the contract of kernels_co/aiter_mi350.twin.cpp, grid
// (ceil(N / 256), ceil(M / tile_m)), block (x, y) storing rows [y tile_m, +tile_m) and columns
// [256 x, +256), both clipped. e4m3fn, what gfx950 reads; the arithmetic is
// host_twins/fp8_block_product.hpp's, rounded to bf16.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/host_twins/fp8_block_product.hpp"
#include "jax_aiter/kernels/aiter/mi350.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/runtime/host.hpp"

namespace jax_aiter::host_twins {

template <size_t kRow>
void aiter_mi350(const kernels::KernelArgs& packed, kernels::Dim3 grid, kernels::Dim3 /*block*/) {
  namespace L = kernels::aiter_mi350;
  constexpr const kernels::AiterMi350Row& row = kernels::kAiterMi350Rows[kRow];
  const auto a = packed.unpack<kernels::AiterMi350Args>();
  const int64_t M = a.M.value, N = a.N.value, K = a.K.value;
  static_assert(L::x_scale_index(1, 0, 7) == 7 && L::w_scale_index(1, 0, 256) == 2);
  const Fp8BlockProduct op{static_cast<const uint8_t*>(a.ptr_X.value),
                           a.Xs.value,
                           static_cast<const uint8_t*>(a.ptr_W.value),
                           a.Ws.value,
                           static_cast<const float*>(a.ptr_XQ.value),
                           M,
                           static_cast<const float*>(a.ptr_WQ.value),
                           K / L::kScaleBlock,
                           1,
                           &e4m3_values(false)};
  auto* C = static_cast<std::byte*>(a.ptr_C.value);
  for (uint32_t y = 0; y < grid.y; ++y) {
    for (uint32_t x = 0; x < grid.x; ++x) {
      const int64_t r_end = std::min<int64_t>(M, (int64_t{y} + 1) * row.tile_m);
      const int64_t c_end = std::min<int64_t>(N, (int64_t{x} + 1) * L::kTileN);
      for (int64_t r = int64_t{y} * row.tile_m; r < r_end; ++r) {
        auto* out = reinterpret_cast<uint16_t*>(C + r * a.Cs.value);
        for (int64_t c = int64_t{x} * L::kTileN; c < c_end; ++c) {
          out[c] = float_to_bf16(op.value(r, c, 0, K));
        }
      }
    }
  }
}

namespace aiter_mi350_detail {

template <size_t... I>
bool register_twins(std::index_sequence<I...>) {
  (runtime::HostTwins::add(kernels::kAiterMi350Rows[I].kernel.symbol, &aiter_mi350<I>), ...);
  return true;
}

inline const bool kRegistered =
    register_twins(std::make_index_sequence<std::size(kernels::kAiterMi350Rows)>{});

}  // namespace aiter_mi350_detail

}  // namespace jax_aiter::host_twins
