// Facts of the weight-streaming decode kernels of the quantized GEMMs (M <= 16 on sm_90:
// jax_aiter_gemm_fp8_blockscale_stream, jax_aiter_gemm_i8_stream, jax_aiter_gemm_fp4_stream and
// the last two's _stream_finish kernels (FP8 block-scale's splits end in its w tile's finish); the
// block algorithm is kernels_co/include/jax_aiter_gemm_stream_q.hpp) that the kernel sources and
// the host (kernels/gemm_*.hpp, ops/gemm_stream_q_rule.hpp) both read. Plain C++ with no includes:
// nvcc and clang-22 (-nogpuinc) compile it into the kernels.
//
// Every family's weight is in AITER's shuffled (16, 16) byte layout: 16 rows of the weight are
// 16 * Kb contiguous bytes (Kb: bytes of a row), in 256-byte units of 16 rows x 16 bytes of K. A
// block owns one such 16-row group and the K range of its split (grid z): its kWarpsK warps take
// the range's steps of kStepBytes bytes of a row (FP4: half) in turn (warp w steps w, w +
// kWarpsK, ...), each reading its step's 16 rows once, straight into registers, one step ahead. The
// warps' sums are added in warp order in shared memory; with several splits each writes a plane
// of 32-bit partials [split][M][N] to the workspace and a finish kernel adds the planes in split
// order (fixed order everywhere: the same bits every run). Grid (N / 16, 1, splits), block
// kThreads; the finish kernel one element a thread, block kFinishThreads.
#pragma once

namespace jax_aiter::kernels::gemm_stream_q {
inline constexpr int kRows = 16;  // weight rows a block: one (16, 16) shuffle group
inline constexpr int kWarpsK = 8;
inline constexpr int kThreads = 32 * kWarpsK;
inline constexpr int kStepBytes = 256;  // bytes of one weight row a warp step reads; splits are
                                        // whole steps
inline constexpr int kMaxM = 16;        // rows of A (the activations) a call may have
inline constexpr int kMaxSplits = 8;    // planes of partials the workspace holds at most
inline constexpr int kFinishThreads = 256;
}  // namespace jax_aiter::kernels::gemm_stream_q
