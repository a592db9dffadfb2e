// ABI of our portable RMSNorm kernels (kernels_co/rmsnorm.kernel.cpp, code object "rmsnorm"): the
// packed argument structs, field by field as the kernels declare their parameters, and the kernel
// table, generated from the list the kernel source instantiates (kernels/shared/rmsnorm.h).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/kernels/kernel.hpp"
#include "jax_aiter/kernels/shared/rmsnorm.h"

namespace jax_aiter::kernels {

using rmsnorm::BwdRows;

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

inline constexpr std::string_view kRmsNormCodeObject = "rmsnorm";

static_assert(rmsnorm::kMaxSplit <= kMaxClusterSize,
              "a split row's cluster must be one the backends measure");

// Vector widths built per dtype: 16-byte accesses at most.
constexpr int rmsnorm_max_vec(DType t) { return t == DType::kF32 ? 4 : 8; }

namespace rmsnorm_detail {

constexpr KernelInfo fwd(std::string_view symbol) {
  return {kRmsNormCodeObject, symbol, sizeof(RmsNormFwdArgs), kRmsNormFwdFields};
}
constexpr KernelInfo bwd(std::string_view symbol) {  // persistent launches (see ops/rmsnorm.hpp)
  return {kRmsNormCodeObject, symbol, sizeof(RmsNormBwdArgs), kRmsNormBwdFields,
          /*fill_device=*/true};
}
constexpr KernelInfo bwd_split(std::string_view symbol) {  // persistent, in clusters
  return {kRmsNormCodeObject,     symbol,
          sizeof(RmsNormBwdArgs), kRmsNormBwdFields,
          /*fill_device=*/true,   /*cluster_block=*/rmsnorm::kSplitThreads};
}
constexpr KernelInfo dgamma(std::string_view symbol) {
  return {kRmsNormCodeObject, symbol, sizeof(RmsNormDgammaArgs), kRmsNormDgammaFields};
}

struct Variant {
  DType dtype;
  int vec;
};

// clang-format off
#define JA_RMSNORM_VARIANT(tag, E, VEC) Variant{DType::k##E, VEC},
#define JA_RMSNORM_FWD(tag, E, VEC) fwd("jax_aiter_rmsnorm_fwd_" #tag "_v" #VEC),
#define JA_RMSNORM_FWD_ADD(tag, E, VEC) fwd("jax_aiter_rmsnorm_fwd_add_" #tag "_v" #VEC),
#define JA_RMSNORM_BWD(tag, E, VEC) bwd("jax_aiter_rmsnorm_bwd_" #tag "_v" #VEC),
#define JA_RMSNORM_BWD_SPLIT(tag, E, VEC) bwd_split("jax_aiter_rmsnorm_bwd_split_" #tag "_v" #VEC),
#define JA_RMSNORM_BWD_STREAMED(tag, E, VEC) bwd("jax_aiter_rmsnorm_bwd_streamed_" #tag "_v" #VEC),
#define JA_RMSNORM_DGAMMA(tag, E) dgamma("jax_aiter_rmsnorm_dgamma_" #tag),
inline constexpr Variant kVariants[] = {JAX_AITER_RMSNORM_VARIANTS(JA_RMSNORM_VARIANT)};
inline constexpr KernelInfo kFwd[] = {JAX_AITER_RMSNORM_VARIANTS(JA_RMSNORM_FWD)};
inline constexpr KernelInfo kFwdAdd[] = {JAX_AITER_RMSNORM_VARIANTS(JA_RMSNORM_FWD_ADD)};
inline constexpr KernelInfo kBwd[] = {JAX_AITER_RMSNORM_VARIANTS(JA_RMSNORM_BWD)};
inline constexpr KernelInfo kBwdSplit[] = {JAX_AITER_RMSNORM_VARIANTS(JA_RMSNORM_BWD_SPLIT)};
inline constexpr KernelInfo kBwdStreamed[] = {JAX_AITER_RMSNORM_VARIANTS(JA_RMSNORM_BWD_STREAMED)};
inline constexpr KernelInfo kDgamma[] = {JAX_AITER_RMSNORM_DTYPES(JA_RMSNORM_DGAMMA)};
inline constexpr DType kDgammaDTypes[] = {DType::kBF16, DType::kF16, DType::kF32};
#undef JA_RMSNORM_VARIANT
#undef JA_RMSNORM_FWD
#undef JA_RMSNORM_FWD_ADD
#undef JA_RMSNORM_BWD
#undef JA_RMSNORM_BWD_SPLIT
#undef JA_RMSNORM_BWD_STREAMED
#undef JA_RMSNORM_DGAMMA
// clang-format on

constexpr int variant(DType t, int vec) {
  for (int i = 0; i < static_cast<int>(std::size(kVariants)); ++i) {
    if (kVariants[i].dtype == t && kVariants[i].vec == vec) return i;
  }
  return -1;
}

}  // namespace rmsnorm_detail

// The kernels, by what a plan asks for. dtype and vec must be a built variant (plans only ask for
// bf16/f16/f32 at 1..rmsnorm_max_vec); the tables are static, so a kernel's address names it.
constexpr const KernelInfo& rmsnorm_fwd_kernel(DType t, int vec, bool fused) {
  const int i = rmsnorm_detail::variant(t, vec);
  return fused ? rmsnorm_detail::kFwdAdd[i] : rmsnorm_detail::kFwd[i];
}
constexpr const KernelInfo& rmsnorm_bwd_kernel(DType t, int vec, BwdRows rows) {
  const int i = rmsnorm_detail::variant(t, vec);
  return rows == BwdRows::kInRegisters ? rmsnorm_detail::kBwd[i]
         : rows == BwdRows::kSplit     ? rmsnorm_detail::kBwdSplit[i]
                                       : rmsnorm_detail::kBwdStreamed[i];
}
constexpr const KernelInfo& rmsnorm_dgamma_kernel(DType t) {
  return rmsnorm_detail::kDgamma[t == DType::kBF16 ? 0 : t == DType::kF16 ? 1 : 2];
}

// Every kernel of the code object, for tools and for tests that check them all.
inline constexpr auto kRmsNormKernels = [] {
  std::array<const KernelInfo*,
             5 * std::size(rmsnorm_detail::kVariants) + std::size(rmsnorm_detail::kDgamma)>
      all{};
  size_t n = 0;
  for (const auto* table : {rmsnorm_detail::kFwd, rmsnorm_detail::kFwdAdd, rmsnorm_detail::kBwd,
                            rmsnorm_detail::kBwdSplit, rmsnorm_detail::kBwdStreamed}) {
    for (size_t i = 0; i < std::size(rmsnorm_detail::kVariants); ++i) all[n++] = &table[i];
  }
  for (const KernelInfo& k : rmsnorm_detail::kDgamma) all[n++] = &k;
  return all;
}();

static_assert(rmsnorm_fwd_kernel(DType::kF32, 4, false).symbol == "jax_aiter_rmsnorm_fwd_f32_v4");
static_assert(rmsnorm_fwd_kernel(DType::kBF16, 1, true).symbol ==
              "jax_aiter_rmsnorm_fwd_add_bf16_v1");
static_assert(rmsnorm_bwd_kernel(DType::kF16, 8, BwdRows::kInRegisters).symbol ==
              "jax_aiter_rmsnorm_bwd_f16_v8");
static_assert(rmsnorm_bwd_kernel(DType::kBF16, 4, BwdRows::kSplit).symbol ==
              "jax_aiter_rmsnorm_bwd_split_bf16_v4");
static_assert(rmsnorm_bwd_kernel(DType::kF32, 2, BwdRows::kStreamed).symbol ==
              "jax_aiter_rmsnorm_bwd_streamed_f32_v2");
static_assert(rmsnorm_dgamma_kernel(DType::kF32).symbol == "jax_aiter_rmsnorm_dgamma_f32");
static_assert(kRmsNormKernels.size() == 58);

}  // namespace jax_aiter::kernels
