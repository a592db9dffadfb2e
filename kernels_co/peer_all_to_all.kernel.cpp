// The intra-node peer exchange (aiter.peer_all_to_all): each rank stores its rows straight into
// the peer devices' receive buffers and signals completion by flags in their memory, with a
// bounded wait instead of a hang. One source for gfx942/gfx950 (clang-22) and sm_90 (nvcc); the
// parameter lists ARE the ABI (include/jax_aiter/kernels/peer_all_to_all.hpp mirrors them), the
// protocol is kernels/shared/peer_all_to_all.h.
#include "jax_aiter/kernels/shared/peer_all_to_all.h"
#include "jax_aiter_device.hpp"

namespace ja {

using namespace jax_aiter::kernels::peer;
using u64 = unsigned long long;

struct alignas(16) Word16 {
  uint32_t x, y, z, w;
};
inline constexpr int kInFlight = 4;  // 16-byte loads a send thread keeps in flight

#if defined(__CUDACC__)
JA_DEVICE u64 now_ns() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
JA_DEVICE u64 load_acquire(const u64* p) {
  u64 v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
JA_DEVICE void store_release(u64* p, u64 v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
JA_DEVICE void fence_system() { __threadfence_system(); }
JA_DEVICE u64 atomic_add(u64* p, u64 v) { return atomicAdd(p, v); }
JA_DEVICE void atomic_or(u64* p, u64 v) { atomicOr(p, v); }
JA_DEVICE int atomic_cas(int* p, int expected, int v) { return atomicCAS(p, expected, v); }
JA_DEVICE void pause() { __nanosleep(64); }
#else
// s_memrealtime: a constant 100 MHz clock on gfx942/gfx950 (10 ns a tick).
JA_DEVICE u64 now_ns() { return __builtin_amdgcn_s_memrealtime() * 10ull; }
JA_DEVICE u64 load_acquire(const u64* p) {
  return __hip_atomic_load(p, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_SYSTEM);
}
JA_DEVICE void store_release(u64* p, u64 v) {
  __hip_atomic_store(p, v, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_SYSTEM);
}
JA_DEVICE void fence_system() { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, ""); }
JA_DEVICE u64 atomic_add(u64* p, u64 v) {
  return __hip_atomic_fetch_add(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}
JA_DEVICE void atomic_or(u64* p, u64 v) {
  __hip_atomic_fetch_or(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}
JA_DEVICE int atomic_cas(int* p, int expected, int v) {
  __hip_atomic_compare_exchange_strong(p, &expected, v, __ATOMIC_RELAXED, __ATOMIC_RELAXED,
                                       __HIP_MEMORY_SCOPE_AGENT);
  return expected;
}
JA_DEVICE void pause() { __builtin_amdgcn_s_sleep(2); }
#endif

// Spins until *flag == want or the bound passes; returns the nanoseconds waited, or ~0 on timeout.
JA_DEVICE u64 wait_for(const u64* flag, u64 want, long long timeout_ns) {
  const u64 start = now_ns();
  for (;;) {
    if (load_acquire(flag) == want) return now_ns() - start;
    const u64 waited = now_ns() - start;
    if (waited > static_cast<u64>(timeout_ns)) return ~0ull;
    pause();
  }
}

JA_DEVICE void report(PeerMailbox* box, int* status, int code, int peer, u64 epoch,
                      long long waited) {
  if (atomic_cas(status, 0, code) == 0) {
    status[1] = peer;
    status[2] = static_cast<int>(epoch & 0x7fffffffull);
  }
  box->peer = static_cast<unsigned>(peer);
  box->epoch = epoch;
  box->waited_ns = static_cast<u64>(waited);
  fence_system();
  box->code = static_cast<unsigned>(code);  // last: the host reads code first
  fence_system();
}

struct Call {
  const unsigned char* rows;
  const unsigned char* side;
  const int* src;
  const int* position;
  unsigned char* recv;
  unsigned char* side_recv;
  int* counts;
  int* status;
  const PeerTable* table;
  long long row_bytes, side_bytes, timeout_ns;
  int rows_count, capacity, ranks, stride, blocks_per_peer;

  JA_DEVICE int mesh_index() const { return position[0]; }
  JA_DEVICE int axis_index() const { return position[1]; }
  JA_DEVICE int mesh_of(int rank) const { return mesh_index() + (rank - axis_index()) * stride; }
  JA_DEVICE PeerSlot* slot_of(int rank) const { return table->slots[mesh_of(rank)]; }
  JA_DEVICE PeerSlot* own() const { return table->slots[mesh_index()]; }
  JA_DEVICE PeerMailbox* mailbox() const { return table->mailboxes[mesh_index()]; }
  JA_DEVICE unsigned char* staging_of(int rank) const { return table->staging[mesh_of(rank)]; }
  JA_DEVICE long long staged_rows_bytes() const {
    return static_cast<long long>(ranks) * capacity * row_bytes;
  }
};

JA_DEVICE void publish(const Call& c) {
  if (thread_id() != 0) return;
  PeerSlot* own = c.own();
  const u64 e = own->epoch + 1;
  own->epoch = e;
  own->failed = 0;
  own->recv = reinterpret_cast<u64>(c.recv);
  own->side_recv = reinterpret_cast<u64>(c.side_recv);
  for (int i = 0; i < 4; ++i) c.status[i] = 0;
  fence_system();
  store_release(&own->ready, e);
}

// Rows of rank d's block: src[d, :] up to its first -1 (a prefix), by binary search.
JA_DEVICE int valid_rows(const int* src, int capacity) {
  int lo = 0, hi = capacity;  // src[< lo] valid, src[>= hi] not
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

#if defined(__CUDACC__)
// A load past the SM's L1, which other devices' stores do not invalidate (the staging buffer).
JA_DEVICE Word16 load_fresh(const Word16* p) {
  const uint4 v = __ldcg(reinterpret_cast<const uint4*>(p));
  return {v.x, v.y, v.z, v.w};
}
#else
// The receive's system-scope acquire has invalidated the CU's vector L1 already.
JA_DEVICE Word16 load_fresh(const Word16* p) { return *p; }
#endif

// One row's words, kInFlight loads before their stores: the remote stores do not stall the
// thread, the loads do, so several in flight keep HBM and the links busy. kFresh: loads of memory
// other devices wrote during this kernel (load_fresh).
template <bool kFresh = false>
JA_DEVICE void copy_row(const Word16* from, Word16* to, int words) {
  for (int w0 = thread_id(); w0 < words; w0 += kInFlight * kSendThreads) {
    Word16 v[kInFlight];
#pragma unroll
    for (int i = 0; i < kInFlight; ++i) {
      const int w = w0 + i * kSendThreads;
      if (w < words) v[i] = kFresh ? load_fresh(from + w) : from[w];
    }
#pragma unroll
    for (int i = 0; i < kInFlight; ++i) {
      const int w = w0 + i * kSendThreads;
      if (w < words) to[w] = v[i];
    }
  }
}

JA_DEVICE void send(const Call& c) {
  JA_SHARED u64 dst_shared, side_shared;
  JA_SHARED int rows_shared;
  const int d = block_id() % c.ranks, part = block_id() / c.ranks;
  PeerSlot* own = c.own();
  PeerSlot* peer = c.slot_of(d);
  const u64 e = own->epoch;
  const int me = c.axis_index();
  const int* src = c.src + static_cast<long long>(d) * c.capacity;
  if (thread_id() == 0) {
    const u64 waited = wait_for(&peer->ready, e, c.timeout_ns);
    unsigned char* staging = c.staging_of(d);
    if (waited == ~0ull) {
      atomic_or(&own->failed, 1ull << d);
      report(c.mailbox(), c.status, kTimeoutReady, d, e, c.timeout_ns);
      dst_shared = 0;
    } else if (staging != nullptr) {  // across processes: the peer's staging buffer
      dst_shared = reinterpret_cast<u64>(staging);
      side_shared = reinterpret_cast<u64>(staging + c.staged_rows_bytes());
    } else {
      dst_shared = load_acquire(&peer->recv);
      side_shared = load_acquire(&peer->side_recv);
    }
    rows_shared = valid_rows(src, c.capacity);
  }
  barrier();
  const u64 dst_address = dst_shared;
  const int rows = rows_shared;
  if (dst_address != 0) {
    const long long block = static_cast<long long>(me) * c.capacity;
    auto* dst = reinterpret_cast<unsigned char*>(dst_address) + block * c.row_bytes;
    auto* side_dst = reinterpret_cast<unsigned char*>(side_shared) + block * c.side_bytes;
    const int words = static_cast<int>(c.row_bytes / 16);
    const int side_words = static_cast<int>(c.side_bytes / 16);
    for (int r = part; r < rows; r += c.blocks_per_peer) {
      const long long from = src[r];
      copy_row(reinterpret_cast<const Word16*>(c.rows + from * c.row_bytes),
               reinterpret_cast<Word16*>(dst + r * c.row_bytes), words);
      copy_row(reinterpret_cast<const Word16*>(c.side + from * c.side_bytes),
               reinterpret_cast<Word16*>(side_dst + r * c.side_bytes), side_words);
    }
  }
  barrier();
  if (thread_id() == 0) {
    fence_system();  // this block's stores reach the peer before the count below
    const u64 finished = atomic_add(&own->sent_blocks[d], 1ull) + 1;
    if (finished == static_cast<u64>(c.blocks_per_peer)) {
      own->sent_blocks[d] = 0;
      fence_system();
      if (dst_address != 0) {
        peer->count[me] = static_cast<u64>(rows);
        fence_system();
        store_release(&peer->done[me], e);
      }
    }
  }
}

// Rows part, part + parts, ... of a received block of one field: the filled ones copied from
// `from` (the staging buffer; null within one process, where the senders stored them in place),
// the rest zeroed.
static_assert(kReceiveThreads == kSendThreads, "copy_row strides by a send block's threads");
JA_DEVICE void receive_rows(unsigned char* to, const unsigned char* from, long long bytes,
                            long long block, int rows, int part, const Call& c) {
  const int words = static_cast<int>(bytes / 16);
  for (int r = part; r < c.capacity; r += c.blocks_per_peer) {
    auto* dst = reinterpret_cast<Word16*>(to + (block + r) * bytes);
    if (r >= rows) {
      for (int w = thread_id(); w < words; w += kReceiveThreads) dst[w] = Word16{0, 0, 0, 0};
    } else if (from != nullptr) {
      copy_row<true>(reinterpret_cast<const Word16*>(from + (block + r) * bytes), dst, words);
    }
  }
}

// Block (s, part) of the receive: part `part` of the rows from rank s (rows part, part + parts,
// ...): copied out of the staging buffer across processes; zeroed past what rank s sent.
JA_DEVICE void receive(const Call& c) {
  JA_SHARED int rows_shared;
  const int s = block_id() % c.ranks, part = block_id() / c.ranks;
  PeerSlot* own = c.own();
  const u64 e = own->epoch;
  if (thread_id() == 0) {
    int rows = 0;
    if ((load_acquire(&own->failed) >> s) & 1ull) {
      if (part == 0) report(c.mailbox(), c.status, kTimeoutReady, s, e, c.timeout_ns);
    } else if (wait_for(&own->done[s], e, c.timeout_ns) == ~0ull) {
      atomic_or(&own->failed, 1ull << s);
      report(c.mailbox(), c.status, kTimeoutDone, s, e, c.timeout_ns);
    } else {
      rows = static_cast<int>(load_acquire(&own->count[s]));
    }
    if (part == 0) c.counts[s] = rows;
    rows_shared = rows;
  }
  barrier();
  const int rows = rows_shared;
  const long long block = static_cast<long long>(s) * c.capacity;
  const unsigned char* staging = c.staging_of(c.axis_index());
  receive_rows(c.recv, staging, c.row_bytes, block, rows, part, c);
  receive_rows(c.side_recv, staging ? staging + c.staged_rows_bytes() : nullptr, c.side_bytes,
               block, rows, part, c);
}

// After every receive block: a rank that gave up on a peer poisons its ready flag (a late peer
// must not store into a buffer XLA has reused).
JA_DEVICE void poison_if_failed(const Call& c) {
  PeerSlot* own = c.own();
  if (load_acquire(&own->failed) != 0) store_release(&own->ready, own->epoch | kPoisoned);
}

}  // namespace ja

#define JA_PEER_PARAMS                                                                     \
  const void *rows, const void *side, const void *src, const void *position, void *recv,   \
      void *side_recv, void *counts, void *status, const void *table, long long row_bytes, \
      long long side_bytes, long long timeout_ns, int rows_count, int capacity, int ranks, \
      int stride, int blocks_per_peer, int reserved
#define JA_PEER_CALL                                                                             \
  ja::Call {                                                                                     \
    static_cast<const unsigned char*>(rows), static_cast<const unsigned char*>(side),            \
        static_cast<const int*>(src), static_cast<const int*>(position),                         \
        static_cast<unsigned char*>(recv), static_cast<unsigned char*>(side_recv),               \
        static_cast<int*>(counts), static_cast<int*>(status),                                    \
        static_cast<const ja::PeerTable*>(table), row_bytes, side_bytes, timeout_ns, rows_count, \
        capacity, ranks, stride, blocks_per_peer                                                 \
  }

JA_KERNEL_BOUNDED(32)
void jax_aiter_peer_publish(JA_PEER_PARAMS) {
  (void)reserved;
  ja::wait_for_prior_grids();
  ja::publish(JA_PEER_CALL);
}

JA_KERNEL_BOUNDED(ja::kSendThreads)
void jax_aiter_peer_send(JA_PEER_PARAMS) {
  (void)reserved;
  ja::wait_for_prior_grids();
  ja::send(JA_PEER_CALL);
}

JA_KERNEL_BOUNDED(ja::kReceiveThreads)
void jax_aiter_peer_receive(JA_PEER_PARAMS) {
  (void)reserved;
  ja::wait_for_prior_grids();
  const ja::Call c = JA_PEER_CALL;
  ja::receive(c);
  // The last receive block to finish poisons on failure: a device-wide count would need another
  // word; every block checking after its own wait is enough (poisoning twice is harmless).
  if (ja::thread_id() == 0) ja::poison_if_failed(c);
}
