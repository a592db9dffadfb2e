// Portable grouped GEMM (a ragged dot): rows of x grouped by expert, group g the next
// group_sizes[g] rows, each group multiplied by its own weight w[g]; fp32 accumulation on the
// tensor cores (mma.sync on sm_90, MFMA on gfx942/gfx950). See kernels/shared/grouped_gemm.h for
// the three products (forward, dgrad, wgrad), the fp8 block-scale forward and the schedule.
//
// group_sizes is device data: no handler reads it. A one-block pre-kernel turns it into the
// schedule (group offsets and the list of row tiles, each inside one group) in the workspace;
// the row-tile kernels' blocks read their (group, first row, rows) from it, and blocks past the
// live tiles exit. Rows past the groups get zeros from tiles of a "tail" part.
//
// The parameter lists ARE the ABI: include/jax_aiter/kernels/grouped_gemm.hpp mirrors them field
// by field (GroupedScheduleArgs, GroupedGemmArgs, GroupedWgradArgs).
//
// Build: as gemm.kernel.cpp (nvcc -cubin -arch=sm_90 -O3 -std=c++17 -x cu -I kernels_co/include
// -I include; clang++-22 -x hip ... -nogpuinc). Static shared memory only.
#include "jax_aiter/kernels/shared/grouped_gemm.h"
#include "jax_aiter_gemm_fp8bs_tile.hpp"
#include "jax_aiter_grouped_gemm_tile.hpp"

