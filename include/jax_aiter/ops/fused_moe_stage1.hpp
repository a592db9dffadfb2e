// aiter.fused_moe_stage1: the first stage of AITER's two-stage fused MoE, over moe_sorting's
// layout (ops/fused_moe_params.hpp):
//   a[t, k, j] = act(x[t] . w1_gate[e][j]) * (x[t] . w1_up[e][j])  (times w[t, k] with
//   weight_first), e = the k-th expert of token t, everything dequantized, summed in f32
// written bf16 (per-token modes) or fp8 in 1 x 128 blocks with its f32 scales (block scales).
// Stage 2 (the down projection and the top-k sum) is the caller's: AITER runs a CK kernel there,
// ours is portable (python/jax_aiter/fused_moe.py). One tier: AITER's fmoe_2stages ASM kernels
// (kernels/aiter/fmoe_2stages.hpp), chosen and packed as csrc/py_itfs_cu/asm_moe_2stage.cu at
// github.com/ROCm/aiter e4048607a535 (lines cited below as asm_moe_2stage.cu:N) does:
//  - the list (get_cfg, :61-105): x and w1 fp8, per token -> pertokenFp8 (doweight: the sorted
//    weights are passed -> its doweight list); x and w1 int8, per token -> pertokenInt8; x and w1
//    fp8 in 1 x 128 / 128 x 128 blocks -> blockscaleFp8 (its out is fp8). Out bf16 otherwise.
//  - the rule (get_heuristic_kernel, :107-152), over the list's rows built for the arch:
//    candidates tile_m == the sorting's block_m and I % tile_n == 0; each scored by its
//    workgroups tg = I / tile_n x the sorted blocks (sorted_expert_ids' length): CU rounds
//    ceil(tg / CUs), then idle CUs in the last round; the least wins. AITER walks a
//    std::unordered_map and keeps the first it meets on a full tie, so its choice depends on the
//    visiting order exactly where two rows of one (tile_m, tile_n) tie (their tg is equal);
//    ours takes the first in table order (aiter_fmoe_2stages.h states the order).
//  - a forced kernel (AITER's kernelName: symbol or short name) must be a row of the call's list
//    on the arch with tile_m == block_m and I % tile_n == 0 (AITER checks both, :190-199, :220);
//  - AITER's ksplit (a grid of 1 << ksplit in z writing f32 partial gate and up sums, then a
//    separate activation kernel, aiter/fused_moe.py asm_stage1) is declined: split 0 or 1 only.
// The launch (:277-299): 256 threads, grid (ceil(I / tile_n), sorted blocks, 1). AITER allocates
// out with torch.empty and the kernels write only the rows of valid sorted entries; our plan
// zeroes out first, so every byte of the XLA output is defined. Pure C++.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <tuple>
#include <utility>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/core/status.hpp"
#include "jax_aiter/core/verdict.hpp"
#include "jax_aiter/kernels/aiter/fmoe_2stages.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/ops/aiter_knobs.hpp"
#include "jax_aiter/ops/aiter_rules.hpp"
#include "jax_aiter/ops/aiter_tier.hpp"
#include "jax_aiter/ops/dispatch.hpp"
#include "jax_aiter/ops/fp8_format.hpp"
#include "jax_aiter/ops/fused_moe_params.hpp"
#include "jax_aiter/ops/tensor.hpp"

namespace jax_aiter::ops {

inline constexpr std::string_view kFusedMoeStage1Name = "aiter.fused_moe_stage1";

struct FusedMoeStage1Params {
  Tensor x;   // [T, H] fp8 / i8
  Tensor w1;  // [E, 2I, H], shuffled (16, 16)
  // moe_sorting's layout at block_m (as FusedMoeParams).
  Tensor sorted_token_ids;                  // i32 [S]
  Tensor sorted_weights;                    // f32 [S] (read by weight_first only)
  Tensor sorted_expert_ids;                 // i32 [ceil(S / block_m)]
  Tensor num_valid_ids;                     // i32 [1] or [2]
  std::optional<Tensor> x_scale, w1_scale;  // as FusedMoeParams (no w2: stage 2 is the caller's)
  // bf16 [T, topk, I] (per token); block scales: w1's fp8 [T + ceil(4T / 128), topk, I], the
  // scales f32 [T, topk * I / 128] from row T on (kernels/shared/aiter_fmoe_2stages.h).
  Tensor out;
  int64_t topk = 1;
  int64_t block_m = 32;
  MoeActivation activation = MoeActivation::kSilu;
  MoeQuant quant = MoeQuant::kFp8PerToken;
  bool weight_first = false;  // AITER's doweight_stage1: the top-k weight scales a
  std::string_view w_layout;  // "16x16" (FusedMoeParams::w_layout)
  AiterKnobs aiter;           // kernel (an fmoe_2stages row); splitk 0 or 1 only
  Dispatch dispatch;

