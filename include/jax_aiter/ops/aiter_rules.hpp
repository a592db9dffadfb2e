// Rules AITER's ASM families share (restated from github.com/ROCm/aiter at e4048607a535): which
// archs run its code objects, how a launch fills the compute units in its CU-rounds GEMM heuristic
// (csrc/py_itfs_cu/asm_gemm_*.cu) and its tile efficiency.
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

// AITER's CU-rounds score of a row (tile tm x tn) at a K split, for an M x N call: fewer rounds,
// then fewer idle CUs, then higher tile efficiency (the INT8 and FP8 block-scale heuristics).
struct TileScore {
  int64_t rounds, idle;
  int tm, tn;

  constexpr bool better_than(const TileScore& o) const {
    if (rounds != o.rounds) return rounds < o.rounds;
    if (idle != o.idle) return idle < o.idle;
    return more_efficient_tile(tm, tn, o.tm, o.tn);
  }
};

// The score of a row of tile tm x tn launching `tiles` output tiles at a K split, on `cus` CUs.
constexpr TileScore tile_score(int tm, int tn, int64_t tiles, int64_t split, int64_t cus) {
  const auto [rounds, idle] = cu_rounds(tiles * split, cus);
  return {rounds, idle, tm, tn};
}

}  // namespace jax_aiter::ops::aiter_rules
