// Facts of our portable FP4 GEMM kernels (kernels_co/gemm_fp4.kernel.cpp, code object "gemm_fp4")
// that the kernel source and the host (kernels/gemm_fp4.hpp, ops/gemm_fp4_portable.hpp) both read.
// Plain C++ with no includes: nvcc and clang-22 (-nogpuinc) compile it into the kernels as well.
//
//   out[M,N] bf16 = sum over 32-blocks kb of sa[m][kb] sb[n][kb] (sum_{k in kb} a[m][k] b[n][k]),
//   a, b fp4 e2m1 packed two a byte (low nibble first), sa, sb e8m0 in AITER's e8m0_shuffle
//   layout, b shuffled (16, 16) or plain (kernels/shared/aiter_f4gemm.h). FP4 is dequantised in
//   the kernel and multiplied with plain float FMAs on every arch.
#pragma once

// The block tiles built, X(name, BM, BN, THREADS). Grid (ceil(N/BN), ceil(M/BM)), block THREADS;
// no K split.
#define JAX_AITER_GEMM_FP4_TILES(X) \
  X(t64x64, 64, 64, 256)            \
  X(t16x64, 16, 64, 256)
