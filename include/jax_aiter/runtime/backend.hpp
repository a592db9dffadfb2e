// The interface every runtime backend meets (Hip, Cuda, Host). The FFI binder is written against
// this concept only.
//
//   target(device)          the device's arch and size (cached per device)
//   resolve(device, info)   the kernel `info` names, made ready to launch on that device: its code
//                           object found and loaded, its declared arguments checked against our
//                           struct, its occupancy measured if it is launched fill_device. Cached
//                           per (device, kernel), failures included; the FFI initialize stage
//                           resolves every kernel a call's plan names, so execute only looks up.
//   launch(device, stream, kernel, launch)   one kernel launch on the stream, nothing else
//   memset(device, stream, memset)           one stream-ordered memset
//
// A resolved Kernel carries `status` (OK, or why it cannot run: NotFound when its code object is
// nowhere to be found, FailedPrecondition when it does not match our struct, ...).
#pragma once

#include <concepts>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/core/status.hpp"
#include "jax_aiter/kernels/kernel.hpp"
#include "jax_aiter/kernels/plan.hpp"

namespace jax_aiter::runtime {

template <typename B>
concept Backend = requires(int device, typename B::Stream stream, const kernels::KernelInfo& info,
                           const typename B::Kernel& kernel, const kernels::Launch& launch,
                           const kernels::Memset& memset) {
  { B::kKind } -> std::convertible_to<BackendKind>;
  // Whether execute is pure launches and memsets on the given stream (XLA command-buffer
  // compatibility).
  { B::kCommandBufferCompatible } -> std::convertible_to<bool>;
  { B::target(device) } -> std::same_as<Expected<Target>>;
  { B::resolve(device, info) } -> std::same_as<const typename B::Kernel&>;
  { kernel.status } -> std::convertible_to<const Status&>;
  { B::launch(device, stream, kernel, launch) } -> std::same_as<Status>;
  { B::memset(device, stream, memset) } -> std::same_as<Status>;
};

}  // namespace jax_aiter::runtime
