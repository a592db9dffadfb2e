// The CPU backend: a "launch" runs the C++ twin of the kernel on the packed argument bytes, on the
// calling thread, covering exactly the grid it was given. This is how JAX on CPU runs our ops
// through the very same handlers and plans, and how the tests prove that the argument packing,
// grids, memsets and workspaces of a plan mean what we think.
//
// Twins are registered by kernel symbol (HostTwinRegistrar, in jax_aiter/host_twins/<op>.hpp); a
// consumer that runs an op on the host includes that op's twin header.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/core/status.hpp"
#include "jax_aiter/kernels/kernel.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/runtime/backend.hpp"
#include "jax_aiter/runtime/device_cache.hpp"
#include "jax_aiter/runtime/peer_groups.hpp"

namespace jax_aiter::runtime {

// A host twin computes the whole grid of one kernel launch from the same bytes the GPU reads.
using HostTwin = void (*)(const kernels::KernelArgs& args, kernels::Dim3 grid, kernels::Dim3 block);

class HostTwins {
 public:
  // The first registration of a symbol wins (headers register at static initialisation).
  static void add(std::string_view symbol, HostTwin twin) {
    auto& r = instance();
    std::unique_lock lock(r.mutex_);
    r.twins_.try_emplace(std::string(symbol), twin);
  }
  static HostTwin find(std::string_view symbol) {
    auto& r = instance();
    std::shared_lock lock(r.mutex_);
    auto it = r.twins_.find(std::string(symbol));
    return it == r.twins_.end() ? nullptr : it->second;
  }

 private:
  static HostTwins& instance() {
    static HostTwins r;
    return r;
  }
  std::shared_mutex mutex_;
  std::unordered_map<std::string, HostTwin> twins_;
};

struct HostTwinRegistrar {
  HostTwinRegistrar(std::initializer_list<std::pair<std::string_view, HostTwin>> twins) {
    for (const auto& [symbol, twin] : twins) HostTwins::add(symbol, twin);
  }
};

// The host's peer groups: every mesh CPU device's slot and mailbox in this process's memory, one
// table for all (the peers are threads of this process). Across processes each rank's slot and
// staging buffer live in POSIX shared memory: the handle is the object's name, unlinked at the
// seal (every process has mapped it by then; the mappings outlive the name).
struct HostPeerMemory {
  static constexpr bool kTablePerDevice = false;
  static Status make(PeerGroup& g) {
    auto* table = new kernels::peer::PeerTable{};
    for (int i = 0; i < g.devices.count; ++i) {
      auto* slot = new kernels::peer::PeerSlot{};
      g.slots[i] = table->slots[i] = slot;
      g.mailboxes[i] = table->mailboxes[i] = new kernels::peer::PeerMailbox{};
    }
    g.tables.fill(table);
    return {};
  }

  static Expected<std::string> stage(PeerGroup& g, int position) {
    static std::atomic<int> made{0};
    const std::string name = StrCat("/jax_aiter_peer_", getpid(), "_", made++);
    const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) return Internal(StrCat("jax_aiter: shm_open(", name, "): ", std::strerror(errno)));
    if (ftruncate(fd, static_cast<off_t>(region_bytes(g))) != 0) {  // zero-filled
      const int err = errno;
      close(fd);
      shm_unlink(name.c_str());
      return Internal(StrCat("jax_aiter: ftruncate(", name, "): ", std::strerror(err)));
    }
    if (Status mapped = map(g, position, fd, name); !mapped.ok()) {
      shm_unlink(name.c_str());
      return mapped;
    }
    return name;
  }

