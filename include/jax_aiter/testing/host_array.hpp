// Host arrays for tests of handlers: typed storage with conversions written here independently of
// core/dtype.hpp (so a bug there cannot hide itself), poisoning (an unwritten output cannot pass),
// deterministic random fills, and a way to hand them to a fake call frame.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/testing/fake_ffi.hpp"

namespace jax_aiter::testing {

// Rounds through float, then to nearest even on the 16 dropped bits.
inline uint16_t to_bf16(double v) {
  const uint32_t u = std::bit_cast<uint32_t>(static_cast<float>(v));
  if (std::isnan(v)) return 0x7FC0;
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
inline double from_bf16(uint16_t b) { return std::bit_cast<float>(uint32_t{b} << 16); }
inline uint16_t to_f16(double v) { return std::bit_cast<uint16_t>(static_cast<_Float16>(v)); }
inline double from_f16(uint16_t b) { return static_cast<double>(std::bit_cast<_Float16>(b)); }

inline XLA_FFI_DataType xla_type(DType t) {
  switch (t) {
    case DType::kBF16: return XLA_FFI_DataType_BF16;
    case DType::kF16: return XLA_FFI_DataType_F16;
    case DType::kF32: return XLA_FFI_DataType_F32;
    case DType::kI32: return XLA_FFI_DataType_S32;
    case DType::kU8: return XLA_FFI_DataType_U8;
    case DType::kI8: return XLA_FFI_DataType_S8;
    case DType::kF8E4M3FN: return XLA_FFI_DataType_F8E4M3FN;
    case DType::kF8E4M3FNUZ: return XLA_FFI_DataType_F8E4M3FNUZ;
    default: return XLA_FFI_DataType_INVALID;
  }
}

inline size_t elem_bytes(DType t) {
  if (t == DType::kF32 || t == DType::kI32) return 4;
  return t == DType::kU8 || t == DType::kI8 || t == DType::kF8E4M3FN || t == DType::kF8E4M3FNUZ ? 1
                                                                                                : 2;
}

// A host array of bf16, f16, f32 (values) or u8/i8/i32/fp8 (raw bytes).
struct Array {
  DType dtype;
  std::vector<int64_t> dims;
  std::vector<unsigned char> bytes;

  Array(DType t, std::vector<int64_t> d) : dtype(t), dims(std::move(d)) {
    bytes.resize(static_cast<size_t>(size()) * elem_bytes(t));
  }
  int64_t size() const {
    int64_t s = 1;
    for (int64_t d : dims) s *= d;
    return s;
  }
  void* data() { return bytes.data(); }
  double at(int64_t i) const {
    uint16_t h;
    float f;
    switch (dtype) {
      case DType::kBF16: std::memcpy(&h, &bytes[i * 2], 2); return from_bf16(h);
      case DType::kF16: std::memcpy(&h, &bytes[i * 2], 2); return from_f16(h);
      default: std::memcpy(&f, &bytes[i * 4], 4); return f;
    }
  }
  // Rounds to the dtype; returns the value stored.
  double set(int64_t i, double v) {
    uint16_t h;
    float f;
    switch (dtype) {
      case DType::kBF16:
        h = to_bf16(v);
        std::memcpy(&bytes[i * 2], &h, 2);
        break;
      case DType::kF16:
        h = to_f16(v);
        std::memcpy(&bytes[i * 2], &h, 2);
        break;
      default:
        f = static_cast<float>(v);
        std::memcpy(&bytes[i * 4], &f, 4);
        break;
    }
    return at(i);
  }
  // All-ones bytes: a NaN in bf16, f16 and f32, so an unwritten element cannot pass.
  void poison() { std::fill(bytes.begin(), bytes.end(), 0xFF); }
  std::vector<double> values() const {
    std::vector<double> v(static_cast<size_t>(size()));
    for (int64_t i = 0; i < size(); ++i) v[i] = at(i);
    return v;
  }
};

inline void add_arg(CallFrame& f, Array& a) { f.arg(xla_type(a.dtype), a.dims, a.data()); }
inline void add_ret(CallFrame& f, Array& a) { f.ret(xla_type(a.dtype), a.dims, a.data()); }
// An absent optional operand, as the handlers expect it (u8[0]).
inline void add_absent(CallFrame& f) { f.arg(XLA_FFI_DataType_U8, {0}, nullptr); }

// Deterministic inputs (splitmix64), independent of the standard library's distributions.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  double uniform(double lo, double hi) {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return lo + (hi - lo) * (static_cast<double>(z >> 11) * 0x1.0p-53);
  }
  // Magnitude in [0.25, 2] with a random sign: no value near zero.
  double signed_away_from_zero() {
    const double m = uniform(0.25, 2.0);
    return uniform(0, 1) < 0.5 ? -m : m;
  }

 private:
  uint64_t s_;
};

inline void fill(Array& a, Rng& rng, double lo, double hi) {
  for (int64_t i = 0; i < a.size(); ++i) a.set(i, rng.uniform(lo, hi));
}
inline void fill_signed(Array& a, Rng& rng) {
  for (int64_t i = 0; i < a.size(); ++i) a.set(i, rng.signed_away_from_zero());
}

}  // namespace jax_aiter::testing
