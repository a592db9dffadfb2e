// FlatMM fp8 block-scale GEMM's parameters and the checks every tier relies on (AITER's
// flatmm_a8w8_blockscale_asm contract, generalised where our portable kernels go further):
//   out[M,N] f16 = sum over K blocks b of 128: x_scale[b][m] w_scale[b][n / 128]
//                  (sum over k in block b of x[m][k] w[n][k])
// x e4m3 [M, K] (fn or fnuz: which one a tier reads is ops/fp8_format.hpp's rule), w e4m3 [N, K]
// in the FlatMM layout (kernels/shared/aiter_flatmm.h), x_scale f32 [K/128, M] (K-block-major,
// as the kernel reads it), w_scale f32 [K/128, ceil(N/128)]. Pure C++ (no HIP, no XLA).
//
// The op needs K % 128 == 0 (the scale blocks) and N % 16 == 0 (the layout's row blocks); AITER's
// kernel needs N % 256 == 0 too, which its tier checks (ops/flatmm_fp8_asm.hpp).
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>
#include <utility>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/core/status.hpp"
#include "jax_aiter/kernels/shared/aiter_flatmm.h"
#include "jax_aiter/ops/aiter_knobs.hpp"
#include "jax_aiter/ops/dispatch.hpp"
#include "jax_aiter/ops/fp8_format.hpp"
#include "jax_aiter/ops/tensor.hpp"

namespace jax_aiter::ops {

inline constexpr std::string_view kFlatmmFp8Name = "aiter.flatmm_fp8";

struct FlatmmFp8Params {
  Tensor x;        // e4m3 [M, K]
  Tensor w;        // e4m3 [N, K], FlatMM layout
  Tensor x_scale;  // f32 [K/128, M]
  Tensor w_scale;  // f32 [K/128, ceil(N/128)]
  Tensor out;      // f16 [M, N]
  // The layout w was shuffled into, as the caller states it (Python's ShuffledWeight.layout): it
  // must be "flatmm", so a weight that was never shuffled cannot be passed by accident.
  std::string_view w_layout;
  // kernel, splitk (ops/aiter_knobs.hpp): AITER's kernel by name (the family has one); no tier
  // splits K (splitk above 1 is refused by both).
  AiterKnobs aiter;
  Dispatch dispatch;

  int64_t m() const { return x.rank == 2 ? x.dims[0] : 0; }
  int64_t k() const { return x.rank == 2 ? x.dims[1] : 0; }
  int64_t n() const { return w.rank == 2 ? w.dims[0] : 0; }
  int64_t k_blocks() const { return k() / kernels::aiter_flatmm::kScaleBlock; }
  int64_t n_blocks() const { return ceil_div(n(), kernels::aiter_flatmm::kScaleBlock); }
};

namespace flatmm_fp8_detail {

inline Status check(const FlatmmFp8Params& p) {
  constexpr std::string_view op = kFlatmmFp8Name;
  namespace L = kernels::aiter_flatmm;
  if (!is_e4m3(p.x.dtype) || p.x.rank != 2) {
    return operand_error(op, "x",
                         StrCat("expected f8_e4m3fn or f8_e4m3fnuz [M,K], got ", describe(p.x)));
  }
  const int64_t m = p.m(), k = p.k();
  if (p.w.dtype != p.x.dtype || p.w.rank != 2 || p.w.dims[1] != k) {
    return operand_error(op, "w",
                         StrCat("expected ", name(p.x.dtype), "[N,", k,
                                "] (dtype and K from x, FlatMM layout), got ", describe(p.w)));
  }
  const int64_t n = p.n();
  if (p.w_layout != L::kLayoutName) {
    return operand_error(op, "w",
                         StrCat("expected a weight in the FlatMM layout (w_layout \"flatmm\": "
                                "jax_aiter.shuffle_weight(w, \"flatmm\")), got w_layout \"",
                                p.w_layout, "\""));
  }
  if (k % L::kScaleBlock != 0) {
    return operand_error(op, "x",
                         StrCat("K=", k, " is not a multiple of 128 (the scale blocks along K)"));
  }
  if (n % L::kLayoutN != 0) {
    return operand_error(op, "w",
                         StrCat("N=", n, " is not a multiple of 16 (the FlatMM layout's rows)"));
  }
  if (m > std::numeric_limits<int32_t>::max() || n > std::numeric_limits<int32_t>::max() ||
      k > std::numeric_limits<int32_t>::max() / 16) {
    return operand_error(op, "x", StrCat("too large: M=", m, " N=", n, " K=", k));
  }
  const int64_t kb = p.k_blocks(), nb = p.n_blocks();
  if (p.x_scale.dtype != DType::kF32 || p.x_scale.rank != 2 || p.x_scale.dims[0] != kb ||
      p.x_scale.dims[1] != m) {
    return operand_error(op, "x_scale",
                         StrCat("expected f32[", kb, ",", m, "] ([K/128, M], K-block-major), got ",
                                describe(p.x_scale)));
  }
  if (p.w_scale.dtype != DType::kF32 || p.w_scale.rank != 2 || p.w_scale.dims[0] != kb ||
      p.w_scale.dims[1] != nb) {
    return operand_error(op, "w_scale",
                         StrCat("expected f32[", kb, ",", nb, "] ([K/128, ceil(N/128)]), got ",
                                describe(p.w_scale)));
  }
  if (p.out.dtype != DType::kF16 || p.out.rank != 2 || p.out.dims[0] != m || p.out.dims[1] != n) {
    return operand_error(op, "out", StrCat("expected f16[", m, ",", n, "], got ", describe(p.out)));
  }
  if (m == 0 || n == 0 || k == 0) {  // last: everything else about an empty call is checked
    return empty_problem(op, m == 0 || k == 0 ? "x" : "w",
                         StrCat("expected a non-empty product, got M=", m, " N=", n, " K=", k));
  }
  for (auto [t, nm] : {std::pair{&p.x, "x"}, std::pair{&p.w, "w"}, std::pair{&p.x_scale, "x_scale"},
                       std::pair{&p.w_scale, "w_scale"}, std::pair{&p.out, "out"}}) {
    if (t->data == nullptr) return operand_error(op, nm, "null data pointer");
  }
  return {};
}

}  // namespace flatmm_fp8_detail

}  // namespace jax_aiter::ops
