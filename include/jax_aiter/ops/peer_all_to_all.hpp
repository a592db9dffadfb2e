// The intra-node peer exchange, the peer tier of moe_dispatch / moe_combine: each rank of a mesh
// axis sends rows of its own to the other ranks' receive buffers, storing them straight into the
// peer devices' memory (one process owning the devices, peer access enabled), with completion
// flags in device memory and a bounded wait (kernels/shared/peer_all_to_all.h). Parameters,
// validation and launch plan; pure C++ (no HIP, no XLA).
//
//   aiter.peer_all_to_all  rows [R, X], side [R, Y], src i32 [n, C], position i32 [2]
//                          -> recv [n, C, X], side_recv [n, C, Y], counts i32 [n], status i32 [4]
//     recv[s, c] = rank s's rows[src_s[me, c]] (side_recv the same of side) for c < counts[s],
//     zeros past it; src[d, :] is a prefix of row indices ended by -1. Two fields a row, any
//     dtypes (moved as bytes, a multiple of 16 a row; side may have none): the tokens move from
//     and into their own arrays, the small fields (ids, weights, scales) packed beside them.
//     position = (this device's index in the mesh, its index on the peer axis), computed in the
//     program (axis_index). Attributes: devices, the mesh's device ordinals in mesh order
//     ("0,1,2,3"); stride, the mesh-index distance between neighbours on the peer axis; timeout_ms,
//     the bound on every wait; staging_bytes, 0 within one process, else the staging buffer of each
//     rank of a mesh spanning processes (devices then lists global device ids, and the group must
//     have been set up through jax.distributed first: runtime/peer_groups.hpp). status = (0 or the
//     timeout code, the rank waited for, the exchange number, 0).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <tuple>
#include <utility>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/core/status.hpp"
#include "jax_aiter/core/verdict.hpp"
#include "jax_aiter/kernels/peer_all_to_all.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/ops/dispatch.hpp"
#include "jax_aiter/ops/tensor.hpp"
#include "jax_aiter/runtime/peer_groups.hpp"

namespace jax_aiter::ops {

struct PeerAllToAllParams {
  Tensor rows;       // [R, X]
  Tensor side;       // [R, Y]
  Tensor src;        // i32 [n, C]
  Tensor position;   // i32 [2]
  Tensor recv;       // [n, C, X] (rows' dtype)
  Tensor side_recv;  // [n, C, Y] (side's dtype)
  Tensor counts;     // i32 [n]
  Tensor status;     // i32 [4]
  std::string_view devices;
  int64_t stride = 1;
  int64_t timeout_ms = 10000;
  int64_t staging_bytes = 0;
  Dispatch dispatch;
  const void* table = nullptr;  // the runtime's PeerTable on this device (the handler fills it)

  int64_t ranks() const { return src.rank == 2 ? src.dims[0] : 0; }
  int64_t capacity() const { return src.rank == 2 ? src.dims[1] : 0; }
  static int64_t row_bytes_of(const Tensor& t) {
    return t.rank == 2 ? t.dims[1] * static_cast<int64_t>(size_bytes(t.dtype)) : 0;
  }
  int64_t row_bytes() const { return row_bytes_of(rows); }
  int64_t side_bytes() const { return row_bytes_of(side); }
  // What a rank's staging buffer must hold across processes: every rank's block of both fields.
  int64_t staged_bytes() const { return ranks() * capacity() * (row_bytes() + side_bytes()); }
};

// Send blocks per destination: about four blocks an SM over all destinations (a 256-thread block
// keeps 16 KB of loads in flight), at most one a row.
constexpr int64_t peer_blocks_per_peer(int64_t ranks, int64_t capacity, int compute_units) {
  return std::clamp<int64_t>(ceil_div(4 * compute_units, ranks), 1, std::max<int64_t>(capacity, 1));
}

struct PeerAllToAllKernels {
  static constexpr std::string_view kName = "peer";
  using Params = PeerAllToAllParams;

  static Verdict supports(const Params&, const Target&) { return Verdict::yes(); }

  static void plan(const Params& p, const Target& target, kernels::Plan& plan) {
    namespace K = kernels::peer;
    const int64_t n = p.ranks(), c = p.capacity();
    const int64_t per_peer = peer_blocks_per_peer(n, c, target.compute_units);
    const kernels::PeerAllToAllArgs args{
        p.rows.data,
        p.side.data,
        p.src.data,
        p.position.data,
        p.recv.data,
        p.side_recv.data,
        p.counts.data,
        p.status.data,
        p.table,
        p.row_bytes(),
        p.side_bytes(),
        p.timeout_ms * 1000000,
        static_cast<int32_t>(p.rows.rank == 2 ? p.rows.dims[0] : 0),
        static_cast<int32_t>(c),
        static_cast<int32_t>(n),
        static_cast<int32_t>(p.stride),
        static_cast<int32_t>(per_peer),
        0};
    plan.launch(kernels::kPeerPublish, {1, 1, 1}, {32, 1, 1}, args);
    plan.launch(kernels::kPeerSend, {static_cast<uint32_t>(n * per_peer), 1, 1},
                {K::kSendThreads, 1, 1}, args);
    plan.launch(kernels::kPeerReceive, {static_cast<uint32_t>(n * per_peer), 1, 1},
                {K::kReceiveThreads, 1, 1}, args);
    plan.note("blocks_per_peer", per_peer);
  }
};

struct PeerAllToAll {
  static constexpr std::string_view kName = "aiter.peer_all_to_all";
  using Params = PeerAllToAllParams;
  using Tiers = std::tuple<PeerAllToAllKernels>;
  static constexpr bool kUsesPeerGroup = true;
  static constexpr int64_t kMaxTimeoutMs = 3600 * 1000;

