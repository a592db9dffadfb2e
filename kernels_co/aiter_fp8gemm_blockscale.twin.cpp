// ABI twins of AITER's FP8 block-scale ASM GEMM kernels (hsa/<arch>/fp8gemm_blockscale/*.co): one
// kernel per row of JAX_AITER_FP8GEMM_BLOCKSCALE_ROWS (include/jax_aiter/kernels/shared/
// aiter_fp8gemm_blockscale.h), named by the row's symbol and declaring AITER's kernel arguments as
// AITER's code objects do (names, offsets, sizes, kernarg segment:
// /work/shared/aiter-facts/kernel-arguments.txt; tests/cpp/data/check_twin_kernargs.py compares
// them). Each honours AITER's launch contract with our own fp8 tile
// (jax_aiter_gemm_fp8bs_tile.hpp), so an ASM-tier plan runs unchanged with the twin in place of
// AITER's code object: on AMD without an AITER checkout, and on sm_90.
//
// Contract (AITER at e4048607a535, csrc/py_itfs_cu/asm_a8w8_blockscale_bpreshuffle.cu; restated
// in our aiter-facts ABI-AND-RULES.md section 4.2), as the twin honours it:
//   block 256 threads; grid ((N / tile_n) * KS, ceil(M / tile_m)). Block x = z * (N / tile_n) + j
//   owns out rows [y tile_m, +tile_m) (clipped to M) and columns [j tile_n, +tile_n) over split
//   z's K range [z chunk, min(K, (z + 1) chunk)), chunk = roundup(ceil(K / KS), 128).
//   A fp8 [M, K] rows PA bytes apart; B fp8 [N, K] shuffled (16, 16) (PB, = K, is not needed by
//   the layout); SA f32 [K/128, scale_m] (K-block-major: SA[kb * scale_m + m]); SB f32
//   [N/128, scale_k]; BIAS f32 [N], read always; C bf16 rows PC bytes apart.
//   KS <= 1: C = bf16(sum_kb acc_kb SA SB + BIAS[n]), acc_kb the f32 dot product of K block kb.
//   KS > 1: C arrives zeroed (the caller's memset) and each split adds bf16(its sum (+ BIAS in
//   split 0)) into it atomically (a compare-and-swap per element: the running sum is bf16).
// Beyond the contract: blocks with z >= KS return at once; scale_n is not needed. The plan's fp8
// format comes in the first pad byte of the scale_k slot (aiter_fp8bs::kFormatFnuz: a gfx942
// plan's e4m3fnuz, which the sm_90 build converts in registers; AMD's hardware reads its own).
//
// Build: as gemm.kernel.cpp (nvcc -cubin -arch=sm_90 ...; clang++-22 -x hip ... with
// -fhip-kernel-arg-name for the argument names).
#include "jax_aiter/kernels/shared/aiter_fp8gemm_blockscale.h"
#include "jax_aiter_gemm_fp8bs_tile.hpp"

namespace ja::twin_fp8bs {

namespace abi = jax_aiter::kernels::aiter_fp8bs;
inline constexpr int kBK = 64;

template <int TM, int TN, bool kFnuz>
JA_DEVICE void fp8gemm_as(uint16_t* smem, void* C, const void* A, const void* B, const void* SA,
                          const void* SB, const void* BIAS, uint32_t m_dim, uint32_t n_dim,
                          uint32_t k_dim, uint32_t pa, uint32_t pc, uint32_t ks, uint32_t scale_m,
                          uint32_t scale_k) {
  using T = GemmFp8BsTile<TM, TN, kBK, abi::kBlockThreads, kFnuz>;
  const int M = static_cast<int>(m_dim), N = static_cast<int>(n_dim), K = static_cast<int>(k_dim);
  const int col_blocks = N / TN > 0 ? N / TN : 1;
  const int split = ks > 1 ? static_cast<int>(ks) : 1;
  const int z = block_id() / col_blocks, j = block_id() % col_blocks;
  const int m0 = block_id_y() * TM, n0 = j * TN;
  if (z >= split || m0 >= M || n0 >= N) return;
  const int rows = M - m0 < TM ? M - m0 : TM, cols = N - n0 < TN ? N - n0 : TN;
  const int64_t chunk = abi::split_chunk(K, split);
  const int64_t first = static_cast<int64_t>(z) * chunk;
  const int k_begin = first < K ? static_cast<int>(first) : K;
  const int k_end = K - k_begin < chunk ? K : k_begin + static_cast<int>(chunk);
  T t;
  t.run(smem, static_cast<const unsigned char*>(A) + static_cast<int64_t>(m0) * pa, pa, rows,
        static_cast<const unsigned char*>(B), K, n0, cols, k_begin, k_end,
        static_cast<const float*>(SA) + m0, scale_m,
        static_cast<const float*>(SB) + static_cast<int64_t>(n0 / abi::kScaleN) * scale_k);
  const float* bias = static_cast<const float*>(BIAS) + n0;
  unsigned char* out = static_cast<unsigned char*>(C) + static_cast<int64_t>(m0) * pc;
  for_each_valid_f32(t, rows, cols, [&](int r, int c, float v) {
    const float y = v + (z == 0 ? bias[c] : 0.f);
    uint16_t* o = reinterpret_cast<uint16_t*>(out + static_cast<int64_t>(r) * pc) + n0 + c;
    if (split > 1) {
      atomic_add_bf16(o, y);
    } else {
      *o = BF16::store(y);
    }
  });
}

template <int TM, int TN>
JA_DEVICE void fp8gemm(void* C, const void* A, const void* B, const void* SA, const void* SB,
                       const void* BIAS, uint32_t m_dim, uint32_t n_dim, uint32_t k_dim,
                       uint32_t pa, uint32_t pc, uint32_t ks, uint32_t scale_m, uint32_t scale_k,
                       uint32_t format) {
  using T = GemmFp8BsTile<TM, TN, kBK, abi::kBlockThreads>;
  JA_SHARED Pack<uint16_t, 8> smem[T::kSmemElems / 8];
  uint16_t* s = reinterpret_cast<uint16_t*>(smem);
#if defined(__CUDACC__)
  if ((format & 0xffu) == abi::kFormatFnuz) {
    fp8gemm_as<TM, TN, true>(s, C, A, B, SA, SB, BIAS, m_dim, n_dim, k_dim, pa, pc, ks, scale_m,
                             scale_k);
    return;
  }
#else
  (void)format;
#endif
  fp8gemm_as<TM, TN, false>(s, C, A, B, SA, SB, BIAS, m_dim, n_dim, k_dim, pa, pc, ks, scale_m,
                            scale_k);
}

}  // namespace ja::twin_fp8bs

