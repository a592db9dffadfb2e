// Element types the ops speak, their sizes and names, and exact host conversions to and from float.
// The narrow floats are described as data (exponent bits, mantissa bits, bias, NaN/Inf rules) and
// one generic routine encodes and decodes them all, so each format is a row, not a function.
#pragma once

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>

namespace jax_aiter {

enum class DType : uint8_t {
  kBF16,
  kF16,
  kF32,
  kF8E4M3FN,
  kF8E4M3FNUZ,
  kF8E5M2,
  kF4E2M1x2,  // two e2m1 values per byte (low nibble first), as AITER's a4w4 kernels pack them
  kE8M0,      // power-of-two scale, as used by MX block scales
  kI8,
  kI32,
  kU8,
};

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  uint8_t bits;  // storage bits of one element of the array (8 for fp4x2: one byte holds two)
};

inline constexpr std::array<DTypeInfo, 11> kDTypes{{
    {DType::kBF16, "bf16", 16},
    {DType::kF16, "f16", 16},
    {DType::kF32, "f32", 32},
    {DType::kF8E4M3FN, "f8_e4m3fn", 8},
    {DType::kF8E4M3FNUZ, "f8_e4m3fnuz", 8},
    {DType::kF8E5M2, "f8_e5m2", 8},
    {DType::kF4E2M1x2, "f4_e2m1x2", 8},
    {DType::kE8M0, "f8_e8m0", 8},
    {DType::kI8, "i8", 8},
    {DType::kI32, "i32", 32},
    {DType::kU8, "u8", 8},
}};

constexpr const DTypeInfo& info(DType t) { return kDTypes[static_cast<size_t>(t)]; }
constexpr std::string_view name(DType t) { return info(t).name; }
constexpr size_t size_bytes(DType t) { return info(t).bits / 8; }

static_assert([] {
  for (size_t i = 0; i < kDTypes.size(); ++i) {
    if (static_cast<size_t>(kDTypes[i].dtype) != i) return false;
  }
  return true;
}());

// A binary floating-point format narrower than float.
struct MiniFloat {
  enum class Nan : uint8_t {
    kIeee,        // exponent all ones, mantissa non-zero (and Inf with mantissa zero)
    kAllOnes,     // only exponent and mantissa all ones ("fn" formats: no Inf)
    kNegZero,     // only the sign-bit-alone code 0x80 ("fnuz" formats: no Inf, no -0)
    kNone,        // every code is a finite number
    kAllOnesExp,  // e8m0: the all-ones exponent
  };
  uint8_t exp_bits;
  uint8_t man_bits;
  int bias;
  bool has_sign;
  Nan nan;
  bool has_subnormals;
};

// Facts of each format: IEEE 754 (f16), Google's bfloat16, OCP 8-bit FP (e4m3fn, e5m2), AMD's
// fnuz variant used by gfx942, and OCP MX (e2m1, e8m0).
inline constexpr MiniFloat kBF16Format{8, 7, 127, true, MiniFloat::Nan::kIeee, true};
inline constexpr MiniFloat kF16Format{5, 10, 15, true, MiniFloat::Nan::kIeee, true};
inline constexpr MiniFloat kE4M3FNFormat{4, 3, 7, true, MiniFloat::Nan::kAllOnes, true};
inline constexpr MiniFloat kE4M3FNUZFormat{4, 3, 8, true, MiniFloat::Nan::kNegZero, true};
inline constexpr MiniFloat kE5M2Format{5, 2, 15, true, MiniFloat::Nan::kIeee, true};
inline constexpr MiniFloat kE2M1Format{2, 1, 1, true, MiniFloat::Nan::kNone, true};
inline constexpr MiniFloat kE8M0Format{8, 0, 127, false, MiniFloat::Nan::kAllOnesExp, false};

namespace detail {

constexpr uint32_t exp_mask(const MiniFloat& f) { return (1u << f.exp_bits) - 1u; }
constexpr uint32_t man_mask(const MiniFloat& f) { return (1u << f.man_bits) - 1u; }
constexpr uint32_t sign_bit(const MiniFloat& f) {
  return f.has_sign ? 1u << (f.exp_bits + f.man_bits) : 0u;
}

constexpr bool is_nan_code(const MiniFloat& f, uint32_t code) {
  const uint32_t e = (code >> f.man_bits) & exp_mask(f);
  const uint32_t m = code & man_mask(f);
  switch (f.nan) {
    case MiniFloat::Nan::kIeee: return e == exp_mask(f) && m != 0;
    case MiniFloat::Nan::kAllOnes: return e == exp_mask(f) && m == man_mask(f);
    case MiniFloat::Nan::kNegZero: return code == sign_bit(f);
    case MiniFloat::Nan::kNone: return false;
    case MiniFloat::Nan::kAllOnesExp: return e == exp_mask(f);
  }
  return false;
}

// Largest finite code without sign.
constexpr uint32_t max_finite_code(const MiniFloat& f) {
  switch (f.nan) {
    case MiniFloat::Nan::kIeee: return ((exp_mask(f) - 1) << f.man_bits) | man_mask(f);
    case MiniFloat::Nan::kAllOnes: return (exp_mask(f) << f.man_bits) | (man_mask(f) - 1);
    case MiniFloat::Nan::kNegZero:
    case MiniFloat::Nan::kNone: return (exp_mask(f) << f.man_bits) | man_mask(f);
    case MiniFloat::Nan::kAllOnesExp: return exp_mask(f) - 1;
  }
  return 0;
}

constexpr uint32_t nan_code(const MiniFloat& f) {
  switch (f.nan) {
    case MiniFloat::Nan::kIeee: return (exp_mask(f) << f.man_bits) | (1u << (f.man_bits - 1));
    case MiniFloat::Nan::kAllOnes: return (exp_mask(f) << f.man_bits) | man_mask(f);
    case MiniFloat::Nan::kNegZero: return sign_bit(f);
    case MiniFloat::Nan::kNone: return max_finite_code(f);  // no NaN: saturate (documented)
    case MiniFloat::Nan::kAllOnesExp: return exp_mask(f);
  }
  return 0;
}

}  // namespace detail

