// RMSNorm and fused add+RMSNorm, forward and backward: parameters, validation and launch plans.
// Pure C++ (no HIP, no XLA): dispatch is unit-tested on the host.
//
//   y = x * rsqrt(mean(x^2, -1) + eps) * gamma                 statistics in float32
//   rms_norm_with_add: residual_out = x + residual (stored in x's dtype), y = rms_norm(that)
//   backward: dx = r*(g*dy) - r^3 * x * mean(g*dy*x) [+ dresidual]
//             dgamma = sum_rows dy*x*r
// dgamma is reduced in two stages through an XLA-owned float32 workspace: no atomics, so the
// result is bit-identical from run to run.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string_view>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/core/status.hpp"
#include "jax_aiter/core/verdict.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/kernels/rmsnorm.hpp"
#include "jax_aiter/ops/dispatch.hpp"
#include "jax_aiter/ops/tensor.hpp"

namespace jax_aiter::ops {

// How a row is spread over threads (see kernels_co/rmsnorm.kernel.cpp).
struct RowLayout {
  int vec = 1;              // elements per access
  int threads_per_row = 1;  // a power of two below a warp, else a multiple of the warp
  int rows_per_block = 1;

  constexpr int block_threads() const { return threads_per_row * rows_per_block; }
  // Whether a row of n elements stays in registers, at `chunks` vectors a thread (the kernels'
  // kChunksFwd / kChunksBwd); longer rows are streamed.
  constexpr bool row_in_registers(int64_t n, int chunks) const {
    return n / vec <= int64_t{threads_per_row} * chunks;
  }
};

// Largest vector width that divides n and keeps every address aligned to a whole vector.
constexpr int rmsnorm_vec(int64_t n, DType dtype, uintptr_t address_bits) {
  for (int v = kernels::rmsnorm_max_vec(dtype); v > 1; v /= 2) {
    const uintptr_t align = static_cast<uintptr_t>(v) * size_bytes(dtype);
    if (n % v == 0 && address_bits % align == 0) return v;
  }
  return 1;
}

constexpr RowLayout rmsnorm_layout(int64_t n, int vec, int chunks, int max_threads, int warp) {
  constexpr int kBlockTarget = 256;
  const int64_t vectors = n / vec;
  const int64_t needed = ceil_div(vectors, chunks);
  RowLayout l;
  l.vec = vec;
  if (needed <= warp) {
    l.threads_per_row = static_cast<int>(std::bit_ceil(static_cast<uint64_t>(needed)));
    l.rows_per_block = std::max(1, std::min(kBlockTarget, max_threads) / l.threads_per_row);
  } else {
    const int64_t rounded = ceil_div(needed, warp) * warp;
    l.threads_per_row = static_cast<int>(std::min<int64_t>(rounded, max_threads));
    l.rows_per_block = 1;
  }
  return l;
}

// Dynamic shared memory of a forward launch. On CUDA the fused forward stages a block's rows (x and
// the residual) in shared memory with sm_90's bulk-copy engine when its rows stay in registers and
// move as 16-byte vectors (up to kMaxStagedBytes), and only when x is at least the size of L2, so
// that its rows come from DRAM. On H100 (50 MB of L2; bf16, CUDA events, cuda_rmsnorm_bench's
// sweep), staging made the fused forward 0.3-1.8 % faster from 64 MiB of x up, and 0.3-5.6 %
// slower from 4 to 32 MiB, where the inputs partly stay in L2 and the copy's latency before a block
// can start shows (one exception: 3 % faster at [512, 8192]). Through JAX: 0.7172-0.7174 against
// 0.7257-0.7266 ms at [32768, 8192]. The plain forward, and every launch elsewhere, gets none:
// staged, the plain forward was no faster through JAX at [16384, 4096] and 4 % slower at
// [4096, 16384].
constexpr uint32_t rmsnorm_fwd_shared_bytes(const Target& target, DType t, int64_t rows, int64_t n,
                                            const RowLayout& l, bool fused) {
  const auto elem = static_cast<int64_t>(size_bytes(t));
  const bool cached = l.row_in_registers(n, kernels::rmsnorm::kChunksFwd);
  const int64_t bytes = 2 * int64_t{l.rows_per_block} * n * elem;
  const bool from_dram = rows * n * elem >= target.l2_bytes;
  if (!fused || target.backend != BackendKind::kCuda || l.vec * elem != 16 || !cached ||
      !from_dram || bytes > kernels::rmsnorm::kMaxStagedBytes) {
    return 0;
  }
  return static_cast<uint32_t>(bytes);
}

// Partial dgamma rows: rows fold onto slots (a slot is a group of threads that walks rows
// slot, slot + slots, ... keeping its dgamma terms in registers). The backward is a persistent
// launch: it runs as many slots as the device holds at once, which the backend knows from the
// occupancy; the workspace is sized before any device is known (Python sizes it at trace time),
// so it holds the most slots any device may use: one per row up to 1024 rows, then 16 rows a
// slot, between 1024 and 2048 slots (far more blocks than a GPU of today holds at once).
inline constexpr int64_t kRmsNormMinSlots = 1024;
inline constexpr int64_t kRmsNormMaxSlots = 2048;
inline constexpr int64_t kRmsNormRowsPerSlot = 16;

constexpr int64_t rmsnorm_bwd_max_slots(int64_t rows) {
  return std::min(rows, std::clamp(rows / kRmsNormRowsPerSlot, kRmsNormMinSlots, kRmsNormMaxSlots));
}

// Rows past the registers go to the streamed backward, which adds each row's dgamma terms into its
// slot's partial row in the workspace (a read-modify-write per row): its slots are capped so that
// their partial rows stay in L2. On H100 (50 MB of L2), [2048, 32768] bf16 with 264 slots (34 MB of
// partial rows) took 436 us against 300 us with 132. The cap never goes below one block per compute
// unit.
inline constexpr int64_t kRmsNormStreamedPartialBytes = int64_t{16} << 20;

// Blocks of a thread-block cluster that share a backward row too long for one block's registers
// (CUDA: sm_90 clusters), each holding up to kSplitThreads * kChunksBwd of its vectors in
// registers; 0 where the row is streamed instead. The cluster is one slot: its blocks add their row
// sums through distributed shared memory, read the row once and keep their dgamma terms in
// registers, where the streamed kernel reads the row twice and updates its slot's float32 partial
// row (in L2) every row. On H100 (cuda_rmsnorm_bench's sweep, split against streamed, both
// launches, time ratio): bf16 0.52-0.67 at n = 16384-32768 from 1024 rows, 0.41-0.44 at 65536,
// 0.92-1.02 at 10240 with unequal shares (1024 + 256 vectors; 0.83-0.90 shared equally); f32
// 0.75-0.81 at n = 16384-32768 from 1024 rows, but 1.05-1.07 at n = 8192 and 1.3-1.5 at 6144
// (2 blocks): the partial-row update costs the streamed kernel 8 bytes of L2 traffic an element,
// relatively less beside f32's 12 bytes of DRAM traffic than beside bf16's 6. So f32 rows split
// from 3 blocks up.
constexpr int rmsnorm_bwd_split(const Target& target, DType t, int64_t vectors) {
  namespace F = kernels::rmsnorm;
  if (target.backend != BackendKind::kCuda) return 0;
  const int64_t split = ceil_div(vectors, int64_t{F::kSplitThreads} * F::kChunksBwd);
  const int64_t fewest = t == DType::kF32 ? 3 : 2;
  return split >= fewest && split <= F::kMaxSplit ? static_cast<int>(split) : 0;
}

// The layout of a split row: one row a block, its vectors shared equally among the blocks (threads
// a whole number of warps, at most kSplitThreads).
constexpr RowLayout rmsnorm_bwd_split_layout(int64_t vectors, int vec, int split, int warp) {
  namespace F = kernels::rmsnorm;
  const int64_t threads = ceil_div(ceil_div(vectors, int64_t{split}), int64_t{F::kChunksBwd});
  return {vec,
          static_cast<int>(std::min<int64_t>(ceil_div(threads, warp) * warp, F::kSplitThreads)), 1};
}

// Bytes of the workspace the backward needs: a header (the slot count used, read by the
// reduction), then [slots, n] float32 partials.
constexpr int64_t rmsnorm_bwd_workspace_bytes(int64_t rows, int64_t n) {
  return kernels::rmsnorm::kWorkspaceHeaderBytes +
         rmsnorm_bwd_max_slots(rows) * n * static_cast<int64_t>(sizeof(float));
}

namespace detail {

inline Status check_input(std::string_view op, std::string_view operand, const Tensor& x) {
  if (x.dtype != DType::kBF16 && x.dtype != DType::kF16 && x.dtype != DType::kF32) {
    return operand_error(op, operand,
                         StrCat("expected dtype bf16, f16 or f32, got ", name(x.dtype)));
  }
  if (x.rank < 1) return operand_error(op, operand, "expected rank >= 1 ([..., n]), got a scalar");
  // The kernels index rows and columns in 32 bits, and step rows by up to kRmsNormMaxSlots.
  if (x.last() > std::numeric_limits<int32_t>::max() ||
      (x.last() > 0 &&
       x.elements() / x.last() > std::numeric_limits<int32_t>::max() - kRmsNormMaxSlots)) {
    return operand_error(op, operand, StrCat("too large for 32-bit row indexing: ", describe(x)));
  }
  return {};
}

// Last in validate(), once every shape, dtype and attribute is checked: an empty x (no rows, or
// rows of no element) is an empty problem (ops/tensor.hpp), then x and gamma need data.
inline Status check_nonempty(std::string_view op, std::string_view operand, const Tensor& x,
                             const Tensor& gamma) {
  if (x.elements() == 0) {
    return empty_problem(
        op, operand,
        StrCat("expected at least one row of at least one element, got ", describe(x)));
  }
  if (x.data == nullptr) return operand_error(op, operand, "null data pointer");
  if (gamma.data == nullptr) return operand_error(op, "gamma", "null data pointer");
  return {};
}

inline Status check_gamma(std::string_view op, std::string_view operand, const Tensor& gamma,
                          const Tensor& x, std::string_view x_name = "x") {
  if (gamma.rank != 1 || gamma.dims[0] != x.last() || gamma.dtype != x.dtype) {
    return operand_error(op, operand,
                         StrCat("expected ", name(x.dtype), "[", x.last(), "] (n and dtype from ",
                                x_name, "), got ", describe(gamma)));
  }
  return {};
}

inline Status check_epsilon(std::string_view op, float epsilon) {
  if (!std::isfinite(epsilon) || epsilon < 0.f) {
    char got[32];
    std::snprintf(got, sizeof got, "%g", static_cast<double>(epsilon));
    return InvalidArgument(
        StrCat(op, ": attribute epsilon: expected a finite value >= 0, got ", got));
  }
  return {};
}

inline uintptr_t address_bits(std::initializer_list<const void*> ptrs) {
  uintptr_t bits = 0;
  for (const void* p : ptrs) bits |= reinterpret_cast<uintptr_t>(p);
  return bits;
}

}  // namespace detail

// Forward; kFused selects rms_norm_with_add. One tier: AITER ships no RMSNorm ASM kernel, so our
// portable kernels serve every arch.
template <bool kFused>
struct RmsNormForward;

template <bool kFused>
struct RmsNormForwardPortable {
  static constexpr std::string_view kName = "portable";
  using Params = typename RmsNormForward<kFused>::Params;

