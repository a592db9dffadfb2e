// FP4 (MXFP4, a4w4) GEMM's parameters and the checks every tier relies on (AITER's
// gemm_a4w4_asm contract, gfx950):
//   out[M,N] bf16 = dequant(a)[M,K] . dequant(b)[N,K]^T
// a, b fp4 e2m1 packed two a byte (low nibble first: AITER's mxfp4_to_f32), u8 [M, K/2] and
// [N, K/2]; dequant(x)[r][k] = e2m1(x[r][k]) * 2^(e8m0 scale[r][k / 32] - 127). b is either
// pre-shuffled (16, 16) (b_layout "16x16": AITER's bpreshuffle = 1 rows) or plain (b_layout
// "none": AITER's noBpreShuffle_256x256 row and our portable kernels). The scales are u8 (or
// e8m0) in AITER's e8m0_shuffle layout, padded: a_scale [roundup(M, 256), roundup(K/32, 8)],
// b_scale [roundup(N, 256), roundup(K/32, 8)] (kernels/shared/aiter_f4gemm.h). Per 32-block the
// products are summed exactly in float, scaled, accumulated in float and rounded to bf16 once.
// AITER's C (bias f32 [M,N]), alpha and beta are not exposed (docs/ops/gemm_fp4.md): the plans pass
// C = null, alpha = 1, beta = 0, as AITER's own gemm_a4w4 does. Pure C++ (no HIP, no XLA).
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>
#include <tuple>
#include <utility>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/core/status.hpp"
#include "jax_aiter/kernels/shared/aiter_f4gemm.h"
#include "jax_aiter/ops/aiter_knobs.hpp"
#include "jax_aiter/ops/dispatch.hpp"
#include "jax_aiter/ops/tensor.hpp"

namespace jax_aiter::ops {

inline constexpr std::string_view kGemmFp4Name = "aiter.gemm_fp4";

struct GemmFp4Params {
  Tensor a;          // u8 (fp4x2) [M, K/2]
  Tensor b;          // u8 (fp4x2) [N, K/2], shuffled or plain as b_layout says
  Tensor a_scale;    // u8 / e8m0 [roundup(M,256), roundup(K/32,8)], e8m0_shuffle layout
  Tensor b_scale;    // u8 / e8m0 [roundup(N,256), roundup(K/32,8)], e8m0_shuffle layout
  Tensor out;        // bf16 [M, N]
  Tensor workspace;  // u8, GemmFp4::workspace_bytes (the sm_90 decode kernel's split partials)
  // The layout b is in, as the caller states it (Python: a ShuffledWeight's layout, or "none"
  // for a plain array): "16x16" or "none". Required, so neither is taken for the other.
  std::string_view b_layout;
  // kernel, splitk (ops/aiter_knobs.hpp; AITER's kernelName / 2^log2_k_split): splitk 0 or 1
  // (none), 2, 4, 8 or 16.
  AiterKnobs aiter;
  Dispatch dispatch;

  int64_t m() const { return a.rank == 2 ? a.dims[0] : 0; }
  int64_t k() const { return a.rank == 2 ? a.dims[1] * 2 : 0; }
  int64_t n() const { return b.rank == 2 ? b.dims[0] : 0; }
  bool b_shuffled() const { return b_layout == kernels::aiter_f4gemm::kShuffleName; }
};

inline constexpr int64_t kGemmFp4MaxSplit = int64_t{1} << kernels::aiter_f4gemm::kMaxLog2Split;

namespace gemm_fp4_detail {

constexpr bool packed_fp4(DType t) { return t == DType::kU8 || t == DType::kF4E2M1x2; }
constexpr bool e8m0(DType t) { return t == DType::kU8 || t == DType::kE8M0; }

inline Status check(const GemmFp4Params& p) {
  constexpr std::string_view op = kGemmFp4Name;
  namespace L = kernels::aiter_f4gemm;
  if (!packed_fp4(p.a.dtype) || p.a.rank != 2) {
    return operand_error(op, "a", StrCat("expected u8[M,K/2] (fp4x2), got ", describe(p.a)));
  }
  const int64_t m = p.m(), k = p.k(), kb = k / 2;
  if (!packed_fp4(p.b.dtype) || p.b.rank != 2 || p.b.dims[1] != kb) {
    return operand_error(
        op, "b", StrCat("expected u8[N,", kb, "] (fp4x2, K/2 from a), got ", describe(p.b)));
  }
  const int64_t n = p.n();
  if (p.b_layout != L::kShuffleName && p.b_layout != L::kPlainName) {
    return operand_error(
        op, "b",
        StrCat("expected b_layout \"16x16\" (pre-shuffled: jax_aiter.shuffle_fp4_weight) or "
               "\"none\" (a plain [N, K/2] weight), got b_layout \"",
               p.b_layout, "\""));
  }
  if (k % 64 != 0) {
    return operand_error(op, "a",
                         StrCat("K=", k,
                                " is not a multiple of 64 (the weight layout's 32-byte K "
                                "block; 32 fp4 values a scale)"));
  }
  if (p.b_shuffled() && n % L::kShuffleN != 0) {
    return operand_error(op, "b",
                         StrCat("N=", n, " is not a multiple of 16 (the shuffled layout's rows)"));
  }
  if (k > (int64_t{1} << 24) || m > std::numeric_limits<int32_t>::max() / 2 ||
      n > std::numeric_limits<int32_t>::max() / 2) {
    return operand_error(
        op, "a", StrCat("too large: M=", m, " N=", n, " K=", k, " (K <= 2^24; M, N < 2^30)"));
  }
  const int64_t sn = L::round_up(k / L::kScaleBlock, L::kScaleColPad);
  for (auto [t, rows, name] :
       {std::tuple{&p.a_scale, m, "a_scale"}, std::tuple{&p.b_scale, n, "b_scale"}}) {
    const int64_t sm = L::round_up(rows, L::kScaleRowPad);
    if (!e8m0(t->dtype) || t->rank != 2 || t->dims[0] != sm || t->dims[1] != sn) {
      return operand_error(
          op, name,
          StrCat("expected u8[", sm, ",", sn, "] (e8m0 in the e8m0_shuffle layout: rows padded to ",
                 "256, K/32 padded to 8; jax_aiter.shuffle_weight(scale, \"e8m0_shuffle\")), got ",
                 describe(*t)));
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
  return {};
}

}  // namespace gemm_fp4_detail

}  // namespace jax_aiter::ops
