// The NVIDIA backend, on the CUDA driver API: resolves a kernel on first use by loading its code
// object's sm_90 cubin (ours, or the ABI twin standing in for an AITER code object) once per device
// into the device's primary context (the one XLA uses), checking the cubin's parameters against our
// struct, and measuring its occupancy if it is launched fill_device. Launches with one packed
// argument buffer, exactly as the HIP backend does on AMD. Runs the whole path on a real GPU.
#pragma once

#include <cuda.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/core/status.hpp"
#include "jax_aiter/kernels/kernel.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/runtime/backend.hpp"
#include "jax_aiter/runtime/code_objects.hpp"
#include "jax_aiter/runtime/device_cache.hpp"
#include "jax_aiter/runtime/occupancy.hpp"
#include "jax_aiter/runtime/peer_groups.hpp"

namespace jax_aiter::runtime {

struct CudaPeerMemory;

struct Cuda {
  static constexpr BackendKind kKind = BackendKind::kCuda;
  using PeerMemory = CudaPeerMemory;
  friend struct CudaPeerMemory;
  // Execute issues nothing but cuLaunchKernelEx and cuMemsetD32Async on XLA's stream with
  // XLA-owned buffers.
  static constexpr bool kCommandBufferCompatible = true;
  using Stream = CUstream;

  struct Kernel {
    Status status;
    CUfunction function = nullptr;
    // Bytes of the kernel's parameters as the cubin declares them: the driver wants exactly that
    // size with CU_LAUNCH_PARAM_BUFFER_SIZE (our struct may carry tail padding beyond it).
    size_t param_bytes = 0;
    KernelOccupancy occupancy;  // sizes fill_device launches
  };

  static Status error(CUresult r, std::string_view what) {
    const char* err_name = nullptr;
    const char* err_text = nullptr;
    cuGetErrorName(r, &err_name);
    cuGetErrorString(r, &err_text);
    return Internal(StrCat("jax_aiter: ", std::string(what), " failed: ", err_name ? err_name : "?",
                           " (", err_text ? err_text : "?", ")"));
  }

  static Expected<Target> target(int device) {
    static PerDeviceCache<int, Expected<Target>> cache;
    return cache.get_or_load(device, 0, [device]() -> Expected<Target> {
      if (CUresult r = cuInit(0); r != CUDA_SUCCESS) return error(r, "cuInit");
      CUdevice dev;
      if (CUresult r = cuDeviceGet(&dev, device); r != CUDA_SUCCESS) return error(r, "cuDeviceGet");
      int major = 0, minor = 0, sms = 0, l2 = 0;
      cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
      cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
      cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
      cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev);
      auto arch = arch_from_compute_capability(major, minor);
      if (!arch) return arch.status();
      return Target{BackendKind::kCuda, *arch, sms, l2};
    });
  }

  static const Kernel& resolve(int device, const kernels::KernelInfo& info) {
    return kernels_.get_or_load(device, &info, [&]() { return load_kernel(device, info); });
  }

  // Kernels and code objects resolved on a device so far (for tests of the caches).
  static size_t resolved_kernels(int device) { return kernels_.size(device); }
  static size_t loaded_modules(int device) { return modules_.size(device); }

  static Status launch(int /*device*/, Stream stream, const Kernel& k, const kernels::Launch& l) {
    auto grid = k.occupancy.grid(l);
    if (!grid) return grid.status();
    size_t size = k.param_bytes;
    void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, const_cast<std::byte*>(l.args.bytes.data()),
                     CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
    // Every launch may start while the stream's previous kernel finishes (programmatic dependent
    // launch): our kernels wait for it (griddepcontrol.wait) before touching memory. H100 numbers
    // in benchmarks/gpu/NOTES.md.
    CUlaunchAttribute attrs[2] = {programmatic_attribute(), {}};
    unsigned count = 1;
    if (l.cluster > 1) attrs[count++] = cluster_attribute(l.cluster);
    CUlaunchConfig config = launch_config(*grid, l.block, l.shared_bytes, stream, attrs, count);
    CUresult r = cuLaunchKernelEx(&config, k.function, nullptr, extra);
    if (r != CUDA_SUCCESS) return error(r, StrCat("launch of ", l.kernel->symbol));
    return {};
  }

