// How the peer exchange meets XLA: operands in call order and its attributes.
//   aiter.peer_all_to_all  (rows, side, src, position) -> (recv, side_recv, counts, status)
//                          attributes devices, stride, timeout_ms, staging_bytes (optional)
#pragma once

#include <array>

#include "jax_aiter/ffi/binder.hpp"
#include "jax_aiter/ffi/spec.hpp"
#include "jax_aiter/ops/peer_all_to_all.hpp"

namespace jax_aiter::ffi {

template <>
struct FfiSpec<ops::PeerAllToAll> {
  using P = ops::PeerAllToAll::Params;
  static constexpr std::array operands{
      input("rows", &P::rows),      input("side", &P::side),
      input("src", &P::src),        input("position", &P::position),
      output("recv", &P::recv),     output("side_recv", &P::side_recv),
      output("counts", &P::counts), output("status", &P::status)};
  static constexpr std::array attributes{
      attr<&P::devices>("devices", kRequired), attr<&P::stride>("stride", kRequired),
      attr<&P::timeout_ms>("timeout_ms", kRequired), attr<&P::staging_bytes>("staging_bytes")};
};

// This header's targets, for JAX_AITER_DEFINE_OP_HANDLERS("peer_all_to_all", Backend) (ops.cmake).
template <>
struct OpHandlers<"peer_all_to_all"> : HandlerList<ops::PeerAllToAll> {};

}  // namespace jax_aiter::ffi
