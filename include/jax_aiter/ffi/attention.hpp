// How flash attention meets XLA (absent optional inputs arrive as u8[0]):
//   aiter.flash_attn_fwd  (q, k, v, bias?, alibi_slopes?, cu_seqlens_q?, cu_seqlens_k?, rng_key?,
//                          shard?, q_descale?, k_descale?, v_descale?) -> (out, lse)
//   aiter.flash_attn_bwd  (dout, q, k, v, out, lse, bias?, alibi_slopes?, cu_seqlens_q?,
//                          cu_seqlens_k?, rng_key?, shard?) -> (dq, dk, dv, dbias, workspace)
//   aiter.attn_dropout_mask (rng_key, shard?) -> keep
// Attributes: softmax_scale, causal, window_left, window_right, dropout_p, max_seqlen_q,
// max_seqlen_k, bf16_cvt; the backward adds deterministic and atomic32. dbias is f32[0] when there
// is no bias. max_seqlen_q / max_seqlen_k (varlen, >= 1, at most the totals) only size the
// launches: cu_seqlens are device data the handler never reads, and a sequence longer than its
// maximum is still computed whole, forward and backward, on every tier.
//
// shard: int32[4] {b0, h0, r0, sq_total} when this call is one shard of a larger call split along
// batch, query heads or query rows (context parallelism: q's rows split, k and v whole along the
// sequence). This call's batch b, query head h and query row i are the whole call's b0 + b,
// h0 + h and r0 + i; sq_total is the whole call's number of query rows (0: this call's own sq).
// The kernels read it from device memory (the caller computes it on the device, e.g. from
// jax.lax.axis_index: every device runs one program), and use the global indices for the dropout
// mask (the same bits as the unsharded call) and to align causal masks, windows and ALiBi to the
// whole call's bottom-right corner. Absent: unsharded. Every other operand is this call's slice
// as usual (bias and alibi_slopes sliced too); a row shard's dk and dv are partial sums over its
// queries, for the caller to sum over the shards. Varlen mode (cu_seqlens given) never splits the
// sequence dim: r0 and sq_total must be 0 (b0 counts sequences); nothing checks this. AITER's ASM
// tier takes no shard (our portable kernels serve such calls). For attn_dropout_mask, keep is the
// whole call's mask at (b0 + b, h0 + h, r0 + i, j) (sq_total unused).
//
// q_descale, k_descale, v_descale: float32 [1] each, given exactly when q, k, v are fp8 (e4m3fn or
// e4m3fnuz, one format): the forward then attends over the dequantised inputs (descale * x) and
// out is bf16 (ops/attention_params.hpp). The backward takes no fp8.
#pragma once

#include <array>

#include "jax_aiter/ffi/binder.hpp"
#include "jax_aiter/ffi/spec.hpp"
#include "jax_aiter/ops/attention.hpp"

namespace jax_aiter::ffi {

namespace attention_spec {
template <typename P>
constexpr auto options() {
  using O = ops::AttnOptions;
  return std::array{attr_in<&P::opt, &O::softmax_scale>("softmax_scale", kRequired),
                    attr_in<&P::opt, &O::causal>("causal"),
                    attr_in<&P::opt, &O::window_left>("window_left"),
                    attr_in<&P::opt, &O::window_right>("window_right"),
                    attr_in<&P::opt, &O::dropout_p>("dropout_p"),
                    attr_in<&P::opt, &O::max_seqlen_q>("max_seqlen_q"),
                    attr_in<&P::opt, &O::max_seqlen_k>("max_seqlen_k"),
                    attr_in<&P::opt, &O::bf16_cvt>("bf16_cvt")};
}
}  // namespace attention_spec

template <>
struct FfiSpec<ops::FlashAttnFwd> {
  using P = ops::FlashAttnFwd::Params;
  static constexpr std::array operands{input("q", &P::q),
                                       input("k", &P::k),
                                       input("v", &P::v),
                                       optional_input("bias", &P::bias),
                                       optional_input("alibi_slopes", &P::alibi_slopes),
                                       optional_input("cu_seqlens_q", &P::cu_seqlens_q),
                                       optional_input("cu_seqlens_k", &P::cu_seqlens_k),
                                       optional_input("rng_key", &P::rng_key),
                                       optional_input("shard", &P::shard),
                                       optional_input("q_descale", &P::q_descale),
                                       optional_input("k_descale", &P::k_descale),
                                       optional_input("v_descale", &P::v_descale),
                                       output("out", &P::out),
                                       output("lse", &P::lse)};
  static constexpr auto attributes = attention_spec::options<P>();
};

template <>
struct FfiSpec<ops::FlashAttnBwd> {
  using P = ops::FlashAttnBwd::Params;
  static constexpr std::array operands{input("dout", &P::dout),
                                       input("q", &P::q),
                                       input("k", &P::k),
                                       input("v", &P::v),
                                       input("out", &P::out),
                                       input("lse", &P::lse),
                                       optional_input("bias", &P::bias),
                                       optional_input("alibi_slopes", &P::alibi_slopes),
                                       optional_input("cu_seqlens_q", &P::cu_seqlens_q),
                                       optional_input("cu_seqlens_k", &P::cu_seqlens_k),
                                       optional_input("rng_key", &P::rng_key),
                                       optional_input("shard", &P::shard),
                                       output("dq", &P::dq),
                                       output("dk", &P::dk),
                                       output("dv", &P::dv),
                                       output("dbias", &P::dbias),
                                       workspace(&P::workspace)};
  static constexpr auto attributes = [] {
    constexpr auto opts = attention_spec::options<P>();
    std::array<AttrSpec<P>, opts.size() + 2> all{};
    for (size_t i = 0; i < opts.size(); ++i) all[i] = opts[i];
    all[opts.size()] = attr<&P::deterministic>("deterministic");
    all[opts.size() + 1] = attr<&P::atomic32>("atomic32");
    return all;
  }();
};

template <>
struct FfiSpec<ops::AttnDropoutMask> {
  using P = ops::AttnDropoutMask::Params;
  static constexpr std::array operands{
      input("rng_key", &P::rng_key), optional_input("shard", &P::shard), output("keep", &P::keep)};
  static constexpr std::array attributes{attr<&P::dropout_p>("dropout_p", kRequired)};
};

// This header's targets, for JAX_AITER_DEFINE_OP_HANDLERS("attention", Backend) (ops.cmake).
template <>
struct OpHandlers<"attention">
    : HandlerList<ops::FlashAttnFwd, ops::FlashAttnBwd, ops::AttnDropoutMask> {};

}  // namespace jax_aiter::ffi