  static Status validate(const Params& p) {
    namespace K = kernels::peer;
    const Tensor &rows = p.rows, &src = p.src;
    if (src.dtype != DType::kI32 || src.rank != 2 || src.dims[0] < 1 ||
        src.dims[0] > K::kMaxPeers || src.dims[1] < 1) {
      return operand_error(kName, "src",
                           StrCat("expected i32[n, C] with 1 <= n <= ", K::kMaxPeers,
                                  " ranks and C >= 1, got ", describe(src)));
    }
    const int64_t n = p.ranks(), c = p.capacity();
    for (const auto& [t, name, least] :
         {std::tuple<const Tensor*, std::string_view, int64_t>{&rows, "rows", 16},
          {&p.side, "side", 0}}) {
      const int64_t bytes = Params::row_bytes_of(*t);
      if (t->rank != 2 || bytes < least || bytes % 16 || t->dims[0] != rows.dims[0] ||
          t->dims[0] > INT32_MAX) {
        return operand_error(kName, name,
                             StrCat("expected [R, X] with a row of ", least ? "a positive" : "a",
                                    " multiple of 16 bytes (the kernels move 16-byte words), R "
                                    "from rows, got ",
                                    describe(*t)));
      }
    }
    if (p.position.dtype != DType::kI32 || p.position.rank != 1 || p.position.dims[0] != 2) {
      return operand_error(
          kName, "position",
          StrCat("expected i32[2] (mesh index, axis index), got ", describe(p.position)));
    }
    for (const auto& [out, in, name] :
         {std::tuple<const Tensor*, const Tensor*, std::string_view>{&p.recv, &rows, "recv"},
          {&p.side_recv, &p.side, "side_recv"}}) {
      if (out->dtype != in->dtype || out->rank != 3 || out->dims[0] != n || out->dims[1] != c ||
          out->dims[2] != in->dims[1]) {
        return operand_error(kName, name,
                             StrCat("expected ", jax_aiter::name(in->dtype), "[", n, ", ", c, ", ",
                                    in->dims[1], "] (n and C from src, the row from ",
                                    name == "recv" ? "rows" : "side", "), got ", describe(*out)));
      }
    }
    if (p.counts.dtype != DType::kI32 || p.counts.rank != 1 || p.counts.dims[0] != n) {
      return operand_error(kName, "counts",
                           StrCat("expected i32[", n, "], got ", describe(p.counts)));
    }
    if (p.status.dtype != DType::kI32 || p.status.rank != 1 || p.status.dims[0] != 4) {
      return operand_error(kName, "status", StrCat("expected i32[4], got ", describe(p.status)));
    }
    auto devices = runtime::parse_peer_devices(p.devices);
    if (!devices) {
      return InvalidArgument(StrCat(kName, ": attribute devices: ", devices.status().message()));
    }
    if (devices->count % n != 0) {
      return InvalidArgument(StrCat(kName, ": attribute devices: expected a multiple of the ", n,
                                    " ranks of src, got ", devices->count, " devices"));
    }
    if (p.stride < 1 || p.stride * (n - 1) >= devices->count) {
      return InvalidArgument(StrCat(kName,
                                    ": attribute stride: expected 1 <= stride and stride * (", n,
                                    " - 1) < ", devices->count, " devices, got ", p.stride));
    }
    if (p.timeout_ms < 1 || p.timeout_ms > kMaxTimeoutMs) {
      return InvalidArgument(StrCat(kName, ": attribute timeout_ms: expected 1 to ", kMaxTimeoutMs,
                                    ", got ", p.timeout_ms));
    }
    if (p.staged_bytes() > (int64_t{1} << 40)) {
      return operand_error(kName, "recv", StrCat("too large: ", describe(p.recv)));
    }
    if (p.staging_bytes != 0 && p.staging_bytes < p.staged_bytes()) {
      return InvalidArgument(
          StrCat(kName, ": attribute staging_bytes: expected 0 (one process) or ", "at least ",
                 p.staged_bytes(), " (n * C * (row + side bytes)), ", "got ", p.staging_bytes));
    }
    for (const auto& [t, name] : {std::pair<const Tensor*, std::string_view>{&p.src, "src"},
                                  {&p.position, "position"},
                                  {&p.recv, "recv"},
                                  {&p.counts, "counts"},
                                  {&p.status, "status"}}) {
      if (t->data == nullptr) return operand_error(kName, name, "null data pointer");
    }
    for (const auto& [t, name] : {std::pair<const Tensor*, std::string_view>{&rows, "rows"},
                                  {&p.side, "side"},
                                  {&p.side_recv, "side_recv"}}) {
      if (t->bytes() > 0 && t->data == nullptr) {
        return operand_error(kName, name, "null data pointer");
      }
    }
    return {};
  }
};

}  // namespace jax_aiter::ops
