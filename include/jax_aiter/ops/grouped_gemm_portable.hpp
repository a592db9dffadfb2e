// The portable tier of the grouped GEMMs: our own kernels (kernels/grouped_gemm.hpp) on every
// arch; the only tier (AITER ships no grouped-GEMM ASM kernel these ops could launch).
//
// A call is two launches on the stream, no allocation and no host read of group_sizes:
//   1. the schedule pre-kernel (one block): group offsets and the row tiles, into the workspace;
//   2. the main kernel: row-tile kernels on a grid of (column tiles, capacity) whose blocks past
//      the live tiles exit; the wgrad kernel on (K tiles, N tiles, G), each block reducing over
//      its group's rows (a group with none stores zeros).
//
// The rule (row-tile kernels): the tile with the largest BM not above the mean group M / G
// (tiles are listed largest first; a smaller mean takes the smallest), since most row tiles
// then sit wholly inside one group. 16-byte loads where every row and base is 16-byte aligned
// (forward: K % 8 == 0; dgrad and wgrad: N and K % 8 == 0), element-wise otherwise; fp8 only
// with 16-byte loads (K % 128 == 0 by validate; the bases must be aligned).
#pragma once

#include <cstdint>
#include <string_view>

#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/core/verdict.hpp"
#include "jax_aiter/kernels/grouped_gemm.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/ops/fp8_format.hpp"
#include "jax_aiter/ops/grouped_gemm_params.hpp"

namespace jax_aiter::ops {

// The most row tiles a launch may have (its grid y: CUDA's limit).
inline constexpr int64_t kGroupedMaxRowTiles = 65535;

// The index into kernels::kGroupedGemmTiles of the row tile for M rows in G groups.
constexpr size_t choose_grouped_tile(int64_t m, int64_t groups) {
  const auto tiles = kernels::kGroupedGemmTiles;
  const int64_t mean = groups > 0 ? m / groups : m;
  for (size_t i = 0; i < tiles.size(); ++i) {
    if (tiles[i].bm <= mean) return i;
  }
  return tiles.size() - 1;
}
static_assert(kernels::kGroupedGemmTiles[choose_grouped_tile(32768, 256)].bm == 128);
static_assert(kernels::kGroupedGemmTiles[choose_grouped_tile(64 * 8, 256)].bm == 16);

// The smallest row tile: what the workspace is sized for before the tile is known.
constexpr int64_t grouped_min_bm() {
  int64_t bm = kernels::kGroupedGemmTiles[0].bm;
  for (const auto& t : kernels::kGroupedGemmTiles) bm = t.bm < bm ? t.bm : bm;
  return bm;
}

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

struct GroupedGemmPortableChoice {
  size_t tile = 0;  // index into kernels::kGroupedGemmTiles
  bool aligned = false;
};

struct GroupedGemmPortableTier {
  static constexpr std::string_view kName = "portable";
  using Choice = GroupedGemmPortableChoice;

  static Decision<Choice> supports(const GroupedGemmParams& p, const Target& t) {
    const int64_t m = p.m(), n = p.cols(), k = p.depth(), g = p.groups();
    Choice c;
    c.tile = choose_grouped_tile(m, g);
    const int64_t capacity = kernels::grouped_gemm::tile_capacity(m, g, tile(c).bm);
    if (capacity > kGroupedMaxRowTiles) {
      return Verdict::no("{} row tiles of {} rows (M / BM + G) exceed the launch's {}", capacity,
                         tile(c).bm, kGroupedMaxRowTiles);
    }
    const bool bases = aligned16(p.x.data) && aligned16(p.w.data);
    if (p.fp8()) {
      if (const Verdict v = reads_fp8(p.x.dtype, t); !v.ok()) return v;
      if (!bases) return Verdict::no("fp8 x and w must be 16-byte aligned");
      c.aligned = true;
      return c;
    }
    c.aligned = bases && k % 8 == 0 && (!p.transpose_w || n % 8 == 0);
    return c;
  }

