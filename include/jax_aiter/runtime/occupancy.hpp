// Resident blocks per compute unit of a loaded module's fill_device kernels, by block size,
// measured once when the module loads (cuOccupancyMaxActiveBlocksPerMultiprocessor /
// hipModuleOccupancyMaxActiveBlocksPerMultiprocessor): what a fill_device launch is sized from,
// the way CUTLASS sizes persistent grids from the SM count and occupancy. For kernels launched in
// thread-block clusters, the clusters the whole device holds at once, by cluster size
// (cuOccupancyMaxActiveClusters): a cluster must fit in one GPU processing cluster, so this is not
// the per-SM figure times the SM count.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "jax_aiter/core/status.hpp"
#include "jax_aiter/kernels/launch.hpp"

namespace jax_aiter::runtime {

class Occupancy {
 public:
  static constexpr uint32_t kGranule = 32;  // block sizes measured: 32, 64, ..., 1024 threads
  static constexpr uint32_t kSizes = 1024 / kGranule;

  Occupancy() = default;
  explicit Occupancy(int compute_units) : compute_units_(compute_units) {}

  // Appends the next kernel of the module's table. query(block_threads) -> Expected<int> resident
  // blocks is called for every measured size, only for a kernel declared fill_device: the others
  // never need it, and measuring them would only lengthen the module load.
  // cluster_query(block_threads, cluster_size) -> Expected<int> clusters on the device, for a
  // kernel declaring cluster_block, at that block size and cluster sizes 2..kMaxClusterSize; a
  // backend without clusters passes none, and a cluster launch there is refused.
  template <typename Query, typename ClusterQuery>
  Status add_kernel(const kernels::KernelInfo& info, Query&& query, ClusterQuery&& cluster_query) {
    JAX_AITER_RETURN_IF_ERROR(add_kernel(info, query));
    if (info.cluster_block != 0) {
      for (int size = 2; size <= kernels::kMaxClusterSize; ++size) {
        Expected<int> clusters = cluster_query(int{info.cluster_block}, size);
        if (!clusters) return clusters.status();
        clusters_.back()[size] = static_cast<uint16_t>(*clusters);
      }
    }
    return {};
  }
  template <typename Query>
  Status add_kernel(const kernels::KernelInfo& info, Query&& query) {
    std::array<uint16_t, kSizes> row{};
    if (info.fill_device) {
      for (uint32_t i = 0; i < kSizes; ++i) {
        Expected<int> blocks = query(static_cast<int>((i + 1) * kGranule));
        if (!blocks) return blocks.status();
        row[i] = static_cast<uint16_t>(*blocks);
      }
    }
    resident_.push_back(row);
    measured_.push_back(info.fill_device);
    clusters_.emplace_back();
    cluster_block_.push_back(info.cluster_block);
    return {};
  }

  // The grid a launch runs with: as planned, or for fill_device every compute unit's resident
  // blocks up to the planned cap. No allocation, no driver call.
  Expected<kernels::Dim3> grid(const kernels::Launch& l) const {
    if (l.cluster > 1 && !l.fill_device) {
      return Internal(
          "jax_aiter: a cluster launch must be fill_device (sized from the clusters "
          "the device holds)");
    }
    if (!l.fill_device) return l.grid;
    const uint32_t threads = l.block.x * l.block.y * l.block.z;
    if (l.kernel >= resident_.size() || threads == 0 || threads > kSizes * kGranule ||
        threads % kGranule != 0 || l.shared_bytes != 0 || l.grid.y != 1 || l.grid.z != 1) {
      return Internal(StrCat("jax_aiter: a fill_device launch needs a 1-D grid, a whole number of ",
                             kGranule, " threads up to ", kSizes * kGranule,
                             " and no dynamic shared memory; got ", threads, " threads, ",
                             l.shared_bytes, " bytes"));
    }
    if (!measured_[l.kernel]) {
      return Internal(StrCat("jax_aiter: kernel ", l.kernel,
                             " is launched fill_device but its KernelInfo does not say so"));
    }
    if (l.cluster > 1) {
      const int clusters =
          l.cluster <= kernels::kMaxClusterSize ? clusters_[l.kernel][l.cluster] : 0;
      // A block smaller than the measured one needs no more of a multiprocessor: at least as many
      // clusters fit, and a persistent grid may use fewer than fit.
      if (threads > cluster_block_[l.kernel] || clusters == 0) {
        return Internal(StrCat("jax_aiter: kernel ", l.kernel, " launched in clusters of ",
                               int{l.cluster}, " blocks of ", threads,
                               " threads: no such cluster fits this device, or the backend has no "
                               "clusters (measured for blocks of up to ",
                               cluster_block_[l.kernel], " threads)"));
      }
      return kernels::Dim3{kernels::fill_device_cluster_blocks(l.grid.x, l.cluster, clusters), 1,
                           1};
    }
    const int resident = resident_[l.kernel][threads / kGranule - 1];
    return kernels::Dim3{kernels::fill_device_blocks(l.grid.x, compute_units_, resident), 1, 1};
  }

 private:
  int compute_units_ = 1;
  std::vector<std::array<uint16_t, kSizes>> resident_;  // [kernel][block / kGranule - 1]
  std::vector<bool> measured_;                          // [kernel]: declared fill_device
  // [kernel][cluster size]: clusters on the device at the kernel's cluster_block (0: unmeasured)
  std::vector<std::array<uint16_t, kernels::kMaxClusterSize + 1>> clusters_;
  std::vector<uint16_t> cluster_block_;  // [kernel]
};

}  // namespace jax_aiter::runtime
