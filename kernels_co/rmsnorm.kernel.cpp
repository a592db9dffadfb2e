// RMSNorm forward (plain and fused with a residual add), backward, and the dgamma reduction:
// one source for gfx942/gfx950 (clang-22) and sm_90 (nvcc). The parameter lists ARE the ABI:
// include/jax_aiter/kernels/rmsnorm.hpp mirrors them field by field, and the backends check the
// code object's own metadata against that struct before the first launch.
//
// Layout: a block holds rows_per_block rows of threads_per_row threads each; a thread owns the
// vectors lane, lane + tpr, lane + 2 tpr, ... of its row. When a row fits in CHUNKS vectors per
// thread it stays in registers (one read of x); otherwise the row is streamed twice (the second
// read is served by L2 for the row sizes where that happens).
//
// Helpers take packs by value: a pack bound to a const reference straight from global memory was
// read by nvcc one element at a time (tests/cpp/test_kernel_loads.cpp checks the PTX).
#include "jax_aiter/kernels/shared/rmsnorm.h"
#include "jax_aiter_device.hpp"

namespace ja {

// The facts the host plans with (vectors a thread keeps per row, block caps, the split and the
// workspace layout) come from the header both include.
using namespace jax_aiter::kernels::rmsnorm;
// The fused forward stages its register-cached rows (x and the residual) in shared memory where
// the target has a bulk-copy engine and the rows are whole 16-byte vectors (the copy's unit), and
// only when the launch gives it the shared memory (the plan's rule: rmsnorm_fwd_shared_bytes in
// include/jax_aiter/ops/rmsnorm.hpp). The plain forward always loads directly: staged, it was no
// faster through JAX at [16384, 4096] / [32768, 8192] bf16 on H100, 4 % slower at [4096, 16384],
// and 0.2 us slower a call at [8, 1024].
template <typename P, bool kFused>
inline constexpr bool kStageFwd = (kStageInShared && kFused && sizeof(P) == 16);

// Sums K values across the threads_per_row threads of one row; every thread of the block calls it.
// With several warps a row (one row per block then), each warp's sum goes through smem (one
// barrier), and every warp adds the warp sums with the same butterfly over the next power of two
// (missing warps count as zero), so all threads get the same bits. smem holds K * 32 floats; a
// caller that sums again (a loop over rows) alternates two smem buffers, so a fast warp cannot
// overwrite sums a slow warp has yet to read.
template <int K>
JA_DEVICE void row_sum(float (&v)[K], int tpr, float* smem) {
  const int width = tpr < kWarp ? tpr : kWarp;  // tpr is a power of two below a warp
  for (int mask = width / 2; mask > 0; mask /= 2) {
    for (int k = 0; k < K; ++k) v[k] += shuffle_xor(v[k], mask);
  }
  if (tpr <= kWarp) return;
  const int tid = thread_id();
  const int warps = tpr / kWarp;  // up to 32 (1024 / 32; 16 on wave64)
  if (tid % kWarp == 0) {
    for (int k = 0; k < K; ++k) smem[k * 32 + tid / kWarp] = v[k];
  }
  barrier();
  int span = 1;  // warps rounded up to a power of two
  while (span < warps) span *= 2;
  const int w = (tid % kWarp) % span;
  for (int k = 0; k < K; ++k) v[k] = w < warps ? smem[k * 32 + w] : 0.f;
  for (int mask = span / 2; mask > 0; mask /= 2) {
    for (int k = 0; k < K; ++k) v[k] += shuffle_xor(v[k], mask);
  }
}

// The split backward's exchange of row sums within a cluster: every block sends its two sums to
// every block (itself included); each block adds what it received in rank order, so all get the
// same bits. Two buffers alternate between rows: a block sends into a buffer again only after it
// has itself received the next row's sums from every block, which each block sends only after
// reading the earlier buffer.
struct SplitSums {
  alignas(16) float sums[2][kMaxSplit][2];
  Inbox inbox[2];
};

// Adds the row sums (x^2, g*dy*x) of the blocks of a cluster for the slot's step-th row (buffer
// step % 2, in its phase step / 2).
JA_DEVICE void cluster_sum(float (&v)[2], SplitSums& x, int split, int step) {
  const int buffer = step & 1;
  if (thread_id() == 0) expect_in_inbox(x.inbox[buffer], split * 2 * sizeof(float));
  if (thread_id() < split) {
    send_to_block(x.sums[buffer][cluster_rank()], v[0], v[1], x.inbox[buffer], thread_id());
  }
  wait_inbox(x.inbox[buffer], (step >> 1) & 1);
  for (int k = 0; k < 2; ++k) {
    float total = 0.f;
    for (int b = 0; b < split; ++b) total += x.sums[buffer][b][k];
    v[k] = total;
  }
}

// kFused: residual_out = x + residual is stored and normalised. A kernel of its own: with the
// residual a runtime choice, the plain forward ran at 0.97 / 0.92-0.98 of copy speed on H100
// against 0.99 / 1.01 once compiled apart ([16384, 4096] / [32768, 8192] bf16, same layout).
template <typename E, int VEC, bool kFused>
JA_DEVICE void rmsnorm_fwd(const void* x, const void* residual, const void* gamma, void* y,
                           void* residual_out, int rows, int n, float epsilon, int rows_per_block,
                           int threads_per_row) {
  using S = typename E::Storage;
  using P = Pack<S, VEC>;
  JA_SHARED float smem[32];
  const int tpr = threads_per_row;
  const int lane = thread_id() % tpr;
  const int row = block_id() * rows_per_block + thread_id() / tpr;
  const bool active = row < rows;
  const int nvec = n / VEC;
  const int64_t base = static_cast<int64_t>(active ? row : 0) * nvec;
  const P* xv = static_cast<const P*>(x) + base;
  const P* rv = kFused ? static_cast<const P*>(residual) + base : nullptr;  // null in the plain one
  P* rov = kFused ? static_cast<P*>(residual_out) + base : nullptr;
  const P* gv = static_cast<const P*>(gamma);
  P* yv = static_cast<P*>(y) + base;

  // Vector i of the row as stored (after the residual add, which is stored first when fused).
  // `once`: the row stays in registers, so the residual is read a single time. x and y take plain
  // accesses: on H100 the cache-streaming ones made the plain forward slower (0.93 / 0.88 of copy
  // speed against 0.97 / 0.98 at [16384, 4096] / [32768, 8192]).
  auto add_residual = [&](int i, P a, P b) -> P {
    P sum;
    for (int k = 0; k < VEC; ++k) sum.v[k] = E::store(E::load(a.v[k]) + E::load(b.v[k]));
    store_once(rov + i, sum);  // the stored residual is what gets normalised
    return sum;
  };
  auto load_row = [&](int i, bool once) -> P {
    const P a = xv[i];
    if constexpr (!kFused) return a;
    return add_residual(i, a, once ? load_once(rv + i) : rv[i]);
  };
  auto sum_squares = [](P a, float& acc) {
    for (int k = 0; k < VEC; ++k) acc += E::load(a.v[k]) * E::load(a.v[k]);
  };
  auto store_row = [&](int i, P a, float r) {
    const P g = gv[i];
    P o;
    for (int k = 0; k < VEC; ++k) o.v[k] = E::store(E::load(a.v[k]) * r * E::load(g.v[k]));
    yv[i] = o;
  };

  // Rows that fit stay in registers as stored (half the registers of floats for 16-bit types).
  const bool cached = nvec <= tpr * kChunksFwd;
  P xs[kChunksFwd];
  float acc[1] = {0.f};
  if (cached) {
    bool staged = false;
    if constexpr (kStageFwd<P, kFused>) {
      staged =
          dynamic_shared_bytes() >= 2u * static_cast<uint32_t>(rows_per_block * nvec) * sizeof(P);
      if (staged) {
        // The block's rows are contiguous: one staging copy for x and one for the residual, into
        // the launch's dynamic shared memory.
        JA_SHARED Staging staging;
        const int first = block_id() * rows_per_block;
        const int count = rows - first < rows_per_block ? rows - first : rows_per_block;
        const int64_t offset = static_cast<int64_t>(first) * nvec;
        const uint32_t bytes = static_cast<uint32_t>(count * nvec) * sizeof(P);
        P* sx = reinterpret_cast<P*>(dynamic_shared());
        P* sr = sx + rows_per_block * nvec;
        void* const dst[2] = {sx, sr};
        const void* const src[2] = {static_cast<const P*>(x) + offset,
                                    static_cast<const P*>(residual) + offset};
        const uint32_t sizes[2] = {bytes, bytes};
        stage_in_shared(staging, dst, src, sizes);
        wait_staged(staging);
        const int local = (thread_id() / tpr) * nvec;
        for (int c = 0; c < kChunksFwd; ++c) {
          const int i = c * tpr + lane;
          if (active && i < nvec) xs[c] = add_residual(i, sx[local + i], sr[local + i]);
        }
      }
    }
    if (!staged) {
      for (int c = 0; c < kChunksFwd; ++c) {
        const int i = c * tpr + lane;
        if (active && i < nvec) xs[c] = load_row(i, true);
      }
    }
    for (int c = 0; c < kChunksFwd; ++c) {
      const int i = c * tpr + lane;
      if (active && i < nvec) sum_squares(xs[c], acc[0]);
    }
  } else if (active) {
    for (int i = lane; i < nvec; i += tpr) sum_squares(load_row(i, false), acc[0]);
  }
  row_sum(acc, tpr, smem);
  if (!active) return;
  const float r = rsqrt(acc[0] / static_cast<float>(n) + epsilon);
  if (cached) {
    for (int c = 0; c < kChunksFwd; ++c) {
      const int i = c * tpr + lane;
      if (i < nvec) store_row(i, xs[c], r);
    }
  } else {
    const P* src = kFused ? rov : xv;  // this thread wrote these residual_out vectors itself
    for (int i = lane; i < nvec; i += tpr) store_row(i, src[i], r);
  }
}

// dx = r * (g*dy) - r^3 * x * mean(g*dy*x) (+ dresidual when fused).
// dgamma = sum over rows of dy * x * r, in two stages with no atomics: the block's slots (one per
// row group of threads) walk rows slot, slot + slots, ... and leave their sums as float32 partial
// rows in the workspace; rmsnorm_dgamma adds the partials in a fixed order. The grid is as many
// blocks as the device holds at once (the backend sizes it from the occupancy, at most max_slots
// rows' worth), so partials are few and no block waits for a second wave; the slot count actually
// used goes into the workspace header for the reduction.
//
// Split rows (CUDA): a row too long for one block's registers is shared by the blocks of a
// thread-block cluster (the launch's cluster size), each block holding a contiguous share of its
// vectors in registers as above; the row's sums are added across the cluster through distributed
// shared memory, and the cluster is one slot. Rows stay single reads and the dgamma terms stay in
// registers, where the streamed kernel below reads rows twice and updates its partial row per row.
//
// kStreamed: the kernel for rows that do not fit the registers, compiled without the register
// cache. Its fewer registers let two blocks of 512 share a multiprocessor, so one block's reduction
// overlaps another's loads: on H100 the backward at [4096, 16384] bf16 went from 290 to 248 us and
// at [8192, 8192] f32 from 421 to 344 us. The plan caps its slots so that their partial rows stay
// in L2 (kRmsNormStreamedPartialBytes), which the slot's per-row read-modify-write relies on.

template <typename E, int VEC, BwdRows kRows>
JA_DEVICE void rmsnorm_bwd(const void* dy, const void* x, const void* gamma, const void* dresidual,
                           void* dx, void* workspace, int rows, int n, float epsilon,
                           int rows_per_block, int threads_per_row, int max_slots) {
  using S = typename E::Storage;
  using P = Pack<S, VEC>;
  using PF = Pack<float, VEC>;
  JA_SHARED float smem[2][2 * 32];
  const int tpr = threads_per_row;
  const int lane = thread_id() % tpr;
  constexpr bool kStreamed = kRows == BwdRows::kStreamed;
  // Blocks sharing a row (rows_per_block is 1 then). A kernel of its own: the address arithmetic of
  // a share cost the in-register kernel up to 29 registers (bf16 v4: 78 -> 107).
  const int split = kRows == BwdRows::kSplit ? cluster_size() : 1;
  const int first_slot = block_id() / split * rows_per_block;  // the block iterates in lock step
  const int slot = first_slot + thread_id() / tpr;
  const int slots_launched = block_count() / split * rows_per_block;
  const int slots = max_slots < slots_launched ? max_slots : slots_launched;
  if (block_id() == 0 && thread_id() == 0) static_cast<int*>(workspace)[0] = slots;
  const bool slot_active = slot < slots;
  const int nvec = n / VEC;
  // This block's vectors of the row: [col0, col0 + width); the whole row without a cluster.
  const int share = tpr * kChunksBwd;
  const int col0 = split > 1 ? cluster_rank() * share : 0;
  const int width = split > 1 && nvec - col0 > share ? share : nvec - col0;
  const P* gv = static_cast<const P*>(gamma) + col0;
  PF* part = reinterpret_cast<PF*>(static_cast<char*>(workspace) + kWorkspaceHeaderBytes) +
             static_cast<int64_t>(slot_active ? slot : 0) * nvec + col0;
  const bool cached = !kStreamed && width <= share;

  // Rows that fit: gamma is read once for all the slot's rows, x and dy once per row (kept in
  // registers between the reduction and dx; the next row's are loaded before this one is reduced,
  // so a slot keeps loads in flight through its barrier and arithmetic), and the slot's dgamma
  // terms stay in registers.
  P g[kChunksBwd];
  float dg[kChunksBwd][VEC];
  for (int c = 0; c < kChunksBwd; ++c) {
    for (int k = 0; k < VEC; ++k) dg[c][k] = 0.f;
    const int i = c * tpr + lane;
    if (cached && i < width) g[c] = gv[i];
  }
  if (!cached && slot_active) {
    for (int i = lane; i < nvec; i += tpr) {
      PF z;
      for (int k = 0; k < VEC; ++k) z.v[k] = 0.f;
      part[i] = z;
    }
  }

  P xs[kChunksBwd], ds[kChunksBwd];  // this row
  auto load_cached = [&](int row, P(&xo)[kChunksBwd], P(&dyo)[kChunksBwd]) {
    if (!slot_active || row >= rows) return;
    const int64_t b = static_cast<int64_t>(row) * nvec + col0;
    for (int c = 0; c < kChunksBwd; ++c) {
      const int i = c * tpr + lane;
      if (i < width) {
        xo[c] = load_once(static_cast<const P*>(x) + b + i);
        dyo[c] = load_once(static_cast<const P*>(dy) + b + i);
      }
    }
  };
  // Every block of the cluster has its inboxes set up before any block sends (and before the first
  // loads are in flight, which the cluster barrier's release would wait for).
  JA_SHARED SplitSums split_sums;
  if constexpr (kHasClusters && kRows == BwdRows::kSplit) {
    if (split > 1) {
      if (thread_id() == 0) {
        init_inbox(split_sums.inbox[0]);
        init_inbox(split_sums.inbox[1]);
      }
      cluster_barrier();
    }
  }
  if (cached) load_cached(slot, xs, ds);
  int step = 0;  // the slot's rows so far: its sums alternate between two buffers
  for (int row0 = first_slot; row0 < rows; row0 += slots, ++step) {
    const int row = row0 + (slot - first_slot);
    P xn[kChunksBwd], dn[kChunksBwd];  // the slot's next row
    if (cached) load_cached(row + slots, xn, dn);
    const bool active = slot_active && row < rows;
    const int64_t base = static_cast<int64_t>(active ? row : 0) * nvec + col0;
    const P* xv = static_cast<const P*>(x) + base;
    const P* dyv = static_cast<const P*>(dy) + base;
    const P* drv = dresidual ? static_cast<const P*>(dresidual) + base : nullptr;
    P* dxv = static_cast<P*>(dx) + base;

    float acc[2] = {0.f, 0.f};  // sum x^2, sum g*dy*x
    auto accumulate = [&](P a, P d, P gi) {
      for (int k = 0; k < VEC; ++k) {
        const float xk = E::load(a.v[k]);
        acc[0] += xk * xk;
        acc[1] += E::load(gi.v[k]) * E::load(d.v[k]) * xk;
      }
    };
    // Writes dx for vector i and adds this row's dgamma term into dgo.
    auto emit = [&](int i, P a, P d, P gi, float r, float coef, float(&dgo)[VEC]) {
      P o;
      float extra[VEC];
      if (drv) {
        const P e = load_once(drv + i);
        for (int k = 0; k < VEC; ++k) extra[k] = E::load(e.v[k]);
      } else {
        for (int k = 0; k < VEC; ++k) extra[k] = 0.f;
      }
      for (int k = 0; k < VEC; ++k) {
        const float xk = E::load(a.v[k]), dk = E::load(d.v[k]);
        o.v[k] = E::store(r * E::load(gi.v[k]) * dk - coef * xk + extra[k]);
        dgo[k] += dk * xk * r;
      }
      store_once(dxv + i, o);
    };

    if (cached) {
      for (int c = 0; c < kChunksBwd; ++c) {
        if (active && c * tpr + lane < width) accumulate(xs[c], ds[c], g[c]);
      }
    } else if (active) {
      for (int i = lane; i < nvec; i += tpr) accumulate(xv[i], dyv[i], gv[i]);
    }
    row_sum(acc, tpr, smem[step & 1]);
    if constexpr (kHasClusters && kRows == BwdRows::kSplit) {
      if (split > 1) cluster_sum(acc, split_sums, split, step);
    }
    if (!active) continue;
    const float r = rsqrt(acc[0] / static_cast<float>(n) + epsilon);
    const float coef = r * r * r * acc[1] / static_cast<float>(n);
    if (cached) {
      for (int c = 0; c < kChunksBwd; ++c) {
        const int i = c * tpr + lane;
        if (i < width) emit(i, xs[c], ds[c], g[c], r, coef, dg[c]);
      }
    } else {
      // Long rows are read twice (the second time mostly from L2) and the dgamma terms go through
      // the slot's partial row, which only this thread touches at these columns.
      for (int i = lane; i < nvec; i += tpr) {
        PF acc_i = part[i];
        emit(i, load_once(xv + i), load_once(dyv + i), gv[i], r, coef, acc_i.v);
        part[i] = acc_i;
      }
    }
    for (int c = 0; c < kChunksBwd; ++c) {
      xs[c] = xn[c];
      ds[c] = dn[c];
    }
  }
  if (cached && slot_active) {
    for (int c = 0; c < kChunksBwd; ++c) {
      const int i = c * tpr + lane;
      if (i < width) {
        PF o;
        for (int k = 0; k < VEC; ++k) o.v[k] = dg[c][k];
        part[i] = o;
      }
    }
  }
}

// dgamma[j] = sum over slots of partial[s, j], in a fixed order: no atomics, so every run gives
// the same bits. A block takes kDgammaColumns columns with kDgammaBlock threads: 8 threads cover
// the columns 4 at a time (one 16-byte load each, a 128-byte row segment per 8 threads) and the
// other 128 ways split the slots, so enough loads are in flight to stream the workspace at memory
// speed; the 128 lane sums are then added pairwise in a fixed tree.
template <typename E>
JA_DEVICE void rmsnorm_dgamma(const void* workspace, void* dgamma, int n) {
  constexpr int kQuads = 8, kLanes = kDgammaBlock / kQuads, kCols = 4 * kQuads;
  static_assert(kCols == kDgammaColumns);
  JA_SHARED float sums[kLanes][kCols + 1];  // +1: lanes of one column fall in different banks
  const int slots = static_cast<const int*>(workspace)[0];  // written by rmsnorm_bwd
  const float* partial =
      reinterpret_cast<const float*>(static_cast<const char*>(workspace) + kWorkspaceHeaderBytes);
  const int quad = thread_id() % kQuads;
  const int lane = thread_id() / kQuads;
  const int j0 = block_id() * kCols + 4 * quad;  // this thread's first column
  const bool vectorized = n % 4 == 0 && reinterpret_cast<uintptr_t>(partial) % 16 == 0;
  float s[4] = {0.f, 0.f, 0.f, 0.f};
  if (vectorized && j0 < n) {
    const Pack<float, 4>* p = reinterpret_cast<const Pack<float, 4>*>(partial + j0);
    const int stride = n / 4;
    for (int r = lane; r < slots; r += kLanes) {
      const Pack<float, 4> v = p[static_cast<int64_t>(r) * stride];
      for (int k = 0; k < 4; ++k) s[k] += v.v[k];
    }
  } else {
    for (int r = lane; r < slots; r += kLanes) {
      for (int k = 0; k < 4; ++k) {
        if (j0 + k < n) s[k] += partial[static_cast<int64_t>(r) * n + j0 + k];
      }
    }
  }
  for (int k = 0; k < 4; ++k) sums[lane][4 * quad + k] = s[k];
  barrier();
  for (int half = kLanes / 2; half > 0; half /= 2) {
    if (lane < half) {
      for (int k = 0; k < 4; ++k) sums[lane][4 * quad + k] += sums[lane + half][4 * quad + k];
    }
    barrier();
  }
  if (lane == 0) {
    for (int k = 0; k < 4; ++k) {
      if (j0 + k < n)
        static_cast<typename E::Storage*>(dgamma)[j0 + k] = E::store(sums[0][4 * quad + k]);
    }
  }
}

}  // namespace ja

