// Facts of our portable grouped-GEMM kernels (kernels_co/grouped_gemm.kernel.cpp, code object
// "grouped_gemm") that the kernel source and the host (kernels/grouped_gemm.hpp,
// ops/grouped_gemm*.hpp, host_twins/grouped_gemm.hpp) both read. Plain C++ with no includes: nvcc
// (C++17) and clang-22 (-nogpuinc) compile it into the kernels as well.
//
//   forward  out[m, :] = x[m, :] . w[g]^T     x [M, K], w [G, N, K], out [M, N]
//   dgrad    out[m, :] = x[m, :] . w[g]       x [M, N], w [G, N, K] (read as [G, K, N]), out [M, K]
//   wgrad    dw[g] = dy_g^T . x_g             dy [M, N], x [M, K], dw [G, N, K]
// with g the group of row m: group g owns the next group_sizes[g] rows, rows past the groups are
// zeros (forward, dgrad) or read by no group (wgrad).
#pragma once

// The layout functions run in host code, the kernels and the host twins: nvcc needs them marked
// for both sides (clang in HIP mode treats constexpr functions as both already).
#if defined(__CUDACC__)
#define JAX_AITER_GROUPED_FN __host__ __device__ constexpr
#else
#define JAX_AITER_GROUPED_FN constexpr
#endif

namespace jax_aiter::kernels::grouped_gemm {

// The schedule the pre-kernel writes into the workspace from group_sizes (device data no handler
// reads), as int32 words:
//   [0]                    live row tiles (blocks of the main kernel past them exit)
//   [1]                    rows the groups cover (the sum of the clamped sizes)
//   offsets  [G + 2]       first row of group g; offsets[G] = rows covered, offsets[G + 1] = M
//   tile_starts [G + 2]    first row tile of group g; part G is the zero tail [rows covered, M);
//                          tile_starts[G + 1] = live row tiles
//   tiles [capacity][4]    per live row tile: {group (G: the zero tail), first row, rows, 0}
// Sizes are clamped as they are summed: a negative size counts as 0, and a group that would run
// past M keeps only the rows below M (so the groups and the tail always cover [0, M) exactly).
// Cut into row tiles of BM, the G groups and the tail (G + 1 parts summing to M) need at most
// ceil(M / BM) + G tiles: that is the capacity.
inline constexpr int kScheduleHeader = 4;
JAX_AITER_GROUPED_FN long long offsets_at() { return kScheduleHeader; }
JAX_AITER_GROUPED_FN long long tile_starts_at(long long groups) {
  return kScheduleHeader + groups + 2;
}
JAX_AITER_GROUPED_FN long long tiles_at(long long groups) {
  return (kScheduleHeader + 2 * (groups + 2) + 3) / 4 * 4;  // 16-byte aligned entries
}
JAX_AITER_GROUPED_FN long long schedule_words(long long groups, long long capacity) {
  return tiles_at(groups) + 4 * capacity;
}
JAX_AITER_GROUPED_FN long long tile_capacity(long long m, long long groups, long long bm) {
  return (m + bm - 1) / bm + groups;
}

// The pre-kernel: one block of kScheduleThreads threads (a scan over the groups, kScheduleThreads
// at a time, then the tile list).
inline constexpr int kScheduleThreads = 256;

// Output element types, as the kernels' out_dtype argument (gemm::OutType's values).
enum OutType : int { kOutBF16 = 0, kOutF16 = 1, kOutF32 = 2 };

// The fp8 forward's block scales: 128 x 128 blocks of w, 1 x 128 blocks of x.
inline constexpr int kScaleBlock = 128;

}  // namespace jax_aiter::kernels::grouped_gemm

// The row tiles of the forward and dgrad kernels, X(name, BM, BN, THREADS), largest BM first.
// Each builds, for bf16 and f16 inputs, with 16-byte loads (aligned) and element-wise ones (any):
//   fwd    GemmTile of the GEMM op (jax_aiter_gemm_tile.hpp: cp.async stages on sm_90), BK 32
//   dgrad  the register-staged tile (jax_aiter_grouped_gemm_tile.hpp), w's K-contiguous rows
//          transposed into the shared tile as they are stored, BK 32
//   fp8    the same staged tile over e4m3 bytes (BK 64 bytes: two k-tiles a scale block), fp8
//          mma.sync / MFMA, the scales folded in every 128 of K; aligned only
// Grid (ceil(cols / BN), capacity): blockIdx.y is the row tile of the schedule.
#define JAX_AITER_GROUPED_GEMM_TILES(X) \
  X(t128x128, 128, 128, 256)            \
  X(t64x128, 64, 128, 256)              \
  X(t16x128, 16, 128, 256)

// The tiles of the wgrad kernel, X(name, BM, BN, THREADS): BM rows of dw (N), BN columns (K), the
// group's rows as the reduction, both operands transposed into the shared tile. Grid
// (ceil(K / BN), ceil(N / BM), G).
#define JAX_AITER_GROUPED_WGRAD_TILES(X) X(t128x128, 128, 128, 256)
