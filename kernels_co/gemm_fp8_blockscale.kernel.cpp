// Portable FP8 block-scale GEMM: out[M, N] (bf16 or f16) = sum over 128-wide K blocks kb of
// a_scale[kb][m] * b_scale[n / 128][kb] * (a[m, kb] . b[n, kb]), a and b fp8 e4m3 (the
// hardware's variant), b in AITER's shuffled (16, 16) layout (the FlatMM layout's bytes), a_scale
// K-block-major [K/128, M], b_scale [ceil(N/128), K/128]. fp8 tensor cores (mma.sync m16n8k32
// e4m3 on sm_90, v_mfma_f32_16x16x32_fp8_fp8 on gfx942/gfx950; see jax_aiter_gemm_fp8bs_tile.hpp),
// each block's partial sums scaled and added in f32, one rounding to the output type.
// Plus the scale transpose a FlatMM plan runs before AITER's kernel (b_scale -> [K/128, N/128]).
//
// The parameter lists ARE the ABI: include/jax_aiter/kernels/gemm_fp8_blockscale.hpp mirrors them
// field by field (GemmFp8BlockscaleArgs, GemmFp8BlockscaleSplitArgs, GemmFp8BlockscaleFinishArgs,
// GemmFp8BlockscaleTransposeArgs). The GEMM kernels instantiated are exactly
// JAX_AITER_GEMM_FP8_BLOCKSCALE_TILES of include/jax_aiter/kernels/shared/gemm_fp8_blockscale.h.
// Grid (ceil(N / BN), ceil(M / BM)); the mma tiles do not split K. The w tile runs the wgmma
// engine (jax_aiter_gemm_wgmma.hpp, FP8 block-scale family in jax_aiter_gemm_wgmma_fp8bs.hpp) on
// sm_90, unsplit or split into f32 slices that jax_aiter_gemm_fp8_blockscale_finish adds in
// order; on AMD its symbols trap (no gfx plan takes them; they add no gfx compile time).
//
// The decode kernel (jax_aiter_gemm_fp8_blockscale_stream; M <= 16 on sm_90,
// GemmFp8BlockscaleStreamArgs): the weight-streaming engine of jax_aiter_gemm_stream_q.hpp, K split
// across blocks, the splits' f32 partials added in split order by the same finish kernel.
//
// Build: as gemm.kernel.cpp (nvcc -cubin -arch=sm_90 ...; clang++-22 -x hip ... -nogpuinc).
#include "jax_aiter/kernels/shared/gemm_fp8_blockscale.h"
#include "jax_aiter_gemm_fp8bs_tile.hpp"
#include "jax_aiter_gemm_stream_q_families.hpp"
#include "jax_aiter_gemm_wgmma_fp8bs.hpp"

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

#if defined(__CUDACC__)

// The w tile: one 128 x 256 tile over K [k_begin, k_end) of split z (k_chunk a multiple of 128)
// through the wgmma engine. store(r, c, v0, v1): tile-local row r, columns c and c + 1 (c even,
// both valid: N % 16 == 0), the f32 totals.
template <class Store>
JA_DEVICE void gemm_fp8_blockscale_wgmma_tile(const void* a, const void* b, const void* a_scale,
                                              const void* b_scale, int M, int N, int K, int lda,
                                              int k_chunk, int& m0, int& n0, Store&& store) {
  using W = GemmWgmma<WgmmaFp8, fp8_blockscale::kWgmmaStages>;
  static_assert(W::kSmemBytes == fp8_blockscale::kWgmmaSmemBytes && W::kBK == 128);
  constexpr int kBlock = fp8_blockscale::kScaleBlock;
  wgmma_tile_place<W::BM, W::BN>(M, N, m0, n0);
  const int64_t k_first = static_cast<int64_t>(block_id_z()) * k_chunk;
  const int k_begin = k_first < K ? static_cast<int>(k_first) : K;
  const int k_end = K - k_begin < k_chunk ? K : k_begin + k_chunk;
  const int rows = M - m0 < W::BM ? M - m0 : W::BM, cols = N - n0 < W::BN ? N - n0 : W::BN;
  unsigned char* smem = dynamic_shared();
  if (dynamic_shared_bytes() < fp8_blockscale::kWgmmaSmemBytes) __trap();  // a plan gave too little
  // B: the tile's first 16-row block of the shuffled weight, 16 K bytes a block (n0 % 16 == 0).
  const int64_t block16 = int64_t{wgmma_i8::L::kShuffleN} * K;
  const WgmmaJob job{{static_cast<const unsigned char*>(a) + static_cast<int64_t>(m0) * lda, lda},
                     rows,
                     {static_cast<const unsigned char*>(b) + (n0 / 16) * block16, block16},
                     cols,
                     k_begin,
                     k_end};
  const int kb0 = k_begin / kBlock, kblocks = K / kBlock;
  const WgmmaFp8BlockScale step{
      static_cast<const float*>(a_scale) + static_cast<int64_t>(kb0) * M + m0,
      M,
      rows,
      static_cast<const float*>(b_scale) + static_cast<int64_t>(n0 / kBlock) * kblocks + kb0,
      kblocks,
      cols};
  W w;
  if (!w.run(smem, job, step)) return;
  w.for_each([&](int r, int c, float v0, float v1) {
    if (r < rows && c < cols) store(r, c, v0, v1);
  });
}

