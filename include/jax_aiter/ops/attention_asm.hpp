// The ASM tiers of aiter.flash_attn_fwd / aiter.flash_attn_bwd: AITER's v3 attention kernels
// (kernels/aiter/fmha_v3.hpp), gated, chosen and packed as AITER does (restated from
// github.com/ROCm/aiter at e4048607a535: csrc/cpp_itfs/mha_{fwd,bwd}.cu, the torch wrappers
// csrc/py_itfs_cu/asm_mha_*.cu and the Python gates of aiter/ops/mha.py).
//
// Both gates: not a shard of a larger call (AITER's argument structs have no place for shard
// offsets; a sharded call goes to our portable kernels, which read them).
//
// Forward gate: gfx942 or gfx950; bf16; head dims (128, 128) or (192, 128); no bias, ALiBi or
// dropout; no mask or causal (ours is bottom-right: AITER's mask 2), no sliding window; in batch
// mode seqlen_q > 128 (AITER's Python leaves shorter ones, decode shapes, to CK); for (192, 128)
// each key head's rows span less than 4 GiB (seqlen_k * hk * d * 2 bytes, as AITER's Python
// checks); every byte stride and grid dimension fits the kernel's 32-bit fields and HIP's limits.
// The row is the one of (arch, part, dtype, dims, mask, mode, and on gfx942 bf16_cvt): gfx950
// ignores bf16_cvt (its one build rounds to nearest even). gfx942's part is MI308 on the four
// MI308 PCI chip ids (Target::pci_chip_id), MI300 otherwise.
//
// FP8 forward (AITER's "fp8bf16" rows: fp8 q, k, v, per-tensor float32 descales, bf16 out;
// csrc/cpp_itfs/mha_fwd.cu fmha_fwd_v3 and init_fmha_fwd_v3_args, csrc/py_itfs_cu/asm_mha_fwd.cu,
// aiter/ops/mha.py is_fmha_v3_fp8 / can_impl_fmha_v3_fwd, hsa/<arch>/fmha_v3_fwd/fmha_fwd.csv, all
// at e4048607a5): the same gate with these changes: q, k, v in the arch's fp8 format
// (ops/fp8_format.hpp: e4m3fnuz on gfx942, e4m3fn on gfx950); head dims (128, 128), or (256, 256)
// on gfx950 (no (192, 128) fp8 rows); hq / hk a power of two (AITER's Python: its fp8 kernels
// shift by log2 of the group); on gfx942 the one fp8 build rounds away from zero, so only
// bf16_cvt 1 (AITER's default) finds a row, as in AITER's lookup (others go to our portable
// kernels here, to CK there). Packing: q, k, v byte strides of 1-byte elements, out's of 2-byte
// ones; the descale pointers, with per-tensor strides 0 (AITER's [1] descales).
//
// Backward gate, per arch and mode (AITER's C++ gate and its Python gate together):
//  - everywhere: gfx942 or gfx950; no bias (so no dbias), ALiBi or dropout; AITER's row lookup
//    must find an odo, a dqdkdv and (where needed) a post kernel; byte strides fit 32 bits;
//  - gfx942 batch: not deterministic; d == dv in [64, 192]; seqlen_q > 16; and one of AITER's
//    Python cases, on its classification of the window (a window counts when a bound is above 0,
//    causal comes from the flag; gfx942_batch_cases): float32 dq accumulation (atomic32) with no
//    mask or causal, any d in range; a sliding window with atomic32 and 64 < d <= 128 (its SWA
//    kernels); 16-bit (a16) with d in [64, 128]; and a16, or d 64 or 128, with seqlen_q ==
//    seqlen_k a multiple of 64 and no GQA (AITER's Python compares dk's batch stride with k's
//    times the group, which only MHA passes) with any window that does not count as one
//    ((0, 0), (0, -1), a non-causal (-1, 0)); other such windows go to CK in AITER, to our
//    portable kernels here;
//  - gfx942 varlen: not deterministic; d == dv in [64, 192]; atomic32; no window;
//  - gfx950 batch: 64 < d <= 128, or (d, dv) == (192, 128); no window (gfx950 has no SWA rows);
//    seqlen_q > 16; deterministic only in AITER's one-block case (seqlen_k <= 256 and
//    64 < d <= 128: one key tile, so one block adds into each dq row), which also runs 16-bit
//    accumulation whatever atomic32 says, as AITER does; bf16_cvt is 0 (AITER's Python forces it);
//  - gfx950 varlen: not deterministic; d == dv, 64 < d <= 128; no window; bf16_cvt 0; atomic32
//    (ours: AITER's 16-bit dq accumulator holds max_seqlen_q rows a sequence, which a longer
//    sequence, possible with traced offsets, would write past).
// The mask: none is 0, our causal 2 (bottom-right), a window 3 (CK's generic coordinates in
// mask_x / mask_y); on gfx942 with a16 and seqlen_q == seqlen_k, 2 runs as 1 (the same mask
// then), as AITER does: it has no a16 bottom-right rows there.
//
// Backward choice: kernel head dims as AITER pads them (gfx950 (192, 128) as is; d == dv to 64,
// 128 or 192; pddv when padded); candidates are the dqdkdv rows of (arch, dtype, dims, mask,
// atomic32, bf16_cvt or "any", mode); pssk = seqlen_q != seqlen_k or seqlen_k not a multiple of
// the tile (64 for a16 rows on gfx942 or of "recompile" builds, else the row's ts; in group mode
// AITER compares total_q and total_k). A row whose (pssk, pddv) equals the problem's is taken;
// otherwise the row that handles the most is not needed: the candidate with the fewest
// capabilities beyond the problem's (pssk and pddv counted as one each) wins, the first in CSV
// order among equals. AITER instead keeps the last "superset" row it visits in hash order, so
// where two supersets exist (gfx942 group mode with total_q == total_k a multiple of the tile,
// d == 128: the pssk and the psskddv kernels) its choice depends on hash order; ours takes pssk.
// The odo and post rows are AITER's first matches, which are unique.
//
// Where else we differ from AITER, on purpose:
//  - every field of every argument struct is written (AITER leaves mask_x / mask_y and the pads
//    of the dqdkdv struct as stack garbage);
//  - the odo pass gets head_dim = dv (AITER passes hdim_q, 192 for gfx950's (192, 128) rows,
//    whose odo kernel is the hd128 one: it reduces dout * out over dv's 128 columns);
//  - the one-block rule reads seqlen_k (the prior art read seqlen_q), and applies only when this
//    tier runs the call (the prior art also flipped atomic32/deterministic for other tiers);
//  - in varlen mode dk and dv (or their GQA-expanded pieces) are zeroed before the main kernel, so
//    a sequence with no queries gets zero key gradients whatever AITER's kernel does with it;
//  - in varlen mode the odo, dqdkdv and post grids span total_q / total_k's tiles, not
//    max_seqlen_q / max_seqlen_k's (AITER's group-mode forward grid already spans total_q's): the
//    offsets are device data no one checks, and a sequence longer than its maximum is then still
//    computed whole, at the cost of blocks past a shorter sequence's end, which do nothing;
//  - a stride that overflows a 32-bit field, or a grid past HIP's limits, is refused rather than
//    truncated.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/core/verdict.hpp"
#include "jax_aiter/kernels/aiter/fmha_v3.hpp"
#include "jax_aiter/kernels/attention.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/ops/aiter_rules.hpp"
#include "jax_aiter/ops/attention_params.hpp"
#include "jax_aiter/ops/fp8_format.hpp"

