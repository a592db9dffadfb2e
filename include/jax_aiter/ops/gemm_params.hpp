// BF16/F16 GEMM's parameters and the checks every tier relies on:
//   out[M,N] = a[M,K] . b[N,K]^T (+ bias[N]), fp32 accumulation; leading dims of a fold into M.
// Pure C++ (no HIP, no XLA).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/core/status.hpp"
#include "jax_aiter/ops/aiter_knobs.hpp"
#include "jax_aiter/ops/dispatch.hpp"
#include "jax_aiter/ops/tensor.hpp"

namespace jax_aiter::ops {

inline constexpr std::string_view kGemmName = "aiter.gemm";

struct GemmParams {
  Tensor a;                    // [..., K], bf16 or f16
  Tensor b;                    // [N, K], a's dtype
  std::optional<Tensor> bias;  // [N], a's dtype
  Tensor out;                  // [..., N] (a's leading dims), bf16, f16 or f32
  Tensor workspace;            // u8, gemm_workspace_bytes
  AiterKnobs aiter;            // kernel, splitk (ops/aiter_knobs.hpp)
  Dispatch dispatch;

  int64_t k() const { return a.last(); }
  int64_t m() const { return a.last() > 0 ? a.elements() / a.last() : 0; }
  int64_t n() const { return b.rank > 0 ? b.dims[0] : 0; }
};

// The split-K partials of the portable tier stay within this many bytes (so the workspace Python
// allocates at trace time stays small); above it the portable tier does not split K.
inline constexpr int64_t kGemmPartialsCap = int64_t{32} << 20;
inline constexpr int64_t kGemmMaxSplit = 16;

// The most K splits the portable tier may use for an [M, N] output on any device: the workspace
// holds that many float32 partial outputs. 1: it never splits.
constexpr int64_t gemm_max_split(int64_t m, int64_t n) {
  if (m <= 0 || n <= 0) return 1;
  const int64_t fit = kGemmPartialsCap / (m * n * int64_t{4});
  return fit >= 2 ? (fit < kGemmMaxSplit ? fit : kGemmMaxSplit) : 1;
}

namespace gemm_detail {

constexpr bool is_16bit_float(DType t) { return t == DType::kBF16 || t == DType::kF16; }

inline Status check(const GemmParams& p) {
  constexpr std::string_view op = kGemmName;
  if (!is_16bit_float(p.a.dtype)) {
    return operand_error(op, "a", StrCat("expected dtype bf16 or f16, got ", name(p.a.dtype)));
  }
  if (p.a.rank < 1) return operand_error(op, "a", "expected rank >= 1 ([..., K]), got a scalar");
  const int64_t k = p.k(), m = p.m();
  if (p.b.rank != 2 || p.b.dims[1] != k || p.b.dtype != p.a.dtype) {
    return operand_error(op, "b",
                         StrCat("expected ", name(p.a.dtype), "[N,", k,
                                "] (K and dtype from a), got ", describe(p.b)));
  }
  const int64_t n = p.n();
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  if (m > kMax || n > kMax || k > kMax) {
    return operand_error(op, "a",
                         StrCat("too large for 32-bit indexing: M=", m, " N=", n, " K=", k));
  }
  if (p.bias) {
    const Tensor& bias = *p.bias;
    if (bias.rank != 1 || bias.dims[0] != n || bias.dtype != p.a.dtype) {
      return operand_error(op, "bias",
                           StrCat("expected ", name(p.a.dtype), "[", n,
                                  "] (N from b, dtype from a), got ", describe(bias)));
    }
  }
  const DType o = p.out.dtype;
  bool out_shape = p.out.rank == p.a.rank && p.out.last() == n;
  for (int i = 0; out_shape && i + 1 < p.a.rank; ++i) out_shape = p.out.dims[i] == p.a.dims[i];
  if ((o != DType::kBF16 && o != DType::kF16 && o != DType::kF32) || !out_shape) {
    Tensor want = p.a;
    want.dims[want.rank - 1] = n;
    return operand_error(op, "out",
                         StrCat("expected bf16, f16 or f32", shape_string(want),
                                " (a's leading dims, N from b), got ", describe(p.out)));
  }
  if (m == 0 || n == 0 || k == 0) {  // last: everything else about an empty call is checked
    return empty_problem(op, m == 0 || k == 0 ? "a" : "b",
                         StrCat("expected a non-empty product, got M=", m, " N=", n, " K=", k));
  }
  if (p.a.data == nullptr) return operand_error(op, "a", "null data pointer");
  if (p.b.data == nullptr) return operand_error(op, "b", "null data pointer");
  if (p.out.data == nullptr) return operand_error(op, "out", "null data pointer");
  if (p.bias && p.bias->data == nullptr) return operand_error(op, "bias", "null data pointer");
  return {};
}

}  // namespace gemm_detail

}  // namespace jax_aiter::ops
