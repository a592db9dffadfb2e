// Facts of our portable FP8 block-scale GEMM kernels (kernels_co/gemm_fp8_blockscale.kernel.cpp,
// code object "gemm_fp8_blockscale") that the kernel source and the host
// (kernels/gemm_fp8_blockscale.hpp, ops/gemm_fp8_blockscale_portable.hpp) both read. Plain C++
// with no includes: nvcc and clang-22 (-nogpuinc) compile it into the kernels as well.
//
//   out[M,N] = sum over 128-wide K blocks kb of a_scale[kb][m] * b_scale[n / 128][kb]
//              * (a[m, kb] . b[n, kb]),
//   a, b fp8 e4m3 (the hardware's variant); b in AITER's shuffled (16, 16) layout (the FlatMM
//   layout's bytes); a_scale f32 [K/128, M] (K-block-major), b_scale f32 [ceil(N/128), K/128];
//   each block's partial sums in f32, scaled and added in f32, rounded once to bf16 or f16.
#pragma once

// The block tiles built, X(name, BM, BN, BK, THREADS): BK bytes of K a step (two steps a scale
// block). BN is 128, so a block's columns share one b_scale row; the last column block may be
// partial (N % 16 == 0). Grid (ceil(N/BN), ceil(M/BM)). Tensor cores: mma.sync m16n8k32 e4m3 on
// sm_90, v_mfma_f32_16x16x32_fp8_fp8 on gfx942/gfx950.
#define JAX_AITER_GEMM_FP8_BLOCKSCALE_MMA_TILES(X) \
  X(t128x128, 128, 128, 64, 256)                   \
  X(t64x128, 64, 128, 64, 256)                     \
  X(t32x128, 32, 128, 64, 256)                     \
  X(t16x128, 16, 128, 64, 256)
// The wgmma tile (sm_90 only; the plan takes it there for M >= 128): the GEMM engine of
// kernels_co/include/jax_aiter_gemm_wgmma.hpp with its FP8 block-scale family
// (jax_aiter_gemm_wgmma_fp8bs.hpp: wgmma m64n128k32 e4m3, each 128-wide K block into a fresh f32
// partial, then scaled into the f32 totals), one producer and two consumer warpgroups,
// kWgmmaSmemBytes of dynamic shared memory, tiles placed in groups of 8 rows of tiles (L2). A
// tile's 256 columns are two b_scale blocks. Built twice: jax_aiter_gemm_fp8_blockscale_<name>
// (GemmFp8BlockscaleArgs) rounds into out; jax_aiter_gemm_fp8_blockscale_split_<name>
// (GemmFp8BlockscaleSplitArgs, grid z = the K split) stores split z's f32 sums into its own
// [M, N] slice of a workspace, and jax_aiter_gemm_fp8_blockscale_finish adds the slices in split
// order and rounds once (deterministic). On gfx942/gfx950 the three symbols exist for the shared
// table and trap: no plan for a gfx arch takes them.
#define JAX_AITER_GEMM_FP8_BLOCKSCALE_WGMMA_TILES(X) X(w128x256, 128, 256, 128, 384)
#define JAX_AITER_GEMM_FP8_BLOCKSCALE_TILES(X) \
  JAX_AITER_GEMM_FP8_BLOCKSCALE_MMA_TILES(X) JAX_AITER_GEMM_FP8_BLOCKSCALE_WGMMA_TILES(X)

namespace jax_aiter::kernels::gemm_fp8_blockscale {
// The rows and columns of a scale block (a_scale: one per row of a and 128 columns of K; b_scale:
// one per 128 x 128 block of b).
inline constexpr int kScaleBlock = 128;
// The scale transpose (f32 [rows, cols] -> [cols, rows]) a plan runs before AITER's FlatMM
// kernel, which reads w_scale K-block-major: one element a thread, grid-stride over at most
// kTransposeMaxBlocks blocks.
inline constexpr int kTransposeThreads = 256;
inline constexpr int kTransposeMaxBlocks = 1024;
// The w tile's ring: stages of (128 + 256) rows x 128 bytes of K, 2 x stages mbarriers, 1024 bytes
// to align the swizzle atoms (the bf16 and INT8 w tiles' numbers: 4 stages, one block an SM).
inline constexpr int kWgmmaStages = 4;
inline constexpr int kWgmmaSmemBytes =
    kWgmmaStages * (128 + 256) * 128 + 2 * kWgmmaStages * 8 + 1024;
// The finish kernel: kFinishVec consecutive elements a thread (M * N % 16 == 0), kFinishThreads a
// block.
inline constexpr int kFinishThreads = 256;
inline constexpr int kFinishVec = 4;
}  // namespace jax_aiter::kernels::gemm_fp8_blockscale
