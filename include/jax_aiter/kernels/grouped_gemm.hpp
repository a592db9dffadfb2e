// ABI of our portable grouped-GEMM kernels (kernels_co/grouped_gemm.kernel.cpp, code object
// "grouped_gemm"): the argument structs field by field as the kernels declare their parameters,
// and the kernel tables, generated from the tile lists the kernel source instantiates
// (kernels/shared/grouped_gemm.h).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/kernels/kernel.hpp"
#include "jax_aiter/kernels/shared/grouped_gemm.h"

namespace jax_aiter::kernels {

// The pre-kernel: group_sizes -> the schedule (kernels/shared/grouped_gemm.h), one block.
struct GroupedScheduleArgs {
  const void* group_sizes;  // int32 [G]
  void* schedule;           // int32 [schedule_words(G, capacity)]
  int32_t G, M;
  int32_t bm;        // rows of a row tile
  int32_t capacity;  // row tiles the list holds (0: offsets only, for wgrad)
};
static_assert(offsetof(GroupedScheduleArgs, G) == 16 && sizeof(GroupedScheduleArgs) == 32);

// A row-tile kernel (forward, dgrad, fp8 forward): block (x, y) computes columns [x BN, +BN) of
// the schedule's row tile y: out[rows, :] = x[rows, :] . B_g^T with B_g the group's [N, K] slice
// of w (forward: w[g]; dgrad: w[g]^T, w [G, K, N] as stored).
struct GroupedGemmArgs {
  const void* x;         // [M, K] row-major
  const void* w;         // [G, N, K] (forward, fp8) or [G, K, N] (dgrad), row-major
  const void* x_scale;   // fp8: f32 [M, K/128]; else null
  const void* w_scale;   // fp8: f32 [G, ceil(N/128), K/128]; else null
  const void* schedule;  // the pre-kernel's
  void* out;             // [M, N] row-major, out_dtype
  int32_t M, N, K;       // N: out's columns, K: the reduction
  int32_t G;
  int32_t out_dtype;  // grouped_gemm::OutType (fp8: bf16)
  int32_t fnuz;       // fp8: 1 if the bytes are e4m3fnuz (the host kernels read it)
};
static_assert(offsetof(GroupedGemmArgs, M) == 48 && sizeof(GroupedGemmArgs) == 72);

// The wgrad kernel: block (x, y, z) computes dw[z][y BM .. +BM][x BN .. +BN] = the sum over group
// z's rows m of dy[m, n] x[m, k].
struct GroupedWgradArgs {
  const void* dy;        // [M, N] row-major
  const void* x;         // [M, K] row-major
  const void* schedule;  // the pre-kernel's (its offsets)
  void* dw;              // [G, N, K] row-major, out_dtype
  int32_t M, N, K;
  int32_t G;
  int32_t out_dtype;
};  // 52 bytes of parameters, tail-padded to 56
static_assert(offsetof(GroupedWgradArgs, M) == 32 && sizeof(GroupedWgradArgs) == 56);

inline constexpr std::array kGroupedScheduleFields{
    JAX_AITER_ARG_FIELD(GroupedScheduleArgs, group_sizes),
    JAX_AITER_ARG_FIELD(GroupedScheduleArgs, schedule),
    JAX_AITER_ARG_FIELD(GroupedScheduleArgs, G),
    JAX_AITER_ARG_FIELD(GroupedScheduleArgs, M),
    JAX_AITER_ARG_FIELD(GroupedScheduleArgs, bm),
    JAX_AITER_ARG_FIELD(GroupedScheduleArgs, capacity),
};
inline constexpr std::array kGroupedGemmFields{
    JAX_AITER_ARG_FIELD(GroupedGemmArgs, x),         JAX_AITER_ARG_FIELD(GroupedGemmArgs, w),
    JAX_AITER_ARG_FIELD(GroupedGemmArgs, x_scale),   JAX_AITER_ARG_FIELD(GroupedGemmArgs, w_scale),
    JAX_AITER_ARG_FIELD(GroupedGemmArgs, schedule),  JAX_AITER_ARG_FIELD(GroupedGemmArgs, out),
    JAX_AITER_ARG_FIELD(GroupedGemmArgs, M),         JAX_AITER_ARG_FIELD(GroupedGemmArgs, N),
    JAX_AITER_ARG_FIELD(GroupedGemmArgs, K),         JAX_AITER_ARG_FIELD(GroupedGemmArgs, G),
    JAX_AITER_ARG_FIELD(GroupedGemmArgs, out_dtype), JAX_AITER_ARG_FIELD(GroupedGemmArgs, fnuz),
};
inline constexpr std::array kGroupedWgradFields{
    JAX_AITER_ARG_FIELD(GroupedWgradArgs, dy),        JAX_AITER_ARG_FIELD(GroupedWgradArgs, x),
    JAX_AITER_ARG_FIELD(GroupedWgradArgs, schedule),  JAX_AITER_ARG_FIELD(GroupedWgradArgs, dw),
    JAX_AITER_ARG_FIELD(GroupedWgradArgs, M),         JAX_AITER_ARG_FIELD(GroupedWgradArgs, N),
    JAX_AITER_ARG_FIELD(GroupedWgradArgs, K),         JAX_AITER_ARG_FIELD(GroupedWgradArgs, G),
    JAX_AITER_ARG_FIELD(GroupedWgradArgs, out_dtype),
};

inline constexpr std::string_view kGroupedGemmCodeObject = "grouped_gemm";

struct GroupedGemmTile {
  std::string_view name;
  int bm, bn, threads;
};

// What a row-tile kernel computes.
enum class GroupedKind : uint8_t { kForward, kDgrad };

namespace grouped_gemm_detail {
constexpr KernelInfo rows_kernel(std::string_view symbol) {
  return {kGroupedGemmCodeObject, symbol, sizeof(GroupedGemmArgs), kGroupedGemmFields};
}
constexpr KernelInfo wgrad_kernel(std::string_view symbol) {
  return {kGroupedGemmCodeObject, symbol, sizeof(GroupedWgradArgs), kGroupedWgradFields};
}
// clang-format off
#define JA_GG_TILE(name, BM, BN, THREADS) GroupedGemmTile{#name, BM, BN, THREADS},
// Per tile: {bf16, f16} x {fwd, dgrad} x {aligned, any}, in that order.
#define JA_GG_KERNELS(name, BM, BN, THREADS)                                                     \
  rows_kernel("jax_aiter_grouped_gemm_bf16_fwd_" #name "_aligned"),                              \
  rows_kernel("jax_aiter_grouped_gemm_bf16_fwd_" #name "_any"),                                  \
  rows_kernel("jax_aiter_grouped_gemm_bf16_dgrad_" #name "_aligned"),                            \
  rows_kernel("jax_aiter_grouped_gemm_bf16_dgrad_" #name "_any"),                                \
  rows_kernel("jax_aiter_grouped_gemm_f16_fwd_" #name "_aligned"),                               \
  rows_kernel("jax_aiter_grouped_gemm_f16_fwd_" #name "_any"),                                   \
  rows_kernel("jax_aiter_grouped_gemm_f16_dgrad_" #name "_aligned"),                             \
  rows_kernel("jax_aiter_grouped_gemm_f16_dgrad_" #name "_any"),
#define JA_GG_FP8_KERNEL(name, BM, BN, THREADS) rows_kernel("jax_aiter_grouped_gemm_fp8_" #name),
#define JA_GG_WGRAD_KERNELS(name, BM, BN, THREADS)                                               \
  wgrad_kernel("jax_aiter_grouped_gemm_bf16_wgrad_" #name "_aligned"),                           \
  wgrad_kernel("jax_aiter_grouped_gemm_bf16_wgrad_" #name "_any"),                               \
  wgrad_kernel("jax_aiter_grouped_gemm_f16_wgrad_" #name "_aligned"),                            \
  wgrad_kernel("jax_aiter_grouped_gemm_f16_wgrad_" #name "_any"),
inline constexpr GroupedGemmTile kTiles[] = {JAX_AITER_GROUPED_GEMM_TILES(JA_GG_TILE)};
inline constexpr GroupedGemmTile kWgradTiles[] = {JAX_AITER_GROUPED_WGRAD_TILES(JA_GG_TILE)};
inline constexpr KernelInfo kRowKernels[] = {JAX_AITER_GROUPED_GEMM_TILES(JA_GG_KERNELS)};
inline constexpr KernelInfo kFp8Kernels[] = {JAX_AITER_GROUPED_GEMM_TILES(JA_GG_FP8_KERNEL)};
inline constexpr KernelInfo kWgradKernels[] = {JAX_AITER_GROUPED_WGRAD_TILES(JA_GG_WGRAD_KERNELS)};
#undef JA_GG_TILE
#undef JA_GG_KERNELS
#undef JA_GG_FP8_KERNEL
#undef JA_GG_WGRAD_KERNELS
// clang-format on
}  // namespace grouped_gemm_detail

// Largest BM first (the rule picks the first tile that fits).
inline constexpr std::span<const GroupedGemmTile> kGroupedGemmTiles = grouped_gemm_detail::kTiles;
inline constexpr std::span<const GroupedGemmTile> kGroupedWgradTiles =
    grouped_gemm_detail::kWgradTiles;

inline constexpr KernelInfo kGroupedScheduleKernel{
    kGroupedGemmCodeObject, "jax_aiter_grouped_gemm_schedule", sizeof(GroupedScheduleArgs),
    kGroupedScheduleFields};

// The row-tile kernel of tile `tile` (an index into kGroupedGemmTiles) for 16-bit inputs of
// dtype t, with 16-byte loads or element-wise ones.
constexpr const KernelInfo& grouped_rows_kernel(size_t tile, DType t, GroupedKind kind,
                                                bool aligned) {
  return grouped_gemm_detail::kRowKernels[tile * 8 + (t == DType::kF16 ? 4 : 0) +
                                          (kind == GroupedKind::kDgrad ? 2 : 0) +
                                          (aligned ? 0 : 1)];
}
constexpr const KernelInfo& grouped_fp8_kernel(size_t tile) {
  return grouped_gemm_detail::kFp8Kernels[tile];
}
constexpr const KernelInfo& grouped_wgrad_kernel(size_t tile, DType t, bool aligned) {
  return grouped_gemm_detail::kWgradKernels[tile * 4 + (t == DType::kF16 ? 2 : 0) +
                                            (aligned ? 0 : 1)];
}

constexpr grouped_gemm::OutType grouped_out_type(DType t) {
  return t == DType::kBF16  ? grouped_gemm::kOutBF16
         : t == DType::kF16 ? grouped_gemm::kOutF16
                            : grouped_gemm::kOutF32;
}

static_assert(grouped_rows_kernel(1, DType::kF16, GroupedKind::kDgrad, false).symbol ==
              "jax_aiter_grouped_gemm_f16_dgrad_t64x128_any");
static_assert(grouped_wgrad_kernel(0, DType::kBF16, true).symbol ==
              "jax_aiter_grouped_gemm_bf16_wgrad_t128x128_aligned");

}  // namespace jax_aiter::kernels
