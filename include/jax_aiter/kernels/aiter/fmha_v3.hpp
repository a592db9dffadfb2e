// AITER's ASM v3 attention families: the argument structs its kernels read (forward 656 bytes;
// backward odo pre-pass 256, dqdkdv main kernel 704, dq post-pass 192), their fields as the code
// objects' metadata names them, and the tables of rows per arch, generated from the one list in
// kernels/shared/aiter_fmha_v3.h. Facts restated from github.com/ROCm/aiter at e4048607a535
// (csrc/include/mha_{fwd,bwd}.h, csrc/cpp_itfs/mha_{fwd,bwd}.cu, csrc/include/aiter_hip_common.h,
// the CSVs, and the code objects' own metadata).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/kernels/aiter/row.hpp"
#include "jax_aiter/kernels/kernel.hpp"
#include "jax_aiter/kernels/shared/aiter_fmha_v3.h"

namespace jax_aiter::kernels {

// ---- argument structs (one argument per 16-byte slot; strides in bytes) -------------------------

// The forward (fmha_fwd_v3_args). Layouts as AITER's wrappers pass them: q [b, sq, hq, d] (group
// mode: [total_q, hq, d], batch strides 0, sequence s from row ptr_qseq[s]), k, v, o alike, lse
// float32 [b, hq, sq] (group: [hq, total_q]): the kernel takes lse's head stride only, so its
// batch stride must be hq * sq * 4 bytes, as a dense [b, hq, sq] has. The bf16 kernels declare the
// first 512 bytes (no descales); the fp8 ones ("fp8bf16": fp8 q, k, v, bf16 out) all 656, with
// q, k, v strides in 1-byte elements and out's in 2-byte ones (mha_fwd.cu's in_bpe / out_bpe),
// and float32 descales read at ptr + b * s_descale_*_Bs + (h / gqa) * s_descale_*_Hs bytes
// (AITER's [1] or [b, hk] descale tensors; a [1] one has strides 0).
struct AiterFmhaFwdArgs {
  Slot<void*> ptr_o;
  Slot<const void*> ptr_q, ptr_k, ptr_v;
  Slot<void*> ptr_lse;
  Slot<float> scalar;        // softmax scale
  Slot<uint32_t> s_seq_len;  // sq (group mode: total_q, as AITER's varlen wrapper passes it)
  Slot<uint32_t> s_Seqs, s_Ts, s_Hs, s_Bs;  // q: row, tile (ts_qo rows), head, batch
  Slot<uint32_t> s_gqa;                     // hq / hk
  Slot<uint32_t> s_k_Seqs, s_k_Hs, s_k_Bs;
  Slot<uint32_t> s_opt;  // AITER's tune_opt
  Slot<uint32_t> s_lse;  // 1: write lse
  Slot<uint32_t> s_kv_seq_len;
  Slot<uint32_t> s_qk_head_dim, s_v_head_dim, s_q_head_num;
  Slot<uint32_t> s_v_Seqs, s_v_Hs, s_v_Bs;
  Slot<uint32_t> s_o_Seqs, s_o_Hs, s_o_Bs;
  Slot<const int*> ptr_qseq, ptr_kseq;  // group mode: cu_seqlens_q / cu_seqlens_k
  Slot<uint32_t> s_lse_Hs;
  Slot<const int*> ptr_qseq_padding, ptr_kseq_padding;  // group mode: the same (no padding)
  Slot<const float*> ptr_q_descale, ptr_k_descale, ptr_v_descale;  // fp8 only
  Slot<uint32_t> s_descale_q_Bs, s_descale_q_Hs, s_descale_k_Bs, s_descale_k_Hs;
  Slot<uint32_t> s_descale_v_Bs, s_descale_v_Hs;
};
static_assert(sizeof(AiterFmhaFwdArgs) == 656);
static_assert(offsetof(AiterFmhaFwdArgs, scalar) == 80 && offsetof(AiterFmhaFwdArgs, s_opt) == 240);
static_assert(offsetof(AiterFmhaFwdArgs, s_o_Bs) == 416 &&
              offsetof(AiterFmhaFwdArgs, ptr_qseq) == 432);
static_assert(offsetof(AiterFmhaFwdArgs, s_lse_Hs) == 464 &&
              offsetof(AiterFmhaFwdArgs, ptr_kseq_padding) == 496);
static_assert(offsetof(AiterFmhaFwdArgs, ptr_q_descale) == 512 &&
              offsetof(AiterFmhaFwdArgs, s_descale_v_Hs) == 640);

// The backward's odo pre-pass: d = rowsum(dout * o) in float32, in lse's layout. AITER's current
// ABI (since 17d4a33b6f, 2026-03-23, with rebuilt code objects): separate o / do / d strides.
struct AiterFmhaBwdOdoArgs {
  Slot<const void*> ptr_o, ptr_do;
  Slot<float*> ptr_d;
  Slot<uint32_t> Hs_o, BAs_o, Seqs_o;
  Slot<uint32_t> Hs_do, BAs_do, Seqs_do;
  Slot<uint32_t> Hs_d, BAs_d, Seqs_d;
  Slot<uint32_t> seqlen_q, head_dim;
  Slot<const int*> ptr_qseq, ptr_qseq_padded;
};
static_assert(sizeof(AiterFmhaBwdOdoArgs) == 256);
static_assert(offsetof(AiterFmhaBwdOdoArgs, Hs_o) == 48 &&
              offsetof(AiterFmhaBwdOdoArgs, Seqs_d) == 176);
static_assert(offsetof(AiterFmhaBwdOdoArgs, head_dim) == 208 &&
              offsetof(AiterFmhaBwdOdoArgs, ptr_qseq) == 224);

// The odo pre-pass as AITER packed it before 17d4a33b6f (2026-03-23), with the code objects of
// those versions (ROCm/jax-aiter's pin 3baf198aa7b6 is one): 208 bytes, one set of strides shared
// by o and do. A row's AbiVariant (below): chosen at load when the code object declares it.
struct AiterFmhaBwdOdo208Args {
  Slot<const void*> ptr_o, ptr_do;
  Slot<float*> ptr_d;
  Slot<uint32_t> Hs_odo, BAs_odo, Seqs_odo;  // o's and do's (the same layout)
  Slot<uint32_t> Hs_d, BAs_d, Seqs_d;
  Slot<uint32_t> seqlen_q, head_dim;
  Slot<const int*> ptr_qseq, ptr_qseq_padded;
};
static_assert(sizeof(AiterFmhaBwdOdo208Args) == 208);
static_assert(offsetof(AiterFmhaBwdOdo208Args, Hs_odo) == 48 &&
              offsetof(AiterFmhaBwdOdo208Args, Hs_d) == 96);
static_assert(offsetof(AiterFmhaBwdOdo208Args, seqlen_q) == 144 &&
              offsetof(AiterFmhaBwdOdo208Args, ptr_qseq_padded) == 192);

// The backward's main kernel (fmha_bwd_dqdkdv_args): dq (or its accumulator), dk, dv. In batch
// mode the kernel addresses lse and d as [b, hq, sq] from nhead_q and seqlen_q (Hs_lsed is read in
// group mode, where they are [hq, total_q] from row ptr_qseq[s]).
struct AiterFmhaBwdDqdkdvArgs {
  Slot<void*> ptr_dq;  // the dq accumulator, or dq itself when no post-pass runs
  Slot<void*> ptr_dk, ptr_dv;
  Slot<const void*> ptr_q, ptr_k, ptr_v, ptr_do;
  Slot<const float*> ptr_lse, ptr_d;
  Slot<float> scalar, log2e;
  Slot<uint32_t> seqlen_q;  // batch: sq; group: total_q (as AITER passes them)
  Slot<uint32_t> Ts;        // ts (key rows of a tile) * k's row stride
  Slot<uint32_t> Hs_q, BAs_q, Seqs_q;
  Slot<uint32_t> ratio;  // hq / hk
  Slot<uint32_t> Hs_k, BAs_k, Seqs_k;
  Slot<uint32_t> Seqs_dk;
  Slot<uint32_t> seqlen_k;  // batch: sk; group: total_k
  Slot<uint32_t> head_dim_q, head_dim_v, nhead_q;
  Slot<uint32_t> Hs_v, BAs_v, Seqs_v;
  Slot<uint32_t> Hs_do, BAs_do, Seqs_do;
  Slot<uint32_t> Hs_dk, BAs_dk;
  Slot<uint32_t> Hs_dv, BAs_dv, Seqs_dv;
  Slot<uint32_t> Hs_lsed;
  Slot<const int*> ptr_qseq, ptr_kseq, ptr_qseq_padded, ptr_kseq_padded;
  Slot<uint32_t> max_seqlen_dq;  // rows of the accumulator per head: a32 max_sq, a16 16-aligned
  Slot<int32_t> mask_x, mask_y;  // sliding window (mask 3) only: CK's generic mask coordinates
};
static_assert(sizeof(AiterFmhaBwdDqdkdvArgs) == 704);
static_assert(offsetof(AiterFmhaBwdDqdkdvArgs, scalar) == 144 &&
              offsetof(AiterFmhaBwdDqdkdvArgs, Ts) == 192);
static_assert(offsetof(AiterFmhaBwdDqdkdvArgs, Seqs_dk) == 320 &&
              offsetof(AiterFmhaBwdDqdkdvArgs, nhead_q) == 384);
static_assert(offsetof(AiterFmhaBwdDqdkdvArgs, Hs_lsed) == 576 &&
              offsetof(AiterFmhaBwdDqdkdvArgs, ptr_qseq) == 592);
static_assert(offsetof(AiterFmhaBwdDqdkdvArgs, max_seqlen_dq) == 656 &&
              offsetof(AiterFmhaBwdDqdkdvArgs, mask_y) == 688);

// The backward's post-pass (dq_convert: float32 accumulator to dq; dq_shuffle: 16-bit one).
struct AiterFmhaBwdPostArgs {
  Slot<const void*> ptr_dq_acc;
  Slot<void*> ptr_dq;
  Slot<uint32_t> Hs_dq_acc, BAs_dq_acc, Seqs_dq_acc;
  Slot<uint32_t> Hs_dq, BAs_dq, Seqs_dq;
  Slot<uint32_t> seqlen_q, head_dim;
  Slot<const int*> ptr_qseq, ptr_qseq_padded;
};
static_assert(sizeof(AiterFmhaBwdPostArgs) == 192);
static_assert(offsetof(AiterFmhaBwdPostArgs, Hs_dq_acc) == 32 &&
              offsetof(AiterFmhaBwdPostArgs, seqlen_q) == 128);
static_assert(offsetof(AiterFmhaBwdPostArgs, ptr_qseq) == 160 &&
              offsetof(AiterFmhaBwdPostArgs, ptr_qseq_padded) == 176);

// ---- fields, named as the code objects' metadata names them -------------------------------------
// Some pointers are declared as a 4-byte by_value followed by padding (`ptr_seqstart_q@224:4`): the
// metadata check accepts that (runtime/kernarg_check.hpp), as the runtime copies all 8 bytes.

#define JA_FWD(member, name) JAX_AITER_NAMED_ARG_FIELD(AiterFmhaFwdArgs, member, name)
// Both archs' bf16 forward kernels name the first 512 bytes alike (they declare no more), and so
// do gfx942's fp8 ones, which add the descales under names of their own.
#define JA_FWD_BF16_FIELDS                                                                    \
  JA_FWD(ptr_o, "R"), JA_FWD(ptr_q, "Q"), JA_FWD(ptr_k, "K"), JA_FWD(ptr_v, "V"),             \
      JA_FWD(ptr_lse, "LSE"), JA_FWD(scalar, "scalar"), JA_FWD(s_seq_len, "seq_len"),         \
      JA_FWD(s_Seqs, "Seqs"), JA_FWD(s_Ts, "Ts"), JA_FWD(s_Hs, "Hs"), JA_FWD(s_Bs, "Bs"),     \
      JA_FWD(s_gqa, "gqa"), JA_FWD(s_k_Seqs, "k_Seqs"), JA_FWD(s_k_Hs, "k_Hs"),               \
      JA_FWD(s_k_Bs, "k_Bs"), JA_FWD(s_opt, "msk_opt"), JA_FWD(s_lse, "lse"),                 \
      JA_FWD(s_kv_seq_len, "kv_seq_len"), JA_FWD(s_qk_head_dim, "qk_head_dim"),               \
      JA_FWD(s_v_head_dim, "v_head_dim"), JA_FWD(s_q_head_num, "q_head_num"),                 \
      JA_FWD(s_v_Seqs, "v_Seqs"), JA_FWD(s_v_Hs, "v_Hs"), JA_FWD(s_v_Bs, "v_Bs"),             \
      JA_FWD(s_o_Seqs, "r_Seqs"), JA_FWD(s_o_Hs, "r_Hs"), JA_FWD(s_o_Bs, "r_Bs"),             \
      JA_FWD(ptr_qseq, "ptr_qseq"), JA_FWD(ptr_kseq, "ptr_kseq"), JA_FWD(s_lse_Hs, "lse_Hs"), \
      JA_FWD(ptr_qseq_padding, "ptr_qseq_padding"), JA_FWD(ptr_kseq_padding, "ptr_kseq_padding")
inline constexpr ArgField kAiterFmhaFwdFields[] = {JA_FWD_BF16_FIELDS};
// gfx942's fp8 kernels (hsa/gfx942/fmha_v3_fwd/MI300|MI308/fwd_hd128_fp8*.co metadata): the
// descale pointers and their byte strides ("dq" is the q descale there, not a gradient).
inline constexpr ArgField kAiterFmhaFwdFp8FieldsGfx942[] = {
    JA_FWD_BF16_FIELDS,
    JA_FWD(ptr_q_descale, "ptr_descale_q"),
    JA_FWD(ptr_k_descale, "ptr_descale_k"),
    JA_FWD(ptr_v_descale, "ptr_descale_v"),
    JA_FWD(s_descale_q_Bs, "dq_Bs"),
    JA_FWD(s_descale_q_Hs, "dq_Hs"),
    JA_FWD(s_descale_k_Bs, "dk_Bs"),
    JA_FWD(s_descale_k_Hs, "dk_Hs"),
    JA_FWD(s_descale_v_Bs, "dv_Bs"),
    JA_FWD(s_descale_v_Hs, "dv_Hs"),
};
// gfx950's fp8 kernels name every field as AITER's fmha_fwd_v3_args does (our member names).
#define JA_FWD_SAME(member) JA_FWD(member, #member)
inline constexpr ArgField kAiterFmhaFwdFp8FieldsGfx950[] = {
    JA_FWD_SAME(ptr_o),
    JA_FWD_SAME(ptr_q),
    JA_FWD_SAME(ptr_k),
    JA_FWD_SAME(ptr_v),
    JA_FWD_SAME(ptr_lse),
    JA_FWD_SAME(scalar),
    JA_FWD_SAME(s_seq_len),
    JA_FWD_SAME(s_Seqs),
    JA_FWD_SAME(s_Ts),
    JA_FWD_SAME(s_Hs),
    JA_FWD_SAME(s_Bs),
    JA_FWD_SAME(s_gqa),
    JA_FWD_SAME(s_k_Seqs),
    JA_FWD_SAME(s_k_Hs),
    JA_FWD_SAME(s_k_Bs),
    JA_FWD_SAME(s_opt),
    JA_FWD_SAME(s_lse),
    JA_FWD_SAME(s_kv_seq_len),
    JA_FWD_SAME(s_qk_head_dim),
    JA_FWD_SAME(s_v_head_dim),
    JA_FWD_SAME(s_q_head_num),
    JA_FWD_SAME(s_v_Seqs),
    JA_FWD_SAME(s_v_Hs),
    JA_FWD_SAME(s_v_Bs),
    JA_FWD_SAME(s_o_Seqs),
    JA_FWD_SAME(s_o_Hs),
    JA_FWD_SAME(s_o_Bs),
    JA_FWD_SAME(ptr_qseq),
    JA_FWD_SAME(ptr_kseq),
    JA_FWD_SAME(s_lse_Hs),
    JA_FWD_SAME(ptr_qseq_padding),
    JA_FWD_SAME(ptr_kseq_padding),
    JA_FWD_SAME(ptr_q_descale),
    JA_FWD_SAME(ptr_k_descale),
    JA_FWD_SAME(ptr_v_descale),
    JA_FWD_SAME(s_descale_q_Bs),
    JA_FWD_SAME(s_descale_q_Hs),
    JA_FWD_SAME(s_descale_k_Bs),
    JA_FWD_SAME(s_descale_k_Hs),
    JA_FWD_SAME(s_descale_v_Bs),
    JA_FWD_SAME(s_descale_v_Hs),
};
static_assert(std::size(kAiterFmhaFwdFields) == 32 &&
              std::size(kAiterFmhaFwdFp8FieldsGfx942) == 41 &&
              std::size(kAiterFmhaFwdFp8FieldsGfx950) == 41);
#undef JA_FWD_SAME
#undef JA_FWD_BF16_FIELDS
#undef JA_FWD

#define JA_ODO(member, name) JAX_AITER_NAMED_ARG_FIELD(AiterFmhaBwdOdoArgs, member, name)
inline constexpr ArgField kAiterFmhaBwdOdoFields[] = {
    JA_ODO(ptr_o, "O"),
    JA_ODO(ptr_do, "dO"),
    JA_ODO(ptr_d, "D"),
    JA_ODO(Hs_o, "Hs_o"),
    JA_ODO(BAs_o, "BAs_o"),
    JA_ODO(Seqs_o, "Seqs_o"),
    JA_ODO(Hs_do, "Hs_do"),
    JA_ODO(BAs_do, "BAs_do"),
    JA_ODO(Seqs_do, "Seqs_do"),
    JA_ODO(Hs_d, "Hs_d"),
    JA_ODO(BAs_d, "BAs_d"),
    JA_ODO(Seqs_d, "Seqs_d"),
    JA_ODO(seqlen_q, "seqlen_q"),
    JA_ODO(head_dim, "head_dim"),
    JA_ODO(ptr_qseq, "ptr_seqstart_q"),
    JA_ODO(ptr_qseq_padded, "ptr_seqstart_q_padded"),
};
#undef JA_ODO

#define JA_ODO208(member, name) JAX_AITER_NAMED_ARG_FIELD(AiterFmhaBwdOdo208Args, member, name)
inline constexpr ArgField kAiterFmhaBwdOdo208Fields[] = {
    JA_ODO208(ptr_o, "O"),
    JA_ODO208(ptr_do, "dO"),
    JA_ODO208(ptr_d, "D"),
    JA_ODO208(Hs_odo, "Hs_odo"),
    JA_ODO208(BAs_odo, "BAs_odo"),
    JA_ODO208(Seqs_odo, "Seqs_odo"),
    JA_ODO208(Hs_d, "Hs_d"),
    JA_ODO208(BAs_d, "BAs_d"),
    JA_ODO208(Seqs_d, "Seqs_d"),
    JA_ODO208(seqlen_q, "seqlen_q"),
    JA_ODO208(head_dim, "head_dim"),
    JA_ODO208(ptr_qseq, "ptr_seqstart_q"),
    JA_ODO208(ptr_qseq_padded, "ptr_seqstart_q_padded"),
};
#undef JA_ODO208

namespace aiter_fmha_v3 {
// The 256-byte odo arguments as the 208-byte layout: only when o and do share their strides (our
// plans always pack them so: both are dense [.., hq, dv]).
inline bool odo_as_208(const KernelArgs& packed, KernelArgs& out) {
  const auto a = packed.unpack<AiterFmhaBwdOdoArgs>();
  if (a.Hs_o.value != a.Hs_do.value || a.BAs_o.value != a.BAs_do.value ||
      a.Seqs_o.value != a.Seqs_do.value) {
    return false;
  }
  AiterFmhaBwdOdo208Args b{};
  b.ptr_o = a.ptr_o.value;
  b.ptr_do = a.ptr_do.value;
  b.ptr_d = a.ptr_d.value;
  b.Hs_odo = a.Hs_o.value;
  b.BAs_odo = a.BAs_o.value;
  b.Seqs_odo = a.Seqs_o.value;
  b.Hs_d = a.Hs_d.value;
  b.BAs_d = a.BAs_d.value;
  b.Seqs_d = a.Seqs_d.value;
  b.seqlen_q = a.seqlen_q.value;
  b.head_dim = a.head_dim.value;
  b.ptr_qseq = a.ptr_qseq.value;
  b.ptr_qseq_padded = a.ptr_qseq_padded.value;
  out.set(b);
  return true;
}
}  // namespace aiter_fmha_v3

// The odo layouts AITER's code objects have declared besides ours ("odo-256").
inline constexpr AbiVariant kAiterFmhaBwdOdoVariants[] = {
    {"odo-208 (AITER before 17d4a33b6f, 2026-03-23)", sizeof(AiterFmhaBwdOdo208Args),
     kAiterFmhaBwdOdo208Fields, &aiter_fmha_v3::odo_as_208},
};

#define JA_POST(member, name) JAX_AITER_NAMED_ARG_FIELD(AiterFmhaBwdPostArgs, member, name)
inline constexpr ArgField kAiterFmhaBwdPostFields[] = {
    JA_POST(ptr_dq_acc, "dQ_acc"),       JA_POST(ptr_dq, "dQ"),
    JA_POST(Hs_dq_acc, "Hs_dQ_acc"),     JA_POST(BAs_dq_acc, "BAs_dQ_acc"),
    JA_POST(Seqs_dq_acc, "Seqs_dQ_acc"), JA_POST(Hs_dq, "Hs_dQ"),
    JA_POST(BAs_dq, "BAs_dQ"),           JA_POST(Seqs_dq, "Seqs_dQ"),
    JA_POST(seqlen_q, "seqlen_q"),       JA_POST(head_dim, "head_dim"),
    JA_POST(ptr_qseq, "ptr_seqstart_q"), JA_POST(ptr_qseq_padded, "ptr_seqstart_q_padded"),
};
#undef JA_POST

// The dqdkdv kernels' names differ by arch: gfx950's say head_dim_k where gfx942's say head_dim_v,
// and ptr_seqstart_* (4-byte declarations) where gfx942's say ptr_qseq / ptr_kseq (8 bytes).
#define JA_DQDKDV_COMMON_FIELDS                                                                 \
  JA_MAIN(ptr_dq, "dQ"), JA_MAIN(ptr_dk, "dK"), JA_MAIN(ptr_dv, "dV"), JA_MAIN(ptr_q, "Q"),     \
      JA_MAIN(ptr_k, "K"), JA_MAIN(ptr_v, "V"), JA_MAIN(ptr_do, "dO"), JA_MAIN(ptr_lse, "Lse"), \
      JA_MAIN(ptr_d, "D"), JA_MAIN(scalar, "scalar"), JA_MAIN(log2e, "log2e"),                  \
      JA_MAIN(seqlen_q, "seqlen_q"), JA_MAIN(Ts, "Ts"), JA_MAIN(Hs_q, "Hs_q"),                  \
      JA_MAIN(BAs_q, "BAs_q"), JA_MAIN(Seqs_q, "Seqs_q"), JA_MAIN(ratio, "ratio"),              \
      JA_MAIN(Hs_k, "Hs_k"), JA_MAIN(BAs_k, "BAs_k"), JA_MAIN(Seqs_k, "Seqs_k"),                \
      JA_MAIN(Seqs_dk, "Seqs_dk"), JA_MAIN(seqlen_k, "seqlen_k"),                               \
      JA_MAIN(head_dim_q, "head_dim_q"), JA_MAIN(nhead_q, "nhead_q"), JA_MAIN(Hs_v, "Hs_v"),    \
      JA_MAIN(BAs_v, "BAs_v"), JA_MAIN(Seqs_v, "Seqs_v"), JA_MAIN(Hs_do, "Hs_do"),              \
      JA_MAIN(BAs_do, "BAs_do"), JA_MAIN(Seqs_do, "Seqs_do"), JA_MAIN(Hs_dk, "Hs_dk"),          \
      JA_MAIN(BAs_dk, "BAs_dk"), JA_MAIN(Hs_dv, "Hs_dv"), JA_MAIN(BAs_dv, "BAs_dv"),            \
      JA_MAIN(Seqs_dv, "Seqs_dv"), JA_MAIN(Hs_lsed, "Hs_lsed"),                                 \
      JA_MAIN(max_seqlen_dq, "max_seq_len_dq"), JA_MAIN(mask_x, "mask_x"),                      \
      JA_MAIN(mask_y, "mask_y")
#define JA_MAIN(member, name) JAX_AITER_NAMED_ARG_FIELD(AiterFmhaBwdDqdkdvArgs, member, name)
inline constexpr ArgField kAiterFmhaBwdDqdkdvFieldsGfx942[] = {
    JA_DQDKDV_COMMON_FIELDS,
    JA_MAIN(head_dim_v, "head_dim_v"),
    JA_MAIN(ptr_qseq, "ptr_qseq"),
    JA_MAIN(ptr_kseq, "ptr_kseq"),
    JA_MAIN(ptr_qseq_padded, "ptr_qseq_padded"),
    JA_MAIN(ptr_kseq_padded, "ptr_kseq_padded"),
};
inline constexpr ArgField kAiterFmhaBwdDqdkdvFieldsGfx950[] = {
    JA_DQDKDV_COMMON_FIELDS,
    JA_MAIN(head_dim_v, "head_dim_k"),
    JA_MAIN(ptr_qseq, "ptr_seqstart_q"),
    JA_MAIN(ptr_kseq, "ptr_seqstart_k"),
    JA_MAIN(ptr_qseq_padded, "ptr_seqstart_q_padded"),
    JA_MAIN(ptr_kseq_padded, "ptr_seqstart_k_padded"),
};
#undef JA_MAIN
#undef JA_DQDKDV_COMMON_FIELDS
static_assert(std::size(kAiterFmhaBwdDqdkdvFieldsGfx942) == 44);

// ---- rows ---------------------------------------------------------------------------------------

namespace aiter_fmha_v3 {

// AITER loads the MI308 build of gfx942's forward kernels on these PCI chip ids
// (aiter_hip_common.h is_mi308_device), the MI300 one on every other gfx942.
inline constexpr uint32_t kMi308PciChipIds[] = {0x74a2, 0x74a8, 0x74b6, 0x74bc};

// The forward build a target runs: kPartAny on gfx950, kPartMi308 or kPartMi300 on gfx942.
constexpr int fwd_part(const Target& t) {
  if (t.arch != Arch::kGfx942) return kPartAny;
  for (uint32_t id : kMi308PciChipIds) {
    if (t.pci_chip_id == id) return kPartMi308;
  }
  return kPartMi300;
}

// AITER's row key starts with the arch; its pssk tile rule (ops/attention_asm.hpp) asks whether
// the kernel is a "recompile" build.
constexpr bool is_recompile(std::string_view symbol) {
  return symbol.find("recompile") != std::string_view::npos;
}

}  // namespace aiter_fmha_v3

struct AiterFmhaFwdRow {
  KernelInfo kernel;
  Arch arch;
  int part;     // aiter_fmha_v3::kPart*
  DType dtype;  // q's: bf16, or the arch's fp8 (out bf16)
  int hdim_q, hdim_v;
  int mask;  // 0 none, 2 bottom-right causal
  bool group;
  int bf16_cvt;
  int ts_qo, ts_kv;
};

// A row of any of the backward's four lists.
struct AiterFmhaBwdRow {
  KernelInfo kernel;
  Arch arch;
  DType dtype;
  int hdim_q, hdim_v;
  int mask;  // 0 none, 1 top-left causal, 2 bottom-right causal, 3 sliding window
  bool atomic32, pssk, pddv, group;
  int bf16_cvt;  // 3: any
  int ts_qo, ts;
  bool recompile;  // a "_recompile" build (AITER's pssk rule reads it)
};

// clang-format off
// fp8bf16: the arch's fp8 (e4m3fnuz on gfx942, e4m3fn on gfx950) in, bf16 out.
#define JA_FMHA_DT_bf16(g942) DType::kBF16
#define JA_FMHA_DT_fp16(g942) DType::kF16
#define JA_FMHA_DT_fp8bf16(g942) ((g942) ? DType::kF8E4M3FNUZ : DType::kF8E4M3FN)
#define JA_FMHA_FWD_FIELDS_bf16(g942) std::span<const ArgField>(kAiterFmhaFwdFields)
#define JA_FMHA_FWD_FIELDS_fp8bf16(g942)                           \
  ((g942) ? std::span<const ArgField>(kAiterFmhaFwdFp8FieldsGfx942) \
          : std::span<const ArgField>(kAiterFmhaFwdFp8FieldsGfx950))
#define JA_FMHA_FWD_ROW(dt, hq, hv, mask, mode, cvt, tq, tk, sym, co, part, g942, g950)            \
  AiterFmhaFwdRow{KernelInfo{co, #sym, sizeof(AiterFmhaFwdArgs), JA_FMHA_FWD_FIELDS_##dt(g942)},   \
                  (g942) ? Arch::kGfx942 : Arch::kGfx950, part, JA_FMHA_DT_##dt(g942), hq, hv,      \
                  mask, (mode) != 0, cvt, tq, tk},
#define JA_FMHA_BWD_ROW(Args, fields, abi, variants, dt, hq, hv, mask, a32, pssk, pddv, mode, cvt, \
                        tq, ts, sym, co, g942, g950)                                             \
  AiterFmhaBwdRow{KernelInfo{co, #sym, sizeof(Args), fields, false, 0, abi, variants},           \
                  (g942) ? Arch::kGfx942 : Arch::kGfx950, JA_FMHA_DT_##dt(g942), hq, hv, mask,         \
                  (a32) != 0, (pssk) != 0, (pddv) != 0, (mode) != 0, cvt, tq, ts,                \
                  aiter_fmha_v3::is_recompile(#sym)},
#define JA_FMHA_ODO_ROW(...)                                                            \
  JA_FMHA_BWD_ROW(AiterFmhaBwdOdoArgs, kAiterFmhaBwdOdoFields, "odo-256",               \
                  std::span<const AbiVariant>(kAiterFmhaBwdOdoVariants), __VA_ARGS__)
#define JA_FMHA_POST_ROW(...) \
  JA_FMHA_BWD_ROW(AiterFmhaBwdPostArgs, kAiterFmhaBwdPostFields, "", {}, __VA_ARGS__)
#define JA_FMHA_MAIN_ROW(dt, hq, hv, mask, a32, pssk, pddv, mode, cvt, tq, ts, sym, co, g942, g950) \
  JA_FMHA_BWD_ROW(AiterFmhaBwdDqdkdvArgs,                                                            \
                  (g942) ? std::span<const ArgField>(kAiterFmhaBwdDqdkdvFieldsGfx942)              \
                         : std::span<const ArgField>(kAiterFmhaBwdDqdkdvFieldsGfx950),             \
                  "", {}, dt, hq, hv, mask, a32, pssk, pddv, mode, cvt, tq, ts, sym, co, g942,     \
                  g950)
inline constexpr AiterFmhaFwdRow kAiterFmhaFwdRows[] = {JAX_AITER_FMHA_V3_FWD_ROWS(JA_FMHA_FWD_ROW)};
inline constexpr AiterFmhaBwdRow kAiterFmhaBwdOdoRows[] = {
    JAX_AITER_FMHA_V3_BWD_ODO_ROWS(JA_FMHA_ODO_ROW)};
inline constexpr AiterFmhaBwdRow kAiterFmhaBwdDqdkdvRows[] = {
    JAX_AITER_FMHA_V3_BWD_DQDKDV_ROWS(JA_FMHA_MAIN_ROW)};
inline constexpr AiterFmhaBwdRow kAiterFmhaBwdDqConvertRows[] = {
    JAX_AITER_FMHA_V3_BWD_DQ_CONVERT_ROWS(JA_FMHA_POST_ROW)};
inline constexpr AiterFmhaBwdRow kAiterFmhaBwdDqShuffleRows[] = {
    JAX_AITER_FMHA_V3_BWD_DQ_SHUFFLE_ROWS(JA_FMHA_POST_ROW)};
#undef JA_FMHA_MAIN_ROW
#undef JA_FMHA_POST_ROW
#undef JA_FMHA_ODO_ROW
#undef JA_FMHA_BWD_ROW
#undef JA_FMHA_FWD_ROW
#undef JA_FMHA_FWD_FIELDS_fp8bf16
#undef JA_FMHA_FWD_FIELDS_bf16
#undef JA_FMHA_DT_fp8bf16
#undef JA_FMHA_DT_fp16
#undef JA_FMHA_DT_bf16
// clang-format on

static_assert(std::size(kAiterFmhaFwdRows) == 72 && std::size(kAiterFmhaBwdOdoRows) == 16);
static_assert(std::size(kAiterFmhaBwdDqdkdvRows) == 112);
static_assert(std::size(kAiterFmhaBwdDqConvertRows) == 30 &&
              std::size(kAiterFmhaBwdDqShuffleRows) == 3);
static_assert(kAiterFmhaBwdDqdkdvRows[0].kernel.fields.size() == 44);

namespace aiter_fmha_v3_detail {

using Fwd = AiterTables<kAiterFmhaFwdRows>;
using Bwd = AiterTables<kAiterFmhaBwdOdoRows, kAiterFmhaBwdDqdkdvRows, kAiterFmhaBwdDqConvertRows,
                        kAiterFmhaBwdDqShuffleRows>;
static_assert(Fwd::kGfx942.size() == 56 && Fwd::kGfx950.size() == 16);
static_assert(Bwd::kGfx942.size() == 124 && Bwd::kGfx950.size() == 37);

inline const AiterFamilyRegistrar kFwdRegistrar = Fwd::registrar("fmha_v3_fwd");
inline const AiterFamilyRegistrar kBwdRegistrar = Bwd::registrar("fmha_v3_bwd");

}  // namespace aiter_fmha_v3_detail

}  // namespace jax_aiter::kernels
