// Host ABI twins of AITER's FP8 block-scale ASM kernels (kernels/aiter/fp8gemm_blockscale.hpp),
// one per row, registered under the row's symbol. Each reads the very bytes the plan packed, B
// through the shuffled layout and the scales through the strides the struct carries (scale_m,
// scale_k), and computes exactly the tiles its launch grid covers with the row's tile sizes, so a
// wrong grid, split, stride, layout or memset in a plan shows up as a wrong or unwritten output.
// The contract, as kernels_co/aiter_fp8gemm_blockscale.twin.cpp states it: grid
// ((N / tile_n) * KS, ceil(M / tile_m)); block x = z * (N / tile_n) + column block; split z covers
// K [z chunk, min(K, (z + 1) chunk)), chunk = roundup(ceil(K / KS), 128). KS == 1: a block stores
// its tile (plus BIAS); KS > 1: each split adds its scaled partial (split 0 with the bias) into
// the bf16 out, which the plan zeroed. The arithmetic is host_twins/fp8_block_product.hpp's; the
// fp8 format rides in the first pad byte of the scale_k slot (AITER's kernels ignore the pads).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/host_twins/fp8_block_product.hpp"
#include "jax_aiter/kernels/aiter/fp8gemm_blockscale.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/runtime/host.hpp"

namespace jax_aiter::host_twins {

template <size_t kRow>
void aiter_fp8gemm_blockscale(const kernels::KernelArgs& packed, kernels::Dim3 grid,
                              kernels::Dim3 /*block*/) {
  namespace F = kernels::aiter_fp8bs;
  constexpr const kernels::AiterFp8BsRow& row = kernels::kAiterFp8BsRows[kRow];
  const auto a = packed.unpack<kernels::AiterFp8BsArgs>();
  const uint32_t M = a.M.value, N = a.N.value, K = a.K.value;
  const Fp8BlockProduct op{static_cast<const uint8_t*>(a.A.value),
                           a.lda.value,
                           static_cast<const uint8_t*>(a.B.value),
                           K,
                           static_cast<const float*>(a.SA.value),
                           a.scale_m.value,
                           static_cast<const float*>(a.SB.value),
                           a.scale_k.value,
                           1,
                           &e4m3_values(a.scale_k.pad[0] == std::byte{F::kFormatFnuz})};
  const auto* bias = static_cast<const float*>(a.BIAS.value);
  auto* C = static_cast<std::byte*>(a.C.value);
  const uint32_t split = std::max<uint32_t>(a.ks.value, 1);
  const int64_t chunk = F::split_chunk(K, split);
  const uint32_t col_blocks = N / row.tile_n;
  if (col_blocks == 0) return;
  for (uint32_t y = 0; y < grid.y; ++y) {
    for (uint32_t x = 0; x < grid.x; ++x) {
      const uint32_t z = x / col_blocks, cb = x % col_blocks;
      if (z >= split) continue;
      const int64_t k0 = std::min<int64_t>(K, int64_t{z} * chunk);
      const int64_t k1 = std::min<int64_t>(K, k0 + chunk);
      const int64_t r_end = std::min<int64_t>(M, (int64_t{y} + 1) * row.tile_m);
      for (int64_t r = int64_t{y} * row.tile_m; r < r_end; ++r) {
        auto* out = reinterpret_cast<uint16_t*>(C + r * a.ldc.value);
        for (int64_t c = int64_t{cb} * row.tile_n; c < int64_t{cb + 1} * row.tile_n; ++c) {
          const float v = op.value(r, c, k0, k1) + (z == 0 ? bias[c] : 0.f);
          out[c] = float_to_bf16(split > 1 ? bf16_to_float(out[c]) + v : v);
        }
      }
    }
  }
}

namespace aiter_fp8gemm_blockscale_detail {

template <size_t... I>
bool register_twins(std::index_sequence<I...>) {
  (runtime::HostTwins::add(kernels::kAiterFp8BsRows[I].kernel.symbol, &aiter_fp8gemm_blockscale<I>),
   ...);
  return true;
}

inline const bool kRegistered =
    register_twins(std::make_index_sequence<std::size(kernels::kAiterFp8BsRows)>{});

}  // namespace aiter_fp8gemm_blockscale_detail

}  // namespace jax_aiter::host_twins
