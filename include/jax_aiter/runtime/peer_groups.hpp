// Peer groups of the intra-node exchange (aiter.peer_all_to_all): for each mesh the op is called
// on (its devices, as the `devices` attribute lists them), every device's PeerSlot and host-mapped
// PeerMailbox (kernels/shared/peer_all_to_all.h) and, per device, the PeerTable its kernels read.
// Made once per mesh by whichever handler first needs it (the initialize stage, before any
// command-buffer capture), with peer access enabled between the devices; kept until process exit.
// The execute path only looks up (a shared lock, no allocation).
//
// A backend supplies the memory (PeerMemory: alloc_slot, alloc_mailbox, alloc_table, zero_slot);
// the registry, the timeout report and the reset are the same for every backend, and every
// backend's groups answer jax_aiter_peer_report / jax_aiter_peer_reset (ffi/exports.hpp).
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
  std::array<void*, peer::kMaxMeshDevices> slots{};                   // device addresses
  std::array<peer::PeerMailbox*, peer::kMaxMeshDevices> mailboxes{};  // host addresses
  std::array<const void*, peer::kMaxMeshDevices> tables{};            // on each device

  // The mesh position of a device ordinal, or -1.
  int position_of(int device) const {
    for (int i = 0; i < devices.count; ++i) {
      if (devices.ids[i] == device) return i;
    }
    return -1;
  }

  // The first timeout any device of the group recorded, as an error (OK if none).
  Status timeout_error(std::string_view op) const {
    for (int i = 0; i < devices.count; ++i) {
      const peer::PeerMailbox* box = mailboxes[i];
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

// What jax_aiter_peer_report / jax_aiter_peer_reset reach: every backend's registry.
class PeerControl {
 public:
  using Report = std::function<void(std::string&)>;
  using Reset = std::function<Status()>;
  static void add(Report report, Reset reset) {
    auto& c = instance();
    std::lock_guard lock(c.mutex_);
    c.entries_.push_back({std::move(report), std::move(reset)});
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

 private:
  struct Entry {
    Report report;
    Reset reset;
  };
  static PeerControl& instance() {
    static PeerControl c;
    return c;
  }
  std::mutex mutex_;
  std::vector<Entry> entries_;
};

// One backend's groups. Memory must provide:
//   Status make(PeerGroup&)   slots, mailboxes (zeroed) and tables on every device of the group
//   Status zero(PeerGroup&)   zeroes every slot and mailbox (the reset; every rank idle)
template <typename Memory>
class PeerGroups {
 public:
  // The group of `devices` ("0,1,2,3"), made on first use (the only time the list is parsed).
  static Expected<const PeerGroup*> get(std::string_view devices) {
    auto& r = instance();
    {
      std::shared_lock lock(r.mutex_);
      if (auto it = r.groups_.find(devices); it != r.groups_.end()) return it->second.get();
    }
    std::unique_lock lock(r.mutex_);
    if (auto it = r.groups_.find(devices); it != r.groups_.end()) return it->second.get();
    auto parsed = parse_peer_devices(devices);
    if (!parsed) return parsed.status();
    auto group = std::make_unique<PeerGroup>();
    group->devices = *parsed;
    JAX_AITER_RETURN_IF_ERROR(Memory::make(*group));
    const PeerGroup* made = group.get();
    r.groups_.emplace(std::string(devices), std::move(group));
    return made;
  }

 private:
  PeerGroups() {
    PeerControl::add([this](std::string& out) { report_into(out); },
                     [this]() -> Status {
                       std::unique_lock lock(mutex_);
                       for (auto& [key, g] : groups_) JAX_AITER_RETURN_IF_ERROR(Memory::zero(*g));
                       return {};
                     });
  }
  static PeerGroups& instance() {
    static PeerGroups r;
    return r;
  }
  void report_into(std::string& out) {
    std::shared_lock lock(mutex_);
    for (const auto& [key, g] : groups_) {
      for (int i = 0; i < g->devices.count; ++i) {
        const peer::PeerMailbox* box = g->mailboxes[i];
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
};

// The PeerTable the kernels of `device` read, for the mesh `devices`; an error if the device is
// not in the mesh, or if any device of the group has recorded a timeout (every later exchange of
// the group would time out too: the error says so and how to recover). Memory says whether each
// device has its own table (GPUs) or one serves all (the host: position -1).
template <typename Memory>
Expected<const void*> peer_table(std::string_view op, int device, std::string_view devices) {
  auto group = PeerGroups<Memory>::get(devices);
  if (!group) return group.status();
  const PeerGroup& g = **group;
  int position = 0;
  if constexpr (Memory::kTablePerDevice) {
    position = g.position_of(device);
    if (position < 0) {
      return InvalidArgument(StrCat(op, ": attribute devices: this device (", device,
                                    ") is not one of the mesh's devices ", devices));
    }
  }
  JAX_AITER_RETURN_IF_ERROR(g.timeout_error(op));
  return g.tables[position];
}

}  // namespace jax_aiter::runtime
