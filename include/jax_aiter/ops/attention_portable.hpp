// The portable tiers of flash attention and the dropout-mask op: our kernels
// (kernels/attention.hpp) on every arch, for every call AITER's ASM tier does not take.
//
//   forward:  one launch of jax_aiter_attn_fwd_<dtype>_d<D> (D: the smallest head-dim bucket that
//             holds d and dv), grid (query tiles, hq, b); fp8 q, k, v: jax_aiter_attn_fwd_fp8_d<D>,
//             which reads the descales and writes bf16 (the format a plan for an arch reads is
//             ops/fp8_format.hpp's rule; the host's own plans take either).
//   backward: pre (delta = rowsum(dout * out) into the workspace), dkdv (one block per key tile and
//             key head, looping over its query heads), dq (one block per query tile and query head,
//             writing dbias rows too); on sm_90 the calls attn_bwd_takes_wgmma names run wgmma
//             dkdv and dq kernels of the same contract. No atomics anywhere, so gradients are the
//             same bits every run, deterministic or not.
// Strides in elements, computed from the dense layouts of ops/attention_params.hpp. A shard
// operand is passed to every kernel as is (its offsets are device data the kernels read).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/core/verdict.hpp"
#include "jax_aiter/kernels/attention.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/ops/attention_params.hpp"
#include "jax_aiter/ops/fp8_format.hpp"