JA_DEVICE void gemm_fp8_blockscale_wgmma_kernel(const void* a, const void* b, const void* a_scale,
                                                const void* b_scale, void* out, int M, int N, int K,
                                                int lda, int out_f16) {
  int m0, n0;
  uint16_t* o = static_cast<uint16_t*>(out);
  // Pairs of columns as one 32-bit store (c even, N even).
  gemm_fp8_blockscale_wgmma_tile(
      a, b, a_scale, b_scale, M, N, K, lda, K, m0, n0, [&](int r, int c, float v0, float v1) {
        const uint32_t lo = out_f16 ? F16::store(v0) : BF16::store(v0);
        const uint32_t hi = out_f16 ? F16::store(v1) : BF16::store(v1);
        *reinterpret_cast<uint32_t*>(o + static_cast<int64_t>(m0 + r) * N + n0 + c) =
            lo | (hi << 16);
      });
}

JA_DEVICE void gemm_fp8_blockscale_wgmma_split_kernel(const void* a, const void* b,
                                                      const void* a_scale, const void* b_scale,
                                                      void* partial, int M, int N, int K, int lda,
                                                      int k_chunk) {
  int m0, n0;
  float* p = static_cast<float*>(partial) + static_cast<int64_t>(block_id_z()) * M * N;
  gemm_fp8_blockscale_wgmma_tile(
      a, b, a_scale, b_scale, M, N, K, lda, k_chunk, m0, n0, [&](int r, int c, float v0, float v1) {
        *reinterpret_cast<float2*>(p + static_cast<int64_t>(m0 + r) * N + n0 + c) =
            make_float2(v0, v1);
      });
}

// kFinishVec consecutive elements a thread: the splits' slices added in split order, rounded once.
JA_DEVICE void gemm_fp8_blockscale_finish(const void* partial, void* out, int M, int N, int splits,
                                          int out_f16) {
  constexpr int kVec = fp8_blockscale::kFinishVec;
  const int64_t total = static_cast<int64_t>(M) * N;
  const int64_t i =
      (static_cast<int64_t>(block_id()) * fp8_blockscale::kFinishThreads + thread_id()) * kVec;
  if (i >= total) return;
  const float* p = static_cast<const float*>(partial) + i;
  float4 s = *reinterpret_cast<const float4*>(p);
  for (int z = 1; z < splits; ++z) {
    const float4 v = *reinterpret_cast<const float4*>(p + z * total);
    s.x += v.x, s.y += v.y, s.z += v.z, s.w += v.w;
  }
  uint16_t h[kVec];
  const float f[kVec] = {s.x, s.y, s.z, s.w};
  JA_UNROLL
  for (int e = 0; e < kVec; ++e) h[e] = out_f16 ? F16::store(f[e]) : BF16::store(f[e]);
  *reinterpret_cast<uint2*>(static_cast<uint16_t*>(out) + i) =
      make_uint2(h[0] | (uint32_t{h[1]} << 16), h[2] | (uint32_t{h[3]} << 16));
}

