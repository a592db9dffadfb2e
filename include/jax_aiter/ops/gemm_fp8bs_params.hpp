// FP8 block-scale GEMM's parameters and the checks every tier relies on (AITER's
// gemm_a8w8_blockscale_bpreshuffle_asm contract):
//   out[M,N] bf16 = sum over K blocks kb of (a[:, kb] . b[:, kb]^T) * a_scale[kb][m]
//                   * b_scale[n / 128][kb]
// a fp8 e4m3 [M, K]; b fp8 [N, K] pre-shuffled in the (16, 16) layout; a_scale f32 [K/128, M]
// (K-block-major: AITER's ASM kernels read x_scale transposed, op_tests/
// test_gemm_a8w8_blockscale.py passes x_scale.transpose(0, 1).contiguous()); b_scale f32
// [N/128, K/128]; N and K multiples of 128. Each 128-wide K block is summed in f32, scaled, and
// the blocks added in f32, rounded to bf16 once. Pure C++ (no HIP, no XLA).
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>
#include <utility>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/core/status.hpp"
#include "jax_aiter/kernels/shared/aiter_fp8gemm_blockscale.h"
#include "jax_aiter/ops/aiter_knobs.hpp"
#include "jax_aiter/ops/dispatch.hpp"
#include "jax_aiter/ops/fp8_format.hpp"
#include "jax_aiter/ops/tensor.hpp"

namespace jax_aiter::ops {

inline constexpr std::string_view kGemmFp8BsName = "aiter.gemm_fp8_blockscale";

struct GemmFp8BsParams {
  Tensor a;          // fp8 e4m3 [M, K]
  Tensor b;          // fp8 e4m3 [N, K], shuffled
  Tensor a_scale;    // f32 [K/128, M]
  Tensor b_scale;    // f32 [N/128, K/128]
  Tensor out;        // bf16 [M, N]
  Tensor workspace;  // u8, GemmFp8Bs::workspace_bytes
  // The layout b was shuffled into, as the caller states it (Python's ShuffledWeight.layout):
  // it must be "16x16", so a weight that was never shuffled cannot be passed by accident.
  std::string_view b_layout;
  AiterKnobs aiter;  // kernel, splitk (ops/aiter_knobs.hpp)
  Dispatch dispatch;

  int64_t m() const { return a.rank == 2 ? a.dims[0] : 0; }
  int64_t k() const { return a.rank == 2 ? a.dims[1] : 0; }
  int64_t n() const { return b.rank == 2 ? b.dims[0] : 0; }
};

inline constexpr int64_t kGemmFp8BsMaxSplit = kernels::aiter_fp8bs::kMaxSplit;

namespace gemm_fp8bs_detail {

inline Status check(const GemmFp8BsParams& p) {
  constexpr std::string_view op = kGemmFp8BsName;
  namespace L = kernels::aiter_fp8bs;
  if (!is_e4m3(p.a.dtype) || p.a.rank != 2) {
    return operand_error(op, "a",
                         StrCat("expected f8_e4m3fn or f8_e4m3fnuz [M,K], got ", describe(p.a)));
  }
  const int64_t m = p.m(), k = p.k();
  if (p.b.dtype != p.a.dtype || p.b.rank != 2 || p.b.dims[1] != k) {
    return operand_error(op, "b",
                         StrCat("expected ", name(p.a.dtype), "[N,", k,
                                "] (dtype and K from a, shuffled), got ", describe(p.b)));
  }
  const int64_t n = p.n();
  if (p.b_layout != L::kShuffleName) {
    return operand_error(
        op, "b",
        StrCat("expected a weight pre-shuffled in the (16, 16) layout (b_layout \"16x16\": "
               "jax_aiter.shuffle_weight), got b_layout \"",
               p.b_layout, "\""));
  }
  if (n % L::kScaleN != 0) {
    return operand_error(op, "b",
                         StrCat("N=", n, " is not a multiple of 128 (the b_scale block rows)"));
  }
  if (k % L::kScaleK != 0) {
    return operand_error(op, "a",
                         StrCat("K=", k, " is not a multiple of 128 (the scale blocks' K)"));
  }
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max() / 2;
  if (m > kMax || n > kMax || k > kMax || m * k > std::numeric_limits<int32_t>::max()) {
    return operand_error(
        op, "a", StrCat("too large: M=", m, " N=", n, " K=", k, " (M, N, K < 2^30, M*K < 2^31)"));
  }
  const int64_t kb = k / L::kScaleK, nb = n / L::kScaleN;
  if (p.a_scale.dtype != DType::kF32 || p.a_scale.rank != 2 || p.a_scale.dims[0] != kb ||
      p.a_scale.dims[1] != m) {
    return operand_error(
        op, "a_scale",
        StrCat("expected f32[", kb, ",", m, "] (K/128 x M: AITER's K-block-major layout), got ",
               describe(p.a_scale)));
  }
  if (p.b_scale.dtype != DType::kF32 || p.b_scale.rank != 2 || p.b_scale.dims[0] != nb ||
      p.b_scale.dims[1] != kb) {
    return operand_error(
        op, "b_scale",
        StrCat("expected f32[", nb, ",", kb, "] (N/128 x K/128), got ", describe(p.b_scale)));
  }
  if (p.out.dtype != DType::kBF16 || p.out.rank != 2 || p.out.dims[0] != m || p.out.dims[1] != n) {
    return operand_error(op, "out",
                         StrCat("expected bf16[", m, ",", n, "], got ", describe(p.out)));
  }
  if (m == 0 || n == 0 || k == 0) {  // last: everything else about an empty call is checked
    return empty_problem(op, m == 0 || k == 0 ? "a" : "b",
                         StrCat("expected a non-empty product, got M=", m, " N=", n, " K=", k));
  }
  for (auto [t, name] :
       {std::pair{&p.a, "a"}, std::pair{&p.b, "b"}, std::pair{&p.a_scale, "a_scale"},
        std::pair{&p.b_scale, "b_scale"}, std::pair{&p.out, "out"}}) {
    if (t->data == nullptr) return operand_error(op, name, "null data pointer");
  }
  return {};
}

}  // namespace gemm_fp8bs_detail

}  // namespace jax_aiter::ops
