// Fused MoE's parameters: what AITER's one-stage fmoe kernels take (csrc/py_itfs_cu/asm_fmoe.cu
// at e4048607a535, entries fmoe_g1u1, fmoe_g1u1_tkw1 and fmoe_fp8_blockscale_g1u1), over the
// layout moe_sorting makes of the router's choice:
//   out[t] = sum over k of w[t,k] * (w2[e] . (act(w1_gate[e] . x[t]) * (w1_up[e] . x[t]))),
//   e = the k-th expert of token t, everything dequantized, summed in f32
// with w1 [E, 2 inter, hidden] (gate rows, then up rows: "g1u1") and w2 [E, hidden, inter], both
// pre-shuffled per expert in the (16, 16) layout (kernels/shared/aiter_fmoe.h). The routing op
// (moe_sorting) and the whole op build on this; it stays plain data so they can extend it. Pure
// C++ (no HIP, no XLA).
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/core/status.hpp"
#include "jax_aiter/kernels/shared/aiter_fmoe.h"
#include "jax_aiter/kernels/shared/moe_routing.h"
#include "jax_aiter/ops/aiter_knobs.hpp"
#include "jax_aiter/ops/dispatch.hpp"
#include "jax_aiter/ops/fp8_format.hpp"
#include "jax_aiter/ops/tensor.hpp"

namespace jax_aiter::ops {

inline constexpr std::string_view kFusedMoeName = "aiter.fused_moe";

enum class MoeActivation : uint8_t { kSilu, kGelu };
// The names the FFI attribute `activation` takes (ffi/spec.hpp), in the enum's order.
inline constexpr std::array<std::string_view, 2> kMoeActivationNames{"silu", "gelu"};
constexpr std::span<const std::string_view> attr_names(MoeActivation) {
  return kMoeActivationNames;
}

// How x and the weights are quantized (the scales' shapes, T tokens, E experts, I = inter, H =
// hidden, all f32):
//   kNone          x, w1, w2 and out of one 16-bit dtype; no scales
//   kFp8PerToken   x, w1, w2 fp8; x_scale [T, 1], w1_scale [E, 2I, 1], w2_scale [E, H, 1]
//   kInt8PerToken  the same in int8
//   kFp8BlockScale w1, w2 fp8 in 128x128 blocks: w1_scale [E, 2I/128, H/128], w2_scale
//                  [E, H/128, I/128]; x fp8 in 1x128 blocks with x_scale [H/128, T] (transposed,
//                  as AITER's quantizer stores it for these kernels), or x bf16 with no x_scale
//                  (the kernel quantizes it: AITER's "a16" blockscaleBf16 kernels)
// fp8 is the target arch's format (ops/fp8_format.hpp).
enum class MoeQuant : uint8_t { kNone, kFp8PerToken, kInt8PerToken, kFp8BlockScale };
// The names the FFI attribute `quant` takes, in the enum's order.
inline constexpr std::array<std::string_view, 4> kMoeQuantNames{
    "none", "fp8_per_token", "int8_per_token", "fp8_block_scale"};
constexpr std::span<const std::string_view> attr_names(MoeQuant) { return kMoeQuantNames; }

struct FusedMoeParams {
  Tensor x;   // [T, H]
  Tensor w1;  // [E, 2I, H], shuffled
  Tensor w2;  // [E, H, I], shuffled
  // moe_sorting's layout at block size block_m: the (k << 24 | t) ids of every (token, k) grouped
  // by expert, each expert's run padded to whole blocks with (topk << 24 | T), their weights, the
  // expert of each block, and how many sorted rows are valid (AITER allocates i32 [2]).
  Tensor sorted_token_ids;                            // i32 [S]
  Tensor sorted_weights;                              // f32 [S]
  Tensor sorted_expert_ids;                           // i32 [B], B = ceil(S / block_m)
  Tensor num_valid_ids;                               // i32 [1] or [2]
  std::optional<Tensor> x_scale, w1_scale, w2_scale;  // by quant (MoeQuant)
  Tensor out;                                         // bf16 or f16 [T, H]
  int64_t topk = 1;
  int64_t block_m = kernels::aiter_fmoe::kDefaultBlockM;
  MoeActivation activation = MoeActivation::kSilu;
  MoeQuant quant = MoeQuant::kNone;
  // Scale each (token, k)'s activation by its weight before the down GEMM rather than its output
  // after (AITER's doweight_stage1, the "tkw1" kernels): the same sum, rounded differently.
  bool weight_first = false;
  // The layout w1 and w2 were shuffled into, as the caller states it (Python's
  // ShuffledWeight.layout): the family's "16x16", so an unshuffled weight cannot pass by accident.
  std::string_view w_layout;
  AiterKnobs aiter;  // kernel (an fmoe row); splitk 0 or 1 only (the ASM tier declines a split)
  // AITER_ENABLE_VSKIP: true (AITER's default) picks among the kernels that skip the padding
  // blocks past num_valid_ids, false among those that do not. A parameter, not the environment.
  bool aiter_vskip = true;
  Dispatch dispatch;

