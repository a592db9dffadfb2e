// ABI twins of AITER's MI350 FP8 block-scale kernels (hsa/gfx950/f8_block_scale_mi350_x*.co): one
// kernel per row of JAX_AITER_MI350_ROWS (include/jax_aiter/kernels/shared/aiter_mi350.h), named
// by the row's symbol and declaring AITER's kernel arguments as AITER's code objects do (the
// MoE-style names O, X, G, ... at AITER's offsets, a 368-byte segment: /work/shared/aiter-facts/
// kernel-arguments.txt; tests/cpp/data/check_twin_kernargs.py compares them). Each honours the
// launch contract with our own fp8 tile (jax_aiter_gemm_fp8bs_tile.hpp), so an ASM-tier plan runs
// unchanged with the twin in place of AITER's code object: on AMD without an AITER checkout, and
// on sm_90.
//
// Contract (AITER as of 06de6e9aee^, csrc/py_itfs_cu/asm_mi350_a8w8_blockscale.cu; restated in
// our aiter-facts ABI-AND-RULES.md section 4.6), as the twin honours it:
//   block 256 threads; grid (ceil(N / 256), ceil(M / tile_m)). Block (x, y) stores out rows
//   [y tile_m, +tile_m) (clipped to M) and columns [256 x, +256) (clipped to N), as two
//   128-column halves, each one w_scale block.
//   X fp8 [M, K] rows Xs bytes apart; G fp8 [N, K] shuffled (16, 16) for rows of GUs (= K) bytes;
//   XQ f32 [K/128, M] (x_scale, at kb * M + m); GQ f32 [N/128, K/128] (w_scale);
//   O bf16 rows Os bytes apart. dim = K, hdim = N, batch = M. K % 128 == 0, N % 128 == 0.
//   O = bf16(sum_kb XQ[kb][m] GQ[n / 128][kb] (X[m, kb] . G[n, kb])), float32 sums.
//   eprt (1), splitk (0), activation (0) and the rest are read by AITER's code, not here.
//
// Build: as gemm.kernel.cpp (nvcc -cubin -arch=sm_90 ...; clang++-22 -x hip ... with
// -fhip-kernel-arg-name for the argument names).
#include "jax_aiter/kernels/shared/aiter_mi350.h"
#include "jax_aiter_gemm_fp8bs_tile.hpp"

namespace ja::twin_mi350 {

namespace abi = jax_aiter::kernels::aiter_mi350;
inline constexpr int kBK = 64;
inline constexpr int kHalf = abi::kScaleBlock;  // 128 columns

template <int TM>
JA_DEVICE void mi350(void* O, const void* X, const void* G, const void* XQ, const void* GQ,
                     uint32_t dim, uint32_t hdim, uint32_t batch, uint32_t xs, uint32_t gus,
                     uint32_t os) {
  using T = GemmFp8BsTile<TM, kHalf, kBK, abi::kBlockThreads>;
  JA_SHARED Pack<uint16_t, 8> smem[T::kSmemElems / 8];
  const int M = static_cast<int>(batch), N = static_cast<int>(hdim), K = static_cast<int>(dim);
  const int m0 = block_id_y() * TM;
  if (m0 >= M) return;
  const int rows = M - m0 < TM ? M - m0 : TM;
  const float* x_scale = static_cast<const float*>(XQ);
  const float* w_scale = static_cast<const float*>(GQ);
  unsigned char* out = static_cast<unsigned char*>(O) + static_cast<int64_t>(m0) * os;
  for (int half = 0; half < 2; ++half) {
    const int n0 = block_id() * abi::kTileN + half * kHalf;
    if (n0 >= N) break;  // uniform across the block
    const int cols = N - n0 < kHalf ? N - n0 : kHalf;
    const int nb = n0 / kHalf;
    T t;
    t.run(
        reinterpret_cast<uint16_t*>(smem),
        static_cast<const unsigned char*>(X) + static_cast<int64_t>(m0) * xs, xs, rows,
        static_cast<const unsigned char*>(G), gus, n0, cols, 0, K,
        [&](int kb) { return x_scale + abi::x_scale_index(kb, m0, M); },
        [&](int kb) { return w_scale[abi::w_scale_index(nb, kb, K)]; });
    for_each_valid_f32(t, rows, cols, [&](int r, int c, float v) {
      reinterpret_cast<uint16_t*>(out + static_cast<int64_t>(r) * os)[n0 + c] = BF16::store(v);
    });
  }
}

}  // namespace ja::twin_mi350

// One argument per 16-byte slot, as AITER's metadata declares them: the value first, then
// padding parameters named pad<n> (which our metadata check skips).
#define JA_MI_PTR(type, name, n) type name, [[maybe_unused]] uint64_t pad##n
#define JA_MI_U32(type, name, a, b, c)                                           \
  type name, [[maybe_unused]] uint32_t pad##a, [[maybe_unused]] uint32_t pad##b, \
      [[maybe_unused]] uint32_t pad##c
#define JA_MI350_PARAMS                                                                            \
  JA_MI_PTR(void*, O, 0), JA_MI_PTR(const void*, X, 1), JA_MI_PTR(const void*, G, 2),              \
      JA_MI_PTR([[maybe_unused]] const void*, Xc, 3), JA_MI_PTR(const void*, XQ, 4),               \
      JA_MI_PTR(const void*, GQ, 5), JA_MI_PTR([[maybe_unused]] const void*, SMQ, 6),              \
      JA_MI_PTR([[maybe_unused]] const void*, STP, 7),                                             \
      JA_MI_PTR([[maybe_unused]] const void*, SEP, 8), JA_MI_U32(uint32_t, dim, 9, 10, 11),        \
      JA_MI_U32(uint32_t, hdim, 12, 13, 14), JA_MI_U32(uint32_t, batch, 15, 16, 17),               \
      JA_MI_U32([[maybe_unused]] uint32_t, eprt, 18, 19, 20), JA_MI_U32(uint32_t, Xs, 21, 22, 23), \
      JA_MI_U32(uint32_t, GUs, 24, 25, 26), JA_MI_U32(uint32_t, Os, 27, 28, 29),                   \
      JA_MI_U32([[maybe_unused]] uint32_t, eGUs, 30, 31, 32),                                      \
      JA_MI_U32([[maybe_unused]] uint32_t, eGUQs, 33, 34, 35),                                     \
      JA_MI_U32([[maybe_unused]] uint32_t, eSMQs, 36, 37, 38),                                     \
      JA_MI_U32([[maybe_unused]] uint32_t, topk, 39, 40, 41),                                      \
      JA_MI_U32([[maybe_unused]] uint32_t, splitk, 42, 43, 44),                                    \
      JA_MI_U32([[maybe_unused]] uint32_t, activation, 45, 46, 47),                                \
      JA_MI_U32([[maybe_unused]] uint32_t, SW, 48, 49, 50)

#define JA_MI350_TWIN(symbol, co, tm, g942, g950)                              \
  JA_KERNEL_BOUNDED(256)                                                       \
  void symbol(JA_MI350_PARAMS) {                                               \
    ja::wait_for_prior_grids();                                                \
    ja::allow_dependent_grids();                                               \
    ja::twin_mi350::mi350<tm>(O, X, G, XQ, GQ, dim, hdim, batch, Xs, GUs, Os); \
  }

static_assert(jax_aiter::kernels::aiter_mi350::kBlockThreads == 256);
JAX_AITER_MI350_ROWS(JA_MI350_TWIN)
