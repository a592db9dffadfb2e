// ABI twin of AITER's FlatMM fp8 block-scale kernel (hsa/gfx942/flatmm_uk_gfx9_f16f8_128x256x128_
// 1x4x1_16x16x32.co): one kernel per row of JAX_AITER_FLATMM_ROWS (include/jax_aiter/kernels/
// shared/aiter_flatmm.h), named by the row's (plain C) symbol and declaring AITER's kernel
// arguments as AITER's code object does (names, offsets, sizes, 112-byte kernarg segment:
// /work/shared/aiter-facts/kernel-arguments.txt; tests/cpp/data/check_twin_kernargs.py compares
// them). It honours AITER's launch contract with our own fp8 tile (jax_aiter_gemm_fp8bs_tile.hpp),
// so an ASM-tier plan runs unchanged with the twin in place of AITER's code object: on AMD without
// an AITER checkout, and on sm_90.
//
// Contract (AITER at e4048607a535, csrc/py_itfs_cu/asm_flatmm_a8w8_blockscale.cu; restated in our
// aiter-facts ABI-AND-RULES.md section 4.5), as the twin honours it:
//   block 256 threads; grid (ceil(N / 256), ceil(M / 128)), N = intermediate_size, M =
//   num_tokens, K = hidden_size (N % 256 == 0, K % 128 == 0). Block (x, y) writes rows
//   [128 y, +128) (clipped to M) and columns [256 x, +256) of d_f16_ptr (f16 [M, N]):
//   sum over K blocks b of sa_ptr[b][m] (f32 [K/128, M]) * sb_ptr[b][n / 128] (f32
//   [K/128, N/128]) * (a_ptr[m, block b] . b_ptr[n, block b]); a_ptr e4m3 [M, K] rows K bytes
//   apart, b_ptr e4m3 [N, K] in the FlatMM layout (e4m3fnuz: the kernel is gfx942 code, and its
//   sm_90 build converts it in registers). c_ptr, d_ptr, the dbg pointers, num_experts,
//   topk and stride_token are not read.
// Beyond the contract: the 256 columns run as two 128-column halves, one after the other; N not a
// multiple of 256 (which AITER never launches) clips the last column block.
//
// Build: as gemm.kernel.cpp (nvcc -cubin -arch=sm_90 ...; clang++-22 -x hip ... with
// -fhip-kernel-arg-name for the argument names).
#include "jax_aiter/kernels/shared/aiter_flatmm.h"
#include "jax_aiter_gemm_fp8bs_tile.hpp"

namespace ja::twin_flatmm {

namespace abi = jax_aiter::kernels::aiter_flatmm;
inline constexpr int kHalfN = 128, kBK = 64;

template <int TM, int TN>
JA_DEVICE void flatmm(const void* A, const void* B, const void* SA, const void* SB, void* D,
                      int m_dim, int n_dim, int k_dim) {
  using T = GemmFp8BsTile<TM, kHalfN, kBK, abi::kBlockThreads, /*kFnuz=*/true>;
  JA_SHARED Pack<uint16_t, 8> smem[T::kSmemElems / 8];
  const int M = m_dim, N = n_dim, K = k_dim;
  const int m0 = block_id_y() * TM;
  if (m0 >= M) return;
  const int rows = M - m0 < TM ? M - m0 : TM;
  const int scale_n = N / abi::kScaleBlock;
  for (int h = 0; h < TN / kHalfN; ++h) {
    const int n0 = block_id() * TN + h * kHalfN;
    if (n0 >= N) break;
    const int cols = N - n0 < kHalfN ? N - n0 : kHalfN;
    const float* xs = static_cast<const float*>(SA) + m0;                     // [K/128, M]
    const float* ws = static_cast<const float*>(SB) + n0 / abi::kScaleBlock;  // [K/128, N/128]
    T t;
    t.run(
        reinterpret_cast<uint16_t*>(smem),
        static_cast<const unsigned char*>(A) + static_cast<int64_t>(m0) * K, K, rows,
        static_cast<const unsigned char*>(B), K, n0, cols, 0, K,
        [&](int kb) { return xs + static_cast<int64_t>(kb) * M; },
        [&](int kb) { return ws[static_cast<int64_t>(kb) * scale_n]; });
    uint16_t* o = static_cast<uint16_t*>(D) + static_cast<int64_t>(m0) * N + n0;
    for_each_valid_f32(t, rows, cols, [&](int r, int c, float v) {
      o[static_cast<int64_t>(r) * N + c] = F16::store(v);
    });
  }
}

}  // namespace ja::twin_flatmm

// The 112 bytes AITER's code object declares, dense: eleven pointers, then six 32-bit ints.
#define JA_FLATMM_TWIN(symbol, co, tm, tn, tk, kernarg, g942, g950)                        \
  static_assert(kernarg == 112 && tk == 128);                                              \
  JA_KERNEL_BOUNDED(256)                                                                   \
  void symbol(const void* a_ptr, const void* b_ptr, [[maybe_unused]] const void* c_ptr,    \
              const void* sa_ptr, const void* sb_ptr, [[maybe_unused]] void* d_ptr,        \
              void* d_f16_ptr, [[maybe_unused]] void* dbg_int_ptr,                         \
              [[maybe_unused]] void* dbg_fp8_ptr, [[maybe_unused]] void* dbg_f16_ptr,      \
              [[maybe_unused]] void* dbg_fp32_ptr, int hidden_size, int intermediate_size, \
              int num_tokens, [[maybe_unused]] int num_experts, [[maybe_unused]] int topk, \
              [[maybe_unused]] int stride_token) {                                         \
    ja::wait_for_prior_grids();                                                            \
    ja::allow_dependent_grids();                                                           \
    ja::twin_flatmm::flatmm<tm, tn>(a_ptr, b_ptr, sa_ptr, sb_ptr, d_f16_ptr, num_tokens,   \
                                    intermediate_size, hidden_size);                       \
  }

static_assert(jax_aiter::kernels::aiter_flatmm::kBlockThreads == 256);
JAX_AITER_FLATMM_ROWS(JA_FLATMM_TWIN)
