// The MI350 FP8 block-scale GEMM's parameters and the checks every tier relies on (AITER's
// mi350_a8w8_blockscale_asm contract, csrc/py_itfs_cu/asm_mi350_a8w8_blockscale.cu as of
// 06de6e9aee^):
//   out[M,N] bf16 = sum over 128-wide K blocks kb of
//                   x_scale[kb][m] * w_scale[n / 128][kb] * (xq[m, kb] . wq[n, kb])
// xq fp8 [M,K]; wq fp8 [N,K] pre-shuffled in the (16, 16) layout; x_scale f32 [K/128, M] (one per
// token and K block, K-block-major); w_scale f32 [N/128, K/128] (one per 128x128 weight block).
// N and K must be multiples of 128 (the scale blocks); AITER's kernels also need M >= 16 and
// K >= 512 (ops/gemm_fp8_mi350_asm.hpp), our portable kernels take any M. Pure C++.
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>
#include <utility>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/core/status.hpp"
#include "jax_aiter/kernels/shared/aiter_mi350.h"
#include "jax_aiter/ops/aiter_knobs.hpp"
#include "jax_aiter/ops/dispatch.hpp"
#include "jax_aiter/ops/fp8_format.hpp"
#include "jax_aiter/ops/tensor.hpp"

namespace jax_aiter::ops {

inline constexpr std::string_view kGemmFp8Mi350Name = "aiter.gemm_fp8_mi350";

struct GemmFp8Mi350Params {
  Tensor xq;       // fp8 [M, K]
  Tensor wq;       // fp8 [N, K], shuffled
  Tensor x_scale;  // f32 [K/128, M]
  Tensor w_scale;  // f32 [N/128, K/128]
  Tensor out;      // bf16 [M, N]
  // The layout wq was shuffled into, as the caller states it (Python's ShuffledWeight.layout):
  // it must be "16x16", so a weight that was never shuffled cannot be passed by accident.
  std::string_view b_layout;
  // kernel, splitk (ops/aiter_knobs.hpp): an ASM row by symbol or short name
  // ("f8_block_scale_mi350_x64"); no tier splits K (splitk above 1 is refused by both).
  AiterKnobs aiter;
  Dispatch dispatch;

  int64_t m() const { return xq.rank == 2 ? xq.dims[0] : 0; }
  int64_t k() const { return xq.rank == 2 ? xq.dims[1] : 0; }
  int64_t n() const { return wq.rank == 2 ? wq.dims[0] : 0; }
};

namespace gemm_fp8_mi350_detail {

inline Status check(const GemmFp8Mi350Params& p) {
  constexpr std::string_view op = kGemmFp8Mi350Name;
  namespace L = kernels::aiter_mi350;
  if (!is_e4m3(p.xq.dtype) || p.xq.rank != 2) {
    return operand_error(op, "xq",
                         StrCat("expected f8_e4m3fn[M,K] (or f8_e4m3fnuz), got ", describe(p.xq)));
  }
  const int64_t m = p.m(), k = p.k();
  if (p.wq.dtype != p.xq.dtype || p.wq.rank != 2 || p.wq.dims[1] != k) {
    return operand_error(op, "wq",
                         StrCat("expected ", name(p.xq.dtype), "[N,", k,
                                "] (dtype and K from xq, shuffled), got ", describe(p.wq)));
  }
  const int64_t n = p.n();
  if (p.b_layout != L::kShuffleName) {
    return operand_error(
        op, "wq",
        StrCat("expected a weight pre-shuffled in the (16, 16) layout (b_layout \"16x16\": "
               "jax_aiter.shuffle_weight), got b_layout \"",
               p.b_layout, "\""));
  }
  if (n % L::kScaleBlock != 0) {
    return operand_error(op, "wq", StrCat("N=", n, " is not a multiple of 128 (the scale blocks)"));
  }
  if (k % L::kScaleBlock != 0) {
    return operand_error(op, "xq", StrCat("K=", k, " is not a multiple of 128 (the scale blocks)"));
  }
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max() / 2;
  if (m > kMax || n > kMax || k > kMax || m * k > std::numeric_limits<uint32_t>::max() ||
      n * 2 > std::numeric_limits<uint32_t>::max()) {
    return operand_error(op, "xq", StrCat("too large: M=", m, " N=", n, " K=", k));
  }
  const int64_t kb = k / L::kScaleBlock, nb = n / L::kScaleBlock;
  if (p.x_scale.dtype != DType::kF32 || p.x_scale.rank != 2 || p.x_scale.dims[0] != kb ||
      p.x_scale.dims[1] != m) {
    return operand_error(op, "x_scale",
                         StrCat("expected f32[", kb, ",", m,
                                "] ([K/128, M]: one per K block and "
                                "token, K-block-major), got ",
                                describe(p.x_scale)));
  }
  if (p.w_scale.dtype != DType::kF32 || p.w_scale.rank != 2 || p.w_scale.dims[0] != nb ||
      p.w_scale.dims[1] != kb) {
    return operand_error(
        op, "w_scale",
        StrCat("expected f32[", nb, ",", kb,
               "] ([N/128, K/128]: one per 128x128 weight block), got ", describe(p.w_scale)));
  }
  if (p.out.dtype != DType::kBF16 || p.out.rank != 2 || p.out.dims[0] != m || p.out.dims[1] != n) {
    return operand_error(op, "out",
                         StrCat("expected bf16[", m, ",", n, "], got ", describe(p.out)));
  }
  if (m == 0 || n == 0 || k == 0) {  // last: everything else about an empty call is checked
    return empty_problem(op, m == 0 || k == 0 ? "xq" : "wq",
                         StrCat("expected a non-empty product, got M=", m, " N=", n, " K=", k));
  }
  for (auto [t, what] :
       {std::pair{&p.xq, "xq"}, std::pair{&p.wq, "wq"}, std::pair{&p.x_scale, "x_scale"},
        std::pair{&p.w_scale, "w_scale"}, std::pair{&p.out, "out"}}) {
    if (t->data == nullptr) return operand_error(op, what, "null data pointer");
  }
  return {};
}

}  // namespace gemm_fp8_mi350_detail

}  // namespace jax_aiter::ops
