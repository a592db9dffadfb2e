// The register-staged block tile of our grouped-GEMM kernels (kernels_co/grouped_gemm.kernel.cpp)
// for the products whose operands are not both K-contiguous:
//
//   acc[BM x BN] = A[rows, k_begin:k_end] . B[rows, k_begin:k_end]^T, fp32 accumulation,
//
// where each operand is either
//   Major::kRows  row r (an output index) at base + r * stride bytes, the reduction contiguous
//                 (the GEMM tile's layout: x, w of the forward, dy of dgrad), or
//   Major::kCols  reduction step k at base + k * stride bytes, the rows contiguous (a transposed
//                 operand: w of dgrad read as [K, N], dy and x of wgrad).
// Both land in the shared tile the GEMM's warp tiles read (TileLayout of kRowBytes / 2 16-bit
// units, A rows [0, BM) then B rows [BM, BM + BN)), so the tensor-core steps are the GEMM's
// (WarpTile: bf16/f16 mma.sync or MFMA) or the fp8 block-scale GEMM's (F8Warp): a kCols operand is
// transposed as it is stored, one 16-bit element at a time. That costs shared-memory stores, not
// an extra pass of the operand through memory (XLA would transpose all of w for every dgrad).
//
// A kCols loader thread moves 16 contiguous bytes (8 rows of one step); lanes go in pairs over
// 32 bytes (a whole sector) and then along k, so with kRowBytes 64 the 8 stores of a warp touch
// distinct banks (rows 8 apart land in the other half of TileLayout's 128-byte line).
// Loading: as GemmI8Tile's, the next k-tile's chunks go into registers before the current tile's
// MMAs and into the other of two shared buffers after them, on every target.
// Rows past the valid ones and k past k_end read as zero; kAligned: 16-byte loads (16-byte
// aligned bases and strides, valid rows of a kCols operand a multiple of 8), else element-wise
// (16-bit elements only). A kRows operand's k_begin keeps its chunks aligned (the kernels use 0).
#pragma once

#include "jax_aiter_mma.hpp"

namespace ja {

enum class Major { kRows, kCols };

// Where one operand's chunks go: R tile rows (shared rows kRow0 .. kRow0 + R) of a k-tile of
// kRowBytes reduction bytes, moved as kChunks 16-byte chunks, THREADS at a time. Plain C++ that
// also compiles on the host (tests/cpp/test_grouped_gemm_tile.cpp checks the mapping).
template <int R, int kRow0, Major kM, int kRowBytes, int kElemBytes, int THREADS>
struct StagedChunks {
  static_assert(kM == Major::kRows || kElemBytes == 2, "transposed operands are 16-bit");
  static_assert(R % 16 == 0 && kRowBytes % 16 == 0);
  static constexpr int kSteps = kRowBytes / kElemBytes;  // reduction steps of a k-tile
  static constexpr int kCpr = kRowBytes / 16;            // kRows: 16-byte chunks a row
  static constexpr int kChunks = kM == Major::kRows ? R * kCpr : (R / 8) * kSteps;
  static constexpr int kPasses = (kChunks + THREADS - 1) / THREADS;
  using Layout = TileLayout<kRowBytes / 2>;

  // Chunk i: its tile row (kCols: the first of its 8 rows) and column (kRows: its 16-byte chunk
  // of the row; kCols: its reduction step). kCols lanes go in pairs over 32 bytes, then along k.
  JA_HD static constexpr int row(int i) {
    return kM == Major::kRows ? i / kCpr : 8 * (2 * (i / (2 * kSteps)) + (i % (2 * kSteps)) % 2);
  }
  JA_HD static constexpr int col(int i) {
    return kM == Major::kRows ? i % kCpr : (i % (2 * kSteps)) / 2;
  }
  // The chunk's first reduction step, relative to the k-tile's.
  JA_HD static constexpr int step(int c) { return kM == Major::kRows ? c * (16 / kElemBytes) : c; }
  // Its source bytes at k-tile 0, from the operand's base: row r at r * stride (kRows), step k at
  // k * stride (kCols).
  JA_HD static constexpr int64_t source(int r, int c, int k_begin, int64_t stride) {
    return kM == Major::kRows ? r * stride + 16 * c + int64_t{k_begin} * kElemBytes
                              : (int64_t{k_begin} + c) * stride + 2 * r;
  }
  // The shared-stage offset (16-bit units) of the chunk's e-th 16-bit word.
  JA_HD static constexpr int dest(int r, int c, int e) {
    return kM == Major::kRows ? Layout::chunk_offset(kRow0 + r, c) + e
                              : Layout::offset(kRow0 + r + e, c);
  }
};

}  // namespace ja

