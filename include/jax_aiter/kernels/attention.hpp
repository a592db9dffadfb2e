// ABI of our portable attention kernels (kernels_co/attention.kernel.cpp, code object "attention"):
// the argument structs and their metadata fields, generated from the X-macro lists of
// kernels/shared/attention.h that the kernel source declares its parameters from, and the kernel
// tables.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/kernels/kernel.hpp"
#include "jax_aiter/kernels/shared/attention.h"

namespace jax_aiter::kernels {

#define JA_ATTN_MEMBER(T, name) T name;
struct AttnFwdArgs {
  JAX_AITER_ATTN_FWD_ARGS(JA_ATTN_MEMBER, JA_ATTN_MEMBER)
};
struct AttnBwdArgs {
  JAX_AITER_ATTN_BWD_ARGS(JA_ATTN_MEMBER, JA_ATTN_MEMBER)
};
struct AttnGqaReduceArgs {
  JAX_AITER_ATTN_GQA_REDUCE_ARGS(JA_ATTN_MEMBER, JA_ATTN_MEMBER)
};
struct AttnDropoutMaskArgs {
  JAX_AITER_ATTN_DROPOUT_MASK_ARGS(JA_ATTN_MEMBER, JA_ATTN_MEMBER)
};
#undef JA_ATTN_MEMBER

// No padding anywhere: the structs are the kernels' parameter lists byte for byte.
static_assert(sizeof(AttnFwdArgs) == 14 * 8 + 18 * 8 + 18 * 4);
static_assert(sizeof(AttnBwdArgs) == 17 * 8 + 33 * 8 + 16 * 4);
static_assert(sizeof(AttnGqaReduceArgs) == 3 * 8 + 4 * 4);
static_assert(sizeof(AttnDropoutMaskArgs) == 3 * 8 + 6 * 4);

#define JA_ATTN_FIELD(Struct, T, name) JAX_AITER_ARG_FIELD(Struct, name),
#define JA_ATTN_FWD_FIELD(T, name) JA_ATTN_FIELD(AttnFwdArgs, T, name)
#define JA_ATTN_BWD_FIELD(T, name) JA_ATTN_FIELD(AttnBwdArgs, T, name)
#define JA_ATTN_GQA_FIELD(T, name) JA_ATTN_FIELD(AttnGqaReduceArgs, T, name)
#define JA_ATTN_MASK_FIELD(T, name) JA_ATTN_FIELD(AttnDropoutMaskArgs, T, name)
inline constexpr ArgField kAttnFwdFields[] = {
    JAX_AITER_ATTN_FWD_ARGS(JA_ATTN_FWD_FIELD, JA_ATTN_FWD_FIELD)};
inline constexpr ArgField kAttnBwdFields[] = {
    JAX_AITER_ATTN_BWD_ARGS(JA_ATTN_BWD_FIELD, JA_ATTN_BWD_FIELD)};
inline constexpr ArgField kAttnGqaReduceFields[] = {
    JAX_AITER_ATTN_GQA_REDUCE_ARGS(JA_ATTN_GQA_FIELD, JA_ATTN_GQA_FIELD)};
inline constexpr ArgField kAttnDropoutMaskFields[] = {
    JAX_AITER_ATTN_DROPOUT_MASK_ARGS(JA_ATTN_MASK_FIELD, JA_ATTN_MASK_FIELD)};
#undef JA_ATTN_FIELD
#undef JA_ATTN_FWD_FIELD
#undef JA_ATTN_BWD_FIELD
#undef JA_ATTN_GQA_FIELD
#undef JA_ATTN_MASK_FIELD

inline constexpr std::string_view kAttnCodeObject = "attention";

// The kernels of one (dtype, head-dim bucket): forward, and the backward's dkdv and dq passes.
struct AttnKernels {
  DType dtype;
  int head_dim;  // the largest d and dv these kernels take
  KernelInfo fwd, dkdv, dq;
};
// The kernels of one dtype that do not depend on the head dim.
struct AttnDtypeKernels {
  DType dtype;
  KernelInfo bwd_pre, gqa_reduce;
};

namespace attention_detail {
constexpr KernelInfo fwd_kernel(std::string_view symbol) {
  return {kAttnCodeObject, symbol, sizeof(AttnFwdArgs), kAttnFwdFields};
}
constexpr KernelInfo bwd_kernel(std::string_view symbol) {
  return {kAttnCodeObject, symbol, sizeof(AttnBwdArgs), kAttnBwdFields};
}
// clang-format off
#define JA_ATTN_KERNELS(tag, Elem, D)                                                   \
  AttnKernels{DType::k##Elem, D, fwd_kernel("jax_aiter_attn_fwd_" #tag "_d" #D),         \
              bwd_kernel("jax_aiter_attn_bwd_dkdv_" #tag "_d" #D),                       \
              bwd_kernel("jax_aiter_attn_bwd_dq_" #tag "_d" #D)},
#define JA_ATTN_DTYPE_KERNELS(tag, Elem)                                                         \
  AttnDtypeKernels{DType::k##Elem, bwd_kernel("jax_aiter_attn_bwd_pre_" #tag),                 \
                   KernelInfo{kAttnCodeObject, "jax_aiter_attn_gqa_reduce_" #tag,               \
                              sizeof(AttnGqaReduceArgs), kAttnGqaReduceFields}},
inline constexpr AttnKernels kKernels[] = {JAX_AITER_ATTN_KERNELS(JA_ATTN_KERNELS)};
inline constexpr AttnDtypeKernels kDtypeKernels[] = {JAX_AITER_ATTN_DTYPES(JA_ATTN_DTYPE_KERNELS)};
#undef JA_ATTN_KERNELS
#undef JA_ATTN_DTYPE_KERNELS
// clang-format on
}  // namespace attention_detail

// The fp8 forward kernels, one per head-dim bucket (kernels/shared/attention.h).
struct AttnFp8Kernel {
  int head_dim;
  KernelInfo fwd;
};
namespace attention_detail {
#define JA_ATTN_FP8_KERNEL(D) AttnFp8Kernel{D, fwd_kernel("jax_aiter_attn_fwd_fp8_d" #D)},
inline constexpr AttnFp8Kernel kFp8Kernels[] = {JAX_AITER_ATTN_FP8_KERNELS(JA_ATTN_FP8_KERNEL)};
#undef JA_ATTN_FP8_KERNEL
}  // namespace attention_detail

// sm_90's wgmma forwards, two per 16-bit dtype (kernels/shared/attention.h, kWgRowsQ...): the
// plain one and the one with every feature.
struct AttnWgKernel {
  DType dtype;
  KernelInfo fwd, fwd_features;
};
namespace attention_detail {
constexpr KernelInfo wg_kernel(std::string_view symbol) {
  KernelInfo k = fwd_kernel(symbol);
  k.dynamic_shared = attention::kWgSmemBytes;
  return k;
}
#define JA_ATTN_WG_KERNEL(tag, Elem)                                             \
  AttnWgKernel{DType::k##Elem, wg_kernel("jax_aiter_attn_fwd_wg_" #tag "_d128"), \
               wg_kernel("jax_aiter_attn_fwd_wg_feat_" #tag "_d128")},
inline constexpr AttnWgKernel kWgKernels[] = {JAX_AITER_ATTN_WG_KERNELS(JA_ATTN_WG_KERNEL)};
#undef JA_ATTN_WG_KERNEL
}  // namespace attention_detail
inline constexpr std::span<const AttnWgKernel> kAttnWgKernels = attention_detail::kWgKernels;
constexpr const KernelInfo& attn_wg_kernel(DType t, bool features) {
  const AttnWgKernel& k = t == DType::kF16 ? kAttnWgKernels[1] : kAttnWgKernels[0];
  return features ? k.fwd_features : k.fwd;
}
static_assert(kAttnWgKernels[1].dtype == DType::kF16);

// sm_90's wgmma backward passes, one pair per 16-bit dtype (kernels/shared/attention.h,
// kWgBwdKeys...).
struct AttnWgBwdKernels {
  DType dtype;
  KernelInfo dkdv, dq;
};
namespace attention_detail {
constexpr KernelInfo wg_bwd_kernel(std::string_view symbol, uint32_t shared_bytes) {
  KernelInfo k = bwd_kernel(symbol);
  k.dynamic_shared = shared_bytes;
  return k;
}
#define JA_ATTN_WG_BWD_KERNELS(tag, Elem)                                                     \
  AttnWgBwdKernels{                                                                           \
      DType::k##Elem,                                                                         \
      wg_bwd_kernel("jax_aiter_attn_bwd_dkdv_wg_" #tag "_d128", attention::kWgDkdvSmemBytes), \
      wg_bwd_kernel("jax_aiter_attn_bwd_dq_wg_" #tag "_d128", attention::kWgDqSmemBytes)},
inline constexpr AttnWgBwdKernels kWgBwdKernels[] = {
    JAX_AITER_ATTN_WG_BWD_KERNELS(JA_ATTN_WG_BWD_KERNELS)};
#undef JA_ATTN_WG_BWD_KERNELS
}  // namespace attention_detail
inline constexpr std::span<const AttnWgBwdKernels> kAttnWgBwdKernels =
    attention_detail::kWgBwdKernels;
constexpr const AttnWgBwdKernels& attn_wg_bwd_kernels(DType t) {
  return t == DType::kF16 ? kAttnWgBwdKernels[1] : kAttnWgBwdKernels[0];
}
static_assert(kAttnWgBwdKernels[1].dtype == DType::kF16);

inline constexpr std::span<const AttnKernels> kAttnKernels = attention_detail::kKernels;
inline constexpr std::span<const AttnFp8Kernel> kAttnFp8Kernels = attention_detail::kFp8Kernels;
inline constexpr std::span<const AttnDtypeKernels> kAttnDtypeKernels =
    attention_detail::kDtypeKernels;
inline constexpr KernelInfo kAttnDropoutMaskKernel{kAttnCodeObject, "jax_aiter_attn_dropout_mask",
                                                   sizeof(AttnDropoutMaskArgs),
                                                   kAttnDropoutMaskFields};

// The index into kHeadDims of the smallest bucket that holds head dims d and dv (both <= 256).
constexpr int attn_head_dim_bucket(int64_t d, int64_t dv) {
  const int64_t need = d > dv ? d : dv;
  int i = 0;
  while (i + 1 < static_cast<int>(std::size(attention::kHeadDims)) &&
         attention::kHeadDims[i] < need) {
    ++i;
  }
  return i;
}

// The kernels for inputs of dtype t (bf16 or f16) and head-dim bucket `bucket`.
constexpr const AttnKernels& attn_kernels(DType t, int bucket) {
  for (const AttnKernels& k : kAttnKernels) {
    if (k.dtype == t && k.head_dim == attention::kHeadDims[bucket]) return k;
  }
  return kAttnKernels[0];  // unreachable for bf16/f16 and a valid bucket (static_asserts below)
}
constexpr const AttnDtypeKernels& attn_dtype_kernels(DType t) {
  return t == DType::kF16 ? kAttnDtypeKernels[1] : kAttnDtypeKernels[0];
}

// The fp8 forward kernel of head-dim bucket `bucket`.
constexpr const KernelInfo& attn_fp8_kernel(int bucket) {
  for (const AttnFp8Kernel& k : kAttnFp8Kernels) {
    if (k.head_dim == attention::kHeadDims[bucket]) return k.fwd;
  }
  return kAttnFp8Kernels[0].fwd;  // unreachable for a valid bucket (static_assert below)
}

// in_dtype of q's dtype (bf16, f16, e4m3fn, e4m3fnuz).
constexpr int attn_in_dtype(DType t) {
  return t == DType::kF8E4M3FN     ? attention::kAttnE4M3FN
         : t == DType::kF8E4M3FNUZ ? attention::kAttnE4M3FNUZ
         : t == DType::kF16        ? attention::kAttnF16
                                   : attention::kAttnBF16;
}

constexpr int attn_bias_dtype(DType t) {
  return t == DType::kBF16  ? attention::kAttnBF16
         : t == DType::kF16 ? attention::kAttnF16
                            : attention::kAttnF32;
}

static_assert(attn_kernels(DType::kF16, 2).fwd.symbol == "jax_aiter_attn_fwd_f16_d256");
static_assert(attn_kernels(DType::kBF16, 0).dq.symbol == "jax_aiter_attn_bwd_dq_bf16_d64");
static_assert(attn_dtype_kernels(DType::kF16).bwd_pre.symbol == "jax_aiter_attn_bwd_pre_f16");
static_assert(attn_head_dim_bucket(59, 64) == 0 && attn_head_dim_bucket(192, 128) == 2);
static_assert(attn_fp8_kernel(2).symbol == "jax_aiter_attn_fwd_fp8_d256" &&
              attn_fp8_kernel(0).symbol == "jax_aiter_attn_fwd_fp8_d64");

}  // namespace jax_aiter::kernels
