// ABI twins of AITER's FP4 (a4w4, MXFP4) ASM GEMM kernels (hsa/gfx950/f4gemm/*.co): one kernel per
// row of JAX_AITER_F4GEMM_ROWS (include/jax_aiter/kernels/shared/aiter_f4gemm.h), named by the
// row's symbol and declaring AITER's kernel arguments as AITER's code objects do (names, offsets,
// sizes, kernarg segment: /work/shared/aiter-facts/kernel-arguments.txt; tests/cpp/data/
// check_twin_kernargs.py compares them). Each honours AITER's launch contract with our own FP4
// sub-tile (jax_aiter_gemm_fp4_tile.hpp), so an ASM-tier plan runs unchanged with the twin in
// place of AITER's code object: on AMD without an AITER checkout, and on sm_90.
//
// Contract (AITER at e4048607a535, csrc/py_itfs_cu/asm_gemm_a4w4.cu; restated in our aiter-facts
// ABI-AND-RULES.md section 4.4), as the twin honours it:
//   block 256 threads; grid (ceil(N / tile_n), ceil(M / tile_m), splits). Block (x, y, z) owns
//   D rows [y tile_m, +tile_m) and columns [x tile_n, +tile_n) (clipped to M and N) over split
//   z's K range [z chunk, min(K, (z + 1) chunk)), chunk = roundup(K / 2^log2_k_split, 256) (the
//   rows that may split; the others read no log2_k_split and cover all of K).
//   A fp4x2 [M, K/2] rows strideA0 / 2 bytes apart; B fp4x2 [N, K/2] shuffled (16, 16)
//   (BpreShuffle rows) or plain (noBpreShuffle); ScaleA / ScaleB e8m0 in the e8m0_shuffle layout,
//   rows strideScaleA0 / strideScaleB0 bytes apart; D bf16 and C f32 rows strideC0 elements
//   apart (AITER fills only strideC0, from out).
//   One split: D = bf16(alpha acc + beta C) (C null: no C term). More: D arrives zeroed (the
//   caller's memset) and each split adds bf16(alpha acc_z (+ beta C in split 0)) into it
//   atomically (a compare-and-swap per element: the running sum is bf16, its order unspecified).
// Beyond the contract: the other strides are not read.
//
// Build: as gemm.kernel.cpp (nvcc -cubin -arch=sm_90 ...; clang++-22 -x hip ... with
// -fhip-kernel-arg-name for the argument names).
#include "jax_aiter/kernels/shared/aiter_f4gemm.h"
#include "jax_aiter_gemm_fp4_tile.hpp"

namespace ja::twin_f4 {

namespace abi = jax_aiter::kernels::aiter_f4gemm;

template <int TM, int TN, bool kShuffled>
JA_DEVICE void f4gemm(void* D, const void* C, const void* A, const void* B, float alpha, float beta,
                      uint32_t stride_c0, uint32_t stride_a0, uint32_t m_dim, uint32_t n_dim,
                      uint32_t k_dim, const void* SA, const void* SB, uint32_t stride_sa0,
                      uint32_t stride_sb0, int log2_k_split) {
  JA_SHARED fp4::Shared<64> sh;
  const int M = static_cast<int>(m_dim), N = static_cast<int>(n_dim), K = static_cast<int>(k_dim);
  const int log2 = log2_k_split > 0 ? log2_k_split : 0;
  const int split = 1 << log2;
  const int z = block_id_z();
  const int m_tile = block_id_y() * TM, n_tile = block_id() * TN;
  if (z >= split || m_tile >= M || n_tile >= N) return;
  const long long chunk = abi::split_chunk(K, log2);
  const long long first = static_cast<long long>(z) * chunk;
  const int k_begin = first < K ? static_cast<int>(first) : K;
  const int k_end = K - k_begin < chunk ? K : k_begin + static_cast<int>(chunk);
  const fp4::Operands o{static_cast<const unsigned char*>(A),
                        stride_a0 / 2,
                        static_cast<const unsigned char*>(B),
                        kShuffled,
                        static_cast<const unsigned char*>(SA),
                        stride_sa0,
                        static_cast<const unsigned char*>(SB),
                        stride_sb0,
                        M,
                        N,
                        K};
  const float* c_ptr = static_cast<const float*>(C);
  uint16_t* d_ptr = static_cast<uint16_t*>(D);
  for (int sm = 0; sm < TM && m_tile + sm < M; sm += 64) {
    for (int sn = 0; sn < TN && n_tile + sn < N; sn += fp4::kSN) {
      const int m0 = m_tile + sm, n0 = n_tile + sn;
      fp4::subtile<64>(sh, o, m0, n0, k_begin, k_end, [&](int r, int c, float acc) {
        if (sm + r >= TM || sn + c >= TN) return;  // tile_m 96, 160, 224: the last sub-tile's rest
        const int64_t at = static_cast<int64_t>(m0 + r) * stride_c0 + n0 + c;
        float v = alpha * acc;
        if (c_ptr != nullptr && z == 0) v += beta * c_ptr[at];
        if (split > 1) {
          atomic_add_bf16(d_ptr + at, v);
        } else {
          d_ptr[at] = BF16::store(v);
        }
      });
    }
  }
}

}  // namespace ja::twin_f4