  static Verdict supports(const Params&, const Target&) { return Verdict::yes(); }

  static void plan(const Params& p, const Target& target, kernels::Plan& plan) {
    const int64_t n = p.x.last();
    const int64_t rows = p.x.elements() / n;
    const void* residual = kFused ? p.residual.data : nullptr;
    void* residual_out = kFused ? p.residual_out.data : nullptr;
    const int vec = rmsnorm_vec(
        n, p.x.dtype,
        detail::address_bits({p.x.data, p.gamma.data, p.y.data, residual, residual_out}));
    const RowLayout l = rmsnorm_layout(n, vec, kernels::rmsnorm::kChunksFwd,
                                       kernels::rmsnorm::kMaxThreadsFwd, target.warp());
    kernels::RmsNormFwdArgs args{p.x.data,
                                 residual,
                                 p.gamma.data,
                                 p.y.data,
                                 residual_out,
                                 static_cast<int32_t>(rows),
                                 static_cast<int32_t>(n),
                                 p.epsilon,
                                 l.rows_per_block,
                                 l.threads_per_row};
    plan.launch(kernels::rmsnorm_fwd_kernel(p.x.dtype, vec, kFused),
                {static_cast<uint32_t>(ceil_div(rows, l.rows_per_block)), 1, 1},
                {static_cast<uint32_t>(l.block_threads()), 1, 1}, args,
                rmsnorm_fwd_shared_bytes(target, p.x.dtype, rows, n, l, kFused));
  }
};

template <bool kFused>
struct RmsNormForward {
  static constexpr std::string_view kName = kFused ? "aiter.rms_norm_with_add" : "aiter.rms_norm";

