// Facts of the intra-node peer exchange (aiter.peer_all_to_all, the peer tier of moe_dispatch /
// moe_combine) that the kernel source (kernels_co/peer_all_to_all.kernel.cpp), the host twins and
// the runtime's peer groups (runtime/peer_groups.hpp) all read. Plain C++ with no includes.
//
// Every device of a group owns one PeerSlot in its own memory (allocated once per group, peer
// access enabled between the devices); a call on rank `me` at call number e (the slot's epoch):
//   publish: epoch = e; recv, side_recv = the call's receive buffers; ready = e (after them,
//            system scope)
//   send:    for each peer d: wait until slot[d].ready == e, then store the rows for d straight
//            into slot[d].recv and side_recv (block `me`), then slot[d].count[me] = rows;
//            slot[d].done[me] = e
//   receive: wait until done[s] == e for every s; zero the rows of block s past count[s]
// A peer that misses the bound (timeout_ns) is skipped and named in the status output and in the
// host-visible mailbox; the slot's ready is then poisoned (kPoisoned), so that a late peer waiting
// for it times out too instead of storing into a buffer XLA has since reused.
//
// Across processes (one process per GPU) a peer's XLA buffers are not mapped here, so every rank
// also owns a staging buffer beside its slot, exported to the others once (IPC handles exchanged
// through jax.distributed): the senders store into slot[d]'s staging ([ranks, capacity] rows, then
// [ranks, capacity] side rows) instead of slot[d].recv, and the receiver copies its filled rows
// from there into recv. ready = e still means "my buffers are free for call e": the receive of
// call e - 1 has copied out of staging before the publish of call e runs (stream order).
#pragma once

namespace jax_aiter::kernels::peer {

inline constexpr int kMaxPeers = 16;        // ranks of one peer group (one node's GPUs)
inline constexpr int kMaxMeshDevices = 64;  // devices of the mesh attribute
inline constexpr int kSendThreads = 256;    // threads of a send block (16-byte words of a row)
inline constexpr int kReceiveThreads = 256;
inline constexpr unsigned long long kPoisoned = 1ull << 62;
// A staged rank's region (one allocation, one IPC handle): its PeerSlot, then its staging buffer.
inline constexpr unsigned long long kStagingOffset = 512;

// Status codes (status output [0], mailbox code).
inline constexpr int kOk = 0;
inline constexpr int kTimeoutReady = 1;  // a peer never published this call's receive buffer
inline constexpr int kTimeoutDone = 2;   // a peer published it but never finished sending to us

// One device's slot, read and written by every rank of its group (all fields 8-byte aligned).
struct PeerSlot {
  unsigned long long epoch;  // calls this device has started (its own kernels only)
  unsigned long long ready;  // epoch whose recv is published (or poisoned)
  unsigned long long recv;   // that call's receive buffers, as addresses
  unsigned long long side_recv;
  unsigned long long failed;            // bit s: this call gave up on rank s
  unsigned long long done[kMaxPeers];   // done[s]: the last epoch rank s finished sending to us
  unsigned long long count[kMaxPeers];  // count[s]: rows rank s sent in that epoch
  unsigned long long sent_blocks[kMaxPeers];  // send blocks of ours finished per destination
};

// What a device's kernels write for the host on a timeout (pinned, host-mapped memory).
struct PeerMailbox {
  unsigned int code;  // kOk or a timeout code
  unsigned int peer;  // the rank waited for
  unsigned long long epoch;
  unsigned long long waited_ns;
};

// The per-device table a call's kernels read: every mesh device's slot and mailbox, and its staging
// buffer across processes (addresses valid on this device; a mailbox only for this process's
// devices, staging null within one process).
struct PeerTable {
  PeerSlot* slots[kMaxMeshDevices];
  PeerMailbox* mailboxes[kMaxMeshDevices];
  unsigned char* staging[kMaxMeshDevices];
};
static_assert(sizeof(PeerSlot) <= kStagingOffset);

}  // namespace jax_aiter::kernels::peer
