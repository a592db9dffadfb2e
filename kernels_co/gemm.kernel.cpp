// Portable GEMM: out[M, N] = a[M, K] . b[N, K]^T (+ bias[N]), bf16 or f16 inputs, fp32
// accumulation on the tensor cores (mma.sync on sm_90, MFMA on gfx942/gfx950), out bf16, f16 or
// f32. One source for both vendors (see jax_aiter_gemm_tile.hpp for the tile algorithm and
// jax_aiter_mma.hpp for the matrix instructions).
//
// The parameter lists ARE the ABI: include/jax_aiter/kernels/gemm.hpp mirrors them field by field
// (GemmArgs, GemmReduceArgs) and the backends check the code object's metadata against it. The
// kernels instantiated are exactly the X-macro JAX_AITER_GEMM_TILES of
// include/jax_aiter/kernels/shared/gemm.h, times {bf16, f16} x {aligned, any}.
//
// Build (sm_90): nvcc -cubin -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 -x cu
// -I kernels_co/include -I include (the w tile's wgmma and setmaxnreg need sm_90a). The t and s
// tiles use static shared memory only (48 KiB at most a block); the w tile, dynamic.
#include "jax_aiter/kernels/shared/gemm.h"
#include "jax_aiter_gemm_stream.hpp"
#include "jax_aiter_gemm_tile.hpp"
#include "jax_aiter_gemm_wgmma.hpp"

