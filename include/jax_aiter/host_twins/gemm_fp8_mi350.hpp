// Host twins of the MI350 FP8 block-scale GEMM kernels: our portable kernels
// (kernels/gemm_fp8_mi350.hpp) and the ABI twins of AITER's MI350 ASM kernels
// (kernels/aiter/mi350.hpp). Each reads the very bytes the plan packed (wq through the shuffled
// layout, the scales by the indices of kernels/shared/aiter_mi350.h) and computes exactly the
// tiles its launch grid covers with the kernel's tile sizes, so a wrong grid, stride, layout or
// scale order in a plan shows up as a wrong or unwritten output. fp8 is decoded exactly
// (core/dtype.hpp); each 128-wide K block's dot product is summed in double, scaled by
// x_scale * w_scale in float32 and added in float32 (the kernels' order of roundings, with exact
// block sums), then rounded to bf16.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/kernels/aiter/mi350.hpp"
#include "jax_aiter/kernels/gemm_fp8_mi350.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/runtime/host.hpp"

namespace jax_aiter::host_twins {

namespace gemm_fp8_mi350_detail {

namespace L = kernels::aiter_mi350;
namespace S = kernels::aiter_i8gemm;

// The 256 values of an e4m3 format (NaN codes decode to NaN).
inline const std::array<float, 256>& fp8_table(bool fnuz) {
  static const auto make = [](const MiniFloat& f) {
    std::array<float, 256> t{};
    for (uint32_t c = 0; c < 256; ++c) t[c] = static_cast<float>(decode(f, c));
    return t;
  };
  static const std::array<float, 256> fn = make(kE4M3FNFormat), nuz = make(kE4M3FNUZFormat);
  return fnuz ? nuz : fn;
}

struct View {
  const uint8_t* x;  // fp8 [M, K], rows xs bytes apart
  const uint8_t* w;  // fp8 [N, K] shuffled for a row length of wk bytes
  const float* x_scale;
  const float* w_scale;
  int64_t M, N, K, xs, wk;
  const std::array<float, 256>* table;
};

// out[r][c] as the kernels compute it.
inline float element(const View& v, int64_t r, int64_t c) {
  const std::array<float, 256>& t = *v.table;
  float acc = 0.f;
  for (int64_t kb = 0; kb < v.K / L::kScaleBlock; ++kb) {
    double part = 0.0;
    for (int64_t k = kb * L::kScaleBlock; k < (kb + 1) * L::kScaleBlock; k += 16) {
      const uint8_t* chunk = v.w + S::shuffled_offset(c, k, v.wk);  // 16 contiguous bytes
      const uint8_t* a = v.x + r * v.xs + k;
      for (int e = 0; e < 16; ++e) part += double{t[a[e]]} * double{t[chunk[e]]};
    }
    const float scale = v.x_scale[L::x_scale_index(kb, r, v.M)] *
                        v.w_scale[L::w_scale_index(c / L::kScaleBlock, kb, v.K)];
    acc += static_cast<float>(part) * scale;
  }
  return acc;
}

}  // namespace gemm_fp8_mi350_detail

// Our portable kernel with block tile BM x BN: block (x, y) computes rows [y*BM, +BM) and columns
// [x*BN, +BN) over all of K.
template <int BM, int BN>
void gemm_fp8_mi350(const kernels::KernelArgs& packed, kernels::Dim3 grid,
                    kernels::Dim3 /*block*/) {
  using namespace gemm_fp8_mi350_detail;
  const auto a = packed.unpack<kernels::GemmFp8Mi350Args>();
  const View v{static_cast<const uint8_t*>(a.xq),
               static_cast<const uint8_t*>(a.wq),
               static_cast<const float*>(a.x_scale),
               static_cast<const float*>(a.w_scale),
               a.M,
               a.N,
               a.K,
               a.K,
               a.K,
               &fp8_table(a.fnuz != 0)};
  auto* out = static_cast<uint16_t*>(a.out);
  for (uint32_t y = 0; y < grid.y; ++y) {
    for (uint32_t x = 0; x < grid.x; ++x) {
      for (int64_t r = int64_t{y} * BM; r < std::min<int64_t>(a.M, (y + 1) * int64_t{BM}); ++r) {
        for (int64_t c = int64_t{x} * BN; c < std::min<int64_t>(a.N, (x + 1) * int64_t{BN}); ++c) {
          out[r * a.N + c] = float_to_bf16(element(v, r, c));
        }
      }
    }
  }
}

// The ABI twin of one AITER MI350 row (the contract, as kernels_co/aiter_mi350.twin.cpp states
// it): grid (ceil(N / 256), ceil(M / tile_m)); block (x, y) stores out rows [y tile_m, +tile_m)
// and columns [256 x, +256), both clipped to M and N. X rows Xs bytes apart; the shuffled G
// laid out for rows of GUs bytes; out rows Os bytes apart; e4m3fn (what gfx950 reads).
template <size_t kRow>
void aiter_mi350(const kernels::KernelArgs& packed, kernels::Dim3 grid, kernels::Dim3 /*block*/) {
  using namespace gemm_fp8_mi350_detail;
  constexpr const kernels::AiterMi350Row& row = kernels::kAiterMi350Rows[kRow];
  const auto a = packed.unpack<kernels::AiterMi350Args>();
  const View v{static_cast<const uint8_t*>(a.ptr_X.value),
               static_cast<const uint8_t*>(a.ptr_W.value),
               static_cast<const float*>(a.ptr_XQ.value),
               static_cast<const float*>(a.ptr_WQ.value),
               a.M.value,
               a.N.value,
               a.K.value,
               a.Xs.value,
               a.Ws.value,
               &fp8_table(false)};
  auto* C = static_cast<std::byte*>(a.ptr_C.value);
  for (uint32_t y = 0; y < grid.y; ++y) {
    for (uint32_t x = 0; x < grid.x; ++x) {
      const int64_t r_end = std::min<int64_t>(v.M, (int64_t{y} + 1) * row.tile_m);
      const int64_t c_end = std::min<int64_t>(v.N, (int64_t{x} + 1) * L::kTileN);
      for (int64_t r = int64_t{y} * row.tile_m; r < r_end; ++r) {
        auto* out = reinterpret_cast<uint16_t*>(C + r * a.Cs.value);
        for (int64_t c = int64_t{x} * L::kTileN; c < c_end; ++c) {
          out[c] = float_to_bf16(element(v, r, c));
        }
      }
    }
  }
}

namespace gemm_fp8_mi350_detail {

template <size_t... I>
bool register_portable(std::index_sequence<I...>) {
  (runtime::HostTwins::add(
       kernels::kGemmFp8Mi350Tiles[I].kernel.symbol,
       &gemm_fp8_mi350<kernels::kGemmFp8Mi350Tiles[I].bm, kernels::kGemmFp8Mi350Tiles[I].bn>),
   ...);
  return true;
}

template <size_t... I>
bool register_aiter(std::index_sequence<I...>) {
  (runtime::HostTwins::add(kernels::kAiterMi350Rows[I].kernel.symbol, &aiter_mi350<I>), ...);
  return true;
}

inline const bool kRegistered =
    register_portable(
        std::make_index_sequence<std::size(kernels::gemm_fp8_mi350_detail::kTiles)>{}) &&
    register_aiter(std::make_index_sequence<std::size(kernels::kAiterMi350Rows)>{});

}  // namespace gemm_fp8_mi350_detail

}  // namespace jax_aiter::host_twins
