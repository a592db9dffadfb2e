// Top-k softmax of one row by a whole block, shared by our portable kernel
// (moe_routing.kernel.cpp: one row a block) and the ABI twins of AITER's topksoftmax kernels
// (aiter_topksoftmax.twin.cpp: subm rows a workgroup). Device code for clang-22 (HIP, -nogpuinc)
// and nvcc.
#pragma once

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

// One row of top-k softmax by the whole block: the `experts` logits at in; thread t owns experts
// t, t + threads, ... (at most kTopkPerThread), whose logits stay in registers. The k choices are k
// block-wide reductions of (key, id); the owner of each winner marks it taken. Thread 0 writes the
// first `stored` (<= topk) choices: ids and exp(l - max), then scales the weights by 1 / (the
// row's sum, or the chosen ones' sum with renormalize). Every thread must call it (it has
// barriers); a block may call it for several rows in turn.
template <typename E>
JA_DEVICE void topk_softmax_row(const typename E::Storage* in, int experts, int topk, int stored,
                                int renormalize, float* w_out, int* id_out) {
  JA_SHARED float s_max[kMaxWarps];
  JA_SHARED float s_sum[kMaxWarps];
  JA_SHARED Candidate s_best[2][kMaxWarps];  // alternating: see below
  const int tid = thread_id(), threads = block_threads();
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
    if (tid == 0 && i < stored) {
      id_out[i] = best.id;
      w_out[i] = numerator;
    }
  }
  if (tid == 0) {
    const float denominator = renormalize ? chosen : s;
    for (int i = 0; i < stored; ++i) w_out[i] = w_out[i] / denominator;
  }
  barrier();  // the next row's reductions reuse the shared buffers
}

}  // namespace ja