#define JA_RMSNORM_FWD_KERNEL(name, E, VEC, fused)                                               \
  JA_KERNEL_BOUNDED(ja::kMaxThreadsFwd)                                                          \
  void name(const void* x, const void* residual, const void* gamma, void* y, void* residual_out, \
            int rows, int n, float epsilon, int rows_per_block, int threads_per_row) {           \
    ja::wait_for_prior_grids();                                                                  \
    ja::allow_dependent_grids();                                                                 \
    ja::rmsnorm_fwd<ja::E, VEC, fused>(x, residual, gamma, y, residual_out, rows, n, epsilon,    \
                                       rows_per_block, threads_per_row);                         \
  }
#define JA_RMSNORM_FWD(tag, E, VEC)                                          \
  JA_RMSNORM_FWD_KERNEL(jax_aiter_rmsnorm_fwd_##tag##_v##VEC, E, VEC, false) \
  JA_RMSNORM_FWD_KERNEL(jax_aiter_rmsnorm_fwd_add_##tag##_v##VEC, E, VEC, true)
#define JA_RMSNORM_BWD_KERNEL(name, E, VEC, rows_kind)                                          \
  void name(const void* dy, const void* x, const void* gamma, const void* dresidual, void* dx,  \
            void* workspace, int rows, int n, float epsilon, int rows_per_block,                \
            int threads_per_row, int max_slots) {                                               \
    ja::wait_for_prior_grids();                                                                 \
    ja::allow_dependent_grids();                                                                \
    ja::rmsnorm_bwd<ja::E, VEC, ja::BwdRows::rows_kind>(dy, x, gamma, dresidual, dx, workspace, \
                                                        rows, n, epsilon, rows_per_block,       \
                                                        threads_per_row, max_slots);            \
  }
#define JA_RMSNORM_BWD(tag, E, VEC)                                                 \
  JA_KERNEL_BOUNDED(ja::kMaxThreadsBwd)                                             \
  JA_RMSNORM_BWD_KERNEL(jax_aiter_rmsnorm_bwd_##tag##_v##VEC, E, VEC, kInRegisters) \
  JA_KERNEL_BOUNDED(ja::kMaxThreadsBwd)                                             \
  JA_RMSNORM_BWD_KERNEL(jax_aiter_rmsnorm_bwd_split_##tag##_v##VEC, E, VEC, kSplit) \
  JA_KERNEL_BOUNDED_RESIDENT(ja::kMaxThreadsBwd, ja::kStreamedResidentBlocks)       \
  JA_RMSNORM_BWD_KERNEL(jax_aiter_rmsnorm_bwd_streamed_##tag##_v##VEC, E, VEC, kStreamed)
#define JA_RMSNORM_DGAMMA(tag, E)                                                   \
  JA_KERNEL_BOUNDED(ja::kDgammaBlock)                                               \
  void jax_aiter_rmsnorm_dgamma_##tag(const void* workspace, void* dgamma, int n) { \
    ja::wait_for_prior_grids();                                                     \
    ja::allow_dependent_grids();                                                    \
    ja::rmsnorm_dgamma<ja::E>(workspace, dgamma, n);                                \
  }
#define JA_RMSNORM_ALL(tag, E, VEC) JA_RMSNORM_FWD(tag, E, VEC) JA_RMSNORM_BWD(tag, E, VEC)

// The kernels of the list the host's table is generated from (kernels/shared/rmsnorm.h).
JAX_AITER_RMSNORM_VARIANTS(JA_RMSNORM_ALL)
JAX_AITER_RMSNORM_DTYPES(JA_RMSNORM_DGAMMA)
