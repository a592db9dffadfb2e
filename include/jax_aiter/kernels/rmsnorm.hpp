// ABI of our portable RMSNorm kernels (kernels_co/rmsnorm.kernel.cpp): the packed argument structs,
// field by field as the kernels declare their parameters, and the module's kernel table.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/kernels/launch.hpp"

namespace jax_aiter::kernels {

struct RmsNormFwdArgs {
  const void* x;
  const void* residual;  // null: plain RMSNorm; else fused add (residual_out = x + residual)
  const void* gamma;
  void* y;
  void* residual_out;
  int32_t rows;
  int32_t n;
  float epsilon;
  int32_t rows_per_block;
  int32_t threads_per_row;
};
static_assert(offsetof(RmsNormFwdArgs, residual_out) == 32);
static_assert(offsetof(RmsNormFwdArgs, rows) == 40 && offsetof(RmsNormFwdArgs, epsilon) == 48);
static_assert(offsetof(RmsNormFwdArgs, threads_per_row) == 56 && sizeof(RmsNormFwdArgs) == 64);

struct RmsNormBwdArgs {
  const void* dy;
  const void* x;
  const void* gamma;
  const void* dresidual;  // null: plain; else added to dx (gradient reaching the fused residual)
  void* dx;
  void* workspace;  // header (slots used) + [slots, n] float32 dgamma partials
  int32_t rows;
  int32_t n;
  float epsilon;
  int32_t rows_per_block;
  int32_t threads_per_row;
  int32_t max_slots;  // slots used: min(max_slots, launched blocks * rows_per_block)
};
static_assert(offsetof(RmsNormBwdArgs, workspace) == 40 && offsetof(RmsNormBwdArgs, rows) == 48);
static_assert(offsetof(RmsNormBwdArgs, max_slots) == 68 && sizeof(RmsNormBwdArgs) == 72);

struct RmsNormDgammaArgs {
  const void* workspace;  // as the backward left it: the slot count is in its header
  void* dgamma;
  int32_t n;
};
static_assert(offsetof(RmsNormDgammaArgs, n) == 16 && sizeof(RmsNormDgammaArgs) == 24);

inline constexpr std::array kRmsNormFwdFields{
    JAX_AITER_ARG_FIELD(RmsNormFwdArgs, x),
    JAX_AITER_ARG_FIELD(RmsNormFwdArgs, residual),
    JAX_AITER_ARG_FIELD(RmsNormFwdArgs, gamma),
    JAX_AITER_ARG_FIELD(RmsNormFwdArgs, y),
    JAX_AITER_ARG_FIELD(RmsNormFwdArgs, residual_out),
    JAX_AITER_ARG_FIELD(RmsNormFwdArgs, rows),
    JAX_AITER_ARG_FIELD(RmsNormFwdArgs, n),
    JAX_AITER_ARG_FIELD(RmsNormFwdArgs, epsilon),
    JAX_AITER_ARG_FIELD(RmsNormFwdArgs, rows_per_block),
    JAX_AITER_ARG_FIELD(RmsNormFwdArgs, threads_per_row),
};
inline constexpr std::array kRmsNormBwdFields{
    JAX_AITER_ARG_FIELD(RmsNormBwdArgs, dy),
    JAX_AITER_ARG_FIELD(RmsNormBwdArgs, x),
    JAX_AITER_ARG_FIELD(RmsNormBwdArgs, gamma),
    JAX_AITER_ARG_FIELD(RmsNormBwdArgs, dresidual),
    JAX_AITER_ARG_FIELD(RmsNormBwdArgs, dx),
    JAX_AITER_ARG_FIELD(RmsNormBwdArgs, workspace),
    JAX_AITER_ARG_FIELD(RmsNormBwdArgs, rows),
    JAX_AITER_ARG_FIELD(RmsNormBwdArgs, n),
    JAX_AITER_ARG_FIELD(RmsNormBwdArgs, epsilon),
    JAX_AITER_ARG_FIELD(RmsNormBwdArgs, rows_per_block),
    JAX_AITER_ARG_FIELD(RmsNormBwdArgs, threads_per_row),
    JAX_AITER_ARG_FIELD(RmsNormBwdArgs, max_slots),
};
inline constexpr std::array kRmsNormDgammaFields{
    JAX_AITER_ARG_FIELD(RmsNormDgammaArgs, workspace),
    JAX_AITER_ARG_FIELD(RmsNormDgammaArgs, dgamma),
    JAX_AITER_ARG_FIELD(RmsNormDgammaArgs, n),
};

// Which backward kernel a row takes (kernels_co/rmsnorm.kernel.cpp): its row in one block's
// registers, split over the blocks of a thread-block cluster, or streamed through L2.
enum class BwdRows : uint8_t { kInRegisters, kSplit, kStreamed };

// Facts of the kernels, kept in step with kernels_co/rmsnorm.kernel.cpp.
struct RmsNormKernelFacts {
  static constexpr int kChunksFwd = 2;         // vectors a thread keeps in registers per row
  static constexpr int kChunksBwd = 2;         // (backward: dgamma terms per vector)
  static constexpr int kMaxThreadsFwd = 1024;  // __launch_bounds__ of the forward kernels
  static constexpr int kMaxThreadsBwd = 512;   // and of the backward kernels (all kinds)
  // The split backward shares a row among the blocks of a thread-block cluster (CUDA): blocks of
  // kSplitThreads threads, up to the portable cluster size.
  static constexpr int kSplitThreads = 512;
  static constexpr int kMaxSplit = 8;
  static constexpr int kDgammaBlock = 1024;          // threads per block of the dgamma reduction
  static constexpr int kDgammaColumns = 32;          // columns per block of the dgamma reduction
  static constexpr int kWorkspaceHeaderBytes = 256;  // the backward workspace's header
  // The fused forward stages its rows in shared memory when the launch gives it the bytes (CUDA,
  // 16-byte vectors, rows in registers): at most what a launch may use without raising the
  // kernel's attribute.
  static constexpr int64_t kMaxStagedBytes = int64_t{48} << 10;
};

static_assert(RmsNormKernelFacts::kMaxSplit <= kMaxClusterSize,
              "a split row's cluster must be one the backends measure at module load");

// Vector widths built per dtype: 16-byte accesses at most.
constexpr int rmsnorm_max_vec(DType t) { return t == DType::kF32 ? 4 : 8; }

namespace detail {
constexpr KernelInfo fwd(std::string_view s) {
  return {s, sizeof(RmsNormFwdArgs), kRmsNormFwdFields};
}
constexpr KernelInfo bwd(std::string_view s) {  // persistent launches (see ops/rmsnorm.hpp)
  return {s, sizeof(RmsNormBwdArgs), kRmsNormBwdFields, /*fill_device=*/true};
}
constexpr KernelInfo bwd_split(std::string_view s) {  // persistent, in clusters
  return {s, sizeof(RmsNormBwdArgs), kRmsNormBwdFields, /*fill_device=*/true,
          /*cluster_block=*/RmsNormKernelFacts::kSplitThreads};
}
constexpr KernelInfo dgamma(std::string_view s) {
  return {s, sizeof(RmsNormDgammaArgs), kRmsNormDgammaFields};
}
}  // namespace detail

struct RmsNormModule {
  static constexpr std::string_view kName = "rmsnorm";
  // Order: 11 kernels of each kind (bf16 v1..v8, f16 v1..v8, f32 v1..v4): forward, fused forward,
  // backward, backward of rows split over a cluster, backward of rows past the registers
  // (streamed); then 3 reductions.
  static constexpr std::array<KernelInfo, 58> kKernels{{
      detail::fwd("jax_aiter_rmsnorm_fwd_bf16_v1"),
      detail::fwd("jax_aiter_rmsnorm_fwd_bf16_v2"),
      detail::fwd("jax_aiter_rmsnorm_fwd_bf16_v4"),
      detail::fwd("jax_aiter_rmsnorm_fwd_bf16_v8"),
      detail::fwd("jax_aiter_rmsnorm_fwd_f16_v1"),
      detail::fwd("jax_aiter_rmsnorm_fwd_f16_v2"),
      detail::fwd("jax_aiter_rmsnorm_fwd_f16_v4"),
      detail::fwd("jax_aiter_rmsnorm_fwd_f16_v8"),
      detail::fwd("jax_aiter_rmsnorm_fwd_f32_v1"),
      detail::fwd("jax_aiter_rmsnorm_fwd_f32_v2"),
      detail::fwd("jax_aiter_rmsnorm_fwd_f32_v4"),
      detail::fwd("jax_aiter_rmsnorm_fwd_add_bf16_v1"),
      detail::fwd("jax_aiter_rmsnorm_fwd_add_bf16_v2"),
      detail::fwd("jax_aiter_rmsnorm_fwd_add_bf16_v4"),
      detail::fwd("jax_aiter_rmsnorm_fwd_add_bf16_v8"),
      detail::fwd("jax_aiter_rmsnorm_fwd_add_f16_v1"),
      detail::fwd("jax_aiter_rmsnorm_fwd_add_f16_v2"),
      detail::fwd("jax_aiter_rmsnorm_fwd_add_f16_v4"),
      detail::fwd("jax_aiter_rmsnorm_fwd_add_f16_v8"),
      detail::fwd("jax_aiter_rmsnorm_fwd_add_f32_v1"),
      detail::fwd("jax_aiter_rmsnorm_fwd_add_f32_v2"),
      detail::fwd("jax_aiter_rmsnorm_fwd_add_f32_v4"),
      detail::bwd("jax_aiter_rmsnorm_bwd_bf16_v1"),
      detail::bwd("jax_aiter_rmsnorm_bwd_bf16_v2"),
      detail::bwd("jax_aiter_rmsnorm_bwd_bf16_v4"),
      detail::bwd("jax_aiter_rmsnorm_bwd_bf16_v8"),
      detail::bwd("jax_aiter_rmsnorm_bwd_f16_v1"),
      detail::bwd("jax_aiter_rmsnorm_bwd_f16_v2"),
      detail::bwd("jax_aiter_rmsnorm_bwd_f16_v4"),
      detail::bwd("jax_aiter_rmsnorm_bwd_f16_v8"),
      detail::bwd("jax_aiter_rmsnorm_bwd_f32_v1"),
      detail::bwd("jax_aiter_rmsnorm_bwd_f32_v2"),
      detail::bwd("jax_aiter_rmsnorm_bwd_f32_v4"),
      detail::bwd_split("jax_aiter_rmsnorm_bwd_split_bf16_v1"),
      detail::bwd_split("jax_aiter_rmsnorm_bwd_split_bf16_v2"),
      detail::bwd_split("jax_aiter_rmsnorm_bwd_split_bf16_v4"),
      detail::bwd_split("jax_aiter_rmsnorm_bwd_split_bf16_v8"),
      detail::bwd_split("jax_aiter_rmsnorm_bwd_split_f16_v1"),
      detail::bwd_split("jax_aiter_rmsnorm_bwd_split_f16_v2"),
      detail::bwd_split("jax_aiter_rmsnorm_bwd_split_f16_v4"),
      detail::bwd_split("jax_aiter_rmsnorm_bwd_split_f16_v8"),
      detail::bwd_split("jax_aiter_rmsnorm_bwd_split_f32_v1"),
      detail::bwd_split("jax_aiter_rmsnorm_bwd_split_f32_v2"),
      detail::bwd_split("jax_aiter_rmsnorm_bwd_split_f32_v4"),
      detail::bwd("jax_aiter_rmsnorm_bwd_streamed_bf16_v1"),
      detail::bwd("jax_aiter_rmsnorm_bwd_streamed_bf16_v2"),
      detail::bwd("jax_aiter_rmsnorm_bwd_streamed_bf16_v4"),
      detail::bwd("jax_aiter_rmsnorm_bwd_streamed_bf16_v8"),
      detail::bwd("jax_aiter_rmsnorm_bwd_streamed_f16_v1"),
      detail::bwd("jax_aiter_rmsnorm_bwd_streamed_f16_v2"),
      detail::bwd("jax_aiter_rmsnorm_bwd_streamed_f16_v4"),
      detail::bwd("jax_aiter_rmsnorm_bwd_streamed_f16_v8"),
      detail::bwd("jax_aiter_rmsnorm_bwd_streamed_f32_v1"),
      detail::bwd("jax_aiter_rmsnorm_bwd_streamed_f32_v2"),
      detail::bwd("jax_aiter_rmsnorm_bwd_streamed_f32_v4"),
      detail::dgamma("jax_aiter_rmsnorm_dgamma_bf16"),
      detail::dgamma("jax_aiter_rmsnorm_dgamma_f16"),
      detail::dgamma("jax_aiter_rmsnorm_dgamma_f32"),
  }};

