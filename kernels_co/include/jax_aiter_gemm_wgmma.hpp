// The sm_90 GEMM engine: wgmma fed through a ring of shared-memory stages, one producer warpgroup
// and two consumer warpgroups per block (warp specialisation), mbarriers between them:
//
//   acc[128 x 256] = A[rows, k_begin:k_end] . B[rows, k_begin:k_end]^T, fp32 accumulation,
//
// A and B K-major (GemmTile's contract, jax_aiter_gemm_tile.hpp: rows past the valid ones and K
// past k_end read as zero). Block of kThreads = 384: warpgroup 0 produces, warpgroups 1 and 2 each
// own 64 rows of the tile (one wgmma m64n256k16 per 16 of K).
//
//   producer: for each K block of 64, waits until the consumers freed its stage (`empty`), copies
//     A's 128 and B's 256 rows of 128 bytes with cp.async (16 bytes a thread, zero-filled where out
//     of range) into the 128-byte swizzle wgmma reads, then arrives on `full` once they landed
//     (cp.async.mbarrier.arrive: no thread waits for its own copies).
//   consumers: wait on `full`, fence the generic-proxy writes for the async proxy, issue 4 wgmma,
//     keep one group in flight and free the stage of the group before.
//
// cp.async, not TMA: a tensor map is encoded on the host per buffer address, which the plan's
// packed-argument ABI (GemmArgs, shared with the AMD kernels and the host twins) has no room for.
// The stage ring, barriers and register split are those of TMA kernels (CUTLASS's sm90 warp-
// specialised mainloops and DeepGEMM use the same structure); only the copy instruction differs.
//
// What a GEMM family plugs in (Family below): its element size, accumulator type and wgmma, and
// where each operand's 16-byte K chunks lie in global memory (LayoutA / LayoutB: K-major rows, or
// a weight layout read as it is, e.g. AITER's shuffled (16, 16) int8 layout in
// jax_aiter_gemm_wgmma_i8.hpp). What the consumers do with one K block once its stage has landed
// is a Step: by default (WgmmaAccumulate) the family's wgmma into the accumulators with one group
// left in flight; a block-scaled family passes its own (FP8 1x128 / 128x128 in
// jax_aiter_gemm_wgmma_fp8bs.hpp: each block into a fresh partial, then scaled into the
// accumulators), MXFP4 would add a conversion in shared memory. The epilogue is the caller's
// (for_each hands out every accumulator with its row and column).
#pragma once

#include "jax_aiter_device.hpp"
#include "jax_aiter_gemm_tile.hpp"
#include "jax_aiter_wgmma.hpp"

namespace ja {

// One tile of work: A's and B's rows of the tile (rows past rows_a / rows_b read as zero) and
// the K range (elements). Each Operand is read through its family's layout (LayoutA / LayoutB).
struct WgmmaJob {
  Operand a;
  int rows_a;
  Operand b;
  int rows_b;
  int k_begin, k_end;
  JA_DEVICE int ktiles(int bk) const {
    return k_end > k_begin ? (k_end - k_begin + bk - 1) / bk : 0;
  }
};

// Where block (x, y, z) of a wgmma tile's grid (N / BN, M / BM, splits) works: split z; inside a
// split, tiles visited in groups of kGroupM rows of tiles, M fastest inside a group, so that the
// blocks resident at once share A's and B's rows in L2.
template <int BM, int BN>
JA_DEVICE void wgmma_tile_place(int M, int N, int& m0, int& n0) {
  constexpr int kGroupM = 8;
  const int tiles_n = (N + BN - 1) / BN, tiles_m = (M + BM - 1) / BM;  // the grid's x and y
  const int id = block_id_y() * tiles_n + block_id();
  const int group = id / (kGroupM * tiles_n), first_m = group * kGroupM;
  const int group_m = tiles_m - first_m < kGroupM ? tiles_m - first_m : kGroupM;
  const int in_group = id - group * kGroupM * tiles_n;
  m0 = (first_m + in_group % group_m) * BM;
  n0 = (in_group / group_m) * BN;
}

}  // namespace ja

#if defined(__CUDACC__)

