// Portable MI350-FP8 block-scale GEMM: out[M, N] bf16 = sum over 128-wide K blocks kb of
// x_scale[kb][m] * w_scale[n / 128][kb] * (xq[m, kb] . wq[n, kb]), wq in AITER's shuffled
// (16, 16) layout, the block products on the fp8 tensor cores (mma.sync m16n8k32 e4m3 on sm_90,
// v_mfma_f32_16x16x32_fp8_fp8 on gfx942/gfx950; jax_aiter_gemm_fp8bs_tile.hpp), float32 throughout,
// one bf16 rounding.
//
// The parameter list IS the ABI: include/jax_aiter/kernels/gemm_fp8_mi350.hpp mirrors it field by
// field (GemmFp8Mi350Args). The kernels instantiated are exactly JAX_AITER_GEMM_FP8_MI350_TILES of
// include/jax_aiter/kernels/shared/gemm_fp8_mi350.h. Grid (N / BN, ceil(M / BM)); BN = 128, so a
// block's columns share one w_scale block. `fnuz` is for the host twin: the hardware decides the
// format a GPU reads.
//
// Build: as gemm.kernel.cpp (nvcc -cubin -arch=sm_90 ...; clang++-22 -x hip ... -nogpuinc).
#include "jax_aiter/kernels/shared/gemm_fp8_mi350.h"
#include "jax_aiter/kernels/shared/aiter_mi350.h"
#include "jax_aiter_gemm_fp8bs_tile.hpp"

namespace ja {

template <int BM, int BN, int BK, int THREADS>
JA_DEVICE void gemm_fp8_mi350_kernel(const void* xq, const void* wq, const void* x_scale,
                                     const void* w_scale, void* out, int M, int N, int K) {
  static_assert(BN == jax_aiter::kernels::aiter_mi350::kScaleBlock);
  using T = GemmFp8BsTile<BM, BN, BK, THREADS>;
  JA_SHARED Pack<uint16_t, 8> smem[T::kSmemElems / 8];
  const int n0 = block_id() * BN, m0 = block_id_y() * BM;
  if (m0 >= M || n0 >= N) return;
  const int rows = M - m0 < BM ? M - m0 : BM, cols = N - n0 < BN ? N - n0 : BN;
  T t;
  t.run(reinterpret_cast<uint16_t*>(smem),
        static_cast<const unsigned char*>(xq) + static_cast<int64_t>(m0) * K, K, rows,
        static_cast<const unsigned char*>(wq), K, n0, cols, 0, K,
        static_cast<const float*>(x_scale) + m0, M,
        static_cast<const float*>(w_scale) + static_cast<int64_t>(n0 / BN) * (K / BN));
  uint16_t* o = static_cast<uint16_t*>(out) + static_cast<int64_t>(m0) * N + n0;
  for_each_valid_f32(t, rows, cols, [&](int r, int c, float v) {
    o[static_cast<int64_t>(r) * N + c] = BF16::store(v);
  });
}

}  // namespace ja

// One kernel per tile; the parameter list is GemmFp8Mi350Args'.
#define JA_GEMM_FP8_MI350_KERNEL(name, BM, BN, BK, THREADS)                                 \
  JA_KERNEL_BOUNDED(THREADS)                                                                \
  void jax_aiter_gemm_fp8_mi350_##name(const void* xq, const void* wq, const void* x_scale, \
                                       const void* w_scale, void* out, int M, int N, int K, \
                                       [[maybe_unused]] int fnuz) {                         \
    ja::wait_for_prior_grids();                                                             \
    ja::allow_dependent_grids();                                                            \
    ja::gemm_fp8_mi350_kernel<BM, BN, BK, THREADS>(xq, wq, x_scale, w_scale, out, M, N, K); \
  }

JAX_AITER_GEMM_FP8_MI350_TILES(JA_GEMM_FP8_MI350_KERNEL)
