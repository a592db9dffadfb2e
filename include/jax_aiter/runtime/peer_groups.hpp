// Peer groups of the intra-node exchange (aiter.peer_all_to_all): for each mesh the op is called
// on (its devices, as the `devices` attribute lists them), every device's PeerSlot and host-mapped
// PeerMailbox (kernels/shared/peer_all_to_all.h) and, per device, the PeerTable its kernels read.
// Within one process a group is made by whichever handler first needs it (the initialize stage,
// before any command-buffer capture), with peer access enabled between the devices. A mesh that
// spans processes (one process per GPU) is set up before its first call, by every process, in
// three steps the Python package drives through jax.distributed's key-value store (exports
// jax_aiter_peer_stage / _join / _seal): stage each of this process's devices (its slot and
// staging buffer in one allocation, exported as an IPC handle), join every other process's
// (mapping their handles), seal (mailboxes and tables). Groups are kept until process exit; the
// execute path only looks up (a shared lock, no allocation).
//
// A backend supplies the memory (PeerMemory: make, stage, join, seal, zero); the registry, the
// timeout report and the reset are the same for every backend, and every backend's groups answer
// jax_aiter_peer_report / jax_aiter_peer_reset (ffi/exports.hpp).
#pragma once

#include <array>
#include <atomic>
#include <charconv>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "jax_aiter/core/status.hpp"
#include "jax_aiter/kernels/shared/peer_all_to_all.h"

namespace jax_aiter::runtime {

namespace peer = kernels::peer;

// The mesh's devices, in the `devices` attribute's order ("0,1,2,3": backend device ordinals).
struct PeerDevices {
  std::array<int32_t, peer::kMaxMeshDevices> ids{};
  int count = 0;
};

// "0,1,2,3" -> ordinals; an error text (without the op's name) if it is not a list of distinct
// non-negative integers of at most kMaxMeshDevices.
inline Expected<PeerDevices> parse_peer_devices(std::string_view text) {
  PeerDevices out;
  std::string_view rest = text;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    int32_t v = -1;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (ec != std::errc() || end != item.data() + item.size() || v < 0) {
      return InvalidArgument(
          StrCat("expected comma-separated device ordinals, got \"", text, "\""));
    }
    if (out.count == peer::kMaxMeshDevices) {
      return InvalidArgument(
          StrCat("expected at most ", peer::kMaxMeshDevices, " devices, got \"", text, "\""));
    }
    for (int i = 0; i < out.count; ++i) {
      if (out.ids[i] == v) {
        return InvalidArgument(
            StrCat("expected distinct devices, got ", v, " twice in \"", text, "\""));
      }
    }
    out.ids[out.count++] = v;
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
    if (rest.empty()) return InvalidArgument(StrCat("a trailing comma in \"", text, "\""));
  }
  if (out.count == 0) return InvalidArgument("expected at least one device, got \"\"");
  return out;
}

// The mailbox's code, written last by a device kernel or a host twin of another thread.
inline unsigned mailbox_code(const peer::PeerMailbox* box) {
  return std::atomic_ref<unsigned>(const_cast<unsigned&>(box->code))
      .load(std::memory_order_acquire);
}

struct PeerGroup {
  PeerDevices devices;
  int64_t staging_bytes = 0;  // 0: every device in this process (no staging buffers)
  // Per mesh position: this process's device ordinal, or -1 for another process's device.
  std::array<int32_t, peer::kMaxMeshDevices> local{};
  std::array<void*, peer::kMaxMeshDevices> slots{};             // device addresses, as mapped here
  std::array<unsigned char*, peer::kMaxMeshDevices> staging{};  // across processes only
  std::array<peer::PeerMailbox*, peer::kMaxMeshDevices> mailboxes{};  // host addresses (local)
  std::array<const void*, peer::kMaxMeshDevices> tables{};            // on each local device
  std::array<std::string, peer::kMaxMeshDevices> handles{};           // what this process exported

  // The mesh position of one of this process's device ordinals, or -1.
  int position_of(int device) const {
    for (int i = 0; i < devices.count; ++i) {
      if (local[i] == device) return i;
    }
    return -1;
  }

