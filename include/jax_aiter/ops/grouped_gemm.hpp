// aiter.grouped_gemm and aiter.grouped_gemm_wgrad: the ragged dot of a mixture-of-experts layer
// and its weight gradient (ops/grouped_gemm_params.hpp says what each computes). One tier, our
// portable kernels (ops/grouped_gemm_portable.hpp). Pure C++.
#pragma once

#include <cstdint>
#include <tuple>

#include "jax_aiter/ops/grouped_gemm_params.hpp"
#include "jax_aiter/ops/grouped_gemm_portable.hpp"

namespace jax_aiter::ops {

struct GroupedGemm {
  static constexpr std::string_view kName = kGroupedGemmName;
  using Params = GroupedGemmParams;
  using Tiers = std::tuple<GroupedGemmPortableTier>;

  static Status validate(const Params& p) { return grouped_gemm_detail::check(p); }

  // Sized before any device is known (Python, at trace time): the schedule of the smallest row
  // tile, which has the most tiles.
  static int64_t workspace_bytes(const Params& p) {
    const int64_t g = p.groups();
    return grouped_schedule_bytes(g,
                                  kernels::grouped_gemm::tile_capacity(p.m(), g, grouped_min_bm()));
  }
};

struct GroupedGemmWgrad {
  static constexpr std::string_view kName = kGroupedGemmWgradName;
  using Params = GroupedGemmWgradParams;
  using Tiers = std::tuple<GroupedWgradPortableTier>;

  static Status validate(const Params& p) { return grouped_gemm_detail::check(p); }

  // The group offsets alone.
  static int64_t workspace_bytes(const Params& p) { return grouped_schedule_bytes(p.groups(), 0); }
};

}  // namespace jax_aiter::ops
