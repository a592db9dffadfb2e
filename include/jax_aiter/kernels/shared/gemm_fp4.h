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

// The decode (weight-streaming) kernels built, X(name, BM, U, MIN_BLOCKS) (MIN_BLOCKS: blocks kept
// resident on a multiprocessor, which caps the registers: sm_90 ptxas, no spills), smallest BM
// first. Grid (ceil(N/16), ceil(M/BM)), block kGemmFp4DecodeThreads: a block owns 16 rows of B (one
// (16, 16) shuffle group, 16 * K/2 contiguous bytes when shuffled) and out rows [y BM, +BM) over
// all of K. Thread t reads the 16-byte chunks of B row t % 16 for the 32-blocks kb = t / 16 + 16 i
// (one 16-byte load each, coalesced in the shuffled layout), U chunks a stage; A (BM rows x 16 U
// 32-blocks) is decoded into shared memory a stage at a time. Each thread sums its 32-blocks'
// scaled products in K order (K split into kGemmFp4DecodeSlices interleaved slices, slice
// t / 16); the slices are added in slice order in shared memory (deterministic, no atomics).
#define JAX_AITER_GEMM_FP4_DECODE(X) \
  X(d4, 4, 4, 2)                     \
  X(d16, 16, 1, 3)

#define JAX_AITER_GEMM_FP4_DECODE_THREADS 256
#define JAX_AITER_GEMM_FP4_DECODE_ROWS 16
#define JAX_AITER_GEMM_FP4_DECODE_SLICES 16
