// Host twins of AITER's one-stage fused-MoE ASM kernels (kernels/aiter/fmoe.hpp): one per row,
// reading the very bytes the plan packed (AITER's 448-byte struct; a wide row's a2, a2q are not
// read) and covering exactly the work its launch grid gives it, so a wrong stride, scale stride,
// grid, ps field or memset in a plan shows up as a wrong or unwritten output.
//
// The contract, as the twins honour it (AITER at e4048607a535, csrc/py_itfs_cu/asm_fmoe.cu; the
// work split of a persistent launch is our own, AITER's is inside its code objects):
//  - a work item is (inter tile n, sorted block b): rows [b subGU_m, +subGU_m) of STP/SW, expert
//    SEP[b], inter columns [n subGU_n, +subGU_n) (clipped to I). Blocks at or past
//    num_valid_ids[0] rows are skipped, and so are rows whose token (id & 0xffffff) is >= T;
//  - a plain grid (total_tgs == 0) is (ps_deno tiles, blocks): workgroup (x, y) takes (x, y); a
//    persistent one (total_tgs > 0) has workgroup g < total_tgs take tile g % ps_deno and blocks
//    g / ps_deno + i (total_tgs / ps_deno), i = 0, 1, ...; workgroups g >= total_tgs idle;
//  - per row (token t, slot k, weight w): over the tile's columns j, h_j = act(gate_j) * up_j,
//    gate_j = x[t] . w1[e][j], up_j = x[t] . w1[e][I + j] (dequantized as the row's list says,
//    summed in f32), act silu or erf-gelu (AITER's reference, torch's F.gelu); then
//    out[t][c] += w (sum over the tile's j of h_j w2[e][c][j]) (tkw1: w scales h_j instead), added
//    into the 16-bit out once per work item, which the plan zeroed (the kernels add atomically).
//    The kernels quantize h again for their 8-bit down GEMM; the twins keep it in f32.
// Operands through the struct: x rows Xs bytes apart, out rows Os; experts' w1 eGUs and w2 eDs
// bytes apart, each shuffled (16, 16) for K = dim (w1) or inter_dim (w2); the scales' experts
// eGUQs and eDQs bytes apart: per token x_scale [T], w1 [2I], w2 [H]; per block x [H/128, T]
// (token_cnt = T), w1 [2I/128, H/128], w2 [H/128, I/128]. The fp8 format is the first pad byte
// of the topk slot (aiter_fmoe::kFormatFnuz).
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
#include "jax_aiter/kernels/aiter/fmoe.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/runtime/host.hpp"

namespace jax_aiter::host_twins {

namespace aiter_fmoe_detail {

namespace L = kernels::aiter_fmoe;
using kernels::AiterFmoeAct;
using kernels::AiterFmoeQuant;
using kernels::AiterFmoeRow;

// One launch of row r: the struct's operands, decoded.
struct Call {
  const AiterFmoeRow& r;
  kernels::AiterFmoeArgs a;
  uint32_t tokens, hidden, inter, valid;
  fmoe_gate_up::Reader in;  // x . w1, dequantized

  float weight(uint8_t b) const { return in.weight(b); }
  static float scale(const void* base, uint32_t expert_bytes, uint32_t e, size_t i) {
    return fmoe_gate_up::Reader::scale(base, expert_bytes, e, i);
  }
  bool block_scaled() const { return in.blocks; }
  // x[t] . w1[e][n], dequantized.
  float gate_up(uint32_t t, uint32_t e, uint32_t n) const { return in(t, e, n); }

  // sum over j in [j0, j1) of h[j - j0] w2[e][c][j], dequantized.
  float down(uint32_t e, uint32_t c, uint32_t j0, uint32_t j1, const float* h) const {
    const auto* w = static_cast<const uint8_t*>(a.D.value) + size_t{e} * a.eDs.value;
    if (!block_scaled()) {
      float s = 0.f;
      for (uint32_t j = j0; j < j1; ++j)
        s += h[j - j0] * weight(w[L::shuffled_offset(c, j, inter)]);
      return s * scale(a.DQ.value, a.eDQs.value, e, c);
    }
    const uint32_t jb_count = inter / L::kScaleBlock;
    float total = 0.f;
    for (uint32_t jb = j0 / L::kScaleBlock; jb * L::kScaleBlock < j1; ++jb) {
      float s = 0.f;
      const uint32_t lo = std::max(j0, jb * L::kScaleBlock);
      const uint32_t hi = std::min(j1, (jb + 1) * L::kScaleBlock);
      for (uint32_t j = lo; j < hi; ++j)
        s += h[j - j0] * weight(w[L::shuffled_offset(c, j, inter)]);
      total += s * scale(a.DQ.value, a.eDQs.value, e, size_t{c / L::kScaleBlock} * jb_count + jb);
    }
    return total;
  }

