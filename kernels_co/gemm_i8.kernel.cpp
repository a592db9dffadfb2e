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
// Build: as gemm.kernel.cpp (nvcc -cubin -arch=sm_90 ...; clang++-22 -x hip ... -nogpuinc).
#include "jax_aiter/kernels/shared/gemm_i8.h"
#include "jax_aiter_gemm_i8_tile.hpp"

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

JAX_AITER_GEMM_I8_TILES(JA_GEMM_I8_KERNEL)

// The split kernels, one per tile; the parameter list is GemmI8SplitArgs'.
#define JA_GEMM_I8_SPLIT_KERNEL(name, BM, BN, BK, THREADS)                                   \
  JA_KERNEL_BOUNDED(THREADS)                                                                 \
  void jax_aiter_gemm_i8_split_##name(const void* a, const void* b, void* acc, int M, int N, \
                                      int K, int lda, int k_chunk) {                         \
    ja::wait_for_prior_grids();                                                              \
    ja::allow_dependent_grids();                                                             \
    ja::gemm_i8_split_kernel<BM, BN, BK, THREADS>(a, b, acc, M, N, K, lda, k_chunk);         \
  }

JAX_AITER_GEMM_I8_TILES(JA_GEMM_I8_SPLIT_KERNEL)

// The parameter list is GemmI8FinishArgs'.
JA_KERNEL_BOUNDED(JAX_AITER_GEMM_I8_FINISH_THREADS)
void jax_aiter_gemm_i8_finish(const void* acc, const void* a_scale, const void* b_scale,
                              const void* bias, void* out, int M, int N) {
  ja::wait_for_prior_grids();
  ja::allow_dependent_grids();
  ja::gemm_i8_finish(acc, a_scale, b_scale, bias, out, M, N);
}
