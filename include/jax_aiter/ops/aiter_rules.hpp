// Rules AITER's ASM families share (restated from github.com/ROCm/aiter at e4048607a535): which
// archs run its code objects, how a launch fills the compute units in its CU-rounds GEMM heuristic
// (csrc/py_itfs_cu/asm_gemm_*.cu), its tile efficiency, and how a caller names a row.
#pragma once

#include <cstdint>
#include <string_view>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/core/verdict.hpp"

namespace jax_aiter::ops::aiter_rules {

constexpr bool aiter_arch(Arch a) { return a == Arch::kGfx942 || a == Arch::kGfx950; }

constexpr Verdict not_aiter_arch() {
  return Verdict::no(
      "AITER's ASM kernels are gfx942/gfx950 code (plan them for one with asm_arch to run their "
      "ABI twins on this device)");
}

// `launched` blocks on `cus` compute units: the rounds they take and the CUs idle in the last.
struct CuRounds {
  int64_t rounds, idle;
};
constexpr CuRounds cu_rounds(int64_t launched, int64_t cus) {
  const int64_t rounds = ceil_div(launched, cus);
  return {rounds, rounds * cus - launched};
}

// AITER's tile efficiency tm*tn/(tm+tn): whether (tm, tn)'s exceeds (otm, otn)'s, in integers.
constexpr bool more_efficient_tile(int tm, int tn, int otm, int otn) {
  return int64_t{tm} * tn * (otm + otn) > int64_t{otm} * otn * (tm + tn);
}

// A forced kernel names a row by its symbol or its short name.
template <typename Row>
constexpr bool names(const Row& r, std::string_view kernel) {
  return r.kernel.symbol == kernel || r.short_name() == kernel;
}

}  // namespace jax_aiter::ops::aiter_rules
