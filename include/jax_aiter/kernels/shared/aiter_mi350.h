// AITER's MI350 FP8 block-scale GEMM kernels (gfx950 only), one row each (origin:
// github.com/ROCm/aiter at e4048607a535, hsa/gfx950/f8_block_scale_mi350_x{32,64,96,128}.co, MIT
// licence, (c) AMD; no CSV: the launcher csrc/py_itfs_cu/asm_mi350_a8w8_blockscale.cu was deleted
// in 06de6e9aee and is read from 06de6e9aee^). The rows are aiter_mi350.csv,
// the one source of the host tables (kernels/aiter/mi350.hpp), the ABI twins' source
// (kernels_co/aiter_mi350.twin.cpp), the CMake function that embeds AITER's code objects and the
// twins' metadata check (cmake/JaxAiterRows.cmake): the X-macro JAX_AITER_MI350_ROWS of the
// generated aiter_mi350.rows.h.
//
// X(symbol, code_object, tile_m, on_gfx942, on_gfx950)
//   symbol     the kernel's plain C name (AITER's launcher: AiterAsmKernel("f8_block_scale_mi350_
//              x128", ...)); the code objects sit directly under hsa/gfx950/
//   tile_m     rows of out a workgroup computes; every row computes 2 x 128 = 256 columns
// Order: ascending tile_m. AITER's launcher only ever launched x32 (M <= 32) and x128; x64 and x96
// ship in hsa/gfx950/ and are reachable by name (kernel=...).
#pragma once

#include "jax_aiter/kernels/shared/aiter_mi350.rows.h"

#include "jax_aiter/kernels/shared/aiter_i8gemm.h"

#if defined(__CUDACC__)
#define JAX_AITER_MI350_FN __host__ __device__ constexpr
#else
#define JAX_AITER_MI350_FN constexpr
#endif

namespace jax_aiter::kernels::aiter_mi350 {
inline constexpr int kBlockThreads = 256;  // 4 waves of 64
inline constexpr int kTileN = 256;         // columns a workgroup covers (AITER: TileN * 2)
inline constexpr int kScaleBlock = 128;    // the scales' block along N and K (and the N, K gate)
inline constexpr int kMinM = 16;           // AITER's checks: M >= 16, K >= 512
inline constexpr int kMinK = 512;

// The weight is pre-shuffled in AITER's shuffle_weight(w, layout=(16, 16)) layout, byte for byte
// the INT8 GEMM's (AITER's op test feeds these kernels shuffle_weight(weight, layout=(16, 16))):
// kernels/shared/aiter_i8gemm.h, shuffled_offset().
inline constexpr const char* kShuffleName = "16x16";

// The scales, f32, as the kernels read them (AITER's op_tests/test_gemm_a8w8_blockscale_mi350.py
// at 419d952c0c, the only caller that checked values; the launcher's comment and ROCm/jax-aiter
// say w_scale [K/128, N/128], which that test does not pass):
//   x_scale [K/128, M]: one per (128-column block kb of K, row m), kb-major, at kb * M + m;
//   w_scale [N/128, K/128]: one per (128-row block nb of N, kb), nb-major, at nb * (K/128) + kb.
JAX_AITER_MI350_FN long long x_scale_index(long long kb, long long m, long long M) {
  return kb * M + m;
}
JAX_AITER_MI350_FN long long w_scale_index(long long nb, long long kb, long long K) {
  return nb * (K / kScaleBlock) + kb;
}
}  // namespace jax_aiter::kernels::aiter_mi350
