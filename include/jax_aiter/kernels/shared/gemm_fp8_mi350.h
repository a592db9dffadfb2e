// Facts of our portable MI350-FP8 block-scale GEMM kernels (kernels_co/gemm_fp8_mi350.kernel.cpp,
// code object "gemm_fp8_mi350") that the kernel source and the host (kernels/gemm_fp8_mi350.hpp,
// ops/gemm_fp8_mi350_portable.hpp) both read. Plain C++ with no includes.
//
//   out[M,N] bf16 = sum over 128-column K blocks kb of
//                   x_scale[kb][m] * w_scale[n / 128][kb] * (xq[m, kb] . wq[n, kb]),
//   each block's dot product summed in float32 on the fp8 tensor cores, the scaled blocks summed
//   in float32, rounded to bf16 once; wq in AITER's shuffled (16, 16) layout
//   (kernels/shared/aiter_i8gemm.h), the scales as kernels/shared/aiter_mi350.h lays them out.
#pragma once

// The block tiles built, X(name, BM, BN, BK, THREADS): BK bytes of K a step (two steps a 128-wide
// scale block). BN = 128: a tile's columns share one w_scale block. Grid (N / BN, ceil(M / BM)),
// block THREADS. Tensor cores: mma.sync m16n8k32 e4m3 on sm_90, v_mfma_f32_16x16x32_fp8_fp8 on
// gfx942/gfx950.
#define JAX_AITER_GEMM_FP8_MI350_TILES(X) \
  X(t128x128, 128, 128, 64, 256)          \
  X(t64x128, 64, 128, 64, 256)            \
  X(t32x128, 32, 128, 64, 256)            \
  X(t16x128, 16, 128, 64, 256)
