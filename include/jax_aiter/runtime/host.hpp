// The CPU backend: a "launch" runs the C++ twin of the kernel on the packed argument bytes, on the
// calling thread. This is how JAX on CPU runs our ops through the very same handlers, and how the
// tests prove the argument packing means what we think.
#pragma once

#include <array>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/core/status.hpp"
#include "jax_aiter/kernels/launch.hpp"
#include "jax_aiter/runtime/backend.hpp"

namespace jax_aiter::runtime {

// A host twin computes the whole grid of one kernel launch from the same bytes the GPU reads.
using HostTwin = void (*)(const kernels::KernelArgs& args, kernels::Dim3 grid, kernels::Dim3 block);

// Specialised beside each module's twins (kernels/<op>_host.hpp):
//   template <> struct HostTwins<SomeModule> { static constexpr std::array<HostTwin, N> kTwins; };
template <typename M>
struct HostTwins;

struct Host {
  static constexpr BackendKind kKind = BackendKind::kHost;
  static constexpr bool kCommandBufferCompatible = false;  // no command buffers on the CPU
  using Stream = void*;

  static Expected<Target> target(int /*device*/) {
    return Target{BackendKind::kHost, Arch::kHost, 1};
  }

  template <Module M>
  static Status prepare(int /*device*/) {
    static_assert(HostTwins<M>::kTwins.size() == M::kKernels.size(),
                  "every kernel of the module needs a host twin");
    return {};
  }

  template <Module M>
  static Status launch(int /*device*/, Stream /*stream*/, const kernels::Launch& launch) {
    if (launch.kernel >= M::kKernels.size()) {
      return Internal(StrCat("jax_aiter: kernel index ", launch.kernel, " out of range for ",
                             std::string(M::kName)));
    }
    if (launch.cluster > 1) {
      return Internal(
          StrCat("jax_aiter: ", M::kKernels[launch.kernel].symbol,
                 ": a thread-block cluster launch, which the host backend does not run"));
    }
    // A fill_device launch runs its whole cap here: the CPU runs blocks one after another, and the
    // cap is the most blocks (and so the most dgamma slots) any device may use.
    HostTwins<M>::kTwins[launch.kernel](launch.args, launch.grid, launch.block);
    return {};
  }
};

static_assert(Backend<Host>);

}  // namespace jax_aiter::runtime