  int64_t tokens() const { return x.rank == 2 ? x.dims[0] : 0; }
  int64_t hidden() const { return x.rank == 2 ? x.dims[1] : 0; }
  int64_t experts() const { return w1.rank == 3 ? w1.dims[0] : 0; }
  int64_t inter() const { return w2.rank == 3 ? w2.dims[2] : 0; }
  int64_t sorted_rows() const { return sorted_token_ids.rank == 1 ? sorted_token_ids.dims[0] : 0; }
  int64_t blocks() const { return sorted_expert_ids.rank == 1 ? sorted_expert_ids.dims[0] : 0; }
};

namespace fused_moe_detail {

inline bool is_16bit(DType d) { return d == DType::kBF16 || d == DType::kF16; }

inline Status check_scale(const std::optional<Tensor>& s, std::string_view name,
                          std::initializer_list<int64_t> dims,
                          std::string_view op = kFusedMoeName) {
  const Tensor want = Tensor::over(nullptr, DType::kF32, dims);
  if (!s || s->dtype != DType::kF32 || !s->same_shape(want)) {
    return operand_error(op, name,
                         StrCat("expected ", describe(want), ", got ", s ? describe(*s) : "none"));
  }
  // (An empty one may have no data: an empty problem is answered after every shape is checked.)
  return s->data != nullptr || s->elements() == 0 ? Status{}
                                                  : operand_error(op, name, "null data pointer");
}

inline Status check_no_scale(const std::optional<Tensor>& s, std::string_view name,
                             std::string_view why, std::string_view op = kFusedMoeName) {
  if (!s) return {};
  return operand_error(op, name, StrCat("expected none (", why, "), got ", describe(*s)));
}

// The weights' layout: shuffled (16, 16), so H and I in the layout's K blocks of 32.
inline Status check_layout(std::string_view op, std::string_view w_layout, int64_t h, int64_t i) {
  namespace L = kernels::aiter_fmoe;
  if (w_layout != L::kShuffleName) {
    return operand_error(op, "w1",
                         StrCat("expected weights pre-shuffled in the (16, 16) layout (w_layout "
                                "\"16x16\": jax_aiter.shuffle_weight), got w_layout \"",
                                w_layout, "\""));
  }
  if (h % L::kShuffleK != 0 || i % L::kShuffleK != 0) {
    return operand_error(op, "w1",
                         StrCat("H = ", h, " and I = ", i,
                                " must be multiples of 32 (the shuffled layout's K block)"));
  }
  return {};
}

// The sorting's layout (moe_sorting at block_m) and topk, for any of the op's targets (P has
// sorted_token_ids, sorted_weights, sorted_expert_ids, num_valid_ids, topk, block_m, sorted_rows(),
// blocks()), for T tokens, E experts, H, I.
template <typename P>
Status check_sorting(std::string_view op, const P& p, int64_t t, int64_t e, int64_t h, int64_t i) {
  namespace L = kernels::aiter_fmoe;
  // The sorted ids hold a token in 24 bits and a top-k slot in the 8 above it, the padding id's
  // slot being topk itself: at most 255, moe_sorting's limit too (a slot from 128 up sets the
  // i32's sign bit, as in AITER). AITER's launcher passes topk through unchecked
  // (asm_fmoe.cu) and its own sort makes such ids (moe_sorting_opus.h widens its mesh from topk
  // 255 on), so its kernels are fed them; nothing in the packing needs a narrower limit (our
  // twins read a row's token as its low 24 bits and its weight from sorted_weights).
  if (p.topk < 1 || p.topk > e || p.topk > kernels::moe_routing::kMaxTopk) {
    return InvalidArgument(
        StrCat(op, ": attribute topk: expected 1..min(E, 255) (E = ", e, "), got ", p.topk));
  }
  if (p.block_m < 1 || p.block_m > 256) {
    return InvalidArgument(StrCat(
        op, ": attribute block_m: expected the sorting's block size 1..256, got ", p.block_m));
  }
  if (t >= (int64_t{1} << L::kTokenBits) || e > std::numeric_limits<int32_t>::max() ||
      h * 2 * i > std::numeric_limits<int32_t>::max()) {
    return operand_error(op, "x",
                         StrCat("too large: T = ", t, " (< 2^24), H = ", h, ", I = ", i,
                                " (an expert's w1 under 2^31 bytes)"));
  }
  const int64_t s = p.sorted_rows(), nb = p.blocks();
  if (p.sorted_token_ids.dtype != DType::kI32 || p.sorted_token_ids.rank != 1) {
    return operand_error(op, "sorted_token_ids",
                         StrCat("expected i32[S], got ", describe(p.sorted_token_ids)));
  }
  if (p.sorted_weights.dtype != DType::kF32 || p.sorted_weights.rank != 1 ||
      p.sorted_weights.dims[0] != s) {
    return operand_error(op, "sorted_weights",
                         StrCat("expected f32[", s, "] (S from sorted_token_ids), got ",
                                describe(p.sorted_weights)));
  }
  if (p.sorted_expert_ids.dtype != DType::kI32 || p.sorted_expert_ids.rank != 1 ||
      nb != (s + p.block_m - 1) / p.block_m) {
    return operand_error(op, "sorted_expert_ids",
                         StrCat("expected i32[", (s + p.block_m - 1) / p.block_m,
                                "] (ceil(S / block_m)), got ", describe(p.sorted_expert_ids)));
  }
  if (p.num_valid_ids.dtype != DType::kI32 || p.num_valid_ids.rank != 1 ||
      p.num_valid_ids.dims[0] < 1 || p.num_valid_ids.dims[0] > 2) {
    return operand_error(op, "num_valid_ids",
                         StrCat("expected i32[1] or i32[2], got ", describe(p.num_valid_ids)));
  }
  return {};
}

// The contract every tier relies on. The fp8 format is the tier's to check (it depends on the
// planned arch).
inline Status check(const FusedMoeParams& p) {
  constexpr std::string_view op = kFusedMoeName;
  namespace L = kernels::aiter_fmoe;
  if (p.x.rank != 2) return operand_error(op, "x", StrCat("expected [T, H], got ", describe(p.x)));
  const int64_t t = p.tokens(), h = p.hidden();
  if (p.w1.rank != 3 || p.w1.dims[2] != h || p.w1.dims[1] % 2 != 0) {
    return operand_error(op, "w1",
                         StrCat("expected [E, 2I, ", h, "] (H from x), got ", describe(p.w1)));
  }
  const int64_t e = p.experts(), i = p.w1.dims[1] / 2;
  if (p.w2.rank != 3 || p.w2.dims[0] != e || p.w2.dims[1] != h || p.w2.dims[2] != i ||
      p.w2.dtype != p.w1.dtype) {
    return operand_error(op, "w2",
                         StrCat("expected ", name(p.w1.dtype), "[", e, ",", h, ",", i,
                                "] (E, I from w1, H from x), got ", describe(p.w2)));
  }
  JAX_AITER_RETURN_IF_ERROR(check_layout(op, p.w_layout, h, i));
  switch (p.quant) {
    case MoeQuant::kNone:
      if (!is_16bit(p.x.dtype) || p.w1.dtype != p.x.dtype) {
        return operand_error(op, "x",
                             StrCat("expected x, w1 and w2 all bf16 or all f16 (no "
                                    "quantization), got x ",
                                    describe(p.x), ", w1 ", describe(p.w1)));
      }
      JAX_AITER_RETURN_IF_ERROR(check_no_scale(p.x_scale, "x_scale", "no quantization"));
      JAX_AITER_RETURN_IF_ERROR(check_no_scale(p.w1_scale, "w1_scale", "no quantization"));
      JAX_AITER_RETURN_IF_ERROR(check_no_scale(p.w2_scale, "w2_scale", "no quantization"));
      break;
    case MoeQuant::kFp8PerToken:
    case MoeQuant::kInt8PerToken: {
      const bool fp8 = p.quant == MoeQuant::kFp8PerToken;
      const bool x_ok = fp8 ? is_e4m3(p.x.dtype) : p.x.dtype == DType::kI8;
      if (!x_ok || p.w1.dtype != p.x.dtype) {
        return operand_error(
            op, "x",
            StrCat("expected x, w1 and w2 all ", fp8 ? "fp8" : "i8",
                   " (per-token quantization), got x ", describe(p.x), ", w1 ", describe(p.w1)));
      }
      JAX_AITER_RETURN_IF_ERROR(check_scale(p.x_scale, "x_scale", {t, 1}));
      JAX_AITER_RETURN_IF_ERROR(check_scale(p.w1_scale, "w1_scale", {e, 2 * i, 1}));
      JAX_AITER_RETURN_IF_ERROR(check_scale(p.w2_scale, "w2_scale", {e, h, 1}));
      break;
    }
    case MoeQuant::kFp8BlockScale: {
      constexpr int64_t b = L::kScaleBlock;
      if (!is_e4m3(p.w1.dtype) || !(is_e4m3(p.x.dtype) || p.x.dtype == DType::kBF16) ||
          (is_e4m3(p.x.dtype) && p.x.dtype != p.w1.dtype)) {
        return operand_error(op, "x",
                             StrCat("expected w1, w2 fp8 and x of their fp8 dtype or "
                                    "bf16 (block scales), got x ",
                                    describe(p.x), ", w1 ", describe(p.w1)));
      }
      if (h % b != 0 || i % b != 0) {
        return operand_error(
            op, "w1",
            StrCat("H = ", h, " and I = ", i, " must be multiples of 128 (the scale blocks)"));
      }
      if (is_e4m3(p.x.dtype)) {
        JAX_AITER_RETURN_IF_ERROR(check_scale(p.x_scale, "x_scale", {h / b, t}));
      } else {
        JAX_AITER_RETURN_IF_ERROR(
            check_no_scale(p.x_scale, "x_scale", "x is bf16: the kernel quantizes it"));
      }
      JAX_AITER_RETURN_IF_ERROR(check_scale(p.w1_scale, "w1_scale", {e, 2 * i / b, h / b}));
      JAX_AITER_RETURN_IF_ERROR(check_scale(p.w2_scale, "w2_scale", {e, h / b, i / b}));
      break;
    }
  }
  if (!is_16bit(p.out.dtype) || p.out.rank != 2 || p.out.dims[0] != t || p.out.dims[1] != h) {
    return operand_error(op, "out",
                         StrCat("expected bf16 or f16 [", t, ",", h, "], got ", describe(p.out)));
  }
  if (p.quant == MoeQuant::kNone && p.out.dtype != p.x.dtype) {
    return operand_error(op, "out",
                         StrCat("expected ", name(p.x.dtype), " (like x), got ", describe(p.out)));
  }
  JAX_AITER_RETURN_IF_ERROR(check_sorting(op, p, t, e, h, i));
  const int64_t s = p.sorted_rows();
  if (t == 0 || h == 0 || i == 0 || e == 0 || s == 0) {  // last: all else about it is checked
    return empty_problem(
        op, "x",
        StrCat("expected a non-empty problem, got T=", t, " H=", h, " I=", i, " E=", e, " S=", s));
  }
  for (auto [tensor, name] :
       {std::pair{&p.x, "x"}, std::pair{&p.w1, "w1"}, std::pair{&p.w2, "w2"},
        std::pair{&p.out, "out"}, std::pair{&p.sorted_token_ids, "sorted_token_ids"},
        std::pair{&p.sorted_weights, "sorted_weights"},
        std::pair{&p.sorted_expert_ids, "sorted_expert_ids"},
        std::pair{&p.num_valid_ids, "num_valid_ids"}}) {
    if (tensor->data == nullptr) return operand_error(op, name, "null data pointer");
  }
  return {};
}

}  // namespace fused_moe_detail

}  // namespace jax_aiter::ops
