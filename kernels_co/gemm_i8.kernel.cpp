// Portable INT8 GEMM: out[M, N] bf16 = (a[M, K] i8 . b[N, K]^T i8) * a_scale[m] * b_scale[n]
// (+ bias[n]), b in AITER's shuffled (16, 16) layout, exact int32 sums on the tensor cores
// (mma.sync m16n8k32 s8 on sm_90, v_mfma_i32_16x16x32_i8 on gfx942/gfx950; see
// jax_aiter_gemm_i8_tile.hpp), the epilogue in float32.
//
// The parameter list IS the ABI: include/jax_aiter/kernels/gemm_i8.hpp mirrors it field by field
// (GemmI8Args). The kernels instantiated are exactly JAX_AITER_GEMM_I8_TILES of
// include/jax_aiter/kernels/shared/gemm_i8.h. Grid (ceil(N / BN), ceil(M / BM)). The split
// kernels (GemmI8SplitArgs) add a K range's exact int32 sums into an int32 accumulator, grid z
// the split; jax_aiter_gemm_i8_finish (GemmI8FinishArgs) scales it into out.
//
// The w tile runs the wgmma engine (jax_aiter_gemm_wgmma.hpp, INT8 family in
// jax_aiter_gemm_wgmma_i8.hpp) on sm_90; elsewhere t128x128's tile on each half of it.
//
// The decode kernels (jax_aiter_gemm_i8_stream and its _finish; M <= 16 on sm_90,
// GemmI8StreamArgs): the weight-streaming engine of jax_aiter_gemm_stream_q.hpp, K split across
// blocks, the splits' int32 partials added (exactly) by the finish kernel, which scales them.
//
// Build: as gemm.kernel.cpp (nvcc -cubin -gencode=arch=compute_90a,code=sm_90a ...; clang++-22 -x
// hip ... -nogpuinc).
#include "jax_aiter/kernels/shared/gemm_i8.h"
#include "jax_aiter_gemm_i8_tile.hpp"
#include "jax_aiter_gemm_stream_q_families.hpp"
#include "jax_aiter_gemm_wgmma_i8.hpp"

