// Grouped GEMM's parameters and the checks every tier relies on. Rows of x are grouped: group g
// owns the next group_sizes[g] rows (device data, never read on the host).
//   aiter.grouped_gemm        out[m, :] = x[m, :] . w[g]^T          x [M, K], w [G, N, K] -> [M, N]
//       transpose_w           out[m, :] = x[m, :] . w[g]            x [M, N], w [G, N, K] -> [M, K]
//       fp8 block-scale       x, w e4m3 (w plain row-major), x_scale f32 [M, K/128], w_scale f32
//                             [G, ceil(N/128), K/128]: sum over 128-wide K blocks of the block's
//                             product times x_scale * w_scale, out bf16 (no transpose_w)
//   aiter.grouped_gemm_wgrad  dw[g] = dy_g^T . x_g                   dy [M, N], x [M, K] -> [G, N,
//   K]
// Rows past the groups are zeros (forward) or read by no group (wgrad). bf16/f16 inputs,
// fp32 accumulation, out bf16, f16 or f32. Pure C++ (no HIP, no XLA).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <utility>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/core/status.hpp"
#include "jax_aiter/kernels/shared/grouped_gemm.h"
#include "jax_aiter/ops/dispatch.hpp"
#include "jax_aiter/ops/fp8_format.hpp"
#include "jax_aiter/ops/tensor.hpp"

namespace jax_aiter::ops {

inline constexpr std::string_view kGroupedGemmName = "aiter.grouped_gemm";
inline constexpr std::string_view kGroupedGemmWgradName = "aiter.grouped_gemm_wgrad";

// Groups a call may have: the wgrad kernels' grid z, and far above any MoE layer's experts.
inline constexpr int64_t kGroupedMaxGroups = 65535;

struct GroupedGemmParams {
  Tensor x;                       // [M, K] (transpose_w: [M, N]); bf16, f16 or e4m3
  Tensor w;                       // [G, N, K], x's dtype
  Tensor group_sizes;             // i32 [G]
  std::optional<Tensor> x_scale;  // fp8: f32 [M, K/128]
  std::optional<Tensor> w_scale;  // fp8: f32 [G, ceil(N/128), K/128]
  Tensor out;                     // [M, N] (transpose_w: [M, K])
  Tensor workspace;               // u8, GroupedGemm::workspace_bytes
  bool transpose_w = false;       // contract x with w's N (the forward's dgrad)
  Dispatch dispatch;

  int64_t m() const { return x.rank == 2 ? x.dims[0] : 0; }
  int64_t groups() const { return w.rank == 3 ? w.dims[0] : 0; }
  // The GEMM each group runs: out's columns and the reduction (forward: N, K; transpose_w: K, N).
  int64_t cols() const { return w.rank == 3 ? w.dims[transpose_w ? 2 : 1] : 0; }
  int64_t depth() const { return w.rank == 3 ? w.dims[transpose_w ? 1 : 2] : 0; }
  bool fp8() const { return is_e4m3(x.dtype); }
};

struct GroupedGemmWgradParams {
  Tensor dy;           // [M, N], bf16 or f16
  Tensor x;            // [M, K], dy's dtype
  Tensor group_sizes;  // i32 [G]
  Tensor dw;           // [G, N, K], bf16, f16 or f32
  Tensor workspace;    // u8, GroupedGemmWgrad::workspace_bytes
  Dispatch dispatch;

