// The ASM tiers of flash attention (ops/attention_asm.hpp) against AITER's rules written again
// here, independently: AITER's CSV rows transcribed below (every row, not our trimmed table), its
// Python and C++ gates as AITER states them (aiter/ops/mha.py, csrc/cpp_itfs/mha_{fwd,bwd}.cu at
// e4048607a535, restated in shared/aiter-facts/ABI-AND-RULES.md sections 4.7, 4.8, 5), and the
// stated tie-break. Over a grid of problems per arch: whether the tier runs the call, which rows
// it picks, the steps, grids and workspace of its plan. Then the argument structs' fields at their
// offsets for representative shapes, the metadata names of every kernel kind, and AITER's own
// choices where they do not depend on its hash order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "jax_aiter/ops/attention_asm.hpp"
#include "jax_aiter/ops/attention_portable.hpp"
#ifdef JAX_AITER_TEST_KERNARG_CHECK
#include "jax_aiter/runtime/kernarg_check.hpp"
#endif

namespace {

namespace ja = jax_aiter;
namespace ops = ja::ops;
namespace K = ja::kernels;
using ja::Arch;
using ja::DType;

// Every row of hsa/<arch>/fmha_v3_fwd/fmha_fwd.csv and hsa/<arch>/fmha_v3_bwd/fmha_bwd_*.csv (kind
// "fwd", "odo", "dqdkdv", "dq_convert", "dq_shuffle"), in CSV order: arch, kind, dtype, hdim_q,
// hdim_v, mask, atomic32, pssk, pddv, mode, bf16_cvt, ts_qo, ts (the forward's ts_kv), knl_name,
// co_name. The forward rows have no atomic32/pssk/pddv (0 here).
struct CsvRow {
  std::string_view arch, kind, dtype;
  int hq, hv, mask, a32, pssk, pddv, mode, cvt, ts_qo, ts;
  std::string_view symbol, co;
};
// clang-format off
const CsvRow kCsv[] = {
    {"gfx942", "fwd", "bf16", 128, 128, 0, 0, 0, 0, 0, 0, 256, 32, "_ZN5aiter24fmha_fwd_hd128_bf16_rtneE", "fwd_hd128_bf16_rtne.co"},
    {"gfx942", "fwd", "bf16", 128, 128, 0, 0, 0, 0, 0, 1, 256, 32, "_ZN5aiter24fmha_fwd_hd128_bf16_rtnaE", "fwd_hd128_bf16_rtna.co"},
    {"gfx942", "fwd", "bf16", 128, 128, 0, 0, 0, 0, 0, 2, 256, 32, "_ZN5aiter23fmha_fwd_hd128_bf16_rtzE", "fwd_hd128_bf16_rtz.co"},
    {"gfx942", "fwd", "bf16", 128, 128, 2, 0, 0, 0, 0, 0, 256, 32, "_ZN5aiter31fmha_fwd_hd128_bf16_causal_rtneE", "fwd_hd128_bf16_causal_rtne.co"},
    {"gfx942", "fwd", "bf16", 128, 128, 2, 0, 0, 0, 0, 1, 256, 32, "_ZN5aiter31fmha_fwd_hd128_bf16_causal_rtnaE", "fwd_hd128_bf16_causal_rtna.co"},
    {"gfx942", "fwd", "bf16", 128, 128, 2, 0, 0, 0, 0, 2, 256, 32, "_ZN5aiter30fmha_fwd_hd128_bf16_causal_rtzE", "fwd_hd128_bf16_causal_rtz.co"},
    {"gfx942", "fwd", "bf16", 128, 128, 0, 0, 0, 0, 1, 0, 256, 32, "_ZN5aiter30fmha_fwd_hd128_bf16_rtne_groupE", "fwd_hd128_bf16_rtne_group.co"},
    {"gfx942", "fwd", "bf16", 128, 128, 0, 0, 0, 0, 1, 1, 256, 32, "_ZN5aiter30fmha_fwd_hd128_bf16_rtna_groupE", "fwd_hd128_bf16_rtna_group.co"},
    {"gfx942", "fwd", "bf16", 128, 128, 0, 0, 0, 0, 1, 2, 256, 32, "_ZN5aiter29fmha_fwd_hd128_bf16_rtz_groupE", "fwd_hd128_bf16_rtz_group.co"},
    {"gfx942", "fwd", "bf16", 128, 128, 2, 0, 0, 0, 1, 0, 256, 32, "_ZN5aiter37fmha_fwd_hd128_bf16_causal_rtne_groupE", "fwd_hd128_bf16_causal_rtne_group.co"},
    {"gfx942", "fwd", "bf16", 128, 128, 2, 0, 0, 0, 1, 1, 256, 32, "_ZN5aiter37fmha_fwd_hd128_bf16_causal_rtna_groupE", "fwd_hd128_bf16_causal_rtna_group.co"},
    {"gfx942", "fwd", "bf16", 128, 128, 2, 0, 0, 0, 1, 2, 256, 32, "_ZN5aiter36fmha_fwd_hd128_bf16_causal_rtz_groupE", "fwd_hd128_bf16_causal_rtz_group.co"},
    {"gfx942", "fwd", "bf16", 192, 128, 0, 0, 0, 0, 0, 0, 128, 32, "_ZN5aiter28fmha_fwd_hd192x128_bf16_rtneE", "fwd_hd192x128_bf16_rtne.co"},
    {"gfx942", "fwd", "bf16", 192, 128, 0, 0, 0, 0, 0, 1, 128, 32, "_ZN5aiter28fmha_fwd_hd192x128_bf16_rtnaE", "fwd_hd192x128_bf16_rtna.co"},
    {"gfx942", "fwd", "bf16", 192, 128, 0, 0, 0, 0, 0, 2, 128, 32, "_ZN5aiter27fmha_fwd_hd192x128_bf16_rtzE", "fwd_hd192x128_bf16_rtz.co"},
    {"gfx942", "fwd", "bf16", 192, 128, 2, 0, 0, 0, 0, 0, 128, 32, "_ZN5aiter35fmha_fwd_hd192x128_bf16_causal_rtneE", "fwd_hd192x128_bf16_causal_rtne.co"},
    {"gfx942", "fwd", "bf16", 192, 128, 2, 0, 0, 0, 0, 1, 128, 32, "_ZN5aiter35fmha_fwd_hd192x128_bf16_causal_rtnaE", "fwd_hd192x128_bf16_causal_rtna.co"},
    {"gfx942", "fwd", "bf16", 192, 128, 2, 0, 0, 0, 0, 2, 128, 32, "_ZN5aiter34fmha_fwd_hd192x128_bf16_causal_rtzE", "fwd_hd192x128_bf16_causal_rtz.co"},
    {"gfx942", "fwd", "bf16", 192, 128, 0, 0, 0, 0, 1, 0, 128, 32, "_ZN5aiter34fmha_fwd_hd192x128_bf16_rtne_groupE", "fwd_hd192x128_bf16_rtne_group.co"},
    {"gfx942", "fwd", "bf16", 192, 128, 0, 0, 0, 0, 1, 1, 128, 32, "_ZN5aiter34fmha_fwd_hd192x128_bf16_rtna_groupE", "fwd_hd192x128_bf16_rtna_group.co"},
    {"gfx942", "fwd", "bf16", 192, 128, 0, 0, 0, 0, 1, 2, 128, 32, "_ZN5aiter33fmha_fwd_hd192x128_bf16_rtz_groupE", "fwd_hd192x128_bf16_rtz_group.co"},
    {"gfx942", "fwd", "bf16", 192, 128, 2, 0, 0, 0, 1, 0, 128, 32, "_ZN5aiter41fmha_fwd_hd192x128_bf16_causal_rtne_groupE", "fwd_hd192x128_bf16_causal_rtne_group.co"},
    {"gfx942", "fwd", "bf16", 192, 128, 2, 0, 0, 0, 1, 1, 128, 32, "_ZN5aiter41fmha_fwd_hd192x128_bf16_causal_rtna_groupE", "fwd_hd192x128_bf16_causal_rtna_group.co"},
    {"gfx942", "fwd", "bf16", 192, 128, 2, 0, 0, 0, 1, 2, 128, 32, "_ZN5aiter40fmha_fwd_hd192x128_bf16_causal_rtz_groupE", "fwd_hd192x128_bf16_causal_rtz_group.co"},
    {"gfx942", "fwd", "fp8bf16", 128, 128, 0, 0, 0, 0, 0, 1, 256, 64, "_ZN5aiter18fmha_fwd_hd128_fp8E", "fwd_hd128_fp8.co"},
    {"gfx942", "fwd", "fp8bf16", 128, 128, 2, 0, 0, 0, 0, 1, 256, 64, "_ZN5aiter25fmha_fwd_hd128_fp8_causalE", "fwd_hd128_fp8_causal.co"},
    {"gfx942", "fwd", "fp8bf16", 128, 128, 0, 0, 0, 0, 1, 1, 256, 64, "_ZN5aiter24fmha_fwd_hd128_fp8_groupE", "fwd_hd128_fp8_group.co"},
    {"gfx942", "fwd", "fp8bf16", 128, 128, 2, 0, 0, 0, 1, 1, 256, 64, "_ZN5aiter31fmha_fwd_hd128_fp8_causal_groupE", "fwd_hd128_fp8_causal_group.co"},
    {"gfx942", "odo", "fp16", 64, 64, 0, 0, 0, 0, 0, 3, 0, 128, "_ZN5aiter22fmha_bwd_hd64_odo_fp16E", "bwd_hd64_odo_fp16.co"},
    {"gfx942", "odo", "fp16", 64, 64, 0, 0, 0, 0, 1, 3, 0, 128, "_ZN5aiter28fmha_bwd_hd64_odo_fp16_groupE", "bwd_hd64_odo_fp16_group.co"},
    {"gfx942", "odo", "bf16", 64, 64, 0, 0, 0, 0, 0, 3, 0, 128, "_ZN5aiter22fmha_bwd_hd64_odo_bf16E", "bwd_hd64_odo_bf16.co"},
    {"gfx942", "odo", "bf16", 64, 64, 0, 0, 0, 0, 1, 3, 0, 128, "_ZN5aiter28fmha_bwd_hd64_odo_bf16_groupE", "bwd_hd64_odo_bf16_group.co"},
    {"gfx942", "odo", "fp16", 128, 128, 0, 0, 0, 0, 0, 3, 0, 128, "_ZN5aiter23fmha_bwd_hd128_odo_fp16E", "bwd_hd128_odo_fp16.co"},
    {"gfx942", "odo", "fp16", 128, 128, 0, 0, 0, 0, 1, 3, 0, 128, "_ZN5aiter29fmha_bwd_hd128_odo_fp16_groupE", "bwd_hd128_odo_fp16_group.co"},
    {"gfx942", "odo", "bf16", 128, 128, 0, 0, 0, 0, 0, 3, 0, 128, "_ZN5aiter23fmha_bwd_hd128_odo_bf16E", "bwd_hd128_odo_bf16.co"},
    {"gfx942", "odo", "bf16", 128, 128, 0, 0, 0, 0, 1, 3, 0, 128, "_ZN5aiter29fmha_bwd_hd128_odo_bf16_groupE", "bwd_hd128_odo_bf16_group.co"},
    {"gfx942", "odo", "fp16", 192, 192, 0, 0, 0, 0, 0, 3, 0, 128, "_ZN5aiter23fmha_bwd_hd192_odo_fp16E", "bwd_hd192_odo_fp16.co"},
    {"gfx942", "odo", "fp16", 192, 192, 0, 0, 0, 0, 1, 3, 0, 128, "_ZN5aiter29fmha_bwd_hd192_odo_fp16_groupE", "bwd_hd192_odo_fp16_group.co"},
    {"gfx942", "odo", "bf16", 192, 192, 0, 0, 0, 0, 0, 3, 0, 128, "_ZN5aiter23fmha_bwd_hd192_odo_bf16E", "bwd_hd192_odo_bf16.co"},
    {"gfx942", "odo", "bf16", 192, 192, 0, 0, 0, 0, 1, 3, 0, 128, "_ZN5aiter29fmha_bwd_hd192_odo_bf16_groupE", "bwd_hd192_odo_bf16_group.co"},
    {"gfx942", "dqdkdv", "fp16", 192, 192, 0, 1, 1, 1, 0, 3, 16, 64, "_ZN5aiter31fmha_bwd_hd192_fp16_a32_psskddvE", "bwd_hd192_fp16_a32_psskddv.co"},
    {"gfx942", "dqdkdv", "fp16", 128, 128, 1, 1, 1, 0, 1, 3, 16, 192, "_ZN5aiter41fmha_bwd_hd128_fp16_causal_a32_pssk_groupE", "bwd_hd128_fp16_causal_a32_pssk_group.co"},
    {"gfx942", "dqdkdv", "fp16", 128, 128, 1, 1, 1, 1, 1, 3, 16, 192, "_ZN5aiter44fmha_bwd_hd128_fp16_causal_a32_psskddv_groupE", "bwd_hd128_fp16_causal_a32_psskddv_group.co"},
    {"gfx942", "dqdkdv", "fp16", 128, 128, 0, 0, 0, 0, 0, 3, 16, 192, "_ZN5aiter23fmha_bwd_hd128_fp16_a16E", "bwd_hd128_fp16_a16.co"},
    {"gfx942", "dqdkdv", "fp16", 128, 128, 0, 0, 0, 1, 0, 3, 16, 192, "_ZN5aiter28fmha_bwd_hd128_fp16_a16_pddvE", "bwd_hd128_fp16_a16_pddv.co"},
    {"gfx942", "dqdkdv", "fp16", 128, 128, 1, 0, 0, 0, 0, 3, 16, 192, "_ZN5aiter30fmha_bwd_hd128_fp16_causal_a16E", "bwd_hd128_fp16_causal_a16.co"},
    {"gfx942", "dqdkdv", "fp16", 128, 128, 1, 0, 0, 1, 0, 3, 16, 192, "_ZN5aiter35fmha_bwd_hd128_fp16_causal_a16_pddvE", "bwd_hd128_fp16_causal_a16_pddv.co"},
    {"gfx942", "dqdkdv", "fp16", 128, 128, 0, 1, 0, 0, 0, 3, 16, 192, "_ZN5aiter23fmha_bwd_hd128_fp16_a32E", "bwd_hd128_fp16_a32.co"},
    {"gfx942", "dqdkdv", "fp16", 128, 128, 0, 1, 1, 1, 0, 3, 16, 192, "_ZN5aiter31fmha_bwd_hd128_fp16_a32_psskddvE", "bwd_hd128_fp16_a32_psskddv.co"},
    {"gfx942", "dqdkdv", "fp16", 128, 128, 0, 1, 1, 0, 1, 3, 16, 192, "_ZN5aiter34fmha_bwd_hd128_fp16_a32_pssk_groupE", "bwd_hd128_fp16_a32_pssk_group.co"},
    {"gfx942", "dqdkdv", "fp16", 128, 128, 0, 1, 1, 1, 1, 3, 16, 192, "_ZN5aiter37fmha_bwd_hd128_fp16_a32_psskddv_groupE", "bwd_hd128_fp16_a32_psskddv_group.co"},
    {"gfx942", "dqdkdv", "fp16", 128, 128, 1, 1, 0, 0, 0, 3, 16, 192, "_ZN5aiter30fmha_bwd_hd128_fp16_causal_a32E", "bwd_hd128_fp16_causal_a32.co"},
    {"gfx942", "dqdkdv", "fp16", 128, 128, 1, 1, 1, 1, 0, 3, 16, 192, "_ZN5aiter38fmha_bwd_hd128_fp16_causal_a32_psskddvE", "bwd_hd128_fp16_causal_a32_psskddv.co"},
    {"gfx942", "dqdkdv", "fp16", 128, 128, 3, 1, 1, 1, 0, 3, 16, 192, "_ZN5aiter35fmha_bwd_hd128_fp16_swa_a32_psskddvE", "bwd_hd128_fp16_swa_a32_psskddv.co"},
    {"gfx942", "dqdkdv", "fp16", 192, 192, 1, 1, 1, 1, 0, 3, 16, 64, "_ZN5aiter38fmha_bwd_hd192_fp16_causal_a32_psskddvE", "bwd_hd192_fp16_causal_a32_psskddv.co"},
    {"gfx942", "dqdkdv", "fp16", 64, 64, 0, 0, 0, 0, 0, 3, 32, 192, "_ZN5aiter22fmha_bwd_hd64_fp16_a16E", "bwd_hd64_fp16_a16.co"},
    {"gfx942", "dqdkdv", "fp16", 64, 64, 1, 0, 0, 0, 0, 3, 32, 192, "_ZN5aiter29fmha_bwd_hd64_fp16_causal_a16E", "bwd_hd64_fp16_causal_a16.co"},
    {"gfx942", "dqdkdv", "fp16", 64, 64, 0, 1, 1, 0, 0, 3, 32, 192, "_ZN5aiter27fmha_bwd_hd64_fp16_a32_psskE", "bwd_hd64_fp16_a32_pssk.co"},
    {"gfx942", "dqdkdv", "fp16", 64, 64, 1, 1, 1, 0, 0, 3, 32, 192, "_ZN5aiter34fmha_bwd_hd64_fp16_causal_a32_psskE", "bwd_hd64_fp16_causal_a32_pssk.co"},
    {"gfx942", "dqdkdv", "fp16", 128, 128, 2, 1, 1, 1, 0, 3, 16, 192, "_ZN5aiter41fmha_bwd_hd128_fp16_causal_br_a32_psskddvE", "bwd_hd128_fp16_causal_br_a32_psskddv.co"},
    {"gfx942", "dqdkdv", "fp16", 128, 128, 2, 1, 1, 0, 1, 3, 16, 192, "_ZN5aiter44fmha_bwd_hd128_fp16_causal_br_a32_pssk_groupE", "bwd_hd128_fp16_causal_br_a32_pssk_group.co"},
    {"gfx942", "dqdkdv", "fp16", 128, 128, 2, 1, 1, 1, 1, 3, 16, 192, "_ZN5aiter47fmha_bwd_hd128_fp16_causal_br_a32_psskddv_groupE", "bwd_hd128_fp16_causal_br_a32_psskddv_group.co"},
    {"gfx942", "dqdkdv", "fp16", 192, 192, 0, 1, 1, 1, 1, 3, 16, 64, "_ZN5aiter37fmha_bwd_hd192_fp16_a32_psskddv_groupE", "bwd_hd192_fp16_a32_psskddv_group.co"},
    {"gfx942", "dqdkdv", "fp16", 192, 192, 2, 1, 1, 1, 0, 3, 16, 64, "_ZN5aiter41fmha_bwd_hd192_fp16_causal_br_a32_psskddvE", "bwd_hd192_fp16_causal_br_a32_psskddv.co"},
    {"gfx942", "dqdkdv", "fp16", 192, 192, 2, 1, 1, 1, 1, 3, 16, 64, "_ZN5aiter47fmha_bwd_hd192_fp16_causal_br_a32_psskddv_groupE", "bwd_hd192_fp16_causal_br_a32_psskddv_group.co"},
    {"gfx942", "dqdkdv", "fp16", 192, 192, 1, 1, 1, 1, 1, 3, 16, 64, "_ZN5aiter44fmha_bwd_hd192_fp16_causal_a32_psskddv_groupE", "bwd_hd192_fp16_causal_a32_psskddv_group.co"},
    {"gfx942", "dqdkdv", "fp16", 64, 64, 0, 1, 1, 0, 1, 3, 32, 192, "_ZN5aiter33fmha_bwd_hd64_fp16_a32_pssk_groupE", "bwd_hd64_fp16_a32_pssk_group.co"},
    {"gfx942", "dqdkdv", "fp16", 64, 64, 2, 1, 1, 0, 0, 3, 32, 192, "_ZN5aiter37fmha_bwd_hd64_fp16_causal_br_a32_psskE", "bwd_hd64_fp16_causal_br_a32_pssk.co"},
    {"gfx942", "dqdkdv", "fp16", 64, 64, 2, 1, 1, 0, 1, 3, 32, 192, "_ZN5aiter43fmha_bwd_hd64_fp16_causal_br_a32_pssk_groupE", "bwd_hd64_fp16_causal_br_a32_pssk_group.co"},
    {"gfx942", "dqdkdv", "fp16", 64, 64, 1, 1, 1, 0, 1, 3, 32, 192, "_ZN5aiter40fmha_bwd_hd64_fp16_causal_a32_pssk_groupE", "bwd_hd64_fp16_causal_a32_pssk_group.co"},
    {"gfx942", "dqdkdv", "bf16", 64, 64, 2, 1, 1, 0, 1, 0, 32, 192, "_ZN5aiter48fmha_bwd_hd64_bf16_causal_br_a32_rtne_pssk_groupE", "bwd_hd64_bf16_causal_br_a32_rtne_pssk_group.co"},
    {"gfx942", "dqdkdv", "bf16", 64, 64, 2, 1, 1, 0, 1, 1, 32, 192, "_ZN5aiter48fmha_bwd_hd64_bf16_causal_br_a32_rtna_pssk_groupE", "bwd_hd64_bf16_causal_br_a32_rtna_pssk_group.co"},
    {"gfx942", "dqdkdv", "bf16", 64, 64, 2, 1, 1, 0, 1, 2, 32, 192, "_ZN5aiter47fmha_bwd_hd64_bf16_causal_br_a32_rtz_pssk_groupE", "bwd_hd64_bf16_causal_br_a32_rtz_pssk_group.co"},
    {"gfx942", "dqdkdv", "bf16", 64, 64, 1, 1, 1, 0, 0, 0, 32, 192, "_ZN5aiter39fmha_bwd_hd64_bf16_causal_a32_rtne_psskE", "bwd_hd64_bf16_causal_a32_rtne_pssk.co"},
    {"gfx942", "dqdkdv", "bf16", 64, 64, 1, 1, 1, 0, 0, 1, 32, 192, "_ZN5aiter39fmha_bwd_hd64_bf16_causal_a32_rtna_psskE", "bwd_hd64_bf16_causal_a32_rtna_pssk.co"},
    {"gfx942", "dqdkdv", "bf16", 64, 64, 1, 1, 1, 0, 0, 2, 32, 192, "_ZN5aiter38fmha_bwd_hd64_bf16_causal_a32_rtz_psskE", "bwd_hd64_bf16_causal_a32_rtz_pssk.co"},
    {"gfx942", "dqdkdv", "bf16", 64, 64, 1, 1, 1, 0, 1, 0, 32, 192, "_ZN5aiter45fmha_bwd_hd64_bf16_causal_a32_rtne_pssk_groupE", "bwd_hd64_bf16_causal_a32_rtne_pssk_group.co"},
    {"gfx942", "dqdkdv", "bf16", 64, 64, 1, 1, 1, 0, 1, 1, 32, 192, "_ZN5aiter45fmha_bwd_hd64_bf16_causal_a32_rtna_pssk_groupE", "bwd_hd64_bf16_causal_a32_rtna_pssk_group.co"},
    {"gfx942", "dqdkdv", "bf16", 64, 64, 1, 1, 1, 0, 1, 2, 32, 192, "_ZN5aiter44fmha_bwd_hd64_bf16_causal_a32_rtz_pssk_groupE", "bwd_hd64_bf16_causal_a32_rtz_pssk_group.co"},
    {"gfx942", "dqdkdv", "bf16", 192, 192, 0, 1, 1, 1, 1, 0, 16, 64, "_ZN5aiter42fmha_bwd_hd192_bf16_a32_rtne_psskddv_groupE", "bwd_hd192_bf16_a32_rtne_psskddv_group.co"},
    {"gfx942", "dqdkdv", "bf16", 192, 192, 0, 1, 1, 1, 1, 1, 16, 64, "_ZN5aiter42fmha_bwd_hd192_bf16_a32_rtna_psskddv_groupE", "bwd_hd192_bf16_a32_rtna_psskddv_group.co"},
    {"gfx942", "dqdkdv", "bf16", 192, 192, 0, 1, 1, 1, 1, 2, 16, 64, "_ZN5aiter41fmha_bwd_hd192_bf16_a32_rtz_psskddv_groupE", "bwd_hd192_bf16_a32_rtz_psskddv_group.co"},
    {"gfx942", "dqdkdv", "bf16", 192, 192, 0, 1, 1, 1, 0, 0, 16, 64, "_ZN5aiter36fmha_bwd_hd192_bf16_a32_rtne_psskddvE", "bwd_hd192_bf16_a32_rtne_psskddv.co"},
    {"gfx942", "dqdkdv", "bf16", 192, 192, 0, 1, 1, 1, 0, 1, 16, 64, "_ZN5aiter36fmha_bwd_hd192_bf16_a32_rtna_psskddvE", "bwd_hd192_bf16_a32_rtna_psskddv.co"},
    {"gfx942", "dqdkdv", "bf16", 192, 192, 0, 1, 1, 1, 0, 2, 16, 64, "_ZN5aiter35fmha_bwd_hd192_bf16_a32_rtz_psskddvE", "bwd_hd192_bf16_a32_rtz_psskddv.co"},
    {"gfx942", "dqdkdv", "bf16", 192, 192, 2, 1, 1, 1, 0, 0, 16, 64, "_ZN5aiter46fmha_bwd_hd192_bf16_causal_br_a32_rtne_psskddvE", "bwd_hd192_bf16_causal_br_a32_rtne_psskddv.co"},
    {"gfx942", "dqdkdv", "bf16", 192, 192, 2, 1, 1, 1, 0, 1, 16, 64, "_ZN5aiter46fmha_bwd_hd192_bf16_causal_br_a32_rtna_psskddvE", "bwd_hd192_bf16_causal_br_a32_rtna_psskddv.co"},
    {"gfx942", "dqdkdv", "bf16", 192, 192, 2, 1, 1, 1, 0, 2, 16, 64, "_ZN5aiter45fmha_bwd_hd192_bf16_causal_br_a32_rtz_psskddvE", "bwd_hd192_bf16_causal_br_a32_rtz_psskddv.co"},
    {"gfx942", "dqdkdv", "bf16", 192, 192, 2, 1, 1, 1, 1, 0, 16, 64, "_ZN5aiter52fmha_bwd_hd192_bf16_causal_br_a32_rtne_psskddv_groupE", "bwd_hd192_bf16_causal_br_a32_rtne_psskddv_group.co"},
    {"gfx942", "dqdkdv", "bf16", 192, 192, 2, 1, 1, 1, 1, 1, 16, 64, "_ZN5aiter52fmha_bwd_hd192_bf16_causal_br_a32_rtna_psskddv_groupE", "bwd_hd192_bf16_causal_br_a32_rtna_psskddv_group.co"},
    {"gfx942", "dqdkdv", "bf16", 192, 192, 2, 1, 1, 1, 1, 2, 16, 64, "_ZN5aiter51fmha_bwd_hd192_bf16_causal_br_a32_rtz_psskddv_groupE", "bwd_hd192_bf16_causal_br_a32_rtz_psskddv_group.co"},
    {"gfx942", "dqdkdv", "bf16", 192, 192, 1, 1, 1, 1, 0, 0, 16, 64, "_ZN5aiter43fmha_bwd_hd192_bf16_causal_a32_rtne_psskddvE", "bwd_hd192_bf16_causal_a32_rtne_psskddv.co"},
    {"gfx942", "dqdkdv", "bf16", 192, 192, 1, 1, 1, 1, 0, 1, 16, 64, "_ZN5aiter43fmha_bwd_hd192_bf16_causal_a32_rtna_psskddvE", "bwd_hd192_bf16_causal_a32_rtna_psskddv.co"},
    {"gfx942", "dqdkdv", "bf16", 192, 192, 1, 1, 1, 1, 0, 2, 16, 64, "_ZN5aiter42fmha_bwd_hd192_bf16_causal_a32_rtz_psskddvE", "bwd_hd192_bf16_causal_a32_rtz_psskddv.co"},
    {"gfx942", "dqdkdv", "bf16", 192, 192, 1, 1, 1, 1, 1, 0, 16, 64, "_ZN5aiter49fmha_bwd_hd192_bf16_causal_a32_rtne_psskddv_groupE", "bwd_hd192_bf16_causal_a32_rtne_psskddv_group.co"},
    {"gfx942", "dqdkdv", "bf16", 192, 192, 1, 1, 1, 1, 1, 1, 16, 64, "_ZN5aiter49fmha_bwd_hd192_bf16_causal_a32_rtna_psskddv_groupE", "bwd_hd192_bf16_causal_a32_rtna_psskddv_group.co"},
    {"gfx942", "dqdkdv", "bf16", 192, 192, 1, 1, 1, 1, 1, 2, 16, 64, "_ZN5aiter48fmha_bwd_hd192_bf16_causal_a32_rtz_psskddv_groupE", "bwd_hd192_bf16_causal_a32_rtz_psskddv_group.co"},
    {"gfx942", "dqdkdv", "bf16", 64, 64, 1, 0, 0, 0, 0, 0, 32, 192, "_ZN5aiter34fmha_bwd_hd64_bf16_causal_a16_rtneE", "bwd_hd64_bf16_causal_a16_rtne.co"},
    {"gfx942", "dqdkdv", "bf16", 64, 64, 1, 0, 0, 0, 0, 1, 32, 192, "_ZN5aiter34fmha_bwd_hd64_bf16_causal_a16_rtnaE", "bwd_hd64_bf16_causal_a16_rtna.co"},
    {"gfx942", "dqdkdv", "bf16", 64, 64, 1, 0, 0, 0, 0, 2, 32, 192, "_ZN5aiter33fmha_bwd_hd64_bf16_causal_a16_rtzE", "bwd_hd64_bf16_causal_a16_rtz.co"},
    {"gfx942", "dqdkdv", "bf16", 64, 64, 0, 1, 1, 0, 0, 0, 32, 192, "_ZN5aiter32fmha_bwd_hd64_bf16_a32_rtne_psskE", "bwd_hd64_bf16_a32_rtne_pssk.co"},
    {"gfx942", "dqdkdv", "bf16", 64, 64, 0, 1, 1, 0, 0, 1, 32, 192, "_ZN5aiter32fmha_bwd_hd64_bf16_a32_rtna_psskE", "bwd_hd64_bf16_a32_rtna_pssk.co"},
    {"gfx942", "dqdkdv", "bf16", 64, 64, 0, 1, 1, 0, 0, 2, 32, 192, "_ZN5aiter31fmha_bwd_hd64_bf16_a32_rtz_psskE", "bwd_hd64_bf16_a32_rtz_pssk.co"},
    {"gfx942", "dqdkdv", "bf16", 64, 64, 0, 1, 1, 0, 1, 0, 32, 192, "_ZN5aiter38fmha_bwd_hd64_bf16_a32_rtne_pssk_groupE", "bwd_hd64_bf16_a32_rtne_pssk_group.co"},
    {"gfx942", "dqdkdv", "bf16", 64, 64, 0, 1, 1, 0, 1, 1, 32, 192, "_ZN5aiter38fmha_bwd_hd64_bf16_a32_rtna_pssk_groupE", "bwd_hd64_bf16_a32_rtna_pssk_group.co"},
    {"gfx942", "dqdkdv", "bf16", 64, 64, 0, 1, 1, 0, 1, 2, 32, 192, "_ZN5aiter37fmha_bwd_hd64_bf16_a32_rtz_pssk_groupE", "bwd_hd64_bf16_a32_rtz_pssk_group.co"},
    {"gfx942", "dqdkdv", "bf16", 64, 64, 2, 1, 1, 0, 0, 0, 32, 192, "_ZN5aiter42fmha_bwd_hd64_bf16_causal_br_a32_rtne_psskE", "bwd_hd64_bf16_causal_br_a32_rtne_pssk.co"},
    {"gfx942", "dqdkdv", "bf16", 64, 64, 2, 1, 1, 0, 0, 1, 32, 192, "_ZN5aiter42fmha_bwd_hd64_bf16_causal_br_a32_rtna_psskE", "bwd_hd64_bf16_causal_br_a32_rtna_pssk.co"},
    {"gfx942", "dqdkdv", "bf16", 64, 64, 2, 1, 1, 0, 0, 2, 32, 192, "_ZN5aiter41fmha_bwd_hd64_bf16_causal_br_a32_rtz_psskE", "bwd_hd64_bf16_causal_br_a32_rtz_pssk.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 0, 0, 0, 0, 0, 0, 16, 192, "_ZN5aiter28fmha_bwd_hd128_bf16_a16_rtneE", "bwd_hd128_bf16_a16_rtne.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 0, 0, 0, 0, 0, 1, 16, 192, "_ZN5aiter28fmha_bwd_hd128_bf16_a16_rtnaE", "bwd_hd128_bf16_a16_rtna.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 0, 0, 0, 0, 0, 2, 16, 192, "_ZN5aiter27fmha_bwd_hd128_bf16_a16_rtzE", "bwd_hd128_bf16_a16_rtz.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 0, 0, 0, 1, 0, 0, 16, 192, "_ZN5aiter33fmha_bwd_hd128_bf16_a16_rtne_pddvE", "bwd_hd128_bf16_a16_rtne_pddv.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 0, 0, 0, 1, 0, 1, 16, 192, "_ZN5aiter33fmha_bwd_hd128_bf16_a16_rtna_pddvE", "bwd_hd128_bf16_a16_rtna_pddv.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 0, 0, 0, 1, 0, 2, 16, 192, "_ZN5aiter32fmha_bwd_hd128_bf16_a16_rtz_pddvE", "bwd_hd128_bf16_a16_rtz_pddv.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 1, 0, 0, 0, 0, 0, 16, 192, "_ZN5aiter35fmha_bwd_hd128_bf16_causal_a16_rtneE", "bwd_hd128_bf16_causal_a16_rtne.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 1, 0, 0, 0, 0, 1, 16, 192, "_ZN5aiter35fmha_bwd_hd128_bf16_causal_a16_rtnaE", "bwd_hd128_bf16_causal_a16_rtna.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 1, 0, 0, 0, 0, 2, 16, 192, "_ZN5aiter34fmha_bwd_hd128_bf16_causal_a16_rtzE", "bwd_hd128_bf16_causal_a16_rtz.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 1, 0, 0, 1, 0, 0, 16, 192, "_ZN5aiter40fmha_bwd_hd128_bf16_causal_a16_rtne_pddvE", "bwd_hd128_bf16_causal_a16_rtne_pddv.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 1, 0, 0, 1, 0, 1, 16, 192, "_ZN5aiter40fmha_bwd_hd128_bf16_causal_a16_rtna_pddvE", "bwd_hd128_bf16_causal_a16_rtna_pddv.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 1, 0, 0, 1, 0, 2, 16, 192, "_ZN5aiter39fmha_bwd_hd128_bf16_causal_a16_rtz_pddvE", "bwd_hd128_bf16_causal_a16_rtz_pddv.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 0, 1, 0, 0, 0, 0, 16, 192, "_ZN5aiter28fmha_bwd_hd128_bf16_a32_rtneE", "bwd_hd128_bf16_a32_rtne.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 0, 1, 0, 0, 0, 1, 16, 192, "_ZN5aiter28fmha_bwd_hd128_bf16_a32_rtnaE", "bwd_hd128_bf16_a32_rtna.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 0, 1, 0, 0, 0, 2, 16, 192, "_ZN5aiter27fmha_bwd_hd128_bf16_a32_rtzE", "bwd_hd128_bf16_a32_rtz.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 0, 1, 1, 1, 0, 0, 16, 192, "_ZN5aiter36fmha_bwd_hd128_bf16_a32_rtne_psskddvE", "bwd_hd128_bf16_a32_rtne_psskddv.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 0, 1, 1, 1, 0, 1, 16, 192, "_ZN5aiter36fmha_bwd_hd128_bf16_a32_rtna_psskddvE", "bwd_hd128_bf16_a32_rtna_psskddv.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 0, 1, 1, 1, 0, 2, 16, 192, "_ZN5aiter35fmha_bwd_hd128_bf16_a32_rtz_psskddvE", "bwd_hd128_bf16_a32_rtz_psskddv.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 0, 1, 1, 0, 1, 0, 16, 192, "_ZN5aiter39fmha_bwd_hd128_bf16_a32_rtne_pssk_groupE", "bwd_hd128_bf16_a32_rtne_pssk_group.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 0, 1, 1, 1, 1, 0, 16, 192, "_ZN5aiter42fmha_bwd_hd128_bf16_a32_rtne_psskddv_groupE", "bwd_hd128_bf16_a32_rtne_psskddv_group.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 0, 1, 1, 0, 1, 1, 16, 192, "_ZN5aiter39fmha_bwd_hd128_bf16_a32_rtna_pssk_groupE", "bwd_hd128_bf16_a32_rtna_pssk_group.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 0, 1, 1, 1, 1, 1, 16, 192, "_ZN5aiter42fmha_bwd_hd128_bf16_a32_rtna_psskddv_groupE", "bwd_hd128_bf16_a32_rtna_psskddv_group.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 0, 1, 1, 0, 1, 2, 16, 192, "_ZN5aiter38fmha_bwd_hd128_bf16_a32_rtz_pssk_groupE", "bwd_hd128_bf16_a32_rtz_pssk_group.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 0, 1, 1, 1, 1, 2, 16, 192, "_ZN5aiter41fmha_bwd_hd128_bf16_a32_rtz_psskddv_groupE", "bwd_hd128_bf16_a32_rtz_psskddv_group.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 2, 1, 1, 1, 0, 0, 16, 192, "_ZN5aiter46fmha_bwd_hd128_bf16_causal_br_a32_rtne_psskddvE", "bwd_hd128_bf16_causal_br_a32_rtne_psskddv.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 2, 1, 1, 1, 0, 1, 16, 192, "_ZN5aiter46fmha_bwd_hd128_bf16_causal_br_a32_rtna_psskddvE", "bwd_hd128_bf16_causal_br_a32_rtna_psskddv.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 2, 1, 1, 1, 0, 2, 16, 192, "_ZN5aiter45fmha_bwd_hd128_bf16_causal_br_a32_rtz_psskddvE", "bwd_hd128_bf16_causal_br_a32_rtz_psskddv.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 2, 1, 1, 0, 1, 0, 16, 192, "_ZN5aiter49fmha_bwd_hd128_bf16_causal_br_a32_rtne_pssk_groupE", "bwd_hd128_bf16_causal_br_a32_rtne_pssk_group.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 2, 1, 1, 1, 1, 0, 16, 192, "_ZN5aiter52fmha_bwd_hd128_bf16_causal_br_a32_rtne_psskddv_groupE", "bwd_hd128_bf16_causal_br_a32_rtne_psskddv_group.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 2, 1, 1, 0, 1, 1, 16, 192, "_ZN5aiter49fmha_bwd_hd128_bf16_causal_br_a32_rtna_pssk_groupE", "bwd_hd128_bf16_causal_br_a32_rtna_pssk_group.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 2, 1, 1, 1, 1, 1, 16, 192, "_ZN5aiter52fmha_bwd_hd128_bf16_causal_br_a32_rtna_psskddv_groupE", "bwd_hd128_bf16_causal_br_a32_rtna_psskddv_group.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 2, 1, 1, 0, 1, 2, 16, 192, "_ZN5aiter48fmha_bwd_hd128_bf16_causal_br_a32_rtz_pssk_groupE", "bwd_hd128_bf16_causal_br_a32_rtz_pssk_group.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 2, 1, 1, 1, 1, 2, 16, 192, "_ZN5aiter51fmha_bwd_hd128_bf16_causal_br_a32_rtz_psskddv_groupE", "bwd_hd128_bf16_causal_br_a32_rtz_psskddv_group.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 1, 1, 0, 0, 0, 0, 16, 192, "_ZN5aiter35fmha_bwd_hd128_bf16_causal_a32_rtneE", "bwd_hd128_bf16_causal_a32_rtne.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 1, 1, 0, 0, 0, 1, 16, 192, "_ZN5aiter35fmha_bwd_hd128_bf16_causal_a32_rtnaE", "bwd_hd128_bf16_causal_a32_rtna.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 1, 1, 0, 0, 0, 2, 16, 192, "_ZN5aiter34fmha_bwd_hd128_bf16_causal_a32_rtzE", "bwd_hd128_bf16_causal_a32_rtz.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 1, 1, 1, 1, 0, 0, 16, 192, "_ZN5aiter43fmha_bwd_hd128_bf16_causal_a32_rtne_psskddvE", "bwd_hd128_bf16_causal_a32_rtne_psskddv.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 1, 1, 1, 1, 0, 1, 16, 192, "_ZN5aiter43fmha_bwd_hd128_bf16_causal_a32_rtna_psskddvE", "bwd_hd128_bf16_causal_a32_rtna_psskddv.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 1, 1, 1, 1, 0, 2, 16, 192, "_ZN5aiter42fmha_bwd_hd128_bf16_causal_a32_rtz_psskddvE", "bwd_hd128_bf16_causal_a32_rtz_psskddv.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 1, 1, 1, 0, 1, 0, 16, 192, "_ZN5aiter46fmha_bwd_hd128_bf16_causal_a32_rtne_pssk_groupE", "bwd_hd128_bf16_causal_a32_rtne_pssk_group.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 1, 1, 1, 1, 1, 0, 16, 192, "_ZN5aiter49fmha_bwd_hd128_bf16_causal_a32_rtne_psskddv_groupE", "bwd_hd128_bf16_causal_a32_rtne_psskddv_group.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 1, 1, 1, 0, 1, 1, 16, 192, "_ZN5aiter46fmha_bwd_hd128_bf16_causal_a32_rtna_pssk_groupE", "bwd_hd128_bf16_causal_a32_rtna_pssk_group.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 1, 1, 1, 1, 1, 1, 16, 192, "_ZN5aiter49fmha_bwd_hd128_bf16_causal_a32_rtna_psskddv_groupE", "bwd_hd128_bf16_causal_a32_rtna_psskddv_group.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 1, 1, 1, 0, 1, 2, 16, 192, "_ZN5aiter45fmha_bwd_hd128_bf16_causal_a32_rtz_pssk_groupE", "bwd_hd128_bf16_causal_a32_rtz_pssk_group.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 1, 1, 1, 1, 1, 2, 16, 192, "_ZN5aiter48fmha_bwd_hd128_bf16_causal_a32_rtz_psskddv_groupE", "bwd_hd128_bf16_causal_a32_rtz_psskddv_group.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 3, 1, 1, 1, 0, 0, 16, 192, "_ZN5aiter40fmha_bwd_hd128_bf16_swa_a32_rtne_psskddvE", "bwd_hd128_bf16_swa_a32_rtne_psskddv.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 3, 1, 1, 1, 0, 1, 16, 192, "_ZN5aiter40fmha_bwd_hd128_bf16_swa_a32_rtna_psskddvE", "bwd_hd128_bf16_swa_a32_rtna_psskddv.co"},
    {"gfx942", "dqdkdv", "bf16", 128, 128, 3, 1, 1, 1, 0, 2, 16, 192, "_ZN5aiter39fmha_bwd_hd128_bf16_swa_a32_rtz_psskddvE", "bwd_hd128_bf16_swa_a32_rtz_psskddv.co"},
    {"gfx942", "dqdkdv", "bf16", 64, 64, 0, 0, 0, 0, 0, 0, 32, 192, "_ZN5aiter27fmha_bwd_hd64_bf16_a16_rtneE", "bwd_hd64_bf16_a16_rtne.co"},
    {"gfx942", "dqdkdv", "bf16", 64, 64, 0, 0, 0, 0, 0, 1, 32, 192, "_ZN5aiter27fmha_bwd_hd64_bf16_a16_rtnaE", "bwd_hd64_bf16_a16_rtna.co"},
    {"gfx942", "dqdkdv", "bf16", 64, 64, 0, 0, 0, 0, 0, 2, 32, 192, "_ZN5aiter26fmha_bwd_hd64_bf16_a16_rtzE", "bwd_hd64_bf16_a16_rtz.co"},
    {"gfx942", "dq_convert", "fp16", 64, 64, 0, 0, 0, 0, 0, 3, 0, 64, "_ZN5aiter29fmha_bwd_hd64_dq_convert_fp16E", "bwd_hd64_dq_convert_fp16.co"},
    {"gfx942", "dq_convert", "fp16", 64, 64, 0, 0, 0, 0, 1, 3, 0, 64, "_ZN5aiter35fmha_bwd_hd64_dq_convert_fp16_groupE", "bwd_hd64_dq_convert_fp16_group.co"},
    {"gfx942", "dq_convert", "bf16", 64, 64, 0, 0, 0, 0, 0, 0, 0, 64, "_ZN5aiter34fmha_bwd_hd64_dq_convert_bf16_rtneE", "bwd_hd64_dq_convert_bf16_rtne.co"},
    {"gfx942", "dq_convert", "bf16", 64, 64, 0, 0, 0, 0, 0, 1, 0, 64, "_ZN5aiter34fmha_bwd_hd64_dq_convert_bf16_rtnaE", "bwd_hd64_dq_convert_bf16_rtna.co"},
    {"gfx942", "dq_convert", "bf16", 64, 64, 0, 0, 0, 0, 0, 2, 0, 64, "_ZN5aiter33fmha_bwd_hd64_dq_convert_bf16_rtzE", "bwd_hd64_dq_convert_bf16_rtz.co"},
    {"gfx942", "dq_convert", "bf16", 64, 64, 0, 0, 0, 0, 1, 0, 0, 64, "_ZN5aiter40fmha_bwd_hd64_dq_convert_bf16_rtne_groupE", "bwd_hd64_dq_convert_bf16_rtne_group.co"},
    {"gfx942", "dq_convert", "bf16", 64, 64, 0, 0, 0, 0, 1, 1, 0, 64, "_ZN5aiter40fmha_bwd_hd64_dq_convert_bf16_rtna_groupE", "bwd_hd64_dq_convert_bf16_rtna_group.co"},
    {"gfx942", "dq_convert", "bf16", 64, 64, 0, 0, 0, 0, 1, 2, 0, 64, "_ZN5aiter39fmha_bwd_hd64_dq_convert_bf16_rtz_groupE", "bwd_hd64_dq_convert_bf16_rtz_group.co"},
    {"gfx942", "dq_convert", "fp16", 128, 128, 0, 0, 0, 0, 0, 3, 0, 64, "_ZN5aiter30fmha_bwd_hd128_dq_convert_fp16E", "bwd_hd128_dq_convert_fp16.co"},
    {"gfx942", "dq_convert", "fp16", 128, 128, 0, 0, 0, 0, 1, 3, 0, 64, "_ZN5aiter36fmha_bwd_hd128_dq_convert_fp16_groupE", "bwd_hd128_dq_convert_fp16_group.co"},
    {"gfx942", "dq_convert", "bf16", 128, 128, 0, 0, 0, 0, 0, 0, 0, 64, "_ZN5aiter35fmha_bwd_hd128_dq_convert_bf16_rtneE", "bwd_hd128_dq_convert_bf16_rtne.co"},
    {"gfx942", "dq_convert", "bf16", 128, 128, 0, 0, 0, 0, 0, 1, 0, 64, "_ZN5aiter35fmha_bwd_hd128_dq_convert_bf16_rtnaE", "bwd_hd128_dq_convert_bf16_rtna.co"},
    {"gfx942", "dq_convert", "bf16", 128, 128, 0, 0, 0, 0, 0, 2, 0, 64, "_ZN5aiter34fmha_bwd_hd128_dq_convert_bf16_rtzE", "bwd_hd128_dq_convert_bf16_rtz.co"},
    {"gfx942", "dq_convert", "bf16", 128, 128, 0, 0, 0, 0, 1, 0, 0, 64, "_ZN5aiter41fmha_bwd_hd128_dq_convert_bf16_rtne_groupE", "bwd_hd128_dq_convert_bf16_rtne_group.co"},
    {"gfx942", "dq_convert", "bf16", 128, 128, 0, 0, 0, 0, 1, 1, 0, 64, "_ZN5aiter41fmha_bwd_hd128_dq_convert_bf16_rtna_groupE", "bwd_hd128_dq_convert_bf16_rtna_group.co"},
    {"gfx942", "dq_convert", "bf16", 128, 128, 0, 0, 0, 0, 1, 2, 0, 64, "_ZN5aiter40fmha_bwd_hd128_dq_convert_bf16_rtz_groupE", "bwd_hd128_dq_convert_bf16_rtz_group.co"},
    {"gfx942", "dq_convert", "fp16", 192, 192, 0, 0, 0, 0, 0, 3, 0, 64, "_ZN5aiter30fmha_bwd_hd192_dq_convert_fp16E", "bwd_hd192_dq_convert_fp16.co"},
    {"gfx942", "dq_convert", "fp16", 192, 192, 0, 0, 0, 0, 1, 3, 0, 64, "_ZN5aiter36fmha_bwd_hd192_dq_convert_fp16_groupE", "bwd_hd192_dq_convert_fp16_group.co"},
    {"gfx942", "dq_convert", "bf16", 192, 192, 0, 0, 0, 0, 0, 0, 0, 64, "_ZN5aiter35fmha_bwd_hd192_dq_convert_bf16_rtneE", "bwd_hd192_dq_convert_bf16_rtne.co"},
    {"gfx942", "dq_convert", "bf16", 192, 192, 0, 0, 0, 0, 0, 1, 0, 64, "_ZN5aiter35fmha_bwd_hd192_dq_convert_bf16_rtnaE", "bwd_hd192_dq_convert_bf16_rtna.co"},
    {"gfx942", "dq_convert", "bf16", 192, 192, 0, 0, 0, 0, 0, 2, 0, 64, "_ZN5aiter34fmha_bwd_hd192_dq_convert_bf16_rtzE", "bwd_hd192_dq_convert_bf16_rtz.co"},
    {"gfx942", "dq_convert", "bf16", 192, 192, 0, 0, 0, 0, 1, 0, 0, 64, "_ZN5aiter41fmha_bwd_hd192_dq_convert_bf16_rtne_groupE", "bwd_hd192_dq_convert_bf16_rtne_group.co"},
    {"gfx942", "dq_convert", "bf16", 192, 192, 0, 0, 0, 0, 1, 1, 0, 64, "_ZN5aiter41fmha_bwd_hd192_dq_convert_bf16_rtna_groupE", "bwd_hd192_dq_convert_bf16_rtna_group.co"},
    {"gfx942", "dq_convert", "bf16", 192, 192, 0, 0, 0, 0, 1, 2, 0, 64, "_ZN5aiter40fmha_bwd_hd192_dq_convert_bf16_rtz_groupE", "bwd_hd192_dq_convert_bf16_rtz_group.co"},
    {"gfx950", "fwd", "bf16", 128, 128, 0, 0, 0, 0, 0, 0, 256, 64, "_ZN5aiter19fmha_fwd_hd128_bf16E", "fwd_hd128_bf16.co"},
    {"gfx950", "fwd", "bf16", 128, 128, 2, 0, 0, 0, 0, 0, 256, 64, "_ZN5aiter26fmha_fwd_hd128_bf16_causalE", "fwd_hd128_bf16_causal.co"},
    {"gfx950", "fwd", "bf16", 128, 128, 0, 0, 0, 0, 1, 0, 256, 64, "_ZN5aiter25fmha_fwd_hd128_bf16_groupE", "fwd_hd128_bf16_group.co"},
    {"gfx950", "fwd", "bf16", 128, 128, 2, 0, 0, 0, 1, 0, 256, 64, "_ZN5aiter32fmha_fwd_hd128_bf16_causal_groupE", "fwd_hd128_bf16_causal_group.co"},
    {"gfx950", "fwd", "bf16", 192, 128, 0, 0, 0, 0, 0, 0, 128, 128, "_ZN5aiter25fmha_fwd_hd192_hd128_bf16E", "fwd_hd192_hd128_bf16.co"},
    {"gfx950", "fwd", "bf16", 192, 128, 2, 0, 0, 0, 0, 0, 128, 128, "_ZN5aiter32fmha_fwd_hd192_hd128_bf16_causalE", "fwd_hd192_hd128_bf16_causal.co"},
    {"gfx950", "fwd", "bf16", 192, 128, 0, 0, 0, 0, 1, 0, 128, 128, "_ZN5aiter31fmha_fwd_hd192_hd128_bf16_groupE", "fwd_hd192_hd128_bf16_group.co"},
    {"gfx950", "fwd", "bf16", 192, 128, 2, 0, 0, 0, 1, 0, 128, 128, "_ZN5aiter38fmha_fwd_hd192_hd128_bf16_causal_groupE", "fwd_hd192_hd128_bf16_causal_group.co"},
    {"gfx950", "fwd", "fp8bf16", 128, 128, 0, 0, 0, 0, 0, 0, 256, 128, "_ZN5aiter24fmha_fwd_hd128_fp8_gfx950E", "fwd_hd128_fp8.co"},
    {"gfx950", "fwd", "fp8bf16", 128, 128, 2, 0, 0, 0, 0, 0, 256, 128, "_ZN5aiter31fmha_fwd_hd128_fp8_causal_gfx950E", "fwd_hd128_fp8_causal.co"},
    {"gfx950", "fwd", "fp8bf16", 128, 128, 0, 0, 0, 0, 1, 0, 256, 128, "_ZN5aiter30fmha_fwd_hd128_fp8_group_gfx950E", "fwd_hd128_fp8_group.co"},
    {"gfx950", "fwd", "fp8bf16", 128, 128, 2, 0, 0, 0, 1, 0, 256, 128, "_ZN5aiter37fmha_fwd_hd128_fp8_causal_group_gfx950E", "fwd_hd128_fp8_causal_group.co"},
    {"gfx950", "fwd", "fp8bf16", 256, 256, 0, 0, 0, 0, 0, 0, 256, 64, "_ZN5aiter25fmha_fwd_hd256_fp8_gfx950E", "fwd_hd256_fp8.co"},
    {"gfx950", "fwd", "fp8bf16", 256, 256, 2, 0, 0, 0, 0, 0, 256, 64, "_ZN5aiter32fmha_fwd_hd256_fp8_causal_gfx950E", "fwd_hd256_fp8_causal.co"},
    {"gfx950", "fwd", "fp8bf16", 256, 256, 0, 0, 0, 0, 1, 0, 256, 64, "_ZN5aiter31fmha_fwd_hd256_fp8_group_gfx950E", "fwd_hd256_fp8_group.co"},
    {"gfx950", "fwd", "fp8bf16", 256, 256, 2, 0, 0, 0, 1, 0, 256, 64, "_ZN5aiter38fmha_fwd_hd256_fp8_causal_group_gfx950E", "fwd_hd256_fp8_causal_group.co"},
    {"gfx950", "odo", "fp16", 64, 64, 0, 0, 0, 0, 0, 3, 0, 128, "_ZN5aiter22fmha_bwd_hd64_odo_fp16E", "bwd_hd64_odo_fp16.co"},
    {"gfx950", "odo", "fp16", 64, 64, 0, 0, 0, 0, 1, 3, 0, 128, "_ZN5aiter28fmha_bwd_hd64_odo_fp16_groupE", "bwd_hd64_odo_fp16_group.co"},
    {"gfx950", "odo", "bf16", 64, 64, 0, 0, 0, 0, 0, 3, 0, 128, "_ZN5aiter22fmha_bwd_hd64_odo_bf16E", "bwd_hd64_odo_bf16.co"},
    {"gfx950", "odo", "bf16", 64, 64, 0, 0, 0, 0, 1, 3, 0, 128, "_ZN5aiter28fmha_bwd_hd64_odo_bf16_groupE", "bwd_hd64_odo_bf16_group.co"},
    {"gfx950", "odo", "fp16", 128, 128, 0, 0, 0, 0, 0, 3, 0, 128, "_ZN5aiter23fmha_bwd_hd128_odo_fp16E", "bwd_hd128_odo_fp16.co"},
    {"gfx950", "odo", "fp16", 128, 128, 0, 0, 0, 0, 1, 3, 0, 128, "_ZN5aiter29fmha_bwd_hd128_odo_fp16_groupE", "bwd_hd128_odo_fp16_group.co"},
    {"gfx950", "odo", "bf16", 128, 128, 0, 0, 0, 0, 0, 3, 0, 128, "_ZN5aiter23fmha_bwd_hd128_odo_bf16E", "bwd_hd128_odo_bf16.co"},
    {"gfx950", "odo", "bf16", 128, 128, 0, 0, 0, 0, 1, 3, 0, 128, "_ZN5aiter29fmha_bwd_hd128_odo_bf16_groupE", "bwd_hd128_odo_bf16_group.co"},
    {"gfx950", "odo", "fp16", 192, 192, 0, 0, 0, 0, 0, 3, 0, 128, "_ZN5aiter23fmha_bwd_hd192_odo_fp16E", "bwd_hd192_odo_fp16.co"},
    {"gfx950", "odo", "fp16", 192, 192, 0, 0, 0, 0, 1, 3, 0, 128, "_ZN5aiter29fmha_bwd_hd192_odo_fp16_groupE", "bwd_hd192_odo_fp16_group.co"},
    {"gfx950", "odo", "bf16", 192, 192, 0, 0, 0, 0, 0, 3, 0, 128, "_ZN5aiter23fmha_bwd_hd192_odo_bf16E", "bwd_hd192_odo_bf16.co"},
    {"gfx950", "odo", "bf16", 192, 192, 0, 0, 0, 0, 1, 3, 0, 128, "_ZN5aiter29fmha_bwd_hd192_odo_bf16_groupE", "bwd_hd192_odo_bf16_group.co"},
    {"gfx950", "dqdkdv", "fp16", 128, 128, 0, 0, 1, 1, 0, 3, 16, 256, "_ZN5aiter31fmha_bwd_hd128_fp16_a16_psskddvE", "bwd_hd128_fp16_a16_psskddv.co"},
    {"gfx950", "dqdkdv", "fp16", 128, 128, 0, 0, 1, 1, 1, 3, 16, 256, "_ZN5aiter37fmha_bwd_hd128_fp16_a16_psskddv_groupE", "bwd_hd128_fp16_a16_psskddv_group.co"},
    {"gfx950", "dqdkdv", "bf16", 128, 128, 0, 0, 1, 1, 0, 3, 16, 256, "_ZN5aiter31fmha_bwd_hd128_bf16_a16_psskddvE", "bwd_hd128_bf16_a16_psskddv.co"},
    {"gfx950", "dqdkdv", "bf16", 128, 128, 0, 0, 1, 1, 1, 3, 16, 256, "_ZN5aiter37fmha_bwd_hd128_bf16_a16_psskddv_groupE", "bwd_hd128_bf16_a16_psskddv_group.co"},
    {"gfx950", "dqdkdv", "fp16", 192, 128, 0, 0, 1, 1, 0, 3, 16, 192, "_ZN5aiter32fmha_bwd_hd192_128_fp16_a16_psskE", "bwd_hd192_128_fp16_a16_pssk.co"},
    {"gfx950", "dqdkdv", "bf16", 192, 128, 0, 0, 1, 1, 0, 3, 16, 192, "_ZN5aiter32fmha_bwd_hd192_128_bf16_a16_psskE", "bwd_hd192_128_bf16_a16_pssk.co"},
    {"gfx950", "dqdkdv", "fp16", 192, 128, 1, 1, 1, 1, 0, 3, 16, 192, "_ZN5aiter39fmha_bwd_hd192_128_fp16_causal_a32_psskE", "bwd_hd192_128_fp16_causal_a32_pssk.co"},
    {"gfx950", "dqdkdv", "bf16", 192, 128, 1, 1, 1, 1, 0, 3, 16, 192, "_ZN5aiter39fmha_bwd_hd192_128_bf16_causal_a32_psskE", "bwd_hd192_128_bf16_causal_a32_pssk.co"},
    {"gfx950", "dqdkdv", "bf16", 192, 128, 2, 1, 1, 1, 0, 3, 16, 192, "_ZN5aiter42fmha_bwd_hd192_128_bf16_causal_br_a32_psskE", "bwd_hd192_128_bf16_causal_br_a32_pssk.co"},
    {"gfx950", "dqdkdv", "fp16", 192, 128, 2, 1, 1, 1, 0, 3, 16, 192, "_ZN5aiter42fmha_bwd_hd192_128_fp16_causal_br_a32_psskE", "bwd_hd192_128_fp16_causal_br_a32_pssk.co"},
    {"gfx950", "dqdkdv", "fp16", 128, 128, 1, 1, 1, 1, 0, 3, 16, 256, "_ZN5aiter38fmha_bwd_hd128_fp16_causal_a32_psskddvE", "bwd_hd128_fp16_causal_a32_psskddv.co"},
    {"gfx950", "dqdkdv", "fp16", 128, 128, 1, 1, 1, 1, 1, 3, 16, 256, "_ZN5aiter44fmha_bwd_hd128_fp16_causal_a32_psskddv_groupE", "bwd_hd128_fp16_causal_a32_psskddv_group.co"},
    {"gfx950", "dqdkdv", "bf16", 128, 128, 1, 1, 1, 1, 0, 3, 16, 256, "_ZN5aiter38fmha_bwd_hd128_bf16_causal_a32_psskddvE", "bwd_hd128_bf16_causal_a32_psskddv.co"},
    {"gfx950", "dqdkdv", "bf16", 128, 128, 1, 1, 1, 1, 1, 3, 16, 256, "_ZN5aiter44fmha_bwd_hd128_bf16_causal_a32_psskddv_groupE", "bwd_hd128_bf16_causal_a32_psskddv_group.co"},
    {"gfx950", "dqdkdv", "fp16", 128, 128, 0, 1, 1, 1, 0, 3, 16, 256, "_ZN5aiter31fmha_bwd_hd128_fp16_a32_psskddvE", "bwd_hd128_fp16_a32_psskddv.co"},
    {"gfx950", "dqdkdv", "fp16", 128, 128, 0, 1, 1, 1, 1, 3, 16, 256, "_ZN5aiter37fmha_bwd_hd128_fp16_a32_psskddv_groupE", "bwd_hd128_fp16_a32_psskddv_group.co"},
    {"gfx950", "dqdkdv", "bf16", 128, 128, 0, 1, 1, 1, 0, 3, 16, 256, "_ZN5aiter31fmha_bwd_hd128_bf16_a32_psskddvE", "bwd_hd128_bf16_a32_psskddv.co"},
    {"gfx950", "dqdkdv", "bf16", 128, 128, 0, 1, 1, 1, 1, 3, 16, 256, "_ZN5aiter37fmha_bwd_hd128_bf16_a32_psskddv_groupE", "bwd_hd128_bf16_a32_psskddv_group.co"},
    {"gfx950", "dqdkdv", "fp16", 192, 128, 0, 1, 1, 1, 0, 3, 16, 192, "_ZN5aiter32fmha_bwd_hd192_128_fp16_a32_psskE", "bwd_hd192_128_fp16_a32_pssk.co"},
    {"gfx950", "dqdkdv", "bf16", 192, 128, 0, 1, 1, 1, 0, 3, 16, 192, "_ZN5aiter32fmha_bwd_hd192_128_bf16_a32_psskE", "bwd_hd192_128_bf16_a32_pssk.co"},
    {"gfx950", "dqdkdv", "fp16", 128, 128, 2, 0, 1, 1, 0, 3, 16, 256, "_ZN5aiter41fmha_bwd_hd128_fp16_causal_br_a16_psskddvE", "bwd_hd128_fp16_causal_br_a16_psskddv.co"},
    {"gfx950", "dqdkdv", "fp16", 128, 128, 2, 0, 1, 1, 1, 3, 16, 256, "_ZN5aiter47fmha_bwd_hd128_fp16_causal_br_a16_psskddv_groupE", "bwd_hd128_fp16_causal_br_a16_psskddv_group.co"},
    {"gfx950", "dqdkdv", "bf16", 128, 128, 2, 0, 1, 1, 0, 3, 16, 256, "_ZN5aiter41fmha_bwd_hd128_bf16_causal_br_a16_psskddvE", "bwd_hd128_bf16_causal_br_a16_psskddv.co"},
    {"gfx950", "dqdkdv", "bf16", 128, 128, 2, 0, 1, 1, 1, 3, 16, 256, "_ZN5aiter47fmha_bwd_hd128_bf16_causal_br_a16_psskddv_groupE", "bwd_hd128_bf16_causal_br_a16_psskddv_group.co"},
    {"gfx950", "dqdkdv", "fp16", 128, 128, 2, 1, 1, 1, 0, 3, 16, 256, "_ZN5aiter41fmha_bwd_hd128_fp16_causal_br_a32_psskddvE", "bwd_hd128_fp16_causal_br_a32_psskddv.co"},
    {"gfx950", "dqdkdv", "fp16", 128, 128, 2, 1, 1, 1, 1, 3, 16, 256, "_ZN5aiter47fmha_bwd_hd128_fp16_causal_br_a32_psskddv_groupE", "bwd_hd128_fp16_causal_br_a32_psskddv_group.co"},
    {"gfx950", "dqdkdv", "bf16", 128, 128, 2, 1, 1, 1, 0, 3, 16, 256, "_ZN5aiter41fmha_bwd_hd128_bf16_causal_br_a32_psskddvE", "bwd_hd128_bf16_causal_br_a32_psskddv.co"},
    {"gfx950", "dqdkdv", "bf16", 128, 128, 2, 1, 1, 1, 1, 3, 16, 256, "_ZN5aiter47fmha_bwd_hd128_bf16_causal_br_a32_psskddv_groupE", "bwd_hd128_bf16_causal_br_a32_psskddv_group.co"},
    {"gfx950", "dqdkdv", "fp16", 192, 128, 1, 0, 1, 1, 0, 3, 16, 192, "_ZN5aiter39fmha_bwd_hd192_128_fp16_causal_a16_psskE", "bwd_hd192_128_fp16_causal_a16_pssk.co"},
    {"gfx950", "dqdkdv", "bf16", 192, 128, 1, 0, 1, 1, 0, 3, 16, 192, "_ZN5aiter39fmha_bwd_hd192_128_bf16_causal_a16_psskE", "bwd_hd192_128_bf16_causal_a16_pssk.co"},
    {"gfx950", "dqdkdv", "fp16", 192, 128, 2, 0, 1, 1, 0, 3, 16, 192, "_ZN5aiter42fmha_bwd_hd192_128_fp16_causal_br_a16_psskE", "bwd_hd192_128_fp16_causal_br_a16_pssk.co"},
    {"gfx950", "dqdkdv", "bf16", 192, 128, 2, 0, 1, 1, 0, 3, 16, 192, "_ZN5aiter42fmha_bwd_hd192_128_bf16_causal_br_a16_psskE", "bwd_hd192_128_bf16_causal_br_a16_pssk.co"},
    {"gfx950", "dqdkdv", "fp16", 128, 128, 1, 0, 1, 1, 0, 3, 16, 256, "_ZN5aiter38fmha_bwd_hd128_fp16_causal_a16_psskddvE", "bwd_hd128_fp16_causal_a16_psskddv.co"},
    {"gfx950", "dqdkdv", "fp16", 128, 128, 1, 0, 1, 1, 1, 3, 16, 256, "_ZN5aiter44fmha_bwd_hd128_fp16_causal_a16_psskddv_groupE", "bwd_hd128_fp16_causal_a16_psskddv_group.co"},
    {"gfx950", "dqdkdv", "bf16", 128, 128, 1, 0, 1, 1, 0, 3, 16, 256, "_ZN5aiter38fmha_bwd_hd128_bf16_causal_a16_psskddvE", "bwd_hd128_bf16_causal_a16_psskddv.co"},
    {"gfx950", "dqdkdv", "bf16", 128, 128, 1, 0, 1, 1, 1, 3, 16, 256, "_ZN5aiter44fmha_bwd_hd128_bf16_causal_a16_psskddv_groupE", "bwd_hd128_bf16_causal_a16_psskddv_group.co"},
    {"gfx950", "dqdkdv", "fp16", 192, 192, 0, 1, 1, 1, 0, 3, 16, 64, "_ZN5aiter41fmha_bwd_hd192_fp16_a32_psskddv_recompileE", "bwd_hd192_fp16_a32_psskddv.co"},
    {"gfx950", "dqdkdv", "fp16", 192, 192, 1, 1, 1, 1, 0, 3, 16, 64, "_ZN5aiter48fmha_bwd_hd192_fp16_causal_a32_psskddv_recompileE", "bwd_hd192_fp16_causal_a32_psskddv.co"},
    {"gfx950", "dqdkdv", "fp16", 64, 64, 0, 0, 0, 0, 0, 3, 32, 192, "_ZN5aiter32fmha_bwd_hd64_fp16_a16_recompileE", "bwd_hd64_fp16_a16.co"},
    {"gfx950", "dqdkdv", "fp16", 64, 64, 1, 0, 0, 0, 0, 3, 32, 192, "_ZN5aiter39fmha_bwd_hd64_fp16_causal_a16_recompileE", "bwd_hd64_fp16_causal_a16.co"},
    {"gfx950", "dqdkdv", "fp16", 64, 64, 0, 1, 1, 0, 0, 3, 32, 192, "_ZN5aiter37fmha_bwd_hd64_fp16_a32_pssk_recompileE", "bwd_hd64_fp16_a32_pssk.co"},
    {"gfx950", "dqdkdv", "fp16", 64, 64, 1, 1, 1, 0, 0, 3, 32, 192, "_ZN5aiter44fmha_bwd_hd64_fp16_causal_a32_pssk_recompileE", "bwd_hd64_fp16_causal_a32_pssk.co"},
    {"gfx950", "dqdkdv", "fp16", 192, 192, 0, 1, 1, 1, 1, 3, 16, 64, "_ZN5aiter47fmha_bwd_hd192_fp16_a32_psskddv_group_recompileE", "bwd_hd192_fp16_a32_psskddv_group.co"},
    {"gfx950", "dqdkdv", "fp16", 192, 192, 2, 1, 1, 1, 0, 3, 16, 64, "_ZN5aiter51fmha_bwd_hd192_fp16_causal_br_a32_psskddv_recompileE", "bwd_hd192_fp16_causal_br_a32_psskddv.co"},
    {"gfx950", "dqdkdv", "fp16", 192, 192, 2, 1, 1, 1, 1, 3, 16, 64, "_ZN5aiter57fmha_bwd_hd192_fp16_causal_br_a32_psskddv_group_recompileE", "bwd_hd192_fp16_causal_br_a32_psskddv_group.co"},
    {"gfx950", "dqdkdv", "fp16", 192, 192, 1, 1, 1, 1, 1, 3, 16, 64, "_ZN5aiter54fmha_bwd_hd192_fp16_causal_a32_psskddv_group_recompileE", "bwd_hd192_fp16_causal_a32_psskddv_group.co"},
    {"gfx950", "dqdkdv", "fp16", 64, 64, 0, 1, 1, 0, 1, 3, 32, 192, "_ZN5aiter43fmha_bwd_hd64_fp16_a32_pssk_group_recompileE", "bwd_hd64_fp16_a32_pssk_group.co"},
    {"gfx950", "dqdkdv", "fp16", 64, 64, 2, 1, 1, 0, 0, 3, 32, 192, "_ZN5aiter47fmha_bwd_hd64_fp16_causal_br_a32_pssk_recompileE", "bwd_hd64_fp16_causal_br_a32_pssk.co"},
    {"gfx950", "dqdkdv", "fp16", 64, 64, 2, 1, 1, 0, 1, 3, 32, 192, "_ZN5aiter53fmha_bwd_hd64_fp16_causal_br_a32_pssk_group_recompileE", "bwd_hd64_fp16_causal_br_a32_pssk_group.co"},
    {"gfx950", "dqdkdv", "fp16", 64, 64, 1, 1, 1, 0, 1, 3, 32, 192, "_ZN5aiter50fmha_bwd_hd64_fp16_causal_a32_pssk_group_recompileE", "bwd_hd64_fp16_causal_a32_pssk_group.co"},
    {"gfx950", "dqdkdv", "bf16", 64, 64, 2, 1, 1, 0, 1, 0, 32, 192, "_ZN5aiter58fmha_bwd_hd64_bf16_causal_br_a32_rtne_pssk_group_recompileE", "bwd_hd64_bf16_causal_br_a32_rtne_pssk_group.co"},
    {"gfx950", "dqdkdv", "bf16", 64, 64, 2, 1, 1, 0, 1, 1, 32, 192, "_ZN5aiter58fmha_bwd_hd64_bf16_causal_br_a32_rtna_pssk_group_recompileE", "bwd_hd64_bf16_causal_br_a32_rtna_pssk_group.co"},
    {"gfx950", "dqdkdv", "bf16", 64, 64, 2, 1, 1, 0, 1, 2, 32, 192, "_ZN5aiter57fmha_bwd_hd64_bf16_causal_br_a32_rtz_pssk_group_recompileE", "bwd_hd64_bf16_causal_br_a32_rtz_pssk_group.co"},
    {"gfx950", "dqdkdv", "bf16", 64, 64, 1, 1, 1, 0, 0, 0, 32, 192, "_ZN5aiter49fmha_bwd_hd64_bf16_causal_a32_rtne_pssk_recompileE", "bwd_hd64_bf16_causal_a32_rtne_pssk.co"},
    {"gfx950", "dqdkdv", "bf16", 64, 64, 1, 1, 1, 0, 0, 1, 32, 192, "_ZN5aiter49fmha_bwd_hd64_bf16_causal_a32_rtna_pssk_recompileE", "bwd_hd64_bf16_causal_a32_rtna_pssk.co"},
    {"gfx950", "dqdkdv", "bf16", 64, 64, 1, 1, 1, 0, 0, 2, 32, 192, "_ZN5aiter48fmha_bwd_hd64_bf16_causal_a32_rtz_pssk_recompileE", "bwd_hd64_bf16_causal_a32_rtz_pssk.co"},
    {"gfx950", "dqdkdv", "bf16", 64, 64, 1, 1, 1, 0, 1, 0, 32, 192, "_ZN5aiter55fmha_bwd_hd64_bf16_causal_a32_rtne_pssk_group_recompileE", "bwd_hd64_bf16_causal_a32_rtne_pssk_group.co"},
    {"gfx950", "dqdkdv", "bf16", 64, 64, 1, 1, 1, 0, 1, 1, 32, 192, "_ZN5aiter55fmha_bwd_hd64_bf16_causal_a32_rtna_pssk_group_recompileE", "bwd_hd64_bf16_causal_a32_rtna_pssk_group.co"},
    {"gfx950", "dqdkdv", "bf16", 64, 64, 1, 1, 1, 0, 1, 2, 32, 192, "_ZN5aiter54fmha_bwd_hd64_bf16_causal_a32_rtz_pssk_group_recompileE", "bwd_hd64_bf16_causal_a32_rtz_pssk_group.co"},
    {"gfx950", "dqdkdv", "bf16", 192, 192, 0, 1, 1, 1, 1, 0, 16, 64, "_ZN5aiter52fmha_bwd_hd192_bf16_a32_rtne_psskddv_group_recompileE", "bwd_hd192_bf16_a32_rtne_psskddv_group.co"},
    {"gfx950", "dqdkdv", "bf16", 192, 192, 0, 1, 1, 1, 1, 1, 16, 64, "_ZN5aiter52fmha_bwd_hd192_bf16_a32_rtna_psskddv_group_recompileE", "bwd_hd192_bf16_a32_rtna_psskddv_group.co"},
    {"gfx950", "dqdkdv", "bf16", 192, 192, 0, 1, 1, 1, 1, 2, 16, 64, "_ZN5aiter51fmha_bwd_hd192_bf16_a32_rtz_psskddv_group_recompileE", "bwd_hd192_bf16_a32_rtz_psskddv_group.co"},
    {"gfx950", "dqdkdv", "bf16", 192, 192, 0, 1, 1, 1, 0, 0, 16, 64, "_ZN5aiter46fmha_bwd_hd192_bf16_a32_rtne_psskddv_recompileE", "bwd_hd192_bf16_a32_rtne_psskddv.co"},
    {"gfx950", "dqdkdv", "bf16", 192, 192, 0, 1, 1, 1, 0, 1, 16, 64, "_ZN5aiter46fmha_bwd_hd192_bf16_a32_rtna_psskddv_recompileE", "bwd_hd192_bf16_a32_rtna_psskddv.co"},
    {"gfx950", "dqdkdv", "bf16", 192, 192, 0, 1, 1, 1, 0, 2, 16, 64, "_ZN5aiter45fmha_bwd_hd192_bf16_a32_rtz_psskddv_recompileE", "bwd_hd192_bf16_a32_rtz_psskddv.co"},
    {"gfx950", "dqdkdv", "bf16", 192, 192, 2, 1, 1, 1, 0, 0, 16, 64, "_ZN5aiter56fmha_bwd_hd192_bf16_causal_br_a32_rtne_psskddv_recompileE", "bwd_hd192_bf16_causal_br_a32_rtne_psskddv.co"},
    {"gfx950", "dqdkdv", "bf16", 192, 192, 2, 1, 1, 1, 0, 1, 16, 64, "_ZN5aiter56fmha_bwd_hd192_bf16_causal_br_a32_rtna_psskddv_recompileE", "bwd_hd192_bf16_causal_br_a32_rtna_psskddv.co"},
    {"gfx950", "dqdkdv", "bf16", 192, 192, 2, 1, 1, 1, 0, 2, 16, 64, "_ZN5aiter55fmha_bwd_hd192_bf16_causal_br_a32_rtz_psskddv_recompileE", "bwd_hd192_bf16_causal_br_a32_rtz_psskddv.co"},
    {"gfx950", "dqdkdv", "bf16", 192, 192, 2, 1, 1, 1, 1, 0, 16, 64, "_ZN5aiter62fmha_bwd_hd192_bf16_causal_br_a32_rtne_psskddv_group_recompileE", "bwd_hd192_bf16_causal_br_a32_rtne_psskddv_group.co"},
    {"gfx950", "dqdkdv", "bf16", 192, 192, 2, 1, 1, 1, 1, 1, 16, 64, "_ZN5aiter62fmha_bwd_hd192_bf16_causal_br_a32_rtna_psskddv_group_recompileE", "bwd_hd192_bf16_causal_br_a32_rtna_psskddv_group.co"},
    {"gfx950", "dqdkdv", "bf16", 192, 192, 2, 1, 1, 1, 1, 2, 16, 64, "_ZN5aiter61fmha_bwd_hd192_bf16_causal_br_a32_rtz_psskddv_group_recompileE", "bwd_hd192_bf16_causal_br_a32_rtz_psskddv_group.co"},
    {"gfx950", "dqdkdv", "bf16", 192, 192, 1, 1, 1, 1, 0, 0, 16, 64, "_ZN5aiter53fmha_bwd_hd192_bf16_causal_a32_rtne_psskddv_recompileE", "bwd_hd192_bf16_causal_a32_rtne_psskddv.co"},
    {"gfx950", "dqdkdv", "bf16", 192, 192, 1, 1, 1, 1, 0, 1, 16, 64, "_ZN5aiter53fmha_bwd_hd192_bf16_causal_a32_rtna_psskddv_recompileE", "bwd_hd192_bf16_causal_a32_rtna_psskddv.co"},
    {"gfx950", "dqdkdv", "bf16", 192, 192, 1, 1, 1, 1, 0, 2, 16, 64, "_ZN5aiter52fmha_bwd_hd192_bf16_causal_a32_rtz_psskddv_recompileE", "bwd_hd192_bf16_causal_a32_rtz_psskddv.co"},
    {"gfx950", "dqdkdv", "bf16", 192, 192, 1, 1, 1, 1, 1, 0, 16, 64, "_ZN5aiter59fmha_bwd_hd192_bf16_causal_a32_rtne_psskddv_group_recompileE", "bwd_hd192_bf16_causal_a32_rtne_psskddv_group.co"},
    {"gfx950", "dqdkdv", "bf16", 192, 192, 1, 1, 1, 1, 1, 1, 16, 64, "_ZN5aiter59fmha_bwd_hd192_bf16_causal_a32_rtna_psskddv_group_recompileE", "bwd_hd192_bf16_causal_a32_rtna_psskddv_group.co"},
    {"gfx950", "dqdkdv", "bf16", 192, 192, 1, 1, 1, 1, 1, 2, 16, 64, "_ZN5aiter58fmha_bwd_hd192_bf16_causal_a32_rtz_psskddv_group_recompileE", "bwd_hd192_bf16_causal_a32_rtz_psskddv_group.co"},
    {"gfx950", "dqdkdv", "bf16", 64, 64, 1, 0, 0, 0, 0, 0, 32, 192, "_ZN5aiter44fmha_bwd_hd64_bf16_causal_a16_rtne_recompileE", "bwd_hd64_bf16_causal_a16_rtne.co"},
    {"gfx950", "dqdkdv", "bf16", 64, 64, 1, 0, 0, 0, 0, 1, 32, 192, "_ZN5aiter44fmha_bwd_hd64_bf16_causal_a16_rtna_recompileE", "bwd_hd64_bf16_causal_a16_rtna.co"},
    {"gfx950", "dqdkdv", "bf16", 64, 64, 1, 0, 0, 0, 0, 2, 32, 192, "_ZN5aiter43fmha_bwd_hd64_bf16_causal_a16_rtz_recompileE", "bwd_hd64_bf16_causal_a16_rtz.co"},
    {"gfx950", "dqdkdv", "bf16", 64, 64, 0, 1, 1, 0, 0, 0, 32, 192, "_ZN5aiter42fmha_bwd_hd64_bf16_a32_rtne_pssk_recompileE", "bwd_hd64_bf16_a32_rtne_pssk.co"},
    {"gfx950", "dqdkdv", "bf16", 64, 64, 0, 1, 1, 0, 0, 1, 32, 192, "_ZN5aiter42fmha_bwd_hd64_bf16_a32_rtna_pssk_recompileE", "bwd_hd64_bf16_a32_rtna_pssk.co"},
    {"gfx950", "dqdkdv", "bf16", 64, 64, 0, 1, 1, 0, 0, 2, 32, 192, "_ZN5aiter41fmha_bwd_hd64_bf16_a32_rtz_pssk_recompileE", "bwd_hd64_bf16_a32_rtz_pssk.co"},
    {"gfx950", "dqdkdv", "bf16", 64, 64, 0, 1, 1, 0, 1, 0, 32, 192, "_ZN5aiter48fmha_bwd_hd64_bf16_a32_rtne_pssk_group_recompileE", "bwd_hd64_bf16_a32_rtne_pssk_group.co"},
    {"gfx950", "dqdkdv", "bf16", 64, 64, 0, 1, 1, 0, 1, 1, 32, 192, "_ZN5aiter48fmha_bwd_hd64_bf16_a32_rtna_pssk_group_recompileE", "bwd_hd64_bf16_a32_rtna_pssk_group.co"},
    {"gfx950", "dqdkdv", "bf16", 64, 64, 0, 1, 1, 0, 1, 2, 32, 192, "_ZN5aiter47fmha_bwd_hd64_bf16_a32_rtz_pssk_group_recompileE", "bwd_hd64_bf16_a32_rtz_pssk_group.co"},
    {"gfx950", "dqdkdv", "bf16", 64, 64, 2, 1, 1, 0, 0, 0, 32, 192, "_ZN5aiter52fmha_bwd_hd64_bf16_causal_br_a32_rtne_pssk_recompileE", "bwd_hd64_bf16_causal_br_a32_rtne_pssk.co"},
    {"gfx950", "dqdkdv", "bf16", 64, 64, 2, 1, 1, 0, 0, 1, 32, 192, "_ZN5aiter52fmha_bwd_hd64_bf16_causal_br_a32_rtna_pssk_recompileE", "bwd_hd64_bf16_causal_br_a32_rtna_pssk.co"},
    {"gfx950", "dqdkdv", "bf16", 64, 64, 2, 1, 1, 0, 0, 2, 32, 192, "_ZN5aiter51fmha_bwd_hd64_bf16_causal_br_a32_rtz_pssk_recompileE", "bwd_hd64_bf16_causal_br_a32_rtz_pssk.co"},
    {"gfx950", "dqdkdv", "bf16", 64, 64, 0, 0, 0, 0, 0, 0, 32, 192, "_ZN5aiter37fmha_bwd_hd64_bf16_a16_rtne_recompileE", "bwd_hd64_bf16_a16_rtne.co"},
    {"gfx950", "dqdkdv", "bf16", 64, 64, 0, 0, 0, 0, 0, 1, 32, 192, "_ZN5aiter37fmha_bwd_hd64_bf16_a16_rtna_recompileE", "bwd_hd64_bf16_a16_rtna.co"},
    {"gfx950", "dqdkdv", "bf16", 64, 64, 0, 0, 0, 0, 0, 2, 32, 192, "_ZN5aiter36fmha_bwd_hd64_bf16_a16_rtz_recompileE", "bwd_hd64_bf16_a16_rtz.co"},
    {"gfx950", "dq_convert", "fp16", 64, 64, 0, 0, 0, 0, 0, 3, 0, 64, "_ZN5aiter29fmha_bwd_hd64_dq_convert_fp16E", "bwd_hd64_dq_convert_fp16.co"},
    {"gfx950", "dq_convert", "fp16", 64, 64, 0, 0, 0, 0, 1, 3, 0, 64, "_ZN5aiter35fmha_bwd_hd64_dq_convert_fp16_groupE", "bwd_hd64_dq_convert_fp16_group.co"},
    {"gfx950", "dq_convert", "bf16", 64, 64, 0, 0, 0, 0, 0, 3, 0, 64, "_ZN5aiter29fmha_bwd_hd64_dq_convert_bf16E", "bwd_hd64_dq_convert_bf16.co"},
    {"gfx950", "dq_convert", "bf16", 64, 64, 0, 0, 0, 0, 1, 3, 0, 64, "_ZN5aiter35fmha_bwd_hd64_dq_convert_bf16_groupE", "bwd_hd64_dq_convert_bf16_group.co"},
    {"gfx950", "dq_convert", "fp16", 128, 128, 0, 0, 0, 0, 0, 3, 0, 64, "_ZN5aiter30fmha_bwd_hd128_dq_convert_fp16E", "bwd_hd128_dq_convert_fp16.co"},
    {"gfx950", "dq_convert", "fp16", 128, 128, 0, 0, 0, 0, 1, 3, 0, 64, "_ZN5aiter36fmha_bwd_hd128_dq_convert_fp16_groupE", "bwd_hd128_dq_convert_fp16_group.co"},
    {"gfx950", "dq_convert", "bf16", 128, 128, 0, 0, 0, 0, 0, 3, 0, 64, "_ZN5aiter30fmha_bwd_hd128_dq_convert_bf16E", "bwd_hd128_dq_convert_bf16.co"},
    {"gfx950", "dq_convert", "bf16", 128, 128, 0, 0, 0, 0, 1, 3, 0, 64, "_ZN5aiter36fmha_bwd_hd128_dq_convert_bf16_groupE", "bwd_hd128_dq_convert_bf16_group.co"},
    {"gfx950", "dq_convert", "fp16", 192, 192, 0, 0, 0, 0, 0, 3, 0, 64, "_ZN5aiter30fmha_bwd_hd192_dq_convert_fp16E", "bwd_hd192_dq_convert_fp16.co"},
    {"gfx950", "dq_convert", "fp16", 192, 192, 0, 0, 0, 0, 1, 3, 0, 64, "_ZN5aiter36fmha_bwd_hd192_dq_convert_fp16_groupE", "bwd_hd192_dq_convert_fp16_group.co"},
    {"gfx950", "dq_convert", "bf16", 192, 192, 0, 0, 0, 0, 0, 3, 0, 64, "_ZN5aiter30fmha_bwd_hd192_dq_convert_bf16E", "bwd_hd192_dq_convert_bf16.co"},
    {"gfx950", "dq_convert", "bf16", 192, 192, 0, 0, 0, 0, 1, 3, 0, 64, "_ZN5aiter36fmha_bwd_hd192_dq_convert_bf16_groupE", "bwd_hd192_dq_convert_bf16_group.co"},
    {"gfx950", "dq_shuffle", "bf16", 192, 192, 0, 0, 0, 0, 0, 3, 0, 64, "_ZN5aiter25fmha_bwd_hd192_dq_shuffleE", "bwd_hd192_dq_shuffle.co"},
    {"gfx950", "dq_shuffle", "bf16", 192, 192, 0, 0, 0, 0, 1, 3, 0, 64, "_ZN5aiter31fmha_bwd_hd192_dq_shuffle_groupE", "bwd_hd192_dq_shuffle_group.co"},
    {"gfx950", "dq_shuffle", "bf16", 128, 128, 0, 0, 0, 0, 0, 3, 0, 64, "_ZN5aiter25fmha_bwd_hd128_dq_shuffleE", "bwd_hd128_dq_shuffle.co"},
    {"gfx950", "dq_shuffle", "bf16", 128, 128, 0, 0, 0, 0, 1, 3, 0, 64, "_ZN5aiter31fmha_bwd_hd128_dq_shuffle_groupE", "bwd_hd128_dq_shuffle_group.co"},
};
// clang-format on

Arch arch_of(std::string_view a) { return a == "gfx942" ? Arch::kGfx942 : Arch::kGfx950; }
bool is_fp8(DType t) { return t == DType::kF8E4M3FN || t == DType::kF8E4M3FNUZ; }
std::string_view dtype_name(DType t) {
  return is_fp8(t) ? "fp8bf16" : t == DType::kBF16 ? "bf16" : "fp16";
}
int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// ---- a problem and its operands -----------------------------------------------------------------

struct Case {
  Arch arch = Arch::kGfx942;
  uint32_t chip = 0;  // PCI chip id (0x74a2: MI308X)
  DType dtype = DType::kBF16;
  bool varlen = false;
  int64_t b = 1, sq = 256, sk = 256, hq = 8, hk = 8, d = 128, dv = 128;
  int64_t total_q = 0, total_k = 0;  // varlen: 0 means b * sq (b * sk); sq, sk are the maxima
  bool causal = false;
  int64_t wl = -1, wr = -1;
  bool bias = false, alibi = false, dropout = false, det = false, a32 = true;
  int cvt = 1;
  float scale = 0.125f;

  int64_t tq() const { return varlen ? (total_q ? total_q : b * sq) : b * sq; }
  int64_t tk() const { return varlen ? (total_k ? total_k : b * sk) : b * sk; }
  ja::Target target() const {
    ja::Target t{ja::BackendKind::kHip, arch, arch == Arch::kGfx942 ? 304 : 256, 0};
    t.pci_chip_id = chip;
    return t;
  }
};

// Fake device addresses, one per operand, so packed pointers can be told apart.
constexpr uintptr_t kQ = 0x10000000, kK = 0x20000000, kV = 0x30000000, kOut = 0x40000000,
                    kLse = 0x50000000, kDout = 0x60000000, kDq = 0x70000000, kDk = 0x80000000,
                    kDv = 0x90000000, kWs = 0xa0000000, kCuQ = 0xb0000000, kCuK = 0xb1000000,
                    kBias = 0xc0000000, kAlibi = 0xc1000000, kRng = 0xc2000000, kDbias = 0xc3000000,
                    kQd = 0xd0000000, kKd = 0xd1000000, kVd = 0xd2000000;

ops::Tensor tensor(uintptr_t at, DType t, std::initializer_list<int64_t> dims) {
  return ops::Tensor::over(reinterpret_cast<void*>(at), t, dims);
}

struct Params {
  ops::FlashAttnFwdParams fwd;
  ops::FlashAttnBwdParams bwd;
};

Params params(const Case& c) {
  Params p;
  const DType t = c.dtype;
  ops::AttnOptions o;
  o.softmax_scale = c.scale;
  o.causal = c.causal;
  o.window_left = c.wl;
  o.window_right = c.wr;
  o.dropout_p = c.dropout ? 0.1f : 0.f;
  o.max_seqlen_q = c.varlen ? c.sq : 0;
  o.max_seqlen_k = c.varlen ? c.sk : 0;
  o.bf16_cvt = c.cvt;
  ops::Tensor q, k, v, out, lse;
  const DType ot = is_fp8(t) ? DType::kBF16 : t;  // fp8 q, k, v: bf16 out
  if (c.varlen) {
    q = tensor(kQ, t, {c.tq(), c.hq, c.d});
    k = tensor(kK, t, {c.tk(), c.hk, c.d});
    v = tensor(kV, t, {c.tk(), c.hk, c.dv});
    out = tensor(kOut, ot, {c.tq(), c.hq, c.dv});
    lse = tensor(kLse, DType::kF32, {c.hq, c.tq()});
  } else {
    q = tensor(kQ, t, {c.b, c.sq, c.hq, c.d});
    k = tensor(kK, t, {c.b, c.sk, c.hk, c.d});
    v = tensor(kV, t, {c.b, c.sk, c.hk, c.dv});
    out = tensor(kOut, ot, {c.b, c.sq, c.hq, c.dv});
    lse = tensor(kLse, DType::kF32, {c.b, c.hq, c.sq});
  }
  std::optional<ops::Tensor> bias, alibi, cu_q, cu_k, rng;
  if (c.bias) bias = tensor(kBias, DType::kF32, {c.b, c.hq, c.sq, c.sk});
  if (c.alibi) alibi = tensor(kAlibi, DType::kF32, {c.hq});
  if (c.dropout) rng = tensor(kRng, DType::kI32, {2});
  if (c.varlen) {
    cu_q = tensor(kCuQ, DType::kI32, {c.b + 1});
    cu_k = tensor(kCuK, DType::kI32, {c.b + 1});
  }
  std::optional<ops::Tensor> qd, kd, vd;
  if (is_fp8(t)) {
    qd = tensor(kQd, DType::kF32, {1});
    kd = tensor(kKd, DType::kF32, {1});
    vd = tensor(kVd, DType::kF32, {1});
  }
  p.fwd = {q, k, v, bias, alibi, cu_q, cu_k, rng, std::nullopt, qd, kd, vd, out, lse, o, {}};
  ops::FlashAttnBwdParams& g = p.bwd;
  g.dout = out;
  g.dout.data = reinterpret_cast<void*>(kDout);
  g.q = q;
  g.k = k;
  g.v = v;
  g.out = out;
  g.lse = lse;
  g.bias = bias;
  g.alibi_slopes = alibi;
  g.cu_seqlens_q = cu_q;
  g.cu_seqlens_k = cu_k;
  g.rng_key = rng;
  g.dq = q;
  g.dq.data = reinterpret_cast<void*>(kDq);
  g.dk = k;
  g.dk.data = reinterpret_cast<void*>(kDk);
  g.dv = v;
  g.dv.data = reinterpret_cast<void*>(kDv);
  g.dbias =
      c.bias ? tensor(kDbias, DType::kF32, {c.b, c.hq, c.sq, c.sk}) : tensor(0, DType::kF32, {0});
  g.workspace = tensor(kWs, DType::kU8, {int64_t{1} << 40});
  g.opt = o;
  g.deterministic = c.det;
  g.atomic32 = c.a32;
  return p;
}

// ---- the rules, written again -------------------------------------------------------------------

// Our normalised mask (the lead's attention_params.hpp, restated): left >= sk - 1 and
// right >= sq - 1 are no bounds (varlen: the totals); causal is (left, 0). kind: 0 none, 1 causal,
// 2 window.
struct Mask {
  int kind;
  int64_t left, right;
};
Mask mask_of(const Case& c) {
  int64_t l = c.wl < 0 ? -1 : c.wl;
  int64_t r = c.causal ? 0 : (c.wr < 0 ? -1 : c.wr);
  // No-op bounds: against the lengths, in varlen mode the totals (ours: a sequence longer than
  // max_seqlen, from traced offsets, is computed whole with its window).
  if (l >= (c.varlen ? c.tk() : c.sk) - 1) l = -1;
  if (r >= (c.varlen ? c.tq() : c.sq) - 1) r = -1;
  return {l < 0 && r < 0 ? 0 : (l < 0 && r == 0 ? 1 : 2), l, r};
}

bool is_aiter(Arch a) { return a == Arch::kGfx942 || a == Arch::kGfx950; }

struct FwdRef {
  bool ok = false;
  const CsvRow* row = nullptr;
  std::string co;  // under hsa/<arch>/
  K::Dim3 grid, block;
  uint32_t tune_opt = 0;
  int mask = 0;
};

// Section 4.7 and 5.1/5.2: AITER's C++ gate (dims, dtype, no bias/dropout, arch), its mask
// mapping, its Python gate (no ALiBi, no window, batch mode only above 128 query rows), the lookup,
// the MI300/MI308 folder, tune_opt and the grid.
// fp8 (AITER's is_fmha_v3_fp8 and can_impl_fmha_v3_fwd, mha_fwd.cu's fp8bf16 rows): the arch's
// e4m3 (fnuz on gfx942), (128, 128) or on gfx950 (256, 256), a power-of-two group.
FwdRef fwd_reference(const Case& c) {
  FwdRef f;
  const bool fp8 = is_fp8(c.dtype);
  if (!is_aiter(c.arch) || c.bias || c.alibi || c.dropout) return f;
  if (fp8) {
    const DType native = c.arch == Arch::kGfx942 ? DType::kF8E4M3FNUZ : DType::kF8E4M3FN;
    const int64_t g = c.hq / c.hk;
    if (c.dtype != native || (g & (g - 1)) != 0) return f;
    if (!((c.d == 128 && c.dv == 128) || (c.d == 256 && c.dv == 256 && c.arch == Arch::kGfx950))) {
      return f;
    }
  } else {
    if (c.dtype != DType::kBF16) return f;
    if (!((c.d == 128 && c.dv == 128) || (c.d == 192 && c.dv == 128))) return f;
  }
  const Mask m = mask_of(c);
  if (m.kind == 2) return f;
  if (!c.varlen && c.sq <= 128) return f;
  f.mask = m.kind == 1 ? 2 : 0;
  const std::string_view arch = c.arch == Arch::kGfx942 ? "gfx942" : "gfx950";
  for (const CsvRow& r : kCsv) {
    if (r.arch == arch && r.kind == "fwd" && r.dtype == (fp8 ? "fp8bf16" : "bf16") && r.hq == c.d &&
        r.hv == c.dv && r.mask == f.mask && r.mode == (c.varlen ? 1 : 0) &&
        (c.arch == Arch::kGfx950 || r.cvt == c.cvt)) {
      f.row = &r;
      break;
    }
  }
  if (f.row == nullptr) return f;
  const bool mi308 = c.chip == 0x74a2 || c.chip == 0x74a8 || c.chip == 0x74b6 || c.chip == 0x74bc;
  f.co = std::string("fmha_v3_fwd/") +
         (c.arch == Arch::kGfx942 ? (mi308 ? "MI308/" : "MI300/") : "") + std::string(f.row->co);
  const int64_t sq = c.varlen ? c.tq() : c.sq;  // AITER's seqlen_q
  const bool hd192 = c.d == 192;
  f.tune_opt = 5;
  if (f.mask != 0 && (c.hq % 8 != 0 || sq > 16384)) f.tune_opt = 3;
  if (hd192 && c.arch == Arch::kGfx942) f.tune_opt = 0;
  int64_t tg = f.mask != 0 ? 2 : 1;
  if (c.arch == Arch::kGfx942 && c.varlen && hd192) tg = 1;
  const int64_t tiles = cdiv(sq, f.row->ts_qo);
  if (c.varlen) {
    f.grid = {uint32_t(c.hq), uint32_t(c.b), uint32_t(cdiv(tiles, tg))};
  } else if (c.arch == Arch::kGfx942 && hd192) {
    f.grid = {uint32_t(c.hq), uint32_t(tiles), uint32_t(c.b)};
  } else {
    f.grid = {uint32_t(cdiv(tiles, tg)), uint32_t(c.hq), uint32_t(c.b)};
  }
  f.block = {hd192 ? 256u : 512u, 1, 1};
  f.ok = true;
  return f;
}

struct BwdRef {
  bool ok = false;
  const CsvRow *odo = nullptr, *main = nullptr, *post = nullptr;
  bool a32 = false;
  int mt = 0, cvt = 0;
  std::string why;  // for failures of the test's own assumptions
};

// AITER's padded head dims (mha_bwd.cu get_padded_hdim).
std::pair<int, int> padded(int64_t d, int64_t dv, Arch arch) {
  if (arch == Arch::kGfx950 && d == 192 && dv == 128) return {192, 128};
  if (d == dv && d <= 64) return {64, 64};
  if (d == dv && d <= 128) return {128, 128};
  if (d == dv && d <= 192) return {192, 192};
  return {int(d), int(dv)};
}

// Sections 4.8, 5.3, 5.4: AITER's Python gates on our dense layouts (strides from the shapes; dk
// and dv are the caller's [.., hk, ..] tensors, as AITER's Python sees them), its C++ gate, mask
// mapping and kernel lookup, with the stated tie-break (exact (pssk, pddv); else the candidate
// with the fewest extra capabilities, first in CSV order). gfx942 batch mode classifies the window
// as AITER's Python does (bounds >= sk are none, `swa` is left > 0 or right > 0, causal from the
// flag), so (0, 0), (0, -1) and a non-causal (-1, 0) are none of swa, mask, nmask there.
// Elsewhere a window is ours (normalised): where AITER's Python lets such a window through but its
// C++ has no kernel for it (varlen, gfx950), neither runs it.
BwdRef bwd_reference(const Case& c) {
  BwdRef b;
  if (!is_aiter(c.arch)) return b;
  const bool g942 = c.arch == Arch::kGfx942, g950 = c.arch == Arch::kGfx950;
  const Mask m = mask_of(c);
  const bool swa = m.kind == 2;
  const int64_t d = c.d, dv = c.dv, sq = c.sq, sk = c.sk;
  bool a32 = c.a32, det = c.det;
  int cvt = c.cvt;
  bool ok = false;
  if (c.varlen) {
    const bool basics = !c.alibi && !c.dropout && !det && d == dv && !swa;
    if (g942) {
      const bool pssk = a32 && (d == 64 || d == 128);
      const bool psskddv = a32 && d >= 64 && d <= 192;
      ok = basics && d >= 64 && d <= 192 && (pssk || psskddv);
    } else {  // ours: atomic32 only (AITER's a16 accumulator holds max_seqlen_q rows a sequence)
      ok = basics && d > 64 && d <= 128 && a32;
    }
  } else {
    if (g950) cvt = 0;
    // AITER's own classification (gfx942 batch): can_impl_fmha_v3_bwd.
    const int64_t wl = c.wl >= sk ? -1 : c.wl, wr = c.wr >= sk ? -1 : c.wr;
    const bool a_swa = wl > 0 || wr > 0, a_mask = c.causal && wl == -1,
               a_nmask = !c.causal && wl == -1 && wr == -1;
    // Strides (elements) of the dense operands.
    const int64_t stride_q = c.hq * d, nh_q = d, bs_q = sq * c.hq * d;
    const int64_t stride_do = c.hq * dv, nh_do = dv, bs_do = sq * c.hq * dv;
    const int64_t stride_k = c.hk * d, nh_k = d, bs_k = sk * c.hk * d;
    const int64_t stride_v = c.hk * dv, nh_v = dv, bs_v = sk * c.hk * dv;
    const int64_t nh_dk = d, bs_dk = bs_k, nh_dv = dv, bs_dv = bs_v;
    const double ratio = double(c.hq) / double(c.hk);
    const bool npssk = sq == sk && sk % 64 == 0 && stride_q == stride_do && nh_q == nh_do &&
                       bs_q == bs_do && stride_k == stride_v && nh_k == nh_v && bs_k == bs_v &&
                       nh_k == nh_dk && nh_v == nh_dv && double(bs_dk) / double(bs_k) == ratio &&
                       double(bs_dv) / double(bs_v) == ratio;
    const bool np = ((d == 128) || (d == 64 && !a32)) && npssk && !a_swa;
    const bool pssk = d == 64 && a32 && !a_swa;
    const bool pddv = !a32 && d > 64 && d < 128 && npssk && !a_swa;
    const bool psskddv =
        a32 && d > 64 && d <= 192 && (a_nmask || a_mask || (a_swa && d > 64 && d <= 128));
    const bool can942 = g942 && !c.alibi && !c.bias && !c.dropout && !det && d == dv && d >= 64 &&
                        d <= 192 && (np || pssk || pddv || psskddv);
    const bool one_block = g950 && sk <= 256 && d > 64 && d <= 128;
    const bool can950 = g950 && !c.alibi && !c.bias && !c.dropout && (!det || one_block) &&
                        ((d > 64 && d <= 128) || (d == 192 && dv == 128)) && !swa;
    ok = (can942 || can950) && sq > 16;
    if (one_block) {
      det = false;
      a32 = false;
    }
  }
  if (!ok) return b;
  // The C++ gate and lookup.
  if (c.bias || c.dropout || det) return b;
  int mt = m.kind == 0 ? 0 : m.kind == 1 ? 2 : 3;
  const int64_t sq_a = c.varlen ? c.tq() : sq, sk_a = c.varlen ? c.tk() : sk;
  if (g942 && !a32 && mt == 2 && sq_a == sk_a) mt = 1;
  const auto [phq, phv] = padded(d, dv, c.arch);
  const bool pddv_need = phq != d || phv != dv;
  const std::string_view arch = g942 ? "gfx942" : "gfx950", dt = dtype_name(c.dtype);
  const int mode = c.varlen ? 1 : 0;
  std::vector<size_t> cands;
  for (size_t i = 0; i < std::size(kCsv); ++i) {
    const CsvRow& r = kCsv[i];
    if (r.arch == arch && r.kind == "dqdkdv" && r.dtype == dt && r.hq == phq && r.hv == phv &&
        r.mask == mt && r.a32 == int(a32) && (r.cvt == 3 || r.cvt == cvt) && r.mode == mode) {
      cands.push_back(i);
    }
  }
  if (cands.empty()) return b;
  // AITER takes pssk's tile from the first candidate it visits: all must agree.
  std::set<int> tiles;
  for (size_t i : cands) {
    const CsvRow& r = kCsv[i];
    const bool recompile = r.symbol.find("recompile") != std::string_view::npos;
    tiles.insert(r.a32 == 0 && (g942 || recompile) ? 64 : r.ts);
  }
  if (tiles.size() != 1) {
    b.why = "candidates disagree on the pssk tile";
    return b;
  }
  const bool pssk_need = sq_a != sk_a || sk_a % *tiles.begin() != 0;
  std::vector<size_t> exact, supers;
  for (size_t i : cands) {
    const CsvRow& r = kCsv[i];
    if (r.pssk == int(pssk_need) && r.pddv == int(pddv_need)) exact.push_back(i);
    if (r.pssk >= int(pssk_need) && r.pddv >= int(pddv_need)) supers.push_back(i);
  }
  if (exact.size() > 1) {
    b.why = "two exact candidates";
    return b;
  }
  if (!exact.empty()) {
    b.main = &kCsv[exact[0]];
  } else if (!supers.empty()) {
    const auto extra = [&](size_t i) {
      return (kCsv[i].pssk - int(pssk_need)) + (kCsv[i].pddv - int(pddv_need));
    };
    b.main = &kCsv[*std::min_element(supers.begin(), supers.end(), [&](size_t x, size_t y) {
      return extra(x) != extra(y) ? extra(x) < extra(y) : x < y;
    })];
  } else {
    return b;
  }
  std::vector<const CsvRow*> odo;
  for (const CsvRow& r : kCsv) {
    if (r.arch == arch && r.kind == "odo" && r.dtype == dt && r.hv == phv && r.mode == mode) {
      odo.push_back(&r);
    }
  }
  if (odo.size() > 1) b.why = "two odo rows";
  if (odo.empty()) return b;
  b.odo = odo[0];
  const bool need_post = (g950 && d != 64) || a32;
  std::string_view post_kind =
      g950 ? (a32 ? "dq_convert" : "dq_shuffle") : (a32 ? "dq_convert" : "");
  if (need_post) {
    std::vector<const CsvRow*> post;
    for (const CsvRow& r : kCsv) {
      if (r.arch == arch && r.kind == post_kind && r.hq == phq && r.mode == mode &&
          (r.cvt == 3 || r.cvt == cvt) && (r.dtype == dt || !a32)) {
        post.push_back(&r);
      }
    }
    if (post.size() > 1) b.why = "two post rows";
    if (post.empty()) return b;
    b.post = post[0];
  }
  b.ok = true;
  b.a32 = a32;
  b.mt = mt;
  b.cvt = cvt;
  return b;
}

// ---- reading a plan -----------------------------------------------------------------------------

uint32_t u32_at(const K::Launch& l, uint32_t offset) {
  uint32_t v;
  std::memcpy(&v, l.args.bytes.data() + offset, 4);
  return v;
}
int32_t i32_at(const K::Launch& l, uint32_t offset) {
  int32_t v;
  std::memcpy(&v, l.args.bytes.data() + offset, 4);
  return v;
}
float f32_at(const K::Launch& l, uint32_t offset) {
  float v;
  std::memcpy(&v, l.args.bytes.data() + offset, 4);
  return v;
}
uintptr_t ptr_at(const K::Launch& l, uint32_t offset) {
  uintptr_t v;
  std::memcpy(&v, l.args.bytes.data() + offset, 8);
  return v;
}
// Every byte of the packed struct that no field of the kernel covers (the slots' padding): zero.
bool pads_zero(const K::Launch& l) {
  std::vector<bool> covered(l.args.size, false);
  for (const K::ArgField& f : l.kernel->fields) {
    for (uint32_t i = f.offset; i < f.offset + f.size && i < l.args.size; ++i) covered[i] = true;
  }
  for (uint32_t i = 0; i < l.args.size; ++i) {
    if (!covered[i] && l.args.bytes[i] != std::byte{0}) return false;
  }
  return true;
}

K::Plan plan_fwd(const Case& c) {
  K::Plan plan;
  EXPECT_TRUE(ops::decide_and_plan<ops::FlashAttnFwdAsmTier>(params(c).fwd, c.target(), plan).ok());
  return plan;
}
K::Plan plan_bwd(const Case& c) {
  K::Plan plan;
  plan.workspace_base = reinterpret_cast<void*>(kWs);
  EXPECT_TRUE(ops::decide_and_plan<ops::FlashAttnBwdAsmTier>(params(c).bwd, c.target(), plan).ok());
  return plan;
}

std::string describe(const Case& c) {
  std::string s = std::string(ja::name(c.arch)) + " " + std::string(ja::name(c.dtype)) +
                  (c.varlen ? " varlen" : " batch") + " b" + std::to_string(c.b) + " sq" +
                  std::to_string(c.sq) + " sk" + std::to_string(c.sk) + " hq" +
                  std::to_string(c.hq) + " hk" + std::to_string(c.hk) + " d" + std::to_string(c.d) +
                  "/" + std::to_string(c.dv) + " causal" + std::to_string(c.causal) + " w(" +
                  std::to_string(c.wl) + "," + std::to_string(c.wr) + ") det" +
                  std::to_string(c.det) + " a32" + std::to_string(c.a32) + " cvt" +
                  std::to_string(c.cvt);
  if (c.bias) s += " bias";
  if (c.alibi) s += " alibi";
  if (c.dropout) s += " dropout";
  return s;
}

// The steps and workspace a backward plan must have, from the reference's rows.
struct StepWant {
  bool memset;
  std::string_view what;  // memset: its name; launch: the symbol
  uintptr_t dst = 0;
  uint64_t bytes = 0;
  K::Dim3 grid, block;
};
struct PieceWant {
  std::string_view name;
  int64_t bytes;
};

void expect_bwd_plan(const Case& c, const BwdRef& r, const K::Plan& plan) {
  const int64_t esize = 2;
  const bool gqa = c.hq != c.hk;
  const int64_t rows_q = c.tq(), rows_k = c.tk();
  // Workspace: delta [b, hq, sq] / [hq, total_q] float32; the dq accumulator; GQA's expansions.
  std::vector<PieceWant> pieces = {{"delta", c.hq * rows_q * 4}};
  int64_t acc_bytes = 0;
  if (r.post != nullptr) {
    acc_bytes = r.a32 ? 4 * (c.varlen ? 1 : c.b) * c.hq * (c.varlen ? rows_q : c.sq) * c.d
                      : 2 * c.b * c.hq * cdiv(c.sq, 16) * 16 * (c.d == 192 ? 192 : 128);
    pieces.push_back({"dq_acc", acc_bytes});
  }
  if (gqa) {
    pieces.push_back({"dk_expanded", rows_k * c.hq * c.d * esize});
    pieces.push_back({"dv_expanded", rows_k * c.hq * c.dv * esize});
  }
  ASSERT_EQ(plan.workspace.count, pieces.size()) << describe(c);
  int64_t at = 0;
  std::vector<uintptr_t> base;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const auto& p = plan.workspace.pieces[i];
    at = (at + 255) / 256 * 256;
    EXPECT_EQ(p.name, pieces[i].name) << describe(c);
    EXPECT_EQ(p.bytes, pieces[i].bytes) << describe(c) << " " << p.name;
    EXPECT_EQ(p.offset, at) << describe(c) << " " << p.name;
    base.push_back(kWs + at);
    at += pieces[i].bytes;
  }
  EXPECT_EQ(plan.workspace.total, at);
  const uintptr_t dk = gqa ? base[r.post ? 2 : 1] : kDk, dv = gqa ? base[r.post ? 3 : 2] : kDv;
  std::vector<StepWant> steps;
  if (r.post != nullptr) {
    steps.push_back({true, "dq_acc", base[1], uint64_t(acc_bytes), {}, {}});
  } else {
    steps.push_back({true, "dq", kDq, uint64_t(rows_q * c.hq * c.d * esize), {}, {}});
  }
  // dk, dv zeroed where keys no query sees may be skipped: varlen, and a batch window whose left
  // bound leaves the first sk - sq - left keys outside every query's window.
  const bool window_hides_keys = !c.varlen && c.wl >= 0 && c.wl < c.sk - 1 && c.sk - c.sq > c.wl;
  if (c.varlen || window_hides_keys) {
    steps.push_back(
        {true, gqa ? "dk_expanded" : "dk", dk, uint64_t(rows_k * c.hq * c.d * esize), {}, {}});
    steps.push_back(
        {true, gqa ? "dv_expanded" : "dv", dv, uint64_t(rows_k * c.hq * c.dv * esize), {}, {}});
  }
  // The grids span the lengths, in varlen mode the totals (ours: AITER's span the maxima).
  const uint32_t hq = uint32_t(c.hq), nb = uint32_t(c.b);
  const int64_t span_q = c.varlen ? rows_q : c.sq, span_k = c.varlen ? rows_k : c.sk;
  steps.push_back(
      {false, r.odo->symbol, 0, 0, {uint32_t(cdiv(span_q, r.odo->ts)), hq, nb}, {256, 1, 1}});
  int64_t gx = cdiv(span_k, r.main->ts);
  if (r.mt == 1 || r.mt == 2) gx = (gx + 1) / 2;
  steps.push_back({false, r.main->symbol, 0, 0, {uint32_t(gx), hq, nb}, {256, 1, 1}});
  if (r.post != nullptr) {
    steps.push_back(
        {false, r.post->symbol, 0, 0, {uint32_t(cdiv(span_q, r.post->ts)), hq, nb}, {256, 1, 1}});
  }
  if (gqa) {
    const std::string_view reduce = c.dtype == DType::kBF16 ? "jax_aiter_attn_gqa_reduce_bf16"
                                                            : "jax_aiter_attn_gqa_reduce_f16";
    steps.push_back(
        {false, reduce, 0, 0, {uint32_t(cdiv(rows_k * c.hk * c.d, 1024)), 1, 1}, {256, 1, 1}});
    steps.push_back(
        {false, reduce, 0, 0, {uint32_t(cdiv(rows_k * c.hk * c.dv, 1024)), 1, 1}, {256, 1, 1}});
  }
  ASSERT_EQ(plan.count, steps.size()) << describe(c);
  for (size_t i = 0; i < steps.size(); ++i) {
    const K::Step& s = plan.steps[i];
    const StepWant& w = steps[i];
    if (w.memset) {
      ASSERT_EQ(s.kind, K::Step::Kind::kMemset) << describe(c) << " step " << i;
      EXPECT_EQ(s.memset.what, w.what) << describe(c);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(s.memset.dst), w.dst) << describe(c) << " " << w.what;
      EXPECT_EQ(s.memset.bytes, w.bytes) << describe(c) << " " << w.what;
      EXPECT_EQ(s.memset.value, 0u);
    } else {
      ASSERT_EQ(s.kind, K::Step::Kind::kLaunch) << describe(c) << " step " << i;
      EXPECT_EQ(s.launch.kernel->symbol, w.what) << describe(c) << " step " << i;
      EXPECT_EQ(s.launch.grid, w.grid) << describe(c) << " step " << i << " " << w.what;
      EXPECT_EQ(s.launch.block, w.block) << describe(c) << " step " << i;
    }
  }
}

