// What the host twins of AITER's fused-MoE families (host_twins/aiter_fmoe.hpp, the one-stage fmoe
// kernels; host_twins/aiter_fmoe_2stages.hpp, the stage-1 kernels) compute alike: x[t] . w1[e][n]
// dequantized, over w1 [E, 2I, H] shuffled (16, 16) per expert (aiter_fmoe::shuffled_offset), in
// the quantization of the kernel's list (per-token or 128 x 128 block scales, 1-byte x or bf16),
// summed in f32 in k order; and the activation.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/host_twins/e4m3_values.hpp"
#include "jax_aiter/kernels/shared/aiter_fmoe.h"

namespace jax_aiter::host_twins::fmoe_gate_up {

namespace L = kernels::aiter_fmoe;

// silu, or erf-gelu (AITER's reference: torch's F.gelu).
inline float act(bool gelu, float g) {
  if (!gelu) return g / (1.f + std::exp(-g));
  return 0.5f * g * (1.f + std::erf(g * 0.70710678f));
}

// The operands of x . w1 as a kernel's argument struct gives them.
struct Reader {
  bool int8 = false;    // x and weights int8 (else fp8 of *fp8's format)
  bool blocks = false;  // 128 x 128 weight blocks, x in 1 x 128 (scales [H/128, T])
  bool x_bf16 = false;  // x bf16 (unscaled; the a16 block-scale kernels)
  const std::array<float, 256>* fp8 = nullptr;
  const void *x = nullptr, *w = nullptr, *x_scale = nullptr, *w_scale = nullptr;
  uint32_t x_stride = 0, w_expert = 0, w_scale_expert = 0, hidden = 0, tokens = 0;

  // A weight (or 1-byte x) byte as a float.
  float weight(uint8_t b) const { return int8 ? float(int8_t(b)) : (*fp8)[b]; }
  // x[t][k] as a float (before its scale).
  float xv(uint32_t t, uint32_t k) const {
    const auto* row = static_cast<const std::byte*>(x) + size_t{t} * x_stride;
    if (x_bf16) return bf16_to_float(reinterpret_cast<const uint16_t*>(row)[k]);
    return weight(static_cast<uint8_t>(row[k]));
  }
  // An expert's f32 scales at float index i.
  static float scale(const void* base, uint32_t expert_bytes, uint32_t e, size_t i) {
    return reinterpret_cast<const float*>(static_cast<const std::byte*>(base) +
                                          size_t{e} * expert_bytes)[i];
  }

  // x[t] . w1[e][n], dequantized.
  float operator()(uint32_t t, uint32_t e, uint32_t n) const {
    const auto* we = static_cast<const uint8_t*>(w) + size_t{e} * w_expert;
    if (!blocks) {
      float s = 0.f;
      for (uint32_t k = 0; k < hidden; ++k) {
        s += xv(t, k) * weight(we[L::shuffled_offset(n, k, hidden)]);
      }
      return s * scale(x_scale, 0, 0, t) * scale(w_scale, w_scale_expert, e, n);
    }
    const uint32_t kb_count = hidden / L::kScaleBlock;
    float total = 0.f;
    for (uint32_t kb = 0; kb < kb_count; ++kb) {
      float s = 0.f;
      for (uint32_t k = kb * L::kScaleBlock; k < (kb + 1) * L::kScaleBlock; ++k) {
        s += xv(t, k) * weight(we[L::shuffled_offset(n, k, hidden)]);
      }
      const float xs = x_bf16 ? 1.f : scale(x_scale, 0, 0, size_t{kb} * tokens + t);
      total +=
          s * xs * scale(w_scale, w_scale_expert, e, size_t{n / L::kScaleBlock} * kb_count + kb);
    }
    return total;
  }
};

// The reader of a fmoe kernel's x . w1 from its argument struct (the one- and two-stage structs
// name these fields alike).
template <typename Args>
Reader reader_of(const Args& a, bool int8, bool blocks, bool x_bf16, bool fnuz) {
  return Reader{.int8 = int8,
                .blocks = blocks,
                .x_bf16 = x_bf16,
                .fp8 = &e4m3_values(fnuz),
                .x = a.X.value,
                .w = a.GU.value,
                .x_scale = a.XQ.value,
                .w_scale = a.GUQ.value,
                .x_stride = a.Xs.value,
                .w_expert = a.eGUs.value,
                .w_scale_expert = a.eGUQs.value,
                .hidden = a.dim.value,
                .tokens = a.token_cnt.value};
}

}  // namespace jax_aiter::host_twins::fmoe_gate_up