  static Status memset(int /*device*/, Stream stream, const kernels::Memset& m) {
    if (m.bytes % 4 != 0 || reinterpret_cast<uintptr_t>(m.dst) % 4 != 0) {
      return Internal(StrCat("jax_aiter: memset of ", m.what, ": ", m.bytes,
                             " bytes at a 4-byte pattern needs 4-byte size and alignment"));
    }
    CUresult r =
        cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(m.dst), m.value, m.bytes / 4, stream);
    if (r != CUDA_SUCCESS) return error(r, StrCat("memset of ", m.what));
    return {};
  }

 private:
  struct Module {
    Status status;
    CUmodule module = nullptr;
  };
  static inline PerDeviceCache<const std::byte*, Module> modules_;
  static inline PerDeviceCache<const kernels::KernelInfo*, Kernel> kernels_;

  static CUlaunchAttribute cluster_attribute(int blocks) {
    CUlaunchAttribute a{};
    a.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    a.value.clusterDim.x = static_cast<unsigned>(blocks);
    a.value.clusterDim.y = 1;
    a.value.clusterDim.z = 1;
    return a;
  }
  static CUlaunchAttribute programmatic_attribute() {
    CUlaunchAttribute a{};
    a.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    a.value.programmaticStreamSerializationAllowed = 1;
    return a;
  }
  static CUlaunchConfig launch_config(kernels::Dim3 grid, kernels::Dim3 block, uint32_t shared,
                                      CUstream stream, CUlaunchAttribute* attrs, unsigned count) {
    CUlaunchConfig c{};
    c.gridDimX = grid.x;
    c.gridDimY = grid.y;
    c.gridDimZ = grid.z;
    c.blockDimX = block.x;
    c.blockDimY = block.y;
    c.blockDimZ = block.z;
    c.sharedMemBytes = shared;
    c.hStream = stream;
    c.attrs = attrs;
    c.numAttrs = count;
    return c;
  }

  // Runs fn with the device's primary context current (the context XLA launches in).
  template <typename Fn>
  static Status in_primary_context(int device, Fn&& fn) {
    CUdevice dev;
    CUcontext ctx;
    if (CUresult r = cuDeviceGet(&dev, device); r != CUDA_SUCCESS) return error(r, "cuDeviceGet");
    if (CUresult r = cuDevicePrimaryCtxRetain(&ctx, dev); r != CUDA_SUCCESS) {
      return error(r, "cuDevicePrimaryCtxRetain");
    }
    if (CUresult r = cuCtxPushCurrent(ctx); r != CUDA_SUCCESS) return error(r, "cuCtxPushCurrent");
    Status st = fn();
    CUcontext popped;
    cuCtxPopCurrent(&popped);
    return st;
  }

  static const Module& module(int device, const CodeObject& co) {
    return modules_.get_or_load(device, co.bytes.data(), [&]() {
      Module m;
      m.status = in_primary_context(device, [&]() -> Status {
        if (CUresult r = cuModuleLoadData(&m.module, co.bytes.data()); r != CUDA_SUCCESS) {
          return error(r, StrCat("cuModuleLoadData(", co.name, ", ", co.origin, ")"));
        }
        return {};
      });
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
    const Module& m = module(device, *co);
    if (!m.status.ok()) {
      k.status = m.status;
      return k;
    }
    k.status = in_primary_context(device, [&]() -> Status {
      const std::string symbol(info.symbol);
      if (CUresult r = cuModuleGetFunction(&k.function, m.module, symbol.c_str());
          r != CUDA_SUCCESS) {
        return error(r, StrCat("cuModuleGetFunction(", symbol, ") in ", info.code_object));
      }
      auto bytes = check_parameters(k.function, info);
      if (!bytes) return bytes.status();
      k.param_bytes = *bytes;
      CUfunction f = k.function;
      if (info.dynamic_shared > 48 * 1024) {
        if (CUresult r = cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                            static_cast<int>(info.dynamic_shared));
            r != CUDA_SUCCESS) {
          return error(r, StrCat("cuFuncSetAttribute(", symbol, ", max dynamic shared memory ",
                                 info.dynamic_shared, ")"));
        }
      }
      auto blocks_per_sm = [&](int threads) -> Expected<int> {
        int blocks = 0;
        CUresult r = cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, threads, 0);
        // A block size the kernel cannot run at (beyond its launch bounds) holds none.
        if (r == CUDA_ERROR_INVALID_VALUE) return 0;
        if (r != CUDA_SUCCESS) return error(r, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
        return blocks;
      };
      auto clusters_on_device = [&](int threads, int size) -> Expected<int> {
        CUlaunchAttribute cluster = cluster_attribute(size);
        const kernels::Dim3 grid{static_cast<uint32_t>(size), 1, 1};
        const kernels::Dim3 block{static_cast<uint32_t>(threads), 1, 1};
        CUlaunchConfig config = launch_config(grid, block, 0, nullptr, &cluster, 1);
        int clusters = 0;
        CUresult r = cuOccupancyMaxActiveClusters(&clusters, f, &config);
        if (r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_INVALID_CLUSTER_SIZE) return 0;
        if (r != CUDA_SUCCESS) return error(r, "cuOccupancyMaxActiveClusters");
        return clusters;
      };
      auto occupancy =
          KernelOccupancy::measure(info, t->compute_units, blocks_per_sm, clusters_on_device);
      if (!occupancy) return occupancy.status();
      k.occupancy = *occupancy;
      return {};
    });
    return k;
  }

  // The cubin records each parameter's offset and size. Every field of our struct inside the
  // parameters' extent must be fed whole: by one parameter of its offset and size, or by
  // contiguous smaller parameters from its offset to its end (AITER declares some 8-byte pointers
  // as a 4-byte value and a 4-byte pad, which its twins copy: the runtime passes all 8 bytes, as
  // runtime/kernarg_check.hpp accepts on AMD). Other parameters must lie between fields (the pad
  // slots of AITER's ABI, which its twins declare as parameters of their own). Fields past the
  // last parameter are fine: the kernel never reads them (AITER's pf3 BF16 GEMM kernels end before
  // ptr_semaphore). Returns the end of the last parameter.
  static constexpr size_t kMaxFields = 128;

  static Expected<size_t> check_parameters(CUfunction f, const kernels::KernelInfo& k) {
    size_t end = 0;
    std::array<size_t, kMaxFields> fed{};  // bytes of field j fed so far, from its offset
    if (k.fields.size() > kMaxFields) {
      return Internal(
          StrCat("jax_aiter: kernel ", k.symbol, ": more than ", kMaxFields, " argument fields"));
    }
    for (size_t i = 0;; ++i) {
      size_t offset = 0, size = 0;
      CUresult r = cuFuncGetParamInfo(f, i, &offset, &size);
      if (r == CUDA_ERROR_INVALID_VALUE) break;  // past the last parameter
      if (r != CUDA_SUCCESS) return error(r, StrCat("cuFuncGetParamInfo(", k.symbol, ")"));
      for (size_t j = 0; j < k.fields.size(); ++j) {
        const kernels::ArgField& field = k.fields[j];
        const bool overlaps = offset < field.offset + field.size && field.offset < offset + size;
        if (!overlaps) continue;
        if (offset != field.offset + fed[j] || offset + size > field.offset + field.size) {
          return FailedPrecondition(StrCat("jax_aiter: kernel ", k.symbol, " parameter ", i,
                                           " (offset ", offset, ", size ", size,
                                           ") is not our field ", field.name, " (offset ",
                                           field.offset, ", size ", field.size, ")"));
        }
        fed[j] += size;
      }
      end = std::max(end, offset + size);
    }
    for (size_t j = 0; j < k.fields.size(); ++j) {
      const kernels::ArgField& field = k.fields[j];
      if (field.offset + field.size <= end && fed[j] != field.size) {
        return FailedPrecondition(StrCat("jax_aiter: kernel ", k.symbol,
                                         " has no parameter at our field ", field.name, " (offset ",
                                         field.offset, ", size ", field.size, ")"));
      }
    }
    if (end > k.args_size) {
      return FailedPrecondition(StrCat("jax_aiter: kernel ", k.symbol, " takes ", end,
                                       " bytes of parameters; our struct has ", k.args_size));
    }
    return end;
  }
};