// ---- the grid -----------------------------------------------------------------------------------

struct Counts {
  int fwd_checked = 0, fwd_taken = 0, bwd_checked = 0, bwd_taken = 0, bwd_post = 0, bwd_gqa = 0,
      bwd_swa = 0, bwd_a16 = 0, bwd_superset = 0;
};

void check_case(const Case& c, Counts& n, bool bwd_too) {
  const Params p = params(c);
  const ja::Target t = c.target();
  const auto prob = ops::attn_problem(p.fwd);
  ASSERT_TRUE(prob.ok()) << describe(c) << ": " << prob.status().message();
  // Forward.
  {
    const FwdRef want = fwd_reference(c);
    const auto v = ops::FlashAttnFwdAsmTier::supports(p.fwd, t);
    ASSERT_EQ(v.ok(), want.ok) << describe(c) << ": " << v.text();
    ++n.fwd_checked;
    if (want.ok) {
      ++n.fwd_taken;
      ops::AiterFmhaFwdChoice ch;
      ASSERT_TRUE(ops::select_aiter_fmha_fwd(*prob, t, &ch).ok());
      EXPECT_EQ(ch.row->kernel.symbol, want.row->symbol) << describe(c);
      EXPECT_EQ(ch.row->kernel.code_object, want.co) << describe(c);
      EXPECT_EQ(ch.row->arch, c.arch);
      const K::Plan plan = plan_fwd(c);
      ASSERT_EQ(plan.count, 1u);
      const K::Launch& l = plan.steps[0].launch;
      EXPECT_EQ(l.kernel, &ch.row->kernel);
      EXPECT_EQ(l.grid, want.grid) << describe(c);
      EXPECT_EQ(l.block, want.block) << describe(c);
      EXPECT_EQ(u32_at(l, 240), want.tune_opt) << describe(c);
      EXPECT_EQ(u32_at(l, 96), uint32_t(c.varlen ? c.tq() : c.sq)) << describe(c);
      EXPECT_EQ(u32_at(l, 256), 1u);
      EXPECT_EQ(u32_at(l, 464), uint32_t((c.varlen ? c.tq() : c.sq) * 4)) << describe(c);
      EXPECT_EQ(u32_at(l, 176), uint32_t(c.hq / c.hk));
      EXPECT_EQ(ptr_at(l, 432), c.varlen ? kCuQ : 0u);
      // q's row stride in bytes (1-byte fp8), out's (2-byte bf16), the descales (fp8 only).
      const uint32_t in = is_fp8(c.dtype) ? 1 : 2;
      EXPECT_EQ(u32_at(l, 112), uint32_t(c.hq * c.d * in)) << describe(c);
      EXPECT_EQ(u32_at(l, 384), uint32_t(c.hq * c.dv * 2)) << describe(c);
      EXPECT_EQ(ptr_at(l, 512), is_fp8(c.dtype) ? kQd : 0u);
      EXPECT_EQ(ptr_at(l, 528), is_fp8(c.dtype) ? kKd : 0u);
      EXPECT_EQ(ptr_at(l, 544), is_fp8(c.dtype) ? kVd : 0u);
      for (uint32_t at = 560; at <= 640; at += 16) EXPECT_EQ(u32_at(l, at), 0u);
      EXPECT_EQ(l.args.size, 656u);
      EXPECT_TRUE(pads_zero(l)) << describe(c);
    }
  }
  if (!bwd_too) return;
  const BwdRef want = bwd_reference(c);
  ASSERT_TRUE(want.why.empty()) << describe(c) << ": " << want.why;
  const auto v = ops::FlashAttnBwdAsmTier::supports(p.bwd, t);
  ASSERT_EQ(v.ok(), want.ok) << describe(c) << ": " << v.text();
  ++n.bwd_checked;
  const auto bprob = ops::attn_problem(p.bwd);
  ASSERT_TRUE(bprob.ok());
  // The workspace bound: at least what this arch's plan carves.
  const int64_t bound = ops::flash_attn_bwd_asm_workspace_bytes(*bprob);
  if (!want.ok) {
    ops::AiterFmhaBwdChoice other;
    const Arch o = c.arch == Arch::kGfx942 ? Arch::kGfx950 : Arch::kGfx942;
    if (!ops::select_aiter_fmha_bwd(*bprob, o, &other).ok()) {
      EXPECT_EQ(bound, 0) << describe(c);
    }
    return;
  }
  ++n.bwd_taken;
  ops::AiterFmhaBwdChoice ch;
  ASSERT_TRUE(ops::select_aiter_fmha_bwd(*bprob, c.arch, &ch).ok());
  EXPECT_EQ(ch.main->kernel.symbol, want.main->symbol) << describe(c);
  EXPECT_EQ(ch.odo->kernel.symbol, want.odo->symbol) << describe(c);
  EXPECT_EQ(ch.post == nullptr, want.post == nullptr) << describe(c);
  if (ch.post != nullptr && want.post != nullptr) {
    EXPECT_EQ(ch.post->kernel.symbol, want.post->symbol) << describe(c);
  }
  EXPECT_EQ(ch.main->kernel.code_object, "fmha_v3_bwd/" + std::string(want.main->co));
  EXPECT_EQ(ch.atomic32, want.a32) << describe(c);
  EXPECT_EQ(ch.mask, want.mt) << describe(c);
  const K::Plan plan = plan_bwd(c);
  expect_bwd_plan(c, want, plan);
  EXPECT_GE(bound, plan.workspace.total) << describe(c);
  n.bwd_post += want.post != nullptr;
  n.bwd_gqa += c.hq != c.hk;
  n.bwd_swa += want.mt == 3;
  n.bwd_a16 += !want.a32;
  n.bwd_superset += want.main->pssk + want.main->pddv > int(ch.pssk) + int(ch.pddv);
}

