// The AMD backend (the target): resolves a kernel on first use by finding its code object (AITER's,
// ours, or an ABI twin: runtime/code_objects.hpp), checking the kernel's declared arguments against
// our struct before anything is loaded (or picking the layout of the AITER version the code object
// comes from: kernels::AbiVariant, runtime/kernarg_check.hpp), loading the code object once per
// device, and measuring occupancy if it is launched fill_device. Launches with one packed argument
// buffer (HIP_LAUNCH_PARAM_BUFFER_POINTER), as AITER's own loader does. Compiled in CI against
// Debian's libamdhip64-dev; never run here (no AMD GPU).
#pragma once

#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__ 1
#endif
#include <hip/hip_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/core/status.hpp"
#include "jax_aiter/kernels/kernel.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/runtime/backend.hpp"
#include "jax_aiter/runtime/code_object.hpp"
#include "jax_aiter/runtime/code_objects.hpp"
#include "jax_aiter/runtime/device_cache.hpp"
#include "jax_aiter/runtime/kernarg_check.hpp"
#include "jax_aiter/runtime/occupancy.hpp"
#include "jax_aiter/runtime/peer_groups.hpp"

namespace jax_aiter::runtime {

struct HipPeerMemory;

struct Hip {
  static constexpr BackendKind kKind = BackendKind::kHip;
  using PeerMemory = HipPeerMemory;
  // Execute issues nothing but hipModuleLaunchKernel and hipMemsetD32Async on XLA's stream with
  // XLA-owned buffers.
  static constexpr bool kCommandBufferCompatible = true;
  using Stream = hipStream_t;

  struct Kernel {
    Status status;
    hipFunction_t function = nullptr;
    KernelOccupancy occupancy;  // sizes fill_device launches
    // The layout the code object declares when it is not the plan's (another AITER version): each
    // launch repacks the plan's bytes into it.
    const kernels::AbiVariant* variant = nullptr;
  };

  static Status error(hipError_t e, std::string_view what) {
    return Internal(StrCat("jax_aiter: ", std::string(what), " failed: ", hipGetErrorName(e), " (",
                           hipGetErrorString(e), ")"));
  }

  static Expected<Target> target(int device) {
    static PerDeviceCache<int, Expected<Target>> cache;
    return cache.get_or_load(device, 0, [device]() -> Expected<Target> {
      hipDeviceProp_t prop;
      if (hipError_t e = hipGetDeviceProperties(&prop, device); e != hipSuccess) {
        return error(e, StrCat("hipGetDeviceProperties(", device, ")"));
      }
      auto arch = parse_gcn_arch_name(prop.gcnArchName);
      if (!arch) return arch.status();
      Target t{BackendKind::kHip, *arch, prop.multiProcessorCount, prop.l2CacheSize};
      t.pci_chip_id = pci_chip_id(device);
      return t;
    });
  }

  // The device's PCI device id (what AITER reads as hipDeviceAttributePciChipId: it picks the
  // MI308 build of some gfx942 kernels by it), from sysfs at the device's PCI address: that
  // attribute's number differs between ROCm releases (10019, 10020), and hipDeviceProp_t's
  // pciDeviceID is the slot, not the id. 0 when unreadable (planned as MI300).
  static uint32_t pci_chip_id(int device) {
    char bus_id[64] = {};
    if (hipDeviceGetPCIBusId(bus_id, static_cast<int>(sizeof bus_id) - 1, device) != hipSuccess) {
      return 0;
    }
    std::string path = "/sys/bus/pci/devices/";
    for (const char* c = bus_id; *c != '\0'; ++c) {
      path += static_cast<char>(*c >= 'A' && *c <= 'F' ? *c - 'A' + 'a' : *c);  // sysfs is lower
    }
    std::ifstream file(path + "/device");
    unsigned int id = 0;
    if (!(file >> std::hex >> id) || id > 0xffff) return 0;
    return id;
  }

  static const Kernel& resolve(int device, const kernels::KernelInfo& info) {
    return kernels_.get_or_load(device, &info, [&]() { return load_kernel(device, info); });
  }
  // What the per-device caches hold for one device (kernels resolved, code objects loaded).
  static size_t resolved_kernels(int device) { return kernels_.size(device); }
  static size_t loaded_modules(int device) { return modules_.size(device); }

