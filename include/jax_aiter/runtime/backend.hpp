// The interface every runtime backend meets (Hip, Cuda, Host). The FFI binder is written against
// this concept only.
//
// A Module is a type describing one code object: its name (as embedded) and kernel table
//   struct SomeModule {
//     static constexpr std::string_view kName = "rmsnorm";
//     static constexpr std::array<kernels::KernelInfo, N> kKernels = {...};
//   };
#pragma once

#include <concepts>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/core/status.hpp"
#include "jax_aiter/kernels/launch.hpp"

namespace jax_aiter::runtime {

template <typename M>
concept Module = requires {
  { M::kName } -> std::convertible_to<std::string_view>;
  { M::kKernels.size() } -> std::convertible_to<size_t>;
};

template <typename B>
concept Backend = requires(int device, typename B::Stream stream, const kernels::Launch& launch) {
  { B::kKind } -> std::convertible_to<BackendKind>;
  // Whether execute is pure launches on the given stream (XLA command-buffer compatibility).
  { B::kCommandBufferCompatible } -> std::convertible_to<bool>;
  { B::target(device) } -> std::same_as<Expected<Target>>;
};

// Keys a module in a backend's per-device cache: the address of its kernel table is unique.
template <Module M>
const void* module_tag() {
  return &M::kKernels;
}

}  // namespace jax_aiter::runtime
