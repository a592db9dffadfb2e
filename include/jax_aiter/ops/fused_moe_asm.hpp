// The ASM tier of fused MoE: AITER's one-stage fmoe kernels (kernels/aiter/fmoe.hpp), chosen as
// AITER's launcher chooses them and packed as it packs them. Restated from github.com/ROCm/aiter at
// e4048607a535, csrc/py_itfs_cu/asm_fmoe.cu (lines cited below as asm_fmoe.cu:N).
//
// The list (one AITER CSV) a call reads, by entry point:
//  - fmoe_g1u1 (:527-684): x fp8 -> pertokenFp8, x i8 -> pertokenInt8, of the out dtype and
//    activation; smf 2 with an fc2 smoothing scale (we take none: smf 0);
//  - fmoe_g1u1_tkw1 (:686-754), our weight_first: x fp8 -> pertokenFp8 ..._tkw1;
//  - fmoe_fp8_blockscale_g1u1 (:893-958): out bf16, I % 128 == 0, 128x128 scale blocks; x bf16
//    -> blockscaleBf16 (the kernel quantizes x), x fp8 -> blockscaleFp8.
// The rule (get_heuristic_kernel, :243-322), over the list's rows built for the arch:
//  - candidates: vskip == AITER_ENABLE_VSKIP's (default 1), smf == the call's, subGU_m == the
//    block size (the sorting's block_m for block-scale calls; 32 for the others: the launcher's
//    default, so their sorting must use 32), flat == 0, and subGU_n dividing I;
//  - each is scored by its workgroups tg = I / subGU_n x sub_X, sub_X = the sorted blocks
//    (sorted_expert_ids' length; for tkw1 the estimate ceil(T x topk / 32), :714-715): CU rounds
//    ceil(tg / CUs), then idle CUs in the last round, then a persistent (ps) row over a plain one;
//  - the best wins. Equal rounds and idle CUs mean equal tg, so equal subGU_n: what is left to a
//    tie is ps, which the rule decides. AITER walks a std::unordered_map and compares
//    `rounds < best || (rounds == best && (idle < best_idle || (idle == best_idle && ps)))`: a ps
//    row beats an equal plain one in either visiting order, so its result is order-independent
//    wherever the candidates differ in (subGU_n, ps). In every list it reads they do
//    (test_fused_moe_select checks it); only the g1u0 pertokenInt8 lists at smf 0 repeat a
//    (subGU_n, ps) pair (plain vs atm_opt), and no entry reads those with smf 0. Ours keeps the
//    first in table order on a full tie (rows ordered by atm: plain before atm_opt).
//  - a forced splitk above 1 is declined (the kernels split nothing; AITER's entry points take no
//    splitK);
//  - a forced kernel (AITER's kernelName: symbol or short name) must be a row of the call's list
//    on the arch (AITER fails otherwise, :304-320). AITER launches it unchecked; ours also
//    requires it to fit the call (subGU_m == block_m, subGU_n dividing I), to read the sorted
//    layout (flat 0) and no smoothing scales (smf 0), and says which it does not.
// The launch (FMoeKernel::launch_kernel, :101-240): 256 threads; a ps row with persistent
// workgroups P = tg_num_perCU x CUs and ps_deno = ceil(I / subGU_n) launches P workgroups when
// total_tgs = P / ps_deno x ps_deno > 0, and otherwise (and for plain rows) a grid of
// (ps_deno, sorted blocks). out accumulates atomically over inter tiles and top-k slots, so it
// must start at zero: AITER's moe_sorting zeroes it (its moe_buf); our plan memsets it.
#pragma once

#include <cstdint>
#include <string_view>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/core/verdict.hpp"
#include "jax_aiter/kernels/aiter/fmoe.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/ops/aiter_rules.hpp"
#include "jax_aiter/ops/aiter_tier.hpp"
#include "jax_aiter/ops/fp8_format.hpp"
#include "jax_aiter/ops/fused_moe_params.hpp"

