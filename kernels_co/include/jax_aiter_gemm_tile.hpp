// The block-tile algorithm shared by our portable GEMM kernels (kernels_co/gemm.kernel.cpp) and the
// ABI twins of AITER's BF16 GEMM (kernels_co/aiter_bf16gemm.twin.cpp):
//
//   acc[BM x BN] = A[rows, k_begin:k_end] . B[rows, k_begin:k_end]^T, fp32 accumulation,
//
// A and B both K-major (row r of an operand at base + r * stride bytes, elements contiguous), of
// 16-bit elements (bf16 or f16). Rows past the operand's valid rows and K past k_end read as zero,
// so any M, N, K works; the caller stores only the valid part of the result.
//
// Loading, per variant:
//   aligned (K % 8 == 0, 16-byte aligned rows and bases): 16-byte chunks. On sm_90 they go straight
//     to shared memory with cp.async in a ring of kStages stages (up to 4, as many as 48 KiB of
//     static shared memory holds: the launch needs no dynamic shared memory or opt-in), so
//     kStages - 1 tiles are in flight while one is computed.
//   any: element-wise loads with a bound check per element (odd K, unaligned bases).
//   Both on AMD, and `any` on sm_90, go through registers into two shared buffers: the next tile's
//   loads are issued before the current tile's MMAs and stored after them.
// Shared tiles use TileLayout's swizzle (jax_aiter_mma.hpp): A rows [0, BM) and B rows [BM, BM+BN)
// of one stage form one (BM + BN)-row tile.
#pragma once

#include "jax_aiter_device.hpp"
#include "jax_aiter_mma.hpp"

namespace ja {

// One operand: row r starts at base + r * stride (bytes).
struct Operand {
  const unsigned char* base;
  int64_t stride;
};

#if defined(__CUDACC__)
inline constexpr int kGemmSmemBudget = 48 * 1024;  // static shared memory, no opt-in needed
#else
inline constexpr int kGemmSmemBudget = 64 * 1024;  // LDS of one gfx942 workgroup
#endif

template <typename E, int BM, int BN, int BK, int THREADS, bool kAligned>
struct GemmTile {
  static constexpr int kWarps = THREADS / kWarp;
  using Warps = WarpLayout<BM, BN, kWarps, kMmaNGrain>;
  using Tile = WarpTile<E, BK, Warps::TM, Warps::TN>;
  static constexpr int kRun = Tile::kRun;
  using Layout = TileLayout<BK>;

  static constexpr bool kAsync = kHasAsyncCopy && kAligned;
  static constexpr int kStageElems = (BM + BN) * BK;
  static constexpr int kStageBytes = kStageElems * 2;
  static constexpr int kStages = [] {
    if (!kAsync) return 2;
    const int fit = kGemmSmemBudget / kStageBytes;
    return fit < 4 ? fit : 4;
  }();
  static_assert(kStages >= 2, "two stages of this tile exceed the shared-memory budget");
  static constexpr int kSmemElems = kStages * kStageElems;
  static_assert(kSmemElems * 2 <= kGemmSmemBudget);
  // Blocks a multiprocessor should hold (the register cap: 128 a thread for two blocks of 256).
  // Two for the cp.async tiles of up to 64 accumulators a thread; the register-staged loads need
  // more (t128x128 `any` spilled under the cap), and bigger tiles run one block.
  static constexpr int kAccPerThread = BM * BN / THREADS;
  static constexpr int kMinBlocks = kAsync && kAccPerThread <= 64 ? 2 : 1;

  // The loader: thread t moves chunk t % kCpr of rows t / kCpr + p * kRowsPerPass (p < kPasses) of
  // the stage's combined (BM + BN)-row tile.
  static constexpr int kCpr = BK / 8;
  static constexpr int kRowsPerPass = THREADS / kCpr;
  static constexpr int kPasses = (BM + BN + kRowsPerPass - 1) / kRowsPerPass;
  static_assert(THREADS % kCpr == 0 && kRowsPerPass % 16 == 0 && BM % 16 == 0);
  static_assert(kPasses <= 32, "validity bits of the loader's passes");
  static constexpr bool kRagged = kPasses * kRowsPerPass != BM + BN;  // the last pass is partial
  using Chunk = Pack<uint16_t, 8>;

  Tile tile;

  // Computes the tile into the accumulators (see for_each). smem: kSmemElems elements, 16-byte
  // aligned. Every thread of the block calls it; it ends with a barrier, so the caller may reuse
  // smem right after.
  JA_DEVICE void run(uint16_t* smem, Operand a, int rows_a, Operand b, int rows_b, int k_begin,
                     int k_end) {
    const int tid = thread_id();
    const int warp = tid / kWarp;
    tile.init(Warps::m0(warp), Warps::n0(warp), tid % kWarp);

    // Per pass: the row's first byte (k = 0 of the chunk column) and whether the row exists.
    const int chunk = tid % kCpr;
    const int row0 = tid / kCpr;
    const unsigned char* src[kPasses];
    uint32_t row_ok = 0;
    JA_UNROLL
    for (int p = 0; p < kPasses; ++p) {
      const int r = row0 + p * kRowsPerPass;
      const bool in_a = r < BM;
      const int rr = in_a ? r : r - BM;
      const bool ok = in_a ? rr < rows_a : (r < BM + BN && rr < rows_b);
      const Operand& op = in_a ? a : b;
      src[p] = op.base + (ok ? rr : 0) * op.stride + chunk * 16;
      row_ok |= (ok ? 1u : 0u) << p;
    }
    const int dst0 = Layout::chunk_offset(row0, chunk);  // + p * kRowsPerPass * BK for pass p
    const int ktiles = k_end > k_begin ? (k_end - k_begin + BK - 1) / BK : 0;

    if constexpr (kAsync) {
      run_async(smem, src, row_ok, dst0, chunk, k_begin, k_end, ktiles);
    } else {
      run_staged(smem, src, row_ok, dst0, chunk, k_begin, k_end, ktiles);
    }
  }