// Exact: every code of these formats is representable in double (and in float).
inline double decode(const MiniFloat& f, uint32_t code) {
  using namespace detail;
  if (is_nan_code(f, code)) return std::numeric_limits<double>::quiet_NaN();
  const bool neg = (code & sign_bit(f)) != 0;
  const uint32_t e = (code >> f.man_bits) & exp_mask(f);
  const uint32_t m = code & man_mask(f);
  if (f.nan == MiniFloat::Nan::kIeee && e == exp_mask(f)) {
    return neg ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  }
  double v;
  if (e == 0 && f.has_subnormals) {
    v = std::ldexp(static_cast<double>(m), 1 - f.bias - f.man_bits);
  } else {
    v = std::ldexp(static_cast<double>((1u << f.man_bits) | m),
                   static_cast<int>(e) - f.bias - f.man_bits);
  }
  return neg ? -v : v;
}

// Round to nearest, ties to even. Overflow gives Inf where the format has one, else NaN, else the
// largest finite value (e2m1 has neither). Values below e8m0's smallest power clamp to it.
inline uint32_t encode(const MiniFloat& f, double x) {
  using namespace detail;
  if (std::isnan(x)) return nan_code(f);
  const bool neg = std::signbit(x) && f.has_sign;
  const uint32_t sign = neg ? sign_bit(f) : 0u;
  double a = std::fabs(x);
  const uint32_t max_code = max_finite_code(f);
  const double max_value = decode(f, max_code);
  auto overflow = [&]() -> uint32_t {
    if (f.nan == MiniFloat::Nan::kIeee) return sign | (exp_mask(f) << f.man_bits);
    if (f.nan == MiniFloat::Nan::kNone) return sign | max_code;
    return nan_code(f);
  };
  if (std::isinf(a)) return overflow();
  const int min_exp = f.has_subnormals ? 1 - f.bias : -f.bias;
  if (!f.has_subnormals && a < std::ldexp(1.0, min_exp)) a = std::ldexp(1.0, min_exp);
  if (a == 0.0) return f.nan == MiniFloat::Nan::kNegZero ? 0u : sign;
  int ue = std::ilogb(a);
  if (ue < min_exp) ue = min_exp;  // subnormal range: fixed quantum
  const double quantum = std::ldexp(1.0, ue - f.man_bits);
  const double rounded = std::nearbyint(a / quantum) * quantum;  // default mode: ties to even
  if (rounded > max_value) {
    // Past the largest finite value: it overflows only if it rounds beyond it.
    return overflow();
  }
  if (rounded == 0.0) return f.nan == MiniFloat::Nan::kNegZero ? 0u : sign;
  int re = std::ilogb(rounded);
  uint32_t e_field, m_field;
  if (f.has_subnormals && re < 1 - f.bias) {
    e_field = 0;
    m_field = static_cast<uint32_t>(std::ldexp(rounded, f.bias - 1 + f.man_bits));
  } else {
    e_field = static_cast<uint32_t>(re + f.bias);
    m_field = static_cast<uint32_t>(std::ldexp(rounded, f.man_bits - re)) & man_mask(f);
  }
  return sign | (e_field << f.man_bits) | m_field;
}

// bf16 is the hot case (reference implementations convert every element): bit arithmetic.
inline float bf16_to_float(uint16_t bits) { return std::bit_cast<float>(uint32_t{bits} << 16); }
inline uint16_t float_to_bf16(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  if (std::isnan(x)) return static_cast<uint16_t>((u >> 16) | 0x40u);
  const uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>((u + rounding) >> 16);
}
inline float f16_to_float(uint16_t bits) { return static_cast<float>(decode(kF16Format, bits)); }
inline uint16_t float_to_f16(float x) { return static_cast<uint16_t>(encode(kF16Format, x)); }

// Format of a narrow float dtype, or nullptr for the others.
constexpr const MiniFloat* format_of(DType t) {
  switch (t) {
    case DType::kBF16: return &kBF16Format;
    case DType::kF16: return &kF16Format;
    case DType::kF8E4M3FN: return &kE4M3FNFormat;
    case DType::kF8E4M3FNUZ: return &kE4M3FNUZFormat;
    case DType::kF8E5M2: return &kE5M2Format;
    case DType::kF4E2M1x2: return &kE2M1Format;
    case DType::kE8M0: return &kE8M0Format;
    default: return nullptr;
  }
}

}  // namespace jax_aiter
