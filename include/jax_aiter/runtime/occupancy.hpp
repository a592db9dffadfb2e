// Resident blocks per compute unit of a loaded module's fill_device kernels, by block size,
// measured once when the module loads (cuOccupancyMaxActiveBlocksPerMultiprocessor /
// hipModuleOccupancyMaxActiveBlocksPerMultiprocessor): what a fill_device launch is sized from,
// the way CUTLASS sizes persistent grids from the SM count and occupancy.
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
    return {};
  }

  // The grid a launch runs with: as planned, or for fill_device every compute unit's resident
  // blocks up to the planned cap. No allocation, no driver call.
  Expected<kernels::Dim3> grid(const kernels::Launch& l) const {
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
    const int resident = resident_[l.kernel][threads / kGranule - 1];
    return kernels::Dim3{kernels::fill_device_blocks(l.grid.x, compute_units_, resident), 1, 1};
  }

 private:
  int compute_units_ = 1;
  std::vector<std::array<uint16_t, kSizes>> resident_;  // [kernel][block / kGranule - 1]
  std::vector<bool> measured_;                          // [kernel]: declared fill_device
};

}  // namespace jax_aiter::runtime