  // The first timeout any device of the group in this process recorded, as an error (OK if none).
  Status timeout_error(std::string_view op) const {
    for (int i = 0; i < devices.count; ++i) {
      const peer::PeerMailbox* box = mailboxes[i];
      if (box == nullptr) continue;
      const unsigned code = mailbox_code(box);
      if (code == peer::kOk) continue;
      return FailedPrecondition(
          StrCat(op, ": a peer exchange timed out: the device at mesh position ", i, " (device ",
                 devices.ids[i], ") gave up after ", box->waited_ns / 1000000,
                 " ms waiting for rank ", box->peer, " of its peer axis to ",
                 code == peer::kTimeoutReady ? "start the exchange (publish its receive buffer)"
                                             : "finish sending",
                 " at exchange ", box->epoch,
                 "; the ranks no longer agree on how many exchanges ran, so every later one fails "
                 "until jax_aiter.reset_peer_groups() (call it once every rank is idle)"));
    }
    return {};
  }
};

// An IPC handle's bytes as text for jax.distributed's key-value store, and back.
inline std::string peer_handle_text(const void* bytes, size_t size) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < size; ++i) {
    const auto b = static_cast<const unsigned char*>(bytes)[i];
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}
inline Status peer_handle_bytes(std::string_view text, void* bytes, size_t size) {
  if (text.size() != 2 * size) {
    return InvalidArgument(StrCat("jax_aiter: peer group: expected a handle of ", 2 * size,
                                  " hex digits, got ", text.size()));
  }
  for (size_t i = 0; i < size; ++i) {
    unsigned v = 0;
    const auto [end, ec] = std::from_chars(text.data() + 2 * i, text.data() + 2 * i + 2, v, 16);
    if (ec != std::errc() || end != text.data() + 2 * i + 2) {
      return InvalidArgument(
          StrCat("jax_aiter: peer group: a handle of hex digits, got \"", text, "\""));
    }
    static_cast<unsigned char*>(bytes)[i] = static_cast<unsigned char>(v);
  }
  return {};
}

// The one device of this process in a group set up across processes (GPU backends map every
// peer's memory into one device: one process per GPU), or an error.
inline Expected<int> peer_local_position(const PeerGroup& g, int but = -1) {
  for (int i = 0; i < g.devices.count; ++i) {
    if (i != but && g.local[i] >= 0) return i;
  }
  return FailedPrecondition(StrCat("jax_aiter: peer group ", g.devices.count,
                                   " devices: none of them staged in this process"));
}

// GPU backends map every peer's memory into one device of this process: staging `position` is
// refused when another device of this process is in the group already.
inline Status peer_one_device_per_process(const PeerGroup& g, int position) {
  auto other = peer_local_position(g, position);
  if (!other) return {};
  return FailedPrecondition(
      StrCat("jax_aiter: the peer tier across processes takes one GPU per process; devices ",
             g.local[*other], " and ", g.local[position], " of this process are in one mesh"));
}

// The key of a group: its devices, and across processes its staging buffer's size.
inline std::string peer_group_key(std::string_view devices, int64_t staging_bytes) {
  return staging_bytes == 0 ? std::string(devices) : StrCat(devices, "/", staging_bytes);
}

// What jax_aiter_peer_report / jax_aiter_peer_reset reach: every backend's registry.
class PeerControl {
 public:
  using Report = std::function<void(std::string&)>;
  using Reset = std::function<Status()>;
  // The cross-process setup of one backend's groups (PeerGroups::stage, join, seal).
  struct Setup {
    std::function<Expected<std::string>(std::string_view, int64_t, int, int)> stage;
    std::function<Status(std::string_view, int64_t, int, std::string_view)> join;
    std::function<Status(std::string_view, int64_t)> seal;
  };
  static void add(Report report, Reset reset, Setup setup) {
    auto& c = instance();
    std::lock_guard lock(c.mutex_);
    c.entries_.push_back({std::move(report), std::move(reset), std::move(setup)});
  }
  // JSON: [{"devices": "0,1", "position": 0, "code": 1, "peer": 1, "epoch": 3, "waited_ms": 2000}]
  static std::string report() {
    auto& c = instance();
    std::lock_guard lock(c.mutex_);
    std::string out;
    for (const auto& e : c.entries_) e.report(out);
    return StrCat("[", out, "]");
  }
  static Status reset() {
    auto& c = instance();
    std::lock_guard lock(c.mutex_);
    for (const auto& e : c.entries_) JAX_AITER_RETURN_IF_ERROR(e.reset());
    return {};
  }
  // The setup of the library's peer groups: a handler library binds one backend (the first
  // enrolled answers where a consumer binds several).
  static Expected<Setup> setup() {
    auto& c = instance();
    std::lock_guard lock(c.mutex_);
    if (c.entries_.empty()) {
      return FailedPrecondition(
          "jax_aiter: this library defines no aiter.peer_all_to_all handler (ops.cmake)");
    }
    return c.entries_.front().setup;
  }

