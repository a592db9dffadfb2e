// Host twins of the grouped-GEMM kernels (kernels/grouped_gemm.hpp). Each reads the very bytes the
// plan packed and computes exactly what its launch grid covers: the schedule twin writes the
// schedule from group_sizes, and the row-tile and wgrad twins read their groups and rows from
// that schedule (never from group_sizes), with the kernel's tile sizes. So a wrong grid,
// capacity, tile size, stride or schedule in a plan shows up as a wrong or unwritten output.
// Accumulation is float32 in eight interleaved partial sums, as a GPU tile accumulates in float32;
// fp8 as the GPU kernels: each 128-wide K block summed in float, times x_scale * w_scale, added
// into a float total, rounded to bf16 once.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <utility>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/host_twins/e4m3_values.hpp"
#include "jax_aiter/kernels/grouped_gemm.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/runtime/host.hpp"

namespace jax_aiter::host_twins {

namespace grouped_gemm_detail {

namespace G = kernels::grouped_gemm;

template <bool kBF16>
inline float load16(uint16_t h) {
  if constexpr (kBF16) {
    return bf16_to_float(h);
  } else {
    return static_cast<float>(std::bit_cast<_Float16>(h));
  }
}

inline void store(void* base, int64_t i, int32_t out_type, float v) {
  switch (out_type) {
    case G::kOutBF16: static_cast<uint16_t*>(base)[i] = float_to_bf16(v); break;
    case G::kOutF16: static_cast<uint16_t*>(base)[i] = float_to_f16(v); break;
    default: static_cast<float*>(base)[i] = v; break;
  }
}

// sum over i < n of a[i * sa] * b[i * sb] (element strides) in float32, eight interleaved sums
// added pairwise at the end.
template <bool kBF16>
float dot(const uint16_t* a, int64_t sa, const uint16_t* b, int64_t sb, int64_t n) {
  float acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j)
      acc[j] += load16<kBF16>(a[(i + j) * sa]) * load16<kBF16>(b[(i + j) * sb]);
  }
  for (int j = 0; i < n; ++i, ++j) acc[j] += load16<kBF16>(a[i * sa]) * load16<kBF16>(b[i * sb]);
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

// One row tile of the schedule.
struct RowTile {
  int32_t group, row0, rows;
};

// The schedule's live tiles (at most the launch's grid y) and tile y.
inline int32_t live_tiles(const void* schedule) { return static_cast<const int32_t*>(schedule)[0]; }
inline RowTile row_tile(const void* schedule, int32_t groups, uint32_t y) {
  const int32_t* e = static_cast<const int32_t*>(schedule) + G::tiles_at(groups) + 4 * int64_t{y};
  return {e[0], e[1], e[2]};
}

}  // namespace grouped_gemm_detail

// The schedule pre-kernel: the groups' clamped sizes summed in order (a negative size counts as
// 0, a group running past M keeps the rows below M), the tail [covered, M) as part G, each part
// cut into row tiles of bm rows, the first `capacity` of them listed.
inline void grouped_gemm_schedule(const kernels::KernelArgs& packed, kernels::Dim3, kernels::Dim3) {
  namespace G = kernels::grouped_gemm;
  const auto a = packed.unpack<kernels::GroupedScheduleArgs>();
  const auto* sizes = static_cast<const int32_t*>(a.group_sizes);
  auto* s = static_cast<int32_t*>(a.schedule);
  int32_t* offsets = s + G::offsets_at();
  int32_t* starts = s + G::tile_starts_at(a.G);
  int32_t* tiles = s + G::tiles_at(a.G);
  int64_t covered = 0, count = 0;
  for (int32_t part = 0; part <= a.G; ++part) {
    const int64_t left = a.M - covered;
    const int64_t size = part < a.G ? std::clamp<int64_t>(sizes[part], 0, left) : left;
    offsets[part] = static_cast<int32_t>(covered);
    starts[part] = static_cast<int32_t>(count);
    for (int64_t r = 0; r < size; r += a.bm, ++count) {
      if (count >= a.capacity) continue;
      int32_t* e = tiles + 4 * count;
      e[0] = part;
      e[1] = static_cast<int32_t>(covered + r);
      e[2] = static_cast<int32_t>(std::min<int64_t>(a.bm, size - r));
      e[3] = 0;
    }
    covered += size;
  }
  offsets[a.G + 1] = a.M;
  starts[a.G + 1] = static_cast<int32_t>(count);
  s[0] = static_cast<int32_t>(count);
  s[1] = offsets[a.G];
}

