// ABI of the peer exchange kernels (kernels_co/peer_all_to_all.kernel.cpp, code object
// "peer_all_to_all"): one argument struct the three kernels share, field by field as they declare
// it, and the kernel table. The protocol: kernels/shared/peer_all_to_all.h.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "jax_aiter/kernels/kernel.hpp"
#include "jax_aiter/kernels/shared/peer_all_to_all.h"

namespace jax_aiter::kernels {

//   publish (1 block):                 starts call e on this rank, publishes `recv`
//   send (ranks * blocks_per_peer):    block b sends to rank b % ranks the rows src names
//   receive (ranks blocks):            block s waits for rank s, zeroes what it did not fill
// Two fields a row: `rows` (e.g. the tokens, moved from and into their own arrays, no packing)
// and `side` (e.g. the ids, weights and scales packed together; 0 bytes when there is none).
struct PeerAllToAllArgs {
  const void* rows;      // [R, row_bytes]: what this rank sends
  const void* side;      // [R, side_bytes]
  const void* src;       // i32 [ranks, capacity]: src[d, c] = row sent to rank d as its row c;
                         // -1 ends rank d's rows (a prefix)
  const void* position;  // i32 [2]: this device's index in the mesh, and on the peer axis
  void* recv;            // [ranks, capacity, row_bytes]: block s from rank s
  void* side_recv;       // [ranks, capacity, side_bytes]
  void* counts;          // i32 [ranks]: rows received from each rank
  void* status;          // i32 [4]: code, rank waited for, epoch (low 31 bits), 0
  const void* table;     // peer::PeerTable in this device's memory
  int64_t row_bytes;     // multiples of 16
  int64_t side_bytes;
  int64_t timeout_ns;
  int32_t rows_count;  // R
  int32_t capacity;
  int32_t ranks;
  int32_t stride;  // mesh-index distance between neighbours on the peer axis
  int32_t blocks_per_peer;
  int32_t reserved;
};
static_assert(offsetof(PeerAllToAllArgs, row_bytes) == 72 && sizeof(PeerAllToAllArgs) == 120);

inline constexpr std::array kPeerAllToAllFields{
    JAX_AITER_ARG_FIELD(PeerAllToAllArgs, rows),
    JAX_AITER_ARG_FIELD(PeerAllToAllArgs, side),
    JAX_AITER_ARG_FIELD(PeerAllToAllArgs, src),
    JAX_AITER_ARG_FIELD(PeerAllToAllArgs, position),
    JAX_AITER_ARG_FIELD(PeerAllToAllArgs, recv),
    JAX_AITER_ARG_FIELD(PeerAllToAllArgs, side_recv),
    JAX_AITER_ARG_FIELD(PeerAllToAllArgs, counts),
    JAX_AITER_ARG_FIELD(PeerAllToAllArgs, status),
    JAX_AITER_ARG_FIELD(PeerAllToAllArgs, table),
    JAX_AITER_ARG_FIELD(PeerAllToAllArgs, row_bytes),
    JAX_AITER_ARG_FIELD(PeerAllToAllArgs, side_bytes),
    JAX_AITER_ARG_FIELD(PeerAllToAllArgs, timeout_ns),
    JAX_AITER_ARG_FIELD(PeerAllToAllArgs, rows_count),
    JAX_AITER_ARG_FIELD(PeerAllToAllArgs, capacity),
    JAX_AITER_ARG_FIELD(PeerAllToAllArgs, ranks),
    JAX_AITER_ARG_FIELD(PeerAllToAllArgs, stride),
    JAX_AITER_ARG_FIELD(PeerAllToAllArgs, blocks_per_peer),
    JAX_AITER_ARG_FIELD(PeerAllToAllArgs, reserved),
};

inline constexpr std::string_view kPeerAllToAllCodeObject = "peer_all_to_all";

constexpr KernelInfo peer_kernel(std::string_view symbol) {
  return {kPeerAllToAllCodeObject, symbol, sizeof(PeerAllToAllArgs), kPeerAllToAllFields};
}
inline constexpr KernelInfo kPeerPublish = peer_kernel("jax_aiter_peer_publish");
inline constexpr KernelInfo kPeerSend = peer_kernel("jax_aiter_peer_send");
inline constexpr KernelInfo kPeerReceive = peer_kernel("jax_aiter_peer_receive");

inline constexpr std::array kPeerAllToAllKernels{&kPeerPublish, &kPeerSend, &kPeerReceive};

}  // namespace jax_aiter::kernels