#if defined(__HIP__) || defined(__CUDACC__)

#include "jax_aiter_gemm_tile.hpp"

namespace ja {

// The bf16/f16 tensor-core steps of the GEMM (WarpTile, jax_aiter_mma.hpp) over BK elements.
template <typename E, int BK>
struct MmaWarp16 {
  template <int TM, int TN>
  using Tile = WarpTile<E, BK, TM, TN>;
};

// Nothing to do after a k-tile (StagedTile::run's default hook).
struct NoStagedHook {
  JA_DEVICE void operator()(int) const {}
};

// One operand's share of a stage (StagedChunks), staged in registers.
template <int R, int kRow0, Major kM, int kRowBytes, int kElemBytes, int THREADS, bool kAligned>
struct StagedLoader {
  using Map = StagedChunks<R, kRow0, kM, kRowBytes, kElemBytes, THREADS>;
  static_assert(kAligned || kElemBytes == 2, "element-wise loads are 16-bit");
  static constexpr int kSteps = Map::kSteps;
  static constexpr int kPasses = Map::kPasses;
  static_assert(kPasses <= 32, "validity bits of the passes");
  using Chunk = Pack<uint16_t, 8>;

  const unsigned char* src[kPasses];  // the chunk at k-tile 0
  int row[kPasses], col[kPasses];     // Map::row, Map::col
  uint32_t row_ok = 0, here = 0;
  int64_t tile_bytes;  // source bytes from one k-tile to the next
  int rows;
  Chunk regs[kPasses];

  JA_DEVICE void init(Operand op, int valid_rows, int k_begin) {
    rows = valid_rows;
    tile_bytes = kM == Major::kRows ? int64_t{kRowBytes} : int64_t{kSteps} * op.stride;
    const int tid = thread_id();
    JA_UNROLL
    for (int p = 0; p < kPasses; ++p) {
      const int i = tid + p * THREADS;
      const bool in = i < Map::kChunks;
      const int r = in ? Map::row(i) : 0, c = in ? Map::col(i) : 0;
      const bool ok = in && r < valid_rows;
      row[p] = r;
      col[p] = c;
      src[p] = op.base + Map::source(ok ? r : 0, c, k_begin, op.stride);
      row_ok |= (ok ? 1u : 0u) << p;
      here |= (in ? 1u : 0u) << p;
    }
  }

  // The chunks of k-tile kt (k_begin is the loader's; k_end bounds the reduction).
  JA_DEVICE void load(int kt, int k_begin, int k_end) {
    const int k0 = k_begin + kt * kSteps;
    JA_UNROLL
    for (int p = 0; p < kPasses; ++p) {
      const int k = k0 + Map::step(col[p]);
      const bool ok = ((row_ok >> p) & 1u) && k < k_end;
      const unsigned char* s = src[p] + kt * tile_bytes;
      if constexpr (kAligned) {
        if (ok) {
          regs[p] = *reinterpret_cast<const Chunk*>(s);
        } else {
          JA_UNROLL
          for (int e = 0; e < 8; ++e) regs[p].v[e] = 0;
        }
      } else {
        const uint16_t* h = reinterpret_cast<const uint16_t*>(s);
        JA_UNROLL
        for (int e = 0; e < 8; ++e) {
          const bool in = kM == Major::kRows ? ok && k + e < k_end : ok && row[p] + e < rows;
          regs[p].v[e] = in ? h[e] : uint16_t{0};
        }
      }
    }
  }

  JA_DEVICE void store(uint16_t* stage) const {
    JA_UNROLL
    for (int p = 0; p < kPasses; ++p) {
      if (!((here >> p) & 1u)) continue;
      if constexpr (kM == Major::kRows) {
        *reinterpret_cast<Chunk*>(stage + Map::dest(row[p], col[p], 0)) = regs[p];
      } else {
        JA_UNROLL
        for (int e = 0; e < 8; ++e) stage[Map::dest(row[p], col[p], e)] = regs[p].v[e];
      }
    }
  }
};

// The block tile. Warp: the tensor-core steps over a stage (Warp::Tile<TM, TN>: MmaWarp16 or the
// fp8 block-scale GEMM's F8Warp tiles); kRowBytes: the reduction bytes of a k-tile.
template <int BM, int BN, int kRowBytes, int THREADS, class Warp, Major kA, Major kB, bool kAligned,
          int kElemBytes = 2>
struct StagedTile {
  static constexpr int kWarps = THREADS / kWarp;
  using Warps = WarpLayout<BM, BN, kWarps, kMmaNGrain>;
  using Tile = typename Warp::template Tile<Warps::TM, Warps::TN>;
  static constexpr int kRun = Tile::kRun;
  static constexpr int kPairs = kRowBytes / 2;  // 16-bit units of a shared row
  static constexpr int kStageElems = (BM + BN) * kPairs;
  static constexpr int kSmemElems = 2 * kStageElems;
  static_assert(kSmemElems * 2 <= kGemmSmemBudget);
  using LoadA = StagedLoader<BM, 0, kA, kRowBytes, kElemBytes, THREADS, kAligned>;
  using LoadB = StagedLoader<BN, BM, kB, kRowBytes, kElemBytes, THREADS, kAligned>;
  static constexpr int kSteps = LoadA::kSteps;

