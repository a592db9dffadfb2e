// AITER's two-stage fused-MoE ASM family ("fmoe_2stages", the stage-1 kernels): the 368-byte
// argument struct every kernel reads, the 400-byte one four gfx942 kernels declare, the names
// their metadata gives the fields, and the table of rows, generated from the one list in
// kernels/shared/aiter_fmoe_2stages.h. Facts restated from github.com/ROCm/aiter at e4048607a535:
// csrc/py_itfs_cu/asm_moe_2stage.cu (struct KernelArgs, lines 10-59, packed by moe_stage1_g1u1,
// lines 161-300), the CSVs, and the code objects' own metadata.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/kernels/aiter/row.hpp"
#include "jax_aiter/kernels/kernel.hpp"
#include "jax_aiter/kernels/shared/aiter_fmoe_2stages.h"

namespace jax_aiter::kernels {

// One argument per 16-byte slot. T tokens, E experts, H = hidden (the model dim), I = inter.
struct AiterFmoe2StagesArgs {
  Slot<void*> O;              // stage-1 out [T, topk, I] (module doc of aiter_fmoe_2stages.h)
  Slot<const void*> X;        // x [T, H] fp8/i8
  Slot<const void*> GU;       // w1 [E, 2I, H] (gate rows, then up rows), shuffled (16, 16)
  Slot<const void*> XC;       // num_valid_ids i32 (the metadata calls it Xc)
  Slot<const void*> XQ;       // x's f32 scales: [T, 1] per token; [H / 128, T] per block
  Slot<const void*> GUQ;      // w1's f32 scales: [E, 2I, 1]; [E, 2I / 128, H / 128]
  Slot<const void*> SMQ;      // smoothing scales: AITER's launcher never sets it; we pass null
  Slot<const void*> STP;      // sorted token ids i32 [max_sorted_rows] ((slot << 24) | token)
  Slot<const void*> SEP;      // the expert of each sorted block, i32
  Slot<uint32_t> dim;         // H (AITER: w2's dim 1)
  Slot<uint32_t> hidden_dim;  // I (AITER names inter "hidden_dim" here; the metadata "hdim")
  Slot<uint32_t> token_cnt;   // T
  Slot<uint32_t> eprt_cnt;    // E
  Slot<uint32_t> Xs;          // x's row stride in bytes
  Slot<uint32_t> GUs;         // a w1 row: H x 1 byte
  Slot<uint32_t> Os;          // out's token stride in bytes: topk x I x its element size
  Slot<uint32_t> eGUs;        // an expert of w1: GUs x I, x 2 for g1u1
  Slot<uint32_t> eGUQs;       // an expert of w1's scales in bytes (0 when there are none)
  Slot<uint32_t> eSMQs;       // I x 4, always
  Slot<uint32_t> topk;
  Slot<uint32_t> splitk;      // AITER's ksplit (log2 of the grid's z); ours 0
  Slot<uint32_t> activation;  // aiter_fmoe_2stages::kSilu, kGelu
  Slot<const void*> SW;       // sorted top-k weights f32 (doweight rows; null otherwise)
};
static_assert(sizeof(AiterFmoe2StagesArgs) == 368);
static_assert(offsetof(AiterFmoe2StagesArgs, XC) == 48 &&
              offsetof(AiterFmoe2StagesArgs, SEP) == 128);
static_assert(offsetof(AiterFmoe2StagesArgs, dim) == 144 &&
              offsetof(AiterFmoe2StagesArgs, Os) == 240);
static_assert(offsetof(AiterFmoe2StagesArgs, eGUQs) == 272 &&
              offsetof(AiterFmoe2StagesArgs, topk) == 304);
static_assert(offsetof(AiterFmoe2StagesArgs, splitk) == 320 &&
              offsetof(AiterFmoe2StagesArgs, activation) == 336 &&
              offsetof(AiterFmoe2StagesArgs, SW) == 352);

// gfx942's int8 x192 and x384 kernels declare 400 bytes: AITER's fields, then two slots its
// 368-byte struct does not cover (the runtime copies them from past the end of AITER's struct).
// We pass them as 0 (not persistent: the launcher's grid is the plain one).
struct AiterFmoe2StagesWideArgs {
  AiterFmoe2StagesArgs base;
  Slot<uint32_t> total_tgs, ps_deno;
};
static_assert(sizeof(AiterFmoe2StagesWideArgs) == 400);
static_assert(offsetof(AiterFmoe2StagesWideArgs, total_tgs) == 368 &&
              offsetof(AiterFmoe2StagesWideArgs, ps_deno) == 384);

namespace aiter_fmoe_2stages_detail {

// The fields in order, named as every code object's metadata names them (one naming at
// e4048607a535).
constexpr ArgField named(ArgField f, std::string_view name) {
  f.name = name;
  return f;
}
#define JA_FMOE2_FIELD(member, name) named(JAX_AITER_ARG_FIELD(AiterFmoe2StagesArgs, member), name)
inline constexpr std::array<ArgField, 25> kWideFields{
    JA_FMOE2_FIELD(O, "O"),
    JA_FMOE2_FIELD(X, "X"),
    JA_FMOE2_FIELD(GU, "G"),
    JA_FMOE2_FIELD(XC, "Xc"),
    JA_FMOE2_FIELD(XQ, "XQ"),
    JA_FMOE2_FIELD(GUQ, "GQ"),
    JA_FMOE2_FIELD(SMQ, "SMQ"),
    JA_FMOE2_FIELD(STP, "STP"),
    JA_FMOE2_FIELD(SEP, "SEP"),
    JA_FMOE2_FIELD(dim, "dim"),
    JA_FMOE2_FIELD(hidden_dim, "hdim"),
    JA_FMOE2_FIELD(token_cnt, "batch"),
    JA_FMOE2_FIELD(eprt_cnt, "eprt"),
    JA_FMOE2_FIELD(Xs, "Xs"),
    JA_FMOE2_FIELD(GUs, "GUs"),
    JA_FMOE2_FIELD(Os, "Os"),
    JA_FMOE2_FIELD(eGUs, "eGUs"),
    JA_FMOE2_FIELD(eGUQs, "eGUQs"),
    JA_FMOE2_FIELD(eSMQs, "eSMQs"),
    JA_FMOE2_FIELD(topk, "topk"),
    JA_FMOE2_FIELD(splitk, "splitk"),
    JA_FMOE2_FIELD(activation, "activation"),
    JA_FMOE2_FIELD(SW, "SW"),
    named(JAX_AITER_ARG_FIELD(AiterFmoe2StagesWideArgs, total_tgs), "total_tgs"),
    named(JAX_AITER_ARG_FIELD(AiterFmoe2StagesWideArgs, ps_deno), "ps_deno")};
#undef JA_FMOE2_FIELD

constexpr uint32_t args_size(uint32_t kernarg_bytes) {
  return kernarg_bytes > sizeof(AiterFmoe2StagesArgs) ? sizeof(AiterFmoe2StagesWideArgs)
                                                      : sizeof(AiterFmoe2StagesArgs);
}
constexpr std::span<const ArgField> row_fields(uint32_t kernarg_bytes) {
  return std::span<const ArgField>(kWideFields)
      .first(kernarg_bytes > sizeof(AiterFmoe2StagesArgs) ? 25 : 23);
}

}  // namespace aiter_fmoe_2stages_detail

// The list (AITER CSV) a row is in.
enum class AiterFmoe2StagesQuant : uint8_t { kPertokenFp8, kPertokenInt8, kBlockscaleFp8 };

struct AiterFmoe2StagesRow {
  KernelInfo kernel;
  AiterFmoe2StagesQuant quant;
  bool doweight;  // the top-k weight scales act(gate) * up (AITER's doweight_stage1)
  int tile_m, tile_n;
  uint32_t kernarg_bytes;  // what the code object declares
  bool on_gfx942, on_gfx950;

