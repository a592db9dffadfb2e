// Host twins of the FlatMM fp8 block-scale kernels: our portable kernels (kernels/flatmm_fp8.hpp)
// and the ABI twin of AITER's FlatMM kernel (kernels/aiter/flatmm.hpp). Each reads the very bytes
// the plan packed, w through the FlatMM layout, and computes exactly the tiles its launch grid
// covers with the kernel's tile sizes, so a wrong grid, stride, layout or scale indexing shows up
// as a wrong or unwritten output. The arithmetic is the GPU kernels': each 128-wide K block's
// partial dot in float32 (here summed exactly, then rounded to float32 once), scaled by
// x_scale * w_scale and added in float32, the sum rounded to f16 once. The portable twin decodes
// the format its struct names (fp8_fnuz); AITER's twin decodes e4m3fnuz, as gfx942 does.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/kernels/aiter/flatmm.hpp"
#include "jax_aiter/kernels/flatmm_fp8.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/runtime/host.hpp"

namespace jax_aiter::host_twins {

namespace flatmm_fp8_detail {

namespace L = kernels::aiter_flatmm;

// Every e4m3 code's value, per format.
inline const std::array<float, 256>& table(bool fnuz) {
  static const auto make = [](const MiniFloat& f) {
    std::array<float, 256> t{};
    for (uint32_t c = 0; c < 256; ++c) t[c] = static_cast<float>(decode(f, c));
    return t;
  };
  static const std::array<float, 256> fn = make(kE4M3FNFormat), uz = make(kE4M3FNUZFormat);
  return fnuz ? uz : fn;
}

inline uint16_t to_f16(float v) { return static_cast<uint16_t>(encode(kF16Format, v)); }

// out[r][c] for the block-scaled product: x row r (K bytes), w row c (FlatMM, K columns).
inline float element(const std::array<float, 256>& t, const uint8_t* x_row, const uint8_t* w,
                     const float* xs, const float* ws, int64_t r, int64_t c, int64_t M, int64_t K,
                     int64_t scale_n) {
  float total = 0.f;
  for (int64_t b = 0; b < K / L::kScaleBlock; ++b) {
    double part = 0;
    for (int64_t k = b * L::kScaleBlock; k < (b + 1) * L::kScaleBlock; k += 16) {
      const uint8_t* chunk = w + L::flat_chunk(c, k / 16, K);
      for (int e = 0; e < 16; ++e) part += double(t[x_row[k + e]]) * t[chunk[e]];
    }
    total += static_cast<float>(part) * (xs[b * M + r] * ws[b * scale_n + c / L::kScaleBlock]);
  }
  return total;
}

}  // namespace flatmm_fp8_detail

// Our portable kernel with block tile BM x BN: block (x, y) computes rows [y*BM, +BM) and columns
// [x*BN, +BN) (clipped to M, N) over all of K.
template <int BM, int BN>
void flatmm_fp8(const kernels::KernelArgs& packed, kernels::Dim3 grid, kernels::Dim3 /*block*/) {
  using namespace flatmm_fp8_detail;
  const auto a = packed.unpack<kernels::FlatmmFp8Args>();
  const auto& t = table(a.fp8_fnuz != 0);
  const auto* X = static_cast<const uint8_t*>(a.x);
  const auto* W = static_cast<const uint8_t*>(a.w);
  const auto* xs = static_cast<const float*>(a.x_scale);
  const auto* ws = static_cast<const float*>(a.w_scale);
  auto* out = static_cast<uint16_t*>(a.out);
  for (uint32_t y = 0; y < grid.y; ++y) {
    for (uint32_t x = 0; x < grid.x; ++x) {
      for (int64_t r = int64_t{y} * BM; r < std::min<int64_t>(a.M, (y + 1) * int64_t{BM}); ++r) {
        for (int64_t c = int64_t{x} * BN; c < std::min<int64_t>(a.N, (x + 1) * int64_t{BN}); ++c) {
          out[r * a.N + c] =
              to_f16(element(t, X + r * a.lda, W, xs, ws, r, c, a.M, a.K, a.scale_n));
        }
      }
    }
  }
}

// The ABI twin of AITER's FlatMM kernel (the contract, as kernels_co/aiter_flatmm.twin.cpp states
// it): grid (ceil(N / 256), ceil(M / 128)); block (x, y) writes rows [128 y, +128) (clipped to
// M) and columns [256 x, +256) of d_f16_ptr, rows intermediate_size f16 apart; a's rows are
// hidden_size bytes apart (AITER's kernel ignores stride_token; so does the twin). w_scale rows
// hold intermediate_size / 128 values.
inline void aiter_flatmm(const kernels::KernelArgs& packed, kernels::Dim3 grid,
                         kernels::Dim3 /*block*/) {
  using namespace flatmm_fp8_detail;
  const auto a = packed.unpack<kernels::AiterFlatmmArgs>();
  const auto& t = table(true);
  const int64_t M = a.num_tokens, N = a.intermediate_size, K = a.hidden_size;
  const auto* X = static_cast<const uint8_t*>(a.a_ptr);
  const auto* W = static_cast<const uint8_t*>(a.b_ptr);
  const auto* xs = static_cast<const float*>(a.sa_ptr);
  const auto* ws = static_cast<const float*>(a.sb_ptr);
  auto* out = static_cast<uint16_t*>(a.d_f16_ptr);
  for (uint32_t y = 0; y < grid.y; ++y) {
    for (uint32_t x = 0; x < grid.x; ++x) {
      const int64_t r_end = std::min<int64_t>(M, (int64_t{y} + 1) * L::kTileM);
      const int64_t c_end = std::min<int64_t>(N, (int64_t{x} + 1) * L::kTileN);
      for (int64_t r = int64_t{y} * L::kTileM; r < r_end; ++r) {
        for (int64_t c = int64_t{x} * L::kTileN; c < c_end; ++c) {
          out[r * N + c] = to_f16(element(t, X + r * K, W, xs, ws, r, c, M, K, N / L::kScaleBlock));
        }
      }
    }
  }
}

namespace flatmm_fp8_detail {

template <size_t... I>
bool register_portable(std::index_sequence<I...>) {
  (runtime::HostTwins::add(
       kernels::kFlatmmFp8Tiles[I].kernel.symbol,
       &flatmm_fp8<kernels::kFlatmmFp8Tiles[I].bm, kernels::kFlatmmFp8Tiles[I].bn>),
   ...);
  return true;
}

inline const bool kRegistered =
    register_portable(std::make_index_sequence<std::size(kernels::flatmm_fp8_detail::kTiles)>{}) &&
    (runtime::HostTwins::add(kernels::kAiterFlatmmRows[0].kernel.symbol, &aiter_flatmm), true);

}  // namespace flatmm_fp8_detail

}  // namespace jax_aiter::host_twins
