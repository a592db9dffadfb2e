// Host ABI twins of AITER's ASM v3 attention kernels (kernels/aiter/fmha_v3.hpp): the forward, and
// the backward's odo pre-pass, dqdkdv main kernel and dq_convert / dq_shuffle post-passes. Each
// twin reads only the packed argument bytes (AITER's struct) and the grid it is launched with, and
// computes only the blocks of that grid with its row's tiles, so a plan with a wrong grid, stride,
// head dim, mask, workspace or memset gets wrong, NaN or unwritten outputs. The math is
// host_twins/attention_math.hpp's. Registered in runtime::HostTwins under each row's kernel symbol.
// A consumer that runs the ASM tiers on the host includes this header (it includes
// host_twins/attention.hpp too: the ASM backward's GQA fold is our portable gqa_reduce kernel).
//
// AITER's contract as the twins honour it (facts restated from github.com/ROCm/aiter at
// e4048607a535: csrc/cpp_itfs/mha_{fwd,bwd}.cu, csrc/include/mha_{fwd,bwd}.h, aiter/ops/mha.py):
//  - fp8 forward rows ("fp8bf16"): q, k, v of the row's e4m3 format (1-byte elements), out bf16,
//    and float32 descales read at ptr + b * s_descale_*_Bs + (h / gqa) * s_descale_*_Hs bytes
//    (AITER's [1] or [b, hk] descale tensors): scores scale * qd * kd q k^T, out vd * softmax v.
//    A null descale pointer makes the block unaddressable.
//  - Strides are in bytes (16-bit elements; float32 lse / delta / a32 accumulator). A stride that
//    is not a whole number of elements, or a null operand, makes a block unaddressable: it writes
//    nothing. Any other breach of the row's contract below makes the block write NaN over its own
//    outputs (dq contributions included).
//  - Batch vs group (varlen) mode is the row's; group mode reads sequence s at row ptr_*seq[s] with
//    length ptr_*seq[s + 1] - ptr_*seq[s] (batch strides 0) and seqlen_q / seqlen_k are the totals.
//    The *_padding / *_padded starts must equal ptr_*seq (our plans pass one array; the twins do
//    not model padded layouts).
//  - lse / delta: [b, hq, sq] with head stride s_lse_Hs / Hs_lsed and batch stride hq times it
//    (batch mode), [hq, total_q] in group mode.
//  - GQA: query head h reads key head h / s_gqa (ratio).
//  - The row's mask: 0 none, 1 causal aligned top-left (only expressible here when sq >= sk), 2
//    causal aligned bottom-right, 3 CK's generic window from mask_x / mask_y (i - mask_y < j <
//    i + mask_x).
//  - Head dims: the forward rows take exactly their (hdim_q, hdim_v); a backward row takes head
//    dims up to its own, and below it only when it is a pddv row. The odo pass reduces head_dim
//    columns (at most the row's hdim_v).
//  - A backward row without pssk needs seqlen_q == seqlen_k a multiple of the tile AITER's rule
//    tests (64 for a16 rows on gfx942 and "recompile" builds, else ts), and, as AITER's Python
//    admits those kernels only then (npssk), q's strides equal to dout's, k's to v's, dk's and
//    dv's head strides equal to k's and v's.
//  - Ts (s_Ts) must be the row's tile times the row stride: the kernels step tiles by it. Several
//    dqdkdv symbols are shared by a gfx942 build (ts 192) and a gfx950 one (ts 256): the registry
//    is keyed by symbol, so that twin takes the row whose ts is Ts / Seqs_k.
//  - Tiles of a block: forward ts_qo query rows, dqdkdv ts key rows, odo and post ts query rows.
//    A masked forward (except gfx942's (192, 128) kernels) and a causal dqdkdv pair tiles: block x
//    of a sequence with n tiles computes tiles x and n - 1 - x (nothing when x > n - 1 - x).
//    Forward grids: batch (tile, head, batch), gfx942 (192, 128) (head, tile, batch), group
//    (head, sequence, tile). Backward: (tile, head, batch) in both modes. Blocks past a
//    sequence's tiles, heads or batches do nothing.
//  - bf16 outputs are rounded by the row's bf16_cvt (0 nearest even, 1 nearest away, 2 toward
//    zero; 3 "any" and f16 nearest even): the forward's out, dqdkdv's dk / dv, dq_convert's dq, and
//    the 16-bit dq accumulation.
//  - dq: a32 rows add float32 into the accumulator [b, nhead_q, seqlen_q, head_dim_q] (group mode
//    [nhead_q, total_q, head_dim_q], sequence rows from their start), as mha_bwd.cu lays it out.
//    a16 rows on gfx950 add 16-bit values (each block's float32 partial added and rounded) into
//    [b, nhead_q, max_seqlen_dq, row hdim_q] (rows from 0 in each sequence's slice), which
//    dq_shuffle copies out (the element order inside AITER's a16 accumulator is the kernels'
//    private business; these twins keep it row-major). a16 rows on gfx942 have no post-pass and add
//    into dq itself, addressed with q's strides.
//  - dqdkdv writes dk / dv of its key tile for query head h at head h (dk's head stride), i.e. into
//    the GQA-expanded workspace the plan folds afterwards.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/host_twins/attention.hpp"
#include "jax_aiter/host_twins/attention_math.hpp"
#include "jax_aiter/kernels/aiter/fmha_v3.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/runtime/host.hpp"