namespace ja {

template <int BM, int BN, int BK, int THREADS>
JA_DEVICE void gemm_i8_kernel(const void* a, const void* b, const void* a_scale,
                              const void* b_scale, const void* bias, void* out, int M, int N, int K,
                              int lda) {
  using T = GemmI8Tile<BM, BN, BK, THREADS>;
  JA_SHARED Pack<uint16_t, 8> smem[T::kSmemElems / 8];
  const int n0 = block_id() * BN, m0 = block_id_y() * BM;
  if (m0 >= M || n0 >= N) return;
  const int rows = M - m0 < BM ? M - m0 : BM, cols = N - n0 < BN ? N - n0 : BN;
  T t;
  t.run(reinterpret_cast<uint16_t*>(smem),
        static_cast<const unsigned char*>(a) + static_cast<int64_t>(m0) * lda, lda, rows,
        static_cast<const unsigned char*>(b), K, n0, cols, 0, K);
  const float* sa = static_cast<const float*>(a_scale) + m0;
  const float* sb = static_cast<const float*>(b_scale) + n0;
  const float* bv = bias != nullptr ? static_cast<const float*>(bias) + n0 : nullptr;
  uint16_t* o = static_cast<uint16_t*>(out) + static_cast<int64_t>(m0) * N + n0;
  for_each_valid_i8(t, rows, cols, [&](int r, int c, int v) {
    const float y = static_cast<float>(v) * sa[r] * sb[c] + (bv != nullptr ? bv[c] : 0.f);
    o[static_cast<int64_t>(r) * N + c] = BF16::store(y);
  });
}

template <int BM, int BN, int BK, int THREADS>
JA_DEVICE void gemm_i8_split_kernel(const void* a, const void* b, void* acc, int M, int N, int K,
                                    int lda, int k_chunk) {
  using T = GemmI8Tile<BM, BN, BK, THREADS>;
  JA_SHARED Pack<uint16_t, 8> smem[T::kSmemElems / 8];
  const int n0 = block_id() * BN, m0 = block_id_y() * BM;
  const int k0 = block_id_z() * k_chunk;
  if (m0 >= M || n0 >= N || k0 >= K) return;
  const int k1 = K - k0 < k_chunk ? K : k0 + k_chunk;
  const int rows = M - m0 < BM ? M - m0 : BM, cols = N - n0 < BN ? N - n0 : BN;
  T t;
  t.run(reinterpret_cast<uint16_t*>(smem),
        static_cast<const unsigned char*>(a) + static_cast<int64_t>(m0) * lda, lda, rows,
        static_cast<const unsigned char*>(b), K, n0, cols, k0, k1);
  // Two's-complement sums: adding them as unsigned gives the same bits.
  uint32_t* o = static_cast<uint32_t*>(acc) + static_cast<int64_t>(m0) * N + n0;
  for_each_valid_i8(t, rows, cols, [&](int r, int c, int v) {
    atomic_add_device(o + static_cast<int64_t>(r) * N + c, static_cast<uint32_t>(v));
  });
}

// The w tile: one 128 x 256 tile (K range of split z) through the wgmma engine on sm_90; on AMD
// t128x128's GemmI8Tile on threads 0-255, once per half of the columns (the other threads exit,
// which releases the barriers they would have joined). Both read A in 16-byte chunks, as every
// tile does (the plan passes lda = K, K % 32 == 0). store(r, c, v): tile-local coordinates, an
// exact int32 sum.
template <int BM, int BN, class Store>
JA_DEVICE void gemm_i8_wgmma_tile(const void* a, const void* b, int M, int N, int K, int lda,
                                  int k_chunk, int& m0, int& n0, Store&& store) {
  namespace G = jax_aiter::kernels::gemm_i8;
  wgmma_tile_place<BM, BN>(M, N, m0, n0);
  const int64_t k_first = static_cast<int64_t>(block_id_z()) * k_chunk;
  const int k_begin = k_first < K ? static_cast<int>(k_first) : K;
  const int k_end = K - k_begin < k_chunk ? K : k_begin + k_chunk;
  const int rows = M - m0 < BM ? M - m0 : BM, cols = N - n0 < BN ? N - n0 : BN;
  const unsigned char* a_rows =
      static_cast<const unsigned char*>(a) + static_cast<int64_t>(m0) * lda;
  constexpr int kParts = 2, kPartN = BN / kParts;
  using Fallback = GemmI8Tile<BM, kPartN, 64, 256>;
#if defined(__CUDACC__)
  using W = GemmWgmma<WgmmaI8, G::kWgmmaStages>;
  static_assert(W::kSmemBytes == G::kWgmmaSmemBytes && W::BM == BM && W::BN == BN);
  unsigned char* smem = dynamic_shared();
  if (dynamic_shared_bytes() < G::kWgmmaSmemBytes) __trap();  // a plan that gave too little
  {
    // B: the tile's first 16-row block of the shuffled weight, 16 K bytes a block (n0 % 16 == 0).
    const int64_t block16 = int64_t{wgmma_i8::L::kShuffleN} * K;
    const WgmmaJob job{{a_rows, lda},
                       rows,
                       {static_cast<const unsigned char*>(b) + (n0 / 16) * block16, block16},
                       cols,
                       k_begin,
                       k_end};
    W w;
    if (w.run(smem, job)) for_each_valid_i8(w, rows, cols, store);
  }
#else
  JA_SHARED Pack<uint16_t, 8> smem_chunks[Fallback::kSmemElems / 8];
  unsigned char* smem = reinterpret_cast<unsigned char*>(smem_chunks);
  if (thread_id() >= 256) return;
  for (int part = 0; part < kParts && part * kPartN < cols; ++part) {
    const int np = n0 + part * kPartN, cols_p = N - np < kPartN ? N - np : kPartN;
    Fallback t;
    t.run(reinterpret_cast<uint16_t*>(smem), a_rows, lda, rows,
          static_cast<const unsigned char*>(b), K, np, cols_p, k_begin, k_end);
    for_each_valid_i8(t, rows, cols_p,
                      [&](int r, int c, int v) { store(r, c + part * kPartN, v); });
  }
#endif
}

template <int BM, int BN>
JA_DEVICE void gemm_i8_wgmma_kernel(const void* a, const void* b, const void* a_scale,
                                    const void* b_scale, const void* bias, void* out, int M, int N,
                                    int K, int lda) {
  int m0, n0;
  const float* sa = static_cast<const float*>(a_scale);
  const float* sb = static_cast<const float*>(b_scale);
  const float* bv = static_cast<const float*>(bias);
  uint16_t* o = static_cast<uint16_t*>(out);
  gemm_i8_wgmma_tile<BM, BN>(a, b, M, N, K, lda, K, m0, n0, [&](int r, int c, int v) {
    const int gr = m0 + r, gc = n0 + c;
    const float y = static_cast<float>(v) * sa[gr] * sb[gc] + (bv != nullptr ? bv[gc] : 0.f);
    o[static_cast<int64_t>(gr) * N + gc] = BF16::store(y);
  });
}

template <int BM, int BN>
JA_DEVICE void gemm_i8_wgmma_split_kernel(const void* a, const void* b, void* acc, int M, int N,
                                          int K, int lda, int k_chunk) {
  int m0, n0;
  uint32_t* o = static_cast<uint32_t*>(acc);
  gemm_i8_wgmma_tile<BM, BN>(a, b, M, N, K, lda, k_chunk, m0, n0, [&](int r, int c, int v) {
    atomic_add_device(o + static_cast<int64_t>(m0 + r) * N + n0 + c, static_cast<uint32_t>(v));
  });
}

JA_DEVICE void gemm_i8_finish(const void* acc, const void* a_scale, const void* b_scale,
                              const void* bias, void* out, int M, int N) {
  const int64_t i =
      static_cast<int64_t>(block_id()) * JAX_AITER_GEMM_I8_FINISH_THREADS + thread_id();
  if (i >= static_cast<int64_t>(M) * N) return;
  const int r = static_cast<int>(i / N), c = static_cast<int>(i % N);
  const float y = static_cast<float>(static_cast<const int*>(acc)[i]) *
                      static_cast<const float*>(a_scale)[r] *
                      static_cast<const float*>(b_scale)[c] +
                  (bias != nullptr ? static_cast<const float*>(bias)[c] : 0.f);
  static_cast<uint16_t*>(out)[i] = BF16::store(y);
}

}  // namespace ja

