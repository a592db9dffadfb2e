// What an op knows of an operand: address, dtype and shape. Filled by the FFI layer from XLA's
// buffers, or by hand in tests; validate() checks them with messages that name the operand.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/core/status.hpp"

namespace jax_aiter::ops {

inline constexpr int kMaxRank = 8;

struct Tensor {
  void* data = nullptr;
  DType dtype = DType::kF32;
  int rank = 0;
  std::array<int64_t, kMaxRank> dims{};

  // A tensor over `data`. Callers refuse ranks above kMaxRank first (the FFI layer does, with a
  // message); here the dims past it would be dropped.
  static constexpr Tensor over(void* data, DType dtype, std::span<const int64_t> shape) {
    Tensor t{data, dtype, static_cast<int>(std::min<size_t>(shape.size(), kMaxRank))};
    for (int i = 0; i < t.rank; ++i) t.dims[i] = shape[i];
    return t;
  }
  static constexpr Tensor over(void* data, DType dtype, std::initializer_list<int64_t> shape) {
    return over(data, dtype, std::span<const int64_t>(shape.begin(), shape.size()));
  }

  constexpr int64_t elements() const {
    int64_t e = 1;
    for (int i = 0; i < rank; ++i) e *= dims[i];
    return e;
  }
  constexpr int64_t bytes() const { return elements() * static_cast<int64_t>(size_bytes(dtype)); }
  constexpr int64_t last() const { return rank > 0 ? dims[rank - 1] : 1; }
  constexpr bool same_shape(const Tensor& o) const {
    if (rank != o.rank) return false;
    for (int i = 0; i < rank; ++i) {
      if (dims[i] != o.dims[i]) return false;
    }
    return true;
  }
};

inline std::string shape_string(const Tensor& t) {
  std::string s = "[";
  for (int i = 0; i < t.rank; ++i) {
    if (i) s += ",";
    s += std::to_string(t.dims[i]);
  }
  return s + "]";
}

inline std::string describe(const Tensor& t) { return StrCat(name(t.dtype), shape_string(t)); }

// "aiter.rms_norm: operand gamma: expected f32[4096] (like x), got bf16[4095]"
inline Status operand_error(std::string_view op, std::string_view operand, std::string_view what) {
  return InvalidArgument(StrCat(op, ": operand ", operand, ": ", what));
}

// An empty problem (M, N or K of 0, no rows, no heads...) is refused by an op's validate() with
// this code and nothing else is: validate() checks every dtype, shape and attribute first and the
// emptiness last, so a caller that computes empty results itself (the Python ops do: an empty
// GEMM is zeros, as jnp.dot gives) asks validate() first and short-cuts only on this code
// (ffi/describe.hpp's validate_call). Bad input with an empty shape is still an error.
inline constexpr ErrorCode kEmptyProblem = ErrorCode::kOutOfRange;

inline Status empty_problem(std::string_view op, std::string_view operand, std::string_view what) {
  return {kEmptyProblem, StrCat(op, ": operand ", operand, ": ", what)};
}

// Checks that `t` has exactly the dtype and shape of `like`.
inline Status expect_like(std::string_view op, std::string_view operand, const Tensor& t,
                          const Tensor& like, std::string_view like_name) {
  if (t.dtype != like.dtype || !t.same_shape(like)) {
    return operand_error(
        op, operand,
        StrCat("expected ", describe(like), " (like ", like_name, "), got ", describe(t)));
  }
  return {};
}

}  // namespace jax_aiter::ops
