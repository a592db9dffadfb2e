// Which 8-bit float format a plan reads. The rule: a plan for an arch reads that arch's format,
// on every backend that runs it. gfx942's fp8 instructions read e4m3fnuz (bias 8, no -0, one
// NaN); gfx950's and sm_90's read OCP e4m3fn (bias 7). So a gfx942 plan (AITER's MI300 kernels)
// takes e4m3fnuz whether an MI300 runs it, its sm_90 ABI twin on an H100 (which converts e4m3fnuz
// in registers, exactly: kernels_co/include/jax_aiter_fp8.hpp) or its C++ twin on the CPU; a
// gfx950 or sm_90 plan takes e4m3fn. An array of the other format is refused with the reason,
// never reinterpreted. The host's own plans (the portable tier on the CPU, Arch::kHost) have no
// fp8 hardware to follow: they take either, decoded exactly.
#pragma once

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/core/verdict.hpp"

namespace jax_aiter::ops {

constexpr DType native_fp8(Arch a) {
  return a == Arch::kGfx942 ? DType::kF8E4M3FNUZ : DType::kF8E4M3FN;
}

constexpr bool is_e4m3(DType d) { return d == DType::kF8E4M3FN || d == DType::kF8E4M3FNUZ; }

// Whether a plan for `t` (its arch: the planned one for AITER's kernels) reads fp8 of dtype `d`.
constexpr Verdict reads_fp8(DType d, const Target& t) {
  if (!is_e4m3(d)) return Verdict::no("fp8 operands must be f8_e4m3fn or f8_e4m3fnuz");
  switch (t.arch) {
    case Arch::kHost: return Verdict::yes();
    case Arch::kGfx942:
      return d == DType::kF8E4M3FNUZ
                 ? Verdict::yes()
                 : Verdict::no(
                       "gfx942 reads f8_e4m3fnuz, and so does a gfx942 plan on any device "
                       "(quantize with jax_aiter.fp8_dtype(\"gfx942\")); the fp8 operands are "
                       "f8_e4m3fn");
    case Arch::kGfx950:
      return d == DType::kF8E4M3FN
                 ? Verdict::yes()
                 : Verdict::no(
                       "gfx950 reads f8_e4m3fn, and so does a gfx950 plan on any device "
                       "(quantize with jax_aiter.fp8_dtype(\"gfx950\")); the fp8 operands are "
                       "f8_e4m3fnuz");
    case Arch::kSm90:
      return d == DType::kF8E4M3FN
                 ? Verdict::yes()
                 : Verdict::no(
                       "NVIDIA fp8 tensor cores read f8_e4m3fn (quantize with "
                       "jax_aiter.fp8_dtype(), or plan AITER's gfx942 kernels with asm_arch to run "
                       "f8_e4m3fnuz); the fp8 operands are f8_e4m3fnuz");
  }
  return Verdict::no("unknown arch");
}

}  // namespace jax_aiter::ops