namespace jax_aiter::ops {

namespace attention_asm_detail {

inline constexpr int64_t kU32Max = 0xffffffffLL;
inline constexpr int64_t kGridYzMax = 65536;  // HIP refuses larger grid y / z
inline constexpr uint32_t kBwdBlock = 256;
inline constexpr float kLog2e = 1.44269504088896340736f;

using aiter_rules::aiter_arch;
using aiter_rules::not_aiter_arch;

constexpr int64_t round_up(int64_t x, int64_t m) { return ceil_div(x, m) * m; }

// AITER's mask code of a normalised problem: none 0, causal 2 (bottom-right), window 3.
constexpr int mask_code(const AttnProblem& p) {
  return p.mask == AttnProblem::Mask::kNone ? 0 : p.mask == AttnProblem::Mask::kCausal ? 2 : 3;
}

// AITER's seqlen_q / seqlen_k arguments: the lengths in batch mode, the totals in group mode (its
// varlen wrappers pass total_q / total_k there; the maxima go elsewhere).
constexpr int64_t aiter_sq(const AttnProblem& p) { return p.varlen ? p.total_q : p.seqlen_q; }
constexpr int64_t aiter_sk(const AttnProblem& p) { return p.varlen ? p.total_k : p.seqlen_k; }

}  // namespace attention_asm_detail

// ================================ forward
// =========================================================

struct AiterFmhaFwdChoice {
  AttnProblem problem;  // the call, as the tier read it
  const kernels::AiterFmhaFwdRow* row = nullptr;
  int mask = 0;           // the row's mask code (0 or 2)
  uint32_t tune_opt = 5;  // s_opt
  kernels::Dim3 grid, block;
};

// AITER's v3 forward row, grid and tune_opt for a problem, or why it does not run it.
constexpr Verdict select_aiter_fmha_fwd(const AttnProblem& p, const Target& t,
                                        AiterFmhaFwdChoice* out) {
  namespace D = attention_asm_detail;
  if (!D::aiter_arch(t.arch)) return D::not_aiter_arch();
  if (p.sharded) return Verdict::no("AITER's v3 kernels take no shard offsets");
  if (p.fp8) {
    if (const Verdict v = reads_fp8(p.dtype, t); !v.ok()) return v;
  } else if (p.dtype != DType::kBF16) {
    return Verdict::no("AITER's v3 forward takes bf16 or fp8 (q is f16)");
  }
  if (p.has_bias) return Verdict::no("AITER's v3 forward takes no bias");
  if (p.has_alibi) return Verdict::no("AITER's v3 forward takes no ALiBi");
  if (p.has_dropout) return Verdict::no("AITER's v3 forward has no dropout");
  const bool hd128 = p.head_dim == 128 && p.head_dim_v == 128;
  const bool hd192 = p.head_dim == 192 && p.head_dim_v == 128;
  const bool hd256 = p.head_dim == 256 && p.head_dim_v == 256;
  if (p.fp8 && !(hd128 || (hd256 && t.arch == Arch::kGfx950))) {
    return Verdict::no(
        "AITER's v3 fp8 forward takes head dims (128, 128), and (256, 256) on gfx950, got ({}, {})",
        p.head_dim, p.head_dim_v);
  }
  if (!p.fp8 && !hd128 && !hd192) {
    return Verdict::no("AITER's v3 forward takes head dims (128, 128) or (192, 128), got ({}, {})",
                       p.head_dim, p.head_dim_v);
  }
  if (p.fp8 && (p.group() & (p.group() - 1)) != 0) {
    return Verdict::no(
        "AITER's v3 fp8 forward takes a power-of-two hq / hk (its kernels shift by log2 of the "
        "group), got {} / {}",
        p.heads_q, p.heads_k);
  }
  if (p.mask == AttnProblem::Mask::kWindow) {
    return Verdict::no(
        "AITER's v3 forward takes no sliding window (window ({}, {}); only none or causal)",
        p.window_left, p.window_right);
  }
  if (!p.varlen && p.seqlen_q <= 128) {
    return Verdict::no(
        "AITER leaves batch-mode seqlen_q <= 128 (decode shapes) to CK, not its v3 forward: got {}",
        p.seqlen_q);
  }
  // AITER's Python: the (192, 128) kernels address a head's keys with 32-bit buffer offsets.
  if (hd192 && (p.seqlen_k * p.heads_k * p.head_dim * 2 > D::kU32Max ||
                p.seqlen_k * p.heads_k * p.head_dim_v * 2 > D::kU32Max)) {
    return Verdict::no(
        "AITER's (192, 128) v3 forward needs seqlen_k * hk * d * 2 < 2^32 bytes, got {} * {} * "
        "{} * 2",
        p.seqlen_k, p.heads_k, p.head_dim);
  }
  const int mask = D::mask_code(p);
  const int part = kernels::aiter_fmha_v3::fwd_part(t);
  const kernels::AiterFmhaFwdRow* row = nullptr;
  for (const auto& r : kernels::kAiterFmhaFwdRows) {
    if (r.arch == t.arch && r.part == part && r.dtype == p.dtype && r.hdim_q == p.head_dim &&
        r.hdim_v == p.head_dim_v && r.mask == mask && r.group == p.varlen &&
        (t.arch == Arch::kGfx950 || r.bf16_cvt == p.bf16_cvt)) {
      row = &r;
      break;
    }
  }
  if (row == nullptr) {
    if (p.fp8 && t.arch == Arch::kGfx942) {
      return Verdict::no(
          "AITER's gfx942 v3 fp8 forward rounds its bf16 out away from zero (bf16_cvt 1) only, "
          "got bf16_cvt {}",
          p.bf16_cvt);
    }
    return Verdict::no("no AITER v3 forward row for head dims ({}, {}) with mask {}", p.head_dim,
                       p.head_dim_v, mask);
  }
  // Byte strides are 32-bit fields (batch strides are 0 in group mode); fp8 inputs are 1 byte.
  const int64_t sq = D::aiter_sq(p);
  const int64_t in = p.fp8 ? 1 : 2;
  const int64_t largest =
      std::max({p.varlen ? 0 : p.seqlen_q * p.heads_q * p.head_dim * in,
                p.varlen ? 0 : p.seqlen_k * p.heads_k * p.head_dim * in,
                p.varlen ? 0 : p.seqlen_k * p.heads_k * p.head_dim_v * in,
                p.varlen ? 0 : p.seqlen_q * p.heads_q * p.head_dim_v * 2,
                int64_t{row->ts_qo} * p.heads_q * p.head_dim * in, sq * 4, p.total_q, p.total_k});
  if (largest > D::kU32Max) {
    return Verdict::no("a byte stride of AITER's v3 forward ({}) exceeds its 32-bit fields",
                       largest);
  }
  // tune_opt: 5; 3 when masked with a head count not a multiple of 8 or more than 16384 rows
  // (AITER's seqlen_q: total_q in group mode); 0 for gfx942's (192, 128) kernels.
  uint32_t tune_opt = 5;
  if (mask != 0 && (p.heads_q % 8 != 0 || sq > 16384)) tune_opt -= 2;
  if (hd192 && t.arch == Arch::kGfx942) tune_opt = 0;
  // The grid: a block per query tile (masked: a head and a tail tile per block, tg_div 2), head
  // and batch; gfx942's (192, 128) kernels take (head, tile, batch) and never pair tiles in group
  // mode. Group mode: (head, sequence, tile) over total_q's tiles, as AITER launches it (blocks
  // past a sequence's end do nothing).
  const bool gfx942_hd192 = hd192 && t.arch == Arch::kGfx942;
  const int64_t tg_div = (mask != 0 && !(gfx942_hd192 && p.varlen)) ? 2 : 1;
  const int64_t tiles = ceil_div(sq, row->ts_qo);
  int64_t gx = ceil_div(tiles, tg_div), gy = p.heads_q, gz = p.batch;
  if (gfx942_hd192) {
    gx = p.heads_q;
    gy = tiles;
    gz = p.batch;
  }
  if (p.varlen) {
    gx = p.heads_q;
    gy = p.batch;
    gz = ceil_div(tiles, tg_div);
  }
  if (gy > D::kGridYzMax || gz > D::kGridYzMax) {
    return Verdict::no("AITER's v3 forward grid ({}, {}, {}) exceeds HIP's 65536 in y or z", gx, gy,
                       gz);
  }
  out->row = row;
  out->mask = mask;
  out->tune_opt = tune_opt;
  out->grid = {static_cast<uint32_t>(gx), static_cast<uint32_t>(gy), static_cast<uint32_t>(gz)};
  out->block = {hd192 ? 256u : 512u, 1, 1};
  return Verdict::yes();
}

struct FlashAttnFwdAsmTier {
  static constexpr std::string_view kName = "asm";
  static constexpr bool kRunsAiterCode = true;
  using Choice = AiterFmhaFwdChoice;