namespace jax_aiter::ops {

namespace attention_detail {

// (batch, seq, head) strides of a dense [b, s, h, d] tensor, or [total, h, d] in varlen mode.
struct Strides3 {
  long long batch, seq, head;
};
constexpr Strides3 strides_of(const Tensor& t, bool varlen) {
  const int lead = varlen ? 1 : 2;
  const long long head = t.dims[lead + 1];
  const long long seq = t.dims[lead] * head;
  return {varlen ? 0 : t.dims[1] * seq, seq, head};
}

// lse / delta: [b, hq, sq], or [hq, total_q] in varlen mode (rows of a head contiguous).
struct LseStrides {
  long long batch, head;
};
constexpr LseStrides lse_strides(const AttnProblem& p) {
  return p.varlen ? LseStrides{0, p.total_q} : LseStrides{p.heads_q * p.seqlen_q, p.seqlen_q};
}

// A [bb, bh, bq, bk] bias read as [b, hq, sq, sk]: stride 0 along its broadcast dims.
struct BiasStrides {
  long long batch = 0, head = 0, row = 0, col = 0;
};
constexpr BiasStrides bias_strides(const Tensor& bias) {
  const long long col = 1, row = bias.dims[3], head = row * bias.dims[2],
                  batch = head * bias.dims[1];
  return {bias.dims[0] == 1 ? 0 : batch, bias.dims[1] == 1 ? 0 : head, bias.dims[2] == 1 ? 0 : row,
          bias.dims[3] == 1 ? 0 : col};
}

// The dropout threshold: a score is dropped when its Philox word is below it.
constexpr unsigned dropout_threshold(float p) {
  const double t = std::floor(static_cast<double>(p) * 4294967296.0);
  return t >= 4294967295.0 ? 4294967295u : static_cast<unsigned>(t);
}

constexpr const void* data_or_null(const std::optional<Tensor>& t) { return t ? t->data : nullptr; }

// The fields forward and backward share, filled into either args struct.
template <typename Args>
void fill_common(Args& a, const AttnProblem& p, const Tensor& q, const Tensor& k, const Tensor& v,
                 const std::optional<Tensor>& bias, const std::optional<Tensor>& alibi,
                 const std::optional<Tensor>& cu_q, const std::optional<Tensor>& cu_k,
                 const std::optional<Tensor>& rng_key, const std::optional<Tensor>& shard,
                 float dropout_p) {
  a.q = q.data;
  a.k = k.data;
  a.v = v.data;
  a.bias = data_or_null(bias);
  a.alibi_slopes = static_cast<const float*>(data_or_null(alibi));
  a.cu_seqlens_q = static_cast<const int*>(data_or_null(cu_q));
  a.cu_seqlens_k = static_cast<const int*>(data_or_null(cu_k));
  a.rng_key = p.has_dropout ? static_cast<const unsigned*>(rng_key->data) : nullptr;
  a.shard = static_cast<const int*>(data_or_null(shard));
  const Strides3 sq = strides_of(q, p.varlen), sk = strides_of(k, p.varlen),
                 sv = strides_of(v, p.varlen);
  a.q_batch_stride = sq.batch, a.q_seq_stride = sq.seq, a.q_head_stride = sq.head;
  a.k_batch_stride = sk.batch, a.k_seq_stride = sk.seq, a.k_head_stride = sk.head;
  a.v_batch_stride = sv.batch, a.v_seq_stride = sv.seq, a.v_head_stride = sv.head;
  const BiasStrides sb = bias ? bias_strides(*bias) : BiasStrides{};
  a.bias_batch_stride = sb.batch, a.bias_head_stride = sb.head;
  a.bias_row_stride = sb.row, a.bias_col_stride = sb.col;
  const LseStrides sl = lse_strides(p);
  a.lse_batch_stride = sl.batch, a.lse_head_stride = sl.head;
  a.batch = static_cast<int>(p.batch);
  a.seqlen_q = static_cast<int>(p.seqlen_q);
  a.seqlen_k = static_cast<int>(p.seqlen_k);
  a.total_q = static_cast<int>(p.total_q);
  a.total_k = static_cast<int>(p.total_k);
  a.heads_q = static_cast<int>(p.heads_q);
  a.heads_k = static_cast<int>(p.heads_k);
  a.head_dim = static_cast<int>(p.head_dim);
  a.head_dim_v = static_cast<int>(p.head_dim_v);
  a.window_left = static_cast<int>(p.window_left);
  a.window_right = static_cast<int>(p.window_right);
  a.alibi_batch_stride = alibi && alibi->rank == 2 ? static_cast<int>(p.heads_q) : 0;
  a.dropout_threshold = p.has_dropout ? dropout_threshold(dropout_p) : 0u;
  a.scale = p.softmax_scale;
  a.dropout_scale = p.has_dropout ? 1.f / (1.f - dropout_p) : 1.f;
  a.bias_dtype = bias ? kernels::attn_bias_dtype(bias->dtype) : kernels::attention::kAttnF32;
}

constexpr kernels::Dim3 grid3(int64_t rows, int tile, int64_t heads, int64_t batch) {
  return {static_cast<uint32_t>(ceil_div(rows, int64_t{tile})), static_cast<uint32_t>(heads),
          static_cast<uint32_t>(batch)};
}

}  // namespace attention_detail

// The float32 delta (rowsum(dout * out)) the portable backward keeps in its workspace.
constexpr int64_t attn_delta_bytes(const AttnProblem& p) { return p.heads_q * p.total_q * 4; }

// Whether sm_90's wgmma forwards (kernels/shared/attention.h, kWgRowsQ) take a call: bf16 or
// f16 q, k, v with d and dv in the 128 bucket, with every feature (batch or varlen, MHA/GQA/MQA,
// masks and windows, bias, ALiBi, dropout, lse, shards). Everything else runs the mma.sync kernels,
// as on AMD: fp8 (no fp8 wgmma tile yet), the 64 and 256 buckets (one tile shape so far), and a
// bias or ALiBi with a softmax scale whose reciprocal is not finite (0 or below float's normal
// range: the features kernel adds those terms to the scores as terms / scale, see
// wg_score_terms).
constexpr bool attn_fwd_takes_wgmma(const AttnProblem& p, const Target& t) {
  const float scale = p.softmax_scale < 0 ? -p.softmax_scale : p.softmax_scale;
  return t.arch == Arch::kSm90 && !p.fp8 &&
         kernels::attn_head_dim_bucket(p.head_dim, p.head_dim_v) == 1 &&
         (!(p.has_bias || p.has_alibi) || scale >= std::numeric_limits<float>::min());
}
// Which of the two: the features variant for varlen, bias, ALiBi or dropout (their loads, Philox
// and the row-tile loop cost registers and instructions the plain kernel does without; windows
// are the same mask code as causal, so the plain kernel takes them).
constexpr bool attn_fwd_wgmma_features(const AttnProblem& p) {
  return p.varlen || p.has_bias || p.has_alibi || p.has_dropout;
}

// Which backward passes run sm_90's wgmma kernels (kernels/shared/attention.h, kWgBwdKeys): bf16
// or f16, batch mode (dq orders its blocks by seqlen_q), d and dv in the 128 bucket, no bias,
// ALiBi, dropout or window other than bottom-right causal (today the calls attn_fwd_takes_wgmma
// takes, stated apart: the kernels support what is written here, whatever the forward gains);
// each pass behind its own switch. The pre pass is bwd_pre either way. Both passes keep the
// mma.sync kernels' promise: no atomics, dk and dv summed over a key head's query heads in
// registers, the same bits every run.
inline constexpr bool kAttnWgDkdvOn = true;
inline constexpr bool kAttnWgDqOn = true;
struct AttnBwdWgmma {
  bool dkdv, dq;
};
constexpr AttnBwdWgmma attn_bwd_takes_wgmma(const AttnProblem& p, const Target& t) {
  const bool ok = t.arch == Arch::kSm90 && !p.fp8 && !p.varlen && !p.has_bias && !p.has_alibi &&
                  !p.has_dropout && p.window_left < 0 && p.window_right <= 0 &&
                  kernels::attn_head_dim_bucket(p.head_dim, p.head_dim_v) == 1;
  return {ok && kAttnWgDkdvOn, ok && kAttnWgDqOn};
}

struct FlashAttnFwdPortableTier {
  static constexpr std::string_view kName = "portable";