  int64_t tokens() const { return x.rank == 2 ? x.dims[0] : 0; }
  int64_t hidden() const { return x.rank == 2 ? x.dims[1] : 0; }
  int64_t experts() const { return w1.rank == 3 ? w1.dims[0] : 0; }
  int64_t inter() const { return w1.rank == 3 ? w1.dims[1] / 2 : 0; }
  int64_t sorted_rows() const { return sorted_token_ids.rank == 1 ? sorted_token_ids.dims[0] : 0; }
  int64_t blocks() const { return sorted_expert_ids.rank == 1 ? sorted_expert_ids.dims[0] : 0; }
};

namespace fused_moe_detail {

inline Status check_stage1(const FusedMoeStage1Params& p) {
  constexpr std::string_view op = kFusedMoeStage1Name;
  namespace L2 = kernels::aiter_fmoe_2stages;
  if (p.x.rank != 2) return operand_error(op, "x", StrCat("expected [T, H], got ", describe(p.x)));
  const int64_t t = p.tokens(), h = p.hidden();
  if (p.w1.rank != 3 || p.w1.dims[2] != h || p.w1.dims[1] % 2 != 0) {
    return operand_error(op, "w1",
                         StrCat("expected [E, 2I, ", h, "] (H from x), got ", describe(p.w1)));
  }
  const int64_t e = p.experts(), i = p.inter();
  JAX_AITER_RETURN_IF_ERROR(check_layout(op, p.w_layout, h, i));
  const bool blocks = p.quant == MoeQuant::kFp8BlockScale;
  switch (p.quant) {
    case MoeQuant::kNone:
      return InvalidArgument(
          StrCat(op,
                 ": attribute quant: expected fp8_per_token, int8_per_token or "
                 "fp8_block_scale (AITER's stage-1 kernels read 8-bit x and w1), got none"));
    case MoeQuant::kFp8PerToken:
    case MoeQuant::kInt8PerToken:
    case MoeQuant::kFp8BlockScale: {
      const bool fp8 = p.quant != MoeQuant::kInt8PerToken;
      if (!(fp8 ? is_e4m3(p.x.dtype) : p.x.dtype == DType::kI8) || p.w1.dtype != p.x.dtype) {
        return operand_error(op, "x",
                             StrCat("expected x and w1 both ", fp8 ? "fp8" : "i8", " (quant ",
                                    kMoeQuantNames[static_cast<size_t>(p.quant)], "), got x ",
                                    describe(p.x), ", w1 ", describe(p.w1)));
      }
      if (!blocks) {
        JAX_AITER_RETURN_IF_ERROR(check_scale(p.x_scale, "x_scale", {t, 1}, op));
        JAX_AITER_RETURN_IF_ERROR(check_scale(p.w1_scale, "w1_scale", {e, 2 * i, 1}, op));
        break;
      }
      constexpr int64_t b = L2::kScaleBlock;
      if (h % b != 0 || i % b != 0) {
        return operand_error(
            op, "w1",
            StrCat("H = ", h, " and I = ", i, " must be multiples of 128 (the scale blocks)"));
      }
      JAX_AITER_RETURN_IF_ERROR(check_scale(p.x_scale, "x_scale", {h / b, t}, op));
      JAX_AITER_RETURN_IF_ERROR(check_scale(p.w1_scale, "w1_scale", {e, 2 * i / b, h / b}, op));
      break;
    }
  }
  JAX_AITER_RETURN_IF_ERROR(check_sorting(op, p, t, e, h, i));
  const DType out_dtype = blocks ? p.w1.dtype : DType::kBF16;
  const int64_t rows = blocks ? t + L2::stage1_scale_rows(t) : t;
  const Tensor want = Tensor::over(nullptr, out_dtype, {rows, p.topk, i});
  if (p.out.dtype != out_dtype || !p.out.same_shape(want)) {
    return operand_error(
        op, "out",
        StrCat("expected ", describe(want),
               blocks ? " ([T + ceil(4T/128), topk, I]: fp8 values, then their f32 scales)"
                      : " ([T, topk, I])",
               ", got ", describe(p.out)));
  }
  const int64_t s = p.sorted_rows();
  if (t == 0 || h == 0 || i == 0 || e == 0 || s == 0) {
    return empty_problem(
        op, "x",
        StrCat("expected a non-empty problem, got T=", t, " H=", h, " I=", i, " E=", e, " S=", s));
  }
  for (auto [tensor, name] :
       {std::pair{&p.x, "x"}, std::pair{&p.w1, "w1"}, std::pair{&p.out, "out"},
        std::pair{&p.sorted_token_ids, "sorted_token_ids"},
        std::pair{&p.sorted_weights, "sorted_weights"},
        std::pair{&p.sorted_expert_ids, "sorted_expert_ids"},
        std::pair{&p.num_valid_ids, "num_valid_ids"}}) {
    if (tensor->data == nullptr) return operand_error(op, name, "null data pointer");
  }
  return {};
}

}  // namespace fused_moe_detail

// What the fmoe_2stages rule reads of a call (m, n, k: tokens, I, H, for tools).
struct Fmoe2StagesQuery : AiterQuery {
  kernels::AiterFmoe2StagesQuant quant = kernels::AiterFmoe2StagesQuant::kPertokenFp8;
  bool doweight = false;
  int64_t block_m = 32;
  int64_t sub_x = 0;  // the sorted blocks
  int64_t inter = 0;
};

struct Fmoe2StagesScore {
  int64_t rounds = 0, idle = 0;
  constexpr bool better_than(const Fmoe2StagesScore& o) const {
    return rounds != o.rounds ? rounds < o.rounds : idle < o.idle;
  }
};

// AITER's stage-1 fused-MoE family: the facts AiterTier (ops/aiter_tier.hpp) selects and packs
// with.
struct AiterFmoe2Stages : AiterFamily<FusedMoeStage1Params, kernels::kAiterFmoe2StagesRows> {
  using Query = Fmoe2StagesQuery;
  static constexpr std::string_view kNotOnArch =
      "AITER ships its fmoe_2stages kernels for gfx942/gfx950";
  static constexpr std::string_view kFamily = "fmoe_2stages";
  static constexpr std::string_view kNotARow =
      "the forced kernel is not an fmoe_2stages row for this arch";