static_assert(Backend<Cuda>);

// Peer groups on NVIDIA GPUs of one process: each device's slot in its own memory, its mailbox in
// pinned host memory mapped into every device, peer access enabled between every two devices of
// the mesh, and on each device a table of every slot's and mailbox's address (unified addressing:
// one address is valid on every device).
struct CudaPeerMemory {
  static constexpr bool kTablePerDevice = true;

  static Status make(PeerGroup& g) {
    namespace K = kernels::peer;
    const auto& ids = g.devices.ids;
    for (int i = 0; i < g.devices.count; ++i) {
      JAX_AITER_RETURN_IF_ERROR(Cuda::in_primary_context(ids[i], [&]() -> Status {
        CUdeviceptr slot = 0;
        if (CUresult r = cuMemAlloc(&slot, sizeof(K::PeerSlot)); r != CUDA_SUCCESS) {
          return Cuda::error(r, "cuMemAlloc(peer slot)");
        }
        if (CUresult r = cuMemsetD8(slot, 0, sizeof(K::PeerSlot)); r != CUDA_SUCCESS) {
          return Cuda::error(r, "cuMemsetD8(peer slot)");
        }
        g.slots[i] = reinterpret_cast<void*>(slot);
        return new_mailbox(g, i);
      }));
    }
    for (int i = 0; i < g.devices.count; ++i) {
      for (int j = 0; j < g.devices.count; ++j) {
        if (i != j) JAX_AITER_RETURN_IF_ERROR(enable_peer_access(ids[i], ids[j]));
      }
    }
    K::PeerTable table{};
    for (int i = 0; i < g.devices.count; ++i) {
      table.slots[i] = static_cast<K::PeerSlot*>(g.slots[i]);
      table.mailboxes[i] = g.mailboxes[i];
    }
    for (int i = 0; i < g.devices.count; ++i) {
      JAX_AITER_RETURN_IF_ERROR(
          Cuda::in_primary_context(ids[i], [&]() { return upload_table(g, i, table); }));
    }
    return {};
  }

