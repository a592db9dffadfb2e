// Facts of our portable INT8 GEMM kernels (kernels_co/gemm_i8.kernel.cpp, code object "gemm_i8")
// that the kernel source and the host (kernels/gemm_i8.hpp, ops/gemm_i8_portable.hpp) both read.
// Plain C++ with no includes: nvcc and clang-22 (-nogpuinc) compile it into the kernels as well.
//
//   out[M,N] bf16 = (a[M,K] i8 . b[N,K]^T i8) * a_scale[m] * b_scale[n] (+ bias[n]),
//   exact int32 accumulation; b in AITER's shuffled (16, 16) layout (kernels/shared/
//   aiter_i8gemm.h); a_scale, b_scale, bias f32.
#pragma once

// The block tiles built, X(name, BM, BN, BK, THREADS): BK in bytes of K a step (the kernels need
// K % 32 == 0; a last step of 32 is zero-padded). Grid (ceil(N/BN), ceil(M/BM)), block THREADS.
// Each tile is built twice: jax_aiter_gemm_i8_<name> stores bf16 out;
// jax_aiter_gemm_i8_split_<name> (grid z = the K split) adds its exact int32 partial sums into an
// int32 [M, N] accumulator, and jax_aiter_gemm_i8_finish (block kGemmI8FinishThreads) scales that
// into out. Tensor cores: mma.sync m16n8k32 s8 on sm_90, v_mfma_i32_16x16x32_i8 on gfx942/gfx950.
#define JAX_AITER_GEMM_I8_TILES(X) \
  X(t128x128, 128, 128, 64, 256)   \
  X(t64x128, 64, 128, 64, 256)     \
  X(t32x128, 32, 128, 64, 256)     \
  X(t16x128, 16, 128, 64, 256)

#define JAX_AITER_GEMM_I8_FINISH_THREADS 256