namespace ja {

// Row-major K-contiguous rows: row r at base + r * stride, byte j of K at + j.
struct WgmmaKMajor {
  static constexpr int kBytesPerK = 1;  // source bytes per byte of K
  JA_DEVICE static const unsigned char* row(const Operand& o, int r) {
    return o.base + r * o.stride;
  }
  JA_DEVICE static int64_t rows16(const Operand& o) { return 16 * o.stride; }  // 16 rows further
};

// A 16-bit operand family (bf16 or f16): 64 elements fill one 128-byte swizzled row.
template <typename E>
struct WgmmaDense16 {
  using Acc = float;
  using LayoutA = WgmmaKMajor;
  using LayoutB = WgmmaKMajor;
  static constexpr int kElemBytes = 2;
  static constexpr int kBlockK = 64;  // elements of a K block: one 128-byte row per operand row
  static constexpr int kStepK = 16;   // K of one wgmma
  JA_DEVICE static void mma(float (&acc)[128], uint64_t desc_a, uint64_t desc_b) {
    sm90::wgmma_m64n256k16<E>(acc, desc_a, desc_b, 1);
  }
};

// The default Step: K block kt's wgmma into the accumulators, committed as one group and left in
// flight (kInFlight: the engine frees a block's stage once that many later groups are issued).
// A Step is called by the consumer warpgroups with the stage's A (this warpgroup's 64 rows) and B
// descriptors.
template <class Family>
struct WgmmaAccumulate {
  static constexpr int kInFlight = 1;
  template <class Acc, int N>
  JA_DEVICE void operator()(Acc (&acc)[N], uint64_t da, uint64_t db, int /*kt*/) const {
    sm90::wgmma_fence();
    sm90::hold_registers(acc);
    JA_UNROLL
    for (int kk = 0; kk < Family::kBlockK / Family::kStepK; ++kk) {
      Family::mma(acc, da + kk * sm90::kSw128KStep, db + kk * sm90::kSw128KStep);
    }
    sm90::wgmma_commit();
    sm90::hold_registers(acc);
  }
};

template <class Family, int kStages>
struct GemmWgmma {
  static constexpr int BM = 128, BN = 256, kThreads = 384;
  static constexpr int kBK = Family::kBlockK;
  static constexpr int kRowBytes = 128;
  static_assert(kBK * Family::kElemBytes == kRowBytes,
                "one 128-byte swizzled row per operand row and K block");
  using Acc = typename Family::Acc;
  static constexpr int kStageBytes = (BM + BN) * kRowBytes;
  static constexpr int kBarrierBytes = 2 * kStages * 8;
  // Dynamic shared memory a launch must give: the stages (1024-byte aligned inside), the barriers.
  static constexpr int kSmemBytes = kStages * kStageBytes + kBarrierBytes + 1024;
  static constexpr int kAcc = 128;  // accumulators a consumer thread holds (64 x 256 / 128)
  static constexpr int kRun = 2;    // for_each hands out pairs of adjacent columns
  // setmaxnreg's split of the 64K registers (launch bounds cap the block at 168 a thread): the
  // producer needs few, the consumers the accumulators and their addresses (CUTLASS's numbers).
  static constexpr int kProducerRegs = 40, kConsumerRegs = 232;
  static_assert(kProducerRegs * 128 + kConsumerRegs * 256 <= 65536);
  // The producer: thread t copies 16-byte chunk t % 8 of rows t / 8 + 16 p of the stage's
  // combined (BM + BN)-row tile (A's rows first), p < kPasses.
  static constexpr int kPasses = (BM + BN) / 16;
  static constexpr int kPassesA = BM / 16;

  Acc acc[kAcc];
  int row0 = 0;  // this consumer warpgroup's first row in the tile

  JA_DEVICE static bool is_producer() { return thread_id() < 128; }

  // Every thread of the block: computes one tile (job) into the consumers' accumulators; returns
  // whether this thread holds some (a consumer: for_each then reads them). The producer returns
  // once its copies are issued and landed. smem: kSmemBytes of dynamic shared memory.
  // One tile a block: a persistent loop over tiles (the epilogue inside the consumers' loop) ran
  // 17 % slower at 4096^3 and 8192^3 on the H100 even with one tile a block (NOTES.md).
  // step: what the consumers do with each K block (the default above, or a family's own).
  template <class Step = WgmmaAccumulate<Family>>
  JA_DEVICE bool run(unsigned char* smem_raw, const WgmmaJob& job, Step&& step = Step{}) {
    const uint32_t raw = shared_address(smem_raw);
    const uint32_t base = (raw + 1023u) & ~1023u;
    unsigned char* stages = smem_raw + (base - raw);
    uint64_t* full = reinterpret_cast<uint64_t*>(stages + kStages * kStageBytes);
    uint64_t* empty = full + kStages;
    if (thread_id() == 0) {
      for (int s = 0; s < kStages; ++s) {
        sm90::mbarrier_init(&full[s], 128);  // every producer thread, once its copies landed
        sm90::mbarrier_init(&empty[s], 8);   // lane 0 of each consumer warp
      }
    }
    barrier();
    int it = 0;  // K blocks so far: the ring's position
    if (is_producer()) {
      sm90::registers_release<kProducerRegs>();
      produce(base, full, empty, job, it);
      cp_async_wait<0>();
      return false;
    }
    sm90::registers_claim<kConsumerRegs>();
    row0 = 64 * (thread_id() / 128 - 1);
    consume(base, full, empty, job.ktiles(kBK), it, step);
    return true;
  }

