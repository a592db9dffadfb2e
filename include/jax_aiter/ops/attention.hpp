// Flash attention, forward and backward, and the dropout mask its kernels use. Tiers, in order:
// AITER's ASM v3 kernels (ops/attention_asm.hpp) and our portable kernels
// (ops/attention_portable.hpp). Pure C++ (no HIP, no XLA).
//
//   aiter.flash_attn_fwd:   out = softmax(scale q k^T (+ bias) (+ alibi), masked, dropped) v; lse
//   aiter.flash_attn_bwd:   dq, dk, dv (and dbias, the scores' gradient) from dout, out and lse
//   aiter.attn_dropout_mask: the keep-mask (b, hq, sq, sk) of a dropout key
#pragma once

#include <algorithm>
#include <cstdint>
#include <tuple>

#include "jax_aiter/ops/attention_asm.hpp"
#include "jax_aiter/ops/attention_params.hpp"
#include "jax_aiter/ops/attention_portable.hpp"

namespace jax_aiter::ops {

struct FlashAttnFwd {
  static constexpr std::string_view kName = kFlashAttnFwdName;
  using Params = FlashAttnFwdParams;
  using Tiers = std::tuple<FlashAttnFwdAsmTier, FlashAttnFwdPortableTier>;

  static Status validate(const Params& p) { return attn_problem(p).status(); }
};

struct FlashAttnBwd {
  static constexpr std::string_view kName = kFlashAttnBwdName;
  using Params = FlashAttnBwdParams;
  using Tiers = std::tuple<FlashAttnBwdAsmTier, FlashAttnBwdPortableTier>;

  static Status validate(const Params& p) { return attn_problem(p).status(); }

  // Sized before any device is known (Python, at trace time): room for either tier's pieces on
  // any device, unless the call is forced onto the portable tier (Python forces it off AMD, where
  // the ASM tier cannot be chosen: AITER's a32 dq accumulator and expanded GQA dk/dv are hundreds
  // of MiB at s = 4096). 0 for a call that does not validate (it never runs).
  static int64_t workspace_bytes(const Params& p) {
    const auto prob = attn_problem(p);
    if (!prob) return 0;
    const int64_t portable = FlashAttnBwdPortableTier::workspace_bytes(*prob);
    if (p.dispatch.tier == FlashAttnBwdPortableTier::kName) return portable;
    return std::max(portable, flash_attn_bwd_asm_workspace_bytes(*prob));
  }
};

struct AttnDropoutMask {
  static constexpr std::string_view kName = kAttnDropoutMaskName;
  using Params = AttnDropoutMaskParams;
  using Tiers = std::tuple<AttnDropoutMaskPortableTier>;

  static Status validate(const Params& p) {
    constexpr std::string_view op = kName;
    namespace D = attention_detail;
    JAX_AITER_RETURN_IF_ERROR(D::expect(op, "rng_key", p.rng_key, DType::kI32, {2},
                                        "a dropout key's two u32 words, bitcast"));
    JAX_AITER_RETURN_IF_ERROR(D::expect_shard(op, p.shard));
    const Tensor& k = p.keep;
    if (k.dtype != DType::kU8 || k.rank != 4) {
      return operand_error(op, "keep", StrCat("expected u8[b, hq, sq, sk], got ", describe(k)));
    }
    if (k.dims[2] > 65535 || k.dims[0] * k.dims[1] > 65535 ||
        k.dims[3] > std::numeric_limits<int32_t>::max()) {
      return operand_error(op, "keep",
                           StrCat("expected 1 <= sq <= 65535, 1 <= b * hq <= 65535 and sk >= 1, "
                                  "got ",
                                  describe(k)));
    }
    if (!(p.dropout_p >= 0.f && p.dropout_p < 1.f)) {
      return InvalidArgument(
          StrCat(op, ": attribute dropout_p: expected 0 <= p < 1, got ", p.dropout_p));
    }
    if (k.elements() == 0) {  // last: everything else about an empty call is checked
      return empty_problem(op, "keep", StrCat("expected a non-empty mask, got ", describe(k)));
    }
    if (k.data == nullptr) return operand_error(op, "keep", "null data pointer");
    return {};
  }
};

}  // namespace jax_aiter::ops