namespace jax_aiter::host_twins {

namespace aiter_fmha_v3_twin {

namespace am = attn_math;
namespace K = kernels;

inline constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
inline constexpr int64_t kAll = std::numeric_limits<int64_t>::max();

constexpr am::Rounding rounding_of(int bf16_cvt) {
  return bf16_cvt == 1   ? am::Rounding::kNearestAway
         : bf16_cvt == 2 ? am::Rounding::kTowardZero
                         : am::Rounding::kNearestEven;
}

// A byte stride as elements of `size` bytes; false when it is not a whole number of them.
inline bool elems(uint32_t bytes, int64_t size, int64_t& out) {
  out = int64_t{bytes} / size;
  return bytes % size == 0;
}

// An operand [batch, seq, head, dim] from its byte strides (elements of `size` bytes).
inline bool operand(const void* p, uint32_t bs, uint32_t ss, uint32_t hs, am::Operand& o,
                    int64_t size = 2) {
  o.data = p;
  return p != nullptr && elems(bs, size, o.batch_stride) && elems(ss, size, o.seq_stride) &&
         elems(hs, size, o.head_stride);
}
inline bool output(void* p, uint32_t bs, uint32_t ss, uint32_t hs, am::Output& o) {
  am::Operand in;
  const bool ok = operand(p, bs, ss, hs, in);
  o = {p, in.batch_stride, in.seq_stride, in.head_stride};
  return ok;
}

// Group mode: the length array and the start array must be one (see the header comment).
inline bool same_offsets(const int* a, const int* b, int64_t batch) {
  if (a == b) return true;
  if (a == nullptr || b == nullptr) return false;
  for (int64_t i = 0; i <= batch; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

// The tiles block x computes of a sequence with n tiles: x alone, or x and n - 1 - x when paired.
struct Tiles {
  int64_t t[2] = {0, 0};
  int n = 0;
};
inline Tiles block_tiles(int64_t x, int64_t n, bool paired) {
  Tiles r;
  if (!paired) {
    if (x < n) r.t[r.n++] = x;
    return r;
  }
  const int64_t tail = n - 1 - x;
  if (x > tail) return r;
  r.t[r.n++] = x;
  if (tail != x) r.t[r.n++] = tail;
  return r;
}

// The rows of a sequence a tile covers, clipped.
inline am::Range tile_rows(int64_t tile, int64_t ts, int64_t len) {
  return am::Range{0, len} & am::Range{tile * ts, (tile + 1) * ts};
}

inline void nan_rows(const am::Output& o, DType t, int64_t b, int64_t h, int64_t start,
                     am::Range rows, int64_t cols) {
  attention_twin_detail::poison_rows(o, t, b, h, start, rows.lo, rows.hi, cols);
}

inline void nan_stats(const am::RowsOut& r, int64_t b, int64_t h, int64_t start, am::Range rows) {
  if (r.data == nullptr) return;
  for (int64_t i = rows.lo; i < rows.hi; ++i) {
    r.data[b * r.batch_stride + h * r.head_stride + start + i] = kNaN;
  }
}

// A window (attn_visible's left, right) for the row's mask, or false when the mask cannot be
// expressed for this problem (top-left causal with sq < sk, a window past the diagonal).
inline bool window_of(int mask, int64_t sq, int64_t sk, int32_t mask_x, int32_t mask_y, int& left,
                      int& right) {
  left = -1;
  right = -1;
  switch (mask) {
    case 0: return true;
    case 1:  // j <= i: bottom-right with right = sq - sk
      if (sq < sk) return false;
      right = static_cast<int>(sq - sk);
      return true;
    case 2: right = 0; return true;
    case 3: {  // i - mask_y < j < i + mask_x; the diagonal is i + sk - sq
      const int64_t l = sk - sq + int64_t{mask_y} - 1, r = int64_t{mask_x} - 1 - sk + sq;
      if (l < 0 || r < 0) return false;
      left = static_cast<int>(std::min<int64_t>(l, std::numeric_limits<int>::max()));
      right = static_cast<int>(std::min<int64_t>(r, std::numeric_limits<int>::max()));
      return true;
    }
    default: return false;
  }
}

// ================================ forward
// =========================================================

inline void fwd(const K::AiterFmhaFwdRow& row, const K::KernelArgs& packed, K::Dim3 grid) {
  const auto a = packed.unpack<K::AiterFmhaFwdArgs>();
  const bool gfx942_hd192 = row.arch == Arch::kGfx942 && row.hdim_q == 192;
  const bool paired = row.mask != 0 && !gfx942_hd192;
  const bool group = row.group;
  const int64_t batch = group ? grid.y : grid.z;
  am::View v;
  v.dtype = row.dtype;
  const bool fp8 = row.dtype != DType::kBF16;  // fp8bf16 rows
  const int64_t in = fp8 ? 1 : 2;
  am::Output out;
  am::RowsOut lse;
  bool addressable =
      operand(a.ptr_q.value, a.s_Bs.value, a.s_Seqs.value, a.s_Hs.value, v.q, in) &&
      operand(a.ptr_k.value, a.s_k_Bs.value, a.s_k_Seqs.value, a.s_k_Hs.value, v.k, in) &&
      operand(a.ptr_v.value, a.s_v_Bs.value, a.s_v_Seqs.value, a.s_v_Hs.value, v.v, in) &&
      output(a.ptr_o.value, a.s_o_Bs.value, a.s_o_Seqs.value, a.s_o_Hs.value, out) &&
      elems(a.s_lse_Hs.value, 4, lse.head_stride) &&
      (!fp8 || (a.ptr_q_descale.value != nullptr && a.ptr_k_descale.value != nullptr &&
                a.ptr_v_descale.value != nullptr));
  if (a.s_lse.value != 0) {
    addressable = addressable && a.ptr_lse.value != nullptr;
    lse.data = static_cast<float*>(a.ptr_lse.value);
    lse.batch_stride = group ? 0 : int64_t{a.s_q_head_num.value} * lse.head_stride;
  }
  if (group) {
    addressable = addressable && a.ptr_qseq.value != nullptr && a.ptr_kseq.value != nullptr;
  }
  if (!addressable) return;
  const int64_t hq = a.s_q_head_num.value, gqa = a.s_gqa.value;
  bool ok = a.s_qk_head_dim.value == static_cast<uint32_t>(row.hdim_q) &&
            a.s_v_head_dim.value == static_cast<uint32_t>(row.hdim_v) && gqa >= 1 &&
            hq % gqa == 0 && int64_t{a.s_Ts.value} == int64_t{row.ts_qo} * a.s_Seqs.value;
  if (group) {
    ok = ok && same_offsets(a.ptr_qseq.value, a.ptr_qseq_padding.value, batch) &&
         same_offsets(a.ptr_kseq.value, a.ptr_kseq_padding.value, batch);
  }
  v.batch = batch;
  v.seqlen_q = a.s_seq_len.value;
  v.seqlen_k = a.s_kv_seq_len.value;
  v.total_q = group ? v.seqlen_q : 0;
  v.total_k = group ? v.seqlen_k : 0;
  v.heads_q = hq;
  v.heads_k = gqa >= 1 ? hq / gqa : hq;
  v.head_dim = a.s_qk_head_dim.value;
  v.head_dim_v = a.s_v_head_dim.value;
  v.cu_seqlens_q = group ? a.ptr_qseq.value : nullptr;
  v.cu_seqlens_k = group ? a.ptr_kseq.value : nullptr;
  v.scale = a.scalar.value;
  v.window_right = row.mask == 2 ? 0 : -1;  // the forward rows are none or bottom-right causal
  ok = ok && (row.mask == 0 || row.mask == 2);
  const am::Rounding rounding = rounding_of(row.bf16_cvt);
  const int64_t ts = row.ts_qo;
  const int64_t heads = group ? grid.x : gfx942_hd192 ? grid.x : grid.y;
  const int64_t tiles = group ? grid.z : gfx942_hd192 ? grid.y : grid.x;
  // The descale of (sequence b, key head hk) at ptr + b * Bs + hk * Hs bytes.
  const auto descale = [&](const float* p, uint32_t bs, uint32_t hs, int64_t b, int64_t hk) {
    return *reinterpret_cast<const float*>(reinterpret_cast<const unsigned char*>(p) + b * bs +
                                           hk * hs);
  };
  for (int64_t b = 0; b < batch; ++b) {
    const am::Sequence s = am::sequence(v, b);
    const int64_t n = (s.sq + ts - 1) / ts;
    for (int64_t h = 0; h < std::min(heads, hq); ++h) {
      am::View vh = v;
      if (fp8 && ok) {
        const int64_t hk = h / gqa;
        vh.scale =
            v.scale *
            descale(a.ptr_q_descale.value, a.s_descale_q_Bs.value, a.s_descale_q_Hs.value, b, hk) *
            descale(a.ptr_k_descale.value, a.s_descale_k_Bs.value, a.s_descale_k_Hs.value, b, hk);
        vh.out_scale =
            descale(a.ptr_v_descale.value, a.s_descale_v_Bs.value, a.s_descale_v_Hs.value, b, hk);
      }
      for (int64_t x = 0; x < tiles; ++x) {
        const Tiles t = block_tiles(x, n, paired);
        for (int k = 0; k < t.n; ++k) {
          const am::Range rows = tile_rows(t.t[k], ts, s.sq);
          if (!ok) {
            nan_rows(out, v.out_dtype(), b, h, s.q_start, rows, v.head_dim_v);
            nan_stats(lse, b, h, s.q_start, rows);
            continue;
          }
          am::forward_rows(vh, out, lse, b, h, rows.lo, rows.hi, rounding);
        }
      }
    }
  }
}

// ================================ backward: odo
// ===================================================

inline void odo(const K::AiterFmhaBwdRow& row, const K::KernelArgs& packed, K::Dim3 grid) {
  const auto a = packed.unpack<K::AiterFmhaBwdOdoArgs>();
  am::View v;
  v.dtype = row.dtype;
  am::Operand o, dout;
  am::RowsOut d;
  int64_t seqs_d = 0;
  const bool addressable =
      operand(a.ptr_o.value, a.BAs_o.value, a.Seqs_o.value, a.Hs_o.value, o) &&
      operand(a.ptr_do.value, a.BAs_do.value, a.Seqs_do.value, a.Hs_do.value, dout) &&
      a.ptr_d.value != nullptr && elems(a.BAs_d.value, 4, d.batch_stride) &&
      elems(a.Hs_d.value, 4, d.head_stride) && elems(a.Seqs_d.value, 4, seqs_d) &&
      (!row.group || a.ptr_qseq.value != nullptr);
  if (!addressable) return;
  d.data = a.ptr_d.value;
  const int64_t batch = grid.z;
  bool ok =
      seqs_d == 1 && a.head_dim.value >= 1 && a.head_dim.value <= static_cast<uint32_t>(row.hdim_v);
  if (row.group) ok = ok && same_offsets(a.ptr_qseq.value, a.ptr_qseq_padded.value, batch);
  v.batch = batch;
  v.seqlen_q = a.seqlen_q.value;
  v.total_q = row.group ? v.seqlen_q : 0;
  v.head_dim_v = a.head_dim.value;
  v.cu_seqlens_q = row.group ? a.ptr_qseq.value : nullptr;
  const int64_t ts = row.ts;
  for (int64_t b = 0; b < batch; ++b) {
    const am::Sequence s = am::sequence(v, b);
    for (int64_t h = 0; h < grid.y; ++h) {
      for (int64_t x = 0; x < grid.x; ++x) {
        const am::Range rows = tile_rows(x, ts, s.sq);
        if (!ok) {
          // Seqs_d is not 4 bytes: the rows are poisoned where a dense delta has them.
          nan_stats(d, b, h, s.q_start, rows);
          continue;
        }
        am::delta_rows(v, o, dout, d, b, h, rows.lo, rows.hi);
      }
    }
  }
}

// ================================ backward: dqdkdv
// ================================================

// The tile AITER's pssk rule tests a row's problem against (mha_bwd.cu get_heuristic_kernel).
constexpr int64_t pssk_tile(const K::AiterFmhaBwdRow& r) {
  return (!r.atomic32 && (r.arch == Arch::kGfx942 || r.recompile)) ? 64 : r.ts;
}

// Where a block's dq contributions go.
enum class DqTarget : uint8_t {
  kAcc32,  // float32 accumulator (a32)
  kAcc16,  // 16-bit accumulator for dq_shuffle (a16 on gfx950)
  kDq,     // dq itself, q's strides (a16 on gfx942)
};

inline void dqdkdv(std::span<const K::AiterFmhaBwdRow* const> candidates,
                   const K::KernelArgs& packed, K::Dim3 grid) {
  const auto a = packed.unpack<K::AiterFmhaBwdDqdkdvArgs>();
  // The row: the one whose tile Ts says (symbols shared by builds of different tiles).
  const K::AiterFmhaBwdRow* row = candidates[0];
  bool ts_ok = false;
  for (const K::AiterFmhaBwdRow* r : candidates) {
    if (int64_t{a.Ts.value} == int64_t{r->ts} * a.Seqs_k.value && a.Seqs_k.value != 0) {
      row = r;
      ts_ok = true;
      break;
    }
  }
  const bool group = row->group;
  const int64_t batch = grid.z;
  am::View v;
  v.dtype = row->dtype;
  am::BwdInputs in;
  am::Output dk, dv, dq_direct;
  const bool addressable =
      operand(a.ptr_q.value, a.BAs_q.value, a.Seqs_q.value, a.Hs_q.value, v.q) &&
      operand(a.ptr_k.value, a.BAs_k.value, a.Seqs_k.value, a.Hs_k.value, v.k) &&
      operand(a.ptr_v.value, a.BAs_v.value, a.Seqs_v.value, a.Hs_v.value, v.v) &&
      operand(a.ptr_do.value, a.BAs_do.value, a.Seqs_do.value, a.Hs_do.value, in.dout) &&
      output(a.ptr_dk.value, a.BAs_dk.value, a.Seqs_dk.value, a.Hs_dk.value, dk) &&
      output(a.ptr_dv.value, a.BAs_dv.value, a.Seqs_dv.value, a.Hs_dv.value, dv) &&
      output(a.ptr_dq.value, a.BAs_q.value, a.Seqs_q.value, a.Hs_q.value, dq_direct) &&
      a.ptr_lse.value != nullptr && a.ptr_d.value != nullptr &&
      elems(a.Hs_lsed.value, 4, in.lse.head_stride) &&
      (!group || (a.ptr_qseq.value != nullptr && a.ptr_kseq.value != nullptr));
  if (!addressable) return;
  const int64_t hq = a.nhead_q.value, ratio = a.ratio.value;
  const int64_t d = a.head_dim_q.value, dvd = a.head_dim_v.value;
  in.lse.data = a.ptr_lse.value;
  in.lse.batch_stride = group ? 0 : hq * in.lse.head_stride;
  in.delta = {a.ptr_d.value, in.lse.batch_stride, in.lse.head_stride};

  bool ok = ts_ok && ratio >= 1 && hq % ratio == 0 && d >= 1 && dvd >= 1 && d <= row->hdim_q &&
            dvd <= row->hdim_v && (row->pddv || (d == row->hdim_q && dvd == row->hdim_v)) &&
            std::abs(a.log2e.value - 1.44269504f) < 1e-6f;
  if (!row->pssk) {
    const int64_t tile = pssk_tile(*row);
    ok = ok && a.seqlen_q.value == a.seqlen_k.value && a.seqlen_k.value % tile == 0 &&
         a.Seqs_do.value == a.Seqs_q.value && a.Hs_do.value == a.Hs_q.value &&
         a.BAs_do.value == a.BAs_q.value && a.Seqs_v.value == a.Seqs_k.value &&
         a.Hs_v.value == a.Hs_k.value && a.BAs_v.value == a.BAs_k.value &&
         a.Hs_dk.value == a.Hs_k.value && a.Hs_dv.value == a.Hs_v.value;
  }
  if (group) {
    ok = ok && same_offsets(a.ptr_qseq.value, a.ptr_qseq_padded.value, batch) &&
         same_offsets(a.ptr_kseq.value, a.ptr_kseq_padded.value, batch);
  }
  int left = -1, right = -1;
  if (row->mask == 1 || row->mask == 3) ok = ok && !group;  // no group rows of these masks
  ok = ok && window_of(row->mask, a.seqlen_q.value, a.seqlen_k.value, a.mask_x.value,
                       a.mask_y.value, left, right);
  v.batch = batch;
  v.seqlen_q = a.seqlen_q.value;
  v.seqlen_k = a.seqlen_k.value;
  v.total_q = group ? v.seqlen_q : 0;
  v.total_k = group ? v.seqlen_k : 0;
  v.heads_q = hq;
  v.heads_k = ratio >= 1 ? hq / ratio : hq;
  v.head_dim = d;
  v.head_dim_v = dvd;
  v.cu_seqlens_q = group ? a.ptr_qseq.value : nullptr;
  v.cu_seqlens_k = group ? a.ptr_kseq.value : nullptr;
  v.scale = a.scalar.value;
  v.window_left = left;
  v.window_right = right;

  // The dq target and its layout (mha_bwd.cu's dq_accum comment).
  const DqTarget target = row->atomic32                ? DqTarget::kAcc32
                          : row->arch == Arch::kGfx950 ? DqTarget::kAcc16
                                                       : DqTarget::kDq;
  const int64_t msd = a.max_seqlen_dq.value, ph = row->hdim_q;
  if (target == DqTarget::kAcc16) ok = ok && msd % 16 == 0;
  const am::Rounding rounding = rounding_of(row->bf16_cvt);
  // Element offset of dq row i (from the sequence's start) in the target, column 0.
  const auto dq_at = [&](int64_t b, int64_t h, int64_t start, int64_t i) -> int64_t {
    switch (target) {
      case DqTarget::kAcc32:
        return (group ? 0 : b * hq * v.seqlen_q * d) + h * v.seqlen_q * d + (start + i) * d;
      case DqTarget::kAcc16: return ((b * hq + h) * msd + i) * ph;
      case DqTarget::kDq: return dq_direct.offset(b, start + i, h);
    }
    return 0;
  };
  const int64_t ts = row->ts;
  const bool paired = row->mask == 1 || row->mask == 2;
  std::vector<float> dq_part, dk_part(static_cast<size_t>(ts * d)),
      dv_part(static_cast<size_t>(ts * dvd));
  for (int64_t b = 0; b < batch; ++b) {
    const am::Sequence s = am::sequence(v, b);
    const int64_t n = (s.sk + ts - 1) / ts;
    bool seq_ok = ok && (target != DqTarget::kAcc16 || s.sq <= msd);
    dq_part.resize(static_cast<size_t>(s.sq * d));
    for (int64_t h = 0; h < std::min<int64_t>(grid.y, hq); ++h) {
      for (int64_t x = 0; x < grid.x; ++x) {
        const Tiles t = block_tiles(x, n, paired);
        for (int k = 0; k < t.n; ++k) {
          const am::Range keys = tile_rows(t.t[k], ts, s.sk);
          const int64_t nk = keys.hi - keys.lo;
          const float init = seq_ok ? 0.f : kNaN;
          std::fill(dq_part.begin(), dq_part.end(), init);
          std::fill(dk_part.begin(), dk_part.end(), init);
          std::fill(dv_part.begin(), dv_part.end(), init);
          if (seq_ok) {
            am::backward_tile(
                v, in, b, h, 0, kAll, keys.lo, keys.hi,
                {{dq_part.data(), d}, {dk_part.data(), d}, {dv_part.data(), dvd}, {}});
          }
          am::store_rows(dk_part.data(), d, nk, d, dk.data, dk.offset(b, s.k_start + keys.lo, h),
                         dk.seq_stride, v.dtype, rounding);
          am::store_rows(dv_part.data(), dvd, nk, dvd, dv.data,
                         dv.offset(b, s.k_start + keys.lo, h), dv.seq_stride, v.dtype, rounding);
          // (a 16-bit accumulator holds max_seqlen_dq rows a head: a longer sequence is refused
          // above, and its poison stays inside the slice)
          const int64_t dq_rows = target == DqTarget::kAcc16 ? std::min(s.sq, msd) : s.sq;
          for (int64_t i = 0; i < dq_rows; ++i) {
            const float* part = dq_part.data() + i * d;
            const int64_t at = dq_at(b, h, s.q_start, i);
            for (int64_t c = 0; c < d; ++c) {
              if (target == DqTarget::kAcc32) {
                static_cast<float*>(a.ptr_dq.value)[at + c] += part[c];
              } else {  // a 16-bit add: the running sum rounded each time
                const float sum = am::load(a.ptr_dq.value, at + c, v.dtype) + part[c];
                am::store(a.ptr_dq.value, at + c, v.dtype, sum, rounding);
              }
            }
          }
        }
      }
    }
  }
}

// ================================ backward: dq_convert / dq_shuffle
// ===============================

// dq_convert (a32: float32 accumulator rows from the sequence's start, to dq rounded by bf16_cvt)
// and dq_shuffle (a16: 16-bit accumulator rows from 0 in each sequence's slice, copied bit for bit,
// so one bf16 row serves f16 too, as AITER's lookup allows).
inline void post(const K::AiterFmhaBwdRow& row, bool convert, const K::KernelArgs& packed,
                 K::Dim3 grid) {
  const auto a = packed.unpack<K::AiterFmhaBwdPostArgs>();
  const int64_t esize = convert ? 4 : 2;
  int64_t acc_bs = 0, acc_hs = 0, acc_ss = 0;
  am::Output dq;
  const bool addressable =
      a.ptr_dq_acc.value != nullptr && elems(a.BAs_dq_acc.value, esize, acc_bs) &&
      elems(a.Hs_dq_acc.value, esize, acc_hs) && elems(a.Seqs_dq_acc.value, esize, acc_ss) &&
      output(a.ptr_dq.value, a.BAs_dq.value, a.Seqs_dq.value, a.Hs_dq.value, dq) &&
      (!row.group || a.ptr_qseq.value != nullptr);
  if (!addressable) return;
  const int64_t batch = grid.z, dim = a.head_dim.value;
  bool ok = dim >= 1 && dim <= row.hdim_q;
  if (row.group) ok = ok && same_offsets(a.ptr_qseq.value, a.ptr_qseq_padded.value, batch);
  am::View v;
  v.batch = batch;
  v.seqlen_q = a.seqlen_q.value;
  v.total_q = row.group ? v.seqlen_q : 0;
  v.cu_seqlens_q = row.group ? a.ptr_qseq.value : nullptr;
  // dq's dtype: the row's for dq_convert; dq_shuffle copies 16-bit values of either dtype.
  const DType dt = row.dtype;
  const am::Rounding rounding = rounding_of(row.bf16_cvt);
  const int64_t ts = row.ts;
  const auto* acc32 = static_cast<const float*>(a.ptr_dq_acc.value);
  const auto* acc16 = static_cast<const uint16_t*>(a.ptr_dq_acc.value);
  auto* dq16 = static_cast<uint16_t*>(a.ptr_dq.value);
  for (int64_t b = 0; b < batch; ++b) {
    const am::Sequence s = am::sequence(v, b);
    for (int64_t h = 0; h < grid.y; ++h) {
      for (int64_t x = 0; x < grid.x; ++x) {
        const am::Range rows = tile_rows(x, ts, s.sq);
        for (int64_t i = rows.lo; i < rows.hi; ++i) {
          const int64_t out_at = dq.offset(b, s.q_start + i, h);
          const int64_t acc_at = b * acc_bs + h * acc_hs + (convert ? s.q_start + i : i) * acc_ss;
          for (int64_t c = 0; c < dim; ++c) {
            if (!ok) {
              am::store(dq16, out_at + c, dt, kNaN);
            } else if (convert) {
              am::store(dq16, out_at + c, dt, acc32[acc_at + c], rounding);
            } else {
              dq16[out_at + c] = acc16[acc_at + c];
            }
          }
        }
      }
    }
  }
}

// ================================ registration
// ====================================================

constexpr bool same_symbol(const K::KernelInfo& a, const K::KernelInfo& b) {
  return a.symbol == b.symbol;
}

// Rows sharing a symbol must mean the same to a twin keyed by symbol (the dqdkdv twin also takes
// differing tiles, telling them apart by Ts).
template <const auto& Table>
constexpr bool consistent(bool dqdkdv) {
  using Row = std::remove_cvref_t<decltype(Table[0])>;
  for (const auto& r : Table) {
    for (const auto& o : Table) {
      if (!same_symbol(r.kernel, o.kernel)) continue;
      if constexpr (std::is_same_v<Row, K::AiterFmhaFwdRow>) {
        if (r.dtype != o.dtype || r.hdim_q != o.hdim_q || r.hdim_v != o.hdim_v ||
            r.mask != o.mask || r.group != o.group || r.bf16_cvt != o.bf16_cvt ||
            r.ts_qo != o.ts_qo || r.arch != o.arch) {
          return false;
        }
      } else {
        if (r.dtype != o.dtype || r.hdim_q != o.hdim_q || r.hdim_v != o.hdim_v ||
            r.mask != o.mask || r.atomic32 != o.atomic32 || r.pssk != o.pssk || r.pddv != o.pddv ||
            r.group != o.group || r.bf16_cvt != o.bf16_cvt || (!dqdkdv && r.ts != o.ts)) {
          return false;
        }
        // The dqdkdv twin's pssk tile and dq target depend on the arch for a16 rows.
        if (dqdkdv && !r.atomic32 && r.arch != o.arch) return false;
      }
    }
  }
  return true;
}
static_assert(consistent<K::kAiterFmhaFwdRows>(false));
static_assert(consistent<K::kAiterFmhaBwdOdoRows>(false));
static_assert(consistent<K::kAiterFmhaBwdDqdkdvRows>(true));
static_assert(consistent<K::kAiterFmhaBwdDqConvertRows>(false));
static_assert(consistent<K::kAiterFmhaBwdDqShuffleRows>(false));

// The dqdkdv rows of row I's symbol, row I first.
template <size_t I>
constexpr auto dqdkdv_candidates() {
  constexpr auto& T = K::kAiterFmhaBwdDqdkdvRows;
  constexpr size_t n = [] {
    size_t c = 0;
    for (const auto& r : K::kAiterFmhaBwdDqdkdvRows) {
      c += same_symbol(r.kernel, K::kAiterFmhaBwdDqdkdvRows[I].kernel) ? 1 : 0;
    }
    return c;
  }();
  std::array<const K::AiterFmhaBwdRow*, n> out{};
  out[0] = &T[I];
  size_t k = 1;
  for (size_t j = 0; j < std::size(T); ++j) {
    if (j != I && same_symbol(T[j].kernel, T[I].kernel)) out[k++] = &T[j];
  }
  return out;
}

template <size_t I>
void fwd_twin(const K::KernelArgs& args, K::Dim3 grid, K::Dim3 /*block*/) {
  fwd(K::kAiterFmhaFwdRows[I], args, grid);
}
template <size_t I>
void odo_twin(const K::KernelArgs& args, K::Dim3 grid, K::Dim3 /*block*/) {
  odo(K::kAiterFmhaBwdOdoRows[I], args, grid);
}
template <size_t I>
void dqdkdv_twin(const K::KernelArgs& args, K::Dim3 grid, K::Dim3 /*block*/) {
  static constexpr auto kCandidates = dqdkdv_candidates<I>();
  dqdkdv(kCandidates, args, grid);
}
template <size_t I>
void dq_convert_twin(const K::KernelArgs& args, K::Dim3 grid, K::Dim3 /*block*/) {
  post(K::kAiterFmhaBwdDqConvertRows[I], true, args, grid);
}
template <size_t I>
void dq_shuffle_twin(const K::KernelArgs& args, K::Dim3 grid, K::Dim3 /*block*/) {
  post(K::kAiterFmhaBwdDqShuffleRows[I], false, args, grid);
}

// Every row registers; the registry keeps a symbol's first (the rows of a symbol agree, above).
template <const auto& Table, template <size_t> class Twin, size_t... I>
bool register_rows(std::index_sequence<I...>) {
  (runtime::HostTwins::add(Table[I].kernel.symbol, Twin<I>::value), ...);
  return true;
}
template <size_t I>
struct FwdTwin {
  static constexpr runtime::HostTwin value = &fwd_twin<I>;
};
template <size_t I>
struct OdoTwin {
  static constexpr runtime::HostTwin value = &odo_twin<I>;
};
template <size_t I>
struct DqdkdvTwin {
  static constexpr runtime::HostTwin value = &dqdkdv_twin<I>;
};
template <size_t I>
struct DqConvertTwin {
  static constexpr runtime::HostTwin value = &dq_convert_twin<I>;
};
template <size_t I>
struct DqShuffleTwin {
  static constexpr runtime::HostTwin value = &dq_shuffle_twin<I>;
};

inline const bool kRegistered =
    register_rows<K::kAiterFmhaFwdRows, FwdTwin>(
        std::make_index_sequence<std::size(K::kAiterFmhaFwdRows)>{}) &&
    register_rows<K::kAiterFmhaBwdOdoRows, OdoTwin>(
        std::make_index_sequence<std::size(K::kAiterFmhaBwdOdoRows)>{}) &&
    register_rows<K::kAiterFmhaBwdDqdkdvRows, DqdkdvTwin>(
        std::make_index_sequence<std::size(K::kAiterFmhaBwdDqdkdvRows)>{}) &&
    register_rows<K::kAiterFmhaBwdDqConvertRows, DqConvertTwin>(
        std::make_index_sequence<std::size(K::kAiterFmhaBwdDqConvertRows)>{}) &&
    register_rows<K::kAiterFmhaBwdDqShuffleRows, DqShuffleTwin>(
        std::make_index_sequence<std::size(K::kAiterFmhaBwdDqShuffleRows)>{});

}  // namespace aiter_fmha_v3_twin

}  // namespace jax_aiter::host_twins
