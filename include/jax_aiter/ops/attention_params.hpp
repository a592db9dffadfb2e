// Flash attention's parameters (forward and backward, batch and varlen) and the checks every tier
// relies on; AttnProblem, the normalised facts each tier's gate reads. Pure C++ (no HIP, no XLA).
//
// Layouts (strides follow from the shapes: every operand is dense, row-major):
//   batch:  q [b, sq, hq, d], k [b, sk, hk, d], v [b, sk, hk, dv], out [b, sq, hq, dv],
//           lse float32 [b, hq, sq]
//   varlen: q [total_q, hq, d], k [total_k, hk, d], v [total_k, hk, dv], out [total_q, hq, dv],
//           lse float32 [hq, total_q]; cu_seqlens_q/k int32 [nseq + 1]; max_seqlen_q/k should
//           bound every sequence, but the offsets are device data the host never reads: they
//           only size the launches, and a longer sequence is still computed whole.
// The math, the mask and the dropout RNG are those of kernels/shared/attention.h.
// shard: optional int32[4] {b0, h0, r0, sq_total}, this call's place in the whole call it is a
// shard of (kernels/shared/attention.h, "Sharded calls"): device data, read by the kernels only.
//
// FP8 forward (AITER's v3 "fp8bf16" kernels' contract): q, k, v of one e4m3 format (e4m3fn or
// e4m3fnuz: which one a tier reads is ops/fp8_format.hpp's rule), each with a per-tensor float32
// descale [1] (device data): the call computes attention of q_descale * q, k_descale * k and
// v_descale * v, and writes out in bf16 (lse float32 as ever). Forward only: the backward takes
// 16-bit inputs (AITER has no fp8 backward either).
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/core/status.hpp"
#include "jax_aiter/ops/dispatch.hpp"
#include "jax_aiter/ops/fp8_format.hpp"
#include "jax_aiter/ops/tensor.hpp"

namespace jax_aiter::ops {

inline constexpr std::string_view kFlashAttnFwdName = "aiter.flash_attn_fwd";
inline constexpr std::string_view kFlashAttnBwdName = "aiter.flash_attn_bwd";
inline constexpr std::string_view kAttnDropoutMaskName = "aiter.attn_dropout_mask";

// The options both passes take (attributes at the XLA boundary).
struct AttnOptions {
  float softmax_scale = 1.f;
  bool causal = false;
  int64_t window_left = -1;   // keys before the diagonal a query sees (-1: all)
  int64_t window_right = -1;  // keys after it (-1: all; causal makes it 0)
  float dropout_p = 0.f;
  int64_t max_seqlen_q = 0;  // varlen: the longest sequence (required, >= 1); batch: unused
  int64_t max_seqlen_k = 0;
  // AITER's how_v3_bf16_cvt, honoured by its gfx942 ASM kernels (0 round to nearest even,
  // 1 to nearest away from zero, 2 toward zero). AITER's default is 1.
  int64_t bf16_cvt = 1;
};

struct FlashAttnFwdParams {
  Tensor q, k, v;
  std::optional<Tensor> bias;  // [bb, bh, bq, bk], each 1 or b, hq, sq, sk; q's dtype or f32
  std::optional<Tensor> alibi_slopes;                // float32 [hq] or [b, hq]
  std::optional<Tensor> cu_seqlens_q, cu_seqlens_k;  // int32 [nseq + 1] (varlen)
  std::optional<Tensor> rng_key;  // int32 [2]: the dropout key's two u32 words, bitcast
  std::optional<Tensor> shard;    // int32 [4]: {b0, h0, r0, sq_total} (a sharded call)
  // float32 [1] each, with fp8 q, k, v only: the factors that dequantise them.
  std::optional<Tensor> q_descale, k_descale, v_descale;
  Tensor out, lse;
  AttnOptions opt;
  Dispatch dispatch;
};

struct FlashAttnBwdParams {
  Tensor dout, q, k, v, out, lse;
  std::optional<Tensor> bias, alibi_slopes, cu_seqlens_q, cu_seqlens_k, rng_key, shard;
  Tensor dq, dk, dv;
  Tensor dbias;  // float32 [b, hq, sq, sk] with a bias, f32[0] without
  Tensor workspace;
  AttnOptions opt;
  // Bit-identical gradients run to run. Our kernels always are (no atomics); AITER's backward
  // accumulates dq with atomics and is refused when this is set (except where AITER's gate says
  // otherwise).
  bool deterministic = false;
  // AITER's is_v3_atomic_fp32: the ASM backward accumulates dq in float32 (true, AITER's default)
  // or 16-bit.
  bool atomic32 = true;
  Dispatch dispatch;
};

// dropout_mask: keep u8 [b, hq, sq, sk], 1 where the attention kernels keep a score.
struct AttnDropoutMaskParams {
  Tensor rng_key;               // int32 [2] (the key's u32 words, bitcast)
  std::optional<Tensor> shard;  // int32 [4]: {b0, h0, r0, sq_total}; keep is then the whole
                                // call's mask at (b0 + b, h0 + h, r0 + i, j)
  Tensor keep;                  // u8 [b, hq, sq, sk]
  float dropout_p = 0.f;
  Dispatch dispatch;
};

// What every tier's gate and plan reads, normalised once: dims, the mask as (left, right) and its
// kind, and which optional features are on.
struct AttnProblem {
  enum class Mask : uint8_t { kNone, kCausal, kWindow };

