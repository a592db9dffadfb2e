// Portable FlatMM fp8 block-scale GEMM: out[M, N] f16 = sum over K blocks b of 128 of
// x_scale[b][m] w_scale[b][n / 128] (x[m, block b] . w[n, block b]), x and w e4m3 (the format the
// hardware's fp8 instructions read), w in AITER's FlatMM layout, float32 partials on the tensor
// cores (mma.sync m16n8k32 e4m3 on sm_90, v_mfma_f32_16x16x32_fp8_fp8 on gfx942/gfx950; see
// jax_aiter_gemm_fp8bs_tile.hpp), scaled and summed in float32.
//
// The parameter list IS the ABI: include/jax_aiter/kernels/flatmm_fp8.hpp mirrors it field by
// field (FlatmmFp8Args). The kernels instantiated are exactly JAX_AITER_FLATMM_FP8_TILES of
// include/jax_aiter/kernels/shared/flatmm_fp8.h. Grid (ceil(N / BN), ceil(M / BM)); no K split.
//
// Build: as gemm.kernel.cpp (nvcc -cubin -arch=sm_90 ...; clang++-22 -x hip ... -nogpuinc).
#include "jax_aiter/kernels/shared/flatmm_fp8.h"
#include "jax_aiter_gemm_fp8bs_tile.hpp"

namespace ja {

template <int BM, int BN, int BK, int THREADS>
JA_DEVICE void flatmm_fp8_kernel(const void* x, const void* w, const void* x_scale,
                                 const void* w_scale, void* out, int M, int N, int K, int scale_n,
                                 int lda) {
  using T = GemmFp8BsTile<BM, BN, BK, THREADS>;
  JA_SHARED Pack<uint16_t, 8> smem[T::kSmemElems / 8];
  const int n0 = block_id() * BN, m0 = block_id_y() * BM;
  if (m0 >= M || n0 >= N) return;
  const int rows = M - m0 < BM ? M - m0 : BM, cols = N - n0 < BN ? N - n0 : BN;
  const float* xs = static_cast<const float*>(x_scale) + m0;        // [K/128, M]
  const float* ws = static_cast<const float*>(w_scale) + n0 / 128;  // [K/128, scale_n]
  T t;
  t.run(
      reinterpret_cast<uint16_t*>(smem),
      static_cast<const unsigned char*>(x) + static_cast<int64_t>(m0) * lda, lda, rows,
      static_cast<const unsigned char*>(w), K, n0, cols, 0, K,
      [&](int kb) { return xs + static_cast<int64_t>(kb) * M; },
      [&](int kb) { return ws[static_cast<int64_t>(kb) * scale_n]; });
  uint16_t* o = static_cast<uint16_t*>(out) + static_cast<int64_t>(m0) * N + n0;
  for_each_valid_f32(t, rows, cols, [&](int r, int c, float v) {
    o[static_cast<int64_t>(r) * N + c] = F16::store(v);
  });
}

}  // namespace ja

// One kernel per tile; the parameter list is FlatmmFp8Args'.
#define JA_FLATMM_FP8_KERNEL(name, BM, BN, BK, THREADS)                                       \
  JA_KERNEL_BOUNDED(THREADS)                                                                  \
  void jax_aiter_flatmm_fp8_##name(const void* x, const void* w, const void* x_scale,         \
                                   const void* w_scale, void* out, int M, int N, int K,       \
                                   int scale_n, int lda, [[maybe_unused]] int fp8_fnuz) {     \
    ja::wait_for_prior_grids();                                                               \
    ja::allow_dependent_grids();                                                              \
    ja::flatmm_fp8_kernel<BM, BN, BK, THREADS>(x, w, x_scale, w_scale, out, M, N, K, scale_n, \
                                               lda);                                          \
  }

JAX_AITER_FLATMM_FP8_TILES(JA_FLATMM_FP8_KERNEL)
