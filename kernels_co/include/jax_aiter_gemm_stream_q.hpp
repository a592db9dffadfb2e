// The weight-streaming decode engine of the quantized GEMMs (M <= 16 on sm_90; the split, the
// block's layout and the reduction are stated in include/jax_aiter/kernels/shared/gemm_stream_q.h):
//
//   acc[m][n] = sum over the block's K steps of Family::compute (m < 16, n in the 16-row group),
//
// the bf16 streaming tiles' idea (jax_aiter_gemm_stream.hpp: the weight from global memory
// straight into mma registers in long runs, one step in flight per warp while the previous one is
// computed, the warps' sums added in warp order) made one loop for every family. A family
// (jax_aiter_gemm_stream_q_families.hpp) plugs in what differs:
//   Acc                 the accumulator and partial type (float, or int for exact INT8 sums)
//   Raw                 one lane's registers of a step: its weight bytes (and their scales)
//   load(raw, k, k_end) issues the loads of the step at byte k of a row (no access past k_end)
//   compute<MT>(acc, raw, k, k_end)  the step's decode, A loads, mma and per-block scales into
//                       acc[i][r] for MT groups of 8 rows of A
// Every family feeds mma.m16n8k32 with the weight as the A operand (rows g = lane / 4 and g + 8
// of the group) and A (the activations) as the B operand (8 rows a group), so a lane's sums are
// acc[i][r] = (n g + 8 (r / 2), m 8 i + 2 (lane % 4) + r % 2).
//
// sm_90 only: on AMD the kernels' symbols exist (the kernel tables are shared) and trap; no plan
// for a gfx arch takes them.
#pragma once

#include "jax_aiter/kernels/shared/gemm_stream_q.h"
#include "jax_aiter_mma.hpp"  // JA_UNROLL, the device layer
#include "jax_aiter_stream_loads.hpp"

