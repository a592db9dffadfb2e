// Checked integer narrowing: shapes arrive as int64 from XLA and kernels take int32.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>
#include <utility>

namespace jax_aiter {

template <typename To, typename From>
constexpr std::optional<To> checked_narrow(From v) {
  static_assert(std::is_integral_v<To> && std::is_integral_v<From>);
  if (!std::in_range<To>(v)) return std::nullopt;
  return static_cast<To>(v);
}

constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace jax_aiter