  static Verdict supports(const FlashAttnFwdParams& p, const Target& t) {
    return is_e4m3(p.q.dtype) ? reads_fp8(p.q.dtype, t) : Verdict::yes();
  }

  static void plan(const FlashAttnFwdParams& p, const Target& t, kernels::Plan& plan) {
    namespace D = attention_detail;
    namespace A = kernels::attention;
    const AttnProblem prob = *attn_problem(p);  // validated before any tier is asked
    const int bucket = kernels::attn_head_dim_bucket(prob.head_dim, prob.head_dim_v);
    kernels::AttnFwdArgs a{};
    D::fill_common(a, prob, p.q, p.k, p.v, p.bias, p.alibi_slopes, p.cu_seqlens_q, p.cu_seqlens_k,
                   p.rng_key, p.shard, p.opt.dropout_p);
    a.out = p.out.data;
    a.lse = static_cast<float*>(p.lse.data);
    a.q_descale = static_cast<const float*>(D::data_or_null(p.q_descale));
    a.k_descale = static_cast<const float*>(D::data_or_null(p.k_descale));
    a.v_descale = static_cast<const float*>(D::data_or_null(p.v_descale));
    a.in_dtype = kernels::attn_in_dtype(prob.dtype);
    const D::Strides3 so = D::strides_of(p.out, prob.varlen);
    a.o_batch_stride = so.batch, a.o_seq_stride = so.seq, a.o_head_stride = so.head;
    if (attn_fwd_takes_wgmma(prob, t)) {
      plan.launch(kernels::attn_wg_kernel(prob.dtype, attn_fwd_wgmma_features(prob)),
                  D::grid3(prob.seqlen_q, A::kWgRowsQ, prob.heads_q, prob.batch),
                  {static_cast<uint32_t>(A::kWgThreads), 1, 1}, a, A::kWgSmemBytes);
      plan.note("head_dim_bucket", A::kHeadDims[bucket]);
      plan.note("rows_per_block", A::kWgRowsQ);
      return;
    }
    plan.launch(
        prob.fp8 ? kernels::attn_fp8_kernel(bucket) : kernels::attn_kernels(prob.dtype, bucket).fwd,
        D::grid3(prob.seqlen_q, A::kRowsQ[bucket], prob.heads_q, prob.batch),
        {static_cast<uint32_t>(A::kThreads[bucket]), 1, 1}, a);
    plan.note("head_dim_bucket", A::kHeadDims[bucket]);
    plan.note("rows_per_block", A::kRowsQ[bucket]);
  }
};

struct FlashAttnBwdPortableTier {
  static constexpr std::string_view kName = "portable";

  static int64_t workspace_bytes(const AttnProblem& p) { return attn_delta_bytes(p); }

  static Verdict supports(const FlashAttnBwdParams&, const Target&) { return Verdict::yes(); }

