// Facts of our portable FP8 block-scale GEMM kernels (kernels_co/gemm_fp8bs.kernel.cpp, code
// object "gemm_fp8bs") that the kernel source and the host (kernels/gemm_fp8bs.hpp,
// ops/gemm_fp8bs_portable.hpp) both read. Plain C++ with no includes: nvcc and clang-22
// (-nogpuinc) compile it into the kernels as well.
//
//   out[M,N] bf16 = sum over K blocks kb of (a[:, kb] . b[:, kb]^T) * a_scale[kb][m] *
//                   b_scale[n / 128][kb], f32 partial sums per 128-wide block of K;
//   a, b fp8 e4m3 (the hardware's variant); b in AITER's shuffled (16, 16) layout; a_scale f32
//   K-block-major [K/128, M] (AITER's), b_scale f32 [N/128, K/128].
#pragma once

// The block tiles built, X(name, BM, BN, BK, THREADS): BK bytes of K a step (two steps a scale
// block). BN is 128, so a block's columns share one b_scale row. Grid (N/BN, ceil(M/BM)).
// Tensor cores: mma.sync m16n8k32 e4m3 on sm_90, v_mfma_f32_16x16x32_fp8_fp8 on gfx942/gfx950.
#define JAX_AITER_GEMM_FP8BS_TILES(X) \
  X(t128x128, 128, 128, 64, 256)      \
  X(t64x128, 64, 128, 64, 256)        \
  X(t32x128, 32, 128, 64, 256)        \
  X(t16x128, 16, 128, 64, 256)
