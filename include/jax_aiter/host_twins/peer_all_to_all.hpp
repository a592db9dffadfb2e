// Host twins of the peer exchange kernels (kernels_co/peer_all_to_all.kernel.cpp): the same
// protocol on the same packed arguments, with the mesh's CPU devices as the peers. XLA runs each
// CPU device's program on its own thread, so the ranks really do wait for one another here, and a
// rank that never calls makes the others time out exactly as on a GPU.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <tuple>

#include "jax_aiter/kernels/peer_all_to_all.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/runtime/host.hpp"

namespace jax_aiter::host_twins {

namespace peer_detail {

namespace P = kernels::peer;
using u64 = unsigned long long;

inline u64 load_acquire(u64& v) { return std::atomic_ref<u64>(v).load(std::memory_order_acquire); }
inline void store_release(u64& v, u64 x) {
  std::atomic_ref<u64>(v).store(x, std::memory_order_release);
}

inline u64 now_ns() {
  return static_cast<u64>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                              std::chrono::steady_clock::now().time_since_epoch())
                              .count());
}

// The kernels' wait_for: the nanoseconds waited, or ~0 once the bound passes.
inline u64 wait_for(u64& flag, u64 want, int64_t timeout_ns) {
  const u64 start = now_ns();
  for (;;) {
    if (load_acquire(flag) == want) return now_ns() - start;
    if (now_ns() - start > static_cast<u64>(timeout_ns)) return ~0ull;
    std::this_thread::yield();
  }
}

struct Call {
  kernels::PeerAllToAllArgs a;
  int mesh_index() const { return static_cast<const int*>(a.position)[0]; }
  int axis_index() const { return static_cast<const int*>(a.position)[1]; }
  const P::PeerTable& table() const { return *static_cast<const P::PeerTable*>(a.table); }
  P::PeerSlot& slot_of(int rank) const {
    return *table().slots[mesh_index() + (rank - axis_index()) * a.stride];
  }
  P::PeerSlot& own() const { return *table().slots[mesh_index()]; }
  P::PeerMailbox& mailbox() const { return *table().mailboxes[mesh_index()]; }
  unsigned char* staging_of(int rank) const {
    return table().staging[mesh_index() + (rank - axis_index()) * a.stride];
  }
  int64_t staged_rows_bytes() const {
    return static_cast<int64_t>(a.ranks) * a.capacity * a.row_bytes;
  }
  int* status() const { return static_cast<int*>(a.status); }

  void report(int code, int peer, u64 epoch) const {
    int* st = status();
    int expected = 0;
    if (std::atomic_ref<int>(st[0]).compare_exchange_strong(expected, code)) {
      st[1] = peer;
      st[2] = static_cast<int>(epoch & 0x7fffffffull);
    }
    P::PeerMailbox& box = mailbox();
    box.peer = static_cast<unsigned>(peer);
    box.epoch = epoch;
    box.waited_ns = static_cast<u64>(a.timeout_ns);
    std::atomic_ref<unsigned>(box.code).store(static_cast<unsigned>(code),
                                              std::memory_order_release);
  }
};

inline void publish(const kernels::KernelArgs& packed, kernels::Dim3, kernels::Dim3) {
  const Call c{packed.unpack<kernels::PeerAllToAllArgs>()};
  P::PeerSlot& own = c.own();
  const u64 e = own.epoch + 1;
  own.epoch = e;
  own.failed = 0;
  own.recv = reinterpret_cast<u64>(c.a.recv);
  own.side_recv = reinterpret_cast<u64>(c.a.side_recv);
  std::memset(c.status(), 0, 4 * sizeof(int));
  store_release(own.ready, e);
}