 private:
  struct Entry {
    Report report;
    Reset reset;
    Setup setup;
  };
  static PeerControl& instance() {
    static PeerControl c;
    return c;
  }
  std::mutex mutex_;
  std::vector<Entry> entries_;
};

// One backend's groups. Memory must provide:
//   Status make(PeerGroup&)    within one process: slots, mailboxes (zeroed) and tables on every
//                              device of the group, peer access enabled
//   Expected<std::string> stage(PeerGroup&, int position)
//                              across processes: the slot and staging buffer of this process's
//                              device at `position` (local[position]), zeroed, and its handle
//   Status join(PeerGroup&, int position, std::string_view handle)
//                              maps another process's device's slot and staging buffer
//   Status seal(PeerGroup&)    mailboxes and tables of this process's devices
//   Status zero(PeerGroup&)    zeroes this process's slots and mailboxes (the reset; ranks idle)
template <typename Memory>
class PeerGroups {
 public:
  // The group of `devices` ("0,1,2,3"), made on first use within one process (the only time the
  // list is parsed); across processes (staging_bytes > 0) the one set up before.
  static Expected<const PeerGroup*> get(std::string_view devices, int64_t staging_bytes = 0) {
    auto& r = instance();
    const std::string key = peer_group_key(devices, staging_bytes);
    {
      std::shared_lock lock(r.mutex_);
      if (auto it = r.groups_.find(key); it != r.groups_.end()) return it->second.get();
    }
    if (staging_bytes != 0) {
      return FailedPrecondition(StrCat(
          "jax_aiter: the peer group of devices ", devices, " with ", staging_bytes,
          "-byte staging buffers (a mesh spanning processes) was not set up in this process: "
          "jax_aiter.moe_dispatch / moe_combine with tier=\"peer\" set it up through "
          "jax.distributed before the first call"));
    }
    std::unique_lock lock(r.mutex_);
    if (auto it = r.groups_.find(key); it != r.groups_.end()) return it->second.get();
    auto group = new_group(devices, 0);
    if (!group) return group.status();
    for (int i = 0; i < (*group)->devices.count; ++i) (*group)->local[i] = (*group)->devices.ids[i];
    JAX_AITER_RETURN_IF_ERROR(Memory::make(**group));
    const PeerGroup* made = group->get();
    r.groups_.emplace(key, std::move(*group));
    return made;
  }

  // Setup across processes, step 1 (every process, each of its devices of the mesh): the slot and
  // staging buffer of `device` at mesh position `position`; returns the handle to publish.
  static Expected<std::string> stage(std::string_view devices, int64_t staging_bytes, int position,
                                     int device) {
    auto& r = instance();
    std::unique_lock lock(r.mutex_);
    auto group = r.pending(devices, staging_bytes, position);
    if (!group) return group.status();
    PeerGroup& g = **group;
    if (g.slots[position] != nullptr) {
      return FailedPrecondition(StrCat("jax_aiter: peer group ", devices, ": position ", position,
                                       " was staged or joined already"));
    }
    g.local[position] = device;
    auto handle = Memory::stage(g, position);
    if (!handle) {
      g.local[position] = -1;
      return handle.status();
    }
    g.handles[position] = *handle;
    return *handle;
  }

  // Step 2: another process's device at `position`, from the handle it published.
  static Status join(std::string_view devices, int64_t staging_bytes, int position,
                     std::string_view handle) {
    auto& r = instance();
    std::unique_lock lock(r.mutex_);
    auto group = r.pending(devices, staging_bytes, position);
    if (!group) return group.status();
    if ((*group)->slots[position] != nullptr) {
      return FailedPrecondition(StrCat("jax_aiter: peer group ", devices, ": position ", position,
                                       " was staged or joined already"));
    }
    return Memory::join(**group, position, handle);
  }

  // Step 3, once every process has joined every other's devices: the group is ready for calls.
  static Status seal(std::string_view devices, int64_t staging_bytes) {
    auto& r = instance();
    std::unique_lock lock(r.mutex_);
    const std::string key = peer_group_key(devices, staging_bytes);
    auto it = r.pending_.find(key);
    if (it == r.pending_.end()) {
      return FailedPrecondition(StrCat("jax_aiter: peer group ", key, " has no staged devices"));
    }
    PeerGroup& g = *it->second;
    for (int i = 0; i < g.devices.count; ++i) {
      if (g.slots[i] == nullptr) {
        return FailedPrecondition(StrCat("jax_aiter: peer group ", devices, ": position ", i,
                                         " was neither staged nor joined before the seal"));
      }
    }
    JAX_AITER_RETURN_IF_ERROR(Memory::seal(g));
    r.groups_.emplace(key, std::move(it->second));
    r.pending_.erase(it);
    return {};
  }