  // Across processes (one process per GPU): the slot and staging buffer in one cuMemAlloc
  // allocation (its own, so the IPC handle maps exactly it), exported with cuIpcGetMemHandle.
  static Expected<std::string> stage(PeerGroup& g, int position) {
    namespace K = kernels::peer;
    JAX_AITER_RETURN_IF_ERROR(peer_one_device_per_process(g, position));
    std::string handle;
    JAX_AITER_RETURN_IF_ERROR(Cuda::in_primary_context(g.local[position], [&]() -> Status {
      CUdeviceptr region = 0;
      if (CUresult r = cuMemAlloc(&region, K::kStagingOffset + g.staging_bytes);
          r != CUDA_SUCCESS) {
        return Cuda::error(r, "cuMemAlloc(peer staging)");
      }
      if (CUresult r = cuMemsetD8(region, 0, K::kStagingOffset); r != CUDA_SUCCESS) {
        return Cuda::error(r, "cuMemsetD8(peer slot)");
      }
      CUipcMemHandle h;
      if (CUresult r = cuIpcGetMemHandle(&h, region); r != CUDA_SUCCESS) {
        return Cuda::error(r, "cuIpcGetMemHandle(peer staging)");
      }
      handle = peer_handle_text(&h, sizeof h);
      g.slots[position] = reinterpret_cast<void*>(region);
      g.staging[position] = reinterpret_cast<unsigned char*>(region + K::kStagingOffset);
      return {};
    }));
    return handle;
  }

