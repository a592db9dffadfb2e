// AITER's one-stage fused-MoE ASM family ("fmoe"): the 448-byte argument struct every kernel
// reads, the 480-byte one some gfx950 kernels declare, the names their metadata gives the fields,
// and the table of rows, generated from the one list in kernels/shared/aiter_fmoe.h. Facts
// restated from github.com/ROCm/aiter at e4048607a535: csrc/py_itfs_cu/asm_fmoe.cu (struct
// KernelArgs, lines 11-69, packed by FMoeKernel::launch_kernel, lines 101-240), the CSVs, and the
// code objects' own metadata.
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
#include "jax_aiter/kernels/shared/aiter_fmoe.h"

namespace jax_aiter::kernels {

// One argument per 16-byte slot. Byte strides; T tokens, E experts, hidden = the model dim,
// inter = the expert's intermediate dim. Pointers the launcher sets only for 1-byte inputs (XQ,
// GUQ, DQ, SMQ) are null for 16-bit ones.
struct AiterFmoeArgs {
  Slot<void*> O;             // out [T, hidden] bf16/f16, accumulated atomically: must start at zero
  Slot<const void*> X;       // x [T, hidden] (fp8/i8; bf16 for the blockscaleBf16 list)
  Slot<const void*> GU;      // w1 [E, 2 inter, hidden] (gate rows, then up rows), shuffled
  Slot<const void*> XC;      // num_valid_ids i32 (AITER's ptr_XC; the metadata calls it U)
  Slot<const void*> D;       // w2 [E, hidden, inter], shuffled
  Slot<const void*> XQ;      // x's f32 scales: [T, 1] per token; [hidden / 128, T] per block
  Slot<const void*> GUQ;     // w1's f32 scales: [E, 2 inter, 1]; [E, 2 inter / 128, hidden / 128]
  Slot<const void*> DQ;      // w2's f32 scales: [E, hidden, 1]; [E, hidden / 128, inter / 128]
  Slot<const void*> SMQ;     // fc2 smoothing scales [E, 1, inter] (smf 2 rows; null otherwise)
  Slot<const void*> STP;     // sorted token ids i32 [max_sorted_rows] (aiter_fmoe::sorted_id)
  Slot<const void*> SW;      // sorted top-k weights f32 [max_sorted_rows]
  Slot<const void*> SEP;     // the expert of each block, i32 [max_blocks]
  Slot<uint32_t> dim;        // hidden
  Slot<uint32_t> inter_dim;  // inter
  Slot<uint32_t> token_cnt;  // T (out's rows)
  Slot<uint32_t> eprt_cnt;   // E
  Slot<uint32_t> Xs;         // x's row stride
  Slot<uint32_t> GUs;        // a w1 row: hidden x 1 byte
  Slot<uint32_t> Ds;         // a w2 row: inter x 1 byte
  Slot<uint32_t> Os;         // out's row stride
  Slot<uint32_t> eGUs;       // an expert of w1: GUs x inter, x 2 for g1u1
  Slot<uint32_t> eDs;        // an expert of w2: Ds x hidden
  Slot<uint32_t> eGUQs;      // an expert of w1's scales (0 when there are none)
  Slot<uint32_t> eDQs;       // an expert of w2's scales (0 when there are none)
  Slot<uint32_t> eSMQs;      // inter x 4, always
  Slot<uint32_t> topk;
  Slot<uint32_t> total_tgs;  // a ps row's persistent workgroups in whole multiples of ps_deno
  Slot<uint32_t> ps_deno;    // inter tiles: ceil(inter / subGU_n)
};
static_assert(sizeof(AiterFmoeArgs) == 448);
static_assert(offsetof(AiterFmoeArgs, XC) == 48 && offsetof(AiterFmoeArgs, SEP) == 176);
static_assert(offsetof(AiterFmoeArgs, dim) == 192 && offsetof(AiterFmoeArgs, Os) == 304);
static_assert(offsetof(AiterFmoeArgs, eSMQs) == 384 && offsetof(AiterFmoeArgs, topk) == 400);
static_assert(offsetof(AiterFmoeArgs, total_tgs) == 416 && offsetof(AiterFmoeArgs, ps_deno) == 432);

// The gfx950 block-scale (and flat MXFP4) kernels declare 480 bytes: AITER's fields, then two
// pointer slots its 448-byte struct does not cover (the runtime copies them from past the end of
// AITER's struct). We pass them as null.
struct AiterFmoeWideArgs {
  AiterFmoeArgs base;
  Slot<const void*> a2, a2q;
};
static_assert(sizeof(AiterFmoeWideArgs) == 480 && offsetof(AiterFmoeWideArgs, base) == 0);
static_assert(offsetof(AiterFmoeWideArgs, a2) == 448 && offsetof(AiterFmoeWideArgs, a2q) == 464);

namespace aiter_fmoe_detail {

inline constexpr size_t kFields = 28;
using Names = std::array<std::string_view, kFields>;

// The struct's fields in order, named as the metadata of one naming (arg_names) names them.
constexpr std::array<ArgField, kFields> fields(const Names& names) {
#define JA_FMOE_FIELD(member) JAX_AITER_ARG_FIELD(AiterFmoeArgs, member)
  std::array<ArgField, kFields> f{
      JA_FMOE_FIELD(O),        JA_FMOE_FIELD(X),         JA_FMOE_FIELD(GU),
      JA_FMOE_FIELD(XC),       JA_FMOE_FIELD(D),         JA_FMOE_FIELD(XQ),
      JA_FMOE_FIELD(GUQ),      JA_FMOE_FIELD(DQ),        JA_FMOE_FIELD(SMQ),
      JA_FMOE_FIELD(STP),      JA_FMOE_FIELD(SW),        JA_FMOE_FIELD(SEP),
      JA_FMOE_FIELD(dim),      JA_FMOE_FIELD(inter_dim), JA_FMOE_FIELD(token_cnt),
      JA_FMOE_FIELD(eprt_cnt), JA_FMOE_FIELD(Xs),        JA_FMOE_FIELD(GUs),
      JA_FMOE_FIELD(Ds),       JA_FMOE_FIELD(Os),        JA_FMOE_FIELD(eGUs),
      JA_FMOE_FIELD(eDs),      JA_FMOE_FIELD(eGUQs),     JA_FMOE_FIELD(eDQs),
      JA_FMOE_FIELD(eSMQs),    JA_FMOE_FIELD(topk),      JA_FMOE_FIELD(total_tgs),
      JA_FMOE_FIELD(ps_deno)};
#undef JA_FMOE_FIELD
  for (size_t i = 0; i < kFields; ++i) f[i].name = names[i];
  return f;
}

// The same plus the wide struct's two slots.
constexpr std::array<ArgField, kFields + 2> wide_fields(const Names& names) {
  const auto base = fields(names);
  std::array<ArgField, kFields + 2> f{};
  for (size_t i = 0; i < kFields; ++i) f[i] = base[i];
  f[kFields] = JAX_AITER_ARG_FIELD(AiterFmoeWideArgs, a2);
  f[kFields + 1] = JAX_AITER_ARG_FIELD(AiterFmoeWideArgs, a2q);
  return f;
}

// The four namings AITER's code objects use at e4048607a535 (llvm-readelf-22 --notes): most name
// the slots after the launcher's fields (o_tgs); some name the last two with a "_s_" prefix
// (o_s_tgs); gfx942's a16 block-scale kernels spell every name out (r_s_tgs, r_pad_tgs). All
// declare the same offsets.
inline constexpr Names kO = {"O",     "X",     "G",    "U",     "D",    "XQ",        "GQ",
                             "DQ",    "SMQ",   "STP",  "SW",    "SEP",  "dim",       "hdim",
                             "batch", "eprt",  "Xs",   "GUs",   "Ds",   "Os",        "eGUs",
                             "eDs",   "eGUQs", "eDQs", "eSMQs", "topk", "total_tgs", "ps_deno"};
constexpr Names renamed_tail(Names n, std::string_view total, std::string_view deno) {
  n[kFields - 2] = total;
  n[kFields - 1] = deno;
  return n;
}
inline constexpr Names kOS = renamed_tail(kO, "_s_total_tgs", "_s_deno_tgs");
inline constexpr Names kR = {"R",
                             "X",
                             "G",
                             "U",
                             "D",
                             "XQ",
                             "GQ",
                             "DQ",
                             "GsmQ",
                             "STP",
                             "SW",
                             "SEP",
                             "dim_len",
                             "hidden_len",
                             "token_cnt",
                             "eprt_cnt",
                             "stride_X",
                             "stride_GU",
                             "stride_D",
                             "stride_R",
                             "stride_expert_GU",
                             "stride_expert_D",
                             "stride_expert_GUQ",
                             "stride_expert_DQ",
                             "stride_expert_GsmQ",
                             "topk",
                             "_s_total_tgs",
                             "_s_deno_tgs"};
inline constexpr Names kRPad = renamed_tail(kR, "_pad_total_tgs", "_pad_ps_deno");

inline constexpr auto kOFields = fields(kO);
inline constexpr auto kOSFields = fields(kOS);
inline constexpr auto kRSFields = fields(kR);
inline constexpr auto kRPadFields = fields(kRPad);
inline constexpr auto kOSWideFields = wide_fields(kOS);

// The arg_names column.
enum class ArgNames : uint8_t { kO, kOS, kRS, kRPad };

// The struct a row packs (a code object declaring more than AITER's 448 bytes gets the wide one)
// and its fields as the row's code object names them. Every 480-byte kernel names its slots
// o_s_tgs (rows_consistent below).
constexpr uint32_t args_size(uint32_t kernarg_bytes) {
  return kernarg_bytes > sizeof(AiterFmoeArgs) ? sizeof(AiterFmoeWideArgs) : sizeof(AiterFmoeArgs);
}
constexpr std::span<const ArgField> row_fields(uint32_t kernarg_bytes, ArgNames names) {
  if (kernarg_bytes > sizeof(AiterFmoeArgs)) return kOSWideFields;
  switch (names) {
    case ArgNames::kO: return kOFields;
    case ArgNames::kOS: return kOSFields;
    case ArgNames::kRS: return kRSFields;
    case ArgNames::kRPad: return kRPadFields;
  }
  return {};
}

}  // namespace aiter_fmoe_detail

// The list (AITER CSV) a row is in: the launcher picks one per call from the inputs' dtypes, the
// activation and its entry point.
enum class AiterFmoeQuant : uint8_t {
  kPertokenFp8,
  kPertokenInt8,
  kBlockscaleFp8,
  kBlockscaleBf16
};
enum class AiterFmoeAct : uint8_t { kSilu, kGelu };

struct AiterFmoeRow {
  KernelInfo kernel;
  DType out;  // bf16 or f16
  AiterFmoeQuant quant;
  bool g1u1;  // false: g1u0 (w1 holds the gate only)
  AiterFmoeAct act;
  bool tkw1;  // the top-k weight scales the activation (AITER's doweight_stage1)
  int atm, vskip, smf, tg_num_per_cu;
  bool ps;
  int sub_m, sub_n;  // sorted rows (the sorting's block_m) x inter columns a workgroup takes
  int flat;
  uint32_t kernarg_bytes;  // what the code object declares
  aiter_fmoe_detail::ArgNames names;
  bool on_gfx942, on_gfx950;