  static void plan(const GroupedGemmParams& p, const Target&, const Choice& c,
                   kernels::Plan& plan) {
    const int64_t m = p.m(), n = p.cols(), k = p.depth(), g = p.groups();
    const kernels::GroupedGemmTile& t = tile(c);
    const int64_t capacity = kernels::grouped_gemm::tile_capacity(m, g, t.bm);
    void* schedule =
        plan.piece(plan.workspace.add("schedule", grouped_schedule_bytes(g, capacity)));
    const kernels::GroupedScheduleArgs sched{
        p.group_sizes.data,         schedule,
        static_cast<int32_t>(g),    static_cast<int32_t>(m),
        static_cast<int32_t>(t.bm), static_cast<int32_t>(capacity)};
    plan.launch(kernels::kGroupedScheduleKernel, {1, 1, 1},
                {kernels::grouped_gemm::kScheduleThreads, 1, 1}, sched);
    const kernels::GroupedGemmArgs args{p.x.data,
                                        p.w.data,
                                        p.x_scale ? p.x_scale->data : nullptr,
                                        p.w_scale ? p.w_scale->data : nullptr,
                                        schedule,
                                        p.out.data,
                                        static_cast<int32_t>(m),
                                        static_cast<int32_t>(n),
                                        static_cast<int32_t>(k),
                                        static_cast<int32_t>(g),
                                        kernels::grouped_out_type(p.out.dtype),
                                        p.x.dtype == DType::kF8E4M3FNUZ ? 1 : 0};
    const kernels::KernelInfo& kernel =
        p.fp8() ? kernels::grouped_fp8_kernel(c.tile)
                : kernels::grouped_rows_kernel(
                      c.tile, p.x.dtype,
                      p.transpose_w ? kernels::GroupedKind::kDgrad : kernels::GroupedKind::kForward,
                      c.aligned);
    plan.launch(kernel,
                {static_cast<uint32_t>(ceil_div(n, t.bn)), static_cast<uint32_t>(capacity), 1},
                {static_cast<uint32_t>(t.threads), 1, 1}, args);
    plan.note("tile_m", t.bm);
    plan.note("tile_n", t.bn);
    plan.note("row_tiles", capacity);
    plan.note("aligned", c.aligned ? 1 : 0);
  }

 private:
  static constexpr const kernels::GroupedGemmTile& tile(const Choice& c) {
    return kernels::kGroupedGemmTiles[c.tile];
  }
};

struct GroupedWgradPortableTier {
  static constexpr std::string_view kName = "portable";

  static Verdict supports(const GroupedGemmWgradParams& p, const Target&) {
    const int64_t tiles = ceil_div(p.n(), kernels::kGroupedWgradTiles[0].bm);
    if (tiles > kGroupedMaxRowTiles) {
      return Verdict::no("{} tiles of N exceed the launch's {}", tiles, kGroupedMaxRowTiles);
    }
    return Verdict::yes();
  }

  static void plan(const GroupedGemmWgradParams& p, const Target&, kernels::Plan& plan) {
    const int64_t m = p.m(), n = p.n(), k = p.k(), g = p.groups();
    const kernels::GroupedGemmTile& t = kernels::kGroupedWgradTiles[0];
    const bool aligned = aligned16(p.dy.data) && aligned16(p.x.data) && n % 8 == 0 && k % 8 == 0;
    void* schedule = plan.piece(plan.workspace.add("schedule", grouped_schedule_bytes(g, 0)));
    const kernels::GroupedScheduleArgs sched{
        p.group_sizes.data, schedule, static_cast<int32_t>(g), static_cast<int32_t>(m), t.bm, 0};
    plan.launch(kernels::kGroupedScheduleKernel, {1, 1, 1},
                {kernels::grouped_gemm::kScheduleThreads, 1, 1}, sched);
    const kernels::GroupedWgradArgs args{p.dy.data,
                                         p.x.data,
                                         schedule,
                                         p.dw.data,
                                         static_cast<int32_t>(m),
                                         static_cast<int32_t>(n),
                                         static_cast<int32_t>(k),
                                         static_cast<int32_t>(g),
                                         kernels::grouped_out_type(p.dw.dtype)};
    plan.launch(kernels::grouped_wgrad_kernel(0, p.dy.dtype, aligned),
                {static_cast<uint32_t>(ceil_div(k, t.bn)), static_cast<uint32_t>(ceil_div(n, t.bm)),
                 static_cast<uint32_t>(g)},
                {static_cast<uint32_t>(t.threads), 1, 1}, args);
    plan.note("tile_m", t.bm);
    plan.note("tile_n", t.bn);
    plan.note("aligned", aligned ? 1 : 0);
  }
};

}  // namespace jax_aiter::ops