class AttentionGrid : public ::testing::TestWithParam<Arch> {};

TEST_P(AttentionGrid, MatchesTheIndependentRules) {
  const Arch arch = GetParam();
  struct Seq {
    int64_t sq, sk;
  };
  const Seq seqs[] = {{8, 8},     {17, 17},   {64, 64},   {100, 300}, {129, 129},
                      {256, 256}, {200, 512}, {512, 256}, {384, 384}, {1000, 1000}};
  const std::pair<int64_t, int64_t> heads[] = {{8, 8}, {16, 4}, {6, 1}, {7, 7}};
  const std::pair<int64_t, int64_t> dims[] = {{32, 32},   {64, 64},   {72, 72},   {96, 96},
                                              {128, 128}, {136, 136}, {192, 192}, {192, 128},
                                              {128, 64},  {256, 256}};
  struct MaskOpt {
    bool causal;
    int64_t wl, wr;
  };
  const MaskOpt masks[] = {{false, -1, -1}, {true, -1, -1},  {true, 32, -1},
                           {false, 64, -1}, {false, -1, 16}, {false, 0, 0}};
  Counts n;
  for (DType dt : {DType::kBF16, DType::kF16}) {
    for (bool varlen : {false, true}) {
      for (int64_t b : {1, 3}) {
        for (const Seq& s : seqs) {
          for (const auto& [hq, hk] : heads) {
            for (const auto& [d, dv] : dims) {
              for (const MaskOpt& m : masks) {
                for (int cvt : {0, 1, 2}) {
                  for (bool det : {false, true}) {
                    for (bool a32 : {false, true}) {
                      Case c;
                      c.arch = arch;
                      c.dtype = dt;
                      c.varlen = varlen;
                      c.b = b;
                      c.sq = s.sq;
                      c.sk = s.sk;
                      c.hq = hq;
                      c.hk = hk;
                      c.d = d;
                      c.dv = dv;
                      c.causal = m.causal;
                      c.wl = m.wl;
                      c.wr = m.wr;
                      c.cvt = cvt;
                      c.det = det;
                      c.a32 = a32;
                      // The forward reads neither det nor a32: check it once per (cvt, part).
                      if (!det && !a32) {
                        c.chip = 0x74a2;  // an MI308X
                        check_case(c, n, false);
                        c.chip = 0;
                      }
                      check_case(c, n, true);
                      if (::testing::Test::HasFatalFailure()) return;
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  // Bias, ALiBi and dropout: never taken (the references say so too).
  for (int f = 0; f < 3; ++f) {
    for (const auto& [d, dv] : dims) {
      for (bool varlen : {false, true}) {
        if (f == 0 && varlen) continue;  // a bias is batch mode only
        Case c;
        c.arch = arch;
        c.varlen = varlen;
        c.d = d;
        c.dv = dv;
        c.sq = c.sk = 512;
        c.bias = f == 0;
        c.alibi = f == 1;
        c.dropout = f == 2;
        check_case(c, n, true);
      }
    }
  }
  // fp8 (forward only): both e4m3 formats on each arch, MI300 and MI308 parts.
  const int fp8_taken_before = n.fwd_taken;
  for (DType dt : {DType::kF8E4M3FN, DType::kF8E4M3FNUZ}) {
    for (bool varlen : {false, true}) {
      for (const Seq& s : seqs) {
        for (const auto& [hq, hk] : heads) {
          for (const auto& [d, dv] : dims) {
            for (const MaskOpt& m : masks) {
              for (int cvt : {0, 1, 2}) {
                for (uint32_t chip : {0u, 0x74a2u}) {
                  Case c;
                  c.arch = arch;
                  c.chip = chip;
                  c.dtype = dt;
                  c.varlen = varlen;
                  c.b = 2;
                  c.sq = s.sq;
                  c.sk = s.sk;
                  c.hq = hq;
                  c.hk = hk;
                  c.d = d;
                  c.dv = dv;
                  c.causal = m.causal;
                  c.wl = m.wl;
                  c.wr = m.wr;
                  c.cvt = cvt;
                  check_case(c, n, false);
                  if (::testing::Test::HasFatalFailure()) return;
                }
              }
            }
          }
        }
      }
    }
  }
  const int fp8_taken = n.fwd_taken - fp8_taken_before;
  std::printf("%s: fp8 forward %d taken\n", std::string(ja::name(arch)).c_str(), fp8_taken);
  EXPECT_GT(fp8_taken, arch == Arch::kGfx950 ? 400 : 200);
  std::printf(
      "%s: forward %d problems checked, %d taken; backward %d checked, %d taken (%d with a "
      "post-pass, %d GQA, %d sliding window, %d a16, %d on a superset row)\n",
      std::string(ja::name(arch)).c_str(), n.fwd_checked, n.fwd_taken, n.bwd_checked, n.bwd_taken,
      n.bwd_post, n.bwd_gqa, n.bwd_swa, n.bwd_a16, n.bwd_superset);
  EXPECT_GE(n.fwd_checked, 5000);
  EXPECT_GE(n.bwd_checked, 5000);
  EXPECT_GT(n.fwd_taken, 500);
  EXPECT_GT(n.bwd_taken, 2000);
  EXPECT_GT(n.bwd_gqa, 100);
  EXPECT_GT(n.bwd_a16, 100);
  EXPECT_GT(n.bwd_superset, 100);
  if (arch == Arch::kGfx942) {
    EXPECT_GT(n.bwd_swa, 10);
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, AttentionGrid, ::testing::Values(Arch::kGfx942, Arch::kGfx950),
                         [](const auto& info) { return std::string(ja::name(info.param)); });

// ---- our tables against the CSVs ----------------------------------------------------------------

// Every row of ours is a CSV row (all columns), in CSV order; every CSV row we left out is one no
// call reaches (the list header says which); gfx942's forward rows come once per part.
TEST(Tables, AreTheReachableCsvRowsInOrder) {
  struct Table {
    std::string_view kind;
    std::span<const K::AiterFmhaBwdRow> rows;
  };
  const Table bwd[] = {{"odo", K::kAiterFmhaBwdOdoRows},
                       {"dqdkdv", K::kAiterFmhaBwdDqdkdvRows},
                       {"dq_convert", K::kAiterFmhaBwdDqConvertRows},
                       {"dq_shuffle", K::kAiterFmhaBwdDqShuffleRows}};
  std::set<std::string> ours;  // "arch/co"
  for (const Table& t : bwd) {
    std::map<Arch, size_t> last;
    for (const K::AiterFmhaBwdRow& r : t.rows) {
      const CsvRow* match = nullptr;
      size_t index = 0;
      for (size_t i = 0; i < std::size(kCsv); ++i) {
        const CsvRow& c = kCsv[i];
        if (arch_of(c.arch) == r.arch && c.kind == t.kind && c.symbol == r.kernel.symbol) {
          match = &c;
          index = i;
        }
      }
      ASSERT_NE(match, nullptr) << r.kernel.symbol;
      EXPECT_EQ(r.kernel.code_object, "fmha_v3_bwd/" + std::string(match->co));
      EXPECT_EQ(dtype_name(r.dtype), match->dtype) << r.kernel.symbol;
      EXPECT_EQ(r.hdim_q, match->hq) << r.kernel.symbol;
      EXPECT_EQ(r.hdim_v, match->hv) << r.kernel.symbol;
      EXPECT_EQ(r.mask, match->mask) << r.kernel.symbol;
      EXPECT_EQ(int(r.atomic32), match->a32) << r.kernel.symbol;
      EXPECT_EQ(int(r.pssk), match->pssk) << r.kernel.symbol;
      EXPECT_EQ(int(r.pddv), match->pddv) << r.kernel.symbol;
      EXPECT_EQ(int(r.group), match->mode) << r.kernel.symbol;
      EXPECT_EQ(r.bf16_cvt, match->cvt) << r.kernel.symbol;
      EXPECT_EQ(r.ts_qo, match->ts_qo) << r.kernel.symbol;
      EXPECT_EQ(r.ts, match->ts) << r.kernel.symbol;
      EXPECT_EQ(r.recompile, match->symbol.find("recompile") != std::string_view::npos);
      if (last.count(r.arch)) {
        EXPECT_GT(index, last[r.arch]) << "CSV order: " << r.kernel.symbol;
      }
      last[r.arch] = index;
      const size_t size = t.kind == "odo" ? 256 : t.kind == "dqdkdv" ? 704 : 192;
      EXPECT_EQ(r.kernel.args_size, size);
      ours.insert(std::string(match->arch) + "/" + std::string(t.kind) + "/" +
                  std::string(match->co));
    }
  }
  std::map<int, size_t> fwd_last;
  for (const K::AiterFmhaFwdRow& r : K::kAiterFmhaFwdRows) {
    const CsvRow* match = nullptr;
    size_t index = 0;
    for (size_t i = 0; i < std::size(kCsv); ++i) {
      if (arch_of(kCsv[i].arch) == r.arch && kCsv[i].kind == "fwd" &&
          kCsv[i].symbol == r.kernel.symbol) {
        match = &kCsv[i];
        index = i;
      }
    }
    ASSERT_NE(match, nullptr) << r.kernel.symbol;
    const std::string folder = r.part == 1 ? "MI300/" : r.part == 2 ? "MI308/" : "";
    EXPECT_EQ(r.part == 0, r.arch == Arch::kGfx950);
    EXPECT_EQ(r.kernel.code_object, "fmha_v3_fwd/" + folder + std::string(match->co));
    EXPECT_EQ(dtype_name(r.dtype), match->dtype);
    EXPECT_EQ(r.hdim_q, match->hq);
    EXPECT_EQ(r.hdim_v, match->hv);
    EXPECT_EQ(r.mask, match->mask);
    EXPECT_EQ(int(r.group), match->mode);
    EXPECT_EQ(r.bf16_cvt, match->cvt);
    EXPECT_EQ(r.ts_qo, match->ts_qo);
    EXPECT_EQ(r.ts_kv, match->ts);
    EXPECT_EQ(r.kernel.args_size, 656u);
    if (fwd_last.count(r.part)) {
      EXPECT_GT(index, fwd_last[r.part]);
    }
    fwd_last[r.part] = index;
    ours.insert(std::string(match->arch) + "/fwd" + std::to_string(r.part) + "/" +
                std::string(match->co));
  }
  // What is left out, and why no call reaches it.
  int left_out = 0;
  for (const CsvRow& c : kCsv) {
    const std::string a(c.arch), co(c.co);
    bool in = false;
    if (c.kind == "fwd") {
      in = c.arch == "gfx942" ? ours.count(a + "/fwd1/" + co) && ours.count(a + "/fwd2/" + co)
                              : ours.count(a + "/fwd0/" + co);
      EXPECT_TRUE(in) << co << ": every forward row is ours";
    } else {
      in = ours.count(a + "/" + std::string(c.kind) + "/" + co) > 0;
      bool reachable = true;
      if (c.arch == "gfx942") {
        reachable = !(c.kind == "dqdkdv" && c.mask == 1 && c.a32 == 1);
      } else if (c.kind == "odo") {
        reachable = c.hv == 128;
      } else if (c.kind == "dqdkdv") {
        reachable = ((c.hq == 128 && c.hv == 128) || (c.hq == 192 && c.hv == 128)) &&
                    (c.mask == 0 || c.mask == 2);
      } else {
        reachable = c.hq == 128 || (c.hq == 192 && c.mode == 0);
      }
      EXPECT_EQ(in, reachable) << c.arch << " " << c.kind << " " << co;
    }
    left_out += !in;
  }
  EXPECT_EQ(left_out, 32 + 8 + 68 + 6 + 1);
}

// ---- plans, field by field ----------------------------------------------------------------------

TEST(ForwardPlan, Gfx942BatchCausalGqa) {
  Case c;
  c.b = 2;
  c.sq = 1024;
  c.sk = 2048;
  c.hq = 16;
  c.hk = 4;
  c.causal = true;
  c.cvt = 1;
  for (uint32_t chip : {0u, 0x74a1u, 0x74a2u, 0x74bcu}) {
    c.chip = chip;
    const K::Plan plan = plan_fwd(c);
    ASSERT_EQ(plan.count, 1u);
    const K::Launch& l = plan.steps[0].launch;
    const bool mi308 = chip == 0x74a2 || chip == 0x74bc;
    EXPECT_EQ(l.kernel->symbol, "_ZN5aiter31fmha_fwd_hd128_bf16_causal_rtnaE");
    EXPECT_EQ(l.kernel->code_object, mi308 ? "fmha_v3_fwd/MI308/fwd_hd128_bf16_causal_rtna.co"
                                           : "fmha_v3_fwd/MI300/fwd_hd128_bf16_causal_rtna.co");
    EXPECT_EQ(l.grid, (K::Dim3{2, 16, 2}));  // 4 tiles of 256 rows, paired
    EXPECT_EQ(l.block, (K::Dim3{512, 1, 1}));
    EXPECT_EQ(ptr_at(l, 0), kOut);
    EXPECT_EQ(ptr_at(l, 16), kQ);
    EXPECT_EQ(ptr_at(l, 32), kK);
    EXPECT_EQ(ptr_at(l, 48), kV);
    EXPECT_EQ(ptr_at(l, 64), kLse);
    EXPECT_EQ(f32_at(l, 80), 0.125f);
    const uint32_t want[][2] = {
        {96, 1024},  {112, 4096}, {128, 1048576}, {144, 256},  {160, 4194304}, {176, 4},
        {192, 1024}, {208, 256},  {224, 2097152}, {240, 5},    {256, 1},       {272, 2048},
        {288, 128},  {304, 128},  {320, 16},      {336, 1024}, {352, 256},     {368, 2097152},
        {384, 4096}, {400, 256},  {416, 4194304}, {464, 4096}, {560, 0},       {576, 0},
        {592, 0},    {608, 0},    {624, 0},       {640, 0}};
    for (const auto& [at, v] : want) EXPECT_EQ(u32_at(l, at), v) << "offset " << at;
    for (uint32_t at : {432u, 448u, 480u, 496u, 512u, 528u, 544u}) EXPECT_EQ(ptr_at(l, at), 0u);
    EXPECT_TRUE(pads_zero(l));
    const auto notes = plan.note_view();
    ASSERT_EQ(notes.size(), 6u);
    EXPECT_EQ(notes[0].name, "ts_qo");
    EXPECT_EQ(notes[0].value, 256);
    EXPECT_EQ(notes[2].value, 2);              // mask
    EXPECT_EQ(notes[4].value, mi308 ? 2 : 1);  // part
    EXPECT_EQ(notes[5].value, 1);              // bf16_cvt
  }
}

// fp8: gfx942 MI308 batch causal (the one rtna build), gfx950 hd256 varlen; 1-byte q, k, v
// strides, 2-byte out strides, the descale pointers with strides 0.
TEST(ForwardPlan, Fp8Gfx942BatchAndGfx950Hd256Varlen) {
  Case c;
  c.dtype = DType::kF8E4M3FNUZ;
  c.chip = 0x74a8;
  c.b = 2;
  c.sq = 1024;
  c.sk = 2048;
  c.hq = 16;
  c.hk = 4;
  c.causal = true;
  {
    const K::Plan plan = plan_fwd(c);
    ASSERT_EQ(plan.count, 1u);
    const K::Launch& l = plan.steps[0].launch;
    EXPECT_EQ(l.kernel->symbol, "_ZN5aiter25fmha_fwd_hd128_fp8_causalE");
    EXPECT_EQ(l.kernel->code_object, "fmha_v3_fwd/MI308/fwd_hd128_fp8_causal.co");
    EXPECT_EQ(l.kernel->fields.size(), 41u);
    EXPECT_EQ(l.kernel->fields[32].name, "ptr_descale_q");
    EXPECT_EQ(l.grid, (K::Dim3{2, 16, 2}));
    EXPECT_EQ(l.block, (K::Dim3{512, 1, 1}));
    const uint32_t want[][2] = {
        {96, 1024},  {112, 2048}, {128, 524288},  {144, 128}, {160, 2097152}, {176, 4},
        {192, 512},  {208, 128},  {224, 1048576}, {240, 5},   {256, 1},       {272, 2048},
        {288, 128},  {304, 128},  {320, 16},      {336, 512}, {352, 128},     {368, 1048576},
        {384, 4096}, {400, 256},  {416, 4194304}, {464, 4096}};
    for (const auto& [at, v] : want) EXPECT_EQ(u32_at(l, at), v) << "offset " << at;
    EXPECT_EQ(ptr_at(l, 512), kQd);
    EXPECT_EQ(ptr_at(l, 528), kKd);
    EXPECT_EQ(ptr_at(l, 544), kVd);
    EXPECT_TRUE(pads_zero(l));
  }
  c.arch = Arch::kGfx950;
  c.chip = 0;
  c.dtype = DType::kF8E4M3FN;
  c.varlen = true;
  c.b = 3;
  c.sq = c.sk = 700;  // maxima; totals 3 * 700
  c.d = c.dv = 256;
  c.hq = 8;
  c.hk = 8;
  const K::Plan plan = plan_fwd(c);
  ASSERT_EQ(plan.count, 1u);
  const K::Launch& l = plan.steps[0].launch;
  EXPECT_EQ(l.kernel->symbol, "_ZN5aiter38fmha_fwd_hd256_fp8_causal_group_gfx950E");
  EXPECT_EQ(l.kernel->code_object, "fmha_v3_fwd/fwd_hd256_fp8_causal_group.co");
  EXPECT_EQ(l.kernel->fields[0].name, "ptr_o");
  EXPECT_EQ(l.grid, (K::Dim3{8, 3, 5}));  // (hq, sequences, ceil(ceil(2100 / 256) / 2))
  EXPECT_EQ(l.block, (K::Dim3{512, 1, 1}));
  EXPECT_EQ(u32_at(l, 96), 2100u);
  EXPECT_EQ(u32_at(l, 112), 8u * 256);      // q row: hq * d bytes
  EXPECT_EQ(u32_at(l, 160), 0u);            // group mode: no batch stride
  EXPECT_EQ(u32_at(l, 384), 8u * 256 * 2);  // out row: bf16
  EXPECT_EQ(ptr_at(l, 432), kCuQ);
  EXPECT_EQ(ptr_at(l, 512), kQd);
}

TEST(ForwardPlan, Gfx950VarlenAndGfx942Hd192) {
  Case c;
  c.arch = Arch::kGfx950;
  c.varlen = true;
  c.b = 3;
  c.sq = 300;
  c.sk = 400;
  c.total_q = 700;
  c.total_k = 900;
  c.hq = c.hk = 12;
  c.d = 192;
  c.dv = 128;
  c.cvt = 2;  // gfx950 ignores it
  K::Plan plan = plan_fwd(c);
  K::Launch l = plan.steps[0].launch;
  EXPECT_EQ(l.kernel->symbol, "_ZN5aiter31fmha_fwd_hd192_hd128_bf16_groupE");
  EXPECT_EQ(l.kernel->code_object, "fmha_v3_fwd/fwd_hd192_hd128_bf16_group.co");
  // Group mode: (head, sequence, tile) over total_q's tiles of 128 rows, as AITER launches it.
  EXPECT_EQ(l.grid, (K::Dim3{12, 3, 6}));
  EXPECT_EQ(l.block, (K::Dim3{256, 1, 1}));
  const uint32_t want[][2] = {{96, 700},   {112, 4608}, {128, 128 * 4608}, {160, 0},   {176, 1},
                              {224, 0},    {240, 5},    {272, 900},        {288, 192}, {304, 128},
                              {336, 3072}, {368, 0},    {384, 3072},       {416, 0},   {464, 2800}};
  for (const auto& [at, v] : want) EXPECT_EQ(u32_at(l, at), v) << "offset " << at;
  EXPECT_EQ(ptr_at(l, 432), kCuQ);
  EXPECT_EQ(ptr_at(l, 448), kCuK);
  EXPECT_EQ(ptr_at(l, 480), kCuQ);
  EXPECT_EQ(ptr_at(l, 496), kCuK);
  // Causal: tiles paired, and tune_opt 3 (12 heads is not a multiple of 8).
  c.causal = true;
  plan = plan_fwd(c);
  l = plan.steps[0].launch;
  EXPECT_EQ(l.kernel->symbol, "_ZN5aiter38fmha_fwd_hd192_hd128_bf16_causal_groupE");
  EXPECT_EQ(l.grid, (K::Dim3{12, 3, 3}));
  EXPECT_EQ(u32_at(l, 240), 3u);
  // gfx942's (192, 128) kernels: (head, tile, batch), tune_opt 0, no pairing in group mode.
  Case g;
  g.sq = g.sk = 600;
  g.d = 192;
  g.causal = true;
  g.cvt = 0;
  plan = plan_fwd(g);
  l = plan.steps[0].launch;
  EXPECT_EQ(l.kernel->symbol, "_ZN5aiter35fmha_fwd_hd192x128_bf16_causal_rtneE");
  EXPECT_EQ(l.grid, (K::Dim3{8, 5, 1}));
  EXPECT_EQ(l.block, (K::Dim3{256, 1, 1}));
  EXPECT_EQ(u32_at(l, 240), 0u);
  g.varlen = true;
  g.b = 2;
  plan = plan_fwd(g);
  EXPECT_EQ(plan.steps[0].launch.grid, (K::Dim3{8, 2, 10}));  // 1200 rows: 10 tiles, unpaired
}

// Backward: gfx942, batch, MHA, a32, causal (bottom-right: no rewrite with a32).
TEST(BackwardPlan, Gfx942BatchA32Causal) {
  Case c;
  c.b = 2;
  c.sq = c.sk = 512;
  c.causal = true;
  c.cvt = 1;
  const K::Plan plan = plan_bwd(c);
  ASSERT_EQ(plan.count, 4u);
  ASSERT_EQ(plan.workspace.count, 2u);
  const uintptr_t acc = kWs + 32768;  // after delta's 2*8*512*4 bytes
  EXPECT_EQ(plan.workspace.pieces[1].offset, 32768);
  EXPECT_EQ(plan.steps[0].kind, K::Step::Kind::kMemset);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(plan.steps[0].memset.dst), acc);
  EXPECT_EQ(plan.steps[0].memset.bytes, 4u * 2 * 8 * 512 * 128);
  const K::Launch& odo = plan.steps[1].launch;
  const K::Launch& main = plan.steps[2].launch;
  const K::Launch& post = plan.steps[3].launch;
  EXPECT_EQ(odo.kernel->symbol, "_ZN5aiter23fmha_bwd_hd128_odo_bf16E");
  EXPECT_EQ(main.kernel->symbol, "_ZN5aiter46fmha_bwd_hd128_bf16_causal_br_a32_rtna_psskddvE");
  EXPECT_EQ(post.kernel->symbol, "_ZN5aiter35fmha_bwd_hd128_dq_convert_bf16_rtnaE");
  EXPECT_EQ(odo.grid, (K::Dim3{4, 8, 2}));
  EXPECT_EQ(main.grid, (K::Dim3{2, 8, 2}));  // 3 tiles of 192 keys, paired
  EXPECT_EQ(post.grid, (K::Dim3{8, 8, 2}));
  // odo
  EXPECT_EQ(ptr_at(odo, 0), kOut);
  EXPECT_EQ(ptr_at(odo, 16), kDout);
  EXPECT_EQ(ptr_at(odo, 32), kWs);
  const uint32_t want_odo[][2] = {{48, 256},      {64, 1048576}, {80, 2048},  {96, 256},
                                  {112, 1048576}, {128, 2048},   {144, 2048}, {160, 16384},
                                  {176, 4},       {192, 512},    {208, 128}};
  for (const auto& [at, v] : want_odo) EXPECT_EQ(u32_at(odo, at), v) << "odo offset " << at;
  EXPECT_EQ(ptr_at(odo, 224), 0u);
  EXPECT_EQ(ptr_at(odo, 240), 0u);
  EXPECT_TRUE(pads_zero(odo));
  // dqdkdv
  const uintptr_t ptrs[][2] = {{0, acc}, {16, kDk},   {32, kDv},   {48, kQ},   {64, kK},
                               {80, kV}, {96, kDout}, {112, kLse}, {128, kWs}, {592, 0},
                               {608, 0}, {624, 0},    {640, 0}};
  for (const auto& [at, v] : ptrs) EXPECT_EQ(ptr_at(main, uint32_t(at)), v) << "offset " << at;
  EXPECT_EQ(f32_at(main, 144), 0.125f);
  EXPECT_FLOAT_EQ(f32_at(main, 160), 1.44269504f);
  const uint32_t want_main[][2] = {
      {176, 512},     {192, 393216},  {208, 256},  {224, 1048576}, {240, 2048}, {256, 1},
      {272, 256},     {288, 1048576}, {304, 2048}, {320, 2048},    {336, 512},  {352, 128},
      {368, 128},     {384, 8},       {400, 256},  {416, 1048576}, {432, 2048}, {448, 256},
      {464, 1048576}, {480, 2048},    {496, 256},  {512, 1048576}, {528, 256},  {544, 1048576},
      {560, 2048},    {576, 2048},    {656, 512},  {672, 0},       {688, 0}};
  for (const auto& [at, v] : want_main) EXPECT_EQ(u32_at(main, at), v) << "main offset " << at;
  EXPECT_TRUE(pads_zero(main));
  // post
  EXPECT_EQ(ptr_at(post, 0), acc);
  EXPECT_EQ(ptr_at(post, 16), kDq);
  const uint32_t want_post[][2] = {{32, 262144},  {48, 2097152}, {64, 512},  {80, 256},
                                   {96, 1048576}, {112, 2048},   {128, 512}, {144, 128}};
  for (const auto& [at, v] : want_post) EXPECT_EQ(u32_at(post, at), v) << "post offset " << at;
  EXPECT_EQ(ptr_at(post, 160), 0u);
  EXPECT_TRUE(pads_zero(post));
  const auto notes = plan.note_view();
  ASSERT_EQ(notes.size(), 6u);
  EXPECT_EQ(notes[0].value, 192);  // ts_kv
  EXPECT_EQ(notes[1].value, 2);    // mask
  EXPECT_EQ(notes[2].value, 1);    // atomic32
  EXPECT_EQ(notes[3].value, 1);    // pssk
  EXPECT_EQ(notes[4].value, 1);    // pddv
}

// gfx942 varlen, GQA (8 query heads on 2 key heads), fp16, d 64, causal: eight steps.
TEST(BackwardPlan, Gfx942VarlenGqa) {
  Case c;
  c.dtype = DType::kF16;
  c.varlen = true;
  c.b = 2;
  c.sq = 200;
  c.sk = 300;
  c.total_q = 300;
  c.total_k = 500;
  c.hq = 8;
  c.hk = 2;
  c.d = c.dv = 64;
  c.causal = true;
  const K::Plan plan = plan_bwd(c);
  ASSERT_EQ(plan.count, 8u);
  ASSERT_EQ(plan.workspace.count, 4u);
  const int64_t offs[] = {0, 9728, 624128, 1136128};
  const int64_t bytes[] = {9600, 614400, 512000, 512000};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(plan.workspace.pieces[i].offset, offs[i]);
    EXPECT_EQ(plan.workspace.pieces[i].bytes, bytes[i]);
  }
  const char* memsets[] = {"dq_acc", "dk_expanded", "dv_expanded"};
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(plan.steps[i].kind, K::Step::Kind::kMemset);
    EXPECT_EQ(plan.steps[i].memset.what, memsets[i]);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(plan.steps[i].memset.dst), kWs + offs[i + 1]);
    EXPECT_EQ(plan.steps[i].memset.bytes, uint64_t(bytes[i + 1]));
  }
  const K::Launch& odo = plan.steps[3].launch;
  const K::Launch& main = plan.steps[4].launch;
  const K::Launch& post = plan.steps[5].launch;
  EXPECT_EQ(odo.kernel->symbol, "_ZN5aiter28fmha_bwd_hd64_odo_fp16_groupE");
  EXPECT_EQ(main.kernel->symbol, "_ZN5aiter43fmha_bwd_hd64_fp16_causal_br_a32_pssk_groupE");
  EXPECT_EQ(post.kernel->symbol, "_ZN5aiter35fmha_bwd_hd64_dq_convert_fp16_groupE");
  // Over total_q / total_k's tiles (AITER: the maxima's), so a longer sequence is covered.
  EXPECT_EQ(odo.grid, (K::Dim3{3, 8, 2}));   // 300 rows, 128 a tile
  EXPECT_EQ(main.grid, (K::Dim3{2, 8, 2}));  // 500 keys: 3 tiles of 192, paired
  EXPECT_EQ(post.grid, (K::Dim3{5, 8, 2}));  // 300 rows, 64 a tile
  EXPECT_EQ(u32_at(odo, 64), 0u);            // BAs_o
  EXPECT_EQ(u32_at(odo, 144), 1200u);        // Hs_d: lse's [hq, total_q]
  EXPECT_EQ(u32_at(odo, 160), 0u);
  EXPECT_EQ(u32_at(odo, 192), 300u);
  EXPECT_EQ(ptr_at(odo, 224), kCuQ);
  EXPECT_EQ(ptr_at(odo, 240), kCuQ);
  EXPECT_EQ(ptr_at(main, 16), kWs + 624128);
  EXPECT_EQ(ptr_at(main, 32), kWs + 1136128);
  const uint32_t want_main[][2] = {{176, 300}, {192, 49152}, {224, 0},    {240, 1024}, {256, 4},
                                   {288, 0},   {304, 256},   {320, 1024}, {336, 500},  {352, 64},
                                   {368, 64},  {512, 0},     {544, 0},    {576, 1200}, {656, 200}};
  for (const auto& [at, v] : want_main) EXPECT_EQ(u32_at(main, at), v) << "main offset " << at;
  EXPECT_EQ(ptr_at(main, 592), kCuQ);
  EXPECT_EQ(ptr_at(main, 608), kCuK);
  EXPECT_EQ(ptr_at(main, 624), kCuQ);
  EXPECT_EQ(ptr_at(main, 640), kCuK);
  const uint32_t want_post[][2] = {{32, 76800}, {48, 0}, {64, 256}, {96, 0}, {128, 300}};
  for (const auto& [at, v] : want_post) EXPECT_EQ(u32_at(post, at), v) << "post offset " << at;
  EXPECT_EQ(ptr_at(post, 160), kCuQ);
  for (int i = 6; i < 8; ++i) {
    const K::Launch& r = plan.steps[i].launch;
    EXPECT_EQ(r.kernel->symbol, "jax_aiter_attn_gqa_reduce_f16");
    EXPECT_EQ(r.grid, (K::Dim3{63, 1, 1}));
    EXPECT_EQ(r.block, (K::Dim3{256, 1, 1}));
    const auto a = r.args.unpack<K::AttnGqaReduceArgs>();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.src), kWs + (i == 6 ? 624128 : 1136128));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.dst), i == 6 ? kDk : kDv);
    EXPECT_EQ(a.rows, 500);
    EXPECT_EQ(a.heads_k, 2);
    EXPECT_EQ(a.group, 4);
    EXPECT_EQ(a.dim, 64);
  }
}

// gfx942 a16: causal with sq == sk runs AITER's top-left kernels; d 96 pads to 128 (pddv); no
// post-pass: the main kernel adds into dq, which the plan zeroes.
TEST(BackwardPlan, Gfx942A16) {
  Case c;
  c.sq = c.sk = 256;
  c.d = c.dv = 96;
  c.causal = true;
  c.a32 = false;
  c.cvt = 0;
  const K::Plan plan = plan_bwd(c);
  ASSERT_EQ(plan.count, 3u);
  ASSERT_EQ(plan.workspace.count, 1u);
  EXPECT_EQ(plan.steps[0].memset.what, "dq");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(plan.steps[0].memset.dst), kDq);
  EXPECT_EQ(plan.steps[0].memset.bytes, 256u * 8 * 96 * 2);
  const K::Launch& main = plan.steps[2].launch;
  EXPECT_EQ(main.kernel->symbol, "_ZN5aiter40fmha_bwd_hd128_bf16_causal_a16_rtne_pddvE");
  EXPECT_EQ(main.grid, (K::Dim3{1, 8, 1}));
  EXPECT_EQ(ptr_at(main, 0), kDq);
  EXPECT_EQ(u32_at(main, 352), 96u);
  EXPECT_EQ(u32_at(main, 656), 256u);
  EXPECT_EQ(plan.note_view()[1].value, 1);  // mask 1
  // sq != sk has no a16 kernel on gfx942.
  c.sk = 512;
  EXPECT_FALSE(ops::FlashAttnBwdAsmTier::supports(params(c).bwd, c.target()).ok());
}

// gfx942 sliding window: CK's generic coordinates of our bottom-right window, checked against
// attn_visible for every (query, key). ((0, 0) would be narrower, but AITER's Python counts no
// window there and sends it to CK: (1, 0) is the narrowest its v3 backward takes.)
TEST(BackwardPlan, Gfx942SlidingWindow) {
  struct W {
    int64_t sq, sk, wl, wr;
  };
  for (const W& w :
       {W{1024, 1024, 100, 50}, W{300, 1000, -1, 20}, W{1000, 300, 40, -1}, W{257, 700, 1, 0}}) {
    Case c;
    c.sq = w.sq;
    c.sk = w.sk;
    c.hq = c.hk = 4;
    c.wl = w.wl;
    c.wr = w.wr;
    c.cvt = 2;
    const K::Plan plan = plan_bwd(c);
    // The first sk - sq - left keys are in no query's window: dk and dv are zeroed first.
    const bool hidden_keys = w.wl >= 0 && w.sk - w.sq > w.wl;
    ASSERT_EQ(plan.count, hidden_keys ? 6u : 4u);
    const K::Launch& main = plan.steps[hidden_keys ? 4 : 2].launch;
    EXPECT_EQ(main.kernel->symbol, "_ZN5aiter39fmha_bwd_hd128_bf16_swa_a32_rtz_psskddvE");
    EXPECT_EQ(main.grid.x, uint32_t(cdiv(w.sk, 192)));  // windows are not paired
    const int32_t mx = i32_at(main, 672), my = i32_at(main, 688);
    const Mask m = mask_of(c);
    ASSERT_EQ(m.kind, 2);
    int64_t bad = 0;
    for (int64_t i = 0; i < w.sq; ++i) {
      for (int64_t j = 0; j < w.sk; ++j) {
        const bool ck = i - my < j && j < i + mx;
        bad += ck != K::attention::attn_visible(i, j, w.sq, w.sk, int(m.left), int(m.right));
      }
    }
    EXPECT_EQ(bad, 0) << w.sq << "x" << w.sk << " (" << w.wl << ", " << w.wr << ")";
  }
  // a16, or a head dim other than 128's bucket: no window kernel.
  Case c;
  c.wl = 10;
  c.a32 = false;
  EXPECT_FALSE(ops::FlashAttnBwdAsmTier::supports(params(c).bwd, c.target()).ok());
  c.a32 = true;
  c.d = c.dv = 192;
  EXPECT_FALSE(ops::FlashAttnBwdAsmTier::supports(params(c).bwd, c.target()).ok());
  c.d = c.dv = 128;
  c.varlen = true;
  EXPECT_FALSE(ops::FlashAttnBwdAsmTier::supports(params(c).bwd, c.target()).ok());
}

// gfx950: one key block (seqlen_k <= 256, 64 < d <= 128) runs 16-bit accumulation (dq_shuffle),
// deterministically; otherwise deterministic is refused.
TEST(BackwardPlan, Gfx950OneBlock) {
  Case c;
  c.arch = Arch::kGfx950;
  c.b = 2;
  c.sq = 512;
  c.sk = 256;
  c.det = true;
  c.a32 = true;
  const K::Plan plan = plan_bwd(c);
  ASSERT_EQ(plan.count, 4u);
  EXPECT_EQ(plan.steps[2].launch.kernel->symbol, "_ZN5aiter31fmha_bwd_hd128_bf16_a16_psskddvE");
  EXPECT_EQ(plan.steps[2].launch.grid, (K::Dim3{1, 8, 2}));
  const K::Launch& post = plan.steps[3].launch;
  EXPECT_EQ(post.kernel->symbol, "_ZN5aiter25fmha_bwd_hd128_dq_shuffleE");
  EXPECT_EQ(plan.workspace.pieces[1].bytes, 2 * 2 * 8 * 512 * 128);
  EXPECT_EQ(u32_at(post, 32), 512u * 128 * 2);
  EXPECT_EQ(u32_at(post, 48), 8u * 512 * 128 * 2);
  EXPECT_EQ(u32_at(post, 64), 256u);
  EXPECT_EQ(u32_at(plan.steps[2].launch, 656), 512u);
  EXPECT_EQ(plan.note_view()[2].value, 0);  // atomic32 off
  c.det = false;                            // AITER runs one-block shapes a16 either way
  EXPECT_EQ(plan_bwd(c).note_view()[2].value, 0);
  c.det = true;
  c.sk = 257;
  const auto v = ops::FlashAttnBwdAsmTier::supports(params(c).bwd, c.target());
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.text().find("one key block"), std::string::npos) << v.text();
  // The prior art read seqlen_q: sq <= 256 < sk is not one block.
  c.sq = 100;
  c.sk = 512;
  EXPECT_FALSE(ops::FlashAttnBwdAsmTier::supports(params(c).bwd, c.target()).ok());
}

// gfx950 (192, 128): the hd128 odo kernel (reducing over dv: head_dim 128), the hd192 post-pass.
TEST(BackwardPlan, Gfx950Hd192x128) {
  Case c;
  c.arch = Arch::kGfx950;
  c.dtype = DType::kF16;
  c.sq = c.sk = 512;
  c.d = 192;
  c.dv = 128;
  const K::Plan plan = plan_bwd(c);
  ASSERT_EQ(plan.count, 4u);
  EXPECT_EQ(plan.steps[1].launch.kernel->symbol, "_ZN5aiter23fmha_bwd_hd128_odo_fp16E");
  EXPECT_EQ(u32_at(plan.steps[1].launch, 208), 128u);
  EXPECT_EQ(plan.steps[2].launch.kernel->symbol, "_ZN5aiter32fmha_bwd_hd192_128_fp16_a32_psskE");
  EXPECT_EQ(u32_at(plan.steps[2].launch, 352), 192u);
  EXPECT_EQ(u32_at(plan.steps[2].launch, 368), 128u);
  EXPECT_EQ(plan.steps[3].launch.kernel->symbol, "_ZN5aiter30fmha_bwd_hd192_dq_convert_fp16E");
  EXPECT_EQ(u32_at(plan.steps[3].launch, 144), 192u);
  EXPECT_EQ(plan.workspace.pieces[1].bytes, 4 * 8 * 512 * 192);
}

TEST(BackwardPlan, WorkspaceBoundCoversBothArchs) {
  Case c;
  c.sq = c.sk = 512;
  c.hq = 16;
  c.hk = 2;
  const auto p = ops::attn_problem(params(c).bwd);
  ASSERT_TRUE(p.ok());
  int64_t most = 0;
  for (Arch a : {Arch::kGfx942, Arch::kGfx950}) {
    c.arch = a;
    most = std::max(most, plan_bwd(c).workspace.total);
  }
  EXPECT_EQ(ops::flash_attn_bwd_asm_workspace_bytes(*p), most);
  // Neither arch: 0 (a bias).
  c.bias = true;
  EXPECT_EQ(ops::flash_attn_bwd_asm_workspace_bytes(*ops::attn_problem(params(c).bwd)), 0);
  // gfx942 only (d 160, a32); gfx950 only (deterministic one block).
  Case g;
  g.d = g.dv = 160;
  EXPECT_EQ(ops::flash_attn_bwd_asm_workspace_bytes(*ops::attn_problem(params(g).bwd)),
            plan_bwd(g).workspace.total);
  Case h;
  h.arch = Arch::kGfx950;
  h.det = true;
  EXPECT_EQ(ops::flash_attn_bwd_asm_workspace_bytes(*ops::attn_problem(params(h).bwd)),
            plan_bwd(h).workspace.total);
}

// ---- AITER's own choices, where its hash order does not decide
// -----------------------------------

TEST(AiterChoices, AgreeWhereOrderDoesNotMatter) {
  // ABI-AND-RULES.md's forward example row.
  Case f;
  f.causal = true;
  f.sq = f.sk = 4096;
  EXPECT_EQ(plan_fwd(f).steps[0].launch.kernel->code_object,
            "fmha_v3_fwd/MI300/fwd_hd128_bf16_causal_rtna.co");
  // Section 5.3: with AITER's defaults (deterministic, a32) gfx942 never runs its v3 backward,
  // gfx950 only for seqlen_k <= 256 and 64 < d <= 128, as a16.
  for (int64_t sk : {128, 256, 257, 4096}) {
    for (int64_t d : {64, 96, 128, 192}) {
      Case c;
      c.det = true;
      c.sq = 512;
      c.sk = sk;
      c.d = c.dv = d;
      EXPECT_FALSE(ops::FlashAttnBwdAsmTier::supports(params(c).bwd, c.target()).ok());
      c.arch = Arch::kGfx950;
      const bool want = sk <= 256 && d > 64 && d <= 128;
      EXPECT_EQ(ops::FlashAttnBwdAsmTier::supports(params(c).bwd, c.target()).ok(), want)
          << sk << " " << d;
      if (want) {
        EXPECT_EQ(plan_bwd(c).note_view()[2].value, 0);
      }
    }
  }
  // Python's np case: gfx942 hd128 a32, sq == sk a multiple of 192: the plain a32 kernel.
  Case n;
  n.sq = n.sk = 384;
  EXPECT_EQ(plan_bwd(n).steps[2].launch.kernel->symbol, "_ZN5aiter28fmha_bwd_hd128_bf16_a32_rtnaE");
  // Python's pssk case: d 64, a32.
  n.d = n.dv = 64;
  n.causal = true;
  EXPECT_EQ(plan_bwd(n).steps[2].launch.kernel->symbol,
            "_ZN5aiter42fmha_bwd_hd64_bf16_causal_br_a32_rtna_psskE");
  // hd64 a16 causal with sq == sk: the top-left kernel (AITER's 2 -> 1).
  n.a32 = false;
  EXPECT_EQ(plan_bwd(n).steps[2].launch.kernel->symbol,
            "_ZN5aiter34fmha_bwd_hd64_bf16_causal_a16_rtnaE");
}

// Where AITER's hash order decides (two superset rows, no exact one), ours is the stated rule.
TEST(AiterChoices, OrderSensitiveFollowTheStatedRule) {
  // gfx942 group mode, d 128, total_q == total_k == 384 (a multiple of 192): pssk = 0, pddv = 0;
  // the pssk_group and psskddv_group kernels both qualify; the fewer extras: pssk_group.
  Case c;
  c.varlen = true;
  c.b = 2;
  c.sq = c.sk = 192;
  EXPECT_EQ(plan_bwd(c).steps[4].launch.kernel->symbol,
            "_ZN5aiter39fmha_bwd_hd128_bf16_a32_rtna_pssk_groupE");
  // d 96 needs pddv: only psskddv_group.
  c.d = c.dv = 96;
  EXPECT_EQ(plan_bwd(c).steps[4].launch.kernel->symbol,
            "_ZN5aiter42fmha_bwd_hd128_bf16_a32_rtna_psskddv_groupE");
}

// ---- declines -----------------------------------------------------------------------------------

// gfx942 batch mode, the windows AITER's Python sends to CK (an independent check found our gate
// taking them): a window counts only when a bound is above 0, causal only by the flag.
TEST(Conformance, Gfx942BatchWindowsAsAitersPython) {
  struct W {
    bool causal;
    int64_t wl, wr, sq, sk, hq, hk;
    bool taken;
  };
  const W cases[] = {
      // Non-causal (-1, 0): with GQA or sq != sk, CK; with MHA, sq == sk % 64 == 0, d 128: np.
      {false, -1, 0, 512, 512, 16, 4, false},
      {false, -1, 0, 256, 512, 8, 8, false},
      {false, -1, 0, 512, 512, 8, 8, true},
      // (0, 0) and (0, -1): with GQA, CK; with MHA at s = 1000 (not a multiple of 64), CK.
      {false, 0, 0, 512, 512, 16, 4, false},
      {false, 0, -1, 512, 512, 16, 4, false},
      {false, 0, -1, 1000, 1000, 8, 8, false},
      {false, 0, 0, 1024, 1024, 8, 8, true},
      // What counts stays taken: causal, no mask, a real window (a32, d 128).
      {true, -1, -1, 1000, 1000, 16, 4, true},
      {false, -1, -1, 1000, 1000, 16, 4, true},
      {false, 64, -1, 1000, 1000, 16, 4, true},
  };
  for (const W& w : cases) {
    Case c;
    c.causal = w.causal;
    c.wl = w.wl;
    c.wr = w.wr;
    c.sq = w.sq;
    c.sk = w.sk;
    c.hq = w.hq;
    c.hk = w.hk;
    c.cvt = 0;
    const auto d = ops::FlashAttnBwdAsmTier::supports(params(c).bwd, c.target());
    EXPECT_EQ(d.ok(), w.taken) << "causal " << w.causal << " (" << w.wl << ", " << w.wr << ") sq "
                               << w.sq << " sk " << w.sk << " hq " << w.hq << " hk " << w.hk << ": "
                               << d.text();
    if (!w.taken) {
      EXPECT_NE(d.text().find("CK"), std::string::npos) << d.text();
    }
  }
}

// The portable forward on sm_90 takes a wgmma kernel for every 16-bit call in the 128 head-dim
// bucket (ops/attention_portable.hpp): the plain one for batch calls with masks and windows only,
// the features one for varlen, bias, ALiBi or dropout; fp8, the 64 and 256 buckets and every
// other arch plan the mma.sync / MFMA kernel.
TEST(PortablePlan, Sm90WgmmaForwardRule) {
  const auto fwd_symbol = [](const Case& c) {
    K::Plan plan;
    ops::FlashAttnFwdPortableTier::plan(params(c).fwd, c.target(), plan);
    EXPECT_EQ(plan.count, 1u);
    return std::string(plan.steps[0].launch.kernel->symbol);
  };
  Case c;
  c.arch = Arch::kSm90;
  c.hq = 8;
  c.hk = 2;
  c.sq = 300;
  c.causal = true;
  EXPECT_EQ(fwd_symbol(c), "jax_aiter_attn_fwd_wg_bf16_d128");
  {
    K::Plan plan;
    ops::FlashAttnFwdPortableTier::plan(params(c).fwd, c.target(), plan);
    const K::Launch& l = plan.steps[0].launch;
    EXPECT_EQ(l.grid, (K::Dim3{3, 8, 1}));  // 128 query rows a block
    EXPECT_EQ(l.block, (K::Dim3{384, 1, 1}));
    EXPECT_EQ(l.shared_bytes, static_cast<uint32_t>(K::attention::kWgSmemBytes));
    EXPECT_EQ(l.kernel->dynamic_shared, l.shared_bytes);
  }
  c.dtype = DType::kF16;
  c.causal = false;
  c.d = 96;
  EXPECT_EQ(fwd_symbol(c), "jax_aiter_attn_fwd_wg_f16_d128");
  c.d = 128;
  c.dv = 72;
  EXPECT_EQ(fwd_symbol(c), "jax_aiter_attn_fwd_wg_f16_d128");
  c = Case{};
  c.arch = Arch::kSm90;
  EXPECT_EQ(fwd_symbol(c), "jax_aiter_attn_fwd_wg_bf16_d128");
  const auto symbol_with = [&](auto&& change) {
    Case x = c;
    change(x);
    return fwd_symbol(x);
  };
  // Windows: the plain kernel's mask code.
  EXPECT_EQ(symbol_with([](Case& x) { x.wl = 16; }), "jax_aiter_attn_fwd_wg_bf16_d128");
  EXPECT_EQ(symbol_with([](Case& x) { x.wr = 16; }), "jax_aiter_attn_fwd_wg_bf16_d128");
  EXPECT_EQ(symbol_with([](Case& x) { x.wl = 7, x.wr = 3, x.dtype = DType::kF16; }),
            "jax_aiter_attn_fwd_wg_f16_d128");
  // Varlen, bias, ALiBi, dropout: the features kernel, with the same launch shape.
  EXPECT_EQ(symbol_with([](Case& x) { x.bias = true; }), "jax_aiter_attn_fwd_wg_feat_bf16_d128");
  EXPECT_EQ(symbol_with([](Case& x) { x.alibi = true; }), "jax_aiter_attn_fwd_wg_feat_bf16_d128");
  EXPECT_EQ(symbol_with([](Case& x) { x.dropout = true; }), "jax_aiter_attn_fwd_wg_feat_bf16_d128");
  EXPECT_EQ(symbol_with([](Case& x) { x.varlen = true, x.dtype = DType::kF16; }),
            "jax_aiter_attn_fwd_wg_feat_f16_d128");
  EXPECT_EQ(symbol_with([](Case& x) { x.alibi = x.dropout = x.causal = true, x.wl = 9; }),
            "jax_aiter_attn_fwd_wg_feat_bf16_d128");
  {
    Case x = c;
    x.varlen = true;
    x.b = 3;
    x.sq = 200;  // max_seqlen_q: the grid's rows
    x.total_q = 450;
    K::Plan plan;
    ops::FlashAttnFwdPortableTier::plan(params(x).fwd, x.target(), plan);
    const K::Launch& l = plan.steps[0].launch;
    EXPECT_EQ(l.grid, (K::Dim3{2, 8, 3}));
    EXPECT_EQ(l.block, (K::Dim3{384, 1, 1}));
    EXPECT_EQ(l.shared_bytes, static_cast<uint32_t>(K::attention::kWgSmemBytes));
    EXPECT_EQ(l.kernel->dynamic_shared, l.shared_bytes);
  }
  const auto declined = [&](auto&& change) {
    return symbol_with(change).find("_wg_") == std::string::npos;
  };
  EXPECT_TRUE(declined([](Case& x) { x.arch = Arch::kGfx942; }));
  EXPECT_TRUE(declined([](Case& x) { x.arch = Arch::kHost; }));
  EXPECT_TRUE(declined([](Case& x) { x.arch = Arch::kHost, x.dropout = true; }));
  EXPECT_TRUE(declined([](Case& x) { x.d = x.dv = 64; }));
  EXPECT_TRUE(declined([](Case& x) { x.d = x.dv = 64, x.bias = true; }));
  EXPECT_TRUE(declined([](Case& x) { x.d = x.dv = 256; }));
  EXPECT_TRUE(declined([](Case& x) { x.d = 192; }));
  EXPECT_TRUE(declined([](Case& x) { x.dtype = DType::kF8E4M3FN; }));
  // A bias or ALiBi with a scale whose reciprocal overflows (the features kernel adds terms /
  // scale); without them any finite scale.
  EXPECT_TRUE(declined([](Case& x) { x.alibi = true, x.scale = 0.f; }));
  EXPECT_TRUE(declined([](Case& x) { x.bias = true, x.scale = -1e-39f; }));
  EXPECT_EQ(symbol_with([](Case& x) { x.bias = true, x.scale = -1e-30f; }),
            "jax_aiter_attn_fwd_wg_feat_bf16_d128");
  EXPECT_EQ(symbol_with([](Case& x) { x.dropout = true, x.scale = 0.f; }),
            "jax_aiter_attn_fwd_wg_feat_bf16_d128");
  EXPECT_EQ(symbol_with([](Case& x) { x.scale = 0.f; }), "jax_aiter_attn_fwd_wg_bf16_d128");
}

// The portable backward on sm_90 runs the wgmma dkdv and dq passes for exactly the calls the
// wgmma forward takes (attn_bwd_takes_wgmma), after the same pre pass; every other call and arch
// plans the mma.sync / MFMA passes.
TEST(PortablePlan, Sm90WgmmaBackwardRule) {
  const auto bwd_symbols = [](const Case& c) {
    K::Plan plan;
    plan.workspace_base = reinterpret_cast<void*>(kWs);
    ops::FlashAttnBwdPortableTier::plan(params(c).bwd, c.target(), plan);
    EXPECT_EQ(plan.count, 3u);
    std::vector<std::string> names;
    for (size_t i = 0; i < plan.count; ++i) {
      names.emplace_back(plan.steps[i].launch.kernel->symbol);
    }
    return names;
  };
  Case c;
  c.arch = Arch::kSm90;
  c.hq = 8;
  c.hk = 2;
  c.sq = 300;
  c.sk = 520;
  c.causal = true;
  EXPECT_EQ(bwd_symbols(c), (std::vector<std::string>{"jax_aiter_attn_bwd_pre_bf16",
                                                      "jax_aiter_attn_bwd_dkdv_wg_bf16_d128",
                                                      "jax_aiter_attn_bwd_dq_wg_bf16_d128"}));
  {
    K::Plan plan;
    plan.workspace_base = reinterpret_cast<void*>(kWs);
    ops::FlashAttnBwdPortableTier::plan(params(c).bwd, c.target(), plan);
    const K::Launch& dkdv = plan.steps[1].launch;
    EXPECT_EQ(dkdv.grid, (K::Dim3{5, 2, 1}));  // 128 keys a block, one per key head
    EXPECT_EQ(dkdv.block, (K::Dim3{384, 1, 1}));
    EXPECT_EQ(dkdv.shared_bytes, static_cast<uint32_t>(K::attention::kWgDkdvSmemBytes));
    EXPECT_EQ(dkdv.kernel->dynamic_shared, dkdv.shared_bytes);
    const K::Launch& dq = plan.steps[2].launch;
    EXPECT_EQ(dq.grid, (K::Dim3{3, 8, 1}));  // 128 query rows a block
    EXPECT_EQ(dq.block, (K::Dim3{384, 1, 1}));
    EXPECT_EQ(dq.shared_bytes, static_cast<uint32_t>(K::attention::kWgDqSmemBytes));
    EXPECT_EQ(dq.kernel->dynamic_shared, dq.shared_bytes);
    // The same argument bytes as the mma.sync passes (one ABI).
    EXPECT_EQ(dkdv.args.size, sizeof(K::AttnBwdArgs));
    EXPECT_EQ(dq.args.size, sizeof(K::AttnBwdArgs));
  }
  c.dtype = DType::kF16;
  c.causal = false;
  c.d = 96;
  EXPECT_EQ(bwd_symbols(c)[1], "jax_aiter_attn_bwd_dkdv_wg_f16_d128");
  EXPECT_EQ(bwd_symbols(c)[2], "jax_aiter_attn_bwd_dq_wg_f16_d128");
  c = Case{};
  c.arch = Arch::kSm90;
  const auto declined = [&](auto&& change) {
    Case x = c;
    change(x);
    const std::vector<std::string> n = bwd_symbols(x);
    return n[1].find("_wg_") == std::string::npos && n[2].find("_wg_") == std::string::npos;
  };
  EXPECT_FALSE(declined([](Case&) {}));
  EXPECT_TRUE(declined([](Case& x) { x.arch = Arch::kGfx942; }));
  EXPECT_TRUE(declined([](Case& x) { x.arch = Arch::kHost; }));
  EXPECT_TRUE(declined([](Case& x) { x.d = x.dv = 64; }));
  EXPECT_TRUE(declined([](Case& x) { x.d = x.dv = 256; }));
  EXPECT_TRUE(declined([](Case& x) { x.bias = true; }));
  EXPECT_TRUE(declined([](Case& x) { x.alibi = true; }));
  EXPECT_TRUE(declined([](Case& x) { x.dropout = true; }));
  EXPECT_TRUE(declined([](Case& x) { x.varlen = true; }));
  EXPECT_TRUE(declined([](Case& x) { x.wl = 16; }));
  EXPECT_TRUE(declined([](Case& x) { x.wr = 16; }));
}

TEST(Declines, SayWhy) {
  const auto fwd_why = [](const Case& c) {
    return ops::FlashAttnFwdAsmTier::supports(params(c).fwd, c.target()).text();
  };
  const auto bwd_why = [](const Case& c) {
    return ops::FlashAttnBwdAsmTier::supports(params(c).bwd, c.target()).text();
  };
  Case c;
  c.arch = Arch::kSm90;
  EXPECT_NE(fwd_why(c).find("asm_arch"), std::string::npos);
  EXPECT_NE(bwd_why(c).find("asm_arch"), std::string::npos);
  c.arch = Arch::kGfx942;
  c.dtype = DType::kF16;
  EXPECT_EQ(fwd_why(c), "AITER's v3 forward takes bf16 or fp8 (q is f16)");
  // fp8: the arch's format, head dims, a power-of-two group, gfx942's one rounding.
  c.dtype = DType::kF8E4M3FN;
  EXPECT_NE(fwd_why(c).find("gfx942 reads f8_e4m3fnuz"), std::string::npos) << fwd_why(c);
  c.dtype = DType::kF8E4M3FNUZ;
  EXPECT_EQ(fwd_why(c), "");
  c.cvt = 0;
  EXPECT_NE(fwd_why(c).find("bf16_cvt 1) only, got bf16_cvt 0"), std::string::npos) << fwd_why(c);
  c.cvt = 1;
  c.d = c.dv = 256;
  EXPECT_EQ(fwd_why(c),
            "AITER's v3 fp8 forward takes head dims (128, 128), and (256, 256) on gfx950, got "
            "(256, 256)");
  c.arch = Arch::kGfx950;
  c.dtype = DType::kF8E4M3FN;
  EXPECT_EQ(fwd_why(c), "");
  c.hk = 2;
  c.hq = 6;
  EXPECT_NE(fwd_why(c).find("power-of-two hq / hk"), std::string::npos) << fwd_why(c);
  c = Case{};
  c.dtype = DType::kBF16;
  c.sq = 128;
  EXPECT_NE(fwd_why(c).find("got 128"), std::string::npos) << fwd_why(c);
  c.sq = 512;
  c.d = c.dv = 96;
  EXPECT_EQ(fwd_why(c),
            "AITER's v3 forward takes head dims (128, 128) or (192, 128), got (96, 96)");
  c.d = c.dv = 128;
  c.wl = 16;
  EXPECT_NE(fwd_why(c).find("sliding window"), std::string::npos);
  c.wl = -1;
  c.det = true;
  EXPECT_NE(bwd_why(c).find("not deterministic"), std::string::npos);
  c.det = false;
  c.sq = 16;
  EXPECT_NE(bwd_why(c).find("seqlen_q <= 16"), std::string::npos) << bwd_why(c);
  // 32-bit fields: q's batch stride 2^20 * 32 * 128 * 2 bytes.
  Case big;
  big.sq = int64_t{1} << 20;
  big.sk = 1024;
  big.hq = big.hk = 32;
  EXPECT_NE(fwd_why(big).find("32-bit"), std::string::npos) << fwd_why(big);
  EXPECT_NE(bwd_why(big).find("32-bit"), std::string::npos) << bwd_why(big);
  // (192, 128): a key head's rows past 4 GiB.
  Case wide;
  wide.sq = 1024;
  wide.sk = int64_t{1} << 20;
  wide.hk = wide.hq = 16;
  wide.d = 192;
  EXPECT_NE(fwd_why(wide).find("2^32"), std::string::npos) << fwd_why(wide);
}

TEST(Parts, Mi308ChipIds) {
  ja::Target t{ja::BackendKind::kHip, Arch::kGfx942, 80, 0};
  for (uint32_t id : {0x74a2u, 0x74a8u, 0x74b6u, 0x74bcu}) {
    t.pci_chip_id = id;
    EXPECT_EQ(K::aiter_fmha_v3::fwd_part(t), K::aiter_fmha_v3::kPartMi308) << id;
  }
  for (uint32_t id : {0u, 0x74a1u, 0x74a5u, 0x74b5u}) {
    t.pci_chip_id = id;
    EXPECT_EQ(K::aiter_fmha_v3::fwd_part(t), K::aiter_fmha_v3::kPartMi300) << id;
  }
  t.arch = Arch::kGfx950;
  t.pci_chip_id = 0x74a2;
  EXPECT_EQ(K::aiter_fmha_v3::fwd_part(t), K::aiter_fmha_v3::kPartAny);
}

// ---- the kernels' own metadata names ------------------------------------------------------------

#ifdef JAX_AITER_TEST_KERNARG_CHECK
// The declared arguments of each kind of kernel (shared/aiter-facts/kernel-arguments.txt, from the
// code objects' metadata at e4048607a535), "name@offset:size", pads between left out: here they
// are put back, as the metadata has them (4-byte entries named "pad").
ja::runtime::KernelMetadata metadata(std::string_view symbol, uint32_t segment,
                                     std::string_view args) {
  ja::runtime::KernelMetadata md;
  md.name = std::string(symbol);
  md.symbol = md.name + ".kd";
  md.kernarg_segment_size = segment;
  uint32_t at = 0;
  const auto pad_to = [&](uint32_t end) {
    for (; at < end; at += 4) md.args.push_back({"pad", at, 4, "by_value"});
  };
  size_t i = 0;
  while (i < args.size()) {
    size_t j = args.find(' ', i);
    if (j == std::string_view::npos) j = args.size();
    const std::string_view a = args.substr(i, j - i);
    const size_t amp = a.find('@'), colon = a.find(':');
    const uint32_t off = uint32_t(std::stoul(std::string(a.substr(amp + 1, colon - amp - 1))));
    const uint32_t size = uint32_t(std::stoul(std::string(a.substr(colon + 1))));
    pad_to(off);
    md.args.push_back(
        {std::string(a.substr(0, amp)), off, size, size == 8 ? "global_buffer" : "by_value"});
    at = off + size;
    i = j + 1;
  }
  pad_to(segment);
  return md;
}

const K::KernelInfo& kernel_named(std::span<const K::AiterFmhaBwdRow> rows, std::string_view sym) {
  for (const auto& r : rows) {
    if (r.kernel.symbol == sym) return r.kernel;
  }
  ADD_FAILURE() << "no row " << sym;
  return rows[0].kernel;
}

TEST(Metadata, OurFieldsFeedEveryDeclaredArgument) {
  using ja::runtime::check_kernel_arguments;
  const std::string_view fwd =
      "R@0:8 Q@16:8 K@32:8 V@48:8 LSE@64:8 scalar@80:4 seq_len@96:4 Seqs@112:4 Ts@128:4 "
      "Hs@144:4 Bs@160:4 gqa@176:4 k_Seqs@192:4 k_Hs@208:4 k_Bs@224:4 msk_opt@240:4 lse@256:4 "
      "kv_seq_len@272:4 qk_head_dim@288:4 v_head_dim@304:4 q_head_num@320:4 v_Seqs@336:4 "
      "v_Hs@352:4 v_Bs@368:4 r_Seqs@384:4 r_Hs@400:4 r_Bs@416:4 ptr_qseq@432:8 ptr_kseq@448:8 "
      "lse_Hs@464:4 ptr_qseq_padding@480:8 ptr_kseq_padding@496:8";
  const std::string_view odo =
      "O@0:8 dO@16:8 D@32:8 Hs_o@48:4 BAs_o@64:4 Seqs_o@80:4 Hs_do@96:4 BAs_do@112:4 "
      "Seqs_do@128:4 Hs_d@144:4 BAs_d@160:4 Seqs_d@176:4 seqlen_q@192:4 head_dim@208:4 "
      "ptr_seqstart_q@224:4 ptr_seqstart_q_padded@240:4";
  const std::string_view post =
      "dQ_acc@0:8 dQ@16:8 Hs_dQ_acc@32:4 BAs_dQ_acc@48:4 Seqs_dQ_acc@64:4 Hs_dQ@80:4 "
      "BAs_dQ@96:4 Seqs_dQ@112:4 seqlen_q@128:4 head_dim@144:4 ptr_seqstart_q@160:4 "
      "ptr_seqstart_q_padded@176:4";
  const std::string main_common =
      "dQ@0:8 dK@16:8 dV@32:8 Q@48:8 K@64:8 V@80:8 dO@96:8 Lse@112:8 D@128:8 scalar@144:4 "
      "log2e@160:4 seqlen_q@176:4 Ts@192:4 Hs_q@208:4 BAs_q@224:4 Seqs_q@240:4 ratio@256:4 "
      "Hs_k@272:4 BAs_k@288:4 Seqs_k@304:4 Seqs_dk@320:4 seqlen_k@336:4 head_dim_q@352:4 ";
  const std::string main_tail =
      "nhead_q@384:4 Hs_v@400:4 BAs_v@416:4 Seqs_v@432:4 Hs_do@448:4 BAs_do@464:4 "
      "Seqs_do@480:4 Hs_dk@496:4 BAs_dk@512:4 Hs_dv@528:4 BAs_dv@544:4 Seqs_dv@560:4 "
      "Hs_lsed@576:4 ";
  const std::string main942 = main_common + "head_dim_v@368:4 " + main_tail +
                              "ptr_qseq@592:8 ptr_kseq@608:8 ptr_qseq_padded@624:8 "
                              "ptr_kseq_padded@640:8 max_seq_len_dq@656:4 mask_x@672:4 "
                              "mask_y@688:4";
  const std::string main950 = main_common + "head_dim_k@368:4 " + main_tail +
                              "ptr_seqstart_q@592:4 ptr_seqstart_k@608:4 "
                              "ptr_seqstart_q_padded@624:4 ptr_seqstart_k_padded@640:4 "
                              "max_seq_len_dq@656:4 mask_x@672:4 mask_y@688:4";
  // The fp8 rows' (AITER's fwd_hd*_fp8*.co on each arch): 656 bytes, with the descales.
  const std::string fwd_fp8_942 =
      std::string(fwd) +
      " ptr_descale_q@512:8 ptr_descale_k@528:8 ptr_descale_v@544:8 dq_Bs@560:4 dq_Hs@576:4 "
      "dk_Bs@592:4 dk_Hs@608:4 dv_Bs@624:4 dv_Hs@640:4";
  const std::string_view fwd_fp8_950 =
      "ptr_o@0:8 ptr_q@16:8 ptr_k@32:8 ptr_v@48:8 ptr_lse@64:8 scalar@80:4 s_seq_len@96:4 "
      "s_Seqs@112:4 s_Ts@128:4 s_Hs@144:4 s_Bs@160:4 s_gqa@176:4 s_k_Seqs@192:4 s_k_Hs@208:4 "
      "s_k_Bs@224:4 s_opt@240:4 s_lse@256:4 s_kv_seq_len@272:4 s_qk_head_dim@288:4 "
      "s_v_head_dim@304:4 s_q_head_num@320:4 s_v_Seqs@336:4 s_v_Hs@352:4 s_v_Bs@368:4 "
      "s_o_Seqs@384:4 s_o_Hs@400:4 s_o_Bs@416:4 ptr_qseq@432:8 ptr_kseq@448:8 s_lse_Hs@464:4 "
      "ptr_qseq_padding@480:8 ptr_kseq_padding@496:8 ptr_q_descale@512:8 ptr_k_descale@528:8 "
      "ptr_v_descale@544:8 s_descale_q_Bs@560:4 s_descale_q_Hs@576:4 s_descale_k_Bs@592:4 "
      "s_descale_k_Hs@608:4 s_descale_v_Bs@624:4 s_descale_v_Hs@640:4";
  int fp8_rows = 0;
  for (const K::AiterFmhaFwdRow& r : K::kAiterFmhaFwdRows) {
    const bool fp8 = r.dtype != DType::kBF16;
    fp8_rows += fp8;
    const auto md = !fp8                      ? metadata(r.kernel.symbol, 512, fwd)
                    : r.arch == Arch::kGfx942 ? metadata(r.kernel.symbol, 656, fwd_fp8_942)
                                              : metadata(r.kernel.symbol, 656, fwd_fp8_950);
    const ja::Status st = check_kernel_arguments(md, r.kernel);
    EXPECT_TRUE(st.ok()) << r.kernel.code_object << ": " << st.message();
  }
  EXPECT_EQ(fp8_rows, 16);
  for (const auto& r : K::kAiterFmhaBwdOdoRows) {
    const ja::Status st = check_kernel_arguments(metadata(r.kernel.symbol, 256, odo), r.kernel);
    EXPECT_TRUE(st.ok()) << r.kernel.code_object << ": " << st.message();
  }
  for (std::span<const K::AiterFmhaBwdRow> rows :
       {std::span<const K::AiterFmhaBwdRow>(K::kAiterFmhaBwdDqConvertRows),
        std::span<const K::AiterFmhaBwdRow>(K::kAiterFmhaBwdDqShuffleRows)}) {
    for (const auto& r : rows) {
      const ja::Status st = check_kernel_arguments(metadata(r.kernel.symbol, 192, post), r.kernel);
      EXPECT_TRUE(st.ok()) << r.kernel.code_object << ": " << st.message();
    }
  }
  for (const auto& r : K::kAiterFmhaBwdDqdkdvRows) {
    const std::string& args = r.arch == Arch::kGfx942 ? main942 : main950;
    const ja::Status st = check_kernel_arguments(metadata(r.kernel.symbol, 704, args), r.kernel);
    EXPECT_TRUE(st.ok()) << r.kernel.code_object << ": " << st.message();
    // The other arch's names do not match ours.
    const std::string& other = r.arch == Arch::kGfx942 ? main950 : main942;
    EXPECT_FALSE(check_kernel_arguments(metadata(r.kernel.symbol, 704, other), r.kernel).ok());
  }
  // A 4-byte pointer declaration must be followed by padding up to the pointer's end.
  auto md = metadata("_ZN5aiter23fmha_bwd_hd128_odo_bf16E", 256, odo);
  const K::KernelInfo& k = kernel_named(K::kAiterFmhaBwdOdoRows, md.name);
  for (auto& a : md.args) {
    if (a.offset == 228) a.name = "ptr_hi";  // no longer padding
  }
  const ja::Status st = check_kernel_arguments(md, k);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("ptr_seqstart_q"), std::string::npos) << st.message();
}
#endif

}  // namespace