  static Decision<Choice> supports(const FlashAttnFwdParams& params, const Target& t) {
    const auto p = attn_problem(params);
    if (!p) return Verdict::no("the call does not validate");
    Choice c;
    if (const Verdict v = select_aiter_fmha_fwd(*p, t, &c); !v.ok()) return v;
    c.problem = *p;
    return c;
  }

  // As AITER's fmha_fwd_v3 packs it, every field written (the descales null and their strides 0
  // for bf16). lse is always written: the backward needs it (fp8: for return_lse).
  static void plan(const FlashAttnFwdParams& params, const Target&, const Choice& c,
                   kernels::Plan& plan) {
    const AttnProblem& p = c.problem;
    const kernels::AiterFmhaFwdRow& r = *c.row;
    const auto u32 = [](int64_t v) { return static_cast<uint32_t>(v); };
    const int64_t hq = p.heads_q, hk = p.heads_k, d = p.head_dim, dv = p.head_dim_v;
    const bool batch = !p.varlen;
    const int64_t in = p.fp8 ? 1 : 2;  // bytes of a q, k, v element (out's are 2)
    kernels::AiterFmhaFwdArgs a{};
    a.ptr_o = params.out.data;
    a.ptr_q = params.q.data;
    a.ptr_k = params.k.data;
    a.ptr_v = params.v.data;
    a.ptr_lse = params.lse.data;
    a.scalar = p.softmax_scale;
    a.s_seq_len = u32(attention_asm_detail::aiter_sq(p));
    a.s_Seqs = u32(hq * d * in);
    a.s_Ts = u32(r.ts_qo * hq * d * in);
    a.s_Hs = u32(d * in);
    a.s_Bs = u32(batch ? p.seqlen_q * hq * d * in : 0);
    a.s_gqa = u32(p.group());
    a.s_k_Seqs = u32(hk * d * in);
    a.s_k_Hs = u32(d * in);
    a.s_k_Bs = u32(batch ? p.seqlen_k * hk * d * in : 0);
    a.s_opt = c.tune_opt;
    a.s_lse = 1;
    a.s_kv_seq_len = u32(attention_asm_detail::aiter_sk(p));
    a.s_qk_head_dim = u32(d);
    a.s_v_head_dim = u32(dv);
    a.s_q_head_num = u32(hq);
    a.s_v_Seqs = u32(hk * dv * in);
    a.s_v_Hs = u32(dv * in);
    a.s_v_Bs = u32(batch ? p.seqlen_k * hk * dv * in : 0);
    a.s_o_Seqs = u32(hq * dv * 2);
    a.s_o_Hs = u32(dv * 2);
    a.s_o_Bs = u32(batch ? p.seqlen_q * hq * dv * 2 : 0);
    // lse [b, hq, sq] (the kernel derives the batch stride) or [hq, total_q].
    a.s_lse_Hs = u32(attention_asm_detail::aiter_sq(p) * 4);
    const int* cu_q = batch ? nullptr : static_cast<const int*>(params.cu_seqlens_q->data);
    const int* cu_k = batch ? nullptr : static_cast<const int*>(params.cu_seqlens_k->data);
    a.ptr_qseq = cu_q;
    a.ptr_kseq = cu_k;
    a.ptr_qseq_padding = cu_q;
    a.ptr_kseq_padding = cu_k;
    // Per-tensor descales: one float each, strides 0 (AITER's [1] descales).
    const auto descale = [](const std::optional<Tensor>& t) {
      return t ? static_cast<const float*>(t->data) : nullptr;
    };
    a.ptr_q_descale = descale(params.q_descale);
    a.ptr_k_descale = descale(params.k_descale);
    a.ptr_v_descale = descale(params.v_descale);
    a.s_descale_q_Bs = 0;
    a.s_descale_q_Hs = 0;
    a.s_descale_k_Bs = 0;
    a.s_descale_k_Hs = 0;
    a.s_descale_v_Bs = 0;
    a.s_descale_v_Hs = 0;
    plan.launch(r.kernel, c.grid, c.block, a);
    plan.note("ts_qo", r.ts_qo);
    plan.note("ts_kv", r.ts_kv);
    plan.note("mask", c.mask);
    plan.note("tune_opt", c.tune_opt);
    plan.note("part", r.part);
    plan.note("bf16_cvt", r.bf16_cvt);
  }
};

// ================================ backward
// ========================================================

struct AiterFmhaBwdChoice {
  AttnProblem problem;  // the call, as the tier read it
  const kernels::AiterFmhaBwdRow* odo = nullptr;
  const kernels::AiterFmhaBwdRow* main = nullptr;
  const kernels::AiterFmhaBwdRow* post = nullptr;  // null: the main kernel adds into dq itself
  int mask = 0;          // the main row's mask code (after gfx942's a16 2 -> 1)
  bool atomic32 = true;  // as run (gfx950's one-block case runs 16-bit)
  int bf16_cvt = 0;      // as run (gfx950: 0)
  bool pssk = false;     // what the problem needs
  bool pddv = false;
  int hdim_q = 0, hdim_v = 0;  // the kernel head dims
  bool one_block = false;      // gfx950's one-block case
};

namespace attention_asm_detail {

// The kernel head dims AITER runs (d, dv) on (mha_bwd.cu get_padded_hdim).
constexpr std::pair<int, int> padded_hdim(int64_t d, int64_t dv, Arch arch) {
  if (arch == Arch::kGfx950 && d == 192 && dv == 128) return {192, 128};
  if (d == dv) {
    if (d <= 64) return {64, 64};
    if (d <= 128) return {128, 128};
    if (d <= 192) return {192, 192};
  }
  return {static_cast<int>(d), static_cast<int>(dv)};
}

// The rule of the tier's comment, to the kernels and the post-pass.
constexpr Verdict select_rows(const AttnProblem& p, Arch arch, AiterFmhaBwdChoice* c) {
  const auto [phq, phv] = padded_hdim(p.head_dim, p.head_dim_v, arch);
  c->hdim_q = phq;
  c->hdim_v = phv;
  c->pddv = phq != p.head_dim || phv != p.head_dim_v;
  const int64_t sq = aiter_sq(p), sk = aiter_sk(p);
  int mt = mask_code(p);
  if (arch == Arch::kGfx942 && !c->atomic32 && mt == 2 && sq == sk) mt = 1;
  c->mask = mt;
  const auto matches = [&](const kernels::AiterFmhaBwdRow& r) {
    return r.arch == arch && r.dtype == p.dtype && r.hdim_q == phq && r.hdim_v == phv &&
           r.mask == mt && r.atomic32 == c->atomic32 &&
           (r.bf16_cvt == 3 || r.bf16_cvt == c->bf16_cvt) && r.group == p.varlen;
  };
  const kernels::AiterFmhaBwdRow* best = nullptr;
  int best_extra = 0;
  bool first = true;
  for (const auto& r : kernels::kAiterFmhaBwdDqdkdvRows) {
    if (!matches(r)) continue;
    if (first) {  // the tile AITER's pssk test uses: every candidate has the same
      const int64_t tile = (!r.atomic32 && (arch == Arch::kGfx942 || r.recompile)) ? 64 : r.ts;
      c->pssk = sq != sk || sk % tile != 0;
      first = false;
    }
    if (r.pssk < c->pssk || r.pddv < c->pddv) continue;
    const int extra = (r.pssk != c->pssk) + (r.pddv != c->pddv);
    if (best == nullptr || extra < best_extra) {
      best = &r;
      best_extra = extra;
    }
  }
  if (best == nullptr) {
    return Verdict::no(
        "no AITER v3 backward kernel for kernel head dims ({}, {}) with mask {} and this dtype, "
        "accumulator and padding",
        phq, phv, mt);
  }
  c->main = best;
  c->odo = nullptr;
  for (const auto& r : kernels::kAiterFmhaBwdOdoRows) {
    if (r.arch == arch && r.dtype == p.dtype && r.hdim_v == phv && r.group == p.varlen) {
      c->odo = &r;
      break;
    }
  }
  if (c->odo == nullptr) return Verdict::no("no AITER v3 odo kernel for head dim {}", phv);
  c->post = nullptr;
  const bool need_post = (arch == Arch::kGfx950 && p.head_dim != 64) || c->atomic32;
  if (need_post) {
    const std::span<const kernels::AiterFmhaBwdRow> table =
        c->atomic32
            ? std::span<const kernels::AiterFmhaBwdRow>(kernels::kAiterFmhaBwdDqConvertRows)
            : std::span<const kernels::AiterFmhaBwdRow>(kernels::kAiterFmhaBwdDqShuffleRows);
    for (const auto& r : table) {
      if (r.arch == arch && r.hdim_q == phq && r.group == p.varlen &&
          (r.bf16_cvt == 3 || r.bf16_cvt == c->bf16_cvt) && (r.dtype == p.dtype || !c->atomic32)) {
        c->post = &r;
        break;
      }
    }
    if (c->post == nullptr) {
      return Verdict::no("no AITER v3 dq post-pass for kernel head dim {} (atomic32 {})", phq,
                         c->atomic32);
    }
  }
  return Verdict::yes();
}

// The dq accumulator AITER's kernels address (mha_bwd.cu): float32 [b, hq, sq, d] (group mode
// [hq, total_q, d]), or 16-bit [b, hq, round16(max_sq), 128 or 192] for a16.
struct DqAcc {
  int64_t elem = 0, seq = 0, hdim = 0, batches = 0;
  constexpr int64_t per_batch() const { return seq * hdim * elem; }  // bytes per head
  constexpr int64_t bytes(int64_t heads) const { return batches * heads * per_batch(); }
  constexpr int64_t batch_stride(int64_t heads) const {
    return batches == 1 ? 0 : heads * per_batch();
  }
};

constexpr DqAcc dq_acc(const AttnProblem& p, const AiterFmhaBwdChoice& c) {
  if (c.post == nullptr) return {};
  DqAcc a;
  a.elem = c.atomic32 ? 4 : 2;
  a.seq = c.atomic32 ? aiter_sq(p) : round_up(p.seqlen_q, 16);
  a.hdim = c.atomic32 ? p.head_dim : (p.head_dim == 192 ? 192 : 128);
  a.batches = (p.varlen && c.atomic32) ? 1 : p.batch;
  return a;
}

// The workspace the plan carves, in this order: delta (odo's output, float32 in lse's layout),
// the dq accumulator (with a post-pass), and for GQA the expanded dk and dv [rows, hq, d/dv].
struct BwdPieces {
  kernels::WorkspaceLayout layout;
  int delta = -1, acc = -1, dk = -1, dv = -1;
};

constexpr BwdPieces bwd_pieces(const AttnProblem& p, const AiterFmhaBwdChoice& c) {
  BwdPieces w;
  w.delta = w.layout.add("delta", p.heads_q * (p.varlen ? p.total_q : p.batch * p.seqlen_q) * 4);
  if (c.post != nullptr) w.acc = w.layout.add("dq_acc", dq_acc(p, c).bytes(p.heads_q));
  if (p.heads_k != p.heads_q) {
    const int64_t rows = p.total_k * p.heads_q;  // total_k is b * sk in batch mode
    const int64_t esize = static_cast<int64_t>(size_bytes(p.dtype));
    w.dk = w.layout.add("dk_expanded", rows * p.head_dim * esize);
    w.dv = w.layout.add("dv_expanded", rows * p.head_dim_v * esize);
  }
  return w;
}

// gfx942 batch mode: AITER's Python cases (aiter/ops/mha.py can_impl_fmha_v3_bwd) on its own
// classification of the window: bounds at or past seqlen_k are none; a window counts (swa) when a
// bound is above 0; causal comes from the flag. So (0, 0), (0, -1) and a non-causal (-1, 0) are
// neither a window, nor causal, nor no mask: only the np and pssk cases take them. Head dims as
// AITER's Python sees them (padded to a multiple of 8); npssk: seqlen_q == seqlen_k, a multiple
// of 64, and no GQA (dk's batch stride over k's must be the group: only MHA's dense dk is).
constexpr Verdict gfx942_batch_cases(const AttnProblem& p) {
  const int64_t d = round_up(p.head_dim, 8);
  const int64_t left = p.given_left >= p.seqlen_k ? -1 : p.given_left;
  const int64_t right = p.given_right >= p.seqlen_k ? -1 : p.given_right;
  const bool swa = left > 0 || right > 0;
  const bool causal = p.causal && left == -1;
  const bool no_mask = !p.causal && left == -1 && right == -1;
  const bool npssk = p.seqlen_q == p.seqlen_k && p.seqlen_k % 64 == 0 && p.heads_q == p.heads_k;
  const bool a32 = p.atomic32;
  const bool np = (d == 128 || (d == 64 && !a32)) && npssk && !swa;
  const bool pssk = d == 64 && a32 && !swa;
  const bool pddv = !a32 && d > 64 && d < 128 && npssk && !swa;
  const bool psskddv = a32 && d > 64 && d <= 192 && (no_mask || causal || (swa && d <= 128));
  if (np || pssk || pddv || psskddv) return Verdict::yes();
  if (a32) {
    if (swa) {
      return Verdict::no(
          "on gfx942 AITER's v3 backward takes a sliding window with atomic32 and 64 < d <= 128 "
          "(its SWA kernels), got d {}",
          p.head_dim);
    }
    return Verdict::no(
        "AITER's Python sends window ({}, {}) without causal to CK, not its v3 backward: a "
        "bound of 0 is no window there, and it is not causal either (it takes it only with "
        "seqlen_q == seqlen_k a multiple of 64, no GQA, d 64 or 128)",
        p.given_left, p.given_right);
  }
  // 16-bit accumulation: AITER's np (d 64 or 128) and pddv (64 < d < 128) cases.
  if (d > 128) {
    return Verdict::no("on gfx942 AITER's a16 (atomic32 off) v3 backward takes d <= 128, got {}",
                       p.head_dim);
  }
  if (swa) return Verdict::no("on gfx942 AITER's a16 (atomic32 off) v3 backward takes no window");
  if (p.seqlen_q != p.seqlen_k || p.seqlen_k % 64 != 0) {
    return Verdict::no(
        "on gfx942 AITER's a16 (atomic32 off) v3 backward needs seqlen_q == seqlen_k, a "
        "multiple of 64: got {}, {}",
        p.seqlen_q, p.seqlen_k);
  }
  return Verdict::no(
      "on gfx942 AITER's a16 (atomic32 off) v3 backward takes no GQA/MQA (hq {}, hk {})", p.heads_q,
      p.heads_k);
}

// The gate of the tier's comment, before the row lookup.
constexpr Verdict bwd_gate(const AttnProblem& p, Arch arch, AiterFmhaBwdChoice* c) {
  if (!aiter_arch(arch)) return not_aiter_arch();
  if (p.sharded) return Verdict::no("AITER's v3 kernels take no shard offsets");
  if (p.has_bias) return Verdict::no("AITER's v3 backward takes no bias (nor its gradient)");
  if (p.has_alibi) return Verdict::no("AITER's v3 backward takes no ALiBi");
  if (p.has_dropout) return Verdict::no("AITER's v3 backward has no dropout");
  const int64_t d = p.head_dim, dv = p.head_dim_v;
  const int mt = mask_code(p);
  c->atomic32 = p.atomic32;
  c->bf16_cvt = p.bf16_cvt;
  c->one_block = false;
  if (arch == Arch::kGfx942) {
    if (p.deterministic) {
      return Verdict::no(
          "AITER's v3 backward adds into dq with atomics: not deterministic on gfx942");
    }
    if (d != dv || d < 64 || d > 192) {
      return Verdict::no("on gfx942 AITER's v3 backward takes d == dv in [64, 192], got ({}, {})",
                         d, dv);
    }
    if (p.varlen) {
      if (mt == 3) return Verdict::no("AITER's v3 varlen backward takes no sliding window");
      if (!p.atomic32) {
        return Verdict::no(
            "on gfx942 AITER's v3 varlen backward accumulates dq in float32 only (atomic32)");
      }
      return Verdict::yes();
    }
    if (p.seqlen_q <= 16) {
      return Verdict::no(
          "AITER leaves batch-mode seqlen_q <= 16 to CK, not its v3 backward: got {}", p.seqlen_q);
    }
    return gfx942_batch_cases(p);
  }
  // gfx950: rtna and rtz are deprecated there; AITER's Python makes bf16_cvt 0.
  c->bf16_cvt = 0;
  if (mt == 3) return Verdict::no("gfx950 has no sliding-window v3 backward kernels");
  if (p.varlen) {
    if (p.deterministic) {
      return Verdict::no("AITER's v3 varlen backward adds into dq with atomics: not deterministic");
    }
    if (d != dv || d <= 64 || d > 128) {
      return Verdict::no(
          "on gfx950 AITER's v3 varlen backward takes d == dv, 64 < d <= 128, got ({}, {})", d, dv);
    }
    if (!p.atomic32) {
      return Verdict::no(
          "AITER's 16-bit (atomic32 off) v3 varlen backward accumulates max_seqlen_q rows a "
          "sequence, which a longer one (traced offsets) would write past: atomic32 only");
    }
    return Verdict::yes();
  }
  if (p.seqlen_q <= 16) {
    return Verdict::no("AITER leaves batch-mode seqlen_q <= 16 to CK, not its v3 backward: got {}",
                       p.seqlen_q);
  }
  if (!((d > 64 && d <= 128) || (d == 192 && dv == 128))) {
    return Verdict::no(
        "on gfx950 AITER's v3 backward takes 64 < d <= 128 or (d, dv) = (192, 128), got ({}, {})",
        d, dv);
  }
  // One key tile per (head, batch) (seqlen_k, not seqlen_q: the prior art's slip).
  c->one_block = p.seqlen_k <= 256 && d > 64 && d <= 128;
  if (p.deterministic && !c->one_block) {
    return Verdict::no(
        "AITER's v3 backward is deterministic on gfx950 only with one key block (seqlen_k <= 256 "
        "and 64 < d <= 128), got seqlen_k {}, d {}",
        p.seqlen_k, d);
  }
  if (c->one_block) c->atomic32 = false;
  return Verdict::yes();
}

// The largest value the plan writes into a 32-bit field.
constexpr int64_t bwd_largest_field(const AttnProblem& p, const AiterFmhaBwdChoice& c) {
  const int64_t hq = p.heads_q, hk = p.heads_k, d = p.head_dim, dv = p.head_dim_v;
  const int64_t sq = p.varlen ? 0 : p.seqlen_q, sk = p.varlen ? 0 : p.seqlen_k;  // batch strides
  const DqAcc acc = dq_acc(p, c);
  return std::max({sq * hq * d * 2, sq * hq * dv * 2, sk * hk * d * 2, sk * hk * dv * 2,
                   sk * hq * d * 2, sk * hq * dv * 2, int64_t{c.main->ts} * hk * d * 2,
                   aiter_sq(p) * 4, sq * hq * 4, acc.per_batch(), acc.batch_stride(hq), aiter_sq(p),
                   aiter_sk(p)});
}

}  // namespace attention_asm_detail

// AITER's v3 backward kernels for a problem on an arch, or why it does not run it.
constexpr Verdict select_aiter_fmha_bwd(const AttnProblem& p, Arch arch, AiterFmhaBwdChoice* out) {
  namespace D = attention_asm_detail;
  AiterFmhaBwdChoice c;
  if (const Verdict v = D::bwd_gate(p, arch, &c); !v.ok()) return v;
  if (const Verdict v = D::select_rows(p, arch, &c); !v.ok()) return v;
  const int64_t largest = D::bwd_largest_field(p, c);
  if (largest > D::kU32Max) {
    return Verdict::no("a byte stride of AITER's v3 backward ({}) exceeds its 32-bit fields",
                       largest);
  }
  *out = c;
  return Verdict::yes();
}

// An upper bound, over gfx942 and gfx950, of the workspace the ASM backward's plan carves (0 when
// neither arch's gate takes the problem): sized before any device is known.
constexpr int64_t flash_attn_bwd_asm_workspace_bytes(const AttnProblem& p) {
  int64_t most = 0;
  for (Arch arch : {Arch::kGfx942, Arch::kGfx950}) {
    AiterFmhaBwdChoice c;
    if (!select_aiter_fmha_bwd(p, arch, &c).ok()) continue;
    most = std::max(most, attention_asm_detail::bwd_pieces(p, c).layout.total);
  }
  return most;
}

struct FlashAttnBwdAsmTier {
  static constexpr std::string_view kName = "asm";
  static constexpr bool kRunsAiterCode = true;
  using Choice = AiterFmhaBwdChoice;

