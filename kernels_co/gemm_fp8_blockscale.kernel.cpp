// Portable FP8 block-scale GEMM: out[M, N] (bf16 or f16) = sum over 128-wide K blocks kb of
// a_scale[kb][m] * b_scale[n / 128][kb] * (a[m, kb] . b[n, kb]), a and b fp8 e4m3 (the
// hardware's variant), b in AITER's shuffled (16, 16) layout (the FlatMM layout's bytes), a_scale
// K-block-major [K/128, M], b_scale [ceil(N/128), K/128]. fp8 tensor cores (mma.sync m16n8k32
// e4m3 on sm_90, v_mfma_f32_16x16x32_fp8_fp8 on gfx942/gfx950; see jax_aiter_gemm_fp8bs_tile.hpp),
// each block's partial sums scaled and added in f32, one rounding to the output type.
// Plus the scale transpose a FlatMM plan runs before AITER's kernel (b_scale -> [K/128, N/128]).
//
// The parameter lists ARE the ABI: include/jax_aiter/kernels/gemm_fp8_blockscale.hpp mirrors them
// field by field (GemmFp8BlockscaleArgs, GemmFp8BlockscaleTransposeArgs). The GEMM kernels
// instantiated are exactly JAX_AITER_GEMM_FP8_BLOCKSCALE_TILES of
// include/jax_aiter/kernels/shared/gemm_fp8_blockscale.h. Grid (ceil(N / BN), ceil(M / BM)); no K
// split.
//
// The decode kernels (jax_aiter_gemm_fp8_blockscale_stream and its _finish; M <= 16 on sm_90,
// GemmFp8BlockscaleStreamArgs): the weight-streaming engine of jax_aiter_gemm_stream_q.hpp, K split
// across blocks, the splits' f32 partials added in split order by the finish kernel.
//
// Build: as gemm.kernel.cpp (nvcc -cubin -arch=sm_90 ...; clang++-22 -x hip ... -nogpuinc).
#include "jax_aiter/kernels/shared/gemm_fp8_blockscale.h"
#include "jax_aiter_gemm_fp8bs_tile.hpp"
#include "jax_aiter_gemm_stream_q_families.hpp"

namespace ja {

namespace fp8_blockscale = jax_aiter::kernels::gemm_fp8_blockscale;

template <int BM, int BN, int BK, int THREADS>
JA_DEVICE void gemm_fp8_blockscale_kernel(const void* a, const void* b, const void* a_scale,
                                          const void* b_scale, void* out, int M, int N, int K,
                                          int lda, int out_f16) {
  static_assert(BN == fp8_blockscale::kScaleBlock, "a block's columns share one b_scale row");
  using T = GemmFp8BsTile<BM, BN, BK, THREADS>;
  JA_SHARED Pack<uint16_t, 8> smem[T::kSmemElems / 8];
  const int n0 = block_id() * BN, m0 = block_id_y() * BM;
  if (m0 >= M || n0 >= N) return;
  const int rows = M - m0 < BM ? M - m0 : BM, cols = N - n0 < BN ? N - n0 : BN;
  const int kblocks = K / fp8_blockscale::kScaleBlock;
  T t;
  t.run(reinterpret_cast<uint16_t*>(smem),
        static_cast<const unsigned char*>(a) + static_cast<int64_t>(m0) * lda, lda, rows,
        static_cast<const unsigned char*>(b), K, n0, cols, 0, K,
        static_cast<const float*>(a_scale) + m0, M,
        static_cast<const float*>(b_scale) + static_cast<int64_t>(n0 / BN) * kblocks);
  uint16_t* o = static_cast<uint16_t*>(out) + static_cast<int64_t>(m0) * N + n0;
  if (out_f16) {
    for_each_valid_f32(t, rows, cols, [&](int r, int c, float v) {
      o[static_cast<int64_t>(r) * N + c] = F16::store(v);
    });
  } else {
    for_each_valid_f32(t, rows, cols, [&](int r, int c, float v) {
      o[static_cast<int64_t>(r) * N + c] = BF16::store(v);
    });
  }
}

}  // namespace ja

