// Per-device, thread-safe cache of loaded modules. Loading happens once per (device, module), in
// the FFI initialize stage; the execute path only looks up, under a shared lock, with no
// allocation. Entries live until process exit so the pointers handed out stay valid.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <utility>

#include "jax_aiter/core/status.hpp"

namespace jax_aiter::runtime {

template <typename Entry>
class PerDeviceCache {
 public:
  using Key = std::pair<int, const void*>;  // (device ordinal, module tag)

  const Entry* find(int device, const void* tag) const {
    std::shared_lock lock(mutex_);
    auto it = entries_.find(Key{device, tag});
    return it == entries_.end() ? nullptr : it->second.get();
  }

  // Load is called at most once per key, under the exclusive lock; a failed load is not cached,
  // so a later call can retry (e.g. after the user fixed the environment).
  template <typename Load>
  Expected<const Entry*> get_or_load(int device, const void* tag, Load&& load) {
    if (const Entry* e = find(device, tag)) return e;
    std::unique_lock lock(mutex_);
    auto it = entries_.find(Key{device, tag});
    if (it != entries_.end()) return static_cast<const Entry*>(it->second.get());
    Expected<Entry> loaded = load();
    if (!loaded) return loaded.status();
    auto owned = std::make_unique<Entry>(std::move(loaded).value());
    const Entry* raw = owned.get();
    entries_.emplace(Key{device, tag}, std::move(owned));
    return raw;
  }

 private:
  mutable std::shared_mutex mutex_;
  std::map<Key, std::unique_ptr<Entry>> entries_;
};

}  // namespace jax_aiter::runtime