  static Decision<Choice> supports(const FlashAttnBwdParams& params, const Target& t) {
    const auto p = attn_problem(params);
    if (!p) return Verdict::no("the call does not validate");
    Choice c;
    if (const Verdict v = select_aiter_fmha_bwd(*p, t.arch, &c); !v.ok()) return v;
    c.problem = *p;
    return c;
  }

  // The chain AITER's fmha_v3_bwd launches, with XLA's workspace for its allocations:
  //   memset (zero) the dq accumulator, or dq itself where the main kernel adds into it;
  //   [varlen, or keys no query sees] memset dk and dv (or their expanded pieces);
  //   odo: delta = rowsum(dout * out);
  //   dqdkdv: dq (accumulated), dk, dv (per query head under GQA);
  //   [post] dq_convert / dq_shuffle: the accumulator to dq;
  //   [GQA] our gqa_reduce: the expanded dk, dv summed over each key head's query heads.
  static void plan(const FlashAttnBwdParams& params, const Target&, const Choice& c,
                   kernels::Plan& plan) {
    namespace D = attention_asm_detail;
    const AttnProblem& p = c.problem;
    const auto u32 = [](int64_t v) { return static_cast<uint32_t>(v); };
    const int64_t hq = p.heads_q, hk = p.heads_k, d = p.head_dim, dv = p.head_dim_v;
    const bool batch = !p.varlen;
    const int64_t sq = batch ? p.seqlen_q : 0, sk = batch ? p.seqlen_k : 0;  // batch strides
    const bool gqa = hq != hk;

    const D::BwdPieces w = D::bwd_pieces(p, c);
    plan.workspace = w.layout;
    float* delta = static_cast<float*>(plan.piece(w.delta));
    void* acc = w.acc >= 0 ? plan.piece(w.acc) : nullptr;
    void* dk = gqa ? plan.piece(w.dk) : params.dk.data;
    void* dv_ = gqa ? plan.piece(w.dv) : params.dv.data;
    const int64_t esize = static_cast<int64_t>(size_bytes(p.dtype));
    const int64_t dk_bytes = p.total_k * hq * d * esize, dv_bytes = p.total_k * hq * dv * esize;
    const D::DqAcc dq_acc = D::dq_acc(p, c);
    if (acc != nullptr) {
      plan.memset(acc, static_cast<uint64_t>(dq_acc.bytes(hq)), 0, "dq_acc");
    } else {
      plan.memset(params.dq.data, static_cast<uint64_t>(params.dq.bytes()), 0, "dq");
    }
    // Keys no query sees (varlen padding; a batch-mode window with sk - sq > left leaves the first
    // keys outside every query's window) may be skipped by the kernel without a write: zero dk, dv.
    const bool unseen_keys =
        p.varlen || (p.window_left >= 0 && p.seqlen_k - p.seqlen_q > p.window_left);
    if (unseen_keys) {
      plan.memset(dk, static_cast<uint64_t>(dk_bytes), 0, gqa ? "dk_expanded" : "dk");
      plan.memset(dv_, static_cast<uint64_t>(dv_bytes), 0, gqa ? "dv_expanded" : "dv");
    }
    const int* cu_q = batch ? nullptr : static_cast<const int*>(params.cu_seqlens_q->data);
    const int* cu_k = batch ? nullptr : static_cast<const int*>(params.cu_seqlens_k->data);
    const int64_t lse_head = D::aiter_sq(p) * 4;  // lse / delta: [b, hq, sq] or [hq, total_q]

    kernels::AiterFmhaBwdOdoArgs o{};
    o.ptr_o = params.out.data;
    o.ptr_do = params.dout.data;
    o.ptr_d = delta;
    o.Hs_o = u32(dv * 2);
    o.BAs_o = u32(sq * hq * dv * 2);
    o.Seqs_o = u32(hq * dv * 2);
    o.Hs_do = u32(dv * 2);
    o.BAs_do = u32(sq * hq * dv * 2);
    o.Seqs_do = u32(hq * dv * 2);
    o.Hs_d = u32(lse_head);
    o.BAs_d = u32(sq * hq * 4);
    o.Seqs_d = 4;
    o.seqlen_q = u32(D::aiter_sq(p));
    o.head_dim = u32(dv);
    o.ptr_qseq = cu_q;
    o.ptr_qseq_padded = cu_q;
    const int64_t max_sq = p.seqlen_q;  // the maximum in varlen mode (max_seqlen_dq)
    // The rows and keys the grids span: the lengths, or in varlen mode the totals (see the tier's
    // comment: a sequence longer than its maximum is still covered).
    const int64_t rows_q = D::aiter_sq(p), rows_k = D::aiter_sk(p);
    plan.launch(c.odo->kernel, {u32(ceil_div(rows_q, c.odo->ts)), u32(hq), u32(p.batch)},
                {D::kBwdBlock, 1, 1}, o);

    kernels::AiterFmhaBwdDqdkdvArgs m{};
    m.ptr_dq = acc != nullptr ? acc : params.dq.data;
    m.ptr_dk = dk;
    m.ptr_dv = dv_;
    m.ptr_q = params.q.data;
    m.ptr_k = params.k.data;
    m.ptr_v = params.v.data;
    m.ptr_do = params.dout.data;
    m.ptr_lse = static_cast<const float*>(params.lse.data);
    m.ptr_d = delta;
    m.scalar = p.softmax_scale;
    m.log2e = D::kLog2e;
    m.seqlen_q = u32(D::aiter_sq(p));
    m.Ts = u32(c.main->ts * hk * d * 2);
    m.Hs_q = u32(d * 2);
    m.BAs_q = u32(sq * hq * d * 2);
    m.Seqs_q = u32(hq * d * 2);
    m.ratio = u32(p.group());
    m.Hs_k = u32(d * 2);
    m.BAs_k = u32(sk * hk * d * 2);
    m.Seqs_k = u32(hk * d * 2);
    m.Seqs_dk = u32(hq * d * 2);  // dk, or its expansion: hq heads a row either way
    m.seqlen_k = u32(D::aiter_sk(p));
    m.head_dim_q = u32(d);
    m.head_dim_v = u32(dv);
    m.nhead_q = u32(hq);
    m.Hs_v = u32(dv * 2);
    m.BAs_v = u32(sk * hk * dv * 2);
    m.Seqs_v = u32(hk * dv * 2);
    m.Hs_do = u32(dv * 2);
    m.BAs_do = u32(sq * hq * dv * 2);
    m.Seqs_do = u32(hq * dv * 2);
    m.Hs_dk = u32(d * 2);
    m.BAs_dk = u32(sk * hq * d * 2);
    m.Hs_dv = u32(dv * 2);
    m.BAs_dv = u32(sk * hq * dv * 2);
    m.Seqs_dv = u32(hq * dv * 2);
    m.Hs_lsed = u32(lse_head);
    m.ptr_qseq = cu_q;
    m.ptr_kseq = cu_k;
    m.ptr_qseq_padded = cu_q;
    m.ptr_kseq_padded = cu_k;
    m.max_seqlen_dq = u32(c.atomic32 ? max_sq : D::round_up(max_sq, 16));
    m.mask_x = 0;
    m.mask_y = 0;
    if (c.mask == 3) {
      // CK's generic mask coordinates of our bottom-right window (batch mode only): key j is
      // visible to query i iff i - mask_y < j < i + mask_x.
      const int64_t left = p.window_left < 0 ? p.seqlen_k - 1 : p.window_left;
      const int64_t right = p.window_right < 0 ? p.seqlen_q - 1 : p.window_right;
      m.mask_y = static_cast<int32_t>(1 + left + p.seqlen_q - p.seqlen_k);
      m.mask_x = static_cast<int32_t>(1 + right + p.seqlen_k - p.seqlen_q);
    }
    int64_t gx = ceil_div(rows_k, c.main->ts);
    if (c.mask == 1 || c.mask == 2) gx = (gx + 1) / 2;  // causal: a head and a tail tile a block
    plan.launch(c.main->kernel, {u32(gx), u32(hq), u32(p.batch)}, {D::kBwdBlock, 1, 1}, m);

    if (c.post != nullptr) {
      kernels::AiterFmhaBwdPostArgs q{};
      q.ptr_dq_acc = acc;
      q.ptr_dq = params.dq.data;
      q.Hs_dq_acc = u32(dq_acc.per_batch());
      q.BAs_dq_acc = u32(dq_acc.batch_stride(hq));
      q.Seqs_dq_acc = u32(dq_acc.hdim * dq_acc.elem);
      q.Hs_dq = u32(d * 2);
      q.BAs_dq = u32(sq * hq * d * 2);
      q.Seqs_dq = u32(hq * d * 2);
      q.seqlen_q = u32(D::aiter_sq(p));
      q.head_dim = u32(d);
      q.ptr_qseq = cu_q;
      q.ptr_qseq_padded = cu_q;
      plan.launch(c.post->kernel, {u32(ceil_div(rows_q, c.post->ts)), u32(hq), u32(p.batch)},
                  {D::kBwdBlock, 1, 1}, q);
    }

    if (gqa) {
      namespace A = kernels::attention;
      const kernels::KernelInfo& reduce = kernels::attn_dtype_kernels(p.dtype).gqa_reduce;
      const auto fold = [&](void* src, void* dst, int64_t dim) {
        kernels::AttnGqaReduceArgs r{};
        r.src = src;
        r.dst = dst;
        r.rows = p.total_k;
        r.heads_k = static_cast<int>(hk);
        r.group = static_cast<int>(p.group());
        r.dim = static_cast<int>(dim);
        r.pad = 0;
        const int64_t blocks = ceil_div(p.total_k * hk * dim, int64_t{A::kReduceThreads} * 4);
        plan.launch(reduce, {u32(blocks), 1, 1}, {A::kReduceThreads, 1, 1}, r);
      };
      fold(dk, params.dk.data, d);
      fold(dv_, params.dv.data, dv);
    }
    plan.note("ts_kv", c.main->ts);
    plan.note("mask", c.mask);
    plan.note("atomic32", c.atomic32);
    plan.note("pssk", c.main->pssk);
    plan.note("pddv", c.main->pddv);
    plan.note("bf16_cvt", c.bf16_cvt);
  }
};

}  // namespace jax_aiter::ops
