// What a plan hands a backend: which kernel of a module, the launch shape, and the packed argument
// bytes the kernel reads (hipModuleLaunchKernel / cuLaunchKernelEx with a single argument buffer).
// Plain data, no GPU headers: plans are unit-tested on the host.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <type_traits>

namespace jax_aiter::kernels {

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  friend constexpr bool operator==(const Dim3&, const Dim3&) = default;
};

// The largest argument struct we pack: AITER's attention backward (704 bytes) rounded up.
inline constexpr size_t kMaxKernargBytes = 768;

// One kernel argument as the code object's metadata names it, at its offset in our struct.
struct ArgField {
  std::string_view name;
  uint32_t offset;
  uint32_t size;
};

// One kernel of a module: its symbol and the argument struct it is launched with.
struct KernelInfo {
  std::string_view symbol;
  uint32_t args_size;                // sizeof our argument struct
  std::span<const ArgField> fields;  // named fields of that struct, for the metadata check
  bool fill_device = false;  // launched fill_device: backends measure its occupancy at module load
  // Launched in thread-block clusters of blocks of up to this many threads (0: never): backends
  // that have clusters measure how many fit on the device at this size at module load, for each
  // cluster size up to kMaxClusterSize.
  uint16_t cluster_block = 0;
};

// The portable cluster size limit of sm_90 (larger ones need an opt-in per kernel).
inline constexpr int kMaxClusterSize = 8;

// Packed kernel arguments, fixed capacity so a launch never allocates. Only the first `size` bytes
// mean anything, so the buffer is not zeroed (that was most of a handler's host cost).
struct KernelArgs {
  alignas(16) std::array<std::byte, kMaxKernargBytes> bytes;
  uint32_t size = 0;

  template <typename Abi>
  void set(const Abi& abi) {
    static_assert(std::is_trivially_copyable_v<Abi>, "kernel argument structs are plain bytes");
    static_assert(sizeof(Abi) <= kMaxKernargBytes, "raise kMaxKernargBytes");
    std::memcpy(bytes.data(), &abi, sizeof(Abi));
    size = sizeof(Abi);
  }

  template <typename Abi>
  Abi unpack() const {
    Abi abi;
    std::memcpy(&abi, bytes.data(), sizeof(Abi));
    return abi;
  }
};

struct Launch {
  uint16_t kernel = 0;  // index into the module's kernel table
  // A persistent launch: grid.x is a cap, and the backend launches only as many blocks as the
  // whole device holds at once (fill_device_blocks), so none waits for a second wave. The kernel
  // must cope with any grid from 1 to the cap (it reads its own block count).
  bool fill_device = false;
  // Blocks per thread-block cluster along x (sm_90; 1: no cluster). grid.x is a whole number of
  // clusters; only a backend with clusters (CUDA) launches cluster > 1, the others refuse it.
  uint8_t cluster = 1;
  Dim3 grid;
  Dim3 block;
  uint32_t shared_bytes = 0;  // dynamic shared memory
  KernelArgs args;
};

// Blocks of a fill_device launch: every compute unit's resident blocks (the occupancy of that
// kernel at that block size), never more than the cap, at least one.
constexpr uint32_t fill_device_blocks(uint32_t cap, int compute_units, int resident_per_unit) {
  const int64_t fit = int64_t{compute_units} * resident_per_unit;
  const int64_t blocks = fit < int64_t{cap} ? fit : int64_t{cap};
  return blocks < 1 ? 1u : static_cast<uint32_t>(blocks);
}

// Blocks of a fill_device launch in clusters of `cluster` blocks: as many clusters as the device
// holds at once (measured per kernel and cluster size), never more blocks than the cap (a whole
// number of clusters), at least one cluster.
constexpr uint32_t fill_device_cluster_blocks(uint32_t cap, int cluster, int resident_clusters) {
  const int64_t clusters_cap = int64_t{cap} / cluster;
  const int64_t clusters = resident_clusters < clusters_cap ? resident_clusters : clusters_cap;
  return static_cast<uint32_t>((clusters < 1 ? 1 : clusters) * cluster);
}

// A plan's launches, in order, on one stream; fixed capacity.
template <size_t Capacity>
struct LaunchSequence {
  std::array<Launch, Capacity> launches;
  size_t count = 0;

  // Appends a launch, packing its arguments in place (no copy of the argument buffer).
  template <typename Abi>
  Launch& add(uint16_t kernel, Dim3 grid, Dim3 block, const Abi& args, uint32_t shared_bytes = 0) {
    Launch& l = launches[count++];
    l.kernel = kernel;
    l.fill_device = false;
    l.cluster = 1;
    l.grid = grid;
    l.block = block;
    l.shared_bytes = shared_bytes;
    l.args.set(args);
    return l;
  }
  std::span<const Launch> view() const { return {launches.data(), count}; }
};

}  // namespace jax_aiter::kernels

// Declares the named fields of an argument struct from its members, so offsets cannot drift.
#define JAX_AITER_ARG_FIELD(Struct, member) \
  ::jax_aiter::kernels::ArgField { #member, offsetof(Struct, member), sizeof(Struct::member) }