  constexpr bool wide() const { return kernel.args_size == sizeof(AiterFmoe2StagesWideArgs); }
};

// clang-format off
#define JA_FMOE2_QUANT_pertokenFp8 AiterFmoe2StagesQuant::kPertokenFp8
#define JA_FMOE2_QUANT_pertokenInt8 AiterFmoe2StagesQuant::kPertokenInt8
#define JA_FMOE2_QUANT_blockscaleFp8 AiterFmoe2StagesQuant::kBlockscaleFp8
#define JA_FMOE2_ROW(symbol, co, quant, doweight, tm, tn, kernarg, g942, g950)                  \
  AiterFmoe2StagesRow{KernelInfo{co, #symbol, aiter_fmoe_2stages_detail::args_size(kernarg),     \
                                 aiter_fmoe_2stages_detail::row_fields(kernarg), false, 0,       \
                                 kernarg > 368 ? "fmoe_2stages-400" : "fmoe_2stages-368"},       \
                      JA_FMOE2_QUANT_##quant, doweight != 0, tm, tn, kernarg, g942 != 0,         \
                      g950 != 0},
inline constexpr AiterFmoe2StagesRow kAiterFmoe2StagesRows[] = {
    JAX_AITER_FMOE_2STAGES_ROWS(JA_FMOE2_ROW)};
#undef JA_FMOE2_ROW
#undef JA_FMOE2_QUANT_pertokenFp8
#undef JA_FMOE2_QUANT_pertokenInt8
#undef JA_FMOE2_QUANT_blockscaleFp8
// clang-format on

static_assert(short_name(kAiterFmoe2StagesRows[0]) ==
              "fmoe_stage1_bf16_pertokenFp8_g1u1_16x64_5tg_pf3");

namespace aiter_fmoe_2stages_detail {

constexpr bool rows_consistent() {
  for (const AiterFmoe2StagesRow& r : kAiterFmoe2StagesRows) {
    if (r.kernel.args_size < r.kernarg_bytes) return false;  // our struct covers the segment
    if (r.kernarg_bytes != 368 && r.kernarg_bytes != 400) return false;
    if (r.tile_m <= 0 || r.tile_n <= 0 || r.tile_n % 64 != 0) return false;
    // Block scales: whole 128-column blocks per workgroup (the output's scale blocks).
    if (r.quant == AiterFmoe2StagesQuant::kBlockscaleFp8 &&
        r.tile_n % aiter_fmoe_2stages::kScaleBlock != 0) {
      return false;
    }
    if (r.doweight && r.quant != AiterFmoe2StagesQuant::kPertokenFp8) return false;
  }
  return true;
}
static_assert(rows_consistent());

// Every code object is one row (no kernel sits in two lists): the catalog lists each row once.
inline constexpr auto kGfx942 = kernels_on<Arch::kGfx942, kAiterFmoe2StagesRows>();
inline constexpr auto kGfx950 = kernels_on<Arch::kGfx950, kAiterFmoe2StagesRows>();
static_assert(std::size(kAiterFmoe2StagesRows) == 186 && kGfx942.size() == 186 &&
              kGfx950.size() == 182);
inline const AiterFamilyRegistrar kRegistrar{AiterFamily{"fmoe_2stages", "gfx942", kGfx942},
                                             AiterFamily{"fmoe_2stages", "gfx950", kGfx950}};

}  // namespace aiter_fmoe_2stages_detail

}  // namespace jax_aiter::kernels