namespace ja {

namespace gemm = jax_aiter::kernels::gemm;

// Stores the valid rows x cols of a block's accumulators at out (row stride ld elements) as O,
// adding bias[col] (of type B) when bias is non-null.
template <typename O, typename B, class T>
JA_DEVICE void store_tile(typename O::Storage* out, int64_t ld, int rows, int cols, const T& t,
                          const typename B::Storage* bias) {
  using S = typename O::Storage;
  // Pairs of adjacent columns (sm_90's accumulator layout) go out as one access when aligned.
  const bool pairs =
      T::kRun == 2 && ld % 2 == 0 && reinterpret_cast<uintptr_t>(out) % (2 * sizeof(S)) == 0;
  t.for_each([&](int r, int c, float v0, float v1) {
    if (r >= rows || c >= cols) return;
    S* o = out + r * ld + c;
    const bool second = T::kRun == 2 && c + 1 < cols;
    if (bias != nullptr) {
      v0 += B::load(bias[c]);
      if (second) v1 += B::load(bias[c + 1]);
    }
    if (second && pairs) {
      Pack<S, 2> p;
      p.v[0] = O::store(v0);
      p.v[1] = O::store(v1);
      *reinterpret_cast<Pack<S, 2>*>(o) = p;
    } else {
      o[0] = O::store(v0);
      if (second) o[1] = O::store(v1);
    }
  });
}

// Stores a computed block tile t (rows x cols valid): float32 partials of split z when there are
// several splits, else out (+ bias) as out_dtype.
template <typename E, class T>
JA_DEVICE void store_block(const T& t, const void* bias, void* out, void* partials, int M, int N,
                           int m0, int n0, int z, int rows, int cols, int out_dtype, int splits) {
  if (splits > 1) {
    float* p = static_cast<float*>(partials) + (static_cast<int64_t>(z) * M + m0) * N + n0;
    store_tile<F32, E>(p, N, rows, cols, t, nullptr);
  } else {
    const auto* bias_e = static_cast<const typename E::Storage*>(bias);
    const bool has_bias = bias != nullptr;
    with_out_type(out_dtype, [&](auto o) {
      using O = decltype(o);
      auto* dst = static_cast<typename O::Storage*>(out) + static_cast<int64_t>(m0) * N + n0;
      store_tile<O, E>(dst, N, rows, cols, t, has_bias ? bias_e + n0 : nullptr);
    });
  }
}

// The block algorithm of a tile: GemmStream for the decode tiles' aligned kernels on sm_90;
// GemmTile otherwise (for a decode tile, the fallback jax_aiter_mma.hpp names: a K chunk that is a
// multiple of the decode tile's BK is one of 32 too).
template <bool kFirst, class A, class B>
struct Select {
  using type = A;
};
template <class A, class B>
struct Select<false, A, B> {
  using type = B;
};

template <typename E, int BM, int BN, int BK, int THREADS, bool kAligned, bool kStream>
struct BlockAlgo {
  using type = GemmTile<E, BM, BN, BK, THREADS, kAligned>;
};
template <typename E, int BM, int BN, int BK, int THREADS, bool kAligned>
struct BlockAlgo<E, BM, BN, BK, THREADS, kAligned, true> {
#if defined(__CUDACC__)
  static constexpr bool kUseStream = kAligned;
#else
  static constexpr bool kUseStream = false;
#endif
  using Fallback =
      GemmTile<E, BM, gemm_stream_fallback_bn(BN), kGemmStreamFallbackBK, THREADS, kAligned>;
#if defined(__CUDACC__)
  using type = typename Select<kUseStream, GemmStream<E, BN, BK, THREADS>, Fallback>::type;
#else
  using type = Fallback;
#endif
};

template <typename E, int BM, int BN, int BK, int THREADS, bool kAligned, bool kStream>
JA_DEVICE void gemm_tile_kernel(const void* a, const void* b, const void* bias, void* out,
                                void* partials, int M, int N, int K, int k_chunk, int out_dtype,
                                int splits) {
  using T = typename BlockAlgo<E, BM, BN, BK, THREADS, kAligned, kStream>::type;
  JA_SHARED Pack<uint16_t, 8> smem[T::kSmemElems / 8];
  const int n0 = block_id() * BN, m0 = block_id_y() * BM, z = block_id_z();
  if (m0 >= M || n0 >= N) return;
  const int64_t k_first = static_cast<int64_t>(z) * k_chunk;
  const int k_begin = k_first < K ? static_cast<int>(k_first) : K;
  const int k_end = K - k_begin < k_chunk ? K : k_begin + k_chunk;
  const int rows = M - m0 < BM ? M - m0 : BM, cols = N - n0 < BN ? N - n0 : BN;
  const int64_t ld = 2 * static_cast<int64_t>(K);  // both operands are K-major, unpadded

  T t;
  t.run(reinterpret_cast<uint16_t*>(smem),
        Operand{static_cast<const unsigned char*>(a) + m0 * ld, ld}, rows,
        Operand{static_cast<const unsigned char*>(b) + n0 * ld, ld}, cols, k_begin, k_end);
  store_block<E>(t, bias, out, partials, M, N, m0, n0, z, rows, cols, out_dtype, splits);
}

// The w tile: GemmWgmma on sm_90 for aligned operands; otherwise t128x128's GemmTile run by the
// first kGemmWgmmaFallbackThreads threads on each half of the tile (the rest exit, which
// releases the barriers they would have joined on both vendors; 64 accumulators a thread fit the
// 168 registers the 384-thread launch bounds leave, t128x256's 128 spilled).
template <typename E, int BM, int BN, int THREADS, bool kAligned>
JA_DEVICE void gemm_wgmma_tile_kernel(const void* a, const void* b, const void* bias, void* out,
                                      void* partials, int M, int N, int K, int k_chunk,
                                      int out_dtype, int splits) {
  int m0, n0;
  wgmma_tile_place<BM, BN>(M, N, m0, n0);
  const int z = block_id_z();
  const int64_t k_first = static_cast<int64_t>(z) * k_chunk;
  const int k_begin = k_first < K ? static_cast<int>(k_first) : K;
  const int k_end = K - k_begin < k_chunk ? K : k_begin + k_chunk;
  const int rows = M - m0 < BM ? M - m0 : BM, cols = N - n0 < BN ? N - n0 : BN;
  const int64_t ld = 2 * static_cast<int64_t>(K);  // both operands are K-major, unpadded
  const WgmmaJob job{{static_cast<const unsigned char*>(a) + m0 * ld, ld},
                     rows,
                     {static_cast<const unsigned char*>(b) + n0 * ld, ld},
                     cols,
                     k_begin,
                     k_end};
  using Fallback =
      GemmTile<E, BM, BN / 2, kGemmWgmmaFallbackBK, kGemmWgmmaFallbackThreads, kAligned>;
#if defined(__CUDACC__)
  using W = GemmWgmma<WgmmaDense16<E>, gemm::kWgmmaStages>;
  static_assert(W::kSmemBytes == gemm::kWgmmaSmemBytes && W::kThreads == THREADS);
  static_assert(Fallback::kSmemElems * 2 <= gemm::kWgmmaSmemBytes);
  unsigned char* smem = dynamic_shared();
  if (dynamic_shared_bytes() < gemm::kWgmmaSmemBytes) __trap();  // a plan that gave too little
  if constexpr (kAligned) {
    W w;
    if (!w.run(smem, job)) return;
    store_block<E>(w, bias, out, partials, M, N, m0, n0, z, rows, cols, out_dtype, splits);
    return;
  }
#else
  JA_SHARED Pack<uint16_t, 8> smem_chunks[Fallback::kSmemElems / 8];
  unsigned char* smem = reinterpret_cast<unsigned char*>(smem_chunks);
#endif
  if (thread_id() >= kGemmWgmmaFallbackThreads) return;
  for (int half = 0; half < 2 && half * (BN / 2) < cols; ++half) {
    const int nh = n0 + half * (BN / 2), cols_h = N - nh < BN / 2 ? N - nh : BN / 2;
    const Operand bh{job.b.base + half * (BN / 2) * ld, ld};
    Fallback t;
    t.run(reinterpret_cast<uint16_t*>(smem), job.a, rows, bh, cols_h, k_begin, k_end);
    store_block<E>(t, bias, out, partials, M, N, m0, nh, z, rows, cols_h, out_dtype, splits);
  }
}

// Blocks a multiprocessor should hold, by tile (the launch bounds' minimum).
template <typename E, int BM, int BN, int BK, int THREADS, bool kAligned, bool kStream, bool kWgmma>
constexpr int gemm_min_blocks() {
  if constexpr (kWgmma) {
    return 1;  // the register cap setmaxnreg needs; its shared memory holds one block anyway
  } else {
    return BlockAlgo<E, BM, BN, BK, THREADS, kAligned, kStream>::type::kMinBlocks;
  }
}

template <typename E, int BM, int BN, int BK, int THREADS, bool kAligned, bool kStream, bool kWgmma>
JA_DEVICE void gemm_kernel(const void* a, const void* b, const void* bias, void* out,
                           void* partials, int M, int N, int K, int k_chunk, int out_dtype,
                           int splits) {
  if constexpr (kWgmma) {
    gemm_wgmma_tile_kernel<E, BM, BN, THREADS, kAligned>(a, b, bias, out, partials, M, N, K,
                                                         k_chunk, out_dtype, splits);
  } else {
    gemm_tile_kernel<E, BM, BN, BK, THREADS, kAligned, kStream>(a, b, bias, out, partials, M, N, K,
                                                                k_chunk, out_dtype, splits);
  }
}

// out[m, n] = sum over z (in order) of partials[z, m, n] (+ bias[n]): kReduceVec consecutive
// outputs a thread, 16-byte loads when the planes allow it.
JA_DEVICE void gemm_reduce(const void* partials, const void* bias, void* out, int M, int N,
                           int splits, int out_dtype, int bias_dtype) {
  constexpr int V = gemm::kReduceVec;
  static_assert(V == 4);
  const int64_t total = static_cast<int64_t>(M) * N;
  const int64_t e0 = (static_cast<int64_t>(block_id()) * gemm::kReduceThreads + thread_id()) * V;
  if (e0 >= total) return;
  const float* p = static_cast<const float*>(partials);
  const bool whole = e0 + V <= total;
  const bool vec = whole && total % V == 0 && reinterpret_cast<uintptr_t>(p) % 16 == 0;
  float s[V] = {0.f, 0.f, 0.f, 0.f};
  for (int z = 0; z < splits; ++z) {
    const float* pz = p + static_cast<int64_t>(z) * total + e0;
    if (vec) {
      const Pack<float, V> v = load_once(reinterpret_cast<const Pack<float, V>*>(pz));
      for (int e = 0; e < V; ++e) s[e] += v.v[e];
    } else {
      for (int e = 0; e < V; ++e) {
        if (e0 + e < total) s[e] += pz[e];
      }
    }
  }
  if (bias != nullptr) {
    with_out_type(bias_dtype, [&](auto bt) {
      using B = decltype(bt);
      const auto* bv = static_cast<const typename B::Storage*>(bias);
      for (int e = 0; e < V; ++e) {
        if (e0 + e < total) s[e] += B::load(bv[(e0 + e) % N]);
      }
    });
  }
  with_out_type(out_dtype, [&](auto o) {
    using O = decltype(o);
    using S = typename O::Storage;
    S* dst = static_cast<S*>(out) + e0;
    if (whole && reinterpret_cast<uintptr_t>(dst) % (V * sizeof(S)) == 0) {
      Pack<S, V> v;
      for (int e = 0; e < V; ++e) v.v[e] = O::store(s[e]);
      *reinterpret_cast<Pack<S, V>*>(dst) = v;
    } else {
      for (int e = 0; e < V; ++e) {
        if (e0 + e < total) dst[e] = O::store(s[e]);
      }
    }
  });
}

}  // namespace ja

