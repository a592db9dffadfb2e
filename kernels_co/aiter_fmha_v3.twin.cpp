// ABI twins of AITER's ASM v3 attention kernels (hsa/<arch>/fmha_v3_fwd/*.co and
// hsa/<arch>/fmha_v3_bwd/*.co; origin github.com/ROCm/aiter at e4048607a535, MIT, (c) AMD): one
// kernel per row symbol of the lists in include/jax_aiter/kernels/shared/aiter_fmha_v3.h, named by
// the symbol and declaring AITER's kernel arguments as AITER's code objects do (names, offsets,
// sizes, kernarg segment; /work/shared/aiter-facts/kernel-arguments.txt, compared by
// tests/cpp/data/check_twin_kernargs.py). Each honours the row's launch contract with our own
// float32 tile code (jax_aiter_attn_twin.hpp), so an ASM-tier plan (ops/attention_asm.hpp) runs
// unchanged with the twins in place of AITER's code objects: on AMD without an AITER checkout, and
// on sm_90.
//
// Which rows: a gfx942 or gfx950 build defines the kernels of that arch's rows (gfx950's dqdkdv
// kernels name some arguments differently from gfx942's: head_dim_k, and 4-byte ptr_seqstart_*
// declarations), the sm_90 build those of both. A symbol is defined once: gfx942's MI308 forward
// rows repeat its MI300 ones, and a few gfx950 backward rows repeat gfx942 symbols (odo, fp16
// dq_convert, fp16 hd128 a32 dqdkdv, whose tile is 192 keys on gfx942 and 256 on gfx950: the
// sm_90 twin accepts either, read from Ts). static_asserts below check that every row this build
// serves has exactly one definition.
//
// The contracts (restated in ABI-AND-RULES.md 4.7 / 4.8 and ops/attention_asm.hpp; all strides in
// bytes; "sequence" is the batch index in batch mode, the cu_seqlens entry in group mode, where
// sequence s starts at row ptr_*_padded[s] and has ptr_*[s + 1] - ptr_*[s] rows):
//  forward: block 512 threads (hd128) or 256 (hd192/128). Grid (tiles / tg, hq, b); gfx942's
//    hd192/128 rows (hq, tiles, b) with tg 1; group mode (hq, b, tiles / tg); tiles of ts_qo
//    query rows over seq_len (total_q in group mode), tg = 2 for masked rows (not gfx942
//    hd192/128): block t then computes tile t and tile n - 1 - t of its sequence's n tiles. Head
//    dims exactly the row's; s_Ts = ts_qo * s_Seqs; key head h / gqa; mask 2 is causal aligned
//    bottom-right; lse (natural log, +inf for a row that sees no key) written when `lse` is set, at
//    LSE + (b hq + h) lse_Hs + 4 i (batch) or LSE + h lse_Hs + 4 (start + i) (group); out rounded
//    as the row's bf16_cvt says.
//  odo: block 256, grid (ceil(max_sq / 128), hq, b): D[i] = sum over head_dim (<= the row's
//    hdim_v) columns of O dO, float32, at D + b BAs_d + h Hs_d + (start + i) Seqs_d.
//  dqdkdv: block 256, grid (ceil(max_sk / ts), hq, b), causal rows (mask 1, 2) ceil(n / 2) blocks
//    each doing key tiles t and n - 1 - t. ts = Ts / Seqs_k must be the row's. Head dims: the
//    row's, or (pddv rows) any up to them. Rows without pssk need seqlen_q == seqlen_k, a multiple
//    of their tile (64 for gfx942's a16 rows and "recompile" builds), and (as AITER's Python
//    admits them only then) q's strides equal to dO's, k's to v's, dk's / dv's head strides to k's
//    / v's. dk / dv per query head h (GQA-expanded when ratio > 1; key head h / ratio read),
//    scaled and rounded as bf16_cvt says. lse / D at Lse + (b nhead_q + h) seqlen_q + i (batch)
//    or Lse + h Hs_lsed / 4 + start + i (group). Masks: 0 none, 1 top-left causal, 2 bottom-right
//    causal, 3 window i - mask_y < j < i + mask_x. dq: a32 rows add float32 into the accumulator
//    [b, hq, seqlen_q, head_dim_q] (group mode [hq, total_q, head_dim_q], row start + i);
//    gfx950's a16 rows add 16-bit values (the problem's dtype) into
//    [b, hq, max_seq_len_dq, hdim_q of the row] (row i of the sequence); gfx942's a16 rows (no
//    post-pass) add into dq itself, addressed like q.
//  dq_convert: block 256, grid (ceil(max_sq / 64), hq, b): dq (start + i) = the float32
//    accumulator at dQ_acc + b BAs + h Hs + (start + i) Seqs, rounded as bf16_cvt says.
//  dq_shuffle: the same from the 16-bit accumulator row i (not start + i), copied as is.
// A block whose contract check fails (block size, head dims, tile, pssk) writes NaN over the rows
// it owns, so a wrong plan fails its comparison; blocks past a sequence's tiles do nothing. The
// same conventions as the host twins (include/jax_aiter/host_twins/aiter_fmha_v3.hpp), where the
// ASM kernels' layouts are not public (the a16 accumulator's element order, the tile pairing).
//
// Compile time: each kernel is a thin entry calling one of five noinline functions (two forward
// instantiations, odo, dqdkdv, post). clang compiles those once; ptxas compiles a kernel's callees
// into every kernel (about 0.4 s a kernel for the sm_90 build's 182).
//
// Build: as the other twins (nvcc -cubin -arch=sm_90 ...; clang++-22 -x hip ...
// -fhip-kernel-arg-name for the argument names).
#include "jax_aiter/kernels/shared/aiter_fmha_v3.h"
#include "jax_aiter_attn_twin.hpp"

// AITER's symbols are mangled C++ names declared here as extern "C" identifiers, which the
// language reserves (leading underscore and capital).
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wreserved-identifier"
#endif