namespace jax_aiter::ops {

// What the fmoe rule reads of a call (m, n, k: tokens, I, H, for tools).
struct FmoeQuery : AiterQuery {
  kernels::AiterFmoeQuant quant = kernels::AiterFmoeQuant::kPertokenFp8;
  DType out = DType::kBF16;
  kernels::AiterFmoeAct act = kernels::AiterFmoeAct::kSilu;
  bool tkw1 = false;
  int smf = 0;    // smoothing scales the call passes (none: 0)
  int vskip = 1;  // AITER_ENABLE_VSKIP
  int64_t block_m = kernels::aiter_fmoe::kDefaultBlockM;
  int64_t sub_x = 0;  // the sorted blocks the rule counts
  int64_t inter = 0;
};

// A row's score: CU rounds, idle CUs in the last round, then persistent over plain.
struct FmoeScore {
  int64_t rounds = 0, idle = 0;
  bool ps = false;

  constexpr bool better_than(const FmoeScore& o) const {
    if (rounds != o.rounds) return rounds < o.rounds;
    if (idle != o.idle) return idle < o.idle;
    return ps && !o.ps;
  }
};

// AITER's one-stage fused-MoE family: the facts AiterTier (ops/aiter_tier.hpp) selects and packs
// with.
struct AiterFmoe : AiterFamily<FusedMoeParams, kernels::kAiterFmoeRows> {
  using Query = FmoeQuery;
  static constexpr std::string_view kNotOnArch = "AITER ships its fmoe kernels for gfx942/gfx950";
  static constexpr std::string_view kFamily = "fmoe";
  static constexpr std::string_view kNotARow = "the forced kernel is not an fmoe row for this arch";

  // The list a call reads (its quant for the 1-byte activations of each entry point).
  static constexpr kernels::AiterFmoeQuant list_quant(MoeQuant q, DType x) {
    using kernels::AiterFmoeQuant;
    if (q == MoeQuant::kInt8PerToken) return AiterFmoeQuant::kPertokenInt8;
    if (q == MoeQuant::kFp8BlockScale) {
      return x == DType::kBF16 ? AiterFmoeQuant::kBlockscaleBf16 : AiterFmoeQuant::kBlockscaleFp8;
    }
    return AiterFmoeQuant::kPertokenFp8;
  }
  static constexpr bool block_scaled(kernels::AiterFmoeQuant q) {
    return q == kernels::AiterFmoeQuant::kBlockscaleFp8 ||
           q == kernels::AiterFmoeQuant::kBlockscaleBf16;
  }
  static constexpr bool in_list(const Row& r, const FmoeQuery& q) {
    return r.g1u1 && r.quant == q.quant && r.out == q.out && r.act == q.act && r.tkw1 == q.tkw1;
  }

  static Verdict accepts(const Params& p, const Target& t) {
    if (p.quant == MoeQuant::kNone) {
      return Verdict::no(
          "AITER has no one-stage fused-MoE kernel for unquantized g1u1 weights (its 16-bit fmoe "
          "kernels are g1u0)");
    }
    if (p.weight_first && p.quant != MoeQuant::kFp8PerToken) {
      return Verdict::no("AITER's weight-first (tkw1) fmoe kernels take fp8 per-token inputs only");
    }
    if (p.quant == MoeQuant::kFp8BlockScale && p.out.dtype != DType::kBF16) {
      return Verdict::no("AITER's block-scale fmoe kernels write bf16 only");
    }
    if (p.quant != MoeQuant::kInt8PerToken) return reads_fp8(p.w1.dtype, t);
    return Verdict::yes();
  }