// One kernel per (tile, input dtype, load variant); the parameter list is GemmArgs'.
#define JA_GEMM_KERNEL(tag, E, name, BM, BN, BK, THREADS, variant, aligned)                      \
  JA_KERNEL_BOUNDED_RESIDENT(                                                                    \
      THREADS, (ja::gemm_min_blocks<ja::E, BM, BN, BK, THREADS, aligned,                         \
                                    ja::gemm_stream_tile(#name), ja::gemm_wgmma_tile(#name)>())) \
  void jax_aiter_gemm_##tag##_##name##_##variant(const void* a, const void* b, const void* bias, \
                                                 void* out, void* partials, int M, int N, int K, \
                                                 int k_chunk, int out_dtype, int splits) {       \
    ja::wait_for_prior_grids();                                                                  \
    ja::allow_dependent_grids();                                                                 \
    ja::gemm_kernel<ja::E, BM, BN, BK, THREADS, aligned, ja::gemm_stream_tile(#name),            \
                    ja::gemm_wgmma_tile(#name)>(a, b, bias, out, partials, M, N, K, k_chunk,     \
                                                out_dtype, splits);                              \
  }
#define JA_GEMM_TILE_KERNELS(name, BM, BN, BK, THREADS)                \
  JA_GEMM_KERNEL(bf16, BF16, name, BM, BN, BK, THREADS, aligned, true) \
  JA_GEMM_KERNEL(bf16, BF16, name, BM, BN, BK, THREADS, any, false)    \
  JA_GEMM_KERNEL(f16, F16, name, BM, BN, BK, THREADS, aligned, true)   \
  JA_GEMM_KERNEL(f16, F16, name, BM, BN, BK, THREADS, any, false)

JAX_AITER_GEMM_TILES(JA_GEMM_TILE_KERNELS)

// The parameter list is GemmReduceArgs'.
JA_KERNEL_BOUNDED(jax_aiter::kernels::gemm::kReduceThreads)
void jax_aiter_gemm_reduce(const void* partials, const void* bias, void* out, int M, int N,
                           int splits, int out_dtype, int bias_dtype) {
  ja::wait_for_prior_grids();
  ja::allow_dependent_grids();
  ja::gemm_reduce(partials, bias, out, M, N, splits, out_dtype, bias_dtype);
}
