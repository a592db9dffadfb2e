// The index of a named tile in a kernel family's tile table, for the portable tiers' rules (which
// name their wgmma and decode tiles) and their static_asserts.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

namespace jax_aiter::kernels {

// The index of the tile named `name` in `tiles` (tiles.size() when there is none).
template <class Tile>
constexpr size_t tile_index(std::span<const Tile> tiles, std::string_view name) {
  for (size_t i = 0; i < tiles.size(); ++i) {
    if (tiles[i].name == name) return i;
  }
  return tiles.size();
}

}  // namespace jax_aiter::kernels
