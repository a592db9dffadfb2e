// Which device an op is planned for. Read off the device (gcnArchName, compute capability), never
// from an environment variable.
#pragma once

#include <cstdint>
#include <string_view>

#include "jax_aiter/core/status.hpp"

namespace jax_aiter {

enum class Arch : uint8_t {
  kGfx942,  // MI300X/MI300A/MI325X
  kGfx950,  // MI350X/MI355X
  kSm90,    // NVIDIA Hopper (H100/H200): the portable tier only
  kHost,    // the CPU: host twins of the kernels
};

enum class BackendKind : uint8_t { kHip, kCuda, kHost };

constexpr std::string_view name(Arch a) {
  switch (a) {
    case Arch::kGfx942: return "gfx942";
    case Arch::kGfx950: return "gfx950";
    case Arch::kSm90: return "sm_90";
    case Arch::kHost: return "host";
  }
  return "?";
}

constexpr std::string_view name(BackendKind b) {
  switch (b) {
    case BackendKind::kHip: return "hip";
    case BackendKind::kCuda: return "cuda";
    case BackendKind::kHost: return "host";
  }
  return "?";
}

// Threads that execute in lock step: a wavefront of 64 on CDNA3/CDNA4, a warp of 32 on NVIDIA.
constexpr int warp_size(Arch a) { return (a == Arch::kGfx942 || a == Arch::kGfx950) ? 64 : 32; }

// Parses hipDeviceProp_t::gcnArchName, e.g. "gfx942:sramecc+:xnack-": the processor name is what
// precedes the first ':'; the feature flags do not change which code objects run.
inline Expected<Arch> parse_gcn_arch_name(std::string_view gcn_arch_name) {
  const std::string_view processor = gcn_arch_name.substr(0, gcn_arch_name.find(':'));
  if (processor == "gfx942") return Arch::kGfx942;
  if (processor == "gfx950") return Arch::kGfx950;
  return Unimplemented(StrCat("jax_aiter: unsupported AMD GPU '", std::string(gcn_arch_name),
                              "': supported are gfx942 (MI300) and gfx950 (MI350)"));
}

// Compute capability to architecture: only Hopper has cubins in the portable tier.
inline Expected<Arch> arch_from_compute_capability(int major, int minor) {
  if (major == 9 && minor == 0) return Arch::kSm90;
  return Unimplemented(StrCat("jax_aiter: unsupported NVIDIA GPU sm_", major, minor,
                              ": the portable kernels are built for sm_90 (H100/H200)"));
}

// What a plan is made for: the device's architecture and size.
struct Target {
  BackendKind backend = BackendKind::kHost;
  Arch arch = Arch::kHost;
  int compute_units = 1;  // CUs on AMD, SMs on NVIDIA, 1 on the host
  int64_t l2_bytes = 0;   // the device's L2 cache (0 on the host)
  // The AMD device's PCI device id ("chip id": 0x74a1 MI300X, 0x74a2 MI308X, ...), which tells the
  // parts of one arch apart where AITER ships a build per part; 0 when unknown (not AMD, or not
  // readable), which plans as the arch's flagship part.
  uint32_t pci_chip_id = 0;

  constexpr int warp() const { return warp_size(arch); }
};

}  // namespace jax_aiter