  static FmoeQuery query(const Params& p, const Target& t) {
    FmoeQuery q;
    q.m = p.tokens();
    q.n = p.inter();
    q.k = p.hidden();
    q.arch = t.arch;
    q.compute_units = t.compute_units;
    q.knobs = p.aiter;
    q.quant = list_quant(p.quant, p.x.dtype);
    q.out = p.out.dtype;
    q.act = p.activation == MoeActivation::kGelu ? kernels::AiterFmoeAct::kGelu
                                                 : kernels::AiterFmoeAct::kSilu;
    q.tkw1 = p.weight_first;
    q.vskip = p.aiter_vskip ? 1 : 0;
    q.block_m = p.block_m;
    q.inter = p.inter();
    // The tkw1 entry estimates the blocks from the tokens at its fixed block of 32.
    q.sub_x = p.weight_first ? ceil_div(p.tokens() * p.topk, kernels::aiter_fmoe::kDefaultBlockM)
                             : p.blocks();
    return q;
  }

  static constexpr Verdict gate(const FmoeQuery& q) {
    bool listed = false;
    for (const Row& r : kRows) listed = listed || (kernels::on(r, q.arch) && in_list(r, q));
    if (!listed) {
      return Verdict::no(
          "AITER ships no fmoe kernels of this quantization, activation and output dtype for "
          "this arch");
    }
    if (const auto split = q.knobs.split(); split && *split > 1) {
      return Verdict::no("AITER's fmoe kernels do not split their GEMMs (splitk {})", *split);
    }
    if (!block_scaled(q.quant) && q.block_m != kernels::aiter_fmoe::kDefaultBlockM) {
      return Verdict::no(
          "AITER's per-token fmoe kernels read blocks of 32 sorted rows; the sorting's block_m "
          "is {}",
          q.block_m);
    }
    return Verdict::yes();
  }

  static constexpr Verdict fits(const Row& r, const FmoeQuery& q) {
    // Flat first: a flat kernel sits in two lists, and runs from neither.
    if (r.flat != 0) {
      return Verdict::no(
          "the forced kernel is a flat kernel (flat {}), which reads unsorted routing; this op "
          "passes moe_sorting's layout",
          r.flat);
    }
    if (!in_list(r, q)) {
      return Verdict::no(
          "the forced kernel is in another AITER list (quantization, activation, output dtype "
          "or tkw1) than the call's");
    }
    if (r.smf != q.smf) {
      return Verdict::no(
          "the forced kernel reads smoothing scales (smf {}), which this op does "
          "not take",
          r.smf);
    }
    if (r.sub_m != q.block_m) {
      return Verdict::no(
          "the forced kernel takes blocks of {} sorted rows; the sorting's block_m is {}", r.sub_m,
          q.block_m);
    }
    if (q.inter % r.sub_n != 0) {
      return Verdict::no("I = {} is not a multiple of the forced kernel's inter tile {}", q.inter,
                         r.sub_n);
    }
    return Verdict::yes();
  }

  // The heuristic takes only rows of the process's vskip (fits says the rest).
  static constexpr bool auto_row(const Row& r, const FmoeQuery& q) { return r.vskip == q.vskip; }

  static constexpr FmoeScore score(const Row& r, const FmoeQuery& q, int64_t) {
    const int64_t tg = q.inter / r.sub_n * q.sub_x;
    const auto [rounds, idle] = aiter_rules::cu_rounds(tg, q.compute_units);
    return {rounds, idle, r.ps};
  }

  static constexpr Verdict none(const FmoeQuery& q) {
    return Verdict::no(
        "no AITER fmoe kernel of the call's list takes I = {} in blocks of {} sorted rows (vskip "
        "{})",
        q.inter, q.block_m, q.vskip);
  }

