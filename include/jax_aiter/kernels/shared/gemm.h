// Facts of our portable GEMM kernels (kernels_co/gemm.kernel.cpp, code object "gemm") that the
// kernel source and the host (kernels/gemm.hpp, ops/gemm.hpp) both read. Plain C++ with no
// includes: nvcc and clang-22 (-nogpuinc) compile it into the kernels as well.
//
//   out[M,N] = a[M,K] . b[N,K]^T (+ bias[N]), fp32 accumulation; a, b bf16 or f16 (one dtype),
//   out bf16, f16 or f32; bias in a's dtype.
#pragma once

namespace jax_aiter::kernels::gemm {

// Output (and bias) element types, as the kernels' out_dtype argument.
enum OutType : int { kOutBF16 = 0, kOutF16 = 1, kOutF32 = 2 };

// The K-split reduction kernel: one thread per 4 outputs, blocks of kReduceThreads.
inline constexpr int kReduceThreads = 256;
inline constexpr int kReduceVec = 4;

// The wgmma tile (sm_90, kernels_co/include/jax_aiter_gemm_wgmma.hpp): stages of its shared-memory
// ring and the dynamic shared memory its launches give (the stages of (128 + 256) rows x 128
// bytes, their 2 x kWgmmaStages mbarriers, 1024 bytes to align the swizzle atoms). Every launch of
// a w tile's kernels passes it (the `any` kernels use the first 48 KiB), the kernels check it.
inline constexpr int kWgmmaStages = 4;
inline constexpr int kWgmmaSmemBytes =
    kWgmmaStages * (128 + 256) * 128 + 2 * kWgmmaStages * 8 + 1024;

}  // namespace jax_aiter::kernels::gemm

// The block tiles built, X(name, BM, BN, BK, THREADS): for each, kernels for bf16 and f16 inputs,
// with 16-byte aligned loads (K % 8 == 0 and aligned operands) and element-wise ones.
// Names: a t or s (the block algorithm, below), BMxBN, and a suffix when two tiles share BMxBN.
//   grid (ceil(N/BN), ceil(M/BM), split), block (THREADS, 1, 1); the kernel's split index is
//   blockIdx.z: it covers K range [z * k_chunk, min(K, (z + 1) * k_chunk)).
// Every tile fits 48 KiB of static shared memory (launches pass no dynamic shared memory): on
// sm_90 that is 3 cp.async stages of t128x128 and 4 of the others; on AMD two LDS buffers.
// The t tiles (GemmTile: cp.async stages in shared memory, ldmatrix + mma.sync; MFMA on AMD):
//   t128x128   big GEMMs: 8 warps of 64x32 (4 waves of 64x64 on AMD), two blocks a multiprocessor
//   t128x256   big GEMMs: 8 warps of 64x64, one block a multiprocessor; 3/4 of the L2 traffic
//              per flop of t128x128 (BK 16 keeps 4 stages in 48 KiB)
//   t64x128, t32x128  medium M
//   t16x128    decode (M <= 16): streams B; several blocks a multiprocessor and split-K keep
//              enough bytes in flight
//   t128x128w4 big GEMMs: 4 warps of 64x64 (2/3 the ldmatrix per mma of t128x128)
// The s tiles (decode, M <= 16; kernels_co/include/jax_aiter_gemm_stream.hpp): B goes from global
// memory straight into mma operand registers, BN / 16 warps along N times the rest along K; one
// step of the block reads BK contiguous elements of each of its BN rows. Their `any` kernels,
// and all of them on AMD, run a GemmTile of BM x max(BN, 64), BK 32.
// The w tile (sm_90 only; the plan takes it there for M >= 128, K % 8 == 0): wgmma + a 4-stage
// cp.async/mbarrier ring, one producer and two consumer warpgroups (384 threads), kWgmmaSmemBytes
// of dynamic shared memory; its `any` kernels, and all of them on AMD, run t128x128's GemmTile on
// each half of the tile on threads 0-255 (the others exit; exited threads release a barrier on
// both vendors).
#define JAX_AITER_GEMM_TILES(X)    \
  X(t128x128w4, 128, 128, 32, 128) \
  X(t128x128, 128, 128, 32, 256)   \
  X(t128x256, 128, 256, 16, 256)   \
  X(t64x128, 64, 128, 32, 256)     \
  X(t32x128, 32, 128, 32, 256)     \
  X(t16x128, 16, 128, 32, 256)     \
  X(s16x16, 16, 16, 1024, 256)     \
  X(s16x32, 16, 32, 512, 256)      \
  X(s16x64, 16, 64, 256, 256)      \
  X(w128x256, 128, 256, 64, 384)