  DType dtype = DType::kBF16;  // q's (k's, v's): bf16, f16, or an e4m3 format (fp8 below)
  bool fp8 = false;            // fp8 q, k, v with float32 descales; out bf16 (forward only)
  bool varlen = false;
  int64_t batch = 0;                   // b, or the number of sequences in varlen mode
  int64_t seqlen_q = 0, seqlen_k = 0;  // varlen: max_seqlen_q / max_seqlen_k (launch sizes)
  int64_t total_q = 0, total_k = 0;    // varlen: rows of q / k; batch: b * sq, b * sk
  int64_t heads_q = 0, heads_k = 0;
  int64_t head_dim = 0, head_dim_v = 0;
  int64_t window_left = -1, window_right = -1;  // normalised: -1 where the bound is a no-op
  Mask mask = Mask::kNone;
  bool has_bias = false, has_alibi = false, has_dropout = false;
  // A shard of a larger call (its offsets are device data: only their presence is known here).
  bool sharded = false;
  float softmax_scale = 1.f;
  int bf16_cvt = 1;
  bool deterministic = false;  // backward only
  bool atomic32 = true;        // backward only
  // The window as the caller gave it: AITER's Python gate classifies windows from these (the
  // ASM tier follows it, ops/attention_asm.hpp); every kernel reads the normalised one above.
  bool causal = false;
  int64_t given_left = -1, given_right = -1;

