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

namespace ja {

using namespace jax_aiter::kernels::moe_routing;

#if defined(__CUDACC__)
JA_DEVICE int block_threads() { return static_cast<int>(blockDim.x); }
JA_DEVICE float exp_f32(float x) { return expf(x); }
#else
// workgroup_size_x of the HSA dispatch packet (u16 at byte 4), as HIP's blockDim.x reads it (no
// hidden kernel arguments: the struct is the whole kernarg segment).
JA_DEVICE int block_threads() {
  const auto* packet = static_cast<const unsigned char*>(__builtin_amdgcn_dispatch_ptr());
  return static_cast<int>(*reinterpret_cast<const uint16_t*>(packet + 4));
}
JA_DEVICE float exp_f32(float x) { return __builtin_expf(x); }
#endif

// Both vendors' shuffles move 32 bits as they are, so an int travels as a float's bits.
JA_DEVICE int shuffle_xor_int(int v, int mask) {
  return static_cast<int>(
      float_to_bits(shuffle_xor(bits_to_float(static_cast<uint32_t>(v)), mask)));
}

inline constexpr int kMaxWarps = kTopkMaxThreads / 32;
inline constexpr float kInf = __builtin_huge_valf();

// The max that a NaN wins (so a row with a NaN logit gets NaN weights).
JA_DEVICE float nan_max(float a, float b) {
  if (a != a) return a;
  if (b != b) return b;
  return a > b ? a : b;
}

// A key that orders logits as numbers: larger logit, larger key; -0 and +0 equal; NaN is 0, below
// every number (-inf's key is 0x007fffff).
JA_DEVICE uint32_t order_key(float x) {
  if (x != x) return 0u;
  const uint32_t u = x == 0.f ? 0u : float_to_bits(x);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
JA_DEVICE float from_key(uint32_t key) {
  if (key == 0u) return bits_to_float(0x7fc00000u);
  return bits_to_float((key & 0x80000000u) ? (key & 0x7fffffffu) : ~key);
}

// A candidate of the top-k choice: a larger key wins, then the lower expert id.
struct Candidate {
  uint32_t key;
  int id;
};
JA_DEVICE Candidate better(Candidate a, Candidate b) {
  return (a.key > b.key || (a.key == b.key && a.id < b.id)) ? a : b;
}

// Reduces one value a thread over the block; every thread gets the same bits (a butterfly of a
// commutative op leaves every lane the same value; the warps' values are then combined in warp
// order). smem holds kMaxWarps entries and must not be reused before a barrier.
template <typename T, typename Op>
JA_DEVICE T block_reduce(T v, Op op, T* smem, int threads) {
  for (int mask = kWarp / 2; mask > 0; mask /= 2) v = op(v, op.shuffle(v, mask));
  const int warps = threads / kWarp;
  if (warps == 1) return v;
  if (thread_id() % kWarp == 0) smem[thread_id() / kWarp] = v;
  barrier();
  T r = smem[0];
  for (int w = 1; w < warps; ++w) r = op(r, smem[w]);
  return r;
}
struct MaxOp {
  JA_DEVICE float operator()(float a, float b) const { return nan_max(a, b); }
  JA_DEVICE float shuffle(float v, int mask) const { return shuffle_xor(v, mask); }
};
struct SumOp {
  JA_DEVICE float operator()(float a, float b) const { return a + b; }
  JA_DEVICE float shuffle(float v, int mask) const { return shuffle_xor(v, mask); }
};
struct BestOp {
  JA_DEVICE Candidate operator()(Candidate a, Candidate b) const { return better(a, b); }
  JA_DEVICE Candidate shuffle(Candidate v, int mask) const {
    return {static_cast<uint32_t>(shuffle_xor_int(static_cast<int>(v.key), mask)),
            shuffle_xor_int(v.id, mask)};
  }
};

// One block a row; thread t owns experts t, t + threads, ... (at most kTopkPerThread), whose
// logits stay in registers. The k choices are k block-wide reductions of (key, id); the owner of
// each winner marks it taken. Thread 0 writes the row: ids and exp(l - max), then scales the
// weights by 1 / (the row's sum, or the chosen ones' sum with renormalize).
template <typename E>
JA_DEVICE void topk_softmax(const void* logits, void* weights, void* ids, int rows, int experts,
                            int topk, int renormalize) {
  JA_SHARED float s_max[kMaxWarps];
  JA_SHARED float s_sum[kMaxWarps];
  JA_SHARED Candidate s_best[2][kMaxWarps];  // alternating: see below
  const int row = block_id();
  if (row >= rows) return;
  const int tid = thread_id(), threads = block_threads();
  const auto* in =
      static_cast<const typename E::Storage*>(logits) + static_cast<int64_t>(row) * experts;
  float v[kTopkPerThread];
  float m = -kInf;
  for (int j = 0; j < kTopkPerThread; ++j) {
    const int e = tid + j * threads;
    v[j] = e < experts ? E::load(in[e]) : -kInf;
    if (e < experts) m = nan_max(m, v[j]);
  }
  m = block_reduce(m, MaxOp{}, s_max, threads);
  float s = 0.f;
  for (int j = 0; j < kTopkPerThread; ++j) {
    if (tid + j * threads < experts) s += exp_f32(v[j] - m);
  }
  s = block_reduce(s, SumOp{}, s_sum, threads);

  float* w_out = static_cast<float*>(weights) + static_cast<int64_t>(row) * topk;
  int* id_out = static_cast<int*>(ids) + static_cast<int64_t>(row) * topk;
  uint32_t taken = 0;  // bit j: expert tid + j * threads is chosen
  float chosen = 0.f;  // the chosen ones' sum, the same bits in every thread
  for (int i = 0; i < topk; ++i) {
    Candidate best{0u, 0x7fffffff};  // loses to every expert, NaN ones included
    for (int j = 0; j < kTopkPerThread; ++j) {
      const int e = tid + j * threads;
      if (e < experts && !((taken >> j) & 1u)) best = better(best, {order_key(v[j]), e});
    }
    // Two buffers in turn: a warp may write round i + 1's entry while a slower one still reads
    // round i's, never round i - 1's (each round has a barrier).
    best = block_reduce(best, BestOp{}, s_best[i & 1], threads);
    if (best.id % threads == tid) taken |= 1u << (best.id / threads);
    const float numerator = exp_f32(from_key(best.key) - m);
    chosen += numerator;
    if (tid == 0) {
      id_out[i] = best.id;
      w_out[i] = numerator;
    }
  }
  if (tid == 0) {
    const float denominator = renormalize ? chosen : s;
    for (int i = 0; i < topk; ++i) w_out[i] = w_out[i] / denominator;
  }
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