  static void plan(const FlashAttnBwdParams& p, const Target& t, kernels::Plan& plan) {
    namespace D = attention_detail;
    namespace A = kernels::attention;
    const AttnProblem prob = *attn_problem(p);
    const int bucket = kernels::attn_head_dim_bucket(prob.head_dim, prob.head_dim_v);
    kernels::AttnBwdArgs a{};
    D::fill_common(a, prob, p.q, p.k, p.v, p.bias, p.alibi_slopes, p.cu_seqlens_q, p.cu_seqlens_k,
                   p.rng_key, p.shard, p.opt.dropout_p);
    a.out = p.out.data;
    a.dout = p.dout.data;
    a.lse = static_cast<const float*>(p.lse.data);
    a.delta = static_cast<float*>(plan.piece(plan.workspace.add("delta", attn_delta_bytes(prob))));
    a.dq = p.dq.data;
    a.dk = p.dk.data;
    a.dv = p.dv.data;
    a.dbias = prob.has_bias ? static_cast<float*>(p.dbias.data) : nullptr;
    const D::Strides3 so = D::strides_of(p.out, prob.varlen),
                      sdo = D::strides_of(p.dout, prob.varlen),
                      sdq = D::strides_of(p.dq, prob.varlen),
                      sdk = D::strides_of(p.dk, prob.varlen),
                      sdv = D::strides_of(p.dv, prob.varlen);
    a.o_batch_stride = so.batch, a.o_seq_stride = so.seq, a.o_head_stride = so.head;
    a.do_batch_stride = sdo.batch, a.do_seq_stride = sdo.seq, a.do_head_stride = sdo.head;
    a.dq_batch_stride = sdq.batch, a.dq_seq_stride = sdq.seq, a.dq_head_stride = sdq.head;
    a.dk_batch_stride = sdk.batch, a.dk_seq_stride = sdk.seq, a.dk_head_stride = sdk.head;
    a.dv_batch_stride = sdv.batch, a.dv_seq_stride = sdv.seq, a.dv_head_stride = sdv.head;
    if (prob.has_bias) {  // dbias: dense [b, hq, sq, sk]
      a.dbias_row_stride = prob.seqlen_k;
      a.dbias_head_stride = prob.seqlen_q * prob.seqlen_k;
      a.dbias_batch_stride = prob.heads_q * prob.seqlen_q * prob.seqlen_k;
    }
    const kernels::AttnKernels& k = kernels::attn_kernels(prob.dtype, bucket);
    plan.launch(kernels::attn_dtype_kernels(prob.dtype).bwd_pre,
                D::grid3(prob.seqlen_q, A::kPreRows, prob.heads_q, prob.batch),
                {static_cast<uint32_t>(A::kPreThreads), 1, 1}, a);
    const AttnBwdWgmma wg = attn_bwd_takes_wgmma(prob, t);
    const kernels::AttnWgBwdKernels& w = kernels::attn_wg_bwd_kernels(prob.dtype);
    const kernels::Dim3 wg_block{static_cast<uint32_t>(A::kWgThreads), 1, 1};
    if (wg.dkdv) {
      plan.launch(w.dkdv, D::grid3(prob.seqlen_k, A::kWgBwdKeys, prob.heads_k, prob.batch),
                  wg_block, a, A::kWgDkdvSmemBytes);
    } else {
      plan.launch(k.dkdv, D::grid3(prob.seqlen_k, A::kRowsK[bucket], prob.heads_k, prob.batch),
                  {static_cast<uint32_t>(A::kThreads[bucket]), 1, 1}, a);
    }
    if (wg.dq) {
      plan.launch(w.dq, D::grid3(prob.seqlen_q, A::kWgRowsQ, prob.heads_q, prob.batch), wg_block, a,
                  A::kWgDqSmemBytes);
    } else {
      plan.launch(k.dq, D::grid3(prob.seqlen_q, A::kRowsQ[bucket], prob.heads_q, prob.batch),
                  {static_cast<uint32_t>(A::kThreads[bucket]), 1, 1}, a);
    }
    plan.note("head_dim_bucket", A::kHeadDims[bucket]);
  }
};

struct AttnDropoutMaskPortableTier {
  static constexpr std::string_view kName = "portable";

  static Verdict supports(const AttnDropoutMaskParams&, const Target&) { return Verdict::yes(); }

  static void plan(const AttnDropoutMaskParams& p, const Target&, kernels::Plan& plan) {
    namespace A = kernels::attention;
    const int64_t b = p.keep.dims[0], h = p.keep.dims[1], sq = p.keep.dims[2], sk = p.keep.dims[3];
    kernels::AttnDropoutMaskArgs a{};
    a.rng_key = static_cast<const unsigned*>(p.rng_key.data);
    a.shard = static_cast<const int*>(attention_detail::data_or_null(p.shard));
    a.keep = static_cast<unsigned char*>(p.keep.data);
    a.batch = static_cast<int>(b);
    a.heads = static_cast<int>(h);
    a.seqlen_q = static_cast<int>(sq);
    a.seqlen_k = static_cast<int>(sk);
    a.dropout_threshold = attention_detail::dropout_threshold(p.dropout_p);
    plan.launch(kernels::kAttnDropoutMaskKernel,
                {static_cast<uint32_t>(ceil_div(sk, int64_t{4} * A::kMaskThreads)),
                 static_cast<uint32_t>(sq), static_cast<uint32_t>(b * h)},
                {static_cast<uint32_t>(A::kMaskThreads), 1, 1}, a);
  }
};

}  // namespace jax_aiter::ops
