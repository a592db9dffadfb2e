// FP8 block-scale GEMM's parameters and the checks every tier relies on (the contract of AITER's
// three FP8 block-scale families, gemm_a8w8_blockscale_bpreshuffle_asm, the MI350 launcher and
// flatmm_a8w8_blockscale_asm, generalised where our portable kernels go further):
//   out[M,N] = sum over 128-wide K blocks kb of (a[:, kb] . b[:, kb]^T) * a_scale[kb][m]
//              * b_scale[n / 128][kb]
// a fp8 e4m3 [M, K] (fn or fnuz: which one a tier reads is ops/fp8_format.hpp's rule); b the same
// dtype [N, K], pre-shuffled; a_scale f32 [K/128, M] (K-block-major: what all three of AITER's
// kernels read; AITER's op tests pass x_scale.transpose(0, 1).contiguous()); b_scale f32
// [ceil(N/128), K/128]; out bf16 or f16 [M, N] (the caller's choice; each AITER family writes
// one). K % 128 == 0 (the scale blocks), N % 16 == 0 (the layout's row blocks); AITER's kernels
// need more (N % 128 or N % 256), which their tiers check. Each 128-wide K block is summed in f32,
// scaled, and the blocks added in f32, rounded once (once per split where a tier splits K). Pure
// C++ (no HIP, no XLA).
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>
#include <utility>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/core/status.hpp"
#include "jax_aiter/kernels/shared/aiter_flatmm.h"
#include "jax_aiter/kernels/shared/aiter_i8gemm.h"
#include "jax_aiter/kernels/shared/gemm_fp8_blockscale.h"
#include "jax_aiter/ops/aiter_knobs.hpp"
#include "jax_aiter/ops/dispatch.hpp"
#include "jax_aiter/ops/fp8_format.hpp"
#include "jax_aiter/ops/tensor.hpp"

namespace jax_aiter::ops {

inline constexpr std::string_view kGemmFp8BlockscaleName = "aiter.gemm_fp8_blockscale";

struct GemmFp8BlockscaleParams {
  Tensor a;          // fp8 e4m3 [M, K]
  Tensor b;          // fp8 e4m3 [N, K], pre-shuffled
  Tensor a_scale;    // f32 [K/128, M]
  Tensor b_scale;    // f32 [ceil(N/128), K/128]
  Tensor out;        // bf16 or f16 [M, N]
  Tensor workspace;  // u8, GemmFp8Blockscale::workspace_bytes
  // The layout b was shuffled into, as the caller states it (Python's ShuffledWeight.layout), so
  // a weight that was never shuffled cannot be passed by accident: "16x16" (AITER's
  // shuffle_weight(w, layout=(16, 16))) or "flatmm" (the FlatMM op test's view/permute). For
  // 1-byte elements the two are the same permutation (kernels/shared/aiter_flatmm.h), so every
  // tier takes either.
  std::string_view b_layout;
  // Which of AITER's families may run the call: "" any (by arch and out dtype), or one of
  // "fp8gemm_blockscale", "mi350", "flatmm" (what gemm_fp8_mi350 and flatmm_fp8 ask for).
  std::string_view family;
  AiterKnobs aiter;  // kernel (a row of any of the three families), splitk
  Dispatch dispatch;