// AITER's symbols are mangled C++ names declared here as extern "C" identifiers, which the
// language reserves (leading underscore and capital).
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wreserved-identifier"
#endif

// One argument per 16-byte slot, as AITER's metadata declares them: the value first, then
// padding parameters named pad<n> (which our metadata check skips).
#define JA_F4_PTR_SLOT(type, name, n) type name, [[maybe_unused]] uint64_t pad##n
#define JA_F4_U32_SLOT(type, name, a, b, c)                                      \
  type name, [[maybe_unused]] uint32_t pad##a, [[maybe_unused]] uint32_t pad##b, \
      [[maybe_unused]] uint32_t pad##c
// The 368 bytes every row declares.
#define JA_F4GEMM_PARAMS                                                                      \
  JA_F4_PTR_SLOT(void*, D, 0), JA_F4_PTR_SLOT(const void*, C, 1),                             \
      JA_F4_PTR_SLOT(const void*, A, 2), JA_F4_PTR_SLOT(const void*, B, 3),                   \
      JA_F4_U32_SLOT(float, alpha, 4, 5, 6), JA_F4_U32_SLOT(float, beta, 7, 8, 9),            \
      JA_F4_U32_SLOT([[maybe_unused]] uint32_t, strideD0, 10, 11, 12),                        \
      JA_F4_U32_SLOT([[maybe_unused]] uint32_t, strideD1, 13, 14, 15),                        \
      JA_F4_U32_SLOT(uint32_t, strideC0, 16, 17, 18),                                         \
      JA_F4_U32_SLOT([[maybe_unused]] uint32_t, strideC1, 19, 20, 21),                        \
      JA_F4_U32_SLOT(uint32_t, strideA0, 22, 23, 24),                                         \
      JA_F4_U32_SLOT([[maybe_unused]] uint32_t, strideA1, 25, 26, 27),                        \
      JA_F4_U32_SLOT([[maybe_unused]] uint32_t, strideB0, 28, 29, 30),                        \
      JA_F4_U32_SLOT([[maybe_unused]] uint32_t, strideB1, 31, 32, 33),                        \
      JA_F4_U32_SLOT(uint32_t, Mdim, 34, 35, 36), JA_F4_U32_SLOT(uint32_t, Ndim, 37, 38, 39), \
      JA_F4_U32_SLOT(uint32_t, Kdim, 40, 41, 42), JA_F4_PTR_SLOT(const void*, ScaleA, 43),    \
      JA_F4_PTR_SLOT(const void*, ScaleB, 44),                                                \
      JA_F4_U32_SLOT(uint32_t, strideScaleA0, 45, 46, 47),                                    \
      JA_F4_U32_SLOT([[maybe_unused]] uint32_t, strideScaleA1, 48, 49, 50),                   \
      JA_F4_U32_SLOT(uint32_t, strideScaleB0, 51, 52, 53),                                    \
      JA_F4_U32_SLOT([[maybe_unused]] uint32_t, strideScaleB1, 54, 55, 56)

#define JA_F4GEMM_CALL(tm, tn, shuffled, log2)                                                   \
  ja::wait_for_prior_grids();                                                                    \
  ja::allow_dependent_grids();                                                                   \
  ja::twin_f4::f4gemm<tm, tn, shuffled>(D, C, A, B, alpha, beta, strideC0, strideA0, Mdim, Ndim, \
                                        Kdim, ScaleA, ScaleB, strideScaleA0, strideScaleB0, log2)

// The BpreShuffle rows: log2_k_split at 368, then 12 pad bytes to 384.
#define JA_F4GEMM_TWIN_384(symbol, tm, tn, sk)                                   \
  JA_KERNEL_BOUNDED(256)                                                         \
  void symbol(JA_F4GEMM_PARAMS, JA_F4_U32_SLOT(int, log2_k_split, 57, 58, 59)) { \
    JA_F4GEMM_CALL(tm, tn, true, (sk) ? log2_k_split : 0);                       \
  }
// noBpreShuffle_256x256: 368 bytes, no log2_k_split.
#define JA_F4GEMM_TWIN_368(symbol, tm, tn, sk) \
  JA_KERNEL_BOUNDED(256)                       \
  void symbol(JA_F4GEMM_PARAMS) { JA_F4GEMM_CALL(tm, tn, false, 0); }
#define JA_F4GEMM_TWIN_SELECT(bytes) JA_F4GEMM_TWIN_##bytes
#define JA_F4GEMM_TWIN(symbol, co, tm, tn, sk, bpre, kernarg, g942, g950) \
  JA_F4GEMM_TWIN_SELECT(kernarg)(symbol, tm, tn, sk)

static_assert(jax_aiter::kernels::aiter_f4gemm::kBlockThreads == 256);
JAX_AITER_F4GEMM_ROWS(JA_F4GEMM_TWIN)
