// What the ASM tiers' selection tests (test_gemm*_select.cpp) share: the expected choice of a
// row and split, AITER's split correction, the walk over a grid of shapes comparing ours with the
// independent rule, and the (arch, CUs) cases of the grids. Each family's CSV rows and rule stay in
// its own test file.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/ops/aiter_tier.hpp"

namespace jax_aiter::gemm_testing {

// A selection's outcome: whether a row is chosen, which, and the split.
struct Expected {
  bool any = false;
  std::string name;
  int64_t split = 1;
};

// AITER's split correction: chunks of roundup(ceil(K / s), 128); the split that actually runs.
inline int64_t corrected(int64_t k, int64_t s) {
  const int64_t per = (k + s - 1) / s;
  const int64_t chunk = (per + 127) / 128 * 128;
  return (k + chunk - 1) / chunk;
}

// What a grid walk saw: shapes checked, shapes with a row, and of those the split ones.
struct GridTally {
  int checked = 0, chosen = 0, split = 0;
};

// For every (m, n, k) of the grid, ours(m, n, k) equals want(m, n, k) (row and split where a row
// is chosen); the first shape that differs fails. Tallies into t.
template <class Want, class Ours>
::testing::AssertionResult matches_on_grid(const std::vector<int64_t>& ms,
                                           const std::vector<int64_t>& ns,
                                           const std::vector<int64_t>& ks, Want want, Ours ours,
                                           GridTally& t) {
  for (int64_t m : ms) {
    for (int64_t n : ns) {
      for (int64_t k : ks) {
        const Expected w = want(m, n, k);
        const Expected g = ours(m, n, k);
        if (g.any != w.any || (w.any && (g.name != w.name || g.split != w.split))) {
          return ::testing::AssertionFailure()
                 << m << "x" << n << "x" << k << ": got " << (g.any ? g.name : "no row")
                 << " split " << g.split << ", want " << (w.any ? w.name : "no row") << " split "
                 << w.split;
        }
        if (w.any) {
          ++t.chosen;
          t.split += g.split > 1;
        }
        ++t.checked;
      }
    }
  }
  return ::testing::AssertionSuccess();
}

// A query for a family's selection; splitk -1 leaves the knob unset (the heuristic's choice).
inline ops::AiterQuery query(int64_t m, int64_t n, int64_t k, Arch arch, int cus,
                             std::string_view kernel = "", int64_t splitk = -1) {
  ops::AiterQuery q;
  q.m = m;
  q.n = n;
  q.k = k;
  q.arch = arch;
  q.compute_units = cus;
  q.knobs.kernel = kernel;
  if (splitk >= 0) q.knobs.splitk = splitk;
  return q;
}

// The family's selection as a verdict, the choice in *out when there is one.
template <typename Family>
Verdict select_row(const ops::AiterQuery& q, ops::AiterChoice<typename Family::Row>* out) {
  const auto d = ops::select_aiter<Family>(q);
  if (d.ok()) *out = *d;
  return d.verdict();
}

// The (arch, CUs) cases of the grids: MI300X, a cut-down gfx942, MI355X.
inline auto grid_archs() {
  return ::testing::Values(std::tuple{Arch::kGfx942, 304}, std::tuple{Arch::kGfx942, 80},
                           std::tuple{Arch::kGfx950, 256});
}

}  // namespace jax_aiter::gemm_testing
