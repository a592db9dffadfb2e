// What the ABI twins of AITER's fused-MoE families (kernels_co/aiter_fmoe.twin.cpp, the one-stage
// fmoe kernels; kernels_co/aiter_fmoe_2stages.twin.cpp, the stage-1 kernels) compute alike, as
// their host twins do (include/jax_aiter/host_twins/fmoe_gate_up.hpp): the activation, e4m3 bytes
// both ways, and x[t] . w1[e][n] dequantized over w1 [E, 2I, H] shuffled (16, 16) per expert,
// summed in f32 in k order.
#pragma once

#include "jax_aiter/kernels/shared/aiter_fmoe.h"
#include "jax_aiter_device.hpp"

namespace ja::twin_fmoe {

namespace L = jax_aiter::kernels::aiter_fmoe;

inline constexpr float kNaN = __builtin_nanf("");

JA_DEVICE float exp_(float x) {
#if defined(__CUDACC__)
  return expf(x);
#else
  return __builtin_expf(x);
#endif
}

JA_DEVICE float rint_(float x) {
#if defined(__CUDACC__)
  return rintf(x);
#else
  return __builtin_rintf(x);
#endif
}

// erf(x) to about 1.2e-7 relative (Numerical Recipes' erfc, Chebyshev-fitted): no libcall needed
// on AMD (-nogpulib has no erff).
JA_DEVICE float erf_(float x) {
  const float z = x < 0.f ? -x : x;
  const float t = 1.f / (1.f + 0.5f * z);
  const float p =
      -z * z - 1.26551223f +
      t * (1.00002368f +
           t * (0.37409196f +
                t * (0.09678418f +
                     t * (-0.18628806f +
                          t * (0.27886807f +
                               t * (-1.13520398f +
                                    t * (1.48851587f + t * (-0.82215223f + t * 0.17087277f))))))));
  const float erfc = t * exp_(p);
  return x < 0.f ? erfc - 1.f : 1.f - erfc;
}

JA_DEVICE float act(int gelu, float g) {
  if (!gelu) return g / (1.f + exp_(-g));
  return 0.5f * g * (1.f + erf_(g * 0.70710678f));
}

// An e4m3 byte's value: e4m3fn (bias 7, S.1111.111 NaN) or e4m3fnuz (bias 8, 0x80 NaN).
JA_DEVICE float e4m3(uint32_t b, bool fnuz) {
  if (fnuz ? b == 0x80u : (b & 0x7fu) == 0x7fu) return kNaN;
  const uint32_t e = (b >> 3) & 0xfu, m = b & 7u;
  const int bias = fnuz ? 8 : 7;
  const float v = e == 0
                      ? static_cast<float>(m) * (fnuz ? 0x1p-10f : 0x1p-9f)
                      : bits_to_float(((e + 127u - static_cast<uint32_t>(bias)) << 23) | (m << 20));
  return (b & 0x80u) ? -v : v;
}

// The e4m3 byte nearest v (ties to even), for |v| within the format's finite range; 0 for +-0.
JA_DEVICE uint32_t e4m3_encode(float v, bool fnuz) {
  const uint32_t sign = v < 0.f ? 0x80u : 0u;
  const float a = v < 0.f ? -v : v;
  if (!(a > 0.f)) return 0u;
  const int min_exp = fnuz ? -7 : -6;  // the smallest normal's exponent (1 - bias)
  int e = static_cast<int>((float_to_bits(a) >> 23) & 0xffu) - 127;
  if (e < min_exp) e = min_exp;  // subnormal range: fixed quantum
  const float quantum = bits_to_float(static_cast<uint32_t>(e - 3 + 127) << 23);
  const float r = rint_(a / quantum) * quantum;
  if (r == 0.f) return 0u;
  const uint32_t rb = float_to_bits(r);
  const int re = static_cast<int>((rb >> 23) & 0xffu) - 127;
  if (re < min_exp) {  // subnormal: r / 2^(min_exp - 3) in the mantissa
    return sign |
           static_cast<uint32_t>(r / bits_to_float(static_cast<uint32_t>(min_exp - 3 + 127) << 23));
  }
  return sign | (static_cast<uint32_t>(re - min_exp + 1) << 3) | ((rb >> 20) & 7u);
}

// x[t] . w1[e][n], dequantized, from the operands a kernel's argument struct gives.
struct GateUp {
  bool int8, blocks, x_bf16, fnuz;
  const void *X, *GU, *XQ, *GUQ;
  uint32_t Xs, eGUs, eGUQs, hidden, tokens;

  JA_DEVICE float weight(unsigned char b) const {
    return int8 ? static_cast<float>(static_cast<signed char>(b)) : e4m3(b, fnuz);
  }
  JA_DEVICE float x(uint32_t t, uint32_t k) const {
    const auto* row = static_cast<const unsigned char*>(X) + static_cast<uint64_t>(t) * Xs;
    if (x_bf16) return BF16::load(reinterpret_cast<const uint16_t*>(row)[k]);
    return weight(row[k]);
  }
  JA_DEVICE static float scale(const void* base, uint32_t expert_bytes, uint32_t e, uint64_t i) {
    return reinterpret_cast<const float*>(static_cast<const unsigned char*>(base) +
                                          static_cast<uint64_t>(e) * expert_bytes)[i];
  }
  JA_DEVICE float operator()(uint32_t t, uint32_t e, uint32_t n) const {
    const auto* w = static_cast<const unsigned char*>(GU) + static_cast<uint64_t>(e) * eGUs;
    if (!blocks) {
      float s = 0.f;
      for (uint32_t k = 0; k < hidden; ++k)
        s += x(t, k) * weight(w[L::shuffled_offset(n, k, hidden)]);
      return s * scale(XQ, 0, 0, t) * scale(GUQ, eGUQs, e, n);
    }
    const uint32_t kb_count = hidden / L::kScaleBlock;
    float total = 0.f;
    for (uint32_t kb = 0; kb < kb_count; ++kb) {
      float s = 0.f;
      for (uint32_t k = kb * L::kScaleBlock; k < (kb + 1) * L::kScaleBlock; ++k) {
        s += x(t, k) * weight(w[L::shuffled_offset(n, k, hidden)]);
      }
      const float xs = x_bf16 ? 1.f : scale(XQ, 0, 0, static_cast<uint64_t>(kb) * tokens + t);
      total +=
          s * xs * scale(GUQ, eGUQs, e, static_cast<uint64_t>(n / L::kScaleBlock) * kb_count + kb);
    }
    return total;
  }
};

// The GateUp of a fmoe kernel's argument struct (the one- and two-stage structs name these fields
// alike).
template <typename Args>
JA_DEVICE GateUp gate_up_of(const Args& a, bool int8, bool blocks, bool x_bf16, bool fnuz) {
  return GateUp{int8,  blocks, x_bf16, fnuz,    a.X,   a.GU,    a.XQ,
                a.GUQ, a.Xs,   a.eGUs, a.eGUQs, a.dim, a.tokens};
}

}  // namespace ja::twin_fmoe