  // The launch of row r for a call of I = inter over `blocks` sorted blocks on `cus` CUs
  // (asm_fmoe.cu:183-214): the grid, and the ps fields of the struct.
  struct Launch {
    kernels::Dim3 grid;
    uint32_t total_tgs, ps_deno;
    bool persistent;
  };
  static constexpr Launch launch_of(const Row& r, int64_t inter, int64_t blocks, int cus) {
    namespace L = kernels::aiter_fmoe;
    const uint32_t deno = L::ps_deno(static_cast<uint32_t>(inter), static_cast<uint32_t>(r.sub_n));
    const uint32_t persistent = r.ps ? static_cast<uint32_t>(r.tg_num_per_cu * cus) : 0;
    const uint32_t total = L::total_tgs(persistent, deno);
    if (persistent != 0 && total > 0) return {{persistent, 1, 1}, total, deno, true};
    return {{deno, static_cast<uint32_t>(blocks), 1}, total, deno, false};
  }

  // As AITER's launch_kernel<1, 2> packs it (1-byte weights, 16-bit out), every field written
  // (the rest of the slots, and a wide row's a2, a2q, zero).
  static void pack(const Params& p, const Target& t, const AiterChoice<Row>& c,
                   kernels::Plan& plan) {
    const Row& r = *c.row;
    const auto u32 = [](int64_t v) { return static_cast<uint32_t>(v); };
    const int64_t tokens = p.tokens(), h = p.hidden(), i = p.inter(), e = p.experts();
    const auto expert_bytes = [](const std::optional<Tensor>& s) -> uint32_t {
      return s ? static_cast<uint32_t>(s->elements() / s->dims[0] * 4) : 0;
    };
    kernels::AiterFmoeWideArgs wide{};
    kernels::AiterFmoeArgs& a = wide.base;
    a.O = p.out.data;
    a.X = p.x.data;
    a.GU = p.w1.data;
    a.XC = p.num_valid_ids.data;
    a.D = p.w2.data;
    a.XQ = p.x_scale ? p.x_scale->data : nullptr;
    a.GUQ = p.w1_scale ? p.w1_scale->data : nullptr;
    a.DQ = p.w2_scale ? p.w2_scale->data : nullptr;
    a.SMQ = nullptr;
    a.STP = p.sorted_token_ids.data;
    a.SW = p.sorted_weights.data;
    a.SEP = p.sorted_expert_ids.data;
    a.dim = u32(h);
    a.inter_dim = u32(i);
    a.token_cnt = u32(tokens);
    a.eprt_cnt = u32(e);
    a.Xs = u32(h * static_cast<int64_t>(size_bytes(p.x.dtype)));
    a.GUs = u32(h);
    a.Ds = u32(i);
    a.Os = u32(h * 2);
    a.eGUs = u32(h * i * 2);  // g1u1: the launcher doubles GUs x I when w1 has 2I rows
    a.eDs = u32(i * h);
    a.eGUQs = expert_bytes(p.w1_scale);
    a.eDQs = expert_bytes(p.w2_scale);
    a.eSMQs = u32(i * 4);
    a.topk = u32(p.topk);
    // The fp8 format, for our twins (AITER's kernels read their arch's own).
    a.topk.pad[0] = std::byte{
        p.w1.dtype == DType::kF8E4M3FNUZ ? uint8_t{kernels::aiter_fmoe::kFormatFnuz} : uint8_t{0}};
    const Launch l = launch_of(r, i, p.blocks(), t.compute_units);
    a.total_tgs = l.total_tgs;
    a.ps_deno = l.ps_deno;
    // Atomic accumulation over inter tiles and top-k slots.
    plan.memset(p.out.data, static_cast<uint64_t>(tokens * h * 2), 0, "out");
    const kernels::Dim3 block{kernels::aiter_fmoe::kBlockThreads, 1, 1};
    if (r.wide()) {
      plan.launch(r.kernel, l.grid, block, wide);
    } else {
      plan.launch(r.kernel, l.grid, block, a);
    }
    plan.note("sub_m", r.sub_m);
    plan.note("sub_n", r.sub_n);
    plan.note("persistent", l.persistent ? 1 : 0);
  }
};

using FusedMoeAsmTier = AiterTier<AiterFmoe>;

}  // namespace jax_aiter::ops