  // Makes the registry (and so its report, reset and setup entry points) exist: the binder calls
  // it when it records a handler of an op that uses peer groups.
  static void enroll() { (void)instance(); }

 private:
  PeerGroups() {
    PeerControl::add([this](std::string& out) { report_into(out); },
                     [this]() -> Status {
                       std::unique_lock lock(mutex_);
                       for (auto& [key, g] : groups_) JAX_AITER_RETURN_IF_ERROR(Memory::zero(*g));
                       return {};
                     },
                     {&PeerGroups::stage, &PeerGroups::join, &PeerGroups::seal});
  }
  static PeerGroups& instance() {
    static PeerGroups r;
    return r;
  }
  static Expected<std::unique_ptr<PeerGroup>> new_group(std::string_view devices,
                                                        int64_t staging_bytes) {
    auto parsed = parse_peer_devices(devices);
    if (!parsed) return parsed.status();
    auto group = std::make_unique<PeerGroup>();
    group->devices = *parsed;
    group->staging_bytes = staging_bytes;
    group->local.fill(-1);
    return group;
  }
  // The group being set up (under the unique lock), made on the first step.
  Expected<PeerGroup*> pending(std::string_view devices, int64_t staging_bytes, int position) {
    if (staging_bytes <= 0) {
      return InvalidArgument(StrCat("jax_aiter: peer group ", devices,
                                    ": a staging buffer of at least 1 byte, got ", staging_bytes));
    }
    const std::string key = peer_group_key(devices, staging_bytes);
    if (groups_.count(key)) {
      return FailedPrecondition(StrCat("jax_aiter: peer group ", key, " is set up already"));
    }
    auto it = pending_.find(key);
    if (it == pending_.end()) {
      auto group = new_group(devices, staging_bytes);
      if (!group) return group.status();
      it = pending_.emplace(key, std::move(*group)).first;
    }
    if (position < 0 || position >= it->second->devices.count) {
      return InvalidArgument(StrCat("jax_aiter: peer group ", devices, ": position ", position,
                                    " is not one of its ", it->second->devices.count, " devices"));
    }
    return it->second.get();
  }
  void report_into(std::string& out) {
    std::shared_lock lock(mutex_);
    for (const auto& [key, g] : groups_) {
      for (int i = 0; i < g->devices.count; ++i) {
        const peer::PeerMailbox* box = g->mailboxes[i];
        if (box == nullptr) continue;
        const unsigned code = mailbox_code(box);
        if (code == peer::kOk) continue;
        out = StrCat(out, out.empty() ? "" : ", ", "{\"devices\": \"", key, "\", \"position\": ", i,
                     ", \"device\": ", g->devices.ids[i], ", \"code\": ", code,
                     ", \"peer\": ", box->peer, ", \"epoch\": ", box->epoch,
                     ", \"waited_ms\": ", box->waited_ns / 1000000, "}");
      }
    }
  }
  std::shared_mutex mutex_;
  std::map<std::string, std::unique_ptr<PeerGroup>, std::less<>> groups_;
  std::map<std::string, std::unique_ptr<PeerGroup>, std::less<>> pending_;
};

// The PeerTable the kernels of `device` read, for the mesh `devices`; an error if the device is
// not in the mesh, or if any device of the group has recorded a timeout (every later exchange of
// the group would time out too: the error says so and how to recover). Memory says whether each
// device has its own table (GPUs) or one serves all (the host: position -1).
template <typename Memory>
Expected<const void*> peer_table(std::string_view op, int device, std::string_view devices,
                                 int64_t staging_bytes = 0) {
  auto group = PeerGroups<Memory>::get(devices, staging_bytes);
  if (!group) return group.status();
  const PeerGroup& g = **group;
  int position = 0;
  if constexpr (Memory::kTablePerDevice) {
    position = g.position_of(device);
    if (position < 0) {
      return InvalidArgument(StrCat(op, ": attribute devices: this device (", device,
                                    ") is not one of the mesh's devices ", devices,
                                    staging_bytes ? " in this process" : ""));
    }
  }
  JAX_AITER_RETURN_IF_ERROR(g.timeout_error(op));
  return g.tables[position];
}

}  // namespace jax_aiter::runtime