  static Status launch(int /*device*/, Stream stream, const Kernel& k, const kernels::Launch& l) {
    // A cluster launch is refused here: HIP measures no clusters.
    auto grid = k.occupancy.grid(l);
    if (!grid) return grid.status();
    const kernels::KernelArgs* args = &l.args;
    kernels::KernelArgs repacked;
    if (k.variant != nullptr) {
      if (!k.variant->repack(l.args, repacked)) {
        return Internal(StrCat("jax_aiter: launch of ", l.kernel->symbol,
                               ": the call cannot be packed in the layout its code object reads (",
                               k.variant->name, ")"));
      }
      args = &repacked;
    }
    // HIP ignores this size and copies every argument the kernel's metadata declares from
    // args + offset (which the resolve-time check proved our struct covers).
    size_t size = args->size;
    void* extra[] = {HIP_LAUNCH_PARAM_BUFFER_POINTER, const_cast<std::byte*>(args->bytes.data()),
                     HIP_LAUNCH_PARAM_BUFFER_SIZE, &size, HIP_LAUNCH_PARAM_END};
    hipError_t e =
        hipModuleLaunchKernel(k.function, grid->x, grid->y, grid->z, l.block.x, l.block.y,
                              l.block.z, l.shared_bytes, stream, nullptr, extra);
    if (e != hipSuccess) return error(e, StrCat("launch of ", l.kernel->symbol));
    return {};
  }

  static Status memset(int /*device*/, Stream stream, const kernels::Memset& m) {
    if (m.bytes % 4 != 0 || reinterpret_cast<uintptr_t>(m.dst) % 4 != 0) {
      return Internal(StrCat("jax_aiter: memset of ", m.what, ": ", m.bytes,
                             " bytes at a 4-byte pattern needs 4-byte size and alignment"));
    }
    hipError_t e = hipMemsetD32Async(reinterpret_cast<hipDeviceptr_t>(m.dst),
                                     static_cast<int>(m.value), m.bytes / 4, stream);
    if (e != hipSuccess) return error(e, StrCat("memset of ", m.what));
    return {};
  }

 private:
  struct Module {
    Status status;
    hipModule_t module = nullptr;
  };
  // The metadata of a code object, read once per process (it is the same on every device).
  static inline PerDeviceCache<const std::byte*, Expected<CodeObjectInfo>> metadata_;
  static inline PerDeviceCache<const std::byte*, Module> modules_;
  static inline PerDeviceCache<const kernels::KernelInfo*, Kernel> kernels_;

  static const Module& module(int device, const CodeObject& co) {
    return modules_.get_or_load(device, co.bytes.data(), [&]() {
      Module m;
      int previous = 0;
      if (hipError_t e = hipGetDevice(&previous); e != hipSuccess) {
        m.status = error(e, "hipGetDevice");
        return m;
      }
      if (hipError_t e = hipSetDevice(device); e != hipSuccess) {
        m.status = error(e, "hipSetDevice");
        return m;
      }
      if (hipError_t e = hipModuleLoadData(&m.module, co.bytes.data()); e != hipSuccess) {
        m.status = error(e, StrCat("hipModuleLoadData(", co.name, ", ", co.origin, ")"));
      }
      (void)hipSetDevice(previous);
      return m;
    });
  }

  static Kernel load_kernel(int device, const kernels::KernelInfo& info) {
    Kernel k;
    auto t = target(device);
    if (!t) {
      k.status = t.status();
      return k;
    }
    auto co = CodeObjects::find(info.code_object, name(t->arch));
    if (!co) {
      k.status = co.status();
      return k;
    }
    // Refuse, before anything is loaded, a kernel that would read arguments our struct lacks.
    const auto& md =
        metadata_.get_or_load(-1, co->bytes.data(), [&]() { return read_code_object(co->bytes); });
    if (!md) {
      k.status = md.status();
      return k;
    }
    const KernelMetadata* kernel_md = md->find(info.symbol);
    if (kernel_md == nullptr) {
      k.status = NotFound(StrCat("jax_aiter: code object '", info.code_object, "' (", co->origin,
                                 ") for ", name(t->arch), " has no kernel ", info.symbol));
      return k;
    }
    auto abi = match_kernel_abi(*kernel_md, info);
    if (!abi) {
      k.status = abi.status();
      return k;
    }
    k.variant = *abi;
    const Module& m = module(device, *co);
    if (!m.status.ok()) {
      k.status = m.status;
      return k;
    }
    const std::string symbol(info.symbol);
    if (hipError_t e = hipModuleGetFunction(&k.function, m.module, symbol.c_str());
        e != hipSuccess) {
      k.status = error(e, StrCat("hipModuleGetFunction(", symbol, ")"));
      return k;
    }
    hipFunction_t f = k.function;
    auto occupancy =
        KernelOccupancy::measure(info, t->compute_units, [&](int threads) -> Expected<int> {
          int blocks = 0;
          hipError_t e = hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, threads, 0);
          if (e == hipErrorInvalidValue) return 0;  // beyond the kernel's launch bounds
          if (e != hipSuccess)
            return error(e, "hipModuleOccupancyMaxActiveBlocksPerMultiprocessor");
          return blocks;
        });
    if (!occupancy) {
      k.status = occupancy.status();
      return k;
    }
    k.occupancy = *occupancy;
    return k;
  }
};

