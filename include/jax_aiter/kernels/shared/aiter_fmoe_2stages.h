// AITER's two-stage fused-MoE ASM kernels ("fmoe_2stages"): the stage-1 kernels (x . w1, the
// activation, x the sorted layout's rows), one row per kernel (origin: github.com/ROCm/aiter at
// e4048607a535, hsa/{gfx942,gfx950}/fmoe_2stages/fmoe_stage1_bf16_*_g1u1.csv, MIT licence, (c)
// AMD; each code object's kernarg size read from its own AMDGPU metadata with llvm-readelf-22
// --notes). The rows are aiter_fmoe_2stages.csv, the one source of the host table
// (kernels/aiter/fmoe_2stages.hpp) and of the code objects the build embeds
// (cmake/JaxAiterRows.cmake); C++ reads them as the X-macro JAX_AITER_FMOE_2STAGES_ROWS of the
// generated aiter_fmoe_2stages.rows.h. Stage 2 (AITER's CK down-projection) is not AITER code we
// launch: ours is portable (python/jax_aiter/fused_moe.py, docs/ops/moe.md).
//
// X(symbol, code_object, quant, doweight, tile_m, tile_n, kernarg_bytes, on_gfx942, on_gfx950)
//   quant, doweight  the AITER list (CSV) the row is in; the launcher (csrc/py_itfs_cu/
//                    asm_moe_2stage.cu get_cfg) picks one per call from the dtypes and quant type:
//     pertokenFp8    x fp8 with f32 [T, 1] scales, w1 fp8 with [E, 2I, 1]: writes bf16
//                    act(gate) * up, [T, topk, I] (doweight 1: times the top-k weight, AITER's
//                    doweight_stage1, list fmoe_stage1_bf16_pertokenFp8_doweight_g1u1)
//     pertokenInt8   the same in int8
//     blockscaleFp8  x fp8 in 1 x 128 blocks (scales [H/128, T]), w1 fp8 in 128 x 128 blocks
//                    ([E, 2I/128, H/128]): writes act(gate) * up quantized to fp8 in 1 x 128
//                    blocks, [T, topk, I], followed by its f32 scales (kStage1ScaleRows below)
//   tile_m           sorted rows a workgroup takes: the sorting's block_m (AITER requires equal)
//   tile_n           columns of I a workgroup takes (I % tile_n == 0)
//   kernarg_bytes    the kernarg segment the code object declares: 368 (AITER's struct) or 400
//                    (gfx942's int8 x192 and x384 kernels: two more slots, total_tgs and ps_deno,
//                    that AITER's 368-byte struct leaves to stray host bytes; we pass 0)
// Order: list by list (pertokenFp8, its doweight list, pertokenInt8, blockscaleFp8), then by
// (tile_n, tile_m, code object name). Ties of the selection rule fall only between rows of one
// (tile_m, tile_n) (AITER's pf2/pf3 and workgroups-per-CU variants) and go to the first row.
#pragma once

#include "jax_aiter/kernels/shared/aiter_fmoe_2stages.rows.h"

#if defined(__CUDACC__)
#define JAX_AITER_FMOE2_FN __host__ __device__ constexpr
#else
#define JAX_AITER_FMOE2_FN constexpr
#endif

namespace jax_aiter::kernels::aiter_fmoe_2stages {
inline constexpr int kBlockThreads = 256;  // asm_moe_2stage.cu: bdx 256
inline constexpr int kScaleBlock = 128;    // the block-scale list's blocks (QuantType per_1x128)
// The struct's activation field: AITER's ActivationType (csrc/include/aiter_enum.h).
inline constexpr unsigned kSilu = 0, kGelu = 1;

// The block-scale list's output (aiter/fused_moe.py fused_moe_2stages, the per_1x128 asm_stage1
// branch): one fp8 buffer of [T + ceil(4 T / 128), topk, I]: rows [0, T) the quantized
// act(gate) * up, then from byte T * topk * I its f32 scales, [T, topk * I / 128] (each (token,
// slot)'s I / 128 blocks in order).
JAX_AITER_FMOE2_FN long long stage1_scale_rows(long long tokens) {
  return (tokens * 4 + kScaleBlock - 1) / kScaleBlock;
}

// AITER's block_m for a two-stage call with no tuned config (aiter/fused_moe.py get_2stage_cfgs):
// per_1x128 (block scales): 64 when the padded token count is above 32, else 16; otherwise
// get_block_size_M over 32, 64, 128 with 128-wide inter tiles: the least (CU rounds, empty CUs),
// the first on a tie, where rounds = ceil(tg / CUs), empty = CUs - tg % CUs (CUs when tg fills
// them), tg = floor(ceil(I / 128) * (P + block_m - 1) / block_m) (Python's a * b // c) and
// P = M * topk + E * block_m - topk. M is the
// padded token count (get_padded_M): the next power of two below 32768, else 32768 or 131072.
JAX_AITER_FMOE2_FN long long padded_tokens(long long m) {
  if (m < 32768) {
    long long p = 1;
    while (p < m) p *= 2;
    return p;
  }
  return m >= 131072 ? 131072 : 32768;
}
JAX_AITER_FMOE2_FN int default_block_m(bool block_scaled, long long tokens, long long topk,
                                       long long experts, long long inter, long long cus) {
  const long long m = padded_tokens(tokens);
  if (block_scaled) return m > 32 ? 64 : 16;
  const long long tg_n = (inter + 127) / 128;
  int best = 0;
  long long best_rounds = 0, best_empty = 0;
  const int blocks[3] = {32, 64, 128};
  for (int b : blocks) {
    const long long rows = m * topk + experts * b - topk;
    const long long tg = tg_n * (rows + b - 1) / b;
    const long long rounds = (tg + cus - 1) / cus, empty = cus - tg % cus;
    if (best == 0 || rounds < best_rounds || (rounds == best_rounds && empty < best_empty)) {
      best = b;
      best_rounds = rounds;
      best_empty = empty;
    }
  }
  return best;
}
}  // namespace jax_aiter::kernels::aiter_fmoe_2stages
