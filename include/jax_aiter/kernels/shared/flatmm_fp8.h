// Facts of our portable FlatMM fp8 block-scale kernels (kernels_co/flatmm_fp8.kernel.cpp, code
// object "flatmm_fp8") that the kernel source and the host (kernels/flatmm_fp8.hpp,
// ops/flatmm_fp8_portable.hpp) both read. Plain C++ with no includes: nvcc and clang-22
// (-nogpuinc) compile it into the kernels as well.
//
//   out[M,N] f16 = sum over K blocks b of 128: x_scale[b][m] w_scale[b][n / 128]
//                  (sum over k in block b of xq[m][k] wq[n][k]),
//   xq, wq e4m3 (fn on sm_90 and gfx950, fnuz on gfx942), wq in the FlatMM layout
//   (kernels/shared/aiter_flatmm.h), partial sums in float32, scaled and added in float32,
//   rounded to f16 once.
#pragma once

// The block tiles built, X(name, BM, BN, BK, THREADS): BK bytes of K a step (two steps a scale
// block). Grid (ceil(N/BN), ceil(M/BM)), block THREADS. Tensor cores: mma.sync m16n8k32 e4m3 on
// sm_90, v_mfma_f32_16x16x32_fp8_fp8 on gfx942/gfx950.
#define JAX_AITER_FLATMM_FP8_TILES(X) \
  X(t128x128, 128, 128, 64, 256)      \
  X(t64x128, 64, 128, 64, 256)        \
  X(t32x128, 32, 128, 64, 256)        \
  X(t16x128, 16, 128, 64, 256)