  // f(row, col, v0, v1): v0 at (row, col), v1 at (row, col + 1), for this consumer's accumulators.
  template <class F>
  JA_DEVICE void for_each(F&& f) const {
    const int t = thread_id() % 128, lane = t % kWarp;
    const int r = row0 + 16 * (t / kWarp) + lane / 4, c = 2 * (lane % 4);
    JA_UNROLL
    for (int j = 0; j < BN / 8; ++j) {
      f(r, c + 8 * j, acc[4 * j], acc[4 * j + 1]);
      f(r + 8, c + 8 * j, acc[4 * j + 2], acc[4 * j + 3]);
    }
  }

 private:
  JA_DEVICE void produce(uint32_t base, uint64_t* full, uint64_t* empty, const WgmmaJob& job,
                         int& it) {
    const int t = thread_id();
    const int chunk = t % 8, r0 = t / 8;
    // Rows r0 + 16 p all share r0 % 8, hence the swizzled chunk: pass p lands 16 rows further.
    const uint32_t dst0 = base + r0 * kRowBytes + ((chunk ^ (r0 % 8)) * 16);
    uint32_t valid = 0;
    JA_UNROLL
    for (int p = 0; p < kPasses; ++p) {
      const int r = r0 + 16 * (p < kPassesA ? p : p - kPassesA);
      valid |= (r < (p < kPassesA ? job.rows_a : job.rows_b) ? 1u : 0u) << p;
    }
    using LA = typename Family::LayoutA;
    using LB = typename Family::LayoutB;
    constexpr int kE = Family::kElemBytes;
    const Operand a = job.a, b = job.b;
    const unsigned char* src_a = LA::row(a, r0) + LA::kBytesPerK * 16 * chunk;
    const unsigned char* src_b = LB::row(b, r0) + LB::kBytesPerK * 16 * chunk;
    const int64_t step_a = LA::rows16(a), step_b = LB::rows16(b);
    const int ktiles = job.ktiles(kBK);
    for (int kt = 0; kt < ktiles; ++kt, ++it) {
      const int s = it % kStages;
      if (it >= kStages) sm90::mbarrier_wait(&empty[s], ((it / kStages) - 1) & 1);
      const int k = job.k_begin + kt * kBK;
      // K a multiple of a chunk's elements: a chunk is all in or all out.
      const bool k_ok = k + chunk * (16 / kE) < job.k_end;
      uint32_t dst = dst0 + s * kStageBytes;
      // One running address per operand (the producer holds few registers).
      const unsigned char* row = src_a + LA::kBytesPerK * kE * int64_t{k};
      JA_UNROLL
      for (int p = 0; p < kPasses; ++p) {
        if (p == kPassesA) row = src_b + LB::kBytesPerK * kE * int64_t{k};
        const bool ok = k_ok && ((valid >> p) & 1u);
        cp_async_16(dst, ok ? row : a.base, ok);
        row += p < kPassesA ? step_a : step_b;
        dst += 16 * kRowBytes;
      }
      sm90::mbarrier_arrive_on_copies(&full[s]);
    }
  }

  template <class Step>
  JA_DEVICE void consume(uint32_t base, uint64_t* full, uint64_t* empty, int ktiles, int& it,
                         Step& step) {
    constexpr int kInFlight = Step::kInFlight;
    JA_UNROLL
    for (int i = 0; i < kAcc; ++i) acc[i] = Acc{0};
    const bool arrives = thread_id() % kWarp == 0;
    for (int kt = 0; kt < ktiles; ++kt, ++it) {
      const int s = it % kStages;
      sm90::mbarrier_wait(&full[s], (it / kStages) & 1);
      sm90::fence_proxy_async();
      const uint32_t stage = base + s * kStageBytes;
      step(acc, sm90::sw128_desc(stage + row0 * kRowBytes),
           sm90::sw128_desc(stage + BM * kRowBytes), kt);
      // The groups of the K blocks before the last kInFlight have read their stages: free them.
      sm90::wgmma_wait<kInFlight>();
      if (kt >= kInFlight && arrives) sm90::mbarrier_arrive(&empty[(it - kInFlight) % kStages]);
    }
    if constexpr (kInFlight > 0) {
      sm90::wgmma_wait<0>();
      sm90::hold_registers(acc);
      if (ktiles > 0 && arrives) sm90::mbarrier_arrive(&empty[(it - 1) % kStages]);
    }
  }
};

}  // namespace ja

#endif  // __CUDACC__