#endif  // __CUDACC__

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

JAX_AITER_GEMM_FP8_BLOCKSCALE_MMA_TILES(JA_GEMM_FP8_BLOCKSCALE_KERNEL)

// The w tile (sm_90): unsplit (GemmFp8BlockscaleArgs' list), split (GemmFp8BlockscaleSplitArgs')
// and the finish (GemmFp8BlockscaleFinishArgs'); one block an SM (the register cap setmaxnreg
// needs; their shared memory holds one block anyway). On AMD a trap: no gfx plan takes them.
#if defined(__CUDACC__)
#define JA_FP8BS_W_BODY(call) call;
#else
#define JA_FP8BS_W_BODY(call) __builtin_trap();
#endif
#define JA_GEMM_FP8_BLOCKSCALE_WGMMA_KERNELS(name, BM, BN, BK, THREADS)                            \
  JA_KERNEL_BOUNDED_RESIDENT(THREADS, 1)                                                           \
  void jax_aiter_gemm_fp8_blockscale_##name(                                                       \
      [[maybe_unused]] const void* a, [[maybe_unused]] const void* b,                              \
      [[maybe_unused]] const void* a_scale, [[maybe_unused]] const void* b_scale,                  \
      [[maybe_unused]] void* out, [[maybe_unused]] int M, [[maybe_unused]] int N,                  \
      [[maybe_unused]] int K, [[maybe_unused]] int lda, [[maybe_unused]] int out_f16,              \
      [[maybe_unused]] int fnuz) {                                                                 \
    ja::wait_for_prior_grids();                                                                    \
    ja::allow_dependent_grids();                                                                   \
    JA_FP8BS_W_BODY(                                                                               \
        ja::gemm_fp8_blockscale_wgmma_kernel(a, b, a_scale, b_scale, out, M, N, K, lda, out_f16))  \
  }                                                                                                \
  JA_KERNEL_BOUNDED_RESIDENT(THREADS, 1)                                                           \
  void jax_aiter_gemm_fp8_blockscale_split_##name(                                                 \
      [[maybe_unused]] const void* a, [[maybe_unused]] const void* b,                              \
      [[maybe_unused]] const void* a_scale, [[maybe_unused]] const void* b_scale,                  \
      [[maybe_unused]] void* partial, [[maybe_unused]] int M, [[maybe_unused]] int N,              \
      [[maybe_unused]] int K, [[maybe_unused]] int lda, [[maybe_unused]] int k_chunk) {            \
    ja::wait_for_prior_grids();                                                                    \
    ja::allow_dependent_grids();                                                                   \
    JA_FP8BS_W_BODY(ja::gemm_fp8_blockscale_wgmma_split_kernel(a, b, a_scale, b_scale, partial, M, \
                                                               N, K, lda, k_chunk))                \
  }

JAX_AITER_GEMM_FP8_BLOCKSCALE_WGMMA_TILES(JA_GEMM_FP8_BLOCKSCALE_WGMMA_KERNELS)

JA_KERNEL_BOUNDED(jax_aiter::kernels::gemm_fp8_blockscale::kFinishThreads)
void jax_aiter_gemm_fp8_blockscale_finish([[maybe_unused]] const void* partial,
                                          [[maybe_unused]] void* out, [[maybe_unused]] int M,
                                          [[maybe_unused]] int N, [[maybe_unused]] int splits,
                                          [[maybe_unused]] int out_f16) {
  ja::wait_for_prior_grids();
  ja::allow_dependent_grids();
  JA_FP8BS_W_BODY(ja::gemm_fp8_blockscale_finish(partial, out, M, N, splits, out_f16))
}

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

// The decode kernel (sm_90; on AMD the symbol exists for the shared kernel table and traps: no
// plan for a gfx arch takes it); the parameter list is GemmFp8BlockscaleStreamArgs'. Its split
// partials are added by jax_aiter_gemm_fp8_blockscale_finish.
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
