// The split rule of the quantized GEMMs' decode kernels (M <= 16 on sm_90: the weight-streaming
// engine of kernels/shared/gemm_stream_q.h), shared by aiter.gemm_fp8_blockscale, aiter.gemm_i8
// and aiter.gemm_fp4: one block a 16-row group of the weight, so N / 16 blocks; K is split only
// when that is fewer than one block a compute unit, into as many splits as give each one, at most
// kMaxSplits (the workspace's planes) and each at least one step a warp. The splits' partials are
// f32 (int32 for INT8) [splits, M, N] in the workspace, added in split order by the finish kernel.
// One block a compute unit, not the two that fit an SM (H200, tests/gpu/cuda_gemm_stream_q_kernels
// bench, benchmarks/gpu/NOTES.md): at N = 4096 (256 blocks) 1 split ran 0.0132 ms, 2 splits
// 0.0165 (FP8, M = 1); at N = 8192 every family ran fastest unsplit (2 to 8 splits up to 21 %
// slower).
#pragma once

#include <algorithm>
#include <cstdint>

#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/kernels/shared/gemm_stream_q.h"

namespace jax_aiter::ops {

inline constexpr int64_t kStreamQMaxM = kernels::gemm_stream_q::kMaxM;

struct StreamQSplit {
  int64_t splits = 1;
  int64_t k_chunk = 0;  // bytes of a weight row a split, a multiple of kStepBytes
};

// kbytes: bytes of a weight row (K for 1-byte weights, K / 2 for FP4).
constexpr StreamQSplit choose_stream_q_split(int64_t n, int64_t kbytes, int compute_units) {
  namespace S = kernels::gemm_stream_q;
  const int64_t blocks = ceil_div(n, int64_t{S::kRows});
  const int64_t steps = ceil_div(kbytes, int64_t{S::kStepBytes});
  const int64_t wanted = compute_units;
  StreamQSplit s;
  if (blocks < wanted) {
    s.splits = std::min({ceil_div(wanted, blocks), int64_t{S::kMaxSplits},
                         std::max<int64_t>(steps / S::kWarpsK, 1)});
  }
  s.k_chunk = ceil_div(steps, s.splits) * S::kStepBytes;
  s.splits = ceil_div(kbytes, s.k_chunk);  // no empty split
  return s;
}
static_assert(choose_stream_q_split(8192, 28672, 132).splits == 1);
static_assert(choose_stream_q_split(4096, 4096, 132).splits == 1);
static_assert(choose_stream_q_split(1024, 4096, 132).splits == 2);  // 16 steps: two a warp
static_assert(choose_stream_q_split(1024, 28672, 132).splits == 3);
static_assert(choose_stream_q_split(1024, 28672, 132).k_chunk == 38 * 256);
static_assert(choose_stream_q_split(16, 131072, 132).splits == 8);

// The workspace a decode call may need: kMaxSplits planes of 4-byte partials (none past kMaxM).
constexpr int64_t stream_q_workspace_bytes(int64_t m, int64_t n) {
  return m >= 1 && m <= kStreamQMaxM ? kernels::gemm_stream_q::kMaxSplits * m * n * 4 : 0;
}

// The three families' decode plans share their launch shape: the partials piece of the workspace
// (none unsplit), the stream kernel with a block per kRows weight rows and a z a split, the finish
// kernel (INT8's, FP4's) with one element a thread, and the notes.
inline void* stream_q_partials(kernels::Plan& plan, int64_t splits, int64_t m, int64_t n) {
  return splits > 1 ? plan.piece(plan.workspace.add("partials", splits * m * n * 4)) : nullptr;
}
template <typename Args>
void launch_stream_q(kernels::Plan& plan, const kernels::KernelInfo& kernel, int64_t n,
                     int64_t splits, const Args& args) {
  namespace S = kernels::gemm_stream_q;
  plan.launch(
      kernel,
      {static_cast<uint32_t>(ceil_div(n, int64_t{S::kRows})), 1, static_cast<uint32_t>(splits)},
      {static_cast<uint32_t>(S::kThreads), 1, 1}, args);
}
template <typename Args>
void launch_stream_q_finish(kernels::Plan& plan, const kernels::KernelInfo& kernel, int64_t m,
                            int64_t n, const Args& args) {
  namespace S = kernels::gemm_stream_q;
  plan.launch(kernel, {static_cast<uint32_t>(ceil_div(m * n, int64_t{S::kFinishThreads})), 1, 1},
              {static_cast<uint32_t>(S::kFinishThreads), 1, 1}, args);
}
inline void note_stream_q(kernels::Plan& plan, int64_t splits) {
  plan.note("tile_m", kernels::gemm_stream_q::kMaxM);
  plan.note("tile_n", kernels::gemm_stream_q::kRows);
  plan.note("split", splits);
}

}  // namespace jax_aiter::ops