  struct Params {
    Tensor x, gamma, y;
    Tensor residual, residual_out;  // kFused only
    float epsilon = 1e-6f;
    Dispatch dispatch;
  };
  using Tiers = std::tuple<RmsNormForwardPortable<kFused>>;

  static Status validate(const Params& p) {
    JAX_AITER_RETURN_IF_ERROR(detail::check_input(kName, "x", p.x));
    JAX_AITER_RETURN_IF_ERROR(detail::check_gamma(kName, "gamma", p.gamma, p.x));
    JAX_AITER_RETURN_IF_ERROR(detail::check_epsilon(kName, p.epsilon));
    if constexpr (kFused) {
      JAX_AITER_RETURN_IF_ERROR(expect_like(kName, "residual", p.residual, p.x, "x"));
      JAX_AITER_RETURN_IF_ERROR(expect_like(kName, "residual_out", p.residual_out, p.x, "x"));
    }
    JAX_AITER_RETURN_IF_ERROR(expect_like(kName, "y", p.y, p.x, "x"));
    return detail::check_nonempty(kName, "x", p.x, p.gamma);
  }
};

// Backward; kFused adds the gradient that reached residual_out directly (dresidual) into dx.
template <bool kFused>
struct RmsNormBackward;

template <bool kFused>
struct RmsNormBackwardPortable {
  static constexpr std::string_view kName = "portable";
  using Params = typename RmsNormBackward<kFused>::Params;

