// Rules AITER's ASM families share (restated from github.com/ROCm/aiter at e4048607a535): which
// archs run its code objects, how a launch fills the compute units in its CU-rounds GEMM heuristic
// (csrc/py_itfs_cu/asm_gemm_*.cu), its tile efficiency, and how a caller names a row.
#pragma once

#include <cstdint>
#include <iterator>
#include <string_view>
#include <type_traits>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/core/status.hpp"
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

constexpr TileScore tile_score(int tm, int tn, int64_t m, int64_t n, int64_t split, int64_t cus) {
  const auto [rounds, idle] = cu_rounds(ceil_div(m, tm) * (n / tn) * split, cus);
  return {rounds, idle, tm, tn};
}

// The best (row, split) for an M x N call: rows in table order where eligible(row), splits
// first..last where valid_split(split); a later pair wins only when strictly better, so ties go
// to the earlier row, then the smaller split. row is null when no pair qualifies.
template <typename Row>
struct RowSplit {
  const Row* row = nullptr;
  int64_t split = 1;
};

template <typename Rows, typename Eligible, typename ValidSplit>
constexpr auto best_row_and_split(const Rows& rows, int64_t m, int64_t n, int64_t cus,
                                  int64_t first, int64_t last, Eligible eligible,
                                  ValidSplit valid_split) {
  RowSplit<std::remove_cvref_t<decltype(*std::begin(rows))>> best;
  TileScore best_score{};
  for (const auto& r : rows) {
    if (!eligible(r)) continue;
    for (int64_t split = first; split <= last; ++split) {
      if (!valid_split(split)) continue;
      const TileScore s = tile_score(r.tile_m, r.tile_n, m, n, split, cus);
      if (best.row == nullptr || s.better_than(best_score)) {
        best = {&r, split};
        best_score = s;
      }
    }
  }
  return best;
}

// A forced kernel names a row by its symbol or its short name.
template <typename Row>
constexpr bool names(const Row& r, std::string_view kernel) {
  return r.kernel.symbol == kernel || r.short_name() == kernel;
}

// The `kernel` attribute, checked before any tier runs (so that a misspelt name never lets the
// portable tier answer instead): "" or a row of the family's table, on any arch, by symbol or
// short name. Whether the row runs on the call's arch is the ASM tier's verdict.
template <typename Rows>
Status check_kernel_name(std::string_view op, std::string_view family, const Rows& rows,
                         std::string_view kernel) {
  if (kernel.empty()) return {};
  for (const auto& r : rows) {
    if (names(r, kernel)) return {};
  }
  return InvalidArgument(StrCat(op,
                                ": attribute kernel: expected \"\" (the heuristic's choice) or "
                                "one of AITER's ",
                                family, " kernels by symbol or short name (e.g. ",
                                std::begin(rows)->short_name(), "), got '", kernel, "'"));
}

}  // namespace jax_aiter::ops::aiter_rules