// One kernel per tile; the parameter list is GemmI8Args'.
#define JA_GEMM_I8_KERNEL(name, BM, BN, BK, THREADS)                                            \
  JA_KERNEL_BOUNDED(THREADS)                                                                    \
  void jax_aiter_gemm_i8_##name(const void* a, const void* b, const void* a_scale,              \
                                const void* b_scale, const void* bias, void* out, int M, int N, \
                                int K, int lda) {                                               \
    ja::wait_for_prior_grids();                                                                 \
    ja::allow_dependent_grids();                                                                \
    ja::gemm_i8_kernel<BM, BN, BK, THREADS>(a, b, a_scale, b_scale, bias, out, M, N, K, lda);   \
  }

JAX_AITER_GEMM_I8_MMA_TILES(JA_GEMM_I8_KERNEL)

// The split kernels, one per tile; the parameter list is GemmI8SplitArgs'.
#define JA_GEMM_I8_SPLIT_KERNEL(name, BM, BN, BK, THREADS)                                   \
  JA_KERNEL_BOUNDED(THREADS)                                                                 \
  void jax_aiter_gemm_i8_split_##name(const void* a, const void* b, void* acc, int M, int N, \
                                      int K, int lda, int k_chunk) {                         \
    ja::wait_for_prior_grids();                                                              \
    ja::allow_dependent_grids();                                                             \
    ja::gemm_i8_split_kernel<BM, BN, BK, THREADS>(a, b, acc, M, N, K, lda, k_chunk);         \
  }

