// INT8 GEMM's parameters and the checks every tier relies on (AITER's gemm_a8w8_asm contract):
//   out[M,N] bf16 = (a[M,K] i8 . b[N,K]^T i8) * a_scale[m] * b_scale[n] (+ bias[n])
// with b pre-shuffled in the (16, 16) layout (kernels/shared/aiter_i8gemm.h), a_scale f32 [M,1],
// b_scale f32 [1,N], bias f32 [1,N]. The products are summed exactly in int32 (so K < 2^17),
// then scaled in f32 and rounded to bf16 once. Pure C++ (no HIP, no XLA).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <utility>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/core/status.hpp"
#include "jax_aiter/kernels/shared/aiter_i8gemm.h"
#include "jax_aiter/ops/aiter_knobs.hpp"
#include "jax_aiter/ops/dispatch.hpp"
#include "jax_aiter/ops/tensor.hpp"

namespace jax_aiter::ops {

inline constexpr std::string_view kGemmI8Name = "aiter.gemm_i8";

struct GemmI8Params {
  Tensor a;                    // i8 [M, K]
  Tensor b;                    // i8 [N, K], shuffled
  Tensor a_scale;              // f32 [M, 1]
  Tensor b_scale;              // f32 [1, N]
  std::optional<Tensor> bias;  // f32 [1, N]
  Tensor out;                  // bf16 [M, N]
  Tensor workspace;            // u8, GemmI8::workspace_bytes
  // The layout b was shuffled into, as the caller states it (Python's ShuffledWeight.layout):
  // it must be the family's ("16x16"), so a weight that was never shuffled cannot be passed by
  // accident.
  std::string_view b_layout;
  AiterKnobs aiter;  // kernel, splitk (ops/aiter_knobs.hpp)
  Dispatch dispatch;

  int64_t m() const { return a.rank == 2 ? a.dims[0] : 0; }
  int64_t k() const { return a.rank == 2 ? a.dims[1] : 0; }
  int64_t n() const { return b.rank == 2 ? b.dims[0] : 0; }
};

// Exact int32 accumulation: |a . b| <= K * 128 * 128 must stay below 2^31 (at K = 2^17 the
// extreme -128 x -128 rows sum to 2^31, which int32 wraps to -2^31), so K <= 131071: 131040 with
// K % 32 == 0, 130944 with the ASM tier's K % 128 == 0.
inline constexpr int64_t kGemmI8MaxK = (int64_t{1} << 31) / (128 * 128) - 1;
static_assert(kGemmI8MaxK * 128 * 128 < (int64_t{1} << 31) &&
              (kGemmI8MaxK + 1) * 128 * 128 >= (int64_t{1} << 31));
inline constexpr int64_t kGemmI8MaxSplit = kernels::aiter_i8gemm::kMaxSplit;

namespace gemm_i8_detail {

inline Status check(const GemmI8Params& p) {
  constexpr std::string_view op = kGemmI8Name;
  namespace L = kernels::aiter_i8gemm;
  if (p.a.dtype != DType::kI8 || p.a.rank != 2) {
    return operand_error(op, "a", StrCat("expected i8[M,K], got ", describe(p.a)));
  }
  const int64_t m = p.m(), k = p.k();
  if (p.b.dtype != DType::kI8 || p.b.rank != 2 || p.b.dims[1] != k) {
    return operand_error(
        op, "b", StrCat("expected i8[N,", k, "] (K from a, shuffled), got ", describe(p.b)));
  }
  const int64_t n = p.n();
  if (p.b_layout != L::kShuffleName) {
    return operand_error(
        op, "b",
        StrCat("expected a weight pre-shuffled in the (16, 16) layout (b_layout \"16x16\": "
               "jax_aiter.shuffle_weight), got b_layout \"",
               p.b_layout, "\""));
  }
  if (n % L::kShuffleN != 0) {
    return operand_error(op, "b",
                         StrCat("N=", n, " is not a multiple of 16 (the shuffled layout's rows)"));
  }
  if (k % L::kShuffleK != 0) {
    return operand_error(
        op, "a", StrCat("K=", k, " is not a multiple of 32 (the shuffled layout's K block)"));
  }
  if (k > kGemmI8MaxK || m > std::numeric_limits<int32_t>::max() / 2 ||
      n > std::numeric_limits<int32_t>::max() / 2) {
    return operand_error(op, "a",
                         StrCat("too large: M=", m, " N=", n, " K=", k,
                                " (K <= 131071 keeps the int32 sums exact; M, N < 2^30)"));
  }
  if (p.a_scale.dtype != DType::kF32 || p.a_scale.rank != 2 || p.a_scale.dims[0] != m ||
      p.a_scale.dims[1] != 1) {
    return operand_error(op, "a_scale",
                         StrCat("expected f32[", m, ",1] (M from a), got ", describe(p.a_scale)));
  }
  if (p.b_scale.dtype != DType::kF32 || p.b_scale.rank != 2 || p.b_scale.dims[0] != 1 ||
      p.b_scale.dims[1] != n) {
    return operand_error(op, "b_scale",
                         StrCat("expected f32[1,", n, "] (N from b), got ", describe(p.b_scale)));
  }
  if (p.bias) {
    const Tensor& bias = *p.bias;
    if (bias.dtype != DType::kF32 || bias.rank != 2 || bias.dims[0] != 1 || bias.dims[1] != n) {
      return operand_error(op, "bias",
                           StrCat("expected f32[1,", n, "] (N from b), got ", describe(bias)));
    }
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
  if (p.bias && p.bias->data == nullptr) return operand_error(op, "bias", "null data pointer");
  return {};
}

}  // namespace gemm_i8_detail

}  // namespace jax_aiter::ops