  static Status join(PeerGroup& g, int position, std::string_view handle) {
    const std::string name(handle);
    const int fd = shm_open(name.c_str(), O_RDWR, 0);
    if (fd < 0) {
      return Internal(StrCat("jax_aiter: peer group: shm_open(", name, ") of mesh position ",
                             position, ": ", std::strerror(errno)));
    }
    struct stat st {};
    if (fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) != region_bytes(g)) {
      close(fd);
      return FailedPrecondition(StrCat("jax_aiter: peer group: ", name, " holds ", st.st_size,
                                       " bytes, expected ", region_bytes(g),
                                       " (a staging buffer of another size?)"));
    }
    return map(g, position, fd, name);
  }

  static Status seal(PeerGroup& g) {
    auto* table = new kernels::peer::PeerTable{};
    for (int i = 0; i < g.devices.count; ++i) {
      table->slots[i] = static_cast<kernels::peer::PeerSlot*>(g.slots[i]);
      table->staging[i] = g.staging[i];
      if (g.local[i] >= 0) {
        g.mailboxes[i] = table->mailboxes[i] = new kernels::peer::PeerMailbox{};
        shm_unlink(g.handles[i].c_str());
      }
    }
    g.tables.fill(table);
    return {};
  }

  static Status zero(PeerGroup& g) {
    for (int i = 0; i < g.devices.count; ++i) {
      if (g.local[i] < 0) continue;  // another process's rank: its own reset zeroes it
      *static_cast<kernels::peer::PeerSlot*>(g.slots[i]) = {};
      *g.mailboxes[i] = {};
    }
    return {};
  }

 private:
  static uint64_t region_bytes(const PeerGroup& g) {
    return kernels::peer::kStagingOffset + static_cast<uint64_t>(g.staging_bytes);
  }
  // Maps the shared-memory object `fd` as position's slot and staging buffer; closes fd.
  static Status map(PeerGroup& g, int position, int fd, const std::string& name) {
    void* base = mmap(nullptr, region_bytes(g), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    const int err = errno;
    close(fd);
    if (base == MAP_FAILED) {
      return Internal(StrCat("jax_aiter: mmap(", name, "): ", std::strerror(err)));
    }
    g.slots[position] = base;
    g.staging[position] = static_cast<unsigned char*>(base) + kernels::peer::kStagingOffset;
    return {};
  }
};

struct Host {
  static constexpr BackendKind kKind = BackendKind::kHost;
  using PeerMemory = HostPeerMemory;
  static constexpr bool kCommandBufferCompatible = false;  // no command buffers on the CPU
  using Stream = void*;

  struct Kernel {
    Status status;
    HostTwin twin = nullptr;
  };

  static Expected<Target> target(int /*device*/) {
    return Target{BackendKind::kHost, Arch::kHost, 1};
  }

  static const Kernel& resolve(int /*device*/, const kernels::KernelInfo& info) {
    static PerDeviceCache<const kernels::KernelInfo*, Kernel> cache;
    return cache.get_or_load(0, &info, [&]() -> Kernel {
      if (HostTwin twin = HostTwins::find(info.symbol)) return {{}, twin};
      return {NotFound(StrCat("jax_aiter: no host twin of kernel ", info.symbol, " (code object ",
                              info.code_object,
                              "): include its op's jax_aiter/host_twins/ header in the consumer")),
              nullptr};
    });
  }

  static Status launch(int /*device*/, Stream /*stream*/, const Kernel& kernel,
                       const kernels::Launch& launch) {
    if (launch.cluster > 1) {
      return Internal(
          StrCat("jax_aiter: ", launch.kernel->symbol,
                 ": a thread-block cluster launch, which the host backend does not run"));
    }
    // A fill_device launch runs its whole cap here: the CPU runs blocks one after another, and the
    // cap is the most blocks any device may use.
    kernel.twin(launch.args, launch.grid, launch.block);
    return {};
  }

  static Status memset(int /*device*/, Stream /*stream*/, const kernels::Memset& m) {
    if (m.bytes % 4 != 0 || reinterpret_cast<uintptr_t>(m.dst) % 4 != 0) {
      return Internal(StrCat("jax_aiter: memset of ", m.what, ": ", m.bytes,
                             " bytes at a 4-byte pattern needs 4-byte size and alignment"));
    }
    auto* words = static_cast<uint32_t*>(m.dst);
    for (uint64_t i = 0; i < m.bytes / 4; ++i) words[i] = m.value;
    return {};
  }
};

static_assert(Backend<Host>);

}  // namespace jax_aiter::runtime
