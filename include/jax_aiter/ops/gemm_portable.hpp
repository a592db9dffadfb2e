// The portable tier of aiter.gemm: our own kernels (kernels/gemm.hpp) on every arch, for every call
// the ASM tier does not take (f16, K % 64 != 0, N no row's tile divides, f16 out, ...).
//
// The rule: decode calls (M <= kGemmStreamMaxM) on sm_90 take the weight-streaming tile
// kGemmDecodeTile (an s tile: B straight from global memory into mma registers); M >= 128 with
// K % 8 == 0 on sm_90 the wgmma tile kGemmWgmmaTile; everything else the t tile with the largest
// BM not above M (the first in list order; the smallest t tile below that). If the grid has fewer
// than two blocks per compute unit (one for the s and w tiles), K is split so that it does, each
// split at least 4 K-tiles long, at most gemm_max_split(M, N) (its float32 partials must fit the
// workspace); the splits write partials and jax_aiter_gemm_reduce sums them in split order (no
// atomics: the result is the same bits every run). A w tile splits only into one wave (blocks x
// splits <= compute units): a second wave of a few blocks costs as long as the first. The t tiles
// are listed largest first (t128x128w4 leads), so "the first with BM <= M" is the largest that
// fits. Tiles the rule names nowhere (the other s tiles) are there to be timed
// (tests/gpu/cuda_gemm_kernels.cpp bench). A forced split (splitk 2..16) replaces the rule's: it
// runs exactly as asked, each split whole K tiles, or the tier says no (more splits than K tiles,
// or than the workspace holds partials for: gemm_max_split). A forced AITER kernel is not ours to
// run: the tier says no.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string_view>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/core/verdict.hpp"
#include "jax_aiter/kernels/gemm.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/kernels/tile_index.hpp"
#include "jax_aiter/ops/aiter_knobs.hpp"
#include "jax_aiter/ops/gemm_params.hpp"

namespace jax_aiter::ops {

struct GemmPortableChoice {
  size_t tile = 0;  // index into kernels::kGemmTiles
  int64_t splits = 1;
  int64_t k_chunk = 0;
};

inline constexpr int64_t kGemmStreamMaxM = 16;
inline constexpr std::string_view kGemmDecodeTile = "s16x16";
inline constexpr std::string_view kGemmWgmmaTile = "w128x256";

// The index of the tile named `name` in kernels::kGemmTiles (its size when there is none).
constexpr size_t gemm_tile_index(std::string_view name) {
  return kernels::tile_index(kernels::kGemmTiles, name);
}
static_assert(gemm_tile_index(kGemmDecodeTile) < kernels::kGemmTiles.size());
static_assert(kernels::kGemmTiles[gemm_tile_index(kGemmDecodeTile)].bm >= kGemmStreamMaxM);
static_assert(gemm_tile_index(kGemmWgmmaTile) < kernels::kGemmTiles.size());

// sm90: the target runs the s tiles' streaming kernels and the w tile's wgmma (sm_90; elsewhere
// they fall back to a GemmTile, never better than a t tile's). requested: a forced split (1:
// none), which the choice takes as far as whole K tiles allow (the caller compares).
constexpr GemmPortableChoice choose_portable_gemm(int64_t m, int64_t n, int64_t k,
                                                  int compute_units, bool sm90 = false,
                                                  std::optional<int64_t> requested = {}) {
  const auto tiles = kernels::kGemmTiles;
  GemmPortableChoice c;
  const size_t wgmma = gemm_tile_index(kGemmWgmmaTile);
  if (sm90 && m <= kGemmStreamMaxM) {
    c.tile = gemm_tile_index(kGemmDecodeTile);
  } else if (sm90 && m >= tiles[wgmma].bm && k % 8 == 0) {
    c.tile = wgmma;
  } else {
    size_t smallest = tiles.size();
    c.tile = tiles.size();
    for (size_t i = 0; i < tiles.size(); ++i) {
      if (tiles[i].name[0] != 't') continue;
      if (smallest == tiles.size() || tiles[i].bm < tiles[smallest].bm) smallest = i;
      if (c.tile == tiles.size() && tiles[i].bm <= m) c.tile = i;
    }
    if (c.tile == tiles.size()) c.tile = smallest;
  }
  const kernels::GemmTile& t = tiles[c.tile];
  const int64_t blocks = ceil_div(m, t.bm) * ceil_div(n, t.bn);
  // H100 (cuda_gemm_kernels bench, benchmarks/gpu/NOTES.md): the streaming tiles ran fastest
  // unsplit from one block per SM (s16x16 at 256-512 blocks: 2040-2923 GB/s split 1, slower split
  // 2-8); the t tiles want two blocks per SM but no more than 4 splits (128x8192x28672: 4 splits
  // 0.265 ms, 5 splits 0.341 ms; 128x4096x4096: 4 splits 0.034 ms, 9 splits 0.039 ms).
  const bool stream = t.name[0] == 's', wgmma_tile = c.tile == wgmma;
  const int64_t wanted = (stream || wgmma_tile ? 1 : 2) * int64_t{compute_units};
  const int64_t most = std::min({gemm_max_split(m, n), std::max<int64_t>(k / (4 * t.bk), 1),
                                 stream ? kGemmMaxSplit : int64_t{4}});
  int64_t splits = blocks < wanted ? std::min(ceil_div(wanted, blocks), most) : 1;
  if (wgmma_tile) splits = std::clamp<int64_t>(wanted / blocks, 1, most);
  if (requested) splits = std::min(*requested, ceil_div(k, int64_t{t.bk}));
  c.k_chunk = splits > 1 ? ceil_div(ceil_div(k, splits), t.bk) * t.bk : k;
  c.splits = ceil_div(k, c.k_chunk);  // no empty split
  return c;
}

struct GemmPortableTier {
  static constexpr std::string_view kName = "portable";
  using Choice = GemmPortableChoice;

