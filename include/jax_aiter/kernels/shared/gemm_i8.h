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
#define JAX_AITER_GEMM_I8_MMA_TILES(X) \
  X(t128x128, 128, 128, 64, 256)       \
  X(t64x128, 64, 128, 64, 256)         \
  X(t32x128, 32, 128, 64, 256)         \
  X(t16x128, 16, 128, 64, 256)
// The wgmma tile (sm_90; the plan takes it there for M >= 128): the GEMM engine of
// kernels_co/include/jax_aiter_gemm_wgmma.hpp with its INT8 family (wgmma m64n256k32 s8, the
// shuffled weight read as it is), one producer and two consumer warpgroups, kGemmI8WgmmaSmemBytes
// of dynamic shared memory, tiles placed in groups of 8 rows of tiles (L2). On AMD, and where A's
// rows are not 16-byte aligned, it runs t128x128's tile on each half of the tile on threads 0-255.
#define JAX_AITER_GEMM_I8_WGMMA_TILES(X) X(w128x256, 128, 256, 128, 384)
#define JAX_AITER_GEMM_I8_TILES(X) JAX_AITER_GEMM_I8_MMA_TILES(X) JAX_AITER_GEMM_I8_WGMMA_TILES(X)

namespace jax_aiter::kernels::gemm_i8 {
// The w tile's ring: stages of (128 + 256) rows x 128 bytes of K, 2 x stages mbarriers, 1024 bytes
// to align the swizzle atoms (the bf16 w tile's numbers: 4 stages, one block an SM).
inline constexpr int kWgmmaStages = 4;
inline constexpr int kWgmmaSmemBytes =
    kWgmmaStages * (128 + 256) * 128 + 2 * kWgmmaStages * 8 + 1024;
}  // namespace jax_aiter::kernels::gemm_i8

#define JAX_AITER_GEMM_I8_FINISH_THREADS 256
