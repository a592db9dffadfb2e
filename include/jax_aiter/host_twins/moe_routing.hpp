// Host twins of the MoE routing kernels (kernels_co/moe_routing.kernel.cpp): the same steps on the
// very same packed argument bytes and workspace pieces, covering exactly the blocks the launch grid
// covers, so a wrong plan, grid or packing shows up as wrong or unwritten outputs. Top-k softmax
// in float32 as the kernel (its sums in another order: the same values to rounding, the same
// choice); the sort's counts, offsets and rows exactly as the kernels leave them.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/kernels/moe_routing.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/runtime/host.hpp"

namespace jax_aiter::host_twins {

namespace moe_routing_detail {

namespace M = kernels::moe_routing;

template <DType T>
float load_logit(const void* p, int64_t i) {
  if constexpr (T == DType::kBF16) return bf16_to_float(static_cast<const uint16_t*>(p)[i]);
  if constexpr (T == DType::kF16) return f16_to_float(static_cast<const uint16_t*>(p)[i]);
  if constexpr (T == DType::kF32) return static_cast<const float*>(p)[i];
}

inline float nan_max(float a, float b) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  return a > b ? a : b;
}

// Order by number, -0 == +0, NaN below everything (the kernel's order_key).
inline uint32_t order_key(float x) {
  if (std::isnan(x)) return 0u;
  const uint32_t u = x == 0.f ? 0u : std::bit_cast<uint32_t>(x);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

inline int32_t pack_sorted_id(int64_t token, int64_t slot) {
  return static_cast<int32_t>((static_cast<uint32_t>(slot) << M::kTokenBits) |
                              static_cast<uint32_t>(token));
}

// One row of top-k softmax: the e logits at logits[row * stride], its k choices into w[0, k) and
// ids[0, k).
template <DType T>
void topk_softmax_row(const void* logits, int64_t row, int64_t stride, int64_t e, int64_t k,
                      bool renormalize, float* w, int32_t* ids) {
  std::array<bool, M::kMaxExperts> taken;
  const int64_t base = row * stride;
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < e; ++j) m = nan_max(m, load_logit<T>(logits, base + j));
  float s = 0.f;
  for (int64_t j = 0; j < e; ++j) s += std::exp(load_logit<T>(logits, base + j) - m);
  std::fill(taken.begin(), taken.begin() + e, false);
  float chosen = 0.f;
  for (int64_t i = 0; i < k; ++i) {
    int64_t best = -1;
    uint32_t best_key = 0;
    for (int64_t j = 0; j < e; ++j) {  // ascending ids: a strictly larger key wins
      const uint32_t key = order_key(load_logit<T>(logits, base + j));
      if (!taken[j] && (best < 0 || key > best_key)) best = j, best_key = key;
    }
    taken[best] = true;
    const float numerator = std::exp(load_logit<T>(logits, base + best) - m);
    chosen += numerator;
    ids[i] = static_cast<int32_t>(best);
    w[i] = numerator;
  }
  const float denominator = renormalize ? chosen : s;
  for (int64_t i = 0; i < k; ++i) w[i] = w[i] / denominator;
}

template <DType T>
void topk_softmax(const kernels::KernelArgs& packed, kernels::Dim3 grid, kernels::Dim3) {
  const auto a = packed.unpack<kernels::TopkSoftmaxArgs>();
  const int64_t rows = std::min<int64_t>(a.rows, grid.x), k = a.topk;
  auto* w = static_cast<float*>(a.weights);
  auto* ids = static_cast<int32_t*>(a.ids);
  for (int64_t r = 0; r < rows; ++r) {
    topk_softmax_row<T>(a.logits, r, a.experts, a.experts, k, a.renormalize != 0, w + r * k,
                        ids + r * k);
  }
}

inline int32_t entry(const kernels::MoeSortingArgs& a, int64_t n) {
  if (n >= int64_t{a.tokens} * a.topk) return -1;
  const int32_t e = static_cast<const int32_t*>(a.ids)[n];
  return e >= 0 && e < a.experts ? e : -1;
}

inline void sort_count(const kernels::KernelArgs& packed, kernels::Dim3 grid, kernels::Dim3) {
  const auto a = packed.unpack<kernels::MoeSortingArgs>();
  for (int64_t tile = 0; tile < std::min<int64_t>(a.tiles, grid.x); ++tile) {
    int32_t* counts = static_cast<int32_t*>(a.tile_counts) + tile * a.experts;
    std::fill(counts, counts + a.experts, 0);
    for (int64_t n = tile * M::kSortTile; n < (tile + 1) * M::kSortTile; ++n) {
      if (const int32_t e = entry(a, n); e >= 0) ++counts[e];
    }
  }
}

inline void sort_scan(const kernels::KernelArgs& packed, kernels::Dim3 grid, kernels::Dim3) {
  if (grid.x < 1) return;
  const auto a = packed.unpack<kernels::MoeSortingArgs>();
  auto* tc = static_cast<int32_t*>(a.tile_counts);
  auto* counts = static_cast<int32_t*>(a.expert_counts);
  auto* starts = static_cast<int32_t*>(a.expert_starts);
  for (int64_t e = 0; e < a.experts; ++e) {
    int32_t run = 0;
    for (int64_t t = 0; t < a.tiles; ++t) {
      const int32_t c = tc[t * a.experts + e];
      tc[t * a.experts + e] = run;
      run += c;
    }
    counts[e] = run;
  }
  int32_t base = 0;
  for (int64_t e = 0; e < a.experts; ++e) {
    starts[e] = base;
    base += (counts[e] + a.block_m - 1) / a.block_m * a.block_m;
  }
  starts[a.experts] = base;
  static_cast<int32_t*>(a.num_valid_ids)[0] = base;
  static_cast<int32_t*>(a.num_valid_ids)[1] = a.tokens;
}

inline void sort_scatter(const kernels::KernelArgs& packed, kernels::Dim3 grid, kernels::Dim3) {
  const auto a = packed.unpack<kernels::MoeSortingArgs>();
  const auto* starts = static_cast<const int32_t*>(a.expert_starts);
  const auto* counts = static_cast<const int32_t*>(a.expert_counts);
  const auto* tc = static_cast<const int32_t*>(a.tile_counts);
  auto* out_ids = static_cast<int32_t*>(a.sorted_token_ids);
  auto* out_w = static_cast<float*>(a.sorted_weights);
  auto* out_experts = static_cast<int32_t*>(a.sorted_expert_ids);
  std::array<int32_t, M::kMaxExperts> rank;  // entries of the tile so far, per expert
  for (int64_t b = 0; b < grid.x; ++b) {
    if (b < a.tiles) {
      std::fill(rank.begin(), rank.begin() + a.experts, 0);
      for (int64_t n = b * M::kSortTile; n < (b + 1) * M::kSortTile; ++n) {
        const int32_t e = entry(a, n);
        if (e < 0) continue;
        const int64_t row = int64_t{starts[e]} + tc[b * a.experts + e] + rank[e]++;
        out_ids[row] = pack_sorted_id(n / a.topk, n % a.topk);
        out_w[row] = static_cast<const float*>(a.weights)[n];
      }
      continue;
    }
    for (int64_t r = (b - a.tiles) * M::kSortTile;
         r < std::min<int64_t>((b - a.tiles + 1) * M::kSortTile, a.padded_rows); ++r) {
      int32_t expert = -1;
      bool pad = true;
      if (r < starts[a.experts]) {
        // The last expert starting at or before r (empty experts share the next one's start).
        expert = static_cast<int32_t>(std::upper_bound(starts, starts + a.experts, r) - starts) - 1;
        pad = r - starts[expert] >= counts[expert];
      }
      if (pad) {
        out_ids[r] = pack_sorted_id(a.tokens, a.topk);
        out_w[r] = 0.f;
      }
      if (r % a.block_m == 0) out_experts[r / a.block_m] = expert;
    }
  }
}

template <DType T>
void topk_softmax_twin(const kernels::KernelArgs& a, kernels::Dim3 g, kernels::Dim3 b) {
  topk_softmax<T>(a, g, b);
}

inline bool register_twins() {
  namespace k = kernels::moe_routing_detail;
  for (size_t i = 0; i < std::size(k::kTopkDTypes); ++i) {
    const DType t = k::kTopkDTypes[i];
    runtime::HostTwins::add(k::kTopk[i].symbol, t == DType::kBF16 ? &topk_softmax_twin<DType::kBF16>
                                                : t == DType::kF16
                                                    ? &topk_softmax_twin<DType::kF16>
                                                    : &topk_softmax_twin<DType::kF32>);
  }
  runtime::HostTwins::add(kernels::kMoeSortCount.symbol, &sort_count);
  runtime::HostTwins::add(kernels::kMoeSortScan.symbol, &sort_scan);
  runtime::HostTwins::add(kernels::kMoeSortScatter.symbol, &sort_scatter);
  return true;
}

inline const bool kRegistered = register_twins();

}  // namespace moe_routing_detail

}  // namespace jax_aiter::host_twins