// AITER's symbols are mangled C++ names declared here as extern "C" identifiers, which the
// language reserves (leading underscore and capital).
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wreserved-identifier"
#endif

// One argument per 16-byte slot, as AITER's metadata declares them: the value first, then
// padding parameters named pad<n> (which our metadata check skips).
#define JA_FP8BS_PTR_SLOT(type, name, n) type name, [[maybe_unused]] uint64_t pad##n
#define JA_FP8BS_U32_SLOT(type, name, a, b, c)                                   \
  type name, [[maybe_unused]] uint32_t pad##a, [[maybe_unused]] uint32_t pad##b, \
      [[maybe_unused]] uint32_t pad##c
#define JA_FP8BS_PARAMS                                                                         \
  JA_FP8BS_PTR_SLOT(void*, C, 0), JA_FP8BS_PTR_SLOT(const void*, A, 1),                         \
      JA_FP8BS_PTR_SLOT(const void*, B, 2), JA_FP8BS_PTR_SLOT(const void*, SA, 3),              \
      JA_FP8BS_PTR_SLOT(const void*, SB, 4), JA_FP8BS_PTR_SLOT(const void*, BIAS, 5),           \
      JA_FP8BS_U32_SLOT(uint32_t, M, 6, 7, 8), JA_FP8BS_U32_SLOT(uint32_t, Ndim, 9, 10, 11),    \
      JA_FP8BS_U32_SLOT(uint32_t, K, 12, 13, 14), JA_FP8BS_U32_SLOT(uint32_t, PA, 15, 16, 17),  \
      JA_FP8BS_U32_SLOT([[maybe_unused]] uint32_t, PB, 18, 19, 20),                             \
      JA_FP8BS_U32_SLOT(uint32_t, PC, 21, 22, 23), JA_FP8BS_U32_SLOT(uint32_t, KS, 24, 25, 26), \
      JA_FP8BS_U32_SLOT(uint32_t, scale_m, 27, 28, 29),                                         \
      JA_FP8BS_U32_SLOT([[maybe_unused]] uint32_t, scale_n, 30, 31, 32), uint32_t scale_k,      \
      uint32_t pad33, [[maybe_unused]] uint32_t pad34, [[maybe_unused]] uint32_t pad35

#define JA_FP8BS_TWIN(symbol, co, tm, tn, g942, g950)                                       \
  JA_KERNEL_BOUNDED(256)                                                                    \
  void symbol(JA_FP8BS_PARAMS) {                                                            \
    ja::wait_for_prior_grids();                                                             \
    ja::allow_dependent_grids();                                                            \
    ja::twin_fp8bs::fp8gemm<tm, tn>(C, A, B, SA, SB, BIAS, M, Ndim, K, PA, PC, KS, scale_m, \
                                    scale_k, pad33);                                        \
  }

static_assert(jax_aiter::kernels::aiter_fp8bs::kBlockThreads == 256);
JAX_AITER_FP8GEMM_BLOCKSCALE_ROWS(JA_FP8BS_TWIN)