// A row-tile kernel of tile BM x BN for 16-bit inputs: block (x, y) computes columns
// [x BN, +BN) of the schedule's row tile y, its first BM rows at most (as the GPU tile does).
// kDgrad: w read as [G, K, N].
template <int BM, int BN, bool kBF16, bool kDgrad>
void grouped_gemm_rows(const kernels::KernelArgs& packed, kernels::Dim3 grid, kernels::Dim3) {
  using namespace grouped_gemm_detail;
  const auto a = packed.unpack<kernels::GroupedGemmArgs>();
  const auto* X = static_cast<const uint16_t*>(a.x);
  const auto* W = static_cast<const uint16_t*>(a.w);
  const int32_t live = live_tiles(a.schedule);
  for (uint32_t y = 0; y < grid.y && static_cast<int32_t>(y) < live; ++y) {
    const RowTile t = row_tile(a.schedule, a.G, y);
    const int64_t rows = std::min(t.rows, BM);
    for (uint32_t x = 0; x < grid.x; ++x) {
      const int64_t n0 = int64_t{x} * BN, n1 = std::min<int64_t>(a.N, n0 + BN);
      for (int64_t r = t.row0; r < t.row0 + rows; ++r) {
        for (int64_t n = n0; n < n1; ++n) {
          float v = 0.f;
          if (t.group < a.G) {
            const uint16_t* wg = W + int64_t{t.group} * a.N * a.K;
            v = kDgrad ? dot<kBF16>(X + r * a.K, 1, wg + n, a.N, a.K)
                       : dot<kBF16>(X + r * a.K, 1, wg + n * a.K, 1, a.K);
          }
          store(a.out, r * a.N + n, a.out_dtype, v);
        }
      }
    }
  }
}

// The fp8 block-scale row-tile kernel of tile BM x BN (bf16 out).
template <int BM, int BN>
void grouped_gemm_fp8(const kernels::KernelArgs& packed, kernels::Dim3 grid, kernels::Dim3) {
  using namespace grouped_gemm_detail;
  const auto a = packed.unpack<kernels::GroupedGemmArgs>();
  const auto* X = static_cast<const uint8_t*>(a.x);
  const auto* W = static_cast<const uint8_t*>(a.w);
  const auto* xs = static_cast<const float*>(a.x_scale);
  const auto* ws = static_cast<const float*>(a.w_scale);
  const std::array<float, 256>& d = e4m3_values(a.fnuz != 0);
  const int64_t kblocks = a.K / G::kScaleBlock, nblocks = ceil_div(a.N, G::kScaleBlock);
  auto* out = static_cast<uint16_t*>(a.out);
  const int32_t live = live_tiles(a.schedule);
  for (uint32_t y = 0; y < grid.y && static_cast<int32_t>(y) < live; ++y) {
    const RowTile t = row_tile(a.schedule, a.G, y);
    const int64_t rows = std::min(t.rows, BM);
    for (uint32_t x = 0; x < grid.x; ++x) {
      const int64_t n0 = int64_t{x} * BN, n1 = std::min<int64_t>(a.N, n0 + BN);
      for (int64_t r = t.row0; r < t.row0 + rows; ++r) {
        for (int64_t n = n0; n < n1; ++n) {
          float total = 0.f;
          if (t.group < a.G) {
            const uint8_t* xr = X + r * a.K;
            const uint8_t* wr = W + (int64_t{t.group} * a.N + n) * a.K;
            const float* wsr = ws + (int64_t{t.group} * nblocks + n / G::kScaleBlock) * kblocks;
            for (int64_t kb = 0; kb < kblocks; ++kb) {
              float part = 0.f;
              for (int64_t k = kb * G::kScaleBlock; k < (kb + 1) * G::kScaleBlock; ++k) {
                part += d[xr[k]] * d[wr[k]];
              }
              total += part * (xs[r * kblocks + kb] * wsr[kb]);
            }
          }
          out[r * a.N + n] = float_to_bf16(total);
        }
      }
    }
  }
}