static_assert(Backend<Hip>);

// Peer groups on AMD GPUs of one process (XGMI): as CudaPeerMemory, on HIP's runtime API; each
// step runs with its device current and the caller's device restored.
struct HipPeerMemory {
  static constexpr bool kTablePerDevice = true;

  template <typename Fn>
  static Status on_device(int device, Fn&& fn) {
    int before = device;
    if (hipGetDevice(&before) != hipSuccess) before = device;
    if (hipError_t e = hipSetDevice(device); e != hipSuccess) {
      return Hip::error(e, StrCat("hipSetDevice(", device, ")"));
    }
    Status st = fn();
    (void)hipSetDevice(before);
    return st;
  }

  static Status make(PeerGroup& g) {
    namespace K = kernels::peer;
    const auto& ids = g.devices.ids;
    for (int i = 0; i < g.devices.count; ++i) {
      JAX_AITER_RETURN_IF_ERROR(on_device(ids[i], [&]() -> Status {
        void* slot = nullptr;
        if (hipError_t e = hipMalloc(&slot, sizeof(K::PeerSlot)); e != hipSuccess) {
          return Hip::error(e, "hipMalloc(peer slot)");
        }
        if (hipError_t e = hipMemset(slot, 0, sizeof(K::PeerSlot)); e != hipSuccess) {
          return Hip::error(e, "hipMemset(peer slot)");
        }
        g.slots[i] = slot;
        return new_mailbox(g, i);
      }));
    }
    for (int i = 0; i < g.devices.count; ++i) {
      for (int j = 0; j < g.devices.count; ++j) {
        if (i == j) continue;
        int can = 0;
        if (hipDeviceCanAccessPeer(&can, ids[i], ids[j]) != hipSuccess || !can) {
          return FailedPrecondition(
              StrCat("jax_aiter: the peer tier needs peer access between "
                     "the mesh's devices; device ",
                     ids[i], " cannot access device ", ids[j]));
        }
        JAX_AITER_RETURN_IF_ERROR(on_device(ids[i], [&]() -> Status {
          const hipError_t e = hipDeviceEnablePeerAccess(ids[j], 0);
          if (e != hipSuccess && e != hipErrorPeerAccessAlreadyEnabled) {
            return Hip::error(e, StrCat("hipDeviceEnablePeerAccess(", ids[i], " -> ", ids[j], ")"));
          }
          return {};
        }));
      }
    }
    K::PeerTable table{};
    for (int i = 0; i < g.devices.count; ++i) {
      table.slots[i] = static_cast<K::PeerSlot*>(g.slots[i]);
      JAX_AITER_RETURN_IF_ERROR(mailbox_on_device(g, i, table));
    }
    for (int i = 0; i < g.devices.count; ++i) {
      JAX_AITER_RETURN_IF_ERROR(on_device(ids[i], [&]() { return upload_table(g, i, table); }));
    }
    return {};
  }

  // Across processes (one process per GPU): as CudaPeerMemory, with hipIpcGetMemHandle.
  static Expected<std::string> stage(PeerGroup& g, int position) {
    namespace K = kernels::peer;
    JAX_AITER_RETURN_IF_ERROR(peer_one_device_per_process(g, position));
    std::string handle;
    JAX_AITER_RETURN_IF_ERROR(on_device(g.local[position], [&]() -> Status {
      void* region = nullptr;
      if (hipError_t e = hipMalloc(&region, K::kStagingOffset + g.staging_bytes); e != hipSuccess) {
        return Hip::error(e, "hipMalloc(peer staging)");
      }
      if (hipError_t e = hipMemset(region, 0, K::kStagingOffset); e != hipSuccess) {
        return Hip::error(e, "hipMemset(peer slot)");
      }
      hipIpcMemHandle_t h;
      if (hipError_t e = hipIpcGetMemHandle(&h, region); e != hipSuccess) {
        return Hip::error(e, "hipIpcGetMemHandle(peer staging)");
      }
      handle = peer_handle_text(&h, sizeof h);
      g.slots[position] = region;
      g.staging[position] = static_cast<unsigned char*>(region) + K::kStagingOffset;
      return {};
    }));
    return handle;
  }

