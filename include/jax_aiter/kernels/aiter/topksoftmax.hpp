// AITER's top-k softmax ASM family ("topksoftmax"): the 128-byte argument struct its kernels read
// and the table of its rows, generated from the one list in kernels/shared/aiter_topksoftmax.h.
// Facts restated from github.com/ROCm/aiter at e4048607a535: csrc/py_itfs_cu/asm_topksoftmax.cu
// (struct KernelArgs and topk_softmax_asm, which packs it), the CSVs, and the code objects' own
// metadata, which names the arguments as below.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/kernels/aiter/row.hpp"
#include "jax_aiter/kernels/kernel.hpp"
#include "jax_aiter/kernels/shared/aiter_topksoftmax.h"

namespace jax_aiter::kernels {

// One argument per 16-byte slot. Row r of the outputs starts out_stride bytes after row r - 1
// (AITER passes topk_weights.stride(0) * 4 and writes both outputs with it).
struct AiterTopksoftmaxArgs {
  Slot<void*> T;               // ids i32 [batch, topk] (AITER's ptr_T = topk_indices)
  Slot<void*> W;               // weights f32 [batch, topk] (ptr_W = topk_weights)
  Slot<const void*> A;         // logits [batch, expert], fp32 or bf16, rows dense (ptr_A)
  Slot<uint32_t> batch;        // tokens
  Slot<uint32_t> expert;       // experts: the row's num_experts
  Slot<uint32_t> topk;         // the row's topk
  Slot<uint32_t> renormalize;  // 0 or 1
  Slot<uint32_t> out_stride;   // bytes between output rows (both outputs)
};
static_assert(sizeof(AiterTopksoftmaxArgs) == 128);
static_assert(offsetof(AiterTopksoftmaxArgs, W) == 16 && offsetof(AiterTopksoftmaxArgs, A) == 32);
static_assert(offsetof(AiterTopksoftmaxArgs, batch) == 48 &&
              offsetof(AiterTopksoftmaxArgs, expert) == 64);
static_assert(offsetof(AiterTopksoftmaxArgs, topk) == 80 &&
              offsetof(AiterTopksoftmaxArgs, renormalize) == 96);
static_assert(offsetof(AiterTopksoftmaxArgs, out_stride) == 112);

// Named as the code objects' metadata names them.
inline constexpr std::array kAiterTopksoftmaxFields{
    JAX_AITER_ARG_FIELD(AiterTopksoftmaxArgs, T),
    JAX_AITER_ARG_FIELD(AiterTopksoftmaxArgs, W),
    JAX_AITER_ARG_FIELD(AiterTopksoftmaxArgs, A),
    JAX_AITER_ARG_FIELD(AiterTopksoftmaxArgs, batch),
    JAX_AITER_ARG_FIELD(AiterTopksoftmaxArgs, expert),
    JAX_AITER_ARG_FIELD(AiterTopksoftmaxArgs, topk),
    JAX_AITER_ARG_FIELD(AiterTopksoftmaxArgs, renormalize),
    JAX_AITER_ARG_FIELD(AiterTopksoftmaxArgs, out_stride),
};

struct AiterTopksoftmaxRow {
  KernelInfo kernel;
  int subm;     // token rows a workgroup takes
  int experts;  // the logits' row length (exactly)
  int topk;     // experts chosen per row (exactly)
  DType dtype;  // the logits': kF32 or kBF16
  bool on_gfx942, on_gfx950;
};

// clang-format off
#define JA_TOPKSOFTMAX_DTYPE_fp32 DType::kF32
#define JA_TOPKSOFTMAX_DTYPE_bf16 DType::kBF16
#define JA_TOPKSOFTMAX_ROW(symbol, co, subm, e, k, dtype, g942, g950)                       \
  AiterTopksoftmaxRow{KernelInfo{co, #symbol, sizeof(AiterTopksoftmaxArgs),                 \
                                 kAiterTopksoftmaxFields},                                  \
                      subm, e, k, JA_TOPKSOFTMAX_DTYPE_##dtype, g942 != 0, g950 != 0},
inline constexpr AiterTopksoftmaxRow kAiterTopksoftmaxRows[] = {
    JAX_AITER_TOPKSOFTMAX_ROWS(JA_TOPKSOFTMAX_ROW)};
#undef JA_TOPKSOFTMAX_ROW
#undef JA_TOPKSOFTMAX_DTYPE_fp32
#undef JA_TOPKSOFTMAX_DTYPE_bf16
// clang-format on

static_assert(short_name(kAiterTopksoftmaxRows[0]) == "topksoftmax_4x128x4");

namespace aiter_topksoftmax_detail {
// Every row is a (dtype, experts, topk, subm) of its own on each arch, with a subm AITER's cap
// can reach.
constexpr bool rows_consistent() {
  for (size_t i = 0; i < std::size(kAiterTopksoftmaxRows); ++i) {
    const auto& r = kAiterTopksoftmaxRows[i];
    if (r.subm != aiter_topksoftmax::kSmallMaxSubm && r.subm != aiter_topksoftmax::kLargeMaxSubm) {
      return false;
    }
    if (r.topk < 1 || r.topk > r.experts) return false;
    for (size_t j = 0; j < i; ++j) {
      const auto& s = kAiterTopksoftmaxRows[j];
      if (s.dtype == r.dtype && s.experts == r.experts && s.topk == r.topk && s.subm == r.subm &&
          ((s.on_gfx942 && r.on_gfx942) || (s.on_gfx950 && r.on_gfx950))) {
        return false;
      }
    }
  }
  return true;
}
static_assert(rows_consistent());

using Tables = AiterTables<kAiterTopksoftmaxRows>;
static_assert(Tables::kGfx942.size() == 24 && Tables::kGfx950.size() == 24);
inline const AiterFamilyRegistrar kRegistrar = Tables::registrar("topksoftmax");
}  // namespace aiter_topksoftmax_detail

}  // namespace jax_aiter::kernels