inline int valid_rows(const int* src, int capacity) {
  int lo = 0, hi = capacity;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (src[mid] >= 0) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

inline void send(const kernels::KernelArgs& packed, kernels::Dim3 grid, kernels::Dim3) {
  const Call c{packed.unpack<kernels::PeerAllToAllArgs>()};
  const auto& a = c.a;
  P::PeerSlot& own = c.own();
  const u64 e = own.epoch;
  const int me = c.axis_index();
  for (uint32_t b = 0; b < grid.x; ++b) {
    const int d = static_cast<int>(b) % a.ranks, part = static_cast<int>(b) / a.ranks;
    P::PeerSlot& peer = c.slot_of(d);
    const int* src = static_cast<const int*>(a.src) + static_cast<int64_t>(d) * a.capacity;
    unsigned char *dst = nullptr, *side_dst = nullptr;
    const int64_t block = static_cast<int64_t>(me) * a.capacity;
    if (wait_for(peer.ready, e, a.timeout_ns) == ~0ull) {
      std::atomic_ref<u64>(own.failed).fetch_or(1ull << d);
      c.report(P::kTimeoutReady, d, e);
    } else if (unsigned char* staging = c.staging_of(d)) {  // across processes
      dst = staging + block * a.row_bytes;
      side_dst = staging + c.staged_rows_bytes() + block * a.side_bytes;
    } else {
      dst = reinterpret_cast<unsigned char*>(load_acquire(peer.recv)) + block * a.row_bytes;
      side_dst =
          reinterpret_cast<unsigned char*>(load_acquire(peer.side_recv)) + block * a.side_bytes;
    }
    const int rows = valid_rows(src, a.capacity);
    if (dst != nullptr) {
      const auto* from = static_cast<const unsigned char*>(a.rows);
      const auto* side = static_cast<const unsigned char*>(a.side);
      for (int r = part; r < rows; r += a.blocks_per_peer) {
        std::memcpy(dst + r * a.row_bytes, from + src[r] * a.row_bytes,
                    static_cast<size_t>(a.row_bytes));
        if (a.side_bytes > 0) {
          std::memcpy(side_dst + r * a.side_bytes, side + src[r] * a.side_bytes,
                      static_cast<size_t>(a.side_bytes));
        }
      }
    }
    const u64 finished = std::atomic_ref<u64>(own.sent_blocks[d]).fetch_add(1) + 1;
    if (finished == static_cast<u64>(a.blocks_per_peer)) {
      own.sent_blocks[d] = 0;
      if (dst != nullptr) {
        std::atomic_ref<u64>(peer.count[me]).store(static_cast<u64>(rows));
        store_release(peer.done[me], e);
      }
    }
  }
}

inline void receive(const kernels::KernelArgs& packed, kernels::Dim3 grid, kernels::Dim3) {
  const Call c{packed.unpack<kernels::PeerAllToAllArgs>()};
  const auto& a = c.a;
  P::PeerSlot& own = c.own();
  const u64 e = own.epoch;
  const unsigned char* staging = c.staging_of(c.axis_index());
  for (uint32_t b = 0; b < grid.x; ++b) {
    const int s = static_cast<int>(b) % a.ranks, part = static_cast<int>(b) / a.ranks;
    int rows = 0;
    if ((load_acquire(own.failed) >> s) & 1ull) {
      if (part == 0) c.report(P::kTimeoutReady, s, e);
    } else if (wait_for(own.done[s], e, a.timeout_ns) == ~0ull) {
      std::atomic_ref<u64>(own.failed).fetch_or(1ull << s);
      c.report(P::kTimeoutDone, s, e);
    } else {
      rows = static_cast<int>(load_acquire(own.count[s]));
    }
    if (part == 0) static_cast<int*>(a.counts)[s] = rows;
    const int64_t block = static_cast<int64_t>(s) * a.capacity;
    for (const auto& [to, from, bytes] :
         {std::tuple{a.recv, staging, a.row_bytes},
          {a.side_recv, staging ? staging + c.staged_rows_bytes() : nullptr, a.side_bytes}}) {
      if (bytes == 0) continue;
      for (int r = part; r < a.capacity; r += a.blocks_per_peer) {
        auto* dst = static_cast<unsigned char*>(to) + (block + r) * bytes;
        if (r >= rows) {
          std::memset(dst, 0, static_cast<size_t>(bytes));
        } else if (from != nullptr) {
          std::memcpy(dst, from + (block + r) * bytes, static_cast<size_t>(bytes));
        }
      }
    }
  }
  if (load_acquire(own.failed) != 0) store_release(own.ready, own.epoch | P::kPoisoned);
}

}  // namespace peer_detail

inline const runtime::HostTwinRegistrar kPeerAllToAllTwins{
    {kernels::kPeerPublish.symbol, &peer_detail::publish},
    {kernels::kPeerSend.symbol, &peer_detail::send},
    {kernels::kPeerReceive.symbol, &peer_detail::receive},
};

}  // namespace jax_aiter::host_twins
