// ABI of our portable MoE routing kernels (kernels_co/moe_routing.kernel.cpp, code object
// "moe_routing"): the argument structs field by field as the kernels declare their parameters,
// and the kernel table (kernels/shared/moe_routing.h lists what the source instantiates).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/kernels/kernel.hpp"
#include "jax_aiter/kernels/shared/moe_routing.h"

namespace jax_aiter::kernels {

// One block a token row: softmax over the row's experts in f32, the top k by logit (ties: the
// lower expert id), weights exp(l - max) / (the row's sum, or with renormalize the top k's sum).
struct TopkSoftmaxArgs {
  const void* logits;  // bf16/f16/f32 [rows, experts]
  void* weights;       // f32 [rows, topk]
  void* ids;           // i32 [rows, topk]
  int32_t rows;
  int32_t experts;
  int32_t topk;
  int32_t renormalize;  // 0 or 1
};
static_assert(offsetof(TopkSoftmaxArgs, rows) == 24 && sizeof(TopkSoftmaxArgs) == 40);

inline constexpr std::array kTopkSoftmaxFields{
    JAX_AITER_ARG_FIELD(TopkSoftmaxArgs, logits),
    JAX_AITER_ARG_FIELD(TopkSoftmaxArgs, weights),
    JAX_AITER_ARG_FIELD(TopkSoftmaxArgs, ids),
    JAX_AITER_ARG_FIELD(TopkSoftmaxArgs, rows),
    JAX_AITER_ARG_FIELD(TopkSoftmaxArgs, experts),
    JAX_AITER_ARG_FIELD(TopkSoftmaxArgs, topk),
    JAX_AITER_ARG_FIELD(TopkSoftmaxArgs, renormalize),
};

// The three sorting kernels share one argument struct (each reads what it needs):
//   count:   block b (< tiles) counts its tile's entries per expert into tile_counts[b, :];
//   scan:    one block turns tile_counts into offsets within each expert (over tiles, in order),
//            writes expert_counts, expert_starts (each expert's first row: experts padded to
//            block_m rows, in id order) and num_valid_ids;
//   scatter: blocks below `tiles` place their tile's entries (rank within the tile in entry
//            order: tokens increase within an expert); the blocks after them write the padding
//            rows and sorted_expert_ids, kSortTile rows a block.
struct MoeSortingArgs {
  const void* ids;          // i32 [tokens, topk]
  const void* weights;      // f32 [tokens, topk]
  void* sorted_token_ids;   // i32 [padded_rows]
  void* sorted_weights;     // f32 [padded_rows]
  void* sorted_expert_ids;  // i32 [padded_rows / block_m]
  void* num_valid_ids;      // i32 [2]: rows up to the last expert's padding, tokens
  void* expert_starts;      // workspace: i32 [experts + 1]
  void* expert_counts;      // workspace: i32 [experts]
  void* tile_counts;        // workspace: i32 [tiles, experts]
  int32_t tokens;
  int32_t topk;
  int32_t experts;
  int32_t block_m;
  int32_t padded_rows;
  int32_t tiles;  // ceil(tokens * topk / kSortTile)
};
static_assert(offsetof(MoeSortingArgs, tokens) == 72 && sizeof(MoeSortingArgs) == 96);

inline constexpr std::array kMoeSortingFields{
    JAX_AITER_ARG_FIELD(MoeSortingArgs, ids),
    JAX_AITER_ARG_FIELD(MoeSortingArgs, weights),
    JAX_AITER_ARG_FIELD(MoeSortingArgs, sorted_token_ids),
    JAX_AITER_ARG_FIELD(MoeSortingArgs, sorted_weights),
    JAX_AITER_ARG_FIELD(MoeSortingArgs, sorted_expert_ids),
    JAX_AITER_ARG_FIELD(MoeSortingArgs, num_valid_ids),
    JAX_AITER_ARG_FIELD(MoeSortingArgs, expert_starts),
    JAX_AITER_ARG_FIELD(MoeSortingArgs, expert_counts),
    JAX_AITER_ARG_FIELD(MoeSortingArgs, tile_counts),
    JAX_AITER_ARG_FIELD(MoeSortingArgs, tokens),
    JAX_AITER_ARG_FIELD(MoeSortingArgs, topk),
    JAX_AITER_ARG_FIELD(MoeSortingArgs, experts),
    JAX_AITER_ARG_FIELD(MoeSortingArgs, block_m),
    JAX_AITER_ARG_FIELD(MoeSortingArgs, padded_rows),
    JAX_AITER_ARG_FIELD(MoeSortingArgs, tiles),
};

inline constexpr std::string_view kMoeRoutingCodeObject = "moe_routing";

namespace moe_routing_detail {

constexpr KernelInfo topk(std::string_view symbol) {
  return {kMoeRoutingCodeObject, symbol, sizeof(TopkSoftmaxArgs), kTopkSoftmaxFields};
}
constexpr KernelInfo sorting(std::string_view symbol) {
  return {kMoeRoutingCodeObject, symbol, sizeof(MoeSortingArgs), kMoeSortingFields};
}

// clang-format off
#define JA_TOPK_SOFTMAX_DTYPE(tag, E) DType::k##E,
#define JA_TOPK_SOFTMAX_KERNEL(tag, E) topk("jax_aiter_topk_softmax_" #tag),
inline constexpr DType kTopkDTypes[] = {JAX_AITER_TOPK_SOFTMAX_DTYPES(JA_TOPK_SOFTMAX_DTYPE)};
inline constexpr KernelInfo kTopk[] = {JAX_AITER_TOPK_SOFTMAX_DTYPES(JA_TOPK_SOFTMAX_KERNEL)};
#undef JA_TOPK_SOFTMAX_DTYPE
#undef JA_TOPK_SOFTMAX_KERNEL
// clang-format on

}  // namespace moe_routing_detail

inline constexpr KernelInfo kMoeSortCount = moe_routing_detail::sorting("jax_aiter_moe_sort_count");
inline constexpr KernelInfo kMoeSortScan = moe_routing_detail::sorting("jax_aiter_moe_sort_scan");
inline constexpr KernelInfo kMoeSortScatter =
    moe_routing_detail::sorting("jax_aiter_moe_sort_scatter");

// The top-k softmax kernel of a logits dtype (bf16, f16 or f32: validate() admits no other).
constexpr const KernelInfo& topk_softmax_kernel(DType t) {
  for (size_t i = 0; i < std::size(moe_routing_detail::kTopkDTypes); ++i) {
    if (moe_routing_detail::kTopkDTypes[i] == t) return moe_routing_detail::kTopk[i];
  }
  return moe_routing_detail::kTopk[0];
}

// Every kernel of the code object, for tools and for tests that check them all.
inline constexpr auto kMoeRoutingKernels = [] {
  std::array<const KernelInfo*, std::size(moe_routing_detail::kTopk) + 3> all{};
  size_t n = 0;
  for (const KernelInfo& k : moe_routing_detail::kTopk) all[n++] = &k;
  for (const KernelInfo* k : {&kMoeSortCount, &kMoeSortScan, &kMoeSortScatter}) all[n++] = k;
  return all;
}();

static_assert(topk_softmax_kernel(DType::kBF16).symbol == "jax_aiter_topk_softmax_bf16");
static_assert(topk_softmax_kernel(DType::kF32).symbol == "jax_aiter_topk_softmax_f32");
static_assert(kMoeRoutingKernels.size() == 6);

}  // namespace jax_aiter::kernels
