// ABI of our portable FP8 block-scale GEMM kernels (kernels_co/gemm_fp8bs.kernel.cpp, code object
// "gemm_fp8bs"): the argument struct field by field as the kernels declare their parameters, and
// the kernel table, generated from the list the kernel source instantiates
// (kernels/shared/gemm_fp8bs.h).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "jax_aiter/kernels/kernel.hpp"
#include "jax_aiter/kernels/shared/gemm_fp8bs.h"

namespace jax_aiter::kernels {

// out = sum_kb (a[:, kb] . b[:, kb]^T) * a_scale[kb][m] * b_scale[n / 128][kb] as bf16, one
// block a BM x BN tile over all of K.
struct GemmFp8BsArgs {
  const void* a;        // fp8 [M, K], rows lda bytes apart
  const void* b;        // fp8 [N, K] shuffled (16, 16)
  const void* a_scale;  // f32 [K/128, M]
  const void* b_scale;  // f32 [N/128, K/128]
  void* out;            // bf16 [M, N] row-major
  int32_t M, N, K;
  int32_t lda;
  int32_t fnuz;  // 1: the fp8 bytes are e4m3fnuz (read by the host kernels; a GPU reads its own)
};               // 60 bytes of parameters, tail-padded to 64
static_assert(offsetof(GemmFp8BsArgs, M) == 40 && sizeof(GemmFp8BsArgs) == 64);

inline constexpr std::array kGemmFp8BsFields{
    JAX_AITER_ARG_FIELD(GemmFp8BsArgs, a),       JAX_AITER_ARG_FIELD(GemmFp8BsArgs, b),
    JAX_AITER_ARG_FIELD(GemmFp8BsArgs, a_scale), JAX_AITER_ARG_FIELD(GemmFp8BsArgs, b_scale),
    JAX_AITER_ARG_FIELD(GemmFp8BsArgs, out),     JAX_AITER_ARG_FIELD(GemmFp8BsArgs, M),
    JAX_AITER_ARG_FIELD(GemmFp8BsArgs, N),       JAX_AITER_ARG_FIELD(GemmFp8BsArgs, K),
    JAX_AITER_ARG_FIELD(GemmFp8BsArgs, lda),     JAX_AITER_ARG_FIELD(GemmFp8BsArgs, fnuz),
};

inline constexpr std::string_view kGemmFp8BsCodeObject = "gemm_fp8bs";

struct GemmFp8BsTile {
  std::string_view name;
  int bm, bn, bk, threads;
  KernelInfo kernel;
};

namespace gemm_fp8bs_detail {
// clang-format off
#define JA_GEMM_FP8BS_TILE(name, BM, BN, BK, THREADS)                                           \
  GemmFp8BsTile{#name, BM, BN, BK, THREADS,                                                     \
                KernelInfo{kGemmFp8BsCodeObject, "jax_aiter_gemm_fp8bs_" #name,                 \
                           sizeof(GemmFp8BsArgs), kGemmFp8BsFields}},
inline constexpr GemmFp8BsTile kTiles[] = {JAX_AITER_GEMM_FP8BS_TILES(JA_GEMM_FP8BS_TILE)};
#undef JA_GEMM_FP8BS_TILE
// clang-format on
}  // namespace gemm_fp8bs_detail

// Largest BM first (the portable rule picks the first with BM <= M).
inline constexpr std::span<const GemmFp8BsTile> kGemmFp8BsTiles = gemm_fp8bs_detail::kTiles;
static_assert(kGemmFp8BsTiles[0].kernel.symbol == "jax_aiter_gemm_fp8bs_t128x128");

}  // namespace jax_aiter::kernels
