// Host twins of our portable FP8 block-scale kernels (kernels/gemm_fp8_blockscale.hpp): the GEMM
// tiles and the scale transpose a FlatMM plan runs first. Each reads the very bytes the plan
// packed and computes exactly the tiles its launch grid covers with the kernel's tile sizes, so a
// wrong grid, stride, layout or scale indexing shows up as a wrong or unwritten output. The
// arithmetic is host_twins/fp8_block_product.hpp's, in the format the struct names (fnuz), stored
// as the struct says (out_f16: f16, else bf16). The twins of AITER's three families are
// host_twins/aiter_{fp8gemm_blockscale,mi350,flatmm}.hpp.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/host_twins/fp8_block_product.hpp"
#include "jax_aiter/kernels/gemm_fp8_blockscale.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/runtime/host.hpp"

namespace jax_aiter::host_twins {

// Our portable kernel with block tile BM x BN: block (x, y) computes rows [y*BM, +BM) and columns
// [x*BN, +BN) (clipped to M, N) over all of K.
template <int BM, int BN>
void gemm_fp8_blockscale(const kernels::KernelArgs& packed, kernels::Dim3 grid,
                         kernels::Dim3 /*block*/) {
  const auto a = packed.unpack<kernels::GemmFp8BlockscaleArgs>();
  const Fp8BlockProduct op{static_cast<const uint8_t*>(a.a),
                           a.lda,
                           static_cast<const uint8_t*>(a.b),
                           a.K,
                           static_cast<const float*>(a.a_scale),
                           a.M,
                           static_cast<const float*>(a.b_scale),
                           a.K / Fp8BlockProduct::kBlock,
                           1,
                           &e4m3_values(a.fnuz != 0)};
  auto* out = static_cast<uint16_t*>(a.out);
  for (uint32_t y = 0; y < grid.y; ++y) {
    for (uint32_t x = 0; x < grid.x; ++x) {
      for (int64_t r = int64_t{y} * BM; r < std::min<int64_t>(a.M, (y + 1) * int64_t{BM}); ++r) {
        for (int64_t c = int64_t{x} * BN; c < std::min<int64_t>(a.N, (x + 1) * int64_t{BN}); ++c) {
          const float v = op.value(r, c, 0, a.K);
          out[r * a.N + c] = a.out_f16 ? float_to_f16(v) : float_to_bf16(v);
        }
      }
    }
  }
}

// dst[c][r] = src[r][c]. The kernel strides over every element with whatever grid it gets; an
// empty grid writes nothing.
inline void gemm_fp8_blockscale_transpose_scales(const kernels::KernelArgs& packed,
                                                 kernels::Dim3 grid, kernels::Dim3 block) {
  const auto a = packed.unpack<kernels::GemmFp8BlockscaleTransposeArgs>();
  if (grid.x == 0 || block.x == 0) return;
  const auto* src = static_cast<const float*>(a.src);
  auto* dst = static_cast<float*>(a.dst);
  for (int64_t i = 0; i < int64_t{a.rows} * a.cols; ++i) {
    dst[(i % a.cols) * a.rows + i / a.cols] = src[i];
  }
}

namespace gemm_fp8_blockscale_detail {

template <size_t... I>
bool register_twins(std::index_sequence<I...>) {
  (runtime::HostTwins::add(kernels::kGemmFp8BlockscaleTiles[I].kernel.symbol,
                           &gemm_fp8_blockscale<kernels::kGemmFp8BlockscaleTiles[I].bm,
                                                kernels::kGemmFp8BlockscaleTiles[I].bn>),
   ...);
  runtime::HostTwins::add(kernels::kGemmFp8BlockscaleTranspose.symbol,
                          &gemm_fp8_blockscale_transpose_scales);
  return true;
}

inline const bool kRegistered = register_twins(
    std::make_index_sequence<std::size(kernels::gemm_fp8_blockscale_detail::kTiles)>{});

}  // namespace gemm_fp8_blockscale_detail

}  // namespace jax_aiter::host_twins
