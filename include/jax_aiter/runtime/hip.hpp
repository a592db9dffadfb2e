// The AMD backend (the target): loads an embedded code object once per device, checks every
// kernel's declared arguments against our struct before its first launch, and launches with one
// packed argument buffer (HIP_LAUNCH_PARAM_BUFFER_POINTER), as AITER's own loader does.
// Compiled in CI against Debian's libamdhip64-dev; never run here (no AMD GPU).
#pragma once

#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__ 1
#endif
#include <hip/hip_runtime_api.h>

#include <string>
#include <vector>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/core/status.hpp"
#include "jax_aiter/kernels/launch.hpp"
#include "jax_aiter/runtime/backend.hpp"
#include "jax_aiter/runtime/code_object.hpp"
#include "jax_aiter/runtime/embedded.hpp"
#include "jax_aiter/runtime/kernarg_check.hpp"
#include "jax_aiter/runtime/module_cache.hpp"
#include "jax_aiter/runtime/occupancy.hpp"

namespace jax_aiter::runtime {

struct Hip {
  static constexpr BackendKind kKind = BackendKind::kHip;
  // Execute issues nothing but hipModuleLaunchKernel on XLA's stream with XLA-owned buffers.
  static constexpr bool kCommandBufferCompatible = true;
  using Stream = hipStream_t;

  struct LoadedModule {
    hipModule_t module = nullptr;
    std::vector<hipFunction_t> functions;  // indexed like the module's kernel table
    Occupancy occupancy;                   // sizes fill_device launches
  };

  static Status error(hipError_t e, std::string_view what) {
    return Internal(StrCat("jax_aiter: ", std::string(what), " failed: ", hipGetErrorName(e), " (",
                           hipGetErrorString(e), ")"));
  }

  static Expected<Target> target(int device) {
    static PerDeviceCache<Target> cache;
    static const int tag = 0;
    auto t = cache.get_or_load(device, &tag, [device]() -> Expected<Target> {
      hipDeviceProp_t prop;
      if (hipError_t e = hipGetDeviceProperties(&prop, device); e != hipSuccess) {
        return error(e, StrCat("hipGetDeviceProperties(", device, ")"));
      }
      auto arch = parse_gcn_arch_name(prop.gcnArchName);
      if (!arch) return arch.status();
      return Target{BackendKind::kHip, *arch, prop.multiProcessorCount, prop.l2CacheSize};
    });
    if (!t) return t.status();
    return **t;
  }

  template <Module M>
  static Expected<const LoadedModule*> module(int device) {
    static PerDeviceCache<LoadedModule> cache;
    return cache.get_or_load(device, module_tag<M>(), [device]() { return load<M>(device); });
  }

  template <Module M>
  static Status prepare(int device) {
    return module<M>(device).status();
  }

  template <Module M>
  static Status launch(int device, Stream stream, const kernels::Launch& l) {
    auto m = module<M>(device);
    if (!m) return m.status();
    // A cluster launch is refused here: HIP measures no clusters, so the occupancy table has none.
    auto grid = (*m)->occupancy.grid(l);
    if (!grid) return grid.status();
    size_t size = l.args.size;
    void* extra[] = {HIP_LAUNCH_PARAM_BUFFER_POINTER, const_cast<std::byte*>(l.args.bytes.data()),
                     HIP_LAUNCH_PARAM_BUFFER_SIZE, &size, HIP_LAUNCH_PARAM_END};
    hipError_t e =
        hipModuleLaunchKernel((*m)->functions[l.kernel], grid->x, grid->y, grid->z, l.block.x,
                              l.block.y, l.block.z, l.shared_bytes, stream, nullptr, extra);
    if (e != hipSuccess) return error(e, StrCat("launch of ", M::kKernels[l.kernel].symbol));
    return {};
  }

 private:
  template <Module M>
  static Expected<LoadedModule> load(int device) {
    auto t = target(device);
    if (!t) return t.status();
    const EmbeddedCodeObject* blob = EmbeddedRegistry::find(M::kName, name(t->arch));
    if (blob == nullptr) {
      return NotFound(StrCat("jax_aiter: no embedded code object '", M::kName, "' for ",
                             name(t->arch), " (was jax_aiter_embed_kernels called with it?)"));
    }
    // Refuse before the first launch a kernel that would read arguments our struct lacks.
    auto info = read_code_object(blob->bytes);
    if (!info) return info.status();
    for (const kernels::KernelInfo& k : M::kKernels) {
      const KernelMetadata* md = info->find(k.symbol);
      if (md == nullptr) {
        return NotFound(StrCat("jax_aiter: code object '", M::kName, "' for ", name(t->arch),
                               " has no kernel ", k.symbol));
      }
      JAX_AITER_RETURN_IF_ERROR(check_kernel_arguments(*md, k));
    }
    int previous = 0;
    if (hipError_t e = hipGetDevice(&previous); e != hipSuccess) return error(e, "hipGetDevice");
    if (hipError_t e = hipSetDevice(device); e != hipSuccess) return error(e, "hipSetDevice");
    LoadedModule out;
    out.occupancy = Occupancy(t->compute_units);
    Status st = [&]() -> Status {
      if (hipError_t e = hipModuleLoadData(&out.module, blob->bytes.data()); e != hipSuccess) {
        return error(e, StrCat("hipModuleLoadData(", M::kName, ")"));
      }
      for (const kernels::KernelInfo& k : M::kKernels) {
        hipFunction_t f;
        const std::string symbol(k.symbol);
        if (hipError_t e = hipModuleGetFunction(&f, out.module, symbol.c_str()); e != hipSuccess) {
          return error(e, StrCat("hipModuleGetFunction(", symbol, ")"));
        }
        out.functions.push_back(f);
        JAX_AITER_RETURN_IF_ERROR(out.occupancy.add_kernel(k, [&](int threads) -> Expected<int> {
          int blocks = 0;
          hipError_t e = hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, threads, 0);
          if (e == hipErrorInvalidValue) return 0;  // beyond the kernel's launch bounds
          if (e != hipSuccess) {
            return error(e, "hipModuleOccupancyMaxActiveBlocksPerMultiprocessor");
          }
          return blocks;
        }));
      }
      return {};
    }();
    (void)hipSetDevice(previous);
    if (!st.ok()) return st;
    return out;
  }
};

static_assert(Backend<Hip>);

}  // namespace jax_aiter::runtime