  int64_t m() const { return dy.rank == 2 ? dy.dims[0] : 0; }
  int64_t n() const { return dy.rank == 2 ? dy.dims[1] : 0; }
  int64_t k() const { return x.rank == 2 ? x.dims[1] : 0; }
  int64_t groups() const { return group_sizes.rank == 1 ? group_sizes.dims[0] : 0; }
};

// The schedule's bytes for M rows and G groups with row tiles of bm rows (capacity 0: offsets
// only).
constexpr int64_t grouped_schedule_bytes(int64_t groups, int64_t capacity) {
  return kernels::grouped_gemm::schedule_words(groups, capacity) * 4;
}

namespace grouped_gemm_detail {

constexpr bool is_16bit_float(DType t) { return t == DType::kBF16 || t == DType::kF16; }
constexpr bool is_out_float(DType t) {
  return t == DType::kBF16 || t == DType::kF16 || t == DType::kF32;
}
constexpr int64_t kMax32 = std::numeric_limits<int32_t>::max();

inline Status check_group_sizes(std::string_view op, const Tensor& t, int64_t groups,
                                std::string_view from) {
  if (t.dtype != DType::kI32 || t.rank != 1 || t.dims[0] != groups) {
    return operand_error(
        op, "group_sizes",
        StrCat("expected i32[", groups, "] (G from ", from, "), got ", describe(t)));
  }
  if (groups > kGroupedMaxGroups) {
    return operand_error(op, "group_sizes",
                         StrCat("expected at most ", kGroupedMaxGroups, " groups, got ", groups));
  }
  return {};
}

inline Status check_scales(const GroupedGemmParams& p) {
  constexpr std::string_view op = kGroupedGemmName;
  constexpr int64_t kBlock = kernels::grouped_gemm::kScaleBlock;
  const int64_t m = p.m(), g = p.groups(), n = p.cols(), k = p.depth();
  if (!p.fp8()) {
    if (p.x_scale) {
      return operand_error(op, "x_scale",
                           StrCat("expected none (x is ", name(p.x.dtype),
                                  "; scales go with fp8 x), got ", describe(*p.x_scale)));
    }
    if (p.w_scale) {
      return operand_error(op, "w_scale",
                           StrCat("expected none (x is ", name(p.x.dtype),
                                  "; scales go with fp8 x), got ", describe(*p.w_scale)));
    }
    return {};
  }
  if (p.transpose_w) {
    return InvalidArgument(
        StrCat(op,
               ": attribute transpose_w: the fp8 block-scale grouped GEMM is inference only "
               "(forward, x [M, K] . w[g]^T); got transpose_w with ",
               name(p.x.dtype), " x"));
  }
  if (k % kBlock != 0) {
    return operand_error(op, "x",
                         StrCat("K=", k, " is not a multiple of 128 (the fp8 scale blocks' K)"));
  }
  const int64_t kb = k / kBlock, nb = ceil_div(n, kBlock);
  if (!p.x_scale) {
    return operand_error(op, "x_scale",
                         StrCat("missing: fp8 x needs f32[", m, ",", kb, "] (M x K/128)"));
  }
  const Tensor& xs = *p.x_scale;
  if (xs.dtype != DType::kF32 || xs.rank != 2 || xs.dims[0] != m || xs.dims[1] != kb) {
    return operand_error(op, "x_scale",
                         StrCat("expected f32[", m, ",", kb, "] (M x K/128), got ", describe(xs)));
  }
  if (!p.w_scale) {
    return operand_error(
        op, "w_scale",
        StrCat("missing: fp8 w needs f32[", g, ",", nb, ",", kb, "] (G x ceil(N/128) x K/128)"));
  }
  const Tensor& ws = *p.w_scale;
  if (ws.dtype != DType::kF32 || ws.rank != 3 || ws.dims[0] != g || ws.dims[1] != nb ||
      ws.dims[2] != kb) {
    return operand_error(op, "w_scale",
                         StrCat("expected f32[", g, ",", nb, ",", kb,
                                "] (G x ceil(N/128) x K/128), got ", describe(ws)));
  }
  return {};
}

inline Status check(const GroupedGemmParams& p) {
  constexpr std::string_view op = kGroupedGemmName;
  const DType t = p.x.dtype;
  if ((!is_16bit_float(t) && !is_e4m3(t)) || p.x.rank != 2) {
    return operand_error(op, "x",
                         StrCat("expected bf16, f16, f8_e4m3fn or f8_e4m3fnuz [M,",
                                p.transpose_w ? "N" : "K", "], got ", describe(p.x)));
  }
  const int64_t m = p.m(), red = p.x.dims[1];
  const int wdim = p.transpose_w ? 1 : 2;  // w's dim contracted with x
  if (p.w.rank != 3 || p.w.dtype != t || p.w.dims[wdim] != red) {
    return operand_error(
        op, "w",
        StrCat("expected ", name(t), p.transpose_w ? "[G," : "[G,N,", red,
               p.transpose_w ? ",K]" : "]", " (", p.transpose_w ? "N" : "K", " and dtype from x",
               p.transpose_w ? "; transpose_w" : "", "), got ", describe(p.w)));
  }
  const int64_t g = p.groups(), n = p.cols(), k = p.depth();
  JAX_AITER_RETURN_IF_ERROR(check_group_sizes(op, p.group_sizes, g, "w"));
  if (m > kMax32 || n > kMax32 || k > kMax32) {
    return operand_error(op, "x",
                         StrCat("too large for 32-bit indexing: M=", m, " N=", n, " K=", k));
  }
  JAX_AITER_RETURN_IF_ERROR(check_scales(p));
  const DType o = p.out.dtype;
  const bool out_type = p.fp8() ? o == DType::kBF16 : is_out_float(o);
  if (!out_type || p.out.rank != 2 || p.out.dims[0] != m || p.out.dims[1] != n) {
    return operand_error(
        op, "out",
        StrCat("expected ", p.fp8() ? "bf16" : "bf16, f16 or f32", "[", m, ",", n, "] (M from x, ",
               p.transpose_w ? "K" : "N", " from w), got ", describe(p.out)));
  }
  if (m == 0 || n == 0 || k == 0 ||
      g == 0) {  // last: everything else about an empty call is checked
    return empty_problem(
        op, m == 0 || k == 0 ? "x" : "w",
        StrCat("expected a non-empty product, got M=", m, " N=", n, " K=", k, " G=", g));
  }
  for (auto [tensor, name] : {std::pair{&p.x, "x"}, std::pair{&p.w, "w"},
                              std::pair{&p.group_sizes, "group_sizes"}, std::pair{&p.out, "out"}}) {
    if (tensor->data == nullptr) return operand_error(op, name, "null data pointer");
  }
  if (p.x_scale && p.x_scale->data == nullptr) {
    return operand_error(op, "x_scale", "null data pointer");
  }
  if (p.w_scale && p.w_scale->data == nullptr) {
    return operand_error(op, "w_scale", "null data pointer");
  }
  return {};
}

inline Status check(const GroupedGemmWgradParams& p) {
  constexpr std::string_view op = kGroupedGemmWgradName;
  if (!is_16bit_float(p.dy.dtype) || p.dy.rank != 2) {
    return operand_error(op, "dy", StrCat("expected bf16 or f16 [M,N], got ", describe(p.dy)));
  }
  const int64_t m = p.m(), n = p.n();
  if (p.x.dtype != p.dy.dtype || p.x.rank != 2 || p.x.dims[0] != m) {
    return operand_error(op, "x",
                         StrCat("expected ", name(p.dy.dtype), "[", m,
                                ",K] (M and dtype from dy), got ", describe(p.x)));
  }
  const int64_t k = p.k();
  if (p.group_sizes.dtype != DType::kI32 || p.group_sizes.rank != 1) {
    return operand_error(op, "group_sizes",
                         StrCat("expected i32[G], got ", describe(p.group_sizes)));
  }
  const int64_t g = p.groups();
  JAX_AITER_RETURN_IF_ERROR(check_group_sizes(op, p.group_sizes, g, "group_sizes"));
  if (m > kMax32 || n > kMax32 || k > kMax32) {
    return operand_error(op, "dy",
                         StrCat("too large for 32-bit indexing: M=", m, " N=", n, " K=", k));
  }
  if (!is_out_float(p.dw.dtype) || p.dw.rank != 3 || p.dw.dims[0] != g || p.dw.dims[1] != n ||
      p.dw.dims[2] != k) {
    return operand_error(
        op, "dw",
        StrCat("expected bf16, f16 or f32[", g, ",", n, ",", k,
               "] (G from group_sizes, N from dy, K from x), got ", describe(p.dw)));
  }
  if (m == 0 || n == 0 || k == 0 || g == 0) {
    return empty_problem(
        op,
        m == 0 || n == 0 ? "dy"
        : k == 0         ? "x"
                         : "group_sizes",
        StrCat("expected a non-empty product, got M=", m, " N=", n, " K=", k, " G=", g));
  }
  for (auto [tensor, name] : {std::pair{&p.dy, "dy"}, std::pair{&p.x, "x"},
                              std::pair{&p.group_sizes, "group_sizes"}, std::pair{&p.dw, "dw"}}) {
    if (tensor->data == nullptr) return operand_error(op, name, "null data pointer");
  }
  return {};
}

}  // namespace grouped_gemm_detail

}  // namespace jax_aiter::ops