namespace ja {

// The body of a kernel a vendor does not run: its parameters read (no unused ones), then a trap.
template <class... T>
JA_DEVICE void unsupported_here(const T&...) {
  __builtin_trap();
}

#if defined(__CUDACC__)

namespace stream_q {

namespace S = jax_aiter::kernels::gemm_stream_q;

// A 4-byte load of the weight, as load_stream_16: read once, not kept in L1; zeros when ok is
// false.
JA_DEVICE uint32_t load_weight_4(const unsigned char* p, bool ok) {
  uint32_t w;
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %2, 0;\n mov.b32 %0, 0;\n"
      " @p ld.global.nc.L1::no_allocate.L2::256B.u32 %0, [%1];\n}"
      : "=r"(w)
      : "l"(p), "r"(static_cast<int>(ok)));
  return w;
}
// A and its scales: small, read by every block (L1 and L2 hits). Not volatile, unlike the weight's
// loads: the compiler may issue them ahead of the mma (volatile asm keeps its order) instead of
// waiting out one L1 / L2 round trip per row group and chunk.
JA_DEVICE void load_act_16(uint32_t (&w)[4], const unsigned char* p, bool ok) {
  asm("{\n .reg .pred p;\n setp.ne.b32 p, %5, 0;\n mov.b32 %0, 0;\n mov.b32 %1, 0;\n"
      " mov.b32 %2, 0;\n mov.b32 %3, 0;\n"
      " @p ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];\n}"
      : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
      : "l"(p), "r"(static_cast<int>(ok)));
}
JA_DEVICE void load_act_8(uint32_t (&w)[2], const unsigned char* p, bool ok) {
  asm("{\n .reg .pred p;\n setp.ne.b32 p, %3, 0;\n mov.b32 %0, 0;\n mov.b32 %1, 0;\n"
      " @p ld.global.nc.v2.u32 {%0, %1}, [%2];\n}"
      : "=r"(w[0]), "=r"(w[1])
      : "l"(p), "r"(static_cast<int>(ok)));
}
JA_DEVICE uint32_t load_act_4(const unsigned char* p, bool ok) {
  uint32_t w;
  asm("{\n .reg .pred p;\n setp.ne.b32 p, %2, 0;\n mov.b32 %0, 0;\n"
      " @p ld.global.nc.u32 %0, [%1];\n}"
      : "=r"(w)
      : "l"(p), "r"(static_cast<int>(ok)));
  return w;
}

// The steps of one warp over [k_begin, k_end) (bytes of a weight row), two register buffers used
// alternately (no copies: a copy would wait for the loads).
template <int MT, class F>
JA_DEVICE void stream_loop(const F& f, int warp, int k_begin, int k_end,
                           typename F::Acc (&acc)[2][4]) {
  constexpr int kStride = S::kWarpsK * F::kStepBytes;
  static_assert(S::kStepBytes % F::kStepBytes == 0, "a split is whole steps");
  typename F::Raw r0, r1;
  int k = k_begin + warp * F::kStepBytes;
  if (k >= k_end) return;
  f.load(r0, k, k_end);
  for (;;) {
    f.load(r1, k + kStride, k_end);
    f.template compute<MT>(acc, r0, k, k_end);
    k += kStride;
    if (k >= k_end) break;
    f.load(r0, k + kStride, k_end);
    f.template compute<MT>(acc, r1, k, k_end);
    k += kStride;
    if (k >= k_end) break;
  }
}

// The block's sums over [k_begin, k_end): true on warp 0's threads, which then hold them in acc.
template <class F>
JA_DEVICE bool stream_block(const F& f, int M, int k_begin, int k_end,
                            typename F::Acc (&acc)[2][4]) {
  using Acc = typename F::Acc;
  JA_SHARED Acc sums[(S::kWarpsK - 1) * 8 * kWarp];
  const int warp = thread_id() / kWarp, lane = thread_id() % kWarp;
  JA_UNROLL
  for (int i = 0; i < 2; ++i) {
    JA_UNROLL
    for (int r = 0; r < 4; ++r) acc[i][r] = Acc{};
  }
  if (M <= 8) {
    stream_loop<1>(f, warp, k_begin, k_end, acc);
  } else {
    stream_loop<2>(f, warp, k_begin, k_end, acc);
  }
  if (warp > 0) {
    JA_UNROLL
    for (int e = 0; e < 8; ++e) sums[((warp - 1) * 8 + e) * kWarp + lane] = acc[e / 4][e % 4];
  }
  barrier();
  if (warp > 0) return false;
  for (int w = 1; w < S::kWarpsK; ++w) {  // in warp order: the same bits every run
    JA_UNROLL
    for (int e = 0; e < 8; ++e) acc[e / 4][e % 4] += sums[((w - 1) * 8 + e) * kWarp + lane];
  }
  return true;
}

// One split of a call: the block's 16 rows n0.. over K bytes [z k_chunk, +k_chunk) of a row;
// with one split out(m, n, sum) stores the result, else the sums go to partials plane z.
template <class F, class Out>
JA_DEVICE void stream_split(const F& f, int M, int N, int n0, int kbytes, int k_chunk, int splits,
                            void* partials, Out&& out) {
  using Acc = typename F::Acc;
  const int z = block_id_z();
  const int64_t first = static_cast<int64_t>(z) * k_chunk;
  const int k_begin = first < kbytes ? static_cast<int>(first) : kbytes;
  const int k_end = kbytes - k_begin < k_chunk ? kbytes : k_begin + k_chunk;
  Acc acc[2][4];
  if (!stream_block(f, M, k_begin, k_end, acc)) return;
  const int g = thread_id() / 4, t = thread_id() % 4;
  Acc* plane = static_cast<Acc*>(partials) + static_cast<int64_t>(z) * M * N;
  JA_UNROLL
  for (int i = 0; i < 2; ++i) {
    JA_UNROLL
    for (int r = 0; r < 4; ++r) {
      const int m = 8 * i + 2 * t + r % 2, n = n0 + g + 8 * (r / 2);
      if (m >= M) continue;
      if (splits > 1) {
        plane[static_cast<int64_t>(m) * N + n] = acc[i][r];
      } else {
        out(m, n, acc[i][r]);
      }
    }
  }
}

// out(m, n, sum over the splits in order of partials[z][m][n]): one element a thread.
template <class Acc, class Out>
JA_DEVICE void stream_finish(const void* partials, int M, int N, int splits, Out&& out) {
  const int64_t total = static_cast<int64_t>(M) * N;
  const int64_t i = static_cast<int64_t>(block_id()) * S::kFinishThreads + thread_id();
  if (i >= total) return;
  const Acc* p = static_cast<const Acc*>(partials) + i;
  Acc s = p[0];
  for (int z = 1; z < splits; ++z) s += p[z * total];
  out(static_cast<int>(i / N), static_cast<int>(i % N), s);
}

}  // namespace stream_q

#endif  // __CUDACC__

}  // namespace ja