namespace ja {

namespace gg = jax_aiter::kernels::grouped_gemm;

// ---- the schedule ------------------------------------------------------------------------------

// Inclusive scan of v over the block's kScheduleThreads threads, sums capped at cap (the caps
// keep a saturating sum associative: min(cap, min(cap, a) + b) = min(cap, a + b) for a, b >= 0).
JA_DEVICE int scan_block(int v, int* buf, int cap) {
  constexpr int T = gg::kScheduleThreads;
  const int tid = thread_id();
  buf[tid] = v;
  barrier();
  for (int d = 1; d < T; d <<= 1) {
    const int other = tid >= d ? buf[tid - d] : 0;
    barrier();
    const int64_t sum = int64_t{v} + other;
    v = sum > cap ? cap : static_cast<int>(sum);
    buf[tid] = v;
    barrier();
  }
  return v;
}

// Parts 0..G-1 are the groups, part G the tail [rows covered, M). A round scans kScheduleThreads
// parts: their clamped sizes (rows), then their row tiles.
JA_DEVICE void grouped_schedule(const int* sizes, int* s, int G, int M, int bm, int capacity) {
  constexpr int T = gg::kScheduleThreads;
  JA_SHARED int rows_scan[T];
  JA_SHARED int tiles_scan[T];
  JA_SHARED int carry[2];  // rows covered and row tiles before this round
  int* offsets = s + gg::offsets_at();
  int* starts = s + gg::tile_starts_at(G);
  const int tid = thread_id();
  if (tid == 0) carry[0] = carry[1] = 0;
  barrier();
  for (int base = 0; base <= G; base += T) {
    const int i = base + tid;
    const int rows_before = carry[0], tiles_before = carry[1];
    int v = i < G ? sizes[i] : 0;
    v = v < 0 ? 0 : (v > M ? M : v);
    const int incl = scan_block(v, rows_scan, M);
    const int excl = tid > 0 ? rows_scan[tid - 1] : 0;
    const int64_t first64 = int64_t{rows_before} + excl, end64 = int64_t{rows_before} + incl;
    const int first = first64 > M ? M : static_cast<int>(first64);
    const int end = i == G ? M : (end64 > M ? M : static_cast<int>(end64));
    const int rows = i <= G ? end - first : 0;
    const int tiles = (rows + bm - 1) / bm;
    const int tiles_incl = scan_block(tiles, tiles_scan, 0x7fffffff);
    const int tile_first = tiles_before + tiles_incl - tiles;
    if (i <= G) {
      offsets[i] = first;
      starts[i] = tile_first;
    }
    if (i == G) {
      offsets[G + 1] = M;
      starts[G + 1] = tile_first + tiles;
      s[0] = tile_first + tiles;
      s[1] = first;
    }
    if (tid == T - 1) {  // every thread has read the carry (the scans' barriers)
      const int64_t covered = int64_t{rows_before} + incl;
      carry[0] = covered > M ? M : static_cast<int>(covered);
      carry[1] = tiles_before + tiles_incl;
    }
    barrier();
  }
  // The tile list: tile t belongs to the last part whose first tile is at most t (empty parts
  // share their first tile with the next part).
  const int live = carry[1];
  for (int t = tid; t < live && t < capacity; t += T) {
    int lo = 0, hi = G;
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (starts[mid] <= t) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    const int row0 = offsets[lo] + (t - starts[lo]) * bm;
    const int left = offsets[lo + 1] - row0;
    Pack<int, 4> e;
    e.v[0] = lo;
    e.v[1] = row0;
    e.v[2] = left < bm ? left : bm;
    e.v[3] = 0;
    *reinterpret_cast<Pack<int, 4>*>(s + gg::tiles_at(G) + 4 * static_cast<int64_t>(t)) = e;
  }
}

// ---- the row-tile kernels (forward, dgrad, fp8 forward) ----------------------------------------

// This block's row tile: {group, first row, rows}; false past the live tiles or out's columns.
JA_DEVICE bool row_tile(const void* schedule, int G, int N, int BN, Pack<int, 4>& e) {
  const int* s = static_cast<const int*>(schedule);
  const int y = block_id_y();
  if (y >= s[0] || block_id() * BN >= N) return false;
  e = *reinterpret_cast<const Pack<int, 4>*>(s + gg::tiles_at(G) + 4 * static_cast<int64_t>(y));
  return true;
}

template <bool kFirst, class A, class B>
struct Pick {
  using type = A;
};
template <class A, class B>
struct Pick<false, A, B> {
  using type = B;
};

// forward: GemmTile (the GEMM op's: cp.async stages on sm_90), w[g] K-major; dgrad: the staged
// tile, w[g] read transposed (w [G, K, N] as stored: step k of the reduction is a row of N).
template <typename E, int BM, int BN, int THREADS, bool kAligned, bool kDgrad>
JA_DEVICE void grouped_rows(const void* x, const void* w, const void* schedule, void* out, int N,
                            int K, int G, int out_dtype) {
  constexpr int BK = 32;
  using T = typename Pick<
      kDgrad,
      StagedTile<BM, BN, 2 * BK, THREADS, MmaWarp16<E, BK>, Major::kRows, Major::kCols, kAligned>,
      GemmTile<E, BM, BN, BK, THREADS, kAligned>>::type;
  JA_SHARED Pack<uint16_t, 8> smem[T::kSmemElems / 8];
  Pack<int, 4> e;
  if (!row_tile(schedule, G, N, BN, e)) return;
  const int g = e.v[0], row0 = e.v[1], rows = e.v[2];
  const int n0 = block_id() * BN;
  const int cols = N - n0 < BN ? N - n0 : BN;
  const int64_t out0 = static_cast<int64_t>(row0) * N + n0;
  if (g >= G) {  // the tail past the groups: zeros
    with_out_type(out_dtype, [&](auto o) {
      using O = decltype(o);
      zero_rows<O, THREADS>(static_cast<typename O::Storage*>(out) + out0, N, rows, cols);
    });
    return;
  }
  const auto* xb = static_cast<const unsigned char*>(x);
  const auto* wb = static_cast<const unsigned char*>(w);
  const int64_t wg = static_cast<int64_t>(g) * N * K;  // elements of one group's weight
  const Operand b =
      kDgrad ? Operand{wb + 2 * (wg + n0), 2 * static_cast<int64_t>(N)}
             : Operand{wb + 2 * (wg + static_cast<int64_t>(n0) * K), 2 * static_cast<int64_t>(K)};
  T t;
  t.run(reinterpret_cast<uint16_t*>(smem),
        Operand{xb + 2 * static_cast<int64_t>(row0) * K, 2 * static_cast<int64_t>(K)}, rows, b,
        cols, 0, K);
  with_out_type(out_dtype, [&](auto o) {
    using O = decltype(o);
    store_rows<O>(static_cast<typename O::Storage*>(out) + out0, N, rows, cols, t);
  });
}

// Blocks a multiprocessor should hold (caps the registers on sm_90): the GEMM tile's own hint for
// the forward (two for its cp.async tiles); the staged tiles keep two operands' chunks in registers
// and run one.
template <typename E, int BM, int BN, int THREADS, bool kAligned, bool kDgrad>
struct RowsResident {
  static constexpr int value = kDgrad ? 1 : GemmTile<E, BM, BN, 32, THREADS, kAligned>::kMinBlocks;
};

// The fp8 block-scale forward: the staged tile over e4m3 bytes (both operands K-major, BK 64
// bytes: a scale block is two k-tiles), the fp8 block-scale GEMM's warp tiles (F8Warp: OCP e4m3
// on sm_90 and gfx950, e4m3fnuz on gfx942: the device's own format), the scales folded in at the
// end of every 128 of K: x_scale[row][kb] * w_scale[g][n0 / 128][kb].
struct Fp8Warp64 {
  template <int TM, int TN>
  using Tile = typename F8Warp<false>::template Tile<64, TM, TN>;
};

template <int BM, int BN, int THREADS>
JA_DEVICE void grouped_fp8(const void* x, const void* w, const void* x_scale, const void* w_scale,
                           const void* schedule, void* out, int N, int K, int G) {
  static_assert(BN <= gg::kScaleBlock, "one w_scale row a block");
  constexpr int kRowBytes = 64;
  using T = StagedTile<BM, BN, kRowBytes, THREADS, Fp8Warp64, Major::kRows, Major::kRows, true, 1>;
  JA_SHARED Pack<uint16_t, 8> smem[T::kSmemElems / 8];
  Pack<int, 4> e;
  if (!row_tile(schedule, G, N, BN, e)) return;
  const int g = e.v[0], row0 = e.v[1], rows = e.v[2];
  const int n0 = block_id() * BN;
  const int cols = N - n0 < BN ? N - n0 : BN;
  uint16_t* dst = static_cast<uint16_t*>(out) + static_cast<int64_t>(row0) * N + n0;
  if (g >= G) {
    zero_rows<BF16, THREADS>(dst, N, rows, cols);
    return;
  }
  const int kblocks = K / gg::kScaleBlock;
  const int nblocks = (N + gg::kScaleBlock - 1) / gg::kScaleBlock;
  const float* xs = static_cast<const float*>(x_scale) + static_cast<int64_t>(row0) * kblocks;
  const float* ws = static_cast<const float*>(w_scale) +
                    (static_cast<int64_t>(g) * nblocks + n0 / gg::kScaleBlock) * kblocks;
  const auto* xb = static_cast<const unsigned char*>(x);
  const auto* wb = static_cast<const unsigned char*>(w);
  T t;
  t.run(reinterpret_cast<uint16_t*>(smem),
        Operand{xb + static_cast<int64_t>(row0) * K, static_cast<int64_t>(K)}, rows,
        Operand{wb + (static_cast<int64_t>(g) * N + n0) * K, static_cast<int64_t>(K)}, cols, 0, K,
        [&](int kt) {
          const int k_next = (kt + 1) * kRowBytes;
          if (k_next % gg::kScaleBlock != 0 && k_next < K) return;
          const int kb = (k_next - 1) / gg::kScaleBlock;
          const float s_w = ws[kb];
          t.tile.fold([&](int r) { return r < rows ? xs[r * kblocks + kb] * s_w : 0.f; });
        });
  store_rows<BF16>(dst, N, rows, cols, t);
}

// ---- wgrad -------------------------------------------------------------------------------------

// dw[g][n0.., k0..] = dy_g^T . x_g over group g's rows (both read transposed: a reduction step is
// a row of dy and of x). A group with no rows stores zeros.
template <typename E, int BM, int BN, int THREADS, bool kAligned>
JA_DEVICE void grouped_wgrad(const void* dy, const void* x, const void* schedule, void* dw, int N,
                             int K, int out_dtype) {
  constexpr int BK = 32;
  using T =
      StagedTile<BM, BN, 2 * BK, THREADS, MmaWarp16<E, BK>, Major::kCols, Major::kCols, kAligned>;
  JA_SHARED Pack<uint16_t, 8> smem[T::kSmemElems / 8];
  const int k0 = block_id() * BN, n0 = block_id_y() * BM, g = block_id_z();
  if (n0 >= N || k0 >= K) return;
  const int* offsets = static_cast<const int*>(schedule) + gg::offsets_at();
  const int r0 = offsets[g], r1 = offsets[g + 1];
  const int rows_a = N - n0 < BM ? N - n0 : BM, rows_b = K - k0 < BN ? K - k0 : BN;
  T t;
  t.run(reinterpret_cast<uint16_t*>(smem),
        Operand{static_cast<const unsigned char*>(dy) + 2 * static_cast<int64_t>(n0),
                2 * static_cast<int64_t>(N)},
        rows_a,
        Operand{static_cast<const unsigned char*>(x) + 2 * static_cast<int64_t>(k0),
                2 * static_cast<int64_t>(K)},
        rows_b, r0, r1);
  with_out_type(out_dtype, [&](auto o) {
    using O = decltype(o);
    auto* dst = static_cast<typename O::Storage*>(dw) + (static_cast<int64_t>(g) * N + n0) * K + k0;
    store_rows<O>(dst, K, rows_a, rows_b, t);
  });
}

}  // namespace ja

