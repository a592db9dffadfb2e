// Portable FP8 block-scale GEMM: out[M, N] bf16 = sum over 128-wide K blocks kb of
// (a[:, kb] . b[:, kb]^T) * a_scale[kb][m] * b_scale[n / 128][kb], a and b fp8 e4m3 (the
// hardware's variant), b in AITER's shuffled (16, 16) layout, a_scale K-block-major [K/128, M],
// b_scale [N/128, K/128]. fp8 tensor cores (mma.sync m16n8k32 e4m3 on sm_90,
// v_mfma_f32_16x16x32_fp8_fp8 on gfx942/gfx950; see jax_aiter_gemm_fp8bs_tile.hpp), each block's
// partial sums scaled and added in f32, one bf16 rounding.
//
// The parameter list IS the ABI: include/jax_aiter/kernels/gemm_fp8bs.hpp mirrors it field by
// field (GemmFp8BsArgs). The kernels instantiated are exactly JAX_AITER_GEMM_FP8BS_TILES of
// include/jax_aiter/kernels/shared/gemm_fp8bs.h. Grid (N / BN, ceil(M / BM)); no K split.
//
// Build: as gemm.kernel.cpp (nvcc -cubin -arch=sm_90 ...; clang++-22 -x hip ... -nogpuinc).
#include "jax_aiter/kernels/shared/gemm_fp8bs.h"
#include "jax_aiter_gemm_fp8bs_tile.hpp"

namespace ja {

template <int BM, int BN, int BK, int THREADS>
JA_DEVICE void gemm_fp8bs_kernel(const void* a, const void* b, const void* a_scale,
                                 const void* b_scale, void* out, int M, int N, int K, int lda) {
  using T = GemmFp8BsTile<BM, BN, BK, THREADS>;
  JA_SHARED Pack<uint16_t, 8> smem[T::kSmemElems / 8];
  const int n0 = block_id() * BN, m0 = block_id_y() * BM;
  if (m0 >= M || n0 >= N) return;
  const int rows = M - m0 < BM ? M - m0 : BM, cols = N - n0 < BN ? N - n0 : BN;
  const int kblocks = K / 128;
  T t;
  t.run(reinterpret_cast<uint16_t*>(smem),
        static_cast<const unsigned char*>(a) + static_cast<int64_t>(m0) * lda, lda, rows,
        static_cast<const unsigned char*>(b), K, n0, cols, 0, K,
        static_cast<const float*>(a_scale) + m0, M,
        static_cast<const float*>(b_scale) + static_cast<int64_t>(n0 / 128) * kblocks);
  uint16_t* o = static_cast<uint16_t*>(out) + static_cast<int64_t>(m0) * N + n0;
  for_each_valid_f32(t, rows, cols, [&](int r, int c, float v) {
    o[static_cast<int64_t>(r) * N + c] = BF16::store(v);
  });
}

}  // namespace ja

// One kernel per tile; the parameter list is GemmFp8BsArgs'.
#define JA_GEMM_FP8BS_KERNEL(name, BM, BN, BK, THREADS)                                          \
  JA_KERNEL_BOUNDED(THREADS)                                                                     \
  void jax_aiter_gemm_fp8bs_##name(const void* a, const void* b, const void* a_scale,            \
                                   const void* b_scale, void* out, int M, int N, int K, int lda, \
                                   [[maybe_unused]] int fnuz) {                                  \
    ja::wait_for_prior_grids();                                                                  \
    ja::allow_dependent_grids();                                                                 \
    ja::gemm_fp8bs_kernel<BM, BN, BK, THREADS>(a, b, a_scale, b_scale, out, M, N, K, lda);       \
  }

JAX_AITER_GEMM_FP8BS_TILES(JA_GEMM_FP8BS_KERNEL)
