// AITER's top-k softmax ASM kernels ("topksoftmax"), one row each (origin: github.com/ROCm/aiter at
// e4048607a535, hsa/gfx942/topksoftmax/topksoftmax.csv and hsa/gfx950/topksoftmax/topksoftmax.csv,
// identical lists, MIT licence, (c) AMD; every code object declares the same 128-byte kernarg
// segment, read with llvm-readelf-22 --notes). The rows are aiter_topksoftmax.csv, the one source
// of the host table (kernels/aiter/topksoftmax.hpp), the ABI twins' kernel source
// (kernels_co/aiter_topksoftmax.twin.cpp), the CMake function that embeds AITER's code objects and
// the twins' metadata check (cmake/JaxAiterRows.cmake); C++ reads them as the X-macro
// JAX_AITER_TOPKSOFTMAX_ROWS of the generated aiter_topksoftmax.rows.h.
//
// X(symbol, code_object, subm, num_experts, topk, dtype, on_gfx942, on_gfx950)
//   subm         token rows a workgroup takes (the launch grid is ceil(tokens / subm))
//   num_experts  the logits' row length the kernel is built for (exactly)
//   topk         the experts it chooses per row (exactly)
//   dtype        the logits' dtype: fp32 or bf16 (weights are f32, ids i32 either way)
// Order: AITER's CSV order (fp32, then bf16; subm 4, then 12; experts, then topk ascending). No two
// rows of an arch share (dtype, num_experts, topk, subm), so AITER's choice never depends on the
// order it visits them in.
#pragma once

#include "jax_aiter/kernels/shared/aiter_topksoftmax.rows.h"

namespace jax_aiter::kernels::aiter_topksoftmax {
// Every row's workgroup: 4 waves of 64 (asm_topksoftmax.cu: "bdx: 4 wv64").
inline constexpr int kBlockThreads = 256;
// The most rows a workgroup may take: AITER caps subm at 4 below this many tokens, else at 12
// (asm_topksoftmax.cu: MAX_SUBM = num_tokens < 10000 ? 4 : 12).
inline constexpr int kLargeBatchTokens = 10000;
inline constexpr int kSmallMaxSubm = 4;
inline constexpr int kLargeMaxSubm = 12;
}  // namespace jax_aiter::kernels::aiter_topksoftmax