  static constexpr uint16_t dtype_slot(DType t) {
    return t == DType::kBF16 ? 0 : t == DType::kF16 ? 1 : 2;
  }
  static constexpr uint16_t vec_slot(int vec) {
    return vec == 1 ? 0 : vec == 2 ? 1 : vec == 4 ? 2 : 3;
  }
  // 11 kernels of each kind: bf16 and f16 at 1, 2, 4, 8 elements per access, f32 at 1, 2, 4.
  static constexpr uint16_t by_vec(DType t, int vec) {
    return static_cast<uint16_t>(dtype_slot(t) * 4 + vec_slot(vec));
  }
  static constexpr uint16_t fwd_kernel(DType t, int vec, bool fused) {
    return static_cast<uint16_t>((fused ? 11 : 0) + by_vec(t, vec));
  }
  static constexpr uint16_t bwd_kernel(DType t, int vec, BwdRows rows) {
    const int first = rows == BwdRows::kInRegisters ? 22 : rows == BwdRows::kSplit ? 33 : 44;
    return static_cast<uint16_t>(first + by_vec(t, vec));
  }
  static constexpr uint16_t dgamma_kernel(DType t) {
    return static_cast<uint16_t>(55 + dtype_slot(t));
  }
};

static_assert(RmsNormModule::kKernels[RmsNormModule::fwd_kernel(DType::kF32, 4, false)].symbol ==
              "jax_aiter_rmsnorm_fwd_f32_v4");
static_assert(RmsNormModule::kKernels[RmsNormModule::fwd_kernel(DType::kBF16, 1, true)].symbol ==
              "jax_aiter_rmsnorm_fwd_add_bf16_v1");
static_assert(
    RmsNormModule::kKernels[RmsNormModule::bwd_kernel(DType::kF16, 8, BwdRows::kInRegisters)]
        .symbol == "jax_aiter_rmsnorm_bwd_f16_v8");
static_assert(RmsNormModule::kKernels[RmsNormModule::bwd_kernel(DType::kBF16, 4, BwdRows::kSplit)]
                  .symbol == "jax_aiter_rmsnorm_bwd_split_bf16_v4");
static_assert(RmsNormModule::kKernels[RmsNormModule::bwd_kernel(DType::kF32, 2, BwdRows::kStreamed)]
                  .symbol == "jax_aiter_rmsnorm_bwd_streamed_f32_v2");
static_assert(RmsNormModule::kKernels[RmsNormModule::dgamma_kernel(DType::kF32)].symbol ==
              "jax_aiter_rmsnorm_dgamma_f32");

}  // namespace jax_aiter::kernels
