// Which 8-bit float format a kernel reads. The hardware that runs it decides, not the caller:
// gfx942's fp8 instructions read e4m3fnuz (bias 8, no -0, one NaN), gfx950's and sm_90's read OCP
// e4m3fn (bias 7). So an ASM plan for gfx942 reads e4m3fnuz on an MI300, while its sm_90 twin
// reads e4m3fn; the host twins decode either format exactly. A tier accepts only what its kernels
// read, so an array of the other format is refused with a reason rather than reinterpreted; when
// every tier refuses, the caller sees each reason.
#pragma once

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/core/verdict.hpp"

namespace jax_aiter::ops {

constexpr DType native_fp8(Arch a) {
  return a == Arch::kGfx942 ? DType::kF8E4M3FNUZ : DType::kF8E4M3FN;
}

constexpr bool is_e4m3(DType d) { return d == DType::kF8E4M3FN || d == DType::kF8E4M3FNUZ; }

// Whether the kernels a tier plans for `t` read fp8 operands of dtype `d`.
constexpr Verdict reads_fp8(DType d, const Target& t) {
  switch (t.backend) {
    case BackendKind::kHost:
      return is_e4m3(d) ? Verdict::yes()
                        : Verdict::no("fp8 operands must be f8_e4m3fn or f8_e4m3fnuz");
    case BackendKind::kCuda:
      return d == DType::kF8E4M3FN
                 ? Verdict::yes()
                 : Verdict::no(
                       "NVIDIA fp8 tensor cores read f8_e4m3fn (quantize with "
                       "jax_aiter.fp8_dtype()); the fp8 operands are another format");
    case BackendKind::kHip:
      if (d == native_fp8(t.arch)) return Verdict::yes();
      return t.arch == Arch::kGfx942
                 ? Verdict::no(
                       "gfx942 reads f8_e4m3fnuz (quantize with jax_aiter.fp8_dtype()); "
                       "the fp8 operands are another format")
                 : Verdict::no(
                       "gfx950 reads f8_e4m3fn (quantize with jax_aiter.fp8_dtype()); "
                       "the fp8 operands are another format");
  }
  return Verdict::no("unknown backend");
}

}  // namespace jax_aiter::ops