JAX_AITER_GEMM_I8_MMA_TILES(JA_GEMM_I8_SPLIT_KERNEL)

// The wgmma tiles, with the same parameter lists; one block an SM (the register cap setmaxnreg
// needs; their shared memory holds one block anyway).
#define JA_GEMM_I8_WGMMA_KERNELS(name, BM, BN, BK, THREADS)                                     \
  JA_KERNEL_BOUNDED_RESIDENT(THREADS, 1)                                                        \
  void jax_aiter_gemm_i8_##name(const void* a, const void* b, const void* a_scale,              \
                                const void* b_scale, const void* bias, void* out, int M, int N, \
                                int K, int lda) {                                               \
    ja::wait_for_prior_grids();                                                                 \
    ja::allow_dependent_grids();                                                                \
    ja::gemm_i8_wgmma_kernel<BM, BN>(a, b, a_scale, b_scale, bias, out, M, N, K, lda);          \
  }                                                                                             \
  JA_KERNEL_BOUNDED_RESIDENT(THREADS, 1)                                                        \
  void jax_aiter_gemm_i8_split_##name(const void* a, const void* b, void* acc, int M, int N,    \
                                      int K, int lda, int k_chunk) {                            \
    ja::wait_for_prior_grids();                                                                 \
    ja::allow_dependent_grids();                                                                \
    ja::gemm_i8_wgmma_split_kernel<BM, BN>(a, b, acc, M, N, K, lda, k_chunk);                   \
  }

JAX_AITER_GEMM_I8_WGMMA_TILES(JA_GEMM_I8_WGMMA_KERNELS)

// The parameter list is GemmI8FinishArgs'.
JA_KERNEL_BOUNDED(JAX_AITER_GEMM_I8_FINISH_THREADS)
void jax_aiter_gemm_i8_finish(const void* acc, const void* a_scale, const void* b_scale,
                              const void* bias, void* out, int M, int N) {
  ja::wait_for_prior_grids();
  ja::allow_dependent_grids();
  ja::gemm_i8_finish(acc, a_scale, b_scale, bias, out, M, N);
}

// The decode kernels (sm_90; on AMD the symbols exist for the shared kernel table and trap: no
// plan for a gfx arch takes them). Parameter lists: GemmI8StreamArgs, GemmI8StreamFinishArgs.
JA_KERNEL_BOUNDED_RESIDENT(jax_aiter::kernels::gemm_stream_q::kThreads, 2)
void jax_aiter_gemm_i8_stream(const void* a, const void* b, const void* a_scale,
                              const void* b_scale, const void* bias, void* out, void* partials,
                              int M, int N, int K, int lda, int k_chunk, int splits) {
  ja::wait_for_prior_grids();
  ja::allow_dependent_grids();
#if defined(__CUDACC__)
  ja::stream_q::gemm_i8_stream(a, b, a_scale, b_scale, bias, out, partials, M, N, K, lda, k_chunk,
                               splits);
#else
  ja::unsupported_here(a, b, a_scale, b_scale, bias, out, partials, M, N, K, lda, k_chunk, splits);
#endif
}

JA_KERNEL_BOUNDED(jax_aiter::kernels::gemm_stream_q::kFinishThreads)
void jax_aiter_gemm_i8_stream_finish(const void* partials, const void* a_scale, const void* b_scale,
                                     const void* bias, void* out, int M, int N, int splits) {
  ja::wait_for_prior_grids();
  ja::allow_dependent_grids();
#if defined(__CUDACC__)
  ja::stream_q::gemm_i8_stream_finish(partials, a_scale, b_scale, bias, out, M, N, splits);
#else
  ja::unsupported_here(partials, a_scale, b_scale, bias, out, M, N, splits);
#endif
}