  static Status join(PeerGroup& g, int position, std::string_view handle) {
    hipIpcMemHandle_t h;
    JAX_AITER_RETURN_IF_ERROR(peer_handle_bytes(handle, &h, sizeof h));
    auto local = peer_local_position(g);
    if (!local) return local.status();
    return on_device(g.local[*local], [&]() -> Status {
      void* region = nullptr;
      if (hipError_t e = hipIpcOpenMemHandle(&region, h, hipIpcMemLazyEnablePeerAccess);
          e != hipSuccess) {
        return Hip::error(
            e, StrCat("hipIpcOpenMemHandle(peer staging of mesh position ", position, ")"));
      }
      g.slots[position] = region;
      g.staging[position] = static_cast<unsigned char*>(region) + kernels::peer::kStagingOffset;
      return {};
    });
  }

  static Status seal(PeerGroup& g) {
    namespace K = kernels::peer;
    auto local = peer_local_position(g);
    if (!local) return local.status();
    const int i = *local;
    return on_device(g.local[i], [&]() -> Status {
      JAX_AITER_RETURN_IF_ERROR(new_mailbox(g, i));
      K::PeerTable table{};
      for (int j = 0; j < g.devices.count; ++j) {
        table.slots[j] = static_cast<K::PeerSlot*>(g.slots[j]);
        table.staging[j] = g.staging[j];
      }
      JAX_AITER_RETURN_IF_ERROR(mailbox_on_device(g, i, table));
      return upload_table(g, i, table);
    });
  }

  static Status zero(PeerGroup& g) {
    for (int i = 0; i < g.devices.count; ++i) {
      if (g.local[i] < 0) continue;  // another process's rank: its own reset zeroes it
      JAX_AITER_RETURN_IF_ERROR(on_device(g.local[i], [&]() -> Status {
        if (hipError_t e = hipMemset(g.slots[i], 0, sizeof(kernels::peer::PeerSlot));
            e != hipSuccess) {
          return Hip::error(e, "hipMemset(peer slot)");
        }
        return {};
      }));
      *g.mailboxes[i] = {};
    }
    return {};
  }

 private:
  // Position i's mailbox: pinned host memory, mapped for the devices.
  static Status new_mailbox(PeerGroup& g, int i) {
    void* box = nullptr;
    if (hipError_t e = hipHostMalloc(&box, sizeof(kernels::peer::PeerMailbox),
                                     hipHostMallocPortable | hipHostMallocMapped);
        e != hipSuccess) {
      return Hip::error(e, "hipHostMalloc(peer mailbox)");
    }
    g.mailboxes[i] = static_cast<kernels::peer::PeerMailbox*>(box);
    *g.mailboxes[i] = {};
    return {};
  }
  // Position i's mailbox as the devices address it, into the table.
  static Status mailbox_on_device(const PeerGroup& g, int i, kernels::peer::PeerTable& table) {
    void* mapped = nullptr;
    if (hipError_t e = hipHostGetDevicePointer(&mapped, g.mailboxes[i], 0); e != hipSuccess) {
      return Hip::error(e, "hipHostGetDevicePointer(peer mailbox)");
    }
    table.mailboxes[i] = static_cast<kernels::peer::PeerMailbox*>(mapped);
    return {};
  }
  // Position i's table, in the current device's memory.
  static Status upload_table(PeerGroup& g, int i, const kernels::peer::PeerTable& table) {
    void* t = nullptr;
    if (hipError_t e = hipMalloc(&t, sizeof table); e != hipSuccess) {
      return Hip::error(e, "hipMalloc(peer table)");
    }
    if (hipError_t e = hipMemcpy(t, &table, sizeof table, hipMemcpyHostToDevice); e != hipSuccess) {
      return Hip::error(e, "hipMemcpy(peer table)");
    }
    g.tables[i] = t;
    return {};
  }
};

}  // namespace jax_aiter::runtime
