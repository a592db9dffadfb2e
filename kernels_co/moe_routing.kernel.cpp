// MoE routing: top-k softmax over router logits, and the sort of the chosen (token, expert)
// entries into AITER's layout (kernels/shared/moe_routing.h): one source for gfx942/gfx950
// (clang-22) and sm_90 (nvcc). The parameter lists ARE the ABI: include/jax_aiter/kernels/
// moe_routing.hpp mirrors them field by field, and the backends check the code object's metadata
// against that struct before the first launch.
//
// Nothing here uses atomics: the sort counts per tile and ranks entries within a tile by how many
// earlier entries of the tile chose the same expert, so every row lands where the entry order says
// (tokens increasing within an expert, as AITER's sort gives) and the bits never vary.
#include "jax_aiter/kernels/shared/moe_routing.h"
#include "jax_aiter_device.hpp"
#include "jax_aiter_topk_softmax.hpp"

namespace ja {

using namespace jax_aiter::kernels::moe_routing;

// One block a row (the row's logits are contiguous, its outputs topk apart).
template <typename E>
JA_DEVICE void topk_softmax(const void* logits, void* weights, void* ids, int rows, int experts,
                            int topk, int renormalize) {
  const int row = block_id();
  if (row >= rows) return;
  const auto* in =
      static_cast<const typename E::Storage*>(logits) + static_cast<int64_t>(row) * experts;
  topk_softmax_row<E>(in, experts, topk, topk, renormalize,
                      static_cast<float*>(weights) + static_cast<int64_t>(row) * topk,
                      static_cast<int*>(ids) + static_cast<int64_t>(row) * topk);
}

// AITER's packed row id (kernels/shared/moe_routing.h).
JA_DEVICE int pack_sorted_id(int token, int slot) {
  return static_cast<int>((static_cast<uint32_t>(slot) << kTokenBits) |
                          static_cast<uint32_t>(token));
}

// Entry n of the tile, or -1 past the entries or for an id outside [0, experts) (dropped).
JA_DEVICE int tile_entry(const void* ids, int n, int entries, int experts) {
  if (n >= entries) return -1;
  const int e = static_cast<const int*>(ids)[n];
  return e >= 0 && e < experts ? e : -1;
}

// Block b counts its tile's entries per expert into tile_counts[b, :]: the last entry of each
// expert in the tile writes how many there are (the row is zeroed first, then a barrier).
JA_DEVICE void moe_sort_count(const void* ids, void* tile_counts, int tokens, int topk, int experts,
                              int tiles) {
  JA_SHARED int s_ids[kSortTile];
  const int tile = block_id();
  if (tile >= tiles) return;
  const int tid = thread_id();
  const int e = tile_entry(ids, tile * kSortTile + tid, tokens * topk, experts);
  s_ids[tid] = e;
  int* counts = static_cast<int*>(tile_counts) + static_cast<int64_t>(tile) * experts;
  for (int x = tid; x < experts; x += kSortTile) counts[x] = 0;
  barrier();
  if (e < 0) return;
  int before = 0;
  bool last = true;
  for (int i = 0; i < kSortTile; ++i) {
    const bool same = s_ids[i] == e;
    before += same && i < tid ? 1 : 0;
    last = last && !(same && i > tid);
  }
  if (last) counts[e] = before + 1;
}

// One block: tile_counts[t, e] becomes the entries of expert e in tiles before t, expert_counts[e]
// their total; expert_starts[e] the expert's first row (experts in id order, each padded to a
// multiple of block_m, none for an expert with no entry), expert_starts[experts] the rows used.
JA_DEVICE void moe_sort_scan(void* num_valid_ids, void* expert_starts, void* expert_counts,
                             void* tile_counts, int tokens, int experts, int block_m, int tiles) {
  JA_SHARED int s_sums[kScanThreads];
  const int tid = thread_id();
  int* tc = static_cast<int*>(tile_counts);
  int* counts = static_cast<int*>(expert_counts);
  int* starts = static_cast<int*>(expert_starts);
  // Neighbouring threads take neighbouring experts: each tile row is read in whole lines.
  for (int e = tid; e < experts; e += kScanThreads) {
    int run = 0;
    for (int t = 0; t < tiles; ++t) {
      const int64_t i = static_cast<int64_t>(t) * experts + e;
      const int c = tc[i];
      tc[i] = run;
      run += c;
    }
    counts[e] = run;
  }
  barrier();
  // Padded rows: a thread sums a contiguous run of experts; the runs' sums are then added in
  // thread order (at most kScanThreads of them).
  const int chunk = (experts + kScanThreads - 1) / kScanThreads;
  const int first = tid * chunk < experts ? tid * chunk : experts;
  const int end = first + chunk < experts ? first + chunk : experts;
  auto padded = [&](int c) { return (c + block_m - 1) / block_m * block_m; };
  int local = 0;
  for (int e = first; e < end; ++e) local += padded(counts[e]);
  s_sums[tid] = local;
  barrier();
  int base = 0;
  for (int i = 0; i < tid; ++i) base += s_sums[i];
  for (int e = first; e < end; ++e) {
    starts[e] = base;
    base += padded(counts[e]);
  }
  if (tid == kScanThreads - 1) {
    starts[experts] = base;
    static_cast<int*>(num_valid_ids)[0] = base;
    static_cast<int*>(num_valid_ids)[1] = tokens;
  }
}

// Blocks below `tiles` place their tile's entries: rank = the earlier entries of the tile with the
// same expert. The blocks after them take kSortTile rows each: a padding row (past its expert's
// entries, or past the rows used) gets the padding id and weight 0; the first row of each block of
// block_m rows writes that block's expert (-1 past the rows used).
JA_DEVICE void moe_sort_scatter(const void* ids, const void* weights, void* sorted_token_ids,
                                void* sorted_weights, void* sorted_expert_ids,
                                const void* expert_starts, const void* expert_counts,
                                const void* tile_counts, int tokens, int topk, int experts,
                                int block_m, int padded_rows, int tiles) {
  JA_SHARED int s_ids[kSortTile];
  const int b = block_id(), tid = thread_id();
  const int* starts = static_cast<const int*>(expert_starts);
  int* out_ids = static_cast<int*>(sorted_token_ids);
  float* out_w = static_cast<float*>(sorted_weights);
  if (b < tiles) {
    const int n = b * kSortTile + tid;
    const int e = tile_entry(ids, n, tokens * topk, experts);
    s_ids[tid] = e;
    barrier();
    if (e < 0) return;
    int rank = 0;
    for (int i = 0; i < tid; ++i) rank += s_ids[i] == e ? 1 : 0;
    const int row = starts[e] +
                    static_cast<const int*>(tile_counts)[static_cast<int64_t>(b) * experts + e] +
                    rank;
    const int token = n / topk;
    out_ids[row] = pack_sorted_id(token, n - token * topk);
    out_w[row] = static_cast<const float*>(weights)[n];
    return;
  }
  const int r = (b - tiles) * kSortTile + tid;
  if (r >= padded_rows) return;
  int expert = -1;
  bool pad = true;
  if (r < starts[experts]) {
    // The last expert starting at or before r: an expert with no rows shares its start with the
    // next, so this is the one whose rows hold r.
    int lo = 0, hi = experts - 1;
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (starts[mid] <= r) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    expert = lo;
    pad = r - starts[lo] >= static_cast<const int*>(expert_counts)[lo];
  }
  if (pad) {
    out_ids[r] = pack_sorted_id(tokens, topk);
    out_w[r] = 0.f;
  }
  if (r % block_m == 0) static_cast<int*>(sorted_expert_ids)[r / block_m] = expert;
}

}  // namespace ja