  static Verdict supports(const Params&, const Target&) { return Verdict::yes(); }

  static void plan(const Params& p, const Target& target, kernels::Plan& plan) {
    const int64_t n = p.x.last();
    const int64_t rows = p.x.elements() / n;
    const int64_t max_slots = rmsnorm_bwd_max_slots(rows);
    plan.workspace.add("partials", rmsnorm_bwd_workspace_bytes(rows, n));
    void* workspace = plan.piece(0);
    const void* dresidual = kFused ? p.dresidual.data : nullptr;
    int v = rmsnorm_vec(
        n, p.x.dtype,
        detail::address_bits({p.dy.data, p.x.data, p.gamma.data, dresidual, p.dx.data}));
    // The float32 partials move v at a time too: the workspace must be aligned to that.
    while (v > 1 && reinterpret_cast<uintptr_t>(workspace) % (static_cast<uintptr_t>(v) * 4) != 0) {
      v /= 2;
    }
    namespace F = kernels::rmsnorm;
    using kernels::BwdRows;
    RowLayout l = rmsnorm_layout(n, v, F::kChunksBwd, F::kMaxThreadsBwd, target.warp());
    const bool in_registers = l.row_in_registers(n, F::kChunksBwd);
    // Rows past the registers: split over a cluster (one row a block of kSplitThreads), else
    // streamed.
    const int split = in_registers ? 0 : rmsnorm_bwd_split(target, p.x.dtype, n / v);
    if (split > 0) l = rmsnorm_bwd_split_layout(n / v, v, split, target.warp());
    const BwdRows kind = in_registers ? BwdRows::kInRegisters
                         : split > 0  ? BwdRows::kSplit
                                      : BwdRows::kStreamed;
    int64_t blocks = ceil_div(max_slots, l.rows_per_block);
    if (kind == BwdRows::kSplit) blocks = max_slots * split;
    if (kind == BwdRows::kStreamed) {
      const int64_t fit = kRmsNormStreamedPartialBytes / (n * int64_t{sizeof(float)});
      blocks = std::min(blocks, std::max<int64_t>(fit, target.compute_units));
    }
    kernels::RmsNormBwdArgs args{p.dy.data,
                                 p.x.data,
                                 p.gamma.data,
                                 dresidual,
                                 p.dx.data,
                                 workspace,
                                 static_cast<int32_t>(rows),
                                 static_cast<int32_t>(n),
                                 p.epsilon,
                                 l.rows_per_block,
                                 l.threads_per_row,
                                 static_cast<int32_t>(max_slots)};
    kernels::RmsNormDgammaArgs reduce{workspace, p.dgamma.data, static_cast<int32_t>(n)};
    kernels::Launch& rows_pass = plan.launch(
        kernels::rmsnorm_bwd_kernel(p.x.dtype, v, kind), {static_cast<uint32_t>(blocks), 1, 1},
        {static_cast<uint32_t>(l.block_threads()), 1, 1}, args);
    rows_pass.fill_device = true;
    if (kind == BwdRows::kSplit) rows_pass.cluster = static_cast<uint8_t>(split);
    plan.launch(kernels::rmsnorm_dgamma_kernel(p.x.dtype),
                {static_cast<uint32_t>(ceil_div(n, F::kDgammaColumns)), 1, 1},
                {F::kDgammaBlock, 1, 1}, reduce);
    plan.note("max_slots", max_slots);
    if (split > 0) plan.note("cluster", split);
  }
};

template <bool kFused>
struct RmsNormBackward {
  static constexpr std::string_view kName =
      kFused ? "aiter.rms_norm_with_add_bwd" : "aiter.rms_norm_bwd";