// The wgrad kernel of tile BM x BN: block (x, y, z) computes dw[z] rows [y BM, +BM), columns
// [x BN, +BN), over group z's rows as the schedule's offsets give them.
template <int BM, int BN, bool kBF16>
void grouped_gemm_wgrad(const kernels::KernelArgs& packed, kernels::Dim3 grid, kernels::Dim3) {
  using namespace grouped_gemm_detail;
  const auto a = packed.unpack<kernels::GroupedWgradArgs>();
  const auto* DY = static_cast<const uint16_t*>(a.dy);
  const auto* X = static_cast<const uint16_t*>(a.x);
  const int32_t* offsets = static_cast<const int32_t*>(a.schedule) + G::offsets_at();
  for (uint32_t z = 0; z < grid.z; ++z) {
    const int64_t r0 = offsets[z], r1 = offsets[z + 1];
    for (uint32_t y = 0; y < grid.y; ++y) {
      const int64_t n0 = int64_t{y} * BM, n1 = std::min<int64_t>(a.N, n0 + BM);
      for (uint32_t x = 0; x < grid.x; ++x) {
        const int64_t k0 = int64_t{x} * BN, k1 = std::min<int64_t>(a.K, k0 + BN);
        for (int64_t n = n0; n < n1; ++n) {
          for (int64_t k = k0; k < k1; ++k) {
            const float v = dot<kBF16>(DY + r0 * a.N + n, a.N, X + r0 * a.K + k, a.K, r1 - r0);
            store(a.dw, (int64_t{z} * a.N + n) * a.K + k, a.out_dtype, v);
          }
        }
      }
    }
  }
}

namespace grouped_gemm_detail {

template <size_t... I>
bool register_rows(std::index_sequence<I...>) {
  using kernels::GroupedKind;
  using kernels::kGroupedGemmTiles;
  auto one = [](auto tile) {
    constexpr size_t t = decltype(tile)::value;
    constexpr int bm = kGroupedGemmTiles[t].bm, bn = kGroupedGemmTiles[t].bn;
    for (bool aligned : {true, false}) {
      auto add = [&](DType d, GroupedKind kind, runtime::HostTwin twin) {
        runtime::HostTwins::add(kernels::grouped_rows_kernel(t, d, kind, aligned).symbol, twin);
      };
      add(DType::kBF16, GroupedKind::kForward, &grouped_gemm_rows<bm, bn, true, false>);
      add(DType::kBF16, GroupedKind::kDgrad, &grouped_gemm_rows<bm, bn, true, true>);
      add(DType::kF16, GroupedKind::kForward, &grouped_gemm_rows<bm, bn, false, false>);
      add(DType::kF16, GroupedKind::kDgrad, &grouped_gemm_rows<bm, bn, false, true>);
    }
    runtime::HostTwins::add(kernels::grouped_fp8_kernel(t).symbol, &grouped_gemm_fp8<bm, bn>);
  };
  (one(std::integral_constant<size_t, I>{}), ...);
  return true;
}

template <size_t... I>
bool register_wgrad(std::index_sequence<I...>) {
  using kernels::kGroupedWgradTiles;
  auto one = [](auto tile) {
    constexpr size_t t = decltype(tile)::value;
    constexpr int bm = kGroupedWgradTiles[t].bm, bn = kGroupedWgradTiles[t].bn;
    for (bool aligned : {true, false}) {
      runtime::HostTwins::add(kernels::grouped_wgrad_kernel(t, DType::kBF16, aligned).symbol,
                              &grouped_gemm_wgrad<bm, bn, true>);
      runtime::HostTwins::add(kernels::grouped_wgrad_kernel(t, DType::kF16, aligned).symbol,
                              &grouped_gemm_wgrad<bm, bn, false>);
    }
  };
  (one(std::integral_constant<size_t, I>{}), ...);
  runtime::HostTwins::add(kernels::kGroupedScheduleKernel.symbol, &grouped_gemm_schedule);
  return true;
}

inline const bool kRegistered =
    register_rows(std::make_index_sequence<std::size(kernels::grouped_gemm_detail::kTiles)>{}) &&
    register_wgrad(
        std::make_index_sequence<std::size(kernels::grouped_gemm_detail::kWgradTiles)>{});

}  // namespace grouped_gemm_detail

}  // namespace jax_aiter::host_twins
