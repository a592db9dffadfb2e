// The 256 values of an e4m3 format (OCP e4m3fn, or the fnuz variant of gfx942), decoded once:
// the host twins' fp8 loads (NaN codes decode to NaN).
#pragma once

#include <array>
#include <cstdint>

#include "jax_aiter/core/dtype.hpp"

namespace jax_aiter::host_twins {

inline const std::array<float, 256>& e4m3_values(bool fnuz) {
  static const auto make = [](const MiniFloat& f) {
    std::array<float, 256> t{};
    for (uint32_t c = 0; c < 256; ++c) t[c] = static_cast<float>(decode(f, c));
    return t;
  };
  static const std::array<float, 256> fn = make(kE4M3FNFormat), nuz = make(kE4M3FNUZFormat);
  return fnuz ? nuz : fn;
}

}  // namespace jax_aiter::host_twins