  static constexpr kernels::AiterFmoe2StagesQuant list_quant(MoeQuant q) {
    using kernels::AiterFmoe2StagesQuant;
    if (q == MoeQuant::kInt8PerToken) return AiterFmoe2StagesQuant::kPertokenInt8;
    if (q == MoeQuant::kFp8BlockScale) return AiterFmoe2StagesQuant::kBlockscaleFp8;
    return AiterFmoe2StagesQuant::kPertokenFp8;
  }
  static constexpr bool in_list(const Row& r, const Fmoe2StagesQuery& q) {
    return r.quant == q.quant && r.doweight == q.doweight;
  }

  static Verdict accepts(const Params& p, const Target& t) {
    if (p.weight_first && p.quant != MoeQuant::kFp8PerToken) {
      return Verdict::no(
          "AITER's doweight stage-1 kernels take fp8 per-token inputs only (weight_first)");
    }
    if (p.quant != MoeQuant::kInt8PerToken) return reads_fp8(p.w1.dtype, t);
    return Verdict::yes();
  }

  static Fmoe2StagesQuery query(const Params& p, const Target& t) {
    Fmoe2StagesQuery q;
    q.m = p.tokens();
    q.n = p.inter();
    q.k = p.hidden();
    q.arch = t.arch;
    q.compute_units = t.compute_units;
    q.knobs = p.aiter;
    q.quant = list_quant(p.quant);
    q.doweight = p.weight_first;
    q.block_m = p.block_m;
    q.sub_x = p.blocks();
    q.inter = p.inter();
    return q;
  }

  static constexpr Verdict gate(const Fmoe2StagesQuery& q) {
    bool listed = false;
    for (const Row& r : kRows) listed = listed || (kernels::on(r, q.arch) && in_list(r, q));
    if (!listed) {
      return Verdict::no("AITER ships no fmoe_2stages kernels of this quantization for this arch");
    }
    if (const auto split = q.knobs.split(); split && *split > 1) {
      return Verdict::no(
          "AITER's stage-1 ksplit path (f32 partial sums, the activation apart) is not taken "
          "(splitk {})",
          *split);
    }
    return Verdict::yes();
  }

  static constexpr Verdict fits(const Row& r, const Fmoe2StagesQuery& q) {
    if (!in_list(r, q)) {
      return Verdict::no(
          "the forced kernel is in another AITER list (quantization or doweight) than the call's");
    }
    if (r.tile_m != q.block_m) {
      return Verdict::no(
          "the forced kernel takes blocks of {} sorted rows; the sorting's block_m is {}", r.tile_m,
          q.block_m);
    }
    if (q.inter % r.tile_n != 0) {
      return Verdict::no("I = {} is not a multiple of the forced kernel's tile N {}", q.inter,
                         r.tile_n);
    }
    return Verdict::yes();
  }