// The parameter list is GroupedScheduleArgs'.
JA_KERNEL_BOUNDED(jax_aiter::kernels::grouped_gemm::kScheduleThreads)
void jax_aiter_grouped_gemm_schedule(const void* group_sizes, void* schedule, int G, int M, int bm,
                                     int capacity) {
  ja::wait_for_prior_grids();
  ja::allow_dependent_grids();
  ja::grouped_schedule(static_cast<const int*>(group_sizes), static_cast<int*>(schedule), G, M, bm,
                       capacity);
}

// One row-tile kernel per (tile, dtype, product, load variant); the parameter list is
// GroupedGemmArgs'.
#define JA_GG_ROWS_KERNEL(tag, E, kind, dgrad, name, BM, BN, THREADS, variant, aligned)         \
  JA_KERNEL_BOUNDED_RESIDENT(THREADS,                                                           \
                             (ja::RowsResident<ja::E, BM, BN, THREADS, aligned, dgrad>::value)) \
  void jax_aiter_grouped_gemm_##tag##_##kind##_##name##_##variant(                              \
      const void* x, const void* w, [[maybe_unused]] const void* x_scale,                       \
      [[maybe_unused]] const void* w_scale, const void* schedule, void* out,                    \
      [[maybe_unused]] int M, int N, int K, int G, int out_dtype, [[maybe_unused]] int fnuz) {  \
    ja::wait_for_prior_grids();                                                                 \
    ja::allow_dependent_grids();                                                                \
    ja::grouped_rows<ja::E, BM, BN, THREADS, aligned, dgrad>(x, w, schedule, out, N, K, G,      \
                                                             out_dtype);                        \
  }
