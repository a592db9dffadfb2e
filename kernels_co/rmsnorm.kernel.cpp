// RMSNorm forward (plain and fused with a residual add), backward, and the dgamma reduction:
// one source for gfx942/gfx950 (clang-22) and sm_90 (nvcc). The parameter lists ARE the ABI:
// include/jax_aiter/kernels/rmsnorm.hpp mirrors them field by field, and the backends check the
// code object's own metadata against that struct before the first launch.
//
// Layout: a block holds rows_per_block rows of threads_per_row threads each; a thread owns the
// vectors lane, lane + tpr, lane + 2 tpr, ... of its row. When a row fits in CHUNKS vectors per
// thread it stays in registers (one read of x); otherwise the row is streamed twice (the second
// read is served by L2 for the row sizes where that happens).
#include "jax_aiter_device.hpp"

namespace ja {

inline constexpr int kChunksFwd = 2;  // vectors per thread kept in registers (forward)
inline constexpr int kChunksBwd = 2;  // and backward (its dgamma terms)

// Sums K values across the threads_per_row threads of one row; every thread of the block calls it.
template <int K>
JA_DEVICE void row_sum(float (&v)[K], int tpr, float* smem) {
  const int width = tpr < kWarp ? tpr : kWarp;  // tpr is a power of two below a warp
  for (int mask = width / 2; mask > 0; mask /= 2) {
    for (int k = 0; k < K; ++k) v[k] += shuffle_xor(v[k], mask);
  }
  if (tpr <= kWarp) return;
  const int tid = thread_id();
  const int warps = tpr / kWarp;  // one row per block in this case
  if (tid % kWarp == 0) {
    for (int k = 0; k < K; ++k) smem[k * 32 + tid / kWarp] = v[k];
  }
  barrier();
  for (int k = 0; k < K; ++k) {
    float s = 0.f;
    for (int w = 0; w < warps; ++w) s += smem[k * 32 + w];  // same order in every thread
    v[k] = s;
  }
  barrier();  // smem is reused by the next call
}

template <typename E, int VEC>
JA_DEVICE void rmsnorm_fwd(const void* x, const void* residual, const void* gamma, void* y,
                           void* residual_out, int rows, int n, float epsilon, int rows_per_block,
                           int threads_per_row) {
  using S = typename E::Storage;
  using P = Pack<S, VEC>;
  JA_SHARED float smem[2 * 32];
  const int tpr = threads_per_row;
  const int lane = thread_id() % tpr;
  const int row = block_id() * rows_per_block + thread_id() / tpr;
  const bool active = row < rows;
  const int nvec = n / VEC;
  const int64_t base = static_cast<int64_t>(active ? row : 0) * nvec;
  const P* xv = static_cast<const P*>(x) + base;
  const P* rv = residual ? static_cast<const P*>(residual) + base : nullptr;
  P* rov = residual ? static_cast<P*>(residual_out) + base : nullptr;
  const P* gv = static_cast<const P*>(gamma);
  P* yv = static_cast<P*>(y) + base;

  // Vector i of the row as stored (after the residual add, which is stored first when fused).
  auto load_row = [&](int i) -> P {
    const P a = xv[i];
    if (!rv) return a;
    const P b = rv[i];
    P sum;
    for (int k = 0; k < VEC; ++k) sum.v[k] = E::store(E::load(a.v[k]) + E::load(b.v[k]));
    rov[i] = sum;  // the stored residual is what gets normalised
    return sum;
  };
  auto sum_squares = [](const P& a, float& acc) {
    for (int k = 0; k < VEC; ++k) acc += E::load(a.v[k]) * E::load(a.v[k]);
  };
  auto store_row = [&](int i, const P& a, float r) {
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
    for (int c = 0; c < kChunksFwd; ++c) {
      const int i = c * tpr + lane;
      if (active && i < nvec) {
        xs[c] = load_row(i);
        sum_squares(xs[c], acc[0]);
      }
    }
  } else if (active) {
    for (int i = lane; i < nvec; i += tpr) sum_squares(load_row(i), acc[0]);
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
    const P* src = rov ? rov : xv;  // this thread wrote these residual_out vectors itself
    for (int i = lane; i < nvec; i += tpr) store_row(i, src[i], r);
  }
}

// dx = r * (g*dy) - r^3 * x * mean(g*dy*x) (+ dresidual when fused); the slot s of a block
// accumulates dgamma = sum over its rows s, s + slots, ... of dy * x * r into partial[s, :].
template <typename E, int VEC>
JA_DEVICE void rmsnorm_bwd(const void* dy, const void* x, const void* gamma, const void* dresidual,
                           void* dx, float* dgamma_partial, int rows, int n, float epsilon,
                           int rows_per_block, int threads_per_row, int slots) {
  using S = typename E::Storage;
  using P = Pack<S, VEC>;
  using PF = Pack<float, VEC>;
  JA_SHARED float smem[2 * 32];
  const int tpr = threads_per_row;
  const int lane = thread_id() % tpr;
  const int slot = block_id() * rows_per_block + thread_id() / tpr;
  const bool slot_active = slot < slots;
  const int nvec = n / VEC;
  const P* gv = static_cast<const P*>(gamma);
  PF* part =
      reinterpret_cast<PF*>(dgamma_partial) + static_cast<int64_t>(slot_active ? slot : 0) * nvec;
  const bool cached = nvec <= tpr * kChunksBwd;
  const int first_slot = block_id() * rows_per_block;  // the block iterates in lock step

  float dg[kChunksBwd][VEC];
  for (int c = 0; c < kChunksBwd; ++c)
    for (int k = 0; k < VEC; ++k) dg[c][k] = 0.f;
  if (!cached && slot_active) {
    for (int i = lane; i < nvec; i += tpr) {
      PF z;
      for (int k = 0; k < VEC; ++k) z.v[k] = 0.f;
      part[i] = z;
    }
  }

  for (int row0 = first_slot; row0 < rows; row0 += slots) {
    const int row = row0 + (slot - first_slot);
    const bool active = slot_active && row < rows;
    const int64_t base = static_cast<int64_t>(active ? row : 0) * nvec;
    const P* xv = static_cast<const P*>(x) + base;
    const P* dyv = static_cast<const P*>(dy) + base;
    const P* drv = dresidual ? static_cast<const P*>(dresidual) + base : nullptr;
    P* dxv = static_cast<P*>(dx) + base;

    // Only the dgamma terms live in registers: x and dy are read again for dx (from L2), which
    // keeps registers per row low and so more rows in flight per multiprocessor.
    float acc[2] = {0.f, 0.f};  // sum x^2, sum g*dy*x
    auto accumulate = [&](int i) {
      const P a = xv[i], d = dyv[i], g = gv[i];
      for (int k = 0; k < VEC; ++k) {
        const float xk = E::load(a.v[k]);
        acc[0] += xk * xk;
        acc[1] += E::load(g.v[k]) * E::load(d.v[k]) * xk;
      }
    };
    if (cached) {
      for (int c = 0; c < kChunksBwd; ++c) {
        const int i = c * tpr + lane;
        if (active && i < nvec) accumulate(i);
      }
    } else if (active) {
      for (int i = lane; i < nvec; i += tpr) accumulate(i);
    }
    row_sum(acc, tpr, smem);
    if (!active) continue;
    const float r = rsqrt(acc[0] / static_cast<float>(n) + epsilon);
    const float coef = r * r * r * acc[1] / static_cast<float>(n);
    // Writes dx for vector i and adds this row's dgamma term into dgo.
    auto emit = [&](int i, const P& a, const P& d, float(&dgo)[VEC]) {
      const P g = gv[i];
      P o;
      float extra[VEC];
      if (drv) {
        const P e = drv[i];
        for (int k = 0; k < VEC; ++k) extra[k] = E::load(e.v[k]);
      } else {
        for (int k = 0; k < VEC; ++k) extra[k] = 0.f;
      }
      for (int k = 0; k < VEC; ++k) {
        const float xk = E::load(a.v[k]), dk = E::load(d.v[k]);
        o.v[k] = E::store(r * E::load(g.v[k]) * dk - coef * xk + extra[k]);
        dgo[k] += dk * xk * r;
      }
      dxv[i] = o;
    };
    if (cached) {
      for (int c = 0; c < kChunksBwd; ++c) {
        const int i = c * tpr + lane;
        if (i < nvec) emit(i, xv[i], dyv[i], dg[c]);
      }
    } else {
      for (int i = lane; i < nvec; i += tpr) {
        PF acc_i = part[i];
        emit(i, xv[i], dyv[i], acc_i.v);
        part[i] = acc_i;  // only this thread touches these columns of this slot
      }
    }
  }
  if (cached && slot_active) {
    for (int c = 0; c < kChunksBwd; ++c) {
      const int i = c * tpr + lane;
      if (i < nvec) {
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
JA_DEVICE void rmsnorm_dgamma(const float* partial, void* dgamma, int slots, int n) {
  constexpr int kQuads = 8, kLanes = 128, kCols = 4 * kQuads;
  JA_SHARED float sums[kLanes][kCols + 1];  // +1: lanes of one column fall in different banks
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

#define JA_RMSNORM_FWD(tag, E, VEC)                                                        \
  JA_KERNEL_BOUNDED(1024)                                                                  \
  void jax_aiter_rmsnorm_fwd_##tag##_v##VEC(                                               \
      const void* x, const void* residual, const void* gamma, void* y, void* residual_out, \
      int rows, int n, float epsilon, int rows_per_block, int threads_per_row) {           \
    ja::rmsnorm_fwd<ja::E, VEC>(x, residual, gamma, y, residual_out, rows, n, epsilon,     \
                                rows_per_block, threads_per_row);                          \
  }
#define JA_RMSNORM_BWD(tag, E, VEC)                                                                \
  JA_KERNEL_BOUNDED(512)                                                                           \
  void jax_aiter_rmsnorm_bwd_##tag##_v##VEC(const void* dy, const void* x, const void* gamma,      \
                                            const void* dresidual, void* dx,                       \
                                            float* dgamma_partial, int rows, int n, float epsilon, \
                                            int rows_per_block, int threads_per_row, int slots) {  \
    ja::rmsnorm_bwd<ja::E, VEC>(dy, x, gamma, dresidual, dx, dgamma_partial, rows, n, epsilon,     \
                                rows_per_block, threads_per_row, slots);                           \
  }
#define JA_RMSNORM_DGAMMA(tag, E)                                                             \
  JA_KERNEL_BOUNDED(1024)                                                                     \
  void jax_aiter_rmsnorm_dgamma_##tag(const float* partial, void* dgamma, int slots, int n) { \
    ja::rmsnorm_dgamma<ja::E>(partial, dgamma, slots, n);                                     \
  }
#define JA_RMSNORM_ALL(tag, E, VEC) JA_RMSNORM_FWD(tag, E, VEC) JA_RMSNORM_BWD(tag, E, VEC)

// Block-size caps (kept in step with kRmsNormMaxThreads in kernels/rmsnorm.hpp): they bound the
// registers the compiler may use so that a full block always fits on a multiprocessor.
// The instantiations below must match kRmsNormKernels in include/jax_aiter/kernels/rmsnorm.hpp.
JA_RMSNORM_ALL(bf16, BF16, 1)
JA_RMSNORM_ALL(bf16, BF16, 2)
JA_RMSNORM_ALL(bf16, BF16, 4)
JA_RMSNORM_ALL(bf16, BF16, 8)
JA_RMSNORM_ALL(f16, F16, 1)
JA_RMSNORM_ALL(f16, F16, 2)
JA_RMSNORM_ALL(f16, F16, 4)
JA_RMSNORM_ALL(f16, F16, 8)
JA_RMSNORM_ALL(f32, F32, 1)
JA_RMSNORM_ALL(f32, F32, 2)
JA_RMSNORM_ALL(f32, F32, 4)
JA_RMSNORM_DGAMMA(bf16, BF16)
JA_RMSNORM_DGAMMA(f16, F16)
JA_RMSNORM_DGAMMA(f32, F32)
