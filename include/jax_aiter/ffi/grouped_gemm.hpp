// How the grouped GEMMs meet XLA (absent optional inputs arrive as u8[0]):
//   aiter.grouped_gemm        (x, w, group_sizes, x_scale?, w_scale?) -> (out, workspace)
//                             attribute: transpose_w (bool, default false: out = x . w[g]^T)
//   aiter.grouped_gemm_wgrad  (dy, x, group_sizes) -> (dw, workspace)
// group_sizes is int32 device data the handlers never read (the kernels do); the workspace holds
// the schedule a pre-kernel derives from it, sized by workspace_bytes from the shapes alone.
#pragma once

#include <array>

#include "jax_aiter/ffi/binder.hpp"
#include "jax_aiter/ffi/spec.hpp"
#include "jax_aiter/ops/grouped_gemm.hpp"

namespace jax_aiter::ffi {

template <>
struct FfiSpec<ops::GroupedGemm> {
  using P = ops::GroupedGemm::Params;
  static constexpr std::array operands{input("x", &P::x),
                                       input("w", &P::w),
                                       input("group_sizes", &P::group_sizes),
                                       optional_input("x_scale", &P::x_scale),
                                       optional_input("w_scale", &P::w_scale),
                                       output("out", &P::out),
                                       workspace(&P::workspace)};
  static constexpr std::array attributes{attr<&P::transpose_w>("transpose_w")};
};

template <>
struct FfiSpec<ops::GroupedGemmWgrad> {
  using P = ops::GroupedGemmWgrad::Params;
  static constexpr std::array operands{input("dy", &P::dy), input("x", &P::x),
                                       input("group_sizes", &P::group_sizes), output("dw", &P::dw),
                                       workspace(&P::workspace)};
  static constexpr std::array<AttrSpec<P>, 0> attributes{};
};

// This header's targets, for JAX_AITER_DEFINE_OP_HANDLERS("grouped_gemm", Backend) (ops.cmake).
template <>
struct OpHandlers<"grouped_gemm"> : HandlerList<ops::GroupedGemm, ops::GroupedGemmWgrad> {};

}  // namespace jax_aiter::ffi