  // One work item: inter tile n over sorted block b.
  void run(uint32_t n, uint32_t b) const {
    const uint32_t m = static_cast<uint32_t>(r.sub_m), w = static_cast<uint32_t>(r.sub_n);
    if (size_t{b} * m >= valid) return;
    const uint32_t j0 = n * w, j1 = std::min(inter, j0 + w);
    if (j0 >= j1) return;
    const auto* ids = static_cast<const int32_t*>(a.STP.value);
    const auto* weights = static_cast<const float*>(a.SW.value);
    const uint32_t e = static_cast<uint32_t>(static_cast<const int32_t*>(a.SEP.value)[b]);
    std::vector<float> h(j1 - j0);
    for (uint32_t i = 0; i < m; ++i) {
      const size_t at = size_t{b} * m + i;
      const uint32_t t = static_cast<uint32_t>(L::sorted_token(ids[at]));
      if (t >= tokens) continue;
      const float wt = weights[at];
      for (uint32_t j = j0; j < j1; ++j) {
        h[j - j0] = fmoe_gate_up::act(r.act == AiterFmoeAct::kGelu, gate_up(t, e, j)) *
                    gate_up(t, e, inter + j) * (r.tkw1 ? wt : 1.f);
      }
      auto* out =
          reinterpret_cast<uint16_t*>(static_cast<std::byte*>(a.O.value) + size_t{t} * a.Os.value);
      for (uint32_t c = 0; c < hidden; ++c) {
        const float v = down(e, c, j0, j1, h.data()) * (r.tkw1 ? 1.f : wt);
        if (r.out == DType::kBF16) {
          out[c] = float_to_bf16(bf16_to_float(out[c]) + v);
        } else {
          out[c] = float_to_f16(f16_to_float(out[c]) + v);
        }
      }
    }
  }
};

inline void run(const AiterFmoeRow& r, const kernels::KernelArgs& packed, kernels::Dim3 grid) {
  const auto a = packed.unpack<kernels::AiterFmoeArgs>();  // the wide struct starts alike
  const bool fnuz = a.topk.pad[0] == std::byte{L::kFormatFnuz};
  const bool block_scaled =
      r.quant == AiterFmoeQuant::kBlockscaleFp8 || r.quant == AiterFmoeQuant::kBlockscaleBf16;
  const fmoe_gate_up::Reader in =
      fmoe_gate_up::reader_of(a, r.quant == AiterFmoeQuant::kPertokenInt8, block_scaled,
                              r.quant == AiterFmoeQuant::kBlockscaleBf16, fnuz);
  const Call call{r,
                  a,
                  a.token_cnt.value,
                  a.dim.value,
                  a.inter_dim.value,
                  static_cast<uint32_t>(static_cast<const int32_t*>(a.XC.value)[0]),
                  in};
  const uint32_t total = a.total_tgs.value, deno = std::max<uint32_t>(a.ps_deno.value, 1);
  if (total == 0) {
    for (uint32_t y = 0; y < grid.y; ++y) {
      for (uint32_t x = 0; x < grid.x; ++x) call.run(x, y);
    }
    return;
  }
  const uint32_t blocks = (call.valid + r.sub_m - 1) / r.sub_m, stride = total / deno;
  for (uint32_t g = 0; g < std::min(grid.x, total); ++g) {
    for (uint32_t b = g / deno; b < blocks; b += stride) call.run(g % deno, b);
  }
}

template <size_t kRow>
void aiter_fmoe(const kernels::KernelArgs& packed, kernels::Dim3 grid, kernels::Dim3 /*block*/) {
  run(kernels::kAiterFmoeRows[kRow], packed, grid);
}

// A symbol in several rows (one per arch, or a flat kernel in two lists) runs the first row's
// twin: those rows compute alike (test_fused_moe_twin checks it).
template <size_t... I>
bool register_rows(std::index_sequence<I...>) {
  (runtime::HostTwins::add(kernels::kAiterFmoeRows[I].kernel.symbol, &aiter_fmoe<I>), ...);
  return true;
}

inline const bool kRegistered =
    register_rows(std::make_index_sequence<std::size(kernels::kAiterFmoeRows)>{});

}  // namespace aiter_fmoe_detail

}  // namespace jax_aiter::host_twins
