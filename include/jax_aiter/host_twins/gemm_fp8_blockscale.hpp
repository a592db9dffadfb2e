// Host twins of our portable FP8 block-scale kernels (kernels/gemm_fp8_blockscale.hpp): the GEMM
// tiles (the w tile's split kernel and its finish included) and the scale transpose a FlatMM plan
// runs first. Each reads the very bytes the plan
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

// The block-scaled product our portable kernels compute, over either argument struct (the unsplit
// and the split kernels read a, b and their scales alike): a [M, K] row stride lda, b [N, K],
// a_scale [K/128, M], b_scale [ceil(N/128), K/128].
template <class Args>
Fp8BlockProduct portable_block_product(const Args& a, bool fnuz) {
  return {static_cast<const uint8_t*>(a.a),
          a.lda,
          static_cast<const uint8_t*>(a.b),
          a.K,
          static_cast<const float*>(a.a_scale),
          a.M,
          static_cast<const float*>(a.b_scale),
          a.K / Fp8BlockProduct::kBlock,
          1,
          &e4m3_values(fnuz)};
}

// Our portable kernel with block tile BM x BN: block (x, y) computes rows [y*BM, +BM) and columns
// [x*BN, +BN) (clipped to M, N) over all of K.
template <int BM, int BN>
void gemm_fp8_blockscale(const kernels::KernelArgs& packed, kernels::Dim3 grid,
                         kernels::Dim3 /*block*/) {
  const auto a = packed.unpack<kernels::GemmFp8BlockscaleArgs>();
  const Fp8BlockProduct op = portable_block_product(a, a.fnuz != 0);
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

// The w tile's split kernel with block tile BM x BN: block (x, y, z) stores the f32 sums of K
// [z * k_chunk, min(K, (z + 1) * k_chunk)) for its rows and columns into slice z of partial.
template <int BM, int BN>
void gemm_fp8_blockscale_split(const kernels::KernelArgs& packed, kernels::Dim3 grid,
                               kernels::Dim3 /*block*/) {
  const auto a = packed.unpack<kernels::GemmFp8BlockscaleSplitArgs>();
  // The split kernel exists on sm_90 only, which reads e4m3fn.
  const Fp8BlockProduct op = portable_block_product(a, false);
  auto* partial = static_cast<float*>(a.partial);
  const int64_t slice = int64_t{a.M} * a.N;
  for (uint32_t z = 0; z < grid.z; ++z) {
    const int64_t k0 = std::min<int64_t>(int64_t{z} * a.k_chunk, a.K);
    const int64_t k1 = std::min<int64_t>(k0 + a.k_chunk, a.K);
    for (uint32_t y = 0; y < grid.y; ++y) {
      for (uint32_t x = 0; x < grid.x; ++x) {
        for (int64_t r = int64_t{y} * BM; r < std::min<int64_t>(a.M, (y + 1) * int64_t{BM}); ++r) {
          for (int64_t c = int64_t{x} * BN; c < std::min<int64_t>(a.N, (x + 1) * int64_t{BN});
               ++c) {
            partial[z * slice + r * a.N + c] = op.value(r, c, k0, k1);
          }
        }
      }
    }
  }
}

// jax_aiter_gemm_fp8_blockscale_finish: kFinishVec elements a thread, the slices added in split
// order in f32, rounded once.
inline void gemm_fp8_blockscale_finish(const kernels::KernelArgs& packed, kernels::Dim3 grid,
                                       kernels::Dim3 block) {
  const auto a = packed.unpack<kernels::GemmFp8BlockscaleFinishArgs>();
  const auto* partial = static_cast<const float*>(a.partial);
  auto* out = static_cast<uint16_t*>(a.out);
  const int64_t total = int64_t{a.M} * a.N;
  const int64_t covered = int64_t{grid.x} * block.x * kernels::gemm_fp8_blockscale::kFinishVec;
  for (int64_t i = 0; i < std::min(total, covered); ++i) {
    float s = partial[i];
    for (int z = 1; z < a.splits; ++z) s += partial[z * total + i];
    out[i] = a.out_f16 ? float_to_f16(s) : float_to_bf16(s);
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

template <size_t I>
void register_tile() {
  constexpr kernels::GemmFp8BlockscaleTile t = kernels::kGemmFp8BlockscaleTiles[I];
  runtime::HostTwins::add(t.kernel.symbol, &gemm_fp8_blockscale<t.bm, t.bn>);
  if constexpr (!t.split_kernel.symbol.empty()) {
    runtime::HostTwins::add(t.split_kernel.symbol, &gemm_fp8_blockscale_split<t.bm, t.bn>);
  }
}

template <size_t... I>
bool register_twins(std::index_sequence<I...>) {
  (register_tile<I>(), ...);
  runtime::HostTwins::add(kernels::kGemmFp8BlockscaleFinish.symbol, &gemm_fp8_blockscale_finish);
  runtime::HostTwins::add(kernels::kGemmFp8BlockscaleTranspose.symbol,
                          &gemm_fp8_blockscale_transpose_scales);
  return true;
}

inline const bool kRegistered = register_twins(
    std::make_index_sequence<std::size(kernels::gemm_fp8_blockscale_detail::kTiles)>{});

}  // namespace gemm_fp8_blockscale_detail

}  // namespace jax_aiter::host_twins