namespace ja::fmha_twin {

// ---- the argument structs as the kernels receive them -------------------------------------------

struct FwdArgs {
  unsigned char* o;
  const unsigned char *q, *k, *v;
  float* lse;
  float scale;
  uint32_t seq_len, Seqs, Ts, Hs, Bs, gqa, k_Seqs, k_Hs, k_Bs, lse_on, kv_seq_len, qk_head_dim,
      v_head_dim, q_head_num, v_Seqs, v_Hs, v_Bs, r_Seqs, r_Hs, r_Bs, lse_Hs;
  const int *qseq, *kseq, *qseq_padding, *kseq_padding;
  // fp8 rows only: float32 descales at ptr + b Bs + (h / gqa) Hs bytes.
  const unsigned char *q_descale = nullptr, *k_descale = nullptr, *v_descale = nullptr;
  uint32_t qd_Bs = 0, qd_Hs = 0, kd_Bs = 0, kd_Hs = 0, vd_Bs = 0, vd_Hs = 0;
};
struct FwdRow {
  int hdim_q, hdim_v, mask, group, cvt, ts_qo, threads;
  bool head_first;  // gfx942's hd192/128 batch grid (hq, tiles, b)
  bool paired;      // tg 2
  int fp8 = 0;      // fp8bf16 rows: the e4m3 format's in_dtype code (kernels/shared/attention.h)
};

struct OdoArgs {
  const unsigned char *o, *dout;
  unsigned char* d;
  uint32_t Hs_o, BAs_o, Seqs_o, Hs_do, BAs_do, Seqs_do, Hs_d, BAs_d, Seqs_d, seqlen_q, head_dim;
  const int *qseq, *qseq_padded;
};
struct BwdRowOdo {
  int hdim_v, group, ts;
  bool f16;
};

struct MainArgs {
  unsigned char *dq, *dk, *dv;
  const unsigned char *q, *k, *v, *dout;
  const float *lse, *d;
  float scale, log2e;
  uint32_t seqlen_q, Ts, Hs_q, BAs_q, Seqs_q, ratio, Hs_k, BAs_k, Seqs_k, Seqs_dk, seqlen_k,
      head_dim_q, head_dim_v, nhead_q, Hs_v, BAs_v, Seqs_v, Hs_do, BAs_do, Seqs_do, Hs_dk, BAs_dk,
      Hs_dv, BAs_dv, Seqs_dv, Hs_lsed, max_seq_len_dq;
  const int *qseq, *kseq, *qseq_padded, *kseq_padded;
  int mask_x, mask_y;
};
struct MainRow {
  int hdim_q, hdim_v, mask, pssk, pddv, group, cvt;
  int ts, ts_other;  // the tile, and the other arch's for a symbol both ship (sm_90), else 0
  int pssk_tile;     // the multiple of it seqlen_k must be without pssk
  bool a32, dq_direct, f16;
};

struct PostArgs {
  const unsigned char* acc;
  unsigned char* dq;
  uint32_t Hs_acc, BAs_acc, Seqs_acc, Hs_dq, BAs_dq, Seqs_dq, seqlen_q, head_dim;
  const int *qseq, *qseq_padded;
};
struct PostRow {
  int hdim, group, ts, cvt;
  bool shuffle, f16;
};

JA_DEVICE const int* ptr_of(uint32_t lo, uint32_t hi) {
  return reinterpret_cast<const int*>((static_cast<uint64_t>(hi) << 32) | lo);
}
JA_DEVICE int cdiv(long long a, long long b) { return static_cast<int>((a + b - 1) / b); }

// Where sequence b lies (batch mode: row 0, the lengths given).
struct Seq {
  long long q0, k0;
  int sq, sk;
};
JA_DEVICE Seq sequence(bool group, int b, int sq, int sk, const int* qseq, const int* qpad,
                       const int* kseq, const int* kpad) {
  if (!group) return {0, 0, sq, sk};
  Seq s{qpad[b], 0, qseq[b + 1] - qseq[b], 0};
  if (kseq != nullptr) s.k0 = kpad[b], s.sk = kseq[b + 1] - kseq[b];
  return s;
}

// The tiles block t owns among n: t, and with pairing n - 1 - t; returns how many (0..2).
JA_DEVICE int owned_tiles(int t, int n, bool paired, int (&out)[2]) {
  if (!paired) {
    out[0] = t;
    return t < n ? 1 : 0;
  }
  if (t >= (n + 1) / 2) return 0;
  out[0] = t, out[1] = n - 1 - t;
  return out[1] != t ? 2 : 1;
}

// ---- forward ------------------------------------------------------------------------------------

JA_DEVICE float descale_at(const unsigned char* p, uint32_t bs, uint32_t hs, long long b,
                           long long hk) {
  return *reinterpret_cast<const float*>(p + b * bs + hk * hs);
}

// T threads, head dims (DQ, 128), or (256, 256) for gfx950's fp8 rows (32-row passes: 64 rows of
// 256 columns do not fit the pool): one instantiation per row shape.
template <int T, int DQ>
JA_TWIN_FN void fwd(FwdArgs a, FwdRow r, unsigned char* pool) {
  constexpr int DV = DQ == 256 ? 256 : 128, BM = DQ == 256 ? 32 : 64;
  const int x = block_id(), y = block_id_y(), z = block_id_z();
  const int h = r.group ? x : r.head_first ? x : y;
  const int b = r.group ? y : z;
  const int t = r.group ? z : r.head_first ? y : x;
  if (h >= static_cast<int>(a.q_head_num)) return;
  if (r.fp8 != 0 && (a.q_descale == nullptr || a.k_descale == nullptr || a.v_descale == nullptr)) {
    return;  // unaddressable
  }
  const Seq s =
      sequence(r.group, b, a.seq_len, a.kv_seq_len, a.qseq, a.qseq_padding, a.kseq, a.kseq_padding);
  const bool ok = block_threads() == r.threads && a.qk_head_dim == uint32_t(r.hdim_q) &&
                  a.v_head_dim == uint32_t(r.hdim_v) && a.Seqs != 0 &&
                  a.Ts == uint32_t(r.ts_qo) * a.Seqs && a.gqa >= 1 && a.q_head_num % a.gqa == 0;
  const long long bq = r.group ? 0 : b, hk = a.gqa >= 1 ? h / a.gqa : 0;
  FwdJob j;
  j.pool = pool;
  j.q = a.q + bq * a.Bs + h * static_cast<long long>(a.Hs) + s.q0 * a.Seqs;
  j.k = a.k + bq * a.k_Bs + hk * a.k_Hs + s.k0 * a.k_Seqs;
  j.v = a.v + bq * a.v_Bs + hk * a.v_Hs + s.k0 * a.v_Seqs;
  j.o = a.o + bq * a.r_Bs + h * static_cast<long long>(a.r_Hs) + s.q0 * a.r_Seqs;
  j.lse = a.lse_on == 0 ? nullptr
          : r.group     ? a.lse + h * static_cast<long long>(a.lse_Hs / 4) + s.q0
                        : a.lse + (bq * a.q_head_num + h) * static_cast<long long>(a.lse_Hs / 4);
  j.q_rs = a.Seqs, j.k_rs = a.k_Seqs, j.v_rs = a.v_Seqs, j.o_rs = a.r_Seqs;
  j.sq = s.sq, j.sk = s.sk, j.d = r.hdim_q, j.dv = r.hdim_v;
  j.scale = a.scale;
  j.mask = Mask{r.mask, 0, 0, s.sq, s.sk};
  j.f16 = false;
  j.cvt = r.cvt;
  j.fp8 = r.fp8;
  if (r.fp8 != 0 && ok) {  // f16 tiles hold 2^-shift times the inputs (load_rows_fp8)
    const float unshift =
        jax_aiter::kernels::attention::attn_fp8_f16_shift(r.fp8) == 7 ? 128.f : 256.f;
    j.scale *= descale_at(a.q_descale, a.qd_Bs, a.qd_Hs, b, hk) *
               descale_at(a.k_descale, a.kd_Bs, a.kd_Hs, b, hk) * unshift * unshift;
    j.out_scale = descale_at(a.v_descale, a.vd_Bs, a.vd_Hs, b, hk) * unshift;
  }
  int tiles[2];
  const int n = owned_tiles(t, cdiv(s.sq, r.ts_qo), r.paired, tiles);
  for (int u = 0; u < n; ++u) {
    const int r0 = tiles[u] * r.ts_qo, r1 = r0 + r.ts_qo < s.sq ? r0 + r.ts_qo : s.sq;
    if (!ok) {
      poison16(j.o, j.o_rs, r0, r1, r.hdim_v);
      for (int i = r0 + thread_id(); j.lse != nullptr && i < r1; i += block_threads()) {
        j.lse[i] = nan_();
      }
    } else {
      fwd_rows<T, DQ, DV, BM>(j, r0, r1);
    }
  }
}

// ---- backward -----------------------------------------------------------------------------------

JA_TWIN_FN void odo(OdoArgs a, BwdRowOdo r) {
  const int x = block_id(), h = block_id_y(), b = block_id_z();
  const Seq s = sequence(r.group, b, a.seqlen_q, 0, a.qseq, a.qseq_padded, nullptr, nullptr);
  const int r0 = x * r.ts, r1 = r0 + r.ts < s.sq ? r0 + r.ts : s.sq;
  if (r0 >= r1) return;
  const long long bq = r.group ? 0 : b;
  OdoJob j;
  j.o = a.o + bq * a.BAs_o + h * static_cast<long long>(a.Hs_o) + s.q0 * a.Seqs_o;
  j.dout = a.dout + bq * a.BAs_do + h * static_cast<long long>(a.Hs_do) + s.q0 * a.Seqs_do;
  j.d = a.d + bq * a.BAs_d + h * static_cast<long long>(a.Hs_d) + s.q0 * a.Seqs_d;
  j.o_rs = a.Seqs_o, j.do_rs = a.Seqs_do, j.d_rs = a.Seqs_d;
  j.cols = static_cast<int>(a.head_dim);
  j.f16 = r.f16;
  const bool ok = block_threads() == 256 && a.head_dim > 0 && a.head_dim <= uint32_t(r.hdim_v);
  if (ok) {
    odo_rows(j, r0, r1);
  } else {
    for (int i = r0 + thread_id(); i < r1; i += block_threads()) {
      *reinterpret_cast<float*>(j.d + i * j.d_rs) = nan_();
    }
  }
}

// What AITER's Python requires before it admits a row without pssk (npssk): q laid out as dout,
// k as v, and dk / dv with k's / v's head strides.
JA_DEVICE bool same_layouts(const MainArgs& a) {
  return a.Seqs_q == a.Seqs_do && a.Hs_q == a.Hs_do && a.BAs_q == a.BAs_do &&
         a.Seqs_k == a.Seqs_v && a.Hs_k == a.Hs_v && a.BAs_k == a.BAs_v && a.Hs_dk == a.Hs_k &&
         a.Hs_dv == a.Hs_v;
}

JA_TWIN_FN void dqdkdv(MainArgs a, MainRow r, unsigned char* pool) {
  const int x = block_id(), h = block_id_y(), b = block_id_z();
  if (h >= static_cast<int>(a.nhead_q)) return;
  const Seq s =
      sequence(r.group, b, a.seqlen_q, a.seqlen_k, a.qseq, a.qseq_padded, a.kseq, a.kseq_padded);
  const int ts = a.Seqs_k != 0 ? static_cast<int>(a.Ts / a.Seqs_k) : 0;
  const bool dims = r.pddv
                        ? a.head_dim_q > 0 && a.head_dim_q <= uint32_t(r.hdim_q) &&
                              a.head_dim_v > 0 && a.head_dim_v <= uint32_t(r.hdim_v)
                        : a.head_dim_q == uint32_t(r.hdim_q) && a.head_dim_v == uint32_t(r.hdim_v);
  const bool ok = block_threads() == 256 && dims && ts > 0 && a.Ts == uint32_t(ts) * a.Seqs_k &&
                  (ts == r.ts || ts == r.ts_other) && a.ratio >= 1 && a.nhead_q % a.ratio == 0 &&
                  (r.pssk != 0 || (a.seqlen_q == a.seqlen_k &&
                                   a.seqlen_k % uint32_t(r.pssk_tile) == 0 && same_layouts(a))) &&
                  (r.a32 || r.dq_direct || s.sq <= static_cast<int>(a.max_seq_len_dq));
  const long long bq = r.group ? 0 : b, hk = a.ratio >= 1 ? h / a.ratio : 0;
  BwdJob j;
  j.pool = pool;
  j.q = a.q + bq * a.BAs_q + h * static_cast<long long>(a.Hs_q) + s.q0 * a.Seqs_q;
  j.k = a.k + bq * a.BAs_k + hk * a.Hs_k + s.k0 * a.Seqs_k;
  j.v = a.v + bq * a.BAs_v + hk * a.Hs_v + s.k0 * a.Seqs_v;
  j.dout = a.dout + bq * a.BAs_do + h * static_cast<long long>(a.Hs_do) + s.q0 * a.Seqs_do;
  const long long lsed = r.group ? h * static_cast<long long>(a.Hs_lsed / 4) + s.q0
                                 : (bq * a.nhead_q + h) * static_cast<long long>(a.seqlen_q);
  j.lse = a.lse + lsed, j.delta = a.d + lsed;
  j.dk_out = a.dk + bq * a.BAs_dk + h * static_cast<long long>(a.Hs_dk) + s.k0 * a.Seqs_dk;
  j.dv_out = a.dv + bq * a.BAs_dv + h * static_cast<long long>(a.Hs_dv) + s.k0 * a.Seqs_dv;
  j.q_rs = a.Seqs_q, j.k_rs = a.Seqs_k, j.v_rs = a.Seqs_v, j.do_rs = a.Seqs_do;
  j.dk_rs = a.Seqs_dk, j.dv_rs = a.Seqs_dv;
  if (r.a32) {
    const long long row = r.group ? h * static_cast<long long>(a.seqlen_q) + s.q0
                                  : (bq * a.nhead_q + h) * static_cast<long long>(a.seqlen_q);
    j.dq = a.dq + row * a.head_dim_q * 4, j.dq_rs = a.head_dim_q * 4;
  } else if (r.dq_direct) {
    j.dq = a.dq + bq * a.BAs_q + h * static_cast<long long>(a.Hs_q) + s.q0 * a.Seqs_q;
    j.dq_rs = a.Seqs_q;
  } else {
    const long long row = (static_cast<long long>(b) * a.nhead_q + h) * a.max_seq_len_dq;
    j.dq = a.dq + row * r.hdim_q * 2, j.dq_rs = r.hdim_q * 2;
  }
  j.dq_f32 = r.a32;
  j.sq = s.sq, j.sk = s.sk;
  j.d = static_cast<int>(a.head_dim_q), j.dv = static_cast<int>(a.head_dim_v);
  j.scale = a.scale, j.log2e = a.log2e;
  j.mask = Mask{r.mask, a.mask_x, a.mask_y, s.sq, s.sk};
  j.f16 = r.f16;
  j.cvt = r.cvt;
  int tiles[2];
  const int n = ts > 0 ? owned_tiles(x, cdiv(s.sk, ts), r.mask == 1 || r.mask == 2, tiles) : 0;
  for (int u = 0; u < n; ++u) {
    const int c0 = tiles[u] * ts, c1 = c0 + ts < s.sk ? c0 + ts : s.sk;
    if (ok) {
      bwd_keys<192, 192>(j, c0, c1);
    } else {
      const int dq_cols = a.head_dim_q < uint32_t(r.hdim_q) ? a.head_dim_q : r.hdim_q;
      const int dv_cols = a.head_dim_v < uint32_t(r.hdim_v) ? a.head_dim_v : r.hdim_v;
      poison16(j.dk_out, j.dk_rs, c0, c1, dq_cols);
      poison16(j.dv_out, j.dv_rs, c0, c1, dv_cols);
      for (int i = thread_id(); i < s.sq * dq_cols; i += block_threads()) {
        unsigned char* row = j.dq + (i / dq_cols) * j.dq_rs;
        if (r.a32) {
          atomic_add_f32(reinterpret_cast<float*>(row) + i % dq_cols, nan_());
        } else {
          atomic_add_16(row + 2 * (i % dq_cols), nan_(), r.f16, 0);
        }
      }
    }
  }
}

JA_TWIN_FN void post(PostArgs a, PostRow r) {
  const int x = block_id(), h = block_id_y(), b = block_id_z();
  const Seq s = sequence(r.group, b, a.seqlen_q, 0, a.qseq, a.qseq_padded, nullptr, nullptr);
  const int r0 = x * r.ts, r1 = r0 + r.ts < s.sq ? r0 + r.ts : s.sq;
  if (r0 >= r1) return;
  const long long bq = r.group ? 0 : b;
  // The float32 accumulator's rows are those of dq (start + i); the 16-bit one's, the sequence's.
  const unsigned char* acc = a.acc + static_cast<long long>(b) * a.BAs_acc +
                             h * static_cast<long long>(a.Hs_acc) +
                             (r.shuffle ? 0 : s.q0) * a.Seqs_acc;
  unsigned char* dq = a.dq + bq * a.BAs_dq + h * static_cast<long long>(a.Hs_dq) + s.q0 * a.Seqs_dq;
  const int cols = static_cast<int>(a.head_dim);
  if (block_threads() != 256 || cols <= 0 || cols > r.hdim) {
    poison16(dq, a.Seqs_dq, r0, r1, cols < r.hdim ? cols : r.hdim);
    return;
  }
  for (int i = thread_id(); i < (r1 - r0) * cols; i += 256) {
    const int row = r0 + i / cols, c = i % cols;
    const unsigned char* src = acc + row * static_cast<long long>(a.Seqs_acc);
    uint16_t* dst = reinterpret_cast<uint16_t*>(dq + row * static_cast<long long>(a.Seqs_dq)) + c;
    *dst = r.shuffle ? reinterpret_cast<const uint16_t*>(src)[c]
                     : to16(reinterpret_cast<const float*>(src)[c], r.f16, r.cvt);
  }
}

// ---- how the kernels call them -----------------------------------------------------------------
// Directly. (On sm_90 ptxas compiles a kernel's callees into each kernel, noinline or not: the
// sm_90 build costs about half a second per kernel. Calling through function pointers makes it
// compile every address-taken function into every kernel instead: five times slower.)
#define JA_TWIN_CALL(name) ja::fmha_twin::name
#define JA_FWD_FN_128 fwd<512, 128>
#define JA_FWD_FN_192 fwd<256, 192>
#define JA_FWD_FN_256 fwd<512, 256>

// ---- which rows this build defines --------------------------------------------------------------

struct RowKey {
  const char* symbol;
  bool served;   // a row of this build's arch (sm_90: any)
  bool defined;  // the row whose kernel this build defines
  int ts;
};
JA_TWIN_HD bool same(const char* a, const char* b) {
  while (*a != 0 && *a == *b) ++a, ++b;
  return *a == *b;
}
// Every served row's symbol is defined by exactly one row, and only served rows define.
template <int N>
JA_TWIN_HD bool each_symbol_once(const RowKey (&k)[N]) {
  for (int i = 0; i < N; ++i) {
    if (k[i].defined && !k[i].served) return false;
    if (!k[i].served) continue;
    int defs = 0;
    for (int m = 0; m < N; ++m) defs += k[m].defined && same(k[m].symbol, k[i].symbol) ? 1 : 0;
    if (defs != 1) return false;
  }
  return true;
}

}  // namespace ja::fmha_twin