  constexpr bool wide() const { return kernel.args_size == sizeof(AiterFmoeWideArgs); }
};

// clang-format off
#define JA_FMOE_OUT_bf16 DType::kBF16
#define JA_FMOE_OUT_fp16 DType::kF16
#define JA_FMOE_QUANT_pertokenFp8 AiterFmoeQuant::kPertokenFp8
#define JA_FMOE_QUANT_pertokenInt8 AiterFmoeQuant::kPertokenInt8
#define JA_FMOE_QUANT_blockscaleFp8 AiterFmoeQuant::kBlockscaleFp8
#define JA_FMOE_QUANT_blockscaleBf16 AiterFmoeQuant::kBlockscaleBf16
#define JA_FMOE_G1U1_g1u1 true
#define JA_FMOE_G1U1_g1u0 false
#define JA_FMOE_ACT_silu AiterFmoeAct::kSilu
#define JA_FMOE_ACT_gelu AiterFmoeAct::kGelu
#define JA_FMOE_NAMES_o_tgs aiter_fmoe_detail::ArgNames::kO
#define JA_FMOE_NAMES_o_s_tgs aiter_fmoe_detail::ArgNames::kOS
#define JA_FMOE_NAMES_r_s_tgs aiter_fmoe_detail::ArgNames::kRS
#define JA_FMOE_NAMES_r_pad_tgs aiter_fmoe_detail::ArgNames::kRPad
#define JA_FMOE_ROW(symbol, co, out, quant, gate, act, tkw1, atm, vskip, smf, tgs, ps, sm, sn,   \
                    flat, kernarg, names, g942, g950)                                           \
  AiterFmoeRow{KernelInfo{co, #symbol, aiter_fmoe_detail::args_size(kernarg),                    \
                          aiter_fmoe_detail::row_fields(kernarg, JA_FMOE_NAMES_##names), false, \
                          0, kernarg > 448 ? "fmoe-480" : "fmoe-448"},                           \
               JA_FMOE_OUT_##out, JA_FMOE_QUANT_##quant, JA_FMOE_G1U1_##gate,                   \
               JA_FMOE_ACT_##act, tkw1 != 0, atm, vskip, smf, tgs, ps != 0, sm, sn, flat,       \
               kernarg, JA_FMOE_NAMES_##names, g942 != 0, g950 != 0},
inline constexpr AiterFmoeRow kAiterFmoeRows[] = {JAX_AITER_FMOE_ROWS(JA_FMOE_ROW)};
#undef JA_FMOE_ROW
#undef JA_FMOE_OUT_bf16
#undef JA_FMOE_OUT_fp16
#undef JA_FMOE_QUANT_pertokenFp8
#undef JA_FMOE_QUANT_pertokenInt8
#undef JA_FMOE_QUANT_blockscaleFp8
#undef JA_FMOE_QUANT_blockscaleBf16
#undef JA_FMOE_G1U1_g1u1
#undef JA_FMOE_G1U1_g1u0
#undef JA_FMOE_ACT_silu
#undef JA_FMOE_ACT_gelu
#undef JA_FMOE_NAMES_o_tgs
#undef JA_FMOE_NAMES_o_s_tgs
#undef JA_FMOE_NAMES_r_s_tgs
#undef JA_FMOE_NAMES_r_pad_tgs
// clang-format on

static_assert(short_name(kAiterFmoeRows[0]) == "fmoe_bf16_pertokenFp8_g1u1_vs_silu_1tg_32x128");

namespace aiter_fmoe_detail {

constexpr bool rows_consistent() {
  for (const AiterFmoeRow& r : kAiterFmoeRows) {
    // A wide row's extra slots carry the o_s_tgs names (the only naming of a 480-byte kernel).
    if (r.wide() && (r.kernarg_bytes != sizeof(AiterFmoeWideArgs) || r.names != ArgNames::kOS)) {
      return false;
    }
    if (r.kernel.args_size < r.kernarg_bytes) return false;  // our struct covers the segment
    if (r.sub_n <= 0 || r.sub_m <= 0 || r.tg_num_per_cu <= 0) return false;
  }
  return true;
}
static_assert(rows_consistent());

// A kernel in two lists of one arch is one code object: the catalog (what check-aiter checks and
// the build embeds) names it once. Only flat rows (gfx942's a16 flat and emsort kernels) sit in two
// lists (test_fused_moe_abi checks that for every row), so only they are compared here: comparing
// every pair of 434 rows would cost each includer seconds of constexpr evaluation.
constexpr bool listed_before(size_t i, Arch a) {
  const AiterFmoeRow& r = kAiterFmoeRows[i];
  if (r.flat == 0) return false;
  for (size_t j = 0; j < i; ++j) {
    const AiterFmoeRow& s = kAiterFmoeRows[j];
    if (s.flat != 0 && on(s, a) && s.kernel.code_object == r.kernel.code_object) return true;
  }
  return false;
}
template <Arch A>
constexpr size_t count_unique() {
  size_t n = 0;
  for (size_t i = 0; i < std::size(kAiterFmoeRows); ++i) {
    n += on(kAiterFmoeRows[i], A) && !listed_before(i, A) ? 1 : 0;
  }
  return n;
}
template <Arch A>
constexpr auto unique_kernels() {
  std::array<const KernelInfo*, count_unique<A>()> out{};
  size_t n = 0;
  for (size_t i = 0; i < std::size(kAiterFmoeRows); ++i) {
    if (on(kAiterFmoeRows[i], A) && !listed_before(i, A)) out[n++] = &kAiterFmoeRows[i].kernel;
  }
  return out;
}
inline constexpr auto kGfx942 = unique_kernels<Arch::kGfx942>();
inline constexpr auto kGfx950 = unique_kernels<Arch::kGfx950>();
static_assert(std::size(kAiterFmoeRows) == 434 && kGfx942.size() == 386 && kGfx950.size() == 406);
inline const AiterFamilyRegistrar kRegistrar{AiterFamily{"fmoe", "gfx942", kGfx942},
                                             AiterFamily{"fmoe", "gfx950", kGfx950}};

}  // namespace aiter_fmoe_detail

}  // namespace jax_aiter::kernels