  // f(row, col, v0, v1) for each accumulator (kRun == 2: v0 at col, v1 at col + 1; kRun == 1: v0
  // alone), rows and columns in the block tile.
  template <class F>
  JA_DEVICE void for_each(F&& f) const {
    tile.for_each(f);
  }

 private:
  JA_DEVICE void compute_stage(uint16_t* smem, int stage) {
    uint16_t* st = smem + stage * kStageElems;
#if defined(__CUDACC__)
    const uint32_t s = shared_address(st);
    tile.compute(s, s + BM * BK * 2);
#else
    tile.compute(st, st + BM * BK);
#endif
  }

  JA_DEVICE void run_async(uint16_t* smem, const unsigned char* const (&src)[kPasses],
                           uint32_t row_ok, int dst0, int chunk, int k_begin, int k_end,
                           int ktiles) {
    if constexpr (kAsync) {
      const uint32_t s0 = shared_address(smem) + 2u * dst0;
      auto issue = [&](int kt, int stage) {
        const int k = k_begin + kt * BK;
        const bool k_ok = k + chunk * 8 < k_end;  // K % 8 == 0: a chunk is all in or all out
        const uint32_t dst = s0 + stage * kStageBytes;
        JA_UNROLL
        for (int p = 0; p < kPasses; ++p) {
          if (kRagged && row0_beyond(p)) continue;
          const bool ok = k_ok && ((row_ok >> p) & 1u);
          cp_async_16(dst + p * kRowsPerPass * BK * 2, ok ? src[p] + 2 * k : src[p], ok);
        }
      };
      JA_UNROLL
      for (int s = 0; s < kStages - 1; ++s) {
        if (s < ktiles) issue(s, s);
        cp_async_commit();
      }
      int read = 0, write = kStages - 1;
      for (int kt = 0; kt < ktiles; ++kt) {
        cp_async_wait<kStages - 2>();  // tile kt has landed (this thread's part)
        barrier();                     // ... everyone's; and stage `write` is no longer read
        if (kt + kStages - 1 < ktiles) issue(kt + kStages - 1, write);
        cp_async_commit();
        compute_stage(smem, read);
        read = read + 1 == kStages ? 0 : read + 1;
        write = write + 1 == kStages ? 0 : write + 1;
      }
      cp_async_wait<0>();
      barrier();
    }
  }

  // Passes whose rows lie past the combined tile (when BM + BN is not a multiple of a pass) load
  // nothing; which threads those are depends on the thread's first row.
  JA_DEVICE static bool row0_beyond(int p) {
    return thread_id() / kCpr + p * kRowsPerPass >= BM + BN;
  }

  JA_DEVICE void run_staged(uint16_t* smem, const unsigned char* const (&src)[kPasses],
                            uint32_t row_ok, int dst0, int chunk, int k_begin, int k_end,
                            int ktiles) {
    Chunk regs[kPasses];
    auto load = [&](int kt) {
      const int k0 = k_begin + kt * BK;  // src[p] already points at this thread's chunk column
      const int k = k0 + chunk * 8;      // the chunk's first element
      JA_UNROLL
      for (int p = 0; p < kPasses; ++p) {
        const bool ok = (row_ok >> p) & 1u;
        if constexpr (kAligned) {
          if (ok && k < k_end) {
            regs[p] = *reinterpret_cast<const Chunk*>(src[p] + 2 * k0);
          } else {
            JA_UNROLL
            for (int e = 0; e < 8; ++e) regs[p].v[e] = 0;
          }
        } else {
          const uint16_t* s = reinterpret_cast<const uint16_t*>(src[p] - chunk * 16) + k;
          JA_UNROLL
          for (int e = 0; e < 8; ++e) regs[p].v[e] = ok && k + e < k_end ? s[e] : uint16_t{0};
        }
      }
    };
    auto store = [&](int stage) {
      uint16_t* dst = smem + stage * kStageElems + dst0;
      JA_UNROLL
      for (int p = 0; p < kPasses; ++p) {
        if (kRagged && row0_beyond(p)) continue;
        *reinterpret_cast<Chunk*>(dst + p * kRowsPerPass * BK) = regs[p];
      }
    };
    if (ktiles > 0) {
      load(0);
      store(0);
    }
    barrier();
    for (int kt = 0; kt < ktiles; ++kt) {
      if (kt + 1 < ktiles) load(kt + 1);
      compute_stage(smem, kt & 1);
      if (kt + 1 < ktiles) store((kt + 1) & 1);
      barrier();
    }
  }
};

// Output element types by gemm::OutType (0 bf16, 1 f16, 2 f32): calls f(E{}) with the storage
// type's traits, so an epilogue is compiled once per type and the switch sits outside its loops.
template <class F>
JA_DEVICE void with_out_type(int out_type, F&& f) {
  if (out_type == 0) {
    f(BF16{});
  } else if (out_type == 1) {
    f(F16{});
  } else {
    f(F32{});
  }
}

}  // namespace ja