// ---- preprocessor selection ---------------------------------------------------------------------

#define JA_CAT(a, b) JA_CAT_(a, b)
#define JA_CAT_(a, b) a##b
#define JA_WHEN(c) JA_CAT(JA_WHEN_, c)
#define JA_WHEN_0(...)
#define JA_WHEN_1(...) __VA_ARGS__
#define JA_NOT(a) JA_CAT(JA_NOT_, a)
#define JA_NOT_0 1
#define JA_NOT_1 0
#define JA_OR(a, b) JA_CAT(JA_OR_, JA_CAT(a, b))
#define JA_OR_00 0
#define JA_OR_01 1
#define JA_OR_10 1
#define JA_OR_11 1
#define JA_AND(a, b) JA_CAT(JA_AND_, JA_CAT(a, b))
#define JA_AND_00 0
#define JA_AND_01 0
#define JA_AND_10 0
#define JA_AND_11 1
#define JA_IS_FP16_fp16 1
#define JA_IS_FP16_bf16 0
#define JA_IS_128_64 0
#define JA_IS_128_128 1
#define JA_IS_128_192 0
#define JA_NOT_PART2_0 1
#define JA_NOT_PART2_1 1
#define JA_NOT_PART2_2 0

#if defined(__CUDACC__)
// Every row is served; a gfx950 row whose symbol gfx942 also ships is left to the gfx942 row.
#define JA_SERVED(g942, g950) 1
#define JA_GFX942_BUILD 0
#define JA_GFX950_BUILD 0
#define JA_DEF_ODO(dt, hq, a32, g942, g950) g942
#define JA_DEF_MAIN(dt, hq, a32, g942, g950) \
  JA_OR(g942, JA_NOT(JA_AND(JA_IS_FP16_##dt, JA_AND(JA_IS_128_##hq, a32))))
#define JA_DEF_CONVERT(dt, hq, a32, g942, g950) JA_OR(g942, JA_NOT(JA_IS_FP16_##dt))
#define JA_DEF_SHUFFLE(dt, hq, a32, g942, g950) 1
#elif defined(__gfx942__) || defined(__gfx950__)
#if defined(__gfx942__)
#define JA_SERVED(g942, g950) g942
#define JA_GFX942_BUILD 1
#define JA_GFX950_BUILD 0
#else
#define JA_SERVED(g942, g950) g950
#define JA_GFX942_BUILD 0
#define JA_GFX950_BUILD 1
#endif
#define JA_DEF_ODO(dt, hq, a32, g942, g950) JA_SERVED(g942, g950)
#define JA_DEF_MAIN(dt, hq, a32, g942, g950) JA_SERVED(g942, g950)
#define JA_DEF_CONVERT(dt, hq, a32, g942, g950) JA_SERVED(g942, g950)
#define JA_DEF_SHUFFLE(dt, hq, a32, g942, g950) JA_SERVED(g942, g950)
#else
#error "aiter_fmha_v3.twin.cpp is for sm_90, gfx942 or gfx950"
#endif
#define JA_DEF_FWD(part, g942, g950) JA_AND(JA_SERVED(g942, g950), JA_NOT_PART2_##part)

namespace ja::fmha_twin {
// clang-format off
#define JA_FWD_KEY(dt, hq, hv, mask, mode, cvt, tq, tk, sym, co, part, g942, g950) \
  RowKey{#sym, JA_SERVED(g942, g950) != 0, JA_DEF_FWD(part, g942, g950) != 0, tq},
#define JA_BWD_KEY(DEF, dt, hq, hv, mask, a32, pssk, pddv, mode, cvt, tq, ts, sym, co, g942, g950) \
  RowKey{#sym, JA_SERVED(g942, g950) != 0, DEF(dt, hq, a32, g942, g950) != 0, ts},
#define JA_ODO_KEY(...) JA_BWD_KEY(JA_DEF_ODO, __VA_ARGS__)
#define JA_MAIN_KEY(...) JA_BWD_KEY(JA_DEF_MAIN, __VA_ARGS__)
#define JA_CONVERT_KEY(...) JA_BWD_KEY(JA_DEF_CONVERT, __VA_ARGS__)
#define JA_SHUFFLE_KEY(...) JA_BWD_KEY(JA_DEF_SHUFFLE, __VA_ARGS__)
// clang-format on
inline constexpr RowKey kFwdKeys[] = {JAX_AITER_FMHA_V3_FWD_ROWS(JA_FWD_KEY)};
inline constexpr RowKey kOdoKeys[] = {JAX_AITER_FMHA_V3_BWD_ODO_ROWS(JA_ODO_KEY)};
inline constexpr RowKey kMainKeys[] = {JAX_AITER_FMHA_V3_BWD_DQDKDV_ROWS(JA_MAIN_KEY)};
inline constexpr RowKey kConvertKeys[] = {JAX_AITER_FMHA_V3_BWD_DQ_CONVERT_ROWS(JA_CONVERT_KEY)};
inline constexpr RowKey kShuffleKeys[] = {JAX_AITER_FMHA_V3_BWD_DQ_SHUFFLE_ROWS(JA_SHUFFLE_KEY)};
static_assert(each_symbol_once(kFwdKeys) && each_symbol_once(kOdoKeys) &&
                  each_symbol_once(kMainKeys) && each_symbol_once(kConvertKeys) &&
                  each_symbol_once(kShuffleKeys),
              "each row this build serves needs exactly one kernel of its symbol");

// The tile of another served row of the dqdkdv symbol whose tile differs from `ts`, else 0.
JA_TWIN_HD int other_ts(const char* symbol, int ts) {
  constexpr RowKey keys[] = {JAX_AITER_FMHA_V3_BWD_DQDKDV_ROWS(JA_MAIN_KEY)};
  for (const RowKey& k : keys) {
    if (k.served && k.ts != ts && same(k.symbol, symbol)) return k.ts;
  }
  return 0;
}
}  // namespace ja::fmha_twin

// ---- the kernels --------------------------------------------------------------------------------

// One argument per 16-byte slot, as AITER's metadata declares them: the value first, then padding
// parameters named pad<n> (which the metadata checks skip). A "4-byte pointer" slot is a pointer
// AITER declares as a 4-byte value followed by padding: its high half arrives in pad<a>.
#define JA_PTR(type, name, n) type name, [[maybe_unused]] uint64_t pad##n
#define JA_U32(type, name, a, b, c)                                              \
  type name, [[maybe_unused]] uint32_t pad##a, [[maybe_unused]] uint32_t pad##b, \
      [[maybe_unused]] uint32_t pad##c
#define JA_P4(name, a, b) uint32_t name, uint32_t pad##a, [[maybe_unused]] uint64_t pad##b
#define JA_P4_VALUE(name, a) ja::fmha_twin::ptr_of(name, pad##a)

// The engines' shared memory, declared by the kernels that need it (jax_aiter_attn_twin.hpp).
#define JA_POOL_DECL JA_SHARED ja::Pack<uint32_t, 4> ja_pool[ja::fmha_twin::kPoolBytes / 16]
#define JA_POOL reinterpret_cast<unsigned char*>(ja_pool)

// Forward: the 512 bytes the bf16 kernels declare.
#define JA_FWD_PARAMS                                                                             \
  JA_PTR(void*, R, 0), JA_PTR(const void*, Q, 1), JA_PTR(const void*, K, 2),                      \
      JA_PTR(const void*, V, 3), JA_PTR(float*, LSE, 4), JA_U32(float, scalar, 5, 6, 7),          \
      JA_U32(uint32_t, seq_len, 8, 9, 10), JA_U32(uint32_t, Seqs, 11, 12, 13),                    \
      JA_U32(uint32_t, Ts, 14, 15, 16), JA_U32(uint32_t, Hs, 17, 18, 19),                         \
      JA_U32(uint32_t, Bs, 20, 21, 22), JA_U32(uint32_t, gqa, 23, 24, 25),                        \
      JA_U32(uint32_t, k_Seqs, 26, 27, 28), JA_U32(uint32_t, k_Hs, 29, 30, 31),                   \
      JA_U32(uint32_t, k_Bs, 32, 33, 34), JA_U32([[maybe_unused]] uint32_t, msk_opt, 35, 36, 37), \
      JA_U32(uint32_t, lse, 38, 39, 40), JA_U32(uint32_t, kv_seq_len, 41, 42, 43),                \
      JA_U32(uint32_t, qk_head_dim, 44, 45, 46), JA_U32(uint32_t, v_head_dim, 47, 48, 49),        \
      JA_U32(uint32_t, q_head_num, 50, 51, 52), JA_U32(uint32_t, v_Seqs, 53, 54, 55),             \
      JA_U32(uint32_t, v_Hs, 56, 57, 58), JA_U32(uint32_t, v_Bs, 59, 60, 61),                     \
      JA_U32(uint32_t, r_Seqs, 62, 63, 64), JA_U32(uint32_t, r_Hs, 65, 66, 67),                   \
      JA_U32(uint32_t, r_Bs, 68, 69, 70), JA_PTR(const int*, ptr_qseq, 71),                       \
      JA_PTR(const int*, ptr_kseq, 72), JA_U32(uint32_t, lse_Hs, 73, 74, 75),                     \
      JA_PTR(const int*, ptr_qseq_padding, 76), JA_PTR(const int*, ptr_kseq_padding, 77)

#define JA_FWD_TWIN(dt, ...) JA_CAT(JA_FWD_TWIN_, dt)(dt, __VA_ARGS__)
#define JA_FWD_TWIN_bf16(dt, hq, hv, mask, mode, cvt, tq, tk, sym, co, part, g942, g950)           \
  JA_WHEN(JA_DEF_FWD(part, g942, g950))                                                            \
  (JA_KERNEL_BOUNDED(hq == 192 ? 256 : 512) void sym(JA_FWD_PARAMS) {                              \
    JA_POOL_DECL;                                                                                  \
    ja::wait_for_prior_grids();                                                                    \
    ja::allow_dependent_grids();                                                                   \
    JA_TWIN_CALL(JA_CAT(JA_FWD_FN_, hq))                                                           \
    ({static_cast<unsigned char*>(R),                                                              \
      static_cast<const unsigned char*>(Q),                                                        \
      static_cast<const unsigned char*>(K),                                                        \
      static_cast<const unsigned char*>(V),                                                        \
      LSE,                                                                                         \
      scalar,                                                                                      \
      seq_len,                                                                                     \
      Seqs,                                                                                        \
      Ts,                                                                                          \
      Hs,                                                                                          \
      Bs,                                                                                          \
      gqa,                                                                                         \
      k_Seqs,                                                                                      \
      k_Hs,                                                                                        \
      k_Bs,                                                                                        \
      lse,                                                                                         \
      kv_seq_len,                                                                                  \
      qk_head_dim,                                                                                 \
      v_head_dim,                                                                                  \
      q_head_num,                                                                                  \
      v_Seqs,                                                                                      \
      v_Hs,                                                                                        \
      v_Bs,                                                                                        \
      r_Seqs,                                                                                      \
      r_Hs,                                                                                        \
      r_Bs,                                                                                        \
      lse_Hs,                                                                                      \
      ptr_qseq,                                                                                    \
      ptr_kseq,                                                                                    \
      ptr_qseq_padding,                                                                            \
      ptr_kseq_padding},                                                                           \
     {hq, hv, mask, mode, cvt, tq, hq == 192 ? 256 : 512, (g942) != 0 && hq == 192 && (mode) == 0, \
      (mask) != 0 && !((g942) != 0 && hq == 192)},                                                 \
     JA_POOL);                                                                                     \
  })

// fp8bf16 forward (656 bytes): gfx942's names (the bf16 ones, then ptr_descale_* and dq/dk/dv_*s)
// or gfx950's (fmha_fwd_v3_args' own); JA_NM picks by the row's arch.
#define JA_NM(g, a942, a950) JA_CAT(JA_NM_, g)(a942, a950)
#define JA_NM_1(a942, a950) a942
#define JA_NM_0(a942, a950) a950
#define JA_FWD_FP8_PARAMS(g)                                                                       \
  JA_PTR(void*, JA_NM(g, R, ptr_o), 0), JA_PTR(const void*, JA_NM(g, Q, ptr_q), 1),                \
      JA_PTR(const void*, JA_NM(g, K, ptr_k), 2), JA_PTR(const void*, JA_NM(g, V, ptr_v), 3),      \
      JA_PTR(float*, JA_NM(g, LSE, ptr_lse), 4), JA_U32(float, JA_NM(g, scalar, scalar), 5, 6, 7), \
      JA_U32(uint32_t, JA_NM(g, seq_len, s_seq_len), 8, 9, 10),                                    \
      JA_U32(uint32_t, JA_NM(g, Seqs, s_Seqs), 11, 12, 13),                                        \
      JA_U32(uint32_t, JA_NM(g, Ts, s_Ts), 14, 15, 16),                                            \
      JA_U32(uint32_t, JA_NM(g, Hs, s_Hs), 17, 18, 19),                                            \
      JA_U32(uint32_t, JA_NM(g, Bs, s_Bs), 20, 21, 22),                                            \
      JA_U32(uint32_t, JA_NM(g, gqa, s_gqa), 23, 24, 25),                                          \
      JA_U32(uint32_t, JA_NM(g, k_Seqs, s_k_Seqs), 26, 27, 28),                                    \
      JA_U32(uint32_t, JA_NM(g, k_Hs, s_k_Hs), 29, 30, 31),                                        \
      JA_U32(uint32_t, JA_NM(g, k_Bs, s_k_Bs), 32, 33, 34),                                        \
      JA_U32([[maybe_unused]] uint32_t, JA_NM(g, msk_opt, s_opt), 35, 36, 37),                     \
      JA_U32(uint32_t, JA_NM(g, lse, s_lse), 38, 39, 40),                                          \
      JA_U32(uint32_t, JA_NM(g, kv_seq_len, s_kv_seq_len), 41, 42, 43),                            \
      JA_U32(uint32_t, JA_NM(g, qk_head_dim, s_qk_head_dim), 44, 45, 46),                          \
      JA_U32(uint32_t, JA_NM(g, v_head_dim, s_v_head_dim), 47, 48, 49),                            \
      JA_U32(uint32_t, JA_NM(g, q_head_num, s_q_head_num), 50, 51, 52),                            \
      JA_U32(uint32_t, JA_NM(g, v_Seqs, s_v_Seqs), 53, 54, 55),                                    \
      JA_U32(uint32_t, JA_NM(g, v_Hs, s_v_Hs), 56, 57, 58),                                        \
      JA_U32(uint32_t, JA_NM(g, v_Bs, s_v_Bs), 59, 60, 61),                                        \
      JA_U32(uint32_t, JA_NM(g, r_Seqs, s_o_Seqs), 62, 63, 64),                                    \
      JA_U32(uint32_t, JA_NM(g, r_Hs, s_o_Hs), 65, 66, 67),                                        \
      JA_U32(uint32_t, JA_NM(g, r_Bs, s_o_Bs), 68, 69, 70),                                        \
      JA_PTR(const int*, JA_NM(g, ptr_qseq, ptr_qseq), 71),                                        \
      JA_PTR(const int*, JA_NM(g, ptr_kseq, ptr_kseq), 72),                                        \
      JA_U32(uint32_t, JA_NM(g, lse_Hs, s_lse_Hs), 73, 74, 75),                                    \
      JA_PTR(const int*, JA_NM(g, ptr_qseq_padding, ptr_qseq_padding), 76),                        \
      JA_PTR(const int*, JA_NM(g, ptr_kseq_padding, ptr_kseq_padding), 77),                        \
      JA_PTR(const float*, JA_NM(g, ptr_descale_q, ptr_q_descale), 78),                            \
      JA_PTR(const float*, JA_NM(g, ptr_descale_k, ptr_k_descale), 79),                            \
      JA_PTR(const float*, JA_NM(g, ptr_descale_v, ptr_v_descale), 80),                            \
      JA_U32(uint32_t, JA_NM(g, dq_Bs, s_descale_q_Bs), 81, 82, 83),                               \
      JA_U32(uint32_t, JA_NM(g, dq_Hs, s_descale_q_Hs), 84, 85, 86),                               \
      JA_U32(uint32_t, JA_NM(g, dk_Bs, s_descale_k_Bs), 87, 88, 89),                               \
      JA_U32(uint32_t, JA_NM(g, dk_Hs, s_descale_k_Hs), 90, 91, 92),                               \
      JA_U32(uint32_t, JA_NM(g, dv_Bs, s_descale_v_Bs), 93, 94, 95),                               \
      JA_U32(uint32_t, JA_NM(g, dv_Hs, s_descale_v_Hs), 96, 97, 98)
#define JA_FWD_TWIN_fp8bf16(dt, hq, hv, mask, mode, cvt, tq, tk, sym, co, part, g942, g950) \
  JA_WHEN(JA_DEF_FWD(part, g942, g950))                                                     \
  (JA_KERNEL_BOUNDED(512) void sym(JA_FWD_FP8_PARAMS(g942)) {                               \
    JA_POOL_DECL;                                                                           \
    ja::wait_for_prior_grids();                                                             \
    ja::allow_dependent_grids();                                                            \
    JA_TWIN_CALL(JA_CAT(JA_FWD_FN_, hq))                                                    \
    ({static_cast<unsigned char*>(JA_NM(g942, R, ptr_o)),                                   \
      static_cast<const unsigned char*>(JA_NM(g942, Q, ptr_q)),                             \
      static_cast<const unsigned char*>(JA_NM(g942, K, ptr_k)),                             \
      static_cast<const unsigned char*>(JA_NM(g942, V, ptr_v)),                             \
      JA_NM(g942, LSE, ptr_lse),                                                            \
      JA_NM(g942, scalar, scalar),                                                          \
      JA_NM(g942, seq_len, s_seq_len),                                                      \
      JA_NM(g942, Seqs, s_Seqs),                                                            \
      JA_NM(g942, Ts, s_Ts),                                                                \
      JA_NM(g942, Hs, s_Hs),                                                                \
      JA_NM(g942, Bs, s_Bs),                                                                \
      JA_NM(g942, gqa, s_gqa),                                                              \
      JA_NM(g942, k_Seqs, s_k_Seqs),                                                        \
      JA_NM(g942, k_Hs, s_k_Hs),                                                            \
      JA_NM(g942, k_Bs, s_k_Bs),                                                            \
      JA_NM(g942, lse, s_lse),                                                              \
      JA_NM(g942, kv_seq_len, s_kv_seq_len),                                                \
      JA_NM(g942, qk_head_dim, s_qk_head_dim),                                              \
      JA_NM(g942, v_head_dim, s_v_head_dim),                                                \
      JA_NM(g942, q_head_num, s_q_head_num),                                                \
      JA_NM(g942, v_Seqs, s_v_Seqs),                                                        \
      JA_NM(g942, v_Hs, s_v_Hs),                                                            \
      JA_NM(g942, v_Bs, s_v_Bs),                                                            \
      JA_NM(g942, r_Seqs, s_o_Seqs),                                                        \
      JA_NM(g942, r_Hs, s_o_Hs),                                                            \
      JA_NM(g942, r_Bs, s_o_Bs),                                                            \
      JA_NM(g942, lse_Hs, s_lse_Hs),                                                        \
      JA_NM(g942, ptr_qseq, ptr_qseq),                                                      \
      JA_NM(g942, ptr_kseq, ptr_kseq),                                                      \
      JA_NM(g942, ptr_qseq_padding, ptr_qseq_padding),                                      \
      JA_NM(g942, ptr_kseq_padding, ptr_kseq_padding),                                      \
      reinterpret_cast<const unsigned char*>(JA_NM(g942, ptr_descale_q, ptr_q_descale)),    \
      reinterpret_cast<const unsigned char*>(JA_NM(g942, ptr_descale_k, ptr_k_descale)),    \
      reinterpret_cast<const unsigned char*>(JA_NM(g942, ptr_descale_v, ptr_v_descale)),    \
      JA_NM(g942, dq_Bs, s_descale_q_Bs),                                                   \
      JA_NM(g942, dq_Hs, s_descale_q_Hs),                                                   \
      JA_NM(g942, dk_Bs, s_descale_k_Bs),                                                   \
      JA_NM(g942, dk_Hs, s_descale_k_Hs),                                                   \
      JA_NM(g942, dv_Bs, s_descale_v_Bs),                                                   \
      JA_NM(g942, dv_Hs, s_descale_v_Hs)},                                                  \
     {hq, hv, mask, mode, cvt, tq, 512, false, (mask) != 0,                                 \
      (g942) ? jax_aiter::kernels::attention::kAttnE4M3FNUZ                                 \
             : jax_aiter::kernels::attention::kAttnE4M3FN},                                 \
     JA_POOL);                                                                              \
  })

// Backward odo (256 bytes) and post-pass (192 bytes): the same on both archs.
#define JA_ODO_PARAMS                                                               \
  JA_PTR(const void*, O, 0), JA_PTR(const void*, dO, 1), JA_PTR(float*, D, 2),      \
      JA_U32(uint32_t, Hs_o, 3, 4, 5), JA_U32(uint32_t, BAs_o, 6, 7, 8),            \
      JA_U32(uint32_t, Seqs_o, 9, 10, 11), JA_U32(uint32_t, Hs_do, 12, 13, 14),     \
      JA_U32(uint32_t, BAs_do, 15, 16, 17), JA_U32(uint32_t, Seqs_do, 18, 19, 20),  \
      JA_U32(uint32_t, Hs_d, 21, 22, 23), JA_U32(uint32_t, BAs_d, 24, 25, 26),      \
      JA_U32(uint32_t, Seqs_d, 27, 28, 29), JA_U32(uint32_t, seqlen_q, 30, 31, 32), \
      JA_U32(uint32_t, head_dim, 33, 34, 35), JA_P4(ptr_seqstart_q, 36, 37),        \
      JA_P4(ptr_seqstart_q_padded, 38, 39)
#define JA_ODO_TWIN(dt, hq, hv, mask, a32, pssk, pddv, mode, cvt, tq, ts, sym, co, g942, g950) \
  JA_WHEN(JA_DEF_ODO(dt, hq, a32, g942, g950))                                                 \
  (JA_KERNEL_BOUNDED(256) void sym(JA_ODO_PARAMS) {                                            \
    ja::wait_for_prior_grids();                                                                \
    ja::allow_dependent_grids();                                                               \
    JA_TWIN_CALL(odo)                                                                          \
    ({static_cast<const unsigned char*>(O), static_cast<const unsigned char*>(dO),             \
      reinterpret_cast<unsigned char*>(D), Hs_o, BAs_o, Seqs_o, Hs_do, BAs_do, Seqs_do, Hs_d,  \
      BAs_d, Seqs_d, seqlen_q, head_dim, JA_P4_VALUE(ptr_seqstart_q, 36),                      \
      JA_P4_VALUE(ptr_seqstart_q_padded, 38)},                                                 \
     {hv, mode, ts, JA_IS_FP16_##dt != 0});                                                    \
  })

#define JA_POST_PARAMS                                                                        \
  JA_PTR(const void*, dQ_acc, 0), JA_PTR(void*, dQ, 1), JA_U32(uint32_t, Hs_dQ_acc, 2, 3, 4), \
      JA_U32(uint32_t, BAs_dQ_acc, 5, 6, 7), JA_U32(uint32_t, Seqs_dQ_acc, 8, 9, 10),         \
      JA_U32(uint32_t, Hs_dQ, 11, 12, 13), JA_U32(uint32_t, BAs_dQ, 14, 15, 16),              \
      JA_U32(uint32_t, Seqs_dQ, 17, 18, 19), JA_U32(uint32_t, seqlen_q, 20, 21, 22),          \
      JA_U32(uint32_t, head_dim, 23, 24, 25), JA_P4(ptr_seqstart_q, 26, 27),                  \
      JA_P4(ptr_seqstart_q_padded, 28, 29)
#define JA_POST_TWIN(DEF, shuffle, dt, hq, hv, mask, a32, pssk, pddv, mode, cvt, tq, ts, sym, co, \
                     g942, g950)                                                                  \
  JA_WHEN(DEF(dt, hq, a32, g942, g950))                                                           \
  (JA_KERNEL_BOUNDED(256) void sym(JA_POST_PARAMS) {                                              \
    ja::wait_for_prior_grids();                                                                   \
    ja::allow_dependent_grids();                                                                  \
    JA_TWIN_CALL(post)                                                                            \
    ({static_cast<const unsigned char*>(dQ_acc), static_cast<unsigned char*>(dQ), Hs_dQ_acc,      \
      BAs_dQ_acc, Seqs_dQ_acc, Hs_dQ, BAs_dQ, Seqs_dQ, seqlen_q, head_dim,                        \
      JA_P4_VALUE(ptr_seqstart_q, 26), JA_P4_VALUE(ptr_seqstart_q_padded, 28)},                   \
     {hq, mode, ts, cvt, shuffle, JA_IS_FP16_##dt != 0});                                         \
  })
#define JA_CONVERT_TWIN(...) JA_POST_TWIN(JA_DEF_CONVERT, false, __VA_ARGS__)
#define JA_SHUFFLE_TWIN(...) JA_POST_TWIN(JA_DEF_SHUFFLE, true, __VA_ARGS__)

// dqdkdv (704 bytes): gfx950 names head_dim_v head_dim_k and declares the sequence pointers as
// 4-byte values (ptr_seqstart_*); gfx942 (and the sm_90 build) as 8-byte ptr_qseq etc.
#define JA_MAIN_PARAMS_HEAD                                                                       \
  JA_PTR(void*, dQ, 0), JA_PTR(void*, dK, 1), JA_PTR(void*, dV, 2), JA_PTR(const void*, Q, 3),    \
      JA_PTR(const void*, K, 4), JA_PTR(const void*, V, 5), JA_PTR(const void*, dO, 6),           \
      JA_PTR(const float*, Lse, 7), JA_PTR(const float*, D, 8), JA_U32(float, scalar, 9, 10, 11), \
      JA_U32(float, log2e, 12, 13, 14), JA_U32(uint32_t, seqlen_q, 15, 16, 17),                   \
      JA_U32(uint32_t, Ts, 18, 19, 20), JA_U32(uint32_t, Hs_q, 21, 22, 23),                       \
      JA_U32(uint32_t, BAs_q, 24, 25, 26), JA_U32(uint32_t, Seqs_q, 27, 28, 29),                  \
      JA_U32(uint32_t, ratio, 30, 31, 32), JA_U32(uint32_t, Hs_k, 33, 34, 35),                    \
      JA_U32(uint32_t, BAs_k, 36, 37, 38), JA_U32(uint32_t, Seqs_k, 39, 40, 41),                  \
      JA_U32(uint32_t, Seqs_dk, 42, 43, 44), JA_U32(uint32_t, seqlen_k, 45, 46, 47),              \
      JA_U32(uint32_t, head_dim_q, 48, 49, 50)
#define JA_MAIN_PARAMS_MID                                                         \
  JA_U32(uint32_t, nhead_q, 54, 55, 56), JA_U32(uint32_t, Hs_v, 57, 58, 59),       \
      JA_U32(uint32_t, BAs_v, 60, 61, 62), JA_U32(uint32_t, Seqs_v, 63, 64, 65),   \
      JA_U32(uint32_t, Hs_do, 66, 67, 68), JA_U32(uint32_t, BAs_do, 69, 70, 71),   \
      JA_U32(uint32_t, Seqs_do, 72, 73, 74), JA_U32(uint32_t, Hs_dk, 75, 76, 77),  \
      JA_U32(uint32_t, BAs_dk, 78, 79, 80), JA_U32(uint32_t, Hs_dv, 81, 82, 83),   \
      JA_U32(uint32_t, BAs_dv, 84, 85, 86), JA_U32(uint32_t, Seqs_dv, 87, 88, 89), \
      JA_U32(uint32_t, Hs_lsed, 90, 91, 92)
#define JA_MAIN_PARAMS_TAIL                                                            \
  JA_U32(uint32_t, max_seq_len_dq, 101, 102, 103), JA_U32(int, mask_x, 104, 105, 106), \
      JA_U32(int, mask_y, 107, 108, 109)
#if JA_GFX950_BUILD
#define JA_MAIN_PARAMS                                                               \
  JA_MAIN_PARAMS_HEAD, JA_U32(uint32_t, head_dim_k, 51, 52, 53), JA_MAIN_PARAMS_MID, \
      JA_P4(ptr_seqstart_q, 93, 94), JA_P4(ptr_seqstart_k, 95, 96),                  \
      JA_P4(ptr_seqstart_q_padded, 97, 98), JA_P4(ptr_seqstart_k_padded, 99, 100),   \
      JA_MAIN_PARAMS_TAIL
#define JA_MAIN_HEAD_DIM_V head_dim_k
#define JA_MAIN_SEQ_PTRS                                            \
  JA_P4_VALUE(ptr_seqstart_q, 93), JA_P4_VALUE(ptr_seqstart_k, 95), \
      JA_P4_VALUE(ptr_seqstart_q_padded, 97), JA_P4_VALUE(ptr_seqstart_k_padded, 99)
#else
#define JA_MAIN_PARAMS                                                                  \
  JA_MAIN_PARAMS_HEAD, JA_U32(uint32_t, head_dim_v, 51, 52, 53), JA_MAIN_PARAMS_MID,    \
      JA_PTR(const int*, ptr_qseq, 93), JA_PTR(const int*, ptr_kseq, 95),               \
      JA_PTR(const int*, ptr_qseq_padded, 97), JA_PTR(const int*, ptr_kseq_padded, 99), \
      JA_MAIN_PARAMS_TAIL
#define JA_MAIN_HEAD_DIM_V head_dim_v
#define JA_MAIN_SEQ_PTRS ptr_qseq, ptr_kseq, ptr_qseq_padded, ptr_kseq_padded
#endif

#define JA_MAIN_TWIN(dt, hq, hv, mask, a32, pssk, pddv, mode, cvt, tq, ts, sym, co, g942, g950)   \
  JA_WHEN(JA_DEF_MAIN(dt, hq, a32, g942, g950))                                                   \
  (JA_KERNEL_BOUNDED(256) void sym(JA_MAIN_PARAMS) {                                              \
    JA_POOL_DECL;                                                                                 \
    ja::wait_for_prior_grids();                                                                   \
    ja::allow_dependent_grids();                                                                  \
    constexpr int kOtherTs = ja::fmha_twin::other_ts(#sym, ts);                                   \
    constexpr bool kRecompile = ja::fmha_twin::contains(#sym, "recompile");                       \
    JA_TWIN_CALL(dqdkdv)                                                                          \
    ({static_cast<unsigned char*>(dQ),                                                            \
      static_cast<unsigned char*>(dK),                                                            \
      static_cast<unsigned char*>(dV),                                                            \
      static_cast<const unsigned char*>(Q),                                                       \
      static_cast<const unsigned char*>(K),                                                       \
      static_cast<const unsigned char*>(V),                                                       \
      static_cast<const unsigned char*>(dO),                                                      \
      Lse,                                                                                        \
      D,                                                                                          \
      scalar,                                                                                     \
      log2e,                                                                                      \
      seqlen_q,                                                                                   \
      Ts,                                                                                         \
      Hs_q,                                                                                       \
      BAs_q,                                                                                      \
      Seqs_q,                                                                                     \
      ratio,                                                                                      \
      Hs_k,                                                                                       \
      BAs_k,                                                                                      \
      Seqs_k,                                                                                     \
      Seqs_dk,                                                                                    \
      seqlen_k,                                                                                   \
      head_dim_q,                                                                                 \
      JA_MAIN_HEAD_DIM_V,                                                                         \
      nhead_q,                                                                                    \
      Hs_v,                                                                                       \
      BAs_v,                                                                                      \
      Seqs_v,                                                                                     \
      Hs_do,                                                                                      \
      BAs_do,                                                                                     \
      Seqs_do,                                                                                    \
      Hs_dk,                                                                                      \
      BAs_dk,                                                                                     \
      Hs_dv,                                                                                      \
      BAs_dv,                                                                                     \
      Seqs_dv,                                                                                    \
      Hs_lsed,                                                                                    \
      max_seq_len_dq,                                                                             \
      JA_MAIN_SEQ_PTRS,                                                                           \
      mask_x,                                                                                     \
      mask_y},                                                                                    \
     {hq, hv, mask, pssk, pddv, mode, cvt, ts, kOtherTs,                                          \
      (a32) == 0 && ((g942) != 0 || kRecompile) ? 64 : ts, (a32) != 0, (a32) == 0 && (g942) != 0, \
      JA_IS_FP16_##dt != 0},                                                                      \
     JA_POOL);                                                                                    \
  })

namespace ja::fmha_twin {
JA_TWIN_HD bool contains(const char* s, const char* part) {
  for (; *s != 0; ++s) {
    int i = 0;
    while (part[i] != 0 && s[i] == part[i]) ++i;
    if (part[i] == 0) return true;
  }
  return false;
}
}  // namespace ja::fmha_twin

JAX_AITER_FMHA_V3_FWD_ROWS(JA_FWD_TWIN)
JAX_AITER_FMHA_V3_BWD_ODO_ROWS(JA_ODO_TWIN)
JAX_AITER_FMHA_V3_BWD_DQDKDV_ROWS(JA_MAIN_TWIN)
JAX_AITER_FMHA_V3_BWD_DQ_CONVERT_ROWS(JA_CONVERT_TWIN)
JAX_AITER_FMHA_V3_BWD_DQ_SHUFFLE_ROWS(JA_SHUFFLE_TWIN)