  int64_t m() const { return a.rank == 2 ? a.dims[0] : 0; }
  int64_t k() const { return a.rank == 2 ? a.dims[1] : 0; }
  int64_t n() const { return b.rank == 2 ? b.dims[0] : 0; }
  int64_t k_blocks() const { return k() / kernels::gemm_fp8_blockscale::kScaleBlock; }
  int64_t n_blocks() const { return ceil_div(n(), kernels::gemm_fp8_blockscale::kScaleBlock); }
};

// The portable tier's split-K partials (sm_90's w tile, M >= 128: f32 [splits, M, N]) stay
// within this many bytes, as the bf16 GEMM's (so the workspace Python allocates at trace time stays
// small), and the splits at kGemmFp8BlockscaleMaxSplit (the w tiles' one-wave rule never asks
// more at M >= 128 on 132 SMs).
inline constexpr int64_t kGemmFp8BlockscalePartialsCap = int64_t{32} << 20;
inline constexpr int64_t kGemmFp8BlockscaleMaxSplit = 4;
inline constexpr int64_t kGemmFp8BlockscaleSplitMinM = 128;  // the w tile's rows

// The most K splits the portable tier may use for an [M, N] output on any device: the workspace
// holds that many f32 partial outputs. 1: it never splits.
constexpr int64_t gemm_fp8_blockscale_max_split(int64_t m, int64_t n) {
  if (m < kGemmFp8BlockscaleSplitMinM || n <= 0) return 1;
  const int64_t fit = kGemmFp8BlockscalePartialsCap / (m * n * int64_t{4});
  return fit >= 2 ? (fit < kGemmFp8BlockscaleMaxSplit ? fit : kGemmFp8BlockscaleMaxSplit) : 1;
}
static_assert(gemm_fp8_blockscale_max_split(128, 8192) == 4);
static_assert(gemm_fp8_blockscale_max_split(127, 8192) == 1);
static_assert(gemm_fp8_blockscale_max_split(4096, 4096) == 1);

namespace gemm_fp8_blockscale_detail {

// Both names of the one byte layout (see b_layout).
constexpr bool is_shuffled_layout(std::string_view layout) {
  return layout == kernels::aiter_i8gemm::kShuffleName ||
         layout == kernels::aiter_flatmm::kLayoutName;
}

inline Status check(const GemmFp8BlockscaleParams& p) {
  constexpr std::string_view op = kGemmFp8BlockscaleName;
  constexpr int64_t kBlock = kernels::gemm_fp8_blockscale::kScaleBlock;
  constexpr int64_t kRows = kernels::aiter_flatmm::kLayoutN;
  if (!is_e4m3(p.a.dtype) || p.a.rank != 2) {
    return operand_error(op, "a",
                         StrCat("expected f8_e4m3fn or f8_e4m3fnuz [M,K], got ", describe(p.a)));
  }
  const int64_t m = p.m(), k = p.k();
  if (p.b.dtype != p.a.dtype || p.b.rank != 2 || p.b.dims[1] != k) {
    return operand_error(op, "b",
                         StrCat("expected ", name(p.a.dtype), "[N,", k,
                                "] (dtype and K from a, pre-shuffled), got ", describe(p.b)));
  }
  const int64_t n = p.n();
  if (!is_shuffled_layout(p.b_layout)) {
    return operand_error(
        op, "b",
        StrCat("expected a weight pre-shuffled in the (16, 16) layout or the FlatMM layout, the "
               "same bytes for fp8 (b_layout \"16x16\" or \"flatmm\": jax_aiter.shuffle_weight), "
               "got b_layout \"",
               p.b_layout, "\""));
  }
  if (k % kBlock != 0) {
    return operand_error(op, "a",
                         StrCat("K=", k, " is not a multiple of 128 (the scale blocks along K)"));
  }
  if (n % kRows != 0) {
    return operand_error(op, "b",
                         StrCat("N=", n, " is not a multiple of 16 (the layout's row blocks)"));
  }
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max() / 2;
  if (m > kMax || n > kMax || k > kMax || m * k > std::numeric_limits<int32_t>::max()) {
    return operand_error(
        op, "a", StrCat("too large: M=", m, " N=", n, " K=", k, " (M, N, K < 2^30, M*K < 2^31)"));
  }
  const int64_t kb = p.k_blocks(), nb = p.n_blocks();
  if (p.a_scale.dtype != DType::kF32 || p.a_scale.rank != 2 || p.a_scale.dims[0] != kb ||
      p.a_scale.dims[1] != m) {
    return operand_error(op, "a_scale",
                         StrCat("expected f32[", kb, ",", m,
                                "] ([K/128, M]: K-block-major, as AITER's kernels read it), got ",
                                describe(p.a_scale)));
  }
  if (p.b_scale.dtype != DType::kF32 || p.b_scale.rank != 2 || p.b_scale.dims[0] != nb ||
      p.b_scale.dims[1] != kb) {
    return operand_error(op, "b_scale",
                         StrCat("expected f32[", nb, ",", kb,
                                "] ([ceil(N/128), K/128]: one per 128 x 128 block of b), got ",
                                describe(p.b_scale)));
  }
  if ((p.out.dtype != DType::kBF16 && p.out.dtype != DType::kF16) || p.out.rank != 2 ||
      p.out.dims[0] != m || p.out.dims[1] != n) {
    return operand_error(
        op, "out",
        StrCat("expected bf16[", m, ",", n, "] or f16[", m, ",", n, "], got ", describe(p.out)));
  }
  if (m == 0 || n == 0 || k == 0) {  // last: everything else about an empty call is checked
    return empty_problem(op, m == 0 || k == 0 ? "a" : "b",
                         StrCat("expected a non-empty product, got M=", m, " N=", n, " K=", k));
  }
  for (auto [t, what] :
       {std::pair{&p.a, "a"}, std::pair{&p.b, "b"}, std::pair{&p.a_scale, "a_scale"},
        std::pair{&p.b_scale, "b_scale"}, std::pair{&p.out, "out"}}) {
    if (t->data == nullptr) return operand_error(op, what, "null data pointer");
  }
  return {};
}

}  // namespace gemm_fp8_blockscale_detail

}  // namespace jax_aiter::ops