  static constexpr Fmoe2StagesScore score(const Row& r, const Fmoe2StagesQuery& q, int64_t) {
    const auto [rounds, idle] =
        aiter_rules::cu_rounds(q.inter / r.tile_n * q.sub_x, q.compute_units);
    return {rounds, idle};
  }

  static constexpr Verdict none(const Fmoe2StagesQuery& q) {
    return Verdict::no(
        "no AITER fmoe_2stages kernel of the call's list takes I = {} in blocks of {} sorted rows",
        q.inter, q.block_m);
  }

  // AITER's default block_m for the call (the sorting's block size its fused_moe would choose;
  // kernels/shared/aiter_fmoe_2stages.h default_block_m).
  static int64_t default_block_m(const Params& p, const Target& t) {
    return kernels::aiter_fmoe_2stages::default_block_m(p.quant == MoeQuant::kFp8BlockScale,
                                                        p.tokens(), p.topk, p.experts(), p.inter(),
                                                        t.compute_units);
  }

  // As moe_stage1_g1u1 packs it (asm_moe_2stage.cu:226-275), every field written (SMQ, which
  // AITER leaves unset, null; a wide row's total_tgs and ps_deno 0).
  static void pack(const Params& p, const Target& t, const AiterChoice<Row>& c,
                   kernels::Plan& plan) {
    namespace L2 = kernels::aiter_fmoe_2stages;
    const Row& r = *c.row;
    const auto u32 = [](int64_t v) { return static_cast<uint32_t>(v); };
    const int64_t tokens = p.tokens(), h = p.hidden(), i = p.inter();
    kernels::AiterFmoe2StagesWideArgs wide{};
    kernels::AiterFmoe2StagesArgs& a = wide.base;
    a.O = p.out.data;
    a.X = p.x.data;
    a.GU = p.w1.data;
    a.XC = p.num_valid_ids.data;
    a.XQ = p.x_scale ? p.x_scale->data : nullptr;
    a.GUQ = p.w1_scale ? p.w1_scale->data : nullptr;
    a.SMQ = nullptr;
    a.STP = p.sorted_token_ids.data;
    a.SEP = p.sorted_expert_ids.data;
    a.dim = u32(h);
    a.hidden_dim = u32(i);
    a.token_cnt = u32(tokens);
    a.eprt_cnt = u32(p.experts());
    a.Xs = u32(h);  // 1-byte x
    a.GUs = u32(h);
    const int64_t out_bytes = size_bytes(p.out.dtype);
    a.Os = u32(p.topk * i * out_bytes);
    a.eGUs = u32(h * i * 2);  // g1u1: the launcher doubles GUs x I when w1 has 2I rows
    a.eGUQs = p.w1_scale ? u32(p.w1_scale->elements() / p.w1_scale->dims[0] * 4) : 0;
    a.eSMQs = u32(i * 4);
    a.topk = u32(p.topk);
    // The fp8 format, for our twins (AITER's kernels read their arch's own): the first pad byte
    // of the topk slot, as in the one-stage family.
    a.topk.pad[0] = std::byte{
        p.w1.dtype == DType::kF8E4M3FNUZ ? uint8_t{kernels::aiter_fmoe::kFormatFnuz} : uint8_t{0}};
    a.splitk = 0;
    a.activation = p.activation == MoeActivation::kGelu ? L2::kGelu : L2::kSilu;
    a.SW = p.weight_first ? p.sorted_weights.data : nullptr;
    plan.memset(p.out.data, static_cast<uint64_t>(p.out.elements() * out_bytes), 0, "out");
    const kernels::Dim3 grid{u32(ceil_div(i, int64_t{r.tile_n})), u32(p.blocks()), 1};
    const kernels::Dim3 block{L2::kBlockThreads, 1, 1};
    if (r.wide()) {
      plan.launch(r.kernel, grid, block, wide);
    } else {
      plan.launch(r.kernel, grid, block, a);
    }
    plan.note("tile_m", r.tile_m);
    plan.note("tile_n", r.tile_n);
    plan.note("aiter_block_m", default_block_m(p, t));
  }
};

using FusedMoeStage1AsmTier = AiterTier<AiterFmoe2Stages>;

struct FusedMoeStage1 {
  static constexpr std::string_view kName = kFusedMoeStage1Name;
  using Params = FusedMoeStage1Params;
  using Tiers = std::tuple<FusedMoeStage1AsmTier>;

  static Status validate(const Params& p) {
    JAX_AITER_RETURN_IF_ERROR(
        check_aiter_knobs(kName, "fmoe_2stages", kernels::kAiterFmoe2StagesRows, p.aiter));
    return fused_moe_detail::check_stage1(p);
  }
};

}  // namespace jax_aiter::ops
