// Resident blocks per compute unit of one fill_device kernel, by block size, measured once when the
// kernel resolves on a device (cuOccupancyMaxActiveBlocksPerMultiprocessor /
// hipModuleOccupancyMaxActiveBlocksPerMultiprocessor): what a fill_device launch is sized from,
// the way CUTLASS sizes persistent grids from the SM count and occupancy. For a kernel launched in
// thread-block clusters, the clusters the whole device holds at once, by cluster size
// (cuOccupancyMaxActiveClusters): a cluster must fit in one GPU processing cluster, so this is not
// the per-SM figure times the SM count. Kernels not declared fill_device measure nothing.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "jax_aiter/core/status.hpp"
#include "jax_aiter/kernels/kernel.hpp"
#include "jax_aiter/kernels/plan.hpp"

namespace jax_aiter::runtime {

class KernelOccupancy {
 public:
  static constexpr uint32_t kGranule = 32;  // block sizes measured: 32, 64, ..., 1024 threads
  static constexpr uint32_t kSizes = 1024 / kGranule;

  KernelOccupancy() = default;

  // query(block_threads) -> Expected<int> resident blocks, called for every measured size, only
  // for a kernel declared fill_device. cluster_query(block_threads, cluster_size) -> Expected<int>
  // clusters on the device, for a kernel declaring cluster_block, at that block size and cluster
  // sizes 2..kMaxClusterSize; a backend without clusters passes nullptr, and a cluster launch
  // there is refused.
  template <typename Query, typename ClusterQuery = std::nullptr_t>
  static Expected<KernelOccupancy> measure(const kernels::KernelInfo& info, int compute_units,
                                           Query&& query, ClusterQuery&& cluster_query = nullptr) {
    KernelOccupancy o;
    o.symbol_ = info.symbol;
    o.compute_units_ = compute_units;
    o.measured_ = info.fill_device;
    if (info.fill_device) {
      for (uint32_t i = 0; i < kSizes; ++i) {
        Expected<int> blocks = query(static_cast<int>((i + 1) * kGranule));
        if (!blocks) return blocks.status();
        o.resident_[i] = static_cast<uint16_t>(*blocks);
      }
    }
    if constexpr (!std::is_same_v<std::decay_t<ClusterQuery>, std::nullptr_t>) {
      if (info.cluster_block != 0) {
        o.cluster_block_ = info.cluster_block;
        for (int size = 2; size <= kernels::kMaxClusterSize; ++size) {
          Expected<int> clusters = cluster_query(int{info.cluster_block}, size);
          if (!clusters) return clusters.status();
          o.clusters_[size] = static_cast<uint16_t>(*clusters);
        }
      }
    }
    return o;
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
    if (threads == 0 || threads > kSizes * kGranule || threads % kGranule != 0 ||
        l.shared_bytes != 0 || l.grid.y != 1 || l.grid.z != 1) {
      return Internal(StrCat("jax_aiter: a fill_device launch needs a 1-D grid, a whole number of ",
                             kGranule, " threads up to ", kSizes * kGranule,
                             " and no dynamic shared memory; got ", threads, " threads, ",
                             l.shared_bytes, " bytes"));
    }
    if (!measured_) {
      return Internal(StrCat("jax_aiter: kernel ", symbol_,
                             " is launched fill_device but its KernelInfo does not say so"));
    }
    if (l.cluster > 1) {
      const int clusters = l.cluster <= kernels::kMaxClusterSize ? clusters_[l.cluster] : 0;
      // A block smaller than the measured one needs no more of a multiprocessor: at least as many
      // clusters fit, and a persistent grid may use fewer than fit.
      if (threads > cluster_block_ || clusters == 0) {
        return Internal(StrCat("jax_aiter: kernel ", symbol_, " launched in clusters of ",
                               int{l.cluster}, " blocks of ", threads,
                               " threads: no such cluster fits this device, or the backend has no "
                               "clusters (measured for blocks of up to ",
                               cluster_block_, " threads)"));
      }
      return kernels::Dim3{kernels::fill_device_cluster_blocks(l.grid.x, l.cluster, clusters), 1,
                           1};
    }
    const int resident = resident_[threads / kGranule - 1];
    return kernels::Dim3{kernels::fill_device_blocks(l.grid.x, compute_units_, resident), 1, 1};
  }

 private:
  std::string_view symbol_;
  int compute_units_ = 1;
  bool measured_ = false;
  std::array<uint16_t, kSizes> resident_{};  // [block / kGranule - 1]
  // [cluster size]: clusters on the device at cluster_block_ threads (0: unmeasured)
  std::array<uint16_t, kernels::kMaxClusterSize + 1> clusters_{};
  uint16_t cluster_block_ = 0;
};

}  // namespace jax_aiter::runtime