// One kernel per tile; the parameter list is GemmFp8BlockscaleArgs'.
#define JA_GEMM_FP8_BLOCKSCALE_KERNEL(name, BM, BN, BK, THREADS)                                   \
  JA_KERNEL_BOUNDED(THREADS)                                                                       \
  void jax_aiter_gemm_fp8_blockscale_##name(const void* a, const void* b, const void* a_scale,     \
                                            const void* b_scale, void* out, int M, int N, int K,   \
                                            int lda, int out_f16, [[maybe_unused]] int fnuz) {     \
    ja::wait_for_prior_grids();                                                                    \
    ja::allow_dependent_grids();                                                                   \
    ja::gemm_fp8_blockscale_kernel<BM, BN, BK, THREADS>(a, b, a_scale, b_scale, out, M, N, K, lda, \
                                                        out_f16);                                  \
  }

JAX_AITER_GEMM_FP8_BLOCKSCALE_TILES(JA_GEMM_FP8_BLOCKSCALE_KERNEL)

// dst[c][r] = src[r][c], f32; the parameter list is GemmFp8BlockscaleTransposeArgs'.
JA_KERNEL_BOUNDED(jax_aiter::kernels::gemm_fp8_blockscale::kTransposeThreads)
void jax_aiter_gemm_fp8_blockscale_transpose_scales(const void* src, void* dst, int rows,
                                                    int cols) {
  ja::wait_for_prior_grids();
  ja::allow_dependent_grids();
  const auto* s = static_cast<const float*>(src);
  auto* d = static_cast<float*>(dst);
  const int64_t total = static_cast<int64_t>(rows) * cols;
  const int64_t stride = static_cast<int64_t>(ja::block_count()) *
                         jax_aiter::kernels::gemm_fp8_blockscale::kTransposeThreads;
  for (int64_t i = static_cast<int64_t>(ja::block_id()) *
                       jax_aiter::kernels::gemm_fp8_blockscale::kTransposeThreads +
                   ja::thread_id();
       i < total; i += stride) {
    const int64_t r = i / cols, c = i % cols;
    d[c * rows + r] = s[i];
  }
}

// The decode kernels (sm_90; on AMD the symbols exist for the shared kernel table and trap: no
// plan for a gfx arch takes them). Parameter lists: GemmFp8BlockscaleStreamArgs,
// GemmFp8BlockscaleStreamFinishArgs.
JA_KERNEL_BOUNDED_RESIDENT(jax_aiter::kernels::gemm_stream_q::kThreads, 2)
void jax_aiter_gemm_fp8_blockscale_stream(const void* a, const void* b, const void* a_scale,
                                          const void* b_scale, void* out, void* partials, int M,
                                          int N, int K, int lda, int k_chunk, int splits,
                                          int out_f16) {
  ja::wait_for_prior_grids();
  ja::allow_dependent_grids();
#if defined(__CUDACC__)
  ja::stream_q::gemm_fp8_blockscale_stream(a, b, a_scale, b_scale, out, partials, M, N, K, lda,
                                           k_chunk, splits, out_f16);
#else
  ja::unsupported_here(a, b, a_scale, b_scale, out, partials, M, N, K, lda, k_chunk, splits,
                       out_f16);
#endif
}

JA_KERNEL_BOUNDED(jax_aiter::kernels::gemm_stream_q::kFinishThreads)
void jax_aiter_gemm_fp8_blockscale_stream_finish(const void* partials, void* out, int M, int N,
                                                 int splits, int out_f16) {
  ja::wait_for_prior_grids();
  ja::allow_dependent_grids();
#if defined(__CUDACC__)
  ja::stream_q::gemm_fp8_blockscale_stream_finish(partials, out, M, N, splits, out_f16);
#else
  ja::unsupported_here(partials, out, M, N, splits, out_f16);
#endif
}
