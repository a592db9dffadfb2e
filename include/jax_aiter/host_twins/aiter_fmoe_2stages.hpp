// Host twins of AITER's two-stage fused-MoE stage-1 kernels (kernels/aiter/fmoe_2stages.hpp): one
// per row, reading the very bytes the plan packed (AITER's 368-byte struct; a wide row's
// total_tgs and ps_deno are not read) and covering exactly the work its grid gives it, so a wrong
// stride, scale stride, grid, activation, weight pointer or memset in a plan shows up as a wrong or
// unwritten output.
//
// The contract, as the twins honour it (AITER at e4048607a535, csrc/py_itfs_cu/asm_moe_2stage.cu
// and aiter/fused_moe.py fused_moe_2stages / asm_stage1, which allocate and read the output):
//  - workgroup (x, y) of the grid (ceil(I / tile_n), sorted blocks) takes inter columns
//    [x tile_n, +tile_n) of rows [y tile_m, +tile_m) of STP, expert SEP[y]; blocks at or past
//    num_valid_ids[0] rows are skipped, and so are rows whose token (id & 0xffffff) is >= T;
//  - per row (token t, slot k = id >> 24): a_j = act(x[t] . w1[e][j]) * (x[t] . w1[e][I + j])
//    (x . w1 dequantized and summed in f32 as host_twins/fmoe_gate_up.hpp; act silu or erf-gelu
//    by the struct's activation field), times SW[row] for the doweight rows;
//  - per-token lists: out[t][k][j] = bf16(a_j), out rows Os bytes apart, slots I x 2;
//  - block scales: each 128 columns of a_j quantized to fp8 as jax_aiter.quant.quantize_fp8_blocks
//    does (scale = max |a| / the format's max, 1 for an all-zero block; q = a / scale rounded to
//    nearest even), q at out[t][k][j] (1 byte), the scale f32 at float index
//    t (topk I / 128) + k (I / 128) + j / 128 of the region from byte T Os on. AITER's kernels
//    keep their own rounding there; what the twins fix is the layout.
// The fp8 format is the first pad byte of the topk slot (aiter_fmoe::kFormatFnuz).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/host_twins/fmoe_gate_up.hpp"
#include "jax_aiter/kernels/aiter/fmoe_2stages.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/runtime/host.hpp"

namespace jax_aiter::host_twins {

namespace aiter_fmoe_2stages_detail {

namespace L = kernels::aiter_fmoe;
namespace L2 = kernels::aiter_fmoe_2stages;
using kernels::AiterFmoe2StagesQuant;
using kernels::AiterFmoe2StagesRow;

inline void run(const AiterFmoe2StagesRow& r, const kernels::KernelArgs& packed,
                kernels::Dim3 grid) {
  const auto a = packed.unpack<kernels::AiterFmoe2StagesArgs>();  // the wide struct starts alike
  const bool fnuz = a.topk.pad[0] == std::byte{L::kFormatFnuz};
  const bool blocks = r.quant == AiterFmoe2StagesQuant::kBlockscaleFp8;
  const fmoe_gate_up::Reader gate_up = fmoe_gate_up::reader_of(
      a, r.quant == AiterFmoe2StagesQuant::kPertokenInt8, blocks, false, fnuz);
  const uint32_t tokens = a.token_cnt.value, inter = a.hidden_dim.value, topk = a.topk.value;
  const bool gelu = a.activation.value == L2::kGelu;
  const auto valid = static_cast<uint32_t>(static_cast<const int32_t*>(a.XC.value)[0]);
  const auto* ids = static_cast<const int32_t*>(a.STP.value);
  const auto* experts = static_cast<const int32_t*>(a.SEP.value);
  const auto* weights = static_cast<const float*>(a.SW.value);
  auto* out = static_cast<std::byte*>(a.O.value);
  auto* scales = reinterpret_cast<float*>(out + size_t{tokens} * a.Os.value);
  const MiniFloat& format = fnuz ? kE4M3FNUZFormat : kE4M3FNFormat;
  const float fmax = fnuz ? 240.f : 448.f;
  const auto m = static_cast<uint32_t>(r.tile_m), width = static_cast<uint32_t>(r.tile_n);
  std::vector<float> h(width);
  for (uint32_t y = 0; y < grid.y; ++y) {
    if (size_t{y} * m >= valid) continue;
    const auto e = static_cast<uint32_t>(experts[y]);
    for (uint32_t x = 0; x < grid.x; ++x) {
      const uint32_t j0 = x * width, j1 = std::min(inter, j0 + width);
      if (j0 >= j1) continue;
      for (uint32_t i = 0; i < m; ++i) {
        const size_t at = size_t{y} * m + i;
        const auto t = static_cast<uint32_t>(L::sorted_token(ids[at]));
        const auto k = static_cast<uint32_t>(L::sorted_slot(ids[at]));
        if (t >= tokens || k >= topk) continue;
        const float w = r.doweight ? weights[at] : 1.f;
        for (uint32_t j = j0; j < j1; ++j) {
          h[j - j0] = fmoe_gate_up::act(gelu, gate_up(t, e, j)) * gate_up(t, e, inter + j) * w;
        }
        std::byte* row = out + size_t{t} * a.Os.value;
        if (!blocks) {
          auto* o = reinterpret_cast<uint16_t*>(row) + size_t{k} * inter;
          for (uint32_t j = j0; j < j1; ++j) o[j] = float_to_bf16(h[j - j0]);
          continue;
        }
        auto* o = reinterpret_cast<uint8_t*>(row) + size_t{k} * inter;
        for (uint32_t b0 = j0; b0 < j1; b0 += L2::kScaleBlock) {
          const uint32_t b1 = std::min(j1, b0 + L2::kScaleBlock);
          float amax = 0.f;
          for (uint32_t j = b0; j < b1; ++j) amax = std::max(amax, std::fabs(h[j - j0]));
          const float s = amax > 0.f ? amax / fmax : 1.f;
          for (uint32_t j = b0; j < b1; ++j) {
            o[j] = static_cast<uint8_t>(encode(format, std::clamp(h[j - j0] / s, -fmax, fmax)));
          }
          scales[(size_t{t} * topk + k) * (inter / L2::kScaleBlock) + b0 / L2::kScaleBlock] = s;
        }
      }
    }
  }
}

template <size_t kRow>
void aiter_fmoe_2stages(const kernels::KernelArgs& packed, kernels::Dim3 grid,
                        kernels::Dim3 /*block*/) {
  run(kernels::kAiterFmoe2StagesRows[kRow], packed, grid);
}

template <size_t... I>
bool register_rows(std::index_sequence<I...>) {
  (runtime::HostTwins::add(kernels::kAiterFmoe2StagesRows[I].kernel.symbol, &aiter_fmoe_2stages<I>),
   ...);
  return true;
}

inline const bool kRegistered =
    register_rows(std::make_index_sequence<std::size(kernels::kAiterFmoe2StagesRows)>{});

}  // namespace aiter_fmoe_2stages_detail

}  // namespace jax_aiter::host_twins