  static Status join(PeerGroup& g, int position, std::string_view handle) {
    CUipcMemHandle h;
    JAX_AITER_RETURN_IF_ERROR(peer_handle_bytes(handle, &h, sizeof h));
    auto local = peer_local_position(g);
    if (!local) return local.status();
    return Cuda::in_primary_context(g.local[*local], [&]() -> Status {
      CUdeviceptr region = 0;
      if (CUresult r = cuIpcOpenMemHandle(&region, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
          r != CUDA_SUCCESS) {
        return Cuda::error(
            r, StrCat("cuIpcOpenMemHandle(peer staging of mesh position ", position, ")"));
      }
      g.slots[position] = reinterpret_cast<void*>(region);
      g.staging[position] =
          reinterpret_cast<unsigned char*>(region + kernels::peer::kStagingOffset);
      return {};
    });
  }

  static Status seal(PeerGroup& g) {
    namespace K = kernels::peer;
    auto local = peer_local_position(g);
    if (!local) return local.status();
    const int i = *local;
    return Cuda::in_primary_context(g.local[i], [&]() -> Status {
      JAX_AITER_RETURN_IF_ERROR(new_mailbox(g, i));
      K::PeerTable table{};
      for (int j = 0; j < g.devices.count; ++j) {
        table.slots[j] = static_cast<K::PeerSlot*>(g.slots[j]);
        table.staging[j] = g.staging[j];
      }
      table.mailboxes[i] = g.mailboxes[i];
      return upload_table(g, i, table);
    });
  }

  static Status zero(PeerGroup& g) {
    for (int i = 0; i < g.devices.count; ++i) {
      if (g.local[i] < 0) continue;  // another process's rank: its own reset zeroes it
      JAX_AITER_RETURN_IF_ERROR(Cuda::in_primary_context(g.local[i], [&]() -> Status {
        if (CUresult r = cuMemsetD8(reinterpret_cast<CUdeviceptr>(g.slots[i]), 0,
                                    sizeof(kernels::peer::PeerSlot));
            r != CUDA_SUCCESS) {
          return Cuda::error(r, "cuMemsetD8(peer slot)");
        }
        return {};
      }));
      *g.mailboxes[i] = {};
    }
    return {};
  }

 private:
  // Position i's mailbox: pinned, mapped host memory (its host address is its device address).
  static Status new_mailbox(PeerGroup& g, int i) {
    void* box = nullptr;
    if (CUresult r = cuMemHostAlloc(&box, sizeof(kernels::peer::PeerMailbox),
                                    CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
        r != CUDA_SUCCESS) {
      return Cuda::error(r, "cuMemHostAlloc(peer mailbox)");
    }
    g.mailboxes[i] = static_cast<kernels::peer::PeerMailbox*>(box);
    *g.mailboxes[i] = {};
    return {};
  }
  // Position i's table, in the current context's device memory.
  static Status upload_table(PeerGroup& g, int i, const kernels::peer::PeerTable& table) {
    CUdeviceptr t = 0;
    if (CUresult r = cuMemAlloc(&t, sizeof table); r != CUDA_SUCCESS) {
      return Cuda::error(r, "cuMemAlloc(peer table)");
    }
    if (CUresult r = cuMemcpyHtoD(t, &table, sizeof table); r != CUDA_SUCCESS) {
      return Cuda::error(r, "cuMemcpyHtoD(peer table)");
    }
    g.tables[i] = reinterpret_cast<const void*>(t);
    return {};
  }
  static Status enable_peer_access(int from, int to) {
    CUdevice a, b;
    cuDeviceGet(&a, from);
    cuDeviceGet(&b, to);
    int can = 0;
    cuDeviceCanAccessPeer(&can, a, b);
    if (!can) {
      return FailedPrecondition(
          StrCat("jax_aiter: the peer tier needs peer access between the "
                 "mesh's devices; device ",
                 from, " cannot access device ", to));
    }
    CUcontext peer_ctx;
    if (CUresult r = cuDevicePrimaryCtxRetain(&peer_ctx, b); r != CUDA_SUCCESS) {
      return Cuda::error(r, "cuDevicePrimaryCtxRetain");
    }
    return Cuda::in_primary_context(from, [&]() -> Status {
      const CUresult r = cuCtxEnablePeerAccess(peer_ctx, 0);
      if (r != CUDA_SUCCESS && r != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
        return Cuda::error(r, StrCat("cuCtxEnablePeerAccess(", from, " -> ", to, ")"));
      }
      return {};
    });
  }
};

}  // namespace jax_aiter::runtime