  struct Params {
    Tensor dy, x, gamma;
    Tensor dresidual;  // kFused only
    Tensor dx, dgamma, workspace;
    float epsilon = 1e-6f;
    Dispatch dispatch;
  };
  using Tiers = std::tuple<RmsNormBackwardPortable<kFused>>;

  // The fused backward's x is the forward's residual_out: errors use the name the caller knows.
  static constexpr std::string_view kXName = kFused ? "residual_out" : "x";

  static Status validate(const Params& p) {
    JAX_AITER_RETURN_IF_ERROR(detail::check_input(kName, kXName, p.x));
    JAX_AITER_RETURN_IF_ERROR(expect_like(kName, "dy", p.dy, p.x, kXName));
    JAX_AITER_RETURN_IF_ERROR(detail::check_gamma(kName, "gamma", p.gamma, p.x, kXName));
    JAX_AITER_RETURN_IF_ERROR(detail::check_epsilon(kName, p.epsilon));
    if constexpr (kFused) {
      JAX_AITER_RETURN_IF_ERROR(expect_like(kName, "dresidual", p.dresidual, p.x, kXName));
    }
    JAX_AITER_RETURN_IF_ERROR(expect_like(kName, "dx", p.dx, p.x, kXName));
    JAX_AITER_RETURN_IF_ERROR(expect_like(kName, "dgamma", p.dgamma, p.gamma, "gamma"));
    return detail::check_nonempty(kName, kXName, p.x, p.gamma);
  }

  // The workspace output Python sizes at trace time (before any device is known).
  static int64_t workspace_bytes(const Params& p) {
    const int64_t n = p.x.last();
    return n > 0 ? rmsnorm_bwd_workspace_bytes(p.x.elements() / n, n) : 0;
  }
};

using RmsNorm = RmsNormForward<false>;
using RmsNormWithAdd = RmsNormForward<true>;
using RmsNormBwd = RmsNormBackward<false>;
using RmsNormWithAddBwd = RmsNormBackward<true>;

}  // namespace jax_aiter::ops
