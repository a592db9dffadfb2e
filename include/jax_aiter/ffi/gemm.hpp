// How aiter.gemm meets XLA:
//   aiter.gemm  (a, b, bias?) -> (out, workspace)   attributes: kernel, splitk (+ dispatch)
// bias is optional (absent: u8[0]); the workspace is sized by Gemm::workspace_bytes.
#pragma once

#include <array>

#include "jax_aiter/ffi/binder.hpp"
#include "jax_aiter/ffi/spec.hpp"
#include "jax_aiter/ops/gemm.hpp"

namespace jax_aiter::ffi {

template <>
struct FfiSpec<ops::Gemm> {
  using P = ops::Gemm::Params;
  static constexpr std::array operands{input("a", &P::a), input("b", &P::b),
                                       optional_input("bias", &P::bias), output("out", &P::out),
                                       workspace(&P::workspace)};
  static constexpr std::array<AttrSpec<P>, 0> attributes{};  // kernel, splitk: AITER's knobs
};

// This header's targets, for JAX_AITER_DEFINE_OP_HANDLERS("gemm", Backend) (ops.cmake).
template <>
struct OpHandlers<"gemm"> : HandlerList<ops::Gemm> {};

}  // namespace jax_aiter::ffi
