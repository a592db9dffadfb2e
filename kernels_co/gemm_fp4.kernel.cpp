// Portable FP4 (MXFP4) GEMM: out[M, N] bf16 = dequant(a) . dequant(b)^T, a and b fp4 e2m1 packed
// two a byte, e8m0 scales per 32 along K in AITER's e8m0_shuffle layout, b shuffled (16, 16) or
// plain. FP4 is dequantised in the kernel; plain float FMAs on every target
// (jax_aiter_gemm_fp4_tile.hpp).
//
// The parameter list IS the ABI: include/jax_aiter/kernels/gemm_fp4.hpp mirrors it field by field
// (GemmFp4Args). The kernels instantiated are exactly JAX_AITER_GEMM_FP4_TILES of
// include/jax_aiter/kernels/shared/gemm_fp4.h. Grid (ceil(N / BN), ceil(M / BM)); no K split.
//
// Build: as gemm.kernel.cpp (nvcc -cubin -arch=sm_90 ...; clang++-22 -x hip ... -nogpuinc).
#include "jax_aiter/kernels/shared/gemm_fp4.h"
#include "jax_aiter_gemm_fp4_tile.hpp"

namespace ja {

template <int BM, int BN>
JA_DEVICE void gemm_fp4_kernel(const void* a, const void* b, const void* a_scale,
                               const void* b_scale, void* out, int M, int N, int K, int lda,
                               int sa_stride, int sb_stride, int b_shuffled) {
  static_assert(BN == fp4::kSN && (BM == 64 || BM == 16));
  JA_SHARED fp4::Shared<BM> sh;
  const int n0 = block_id() * BN, m0 = block_id_y() * BM;
  if (m0 >= M || n0 >= N) return;
  const fp4::Operands o{static_cast<const unsigned char*>(a),
                        lda,
                        static_cast<const unsigned char*>(b),
                        b_shuffled != 0,
                        static_cast<const unsigned char*>(a_scale),
                        sa_stride,
                        static_cast<const unsigned char*>(b_scale),
                        sb_stride,
                        M,
                        N,
                        K};
  uint16_t* o_ptr = static_cast<uint16_t*>(out) + static_cast<int64_t>(m0) * N + n0;
  fp4::subtile<BM>(sh, o, m0, n0, 0, K, [&](int r, int c, float v) {
    o_ptr[static_cast<int64_t>(r) * N + c] = BF16::store(v);
  });
}

}  // namespace ja

// One kernel per tile; the parameter list is GemmFp4Args'.
#define JA_GEMM_FP4_KERNEL(name, BM, BN, THREADS)                                                \
  JA_KERNEL_BOUNDED(THREADS)                                                                     \
  void jax_aiter_gemm_fp4_##name(const void* a, const void* b, const void* a_scale,              \
                                 const void* b_scale, void* out, int M, int N, int K, int lda,   \
                                 int sa_stride, int sb_stride, int b_shuffled) {                 \
    ja::wait_for_prior_grids();                                                                  \
    ja::allow_dependent_grids();                                                                 \
    ja::gemm_fp4_kernel<BM, BN>(a, b, a_scale, b_scale, out, M, N, K, lda, sa_stride, sb_stride, \
                                b_shuffled);                                                     \
  }

JAX_AITER_GEMM_FP4_TILES(JA_GEMM_FP4_KERNEL)
