// AITER's FlatMM fp8 block-scale GEMM (gfx942 only), one row (origin: github.com/ROCm/aiter at
// e4048607a535, csrc/py_itfs_cu/asm_flatmm_a8w8_blockscale.cu and the code object
// hsa/gfx942/flatmm_uk_gfx9_f16f8_128x256x128_1x4x1_16x16x32.co, whose metadata names the
// arguments; MIT licence, (c) AMD; AITER ships no CSV for this family). The row is
// aiter_flatmm.csv, the one source of the host table (kernels/aiter/flatmm.hpp), the ABI twin's
// kernel source (kernels_co/aiter_flatmm.twin.cpp), the CMake function that embeds AITER's code
// object and the twin's metadata check (cmake/JaxAiterRows.cmake): the X-macro
// JAX_AITER_FLATMM_ROWS of the generated aiter_flatmm.rows.h.
//
// X(symbol, code_object, tile_m, tile_n, tile_k, kernarg_bytes, on_gfx942, on_gfx950)
//   symbol         a plain C name (not mangled), as AITER launches it
//   code_object    the path under hsa/<arch>/ (directly there, no family folder)
//   kernarg_bytes  the kernarg segment the code object declares: 112, AITER's dense struct
#pragma once

#include "jax_aiter/kernels/shared/aiter_flatmm.rows.h"

#if defined(__CUDACC__)
#define JAX_AITER_FLATMM_FN __host__ __device__ constexpr
#else
#define JAX_AITER_FLATMM_FN constexpr
#endif

namespace jax_aiter::kernels::aiter_flatmm {
inline constexpr int kBlockThreads = 256;  // 4 waves of 64 ("1x4x1")
inline constexpr int kTileM = 128, kTileN = 256, kTileK = 128;
inline constexpr int kScaleBlock = 128;  // x_scale per (128 columns of K, row); w_scale per 128x128

// The FlatMM weight layout: AITER's op test for this kernel (op_tests/test_gemm_a8w8_blockscale.py,
// test_gemm_asm, added with the kernel in f2b083382c and present until b42ea71e30) builds it as
//   weight.view(N/16, 16, K/64, 4, 16).permute(0, 2, 3, 1, 4).contiguous().view(N, -1)
// (the launcher's comment calls the result [N/128, K*128]: the same bytes). Every 16 rows of w
// become K/16 planes of 256 bytes, plane p holding w[n0 .. n0+15][16 p .. 16 p + 15], row after
// row. (For 1-byte elements this is also shuffle_weight(w, layout=(16, 16)): [N/16, K/32, 2, 16,
// 16] is the same order.) Needs N % 16 == 0 and K % 64 == 0.
inline constexpr int kLayoutN = 16;  // rows of a block
inline constexpr int kLayoutK = 64;  // K multiple the view needs
inline constexpr const char* kLayoutName = "flatmm";

// Byte offset of w[n][k] in the FlatMM buffer of a [N, K] fp8 weight.
JAX_AITER_FLATMM_FN long long flat_offset(long long n, long long k, long long K) {
  return ((n / 16) * (K / 16) + k / 16) * 256 + (n % 16) * 16 + k % 16;
}
// The 16-byte chunk w[n][16 c .. 16 c + 15] (contiguous in the buffer).
JAX_AITER_FLATMM_FN long long flat_chunk(long long n, long long c, long long K) {
  return flat_offset(n, 16 * c, K);
}
}  // namespace jax_aiter::kernels::aiter_flatmm
