// Host twins of the FP8 block-scale GEMM kernels: our portable kernels (kernels/gemm_fp8bs.hpp)
// and the ABI twins of AITER's FP8 block-scale ASM kernels (kernels/aiter/fp8gemm_blockscale.hpp).
// Each reads the very bytes the plan packed, B through the shuffled layout and the scales through
// the strides the struct carries (AITER's scale_m, scale_k), and computes exactly the tiles its
// launch grid covers with the kernel's tile sizes, so a wrong grid, split, stride, layout or
// memset in a plan shows up as a wrong or unwritten output. As the GPU kernels: each 128-wide K
// block's products summed in float, scaled by a_scale * b_scale and added into a float total,
// rounded to bf16 (split > 1: each split's total added into the bf16 out). The fp8 format comes
// from the struct (GemmFp8BsArgs::fnuz; the first pad byte of AITER's scale_k slot).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/kernels/aiter/fp8gemm_blockscale.hpp"
#include "jax_aiter/kernels/gemm_fp8bs.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/runtime/host.hpp"

namespace jax_aiter::host_twins {

namespace gemm_fp8bs_detail {

namespace L = kernels::aiter_i8gemm;  // the shuffled byte layout
namespace F = kernels::aiter_fp8bs;

// All 256 codes of a format, decoded once.
inline const std::array<float, 256>& fp8_table(bool fnuz) {
  static const auto make = [](const MiniFloat& f) {
    std::array<float, 256> t{};
    for (uint32_t c = 0; c < 256; ++c) t[c] = static_cast<float>(decode(f, c));
    return t;
  };
  static const std::array<float, 256> fn = make(kE4M3FNFormat), nuz = make(kE4M3FNUZFormat);
  return fnuz ? nuz : fn;
}

// How a tile reads its operands: a row of A, B shuffled for K columns, the scale layouts.
struct Operands {
  const uint8_t* A;
  int64_t lda;
  const uint8_t* B;
  int64_t K;
  const float* sa;  // [K/128, sa_stride]
  int64_t sa_stride;
  const float* sb;  // [N/128, sb_stride]
  int64_t sb_stride;
  const std::array<float, 256>* dec;

  // sum over K blocks in [k0, k1) of the block's float dot product, scaled.
  float value(int64_t r, int64_t c, int64_t k0, int64_t k1) const {
    const std::array<float, 256>& d = *dec;
    const uint8_t* a = A + r * lda;
    float total = 0.f;
    for (int64_t kb0 = k0; kb0 < k1; kb0 += F::kScaleK) {
      float part = 0.f;
      for (int64_t k = kb0; k < kb0 + F::kScaleK; k += 16) {
        const uint8_t* chunk = B + L::shuffled_chunk(c, k / 16, K);
        for (int e = 0; e < 16; ++e) part += d[a[k + e]] * d[chunk[e]];
      }
      const int64_t kb = kb0 / F::kScaleK;
      total += part * sa[kb * sa_stride + r] * sb[(c / F::kScaleN) * sb_stride + kb];
    }
    return total;
  }
};

}  // namespace gemm_fp8bs_detail

// Our portable kernel with block tile BM x BN: block (x, y) computes rows [y*BM, +BM) and columns
// [x*BN, +BN) over all of K.
template <int BM, int BN>
void gemm_fp8bs(const kernels::KernelArgs& packed, kernels::Dim3 grid, kernels::Dim3 /*block*/) {
  using namespace gemm_fp8bs_detail;
  const auto a = packed.unpack<kernels::GemmFp8BsArgs>();
  const Operands op{static_cast<const uint8_t*>(a.a),
                    a.lda,
                    static_cast<const uint8_t*>(a.b),
                    a.K,
                    static_cast<const float*>(a.a_scale),
                    a.M,
                    static_cast<const float*>(a.b_scale),
                    a.K / F::kScaleK,
                    &fp8_table(a.fnuz != 0)};
  auto* out = static_cast<uint16_t*>(a.out);
  for (uint32_t y = 0; y < grid.y; ++y) {
    for (uint32_t x = 0; x < grid.x; ++x) {
      for (int64_t r = int64_t{y} * BM; r < std::min<int64_t>(a.M, (y + 1) * int64_t{BM}); ++r) {
        for (int64_t c = int64_t{x} * BN; c < std::min<int64_t>(a.N, (x + 1) * int64_t{BN}); ++c) {
          out[r * a.N + c] = float_to_bf16(op.value(r, c, 0, a.K));
        }
      }
    }
  }
}

// The ABI twin of one AITER FP8 block-scale row (the contract, as
// kernels_co/aiter_fp8gemm_blockscale.twin.cpp states it): grid ((N / tile_n) * KS,
// ceil(M / tile_m)); block x = z * (N / tile_n) + column block; split z covers K
// [z chunk, min(K, (z + 1) chunk)), chunk = roundup(ceil(K / KS), 128). SA is read as
// [K/128, scale_m], SB as [N/128, scale_k]. KS == 1: a block stores its tile; KS > 1: each split
// adds its scaled partial (split 0 with the bias) into the bf16 out, which the plan zeroed.
template <size_t kRow>
void aiter_fp8bs(const kernels::KernelArgs& packed, kernels::Dim3 grid, kernels::Dim3 /*block*/) {
  using namespace gemm_fp8bs_detail;
  constexpr const kernels::AiterFp8BsRow& row = kernels::kAiterFp8BsRows[kRow];
  const auto a = packed.unpack<kernels::AiterFp8BsArgs>();
  const uint32_t M = a.M.value, N = a.N.value, K = a.K.value;
  const Operands op{static_cast<const uint8_t*>(a.A.value),
                    a.lda.value,
                    static_cast<const uint8_t*>(a.B.value),
                    K,
                    static_cast<const float*>(a.SA.value),
                    a.scale_m.value,
                    static_cast<const float*>(a.SB.value),
                    a.scale_k.value,
                    &fp8_table(a.scale_k.pad[0] == std::byte{F::kFormatFnuz})};
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

namespace gemm_fp8bs_detail {

template <size_t... I>
bool register_portable(std::index_sequence<I...>) {
  (runtime::HostTwins::add(
       kernels::kGemmFp8BsTiles[I].kernel.symbol,
       &gemm_fp8bs<kernels::kGemmFp8BsTiles[I].bm, kernels::kGemmFp8BsTiles[I].bn>),
   ...);
  return true;
}

template <size_t... I>
bool register_aiter(std::index_sequence<I...>) {
  (runtime::HostTwins::add(kernels::kAiterFp8BsRows[I].kernel.symbol, &aiter_fp8bs<I>), ...);
  return true;
}

inline const bool kRegistered =
    register_portable(std::make_index_sequence<std::size(kernels::gemm_fp8bs_detail::kTiles)>{}) &&
    register_aiter(std::make_index_sequence<std::size(kernels::kAiterFp8BsRows)>{});

}  // namespace gemm_fp8bs_detail

}  // namespace jax_aiter::host_twins
