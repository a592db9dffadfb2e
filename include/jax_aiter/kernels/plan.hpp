// What a tier's plan hands a backend: steps run in order on one stream (kernel launches and
// memsets), the workspace carved into named pieces, and a few facts worth showing (the split a
// GEMM chose, ...). Fixed capacity, so planning never allocates; plain data, unit-tested on the
// host and printed by jax-aiter-plan.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "jax_aiter/kernels/kernel.hpp"

namespace jax_aiter::kernels {

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  friend constexpr bool operator==(const Dim3&, const Dim3&) = default;
};

struct Launch {
  const KernelInfo* kernel = nullptr;
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

// Fills `bytes` bytes at `dst` with a 32-bit pattern (bytes a multiple of 4, dst 4-byte aligned):
// a stream-ordered memset, so plans that zero a workspace stay command-buffer safe.
struct Memset {
  void* dst = nullptr;
  uint64_t bytes = 0;
  uint32_t value = 0;
  std::string_view what;  // the workspace piece or operand it fills, for tools and errors
};

struct Step {
  enum class Kind : uint8_t { kLaunch, kMemset };
  Kind kind = Kind::kLaunch;
  Launch launch;
  Memset memset;
};

// Pieces of a workspace buffer, each aligned; offsets are decided before any address is known.
struct WorkspacePiece {
  std::string_view name;
  int64_t offset = 0;
  int64_t bytes = 0;
};

struct WorkspaceLayout {
  static constexpr int64_t kAlign = 256;
  std::array<WorkspacePiece, 4> pieces{};
  uint8_t count = 0;
  int64_t total = 0;

  // Appends a piece; returns its index.
  constexpr int add(std::string_view name, int64_t bytes) {
    const int64_t offset = (total + kAlign - 1) / kAlign * kAlign;
    pieces[count] = {name, offset, bytes};
    total = offset + bytes;
    return count++;
  }
  std::span<const WorkspacePiece> view() const { return {pieces.data(), count}; }
};

// A fact about the plan a tool should show (the split a GEMM chose, the rows per slot, ...).
struct PlanNote {
  std::string_view name;
  int64_t value = 0;
};

// Capacity: a backward pass of a pre-kernel, main kernel, post-kernel and their memsets, with
// room to spare.
inline constexpr size_t kMaxPlanSteps = 8;

struct Plan {
  std::array<Step, kMaxPlanSteps> steps;
  size_t count = 0;
  WorkspaceLayout workspace;
  void* workspace_base = nullptr;
  std::array<PlanNote, 6> notes{};
  uint8_t note_count = 0;

  // Appends a launch, packing its arguments in place (no copy of the argument buffer).
  template <typename Abi>
  Launch& launch(const KernelInfo& kernel, Dim3 grid, Dim3 block, const Abi& args,
                 uint32_t shared_bytes = 0) {
    Step& s = steps[count++];
    s.kind = Step::Kind::kLaunch;
    Launch& l = s.launch;
    l.kernel = &kernel;
    l.fill_device = false;
    l.cluster = 1;
    l.grid = grid;
    l.block = block;
    l.shared_bytes = shared_bytes;
    l.args.set(args);
    return l;
  }
  void memset(void* dst, uint64_t bytes, uint32_t value, std::string_view what) {
    Step& s = steps[count++];
    s.kind = Step::Kind::kMemset;
    s.memset = {dst, bytes, value, what};
  }
  // The address of a workspace piece (the plan was given the workspace's base).
  void* piece(int index) const {
    return static_cast<std::byte*>(workspace_base) + workspace.pieces[index].offset;
  }
  void note(std::string_view name, int64_t value) { notes[note_count++] = {name, value}; }

  std::span<const Step> view() const { return {steps.data(), count}; }
  std::span<const PlanNote> note_view() const { return {notes.data(), note_count}; }
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

}  // namespace jax_aiter::kernels
