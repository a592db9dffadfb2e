// The portable tier of aiter.gemm_i8: our own kernels (kernels/gemm_i8.hpp) on every arch, for
// every call the ASM tier does not take (K % 128 != 0, N not a multiple of 128, sm_90, ...).
//
// The rule: on sm_90 (kGemmI8WgmmaOn), M >= 128 takes the wgmma tile kGemmI8WgmmaTile (split
// only within one wave, at most 4 ways: the bf16 w tile's rule, ops/gemm_portable.hpp). Otherwise
// the mma tile with the largest BM not above M (mma tiles are listed largest first; M below every
// BM takes the smallest). If that grid has fewer than W blocks per compute unit (decode: a few
// rows, the weights streamed by a handful of blocks), K is split so that it does: each split at
// least 4 K-steps long, at most S splits, and only while the int32 [M, N] accumulator fits
// kGemmI8AccCap. W, S = 4, 16 for tiles of BM <= 32 and 2, 4 for the larger ones (H100, forced
// splits 1..16: 1x8192x28672 ran 606 us unsplit, 124-186 us at 4-16 splits, best at 8;
// 128x4096x4096 best at 4, slower beyond; benchmarks/gpu/NOTES.md). A forced split (splitk 2..16)
// replaces the rule's: it runs exactly as asked, each split whole K steps, or the tier says no
// (more splits than K steps, or an accumulator past kGemmI8AccCap); a forced AITER kernel is not
// ours to run. The splits add exact int32 sums into the accumulator (integer addition: the same
// bits in any order) and jax_aiter_gemm_i8_finish applies the scales and bias once.
// Decode calls on sm_90 (M <= 16, no forced split, a and b 16-byte aligned) take the
// weight-streaming kernel instead (jax_aiter_gemm_i8_stream: a block per 16 rows of b, K split by
// ops/gemm_stream_q_rule.hpp into int32 partial planes that jax_aiter_gemm_i8_stream_finish adds
// and scales; no memset).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string_view>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/core/verdict.hpp"
#include "jax_aiter/kernels/gemm_i8.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/kernels/tile_index.hpp"
#include "jax_aiter/ops/aiter_knobs.hpp"
#include "jax_aiter/ops/gemm_i8_params.hpp"
#include "jax_aiter/ops/gemm_stream_q_rule.hpp"

