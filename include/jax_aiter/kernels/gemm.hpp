// ABI of our portable GEMM kernels (kernels_co/gemm.kernel.cpp, code object "gemm"): the argument
// structs field by field as the kernels declare their parameters, and the kernel table, generated
// from the list the kernel source instantiates (kernels/shared/gemm.h).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/kernels/kernel.hpp"
#include "jax_aiter/kernels/shared/gemm.h"

namespace jax_aiter::kernels {

// One split of out = a . b^T (+ bias): the split-th K chunk of every tile of the grid, written to
// out (split == 1: bias added, converted to out_dtype) or, with several splits, as float32
// partials[split][M][N] that jax_aiter_gemm_reduce sums.
struct GemmArgs {
  const void* a;     // [M, K] row-major
  const void* b;     // [N, K] row-major
  const void* bias;  // [N] in a's dtype, or null
  void* out;         // [M, N] row-major, out_dtype
  void* partials;    // [splits, M, N] float32 when splits > 1, else null
  int32_t M, N, K;
  int32_t k_chunk;    // K of one split (a multiple of the tile's BK unless it is K)
  int32_t out_dtype;  // gemm::OutType
  int32_t splits;     // gridDim.z
};
static_assert(offsetof(GemmArgs, M) == 40 && offsetof(GemmArgs, splits) == 60);
static_assert(sizeof(GemmArgs) == 64);

// out[m, n] = sum over splits of partials[s, m, n] (+ bias[n]), in split order.
struct GemmReduceArgs {
  const void* partials;
  const void* bias;  // [N] in bias_dtype, or null
  void* out;
  int32_t M, N;
  int32_t splits;
  int32_t out_dtype;   // gemm::OutType
  int32_t bias_dtype;  // gemm::OutType of the bias (a's dtype)
};
static_assert(offsetof(GemmReduceArgs, M) == 24 && sizeof(GemmReduceArgs) == 48);

inline constexpr std::array kGemmFields{
    JAX_AITER_ARG_FIELD(GemmArgs, a),        JAX_AITER_ARG_FIELD(GemmArgs, b),
    JAX_AITER_ARG_FIELD(GemmArgs, bias),     JAX_AITER_ARG_FIELD(GemmArgs, out),
    JAX_AITER_ARG_FIELD(GemmArgs, partials), JAX_AITER_ARG_FIELD(GemmArgs, M),
    JAX_AITER_ARG_FIELD(GemmArgs, N),        JAX_AITER_ARG_FIELD(GemmArgs, K),
    JAX_AITER_ARG_FIELD(GemmArgs, k_chunk),  JAX_AITER_ARG_FIELD(GemmArgs, out_dtype),
    JAX_AITER_ARG_FIELD(GemmArgs, splits),
};
inline constexpr std::array kGemmReduceFields{
    JAX_AITER_ARG_FIELD(GemmReduceArgs, partials),  JAX_AITER_ARG_FIELD(GemmReduceArgs, bias),
    JAX_AITER_ARG_FIELD(GemmReduceArgs, out),       JAX_AITER_ARG_FIELD(GemmReduceArgs, M),
    JAX_AITER_ARG_FIELD(GemmReduceArgs, N),         JAX_AITER_ARG_FIELD(GemmReduceArgs, splits),
    JAX_AITER_ARG_FIELD(GemmReduceArgs, out_dtype), JAX_AITER_ARG_FIELD(GemmReduceArgs, bias_dtype),
};

inline constexpr std::string_view kGemmCodeObject = "gemm";

struct GemmTile {
  std::string_view name;
  int bm, bn, bk, threads;
};

namespace gemm_detail {
// The w tile's kernels (all four: the `any` ones run in the same launch shape) take the wgmma
// engine's dynamic shared memory.
constexpr KernelInfo kernel(std::string_view symbol, std::string_view tile) {
  KernelInfo k{kGemmCodeObject, symbol, sizeof(GemmArgs), kGemmFields};
  if (tile[0] == 'w') k.dynamic_shared = gemm::kWgmmaSmemBytes;
  return k;
}
// clang-format off
#define JA_GEMM_TILE(name, BM, BN, BK, THREADS) GemmTile{#name, BM, BN, BK, THREADS},
#define JA_GEMM_KERNELS(name, BM, BN, BK, THREADS)                      \
  kernel("jax_aiter_gemm_bf16_" #name "_aligned", #name),               \
  kernel("jax_aiter_gemm_bf16_" #name "_any", #name),                   \
  kernel("jax_aiter_gemm_f16_" #name "_aligned", #name),                \
  kernel("jax_aiter_gemm_f16_" #name "_any", #name),
inline constexpr GemmTile kTiles[] = {JAX_AITER_GEMM_TILES(JA_GEMM_TILE)};
inline constexpr KernelInfo kKernels[] = {JAX_AITER_GEMM_TILES(JA_GEMM_KERNELS)};
#undef JA_GEMM_TILE
#undef JA_GEMM_KERNELS
// clang-format on
}  // namespace gemm_detail

inline constexpr std::span<const GemmTile> kGemmTiles = gemm_detail::kTiles;

inline constexpr KernelInfo kGemmReduceKernel{kGemmCodeObject, "jax_aiter_gemm_reduce",
                                              sizeof(GemmReduceArgs), kGemmReduceFields};

// The kernel of tile `tile` (an index into kGemmTiles) for inputs of dtype t (bf16 or f16), with
// 16-byte aligned loads or element-wise ones.
constexpr const KernelInfo& gemm_kernel(size_t tile, DType t, bool aligned) {
  return gemm_detail::kKernels[tile * 4 + (t == DType::kF16 ? 2 : 0) + (aligned ? 0 : 1)];
}

constexpr gemm::OutType gemm_out_type(DType t) {
  return t == DType::kBF16 ? gemm::kOutBF16 : t == DType::kF16 ? gemm::kOutF16 : gemm::kOutF32;
}

static_assert(gemm_kernel(0, DType::kF16, false).symbol == "jax_aiter_gemm_f16_t128x128w4_any");
static_assert(gemm_kernel(0, DType::kBF16, true).dynamic_shared == 0);

}  // namespace jax_aiter::kernels