#define JA_GG_TILE_KERNELS(name, BM, BN, THREADS)                                     \
  JA_GG_ROWS_KERNEL(bf16, BF16, fwd, false, name, BM, BN, THREADS, aligned, true)     \
  JA_GG_ROWS_KERNEL(bf16, BF16, fwd, false, name, BM, BN, THREADS, any, false)        \
  JA_GG_ROWS_KERNEL(bf16, BF16, dgrad, true, name, BM, BN, THREADS, aligned, true)    \
  JA_GG_ROWS_KERNEL(bf16, BF16, dgrad, true, name, BM, BN, THREADS, any, false)       \
  JA_GG_ROWS_KERNEL(f16, F16, fwd, false, name, BM, BN, THREADS, aligned, true)       \
  JA_GG_ROWS_KERNEL(f16, F16, fwd, false, name, BM, BN, THREADS, any, false)          \
  JA_GG_ROWS_KERNEL(f16, F16, dgrad, true, name, BM, BN, THREADS, aligned, true)      \
  JA_GG_ROWS_KERNEL(f16, F16, dgrad, true, name, BM, BN, THREADS, any, false)         \
  JA_KERNEL_BOUNDED(THREADS)                                                          \
  void jax_aiter_grouped_gemm_fp8_##name(                                             \
      const void* x, const void* w, const void* x_scale, const void* w_scale,         \
      const void* schedule, void* out, [[maybe_unused]] int M, int N, int K, int G,   \
      [[maybe_unused]] int out_dtype, [[maybe_unused]] int fnuz) {                    \
    ja::wait_for_prior_grids();                                                       \
    ja::allow_dependent_grids();                                                      \
    ja::grouped_fp8<BM, BN, THREADS>(x, w, x_scale, w_scale, schedule, out, N, K, G); \
  }

JAX_AITER_GROUPED_GEMM_TILES(JA_GG_TILE_KERNELS)

// The parameter list is GroupedWgradArgs'.
#define JA_GG_WGRAD_KERNEL(tag, E, name, BM, BN, THREADS, variant, aligned)                   \
  JA_KERNEL_BOUNDED(THREADS)                                                                  \
  void jax_aiter_grouped_gemm_##tag##_wgrad_##name##_##variant(                               \
      const void* dy, const void* x, const void* schedule, void* dw, [[maybe_unused]] int M,  \
      int N, int K, [[maybe_unused]] int G, int out_dtype) {                                  \
    ja::wait_for_prior_grids();                                                               \
    ja::allow_dependent_grids();                                                              \
    ja::grouped_wgrad<ja::E, BM, BN, THREADS, aligned>(dy, x, schedule, dw, N, K, out_dtype); \
  }
#define JA_GG_WGRAD_KERNELS(name, BM, BN, THREADS)                     \
  JA_GG_WGRAD_KERNEL(bf16, BF16, name, BM, BN, THREADS, aligned, true) \
  JA_GG_WGRAD_KERNEL(bf16, BF16, name, BM, BN, THREADS, any, false)    \
  JA_GG_WGRAD_KERNEL(f16, F16, name, BM, BN, THREADS, aligned, true)   \
  JA_GG_WGRAD_KERNEL(f16, F16, name, BM, BN, THREADS, any, false)

JAX_AITER_GROUPED_WGRAD_TILES(JA_GG_WGRAD_KERNELS)