namespace jax_aiter::ops {

// The int32 accumulator of a split call: a decode-sized buffer (M x N x 4 bytes).
inline constexpr int64_t kGemmI8AccCap = int64_t{32} << 20;

constexpr bool gemm_i8_acc_fits(int64_t m, int64_t n) {
  return m > 0 && n > 0 && m * n * 4 <= kGemmI8AccCap;
}

inline constexpr std::string_view kGemmI8WgmmaTile = "w128x256";
// Whether the tier takes the w tile on sm_90: on since tests/gpu/cuda_gemm_i8_kernels check passed
// on a GPU (121 cases, exact int32 sums; benchmarks/gpu/NOTES.md, "INT8 on the wgmma engine").
inline constexpr bool kGemmI8WgmmaOn = true;

// The index of the tile named `name` in kernels::kGemmI8Tiles (its size when there is none).
constexpr size_t gemm_i8_tile_index(std::string_view name) {
  return kernels::tile_index(kernels::kGemmI8Tiles, name);
}
static_assert(gemm_i8_tile_index(kGemmI8WgmmaTile) < kernels::kGemmI8Tiles.size());

struct GemmI8PortableChoice {
  size_t tile = 0;  // index into kernels::kGemmI8Tiles
  int64_t splits = 1;
  int64_t k_chunk = 0;
  bool stream = false;  // the decode kernel (tile unused; splits, k_chunk its own)
};

// wgmma: take the w tile where M allows (sm_90 only: elsewhere it runs t128x128's tile, no better).
// requested: a forced split (1: none), taken as far as whole K steps and the accumulator allow
// (the caller compares).
constexpr GemmI8PortableChoice choose_portable_gemm_i8(int64_t m, int64_t n, int64_t k,
                                                       int compute_units, bool wgmma = false,
                                                       std::optional<int64_t> requested = {}) {
  const auto tiles = kernels::kGemmI8Tiles;
  GemmI8PortableChoice c;
  c.tile = tiles.size();
  const size_t w = gemm_i8_tile_index(kGemmI8WgmmaTile);
  if (wgmma && m >= tiles[w].bm) {
    c.tile = w;
  } else {
    for (size_t i = 0; i < tiles.size(); ++i) {
      if (tiles[i].name[0] == 'w') continue;
      c.tile = i;  // the first that fits, else the last (smallest) mma tile
      if (tiles[i].bm <= m) break;
    }
  }
  const kernels::GemmI8Tile& t = tiles[c.tile];
  const int64_t blocks = ceil_div(m, t.bm) * ceil_div(n, t.bn);
  const bool small = t.bm <= 32, wgmma_tile = c.tile == w;
  const int64_t wanted = (wgmma_tile ? 1 : small ? 4 : 2) * int64_t{compute_units};
  int64_t splits = 1;
  if (gemm_i8_acc_fits(m, n)) {
    if (requested) {
      splits = std::min(*requested, ceil_div(k, int64_t{t.bk}));
    } else if (wgmma_tile) {
      splits = std::clamp<int64_t>(wanted / blocks, 1,
                                   std::min<int64_t>(std::max<int64_t>(k / (4 * t.bk), 1), 4));
    } else if (blocks < wanted) {
      splits = std::min({ceil_div(wanted, blocks), std::max<int64_t>(k / (4 * t.bk), 1),
                         small ? kGemmI8MaxSplit : int64_t{4}});
    }
  }
  c.k_chunk = splits > 1 ? ceil_div(ceil_div(k, splits), t.bk) * t.bk : k;
  c.splits = k > 0 ? ceil_div(k, c.k_chunk) : 1;  // no empty split
  return c;
}
static_assert(kernels::kGemmI8Tiles[choose_portable_gemm_i8(1, 4096, 4096, 132).tile].bm == 16);
static_assert(kernels::kGemmI8Tiles[choose_portable_gemm_i8(100, 4096, 4096, 132).tile].bm == 64);
static_assert(choose_portable_gemm_i8(1, 8192, 28672, 132).splits == 9);
static_assert(choose_portable_gemm_i8(1, 4096, 4096, 132).splits == 16);
static_assert(choose_portable_gemm_i8(128, 4096, 4096, 132).splits == 4);
static_assert(choose_portable_gemm_i8(4096, 4096, 4096, 132).splits == 1);
static_assert(choose_portable_gemm_i8(1, 4096, 4096, 1).splits == 1);
static_assert(choose_portable_gemm_i8(4096, 4096, 4096, 132, true).tile ==
              gemm_i8_tile_index(kGemmI8WgmmaTile));
static_assert(choose_portable_gemm_i8(4096, 4096, 4096, 132, true).splits == 1);
static_assert(choose_portable_gemm_i8(128, 4096, 4096, 132, true).splits == 4);
static_assert(choose_portable_gemm_i8(16, 4096, 4096, 132, true).tile ==
              choose_portable_gemm_i8(16, 4096, 4096, 132).tile);

struct GemmI8PortableTier {
  static constexpr std::string_view kName = "portable";
  using Choice = GemmI8PortableChoice;

  static Decision<Choice> supports(const GemmI8Params& p, const Target& t) {
    const int64_t m = p.m(), n = p.n(), k = p.k();
    const auto requested = p.aiter.split();
    if (const Verdict v = portable_takes_knobs(p.aiter, kGemmI8MaxSplit); !v.ok()) return v;
    if (t.arch == Arch::kSm90 && m <= kStreamQMaxM && !requested &&
        reinterpret_cast<uintptr_t>(p.a.data) % 16 == 0 &&
        reinterpret_cast<uintptr_t>(p.b.data) % 16 == 0) {
      const StreamQSplit s = choose_stream_q_split(n, k, t.compute_units);
      return Choice{0, s.splits, s.k_chunk, true};
    }
    if (requested && *requested > 1 && !gemm_i8_acc_fits(m, n)) {
      return Verdict::no(
          "splitk {}: the int32 accumulator of a split call, {} x {} x 4 bytes, "
          "would pass 32 MiB",
          *requested, m, n);
    }
    const Choice c = choose_portable_gemm_i8(m, n, k, t.compute_units,
                                             kGemmI8WgmmaOn && t.arch == Arch::kSm90, requested);
    if (requested && c.splits != *requested) {
      return Verdict::no("splitk {}: K = {} cuts into {} splits of whole K steps at most",
                         *requested, k, c.splits);
    }
    return c;
  }