#define JA_TOPK_SOFTMAX(tag, E)                                                             \
  JA_KERNEL_BOUNDED(ja::kTopkMaxThreads)                                                    \
  void jax_aiter_topk_softmax_##tag(const void* logits, void* weights, void* ids, int rows, \
                                    int experts, int topk, int renormalize) {               \
    ja::wait_for_prior_grids();                                                             \
    ja::allow_dependent_grids();                                                            \
    ja::topk_softmax<ja::E>(logits, weights, ids, rows, experts, topk, renormalize);        \
  }
JAX_AITER_TOPK_SOFTMAX_DTYPES(JA_TOPK_SOFTMAX)

// The sorting kernels take MoeSortingArgs whole (its fields in order); each reads its part.
JA_KERNEL_BOUNDED(ja::kSortTile)
void jax_aiter_moe_sort_count(const void* ids, const void* weights, void* sorted_token_ids,
                              void* sorted_weights, void* sorted_expert_ids, void* num_valid_ids,
                              void* expert_starts, void* expert_counts, void* tile_counts,
                              int tokens, int topk, int experts, int block_m, int padded_rows,
                              int tiles) {
  ja::wait_for_prior_grids();
  ja::allow_dependent_grids();
  (void)weights, (void)sorted_token_ids, (void)sorted_weights, (void)sorted_expert_ids;
  (void)num_valid_ids, (void)expert_starts, (void)expert_counts, (void)block_m, (void)padded_rows;
  ja::moe_sort_count(ids, tile_counts, tokens, topk, experts, tiles);
}

JA_KERNEL_BOUNDED(ja::kScanThreads)
void jax_aiter_moe_sort_scan(const void* ids, const void* weights, void* sorted_token_ids,
                             void* sorted_weights, void* sorted_expert_ids, void* num_valid_ids,
                             void* expert_starts, void* expert_counts, void* tile_counts,
                             int tokens, int topk, int experts, int block_m, int padded_rows,
                             int tiles) {
  ja::wait_for_prior_grids();
  ja::allow_dependent_grids();
  (void)ids, (void)weights, (void)sorted_token_ids, (void)sorted_weights, (void)sorted_expert_ids;
  (void)topk, (void)padded_rows;
  ja::moe_sort_scan(num_valid_ids, expert_starts, expert_counts, tile_counts, tokens, experts,
                    block_m, tiles);
}

JA_KERNEL_BOUNDED(ja::kSortTile)
void jax_aiter_moe_sort_scatter(const void* ids, const void* weights, void* sorted_token_ids,
                                void* sorted_weights, void* sorted_expert_ids, void* num_valid_ids,
                                void* expert_starts, void* expert_counts, void* tile_counts,
                                int tokens, int topk, int experts, int block_m, int padded_rows,
                                int tiles) {
  ja::wait_for_prior_grids();
  ja::allow_dependent_grids();
  (void)num_valid_ids;
  ja::moe_sort_scatter(ids, weights, sorted_token_ids, sorted_weights, sorted_expert_ids,
                       expert_starts, expert_counts, tile_counts, tokens, topk, experts, block_m,
                       padded_rows, tiles);
}