  Tile tile;

  // Computes the tile into the accumulators (see for_each). smem: kSmemElems elements, 16-byte
  // aligned. Every thread of the block calls it; it ends with a barrier. after(kt) runs once
  // k-tile kt has been multiplied in (the fp8 kernels fold their block scales there).
  template <class After = NoStagedHook>
  JA_DEVICE void run(uint16_t* smem, Operand a, int rows_a, Operand b, int rows_b, int k_begin,
                     int k_end, After after = {}) {
    const int tid = thread_id();
    tile.init(Warps::m0(tid / kWarp), Warps::n0(tid / kWarp), tid % kWarp);
    LoadA la;
    LoadB lb;
    la.init(a, rows_a, k_begin);
    lb.init(b, rows_b, k_begin);
    const int ktiles = k_end > k_begin ? (k_end - k_begin + kSteps - 1) / kSteps : 0;
    if (ktiles > 0) {
      la.load(0, k_begin, k_end);
      lb.load(0, k_begin, k_end);
      la.store(smem);
      lb.store(smem);
    }
    barrier();
    for (int kt = 0; kt < ktiles; ++kt) {
      if (kt + 1 < ktiles) {
        la.load(kt + 1, k_begin, k_end);
        lb.load(kt + 1, k_begin, k_end);
      }
      compute_stage(smem, kt & 1);
      after(kt);
      if (kt + 1 < ktiles) {
        uint16_t* next = smem + ((kt + 1) & 1) * kStageElems;
        la.store(next);
        lb.store(next);
      }
      barrier();
    }
  }

  // f(row, col, v0, v1) for each accumulator (kRun == 2: v1 at col + 1), block-tile coordinates.
  template <class F>
  JA_DEVICE void for_each(F&& f) const {
    tile.for_each(f);
  }

 private:
  JA_DEVICE void compute_stage(uint16_t* smem, int stage) {
    uint16_t* st = smem + stage * kStageElems;
#if defined(__CUDACC__)
    const uint32_t s = shared_address(st);
    tile.compute(s, s + BM * kRowBytes);
#else
    tile.compute(st, st + BM * kPairs);
#endif
  }
};

// Stores the valid rows x cols of a block's accumulators at out (row stride ld elements) as O;
// adjacent column pairs (sm_90's accumulator layout) as one access where aligned.
template <typename O, class T>
JA_DEVICE void store_rows(typename O::Storage* out, int64_t ld, int rows, int cols, const T& t) {
  using S = typename O::Storage;
  const bool pairs =
      T::kRun == 2 && ld % 2 == 0 && reinterpret_cast<uintptr_t>(out) % (2 * sizeof(S)) == 0;
  t.for_each([&](int r, int c, float v0, float v1) {
    if (r >= rows || c >= cols) return;
    S* o = out + r * ld + c;
    const bool second = T::kRun == 2 && c + 1 < cols;
    if (second && pairs) {
      Pack<S, 2> p;
      p.v[0] = O::store(v0);
      p.v[1] = O::store(v1);
      *reinterpret_cast<Pack<S, 2>*>(o) = p;
    } else {
      o[0] = O::store(v0);
      if (second) o[1] = O::store(v1);
    }
  });
}

// Zeros rows x cols of out (row stride ld elements) with the block's THREADS threads.
template <typename O, int THREADS>
JA_DEVICE void zero_rows(typename O::Storage* out, int64_t ld, int rows, int cols) {
  for (int i = thread_id(); i < rows * cols; i += THREADS) {
    out[(i / cols) * ld + i % cols] = O::store(0.f);
  }
}

}  // namespace ja

#endif