  static int64_t workspace_bytes(const GemmI8Params& p) {
    return std::max(gemm_i8_acc_fits(p.m(), p.n()) ? p.m() * p.n() * 4 : 0,
                    stream_q_workspace_bytes(p.m(), p.n()));
  }

  static void plan_stream(const GemmI8Params& p, const Choice& c, kernels::Plan& plan) {
    const int64_t m = p.m(), n = p.n(), k = p.k();
    void* partials = stream_q_partials(plan, c.splits, m, n);
    const auto m32 = static_cast<int32_t>(m), n32 = static_cast<int32_t>(n);
    const void* bias = p.bias ? p.bias->data : nullptr;
    const kernels::GemmI8StreamArgs args{p.a.data,
                                         p.b.data,
                                         p.a_scale.data,
                                         p.b_scale.data,
                                         bias,
                                         p.out.data,
                                         partials,
                                         m32,
                                         n32,
                                         static_cast<int32_t>(k),
                                         static_cast<int32_t>(k),
                                         static_cast<int32_t>(c.k_chunk),
                                         static_cast<int32_t>(c.splits)};
    launch_stream_q(plan, kernels::kGemmI8Stream, n, c.splits, args);
    if (c.splits > 1) {
      const kernels::GemmI8StreamFinishArgs finish{partials,
                                                   p.a_scale.data,
                                                   p.b_scale.data,
                                                   bias,
                                                   p.out.data,
                                                   m32,
                                                   n32,
                                                   static_cast<int32_t>(c.splits)};
      launch_stream_q_finish(plan, kernels::kGemmI8StreamFinish, m, n, finish);
    }
    note_stream_q(plan, c.splits);
  }

  static void plan(const GemmI8Params& p, const Target&, const Choice& c, kernels::Plan& plan) {
    if (c.stream) {
      plan_stream(p, c, plan);
      return;
    }
    const int64_t m = p.m(), n = p.n(), k = p.k();
    const kernels::GemmI8Tile& tile = kernels::kGemmI8Tiles[c.tile];
    const kernels::Dim3 grid{static_cast<uint32_t>(ceil_div(n, tile.bn)),
                             static_cast<uint32_t>(ceil_div(m, tile.bm)),
                             static_cast<uint32_t>(c.splits)};
    const kernels::Dim3 block{static_cast<uint32_t>(tile.threads), 1, 1};
    const auto m32 = static_cast<int32_t>(m), n32 = static_cast<int32_t>(n),
               k32 = static_cast<int32_t>(k);
    const void* bias = p.bias ? p.bias->data : nullptr;
    if (c.splits == 1) {
      const kernels::GemmI8Args args{
          p.a.data, p.b.data, p.a_scale.data, p.b_scale.data, bias, p.out.data, m32, n32, k32, k32};
      plan.launch(tile.kernel, grid, block, args, tile.kernel.dynamic_shared);
    } else {
      const uint64_t acc_bytes = static_cast<uint64_t>(m * n * 4);
      void* acc = plan.piece(plan.workspace.add("acc", static_cast<int64_t>(acc_bytes)));
      plan.memset(acc, acc_bytes, 0, "acc");
      const kernels::GemmI8SplitArgs split{
          p.a.data, p.b.data, acc, m32, n32, k32, k32, static_cast<int32_t>(c.k_chunk)};
      plan.launch(tile.split_kernel, grid, block, split, tile.split_kernel.dynamic_shared);
      const kernels::GemmI8FinishArgs finish{
          acc, p.a_scale.data, p.b_scale.data, bias, p.out.data, m32, n32};
      plan.launch(
          kernels::kGemmI8Finish,
          {static_cast<uint32_t>(ceil_div(m * n, int64_t{kernels::kGemmI8FinishThreads})), 1, 1},
          {kernels::kGemmI8FinishThreads, 1, 1}, finish);
    }
    plan.note("tile_m", tile.bm);
    plan.note("tile_n", tile.bn);
    plan.note("split", c.splits);
  }
};

}  // namespace jax_aiter::ops