  int64_t group() const { return heads_k > 0 ? heads_q / heads_k : 0; }
};

namespace attention_detail {

// (left, right) with the no-op bounds made -1: left >= sk - 1 sees every key before the diagonal
// for every query, right >= sq - 1 every key after it (kernels/shared/attention.h attn_visible).
// In varlen mode sk and sq are the totals, not max_seqlen_k / max_seqlen_q: the offsets are device
// data, and a sequence longer than its maximum is computed whole, with its window.
// A row shard's first row sits r0 rows into a whole call of sq_total rows, unknown here (device
// data): its right bound is a no-op only when right >= sq_total - 1 - r0, so a sharded call keeps
// it unless it is at least 2^31 - 2 (sq_total is an int32). (Left stays safe: no query's diagonal
// passes the last key.)
inline void normalise_window(AttnProblem& p, const AttnOptions& o) {
  p.causal = o.causal;
  p.given_left = o.window_left;
  p.given_right = o.window_right;
  int64_t left = o.window_left < 0 ? -1 : o.window_left;
  int64_t right = o.causal ? 0 : (o.window_right < 0 ? -1 : o.window_right);
  const int64_t sq = p.varlen ? p.total_q : p.seqlen_q, sk = p.varlen ? p.total_k : p.seqlen_k;
  if (left >= sk - 1) left = -1;
  const int64_t no_op_right = p.sharded ? std::numeric_limits<int32_t>::max() - 1 : sq - 1;
  if (right >= no_op_right) right = -1;
  p.window_left = left;
  p.window_right = right;
  p.mask = left < 0 && right < 0    ? AttnProblem::Mask::kNone
           : left < 0 && right == 0 ? AttnProblem::Mask::kCausal
                                    : AttnProblem::Mask::kWindow;
}

constexpr bool is_16bit_float(DType t) { return t == DType::kBF16 || t == DType::kF16; }

// The dtype of out (and, in the backward, of dout, dq, dk, dv): q's, or bf16 for fp8 q.
constexpr DType out_dtype(const AttnProblem& p) { return p.fp8 ? DType::kBF16 : p.dtype; }

inline std::string dims_string(std::initializer_list<int64_t> dims) {
  std::string s = "[";
  bool first = true;
  for (int64_t d : dims) {
    if (!first) s += ",";
    s += std::to_string(d);
    first = false;
  }
  return s + "]";
}

inline bool has_dims(const Tensor& t, std::initializer_list<int64_t> dims) {
  if (t.rank != static_cast<int>(dims.size())) return false;
  int i = 0;
  for (int64_t d : dims) {
    if (t.dims[i++] != d) return false;
  }
  return true;
}

// The shard operand, when present: int32[4].
inline Status expect_shard(std::string_view op, const std::optional<Tensor>& shard) {
  if (!shard) return {};
  if (shard->dtype != DType::kI32 || !has_dims(*shard, {4})) {
    return operand_error(op, "shard",
                         StrCat("expected int32[4] {b0, h0, r0, sq_total} (this call's place in "
                                "the whole call), got ",
                                describe(*shard)));
  }
  if (shard->data == nullptr) return operand_error(op, "shard", "null data pointer");
  return {};
}

// Checks `t` is exactly dtype[dims]; the message says where the expectation comes from.
inline Status expect(std::string_view op, std::string_view operand, const Tensor& t, DType dtype,
                     std::initializer_list<int64_t> dims, std::string_view why) {
  if (t.dtype != dtype || !has_dims(t, dims)) {
    return operand_error(
        op, operand,
        StrCat("expected ", name(dtype), dims_string(dims), " (", why, "), got ", describe(t)));
  }
  if (t.data == nullptr && t.elements() > 0) return operand_error(op, operand, "null data pointer");
  return {};
}

// The problem of q, k, v and the options, checking everything about them that both passes share.
// fp8_ok: the forward, which also takes e4m3 q, k, v (checked with their descales by its caller).
inline Expected<AttnProblem> problem(std::string_view op, const Tensor& q, const Tensor& k,
                                     const Tensor& v, const std::optional<Tensor>& bias,
                                     const std::optional<Tensor>& alibi,
                                     const std::optional<Tensor>& cu_q,
                                     const std::optional<Tensor>& cu_k,
                                     const std::optional<Tensor>& rng_key,
                                     const std::optional<Tensor>& shard, const AttnOptions& o,
                                     bool fp8_ok) {
  AttnProblem p;
  if (!is_16bit_float(q.dtype) && !(fp8_ok && is_e4m3(q.dtype))) {
    return operand_error(op, "q",
                         StrCat("expected dtype bf16 or f16",
                                fp8_ok ? " (or f8_e4m3fn / f8_e4m3fnuz with descales)"
                                       : " (fp8 attention is forward-only: no backward takes it)",
                                ", got ", name(q.dtype)));
  }
  p.dtype = q.dtype;
  p.fp8 = is_e4m3(q.dtype);
  if (cu_q.has_value() != cu_k.has_value()) {
    return operand_error(op, cu_q ? "cu_seqlens_k" : "cu_seqlens_q",
                         "expected cu_seqlens_q and cu_seqlens_k together (varlen) or neither");
  }
  p.varlen = cu_q.has_value();
  const int lead = p.varlen ? 1 : 2;  // dims before (heads, head_dim)
  if (q.rank != lead + 2) {
    return operand_error(
        op, "q",
        StrCat("expected ", p.varlen ? "[total_q, hq, d] (varlen)" : "[b, sq, hq, d]", ", got ",
               describe(q)));
  }
  if (k.rank != lead + 2 || k.dtype != q.dtype) {
    return operand_error(op, "k",
                         StrCat("expected ", name(q.dtype),
                                p.varlen ? "[total_k, hk, d] (varlen; dtype from q)"
                                         : "[b, sk, hk, d] (dtype from q)",
                                ", got ", describe(k)));
  }
  p.heads_q = q.dims[lead];
  p.head_dim = q.dims[lead + 1];
  p.heads_k = k.dims[lead];
  if (p.varlen) {
    p.total_q = q.dims[0];
    p.total_k = k.dims[0];
  } else {
    p.batch = q.dims[0];
    p.seqlen_q = q.dims[1];
    p.seqlen_k = k.dims[1];
    if (k.dims[0] != p.batch) {
      return operand_error(op, "k",
                           StrCat("expected batch ", p.batch, " (from q), got ", describe(k)));
    }
    p.total_q = p.batch * p.seqlen_q;
    p.total_k = p.batch * p.seqlen_k;
  }
  if (k.dims[lead + 1] != p.head_dim) {
    return operand_error(op, "k",
                         StrCat("expected head dim ", p.head_dim, " (from q), got ", describe(k)));
  }
  // hq = 0 is an empty problem (refused last, see refuse_empty); hk must still divide it.
  if (p.heads_k < 1 ? p.heads_q != 0 : p.heads_q % p.heads_k != 0) {
    return operand_error(
        op, "k",
        StrCat("expected a number of heads that divides q's (", p.heads_q, "), got ", p.heads_k));
  }
  if (v.rank != lead + 2 || v.dtype != q.dtype || v.dims[0] != k.dims[0] ||
      (!p.varlen && v.dims[1] != k.dims[1]) || v.dims[lead] != p.heads_k) {
    return operand_error(op, "v",
                         StrCat("expected ", name(q.dtype),
                                p.varlen ? dims_string({k.dims[0], p.heads_k})
                                         : dims_string({k.dims[0], k.dims[1], p.heads_k}),
                                " + [dv] (from k), got ", describe(v)));
  }
  p.head_dim_v = v.dims[lead + 1];
  for (auto [name_, dim] :
       {std::pair<std::string_view, int64_t>{"q", p.head_dim}, {"v", p.head_dim_v}}) {
    if (dim < 8 || dim > 256 || dim % 8 != 0) {
      return operand_error(op, name_,
                           StrCat("expected a head dim that is a multiple of 8 in [8, 256] (the "
                                  "Python API pads to one), got ",
                                  dim));
    }
  }
  if (p.varlen) {
    if (cu_q->dtype != DType::kI32 || cu_q->rank != 1 || cu_q->dims[0] < 2) {
      return operand_error(
          op, "cu_seqlens_q",
          StrCat("expected int32[nseq + 1] with nseq >= 1, got ", describe(*cu_q)));
    }
    p.batch = cu_q->dims[0] - 1;
    JAX_AITER_RETURN_IF_ERROR(
        expect(op, "cu_seqlens_k", *cu_k, DType::kI32, {p.batch + 1}, "nseq from cu_seqlens_q"));
    if (o.max_seqlen_q < 1 || o.max_seqlen_k < 1) {
      return InvalidArgument(StrCat(op, ": attribute ",
                                    o.max_seqlen_q < 1 ? "max_seqlen_q" : "max_seqlen_k",
                                    ": expected the longest sequence (>= 1) in varlen mode, got ",
                                    o.max_seqlen_q < 1 ? o.max_seqlen_q : o.max_seqlen_k));
    }
    if ((o.max_seqlen_q > p.total_q && p.total_q > 0) ||
        (o.max_seqlen_k > p.total_k && p.total_k > 0)) {
      return InvalidArgument(StrCat(
          op, ": attribute ", o.max_seqlen_q > p.total_q ? "max_seqlen_q" : "max_seqlen_k",
          ": expected at most the total rows (", o.max_seqlen_q > p.total_q ? p.total_q : p.total_k,
          "), got ", o.max_seqlen_q > p.total_q ? o.max_seqlen_q : o.max_seqlen_k));
    }
    p.seqlen_q = o.max_seqlen_q;
    p.seqlen_k = o.max_seqlen_k;
  }
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  if (p.total_q > kMax || p.total_k > kMax || p.batch > 65535 || p.heads_q > 65535) {
    return operand_error(op, "q",
                         StrCat("too large: total_q=", p.total_q, " total_k=", p.total_k,
                                " batch=", p.batch, " hq=", p.heads_q));
  }
  if (bias) {
    if (p.varlen) return operand_error(op, "bias", "not supported in varlen mode");
    const Tensor& t = *bias;
    const int64_t full[4] = {p.batch, p.heads_q, p.seqlen_q, p.seqlen_k};
    const DType own = out_dtype(p);  // q's, or bf16 with fp8 q
    bool ok = t.rank == 4 && (t.dtype == own || t.dtype == DType::kF32);
    for (int i = 0; ok && i < 4; ++i) ok = t.dims[i] == 1 || t.dims[i] == full[i];
    if (!ok) {
      return operand_error(op, "bias",
                           StrCat("expected ", name(own), " or f32 [b|1, hq|1, sq|1, sk|1] = ",
                                  dims_string({full[0], full[1], full[2], full[3]}),
                                  " or broadcastable, got ", describe(t)));
    }
    if (t.data == nullptr && t.elements() > 0) {
      return operand_error(op, "bias", "null data pointer");
    }
    p.has_bias = true;
  }
  if (alibi) {
    const Tensor& t = *alibi;
    const bool ok =
        t.dtype == DType::kF32 && (has_dims(t, {p.heads_q}) || has_dims(t, {p.batch, p.heads_q}));
    if (!ok) {
      return operand_error(op, "alibi_slopes",
                           StrCat("expected f32[", p.heads_q, "] or f32",
                                  dims_string({p.batch, p.heads_q}), ", got ", describe(t)));
    }
    if (t.data == nullptr && t.elements() > 0) {
      return operand_error(op, "alibi_slopes", "null data pointer");
    }
    p.has_alibi = true;
  }
  if (!(o.dropout_p >= 0.f && o.dropout_p < 1.f)) {
    return InvalidArgument(
        StrCat(op, ": attribute dropout_p: expected 0 <= p < 1, got ", o.dropout_p));
  }
  p.has_dropout = o.dropout_p > 0.f;
  if (p.has_dropout) {
    if (!rng_key)
      return operand_error(
          op, "rng_key", "expected int32[2] (a key's two u32 words) when dropout_p > 0, got none");
    JAX_AITER_RETURN_IF_ERROR(expect(op, "rng_key", *rng_key, DType::kI32, {2}, "a dropout key"));
  }
  if (!std::isfinite(o.softmax_scale)) {
    return InvalidArgument(
        StrCat(op, ": attribute softmax_scale: expected a finite number, got ", o.softmax_scale));
  }
  if (o.window_left < -1 || o.window_right < -1) {
    return InvalidArgument(StrCat(op, ": attribute ",
                                  o.window_left < -1 ? "window_left" : "window_right",
                                  ": expected -1 (unbounded) or >= 0, got ",
                                  o.window_left < -1 ? o.window_left : o.window_right));
  }
  if (o.bf16_cvt < 0 || o.bf16_cvt > 2) {
    return InvalidArgument(
        StrCat(op, ": attribute bf16_cvt: expected 0, 1 or 2, got ", o.bf16_cvt));
  }
  JAX_AITER_RETURN_IF_ERROR(expect_shard(op, shard));
  p.sharded = shard.has_value();
  p.softmax_scale = o.softmax_scale;
  p.bf16_cvt = static_cast<int>(o.bf16_cvt);
  normalise_window(p, o);
  return p;
}

// Last in validate(), once every operand and attribute is checked: a problem with no query row,
// key row, sequence or head is an empty problem (ops/tensor.hpp). The Python API answers those
// itself (empty results, or zeros and lse +inf).
inline Status refuse_empty(std::string_view op, const AttnProblem& p) {
  if (p.total_q == 0 || p.total_k == 0 || p.batch == 0 || p.seqlen_q == 0 || p.seqlen_k == 0 ||
      p.heads_q == 0) {
    return empty_problem(op, p.total_q == 0 || p.seqlen_q == 0 || p.heads_q == 0 ? "q" : "k",
                         StrCat("expected a non-empty problem, got b=", p.batch, " sq=", p.seqlen_q,
                                " sk=", p.seqlen_k, " hq=", p.heads_q));
  }
  return {};
}

// The lse shape of a problem: [b, hq, sq], or [hq, total_q] in varlen mode.
inline Status expect_lse(std::string_view op, const Tensor& lse, const AttnProblem& p) {
  if (p.varlen) return expect(op, "lse", lse, DType::kF32, {p.heads_q, p.total_q}, "[hq, total_q]");
  return expect(op, "lse", lse, DType::kF32, {p.batch, p.heads_q, p.seqlen_q}, "[b, hq, sq]");
}

// Whether t has q's (or v's, for `like_v`) shape with head dim `dim`.
inline Status expect_like(std::string_view op, std::string_view operand, const Tensor& t,
                          const Tensor& like, std::string_view like_name) {
  if (t.dtype != like.dtype || !t.same_shape(like)) {
    return operand_error(
        op, operand,
        StrCat("expected ", describe(like), " (like ", like_name, "), got ", describe(t)));
  }
  if (t.data == nullptr && t.elements() > 0) return operand_error(op, operand, "null data pointer");
  return {};
}

// The forward's descales: float32 [1] each, all three with fp8 q, none without.
inline Status expect_descales(std::string_view op, const FlashAttnFwdParams& p,
                              const AttnProblem& prob) {
  const std::pair<std::string_view, const std::optional<Tensor>*> all[] = {
      {"q_descale", &p.q_descale}, {"k_descale", &p.k_descale}, {"v_descale", &p.v_descale}};
  for (const auto& [operand, t] : all) {
    if (!prob.fp8) {
      if (t->has_value()) {
        return operand_error(op, operand,
                             StrCat("expected none with ", name(prob.dtype),
                                    " q (descales go with fp8 q, k, v), got ", describe(**t)));
      }
      continue;
    }
    if (!t->has_value()) {
      return operand_error(op, operand,
                           StrCat("expected f32[1] (a per-tensor descale of fp8 ", name(prob.dtype),
                                  " q, k, v), got none"));
    }
    JAX_AITER_RETURN_IF_ERROR(
        expect(op, operand, **t, DType::kF32, {1}, "a per-tensor descale of fp8 q, k, v"));
  }
  return {};
}

}  // namespace attention_detail

// The forward's problem, every operand checked.
inline Expected<AttnProblem> attn_problem(const FlashAttnFwdParams& p) {
  constexpr std::string_view op = kFlashAttnFwdName;
  namespace D = attention_detail;
  auto prob = D::problem(op, p.q, p.k, p.v, p.bias, p.alibi_slopes, p.cu_seqlens_q, p.cu_seqlens_k,
                         p.rng_key, p.shard, p.opt, /*fp8_ok=*/true);
  if (!prob) return prob;
  JAX_AITER_RETURN_IF_ERROR(D::expect_descales(op, p, *prob));
  Tensor want = p.q;
  want.dims[want.rank - 1] = prob->head_dim_v;
  want.dtype = D::out_dtype(*prob);
  if (p.out.dtype != want.dtype || !p.out.same_shape(want)) {
    return operand_error(op, "out",
                         StrCat("expected ", describe(want), " (q's shape with v's head dim",
                                prob->fp8 ? ", bf16 for fp8 q" : "", "), got ", describe(p.out)));
  }
  JAX_AITER_RETURN_IF_ERROR(D::expect_lse(op, p.lse, *prob));
  JAX_AITER_RETURN_IF_ERROR(D::refuse_empty(op, *prob));
  if (p.out.data == nullptr) return operand_error(op, "out", "null data pointer");
  return prob;
}

// The backward's problem, every operand checked.
inline Expected<AttnProblem> attn_problem(const FlashAttnBwdParams& p) {
  constexpr std::string_view op = kFlashAttnBwdName;
  namespace D = attention_detail;
  auto prob = D::problem(op, p.q, p.k, p.v, p.bias, p.alibi_slopes, p.cu_seqlens_q, p.cu_seqlens_k,
                         p.rng_key, p.shard, p.opt, /*fp8_ok=*/false);
  if (!prob) return prob;
  Tensor want = p.q;
  want.dims[want.rank - 1] = prob->head_dim_v;
  if (p.out.dtype != p.q.dtype || !p.out.same_shape(want)) {
    return operand_error(
        op, "out",
        StrCat("expected ", describe(want), " (the forward's output), got ", describe(p.out)));
  }
  JAX_AITER_RETURN_IF_ERROR(D::expect_like(op, "dout", p.dout, p.out, "out"));
  JAX_AITER_RETURN_IF_ERROR(D::expect_lse(op, p.lse, *prob));
  JAX_AITER_RETURN_IF_ERROR(D::expect_like(op, "dq", p.dq, p.q, "q"));
  JAX_AITER_RETURN_IF_ERROR(D::expect_like(op, "dk", p.dk, p.k, "k"));
  JAX_AITER_RETURN_IF_ERROR(D::expect_like(op, "dv", p.dv, p.v, "v"));
  if (prob->has_bias) {
    JAX_AITER_RETURN_IF_ERROR(
        D::expect(op, "dbias", p.dbias, DType::kF32,
                  {prob->batch, prob->heads_q, prob->seqlen_q, prob->seqlen_k},
                  "[b, hq, sq, sk]: the scores' gradient, before the bias's broadcast"));
  } else if (p.dbias.elements() != 0) {
    return operand_error(op, "dbias",
                         StrCat("expected an empty f32[0] with no bias, got ", describe(p.dbias)));
  }
  JAX_AITER_RETURN_IF_ERROR(D::refuse_empty(op, *prob));
  prob->deterministic = p.deterministic;
  prob->atomic32 = p.atomic32;
  return prob;
}

}  // namespace jax_aiter::ops