  static Decision<Choice> supports(const GemmParams& p, const Target& t) {
    const int64_t m = p.m(), n = p.n(), k = p.k();
    const auto requested = p.aiter.split();
    if (const Verdict v = portable_takes_knobs(p.aiter, gemm_max_split(m, n)); !v.ok()) return v;
    const Choice c =
        choose_portable_gemm(m, n, k, t.compute_units, t.arch == Arch::kSm90, requested);
    if (requested && c.splits != *requested) {
      return Verdict::no("splitk {}: K = {} cuts into {} splits of whole K tiles at most",
                         *requested, k, c.splits);
    }
    return c;
  }

  static void plan(const GemmParams& p, const Target&, const Choice& c, kernels::Plan& plan) {
    const int64_t m = p.m(), n = p.n(), k = p.k();
    const kernels::GemmTile& tile = kernels::kGemmTiles[c.tile];
    const bool aligned = k % 8 == 0 && reinterpret_cast<uintptr_t>(p.a.data) % 16 == 0 &&
                         reinterpret_cast<uintptr_t>(p.b.data) % 16 == 0;
    const void* bias = p.bias ? p.bias->data : nullptr;
    void* partials = nullptr;
    if (c.splits > 1) {
      partials = plan.piece(plan.workspace.add("partials", c.splits * m * n * 4));
    }
    const kernels::GemmArgs args{p.a.data,
                                 p.b.data,
                                 c.splits > 1 ? nullptr : bias,
                                 p.out.data,
                                 partials,
                                 static_cast<int32_t>(m),
                                 static_cast<int32_t>(n),
                                 static_cast<int32_t>(k),
                                 static_cast<int32_t>(c.k_chunk),
                                 kernels::gemm_out_type(p.out.dtype),
                                 static_cast<int32_t>(c.splits)};
    const kernels::KernelInfo& kernel = kernels::gemm_kernel(c.tile, p.a.dtype, aligned);
    plan.launch(kernel,
                {static_cast<uint32_t>(ceil_div(n, tile.bn)),
                 static_cast<uint32_t>(ceil_div(m, tile.bm)), static_cast<uint32_t>(c.splits)},
                {static_cast<uint32_t>(tile.threads), 1, 1}, args, kernel.dynamic_shared);
    if (c.splits > 1) {
      namespace G = kernels::gemm;
      const kernels::GemmReduceArgs reduce{partials,
                                           bias,
                                           p.out.data,
                                           static_cast<int32_t>(m),
                                           static_cast<int32_t>(n),
                                           static_cast<int32_t>(c.splits),
                                           kernels::gemm_out_type(p.out.dtype),
                                           kernels::gemm_out_type(p.a.dtype)};
      plan.launch(
          kernels::kGemmReduceKernel,
          {static_cast<uint32_t>(ceil_div(m * n, int64_t{G::kReduceThreads} * G::kReduceVec)), 1,
           1},
          {G::kReduceThreads, 1, 1}, reduce);
    }
    plan.note("tile_m", tile.bm);
    plan.note("tile_n", tile.bn);
    plan.note("split", c.splits);
  }
};

}  // namespace jax_aiter::ops
