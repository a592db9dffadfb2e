// A per-device, thread-safe cache of what is loaded once per device: device facts, code-object
// modules, resolved kernels. The execute path only looks up (a shared lock, no allocation).
//
// Rules:
//  - a value is loaded at most once per (device, key), failures included: a failed load is
//    cached as a failure (the entry carries its status), so it is neither retried on every call
//    nor allowed to leak what each retry would load again;
//  - each device has its own locks, so one device loading never blocks lookups on another; on one
//    device, loads are serialised and the lookup is re-done under the load lock (another thread
//    may have finished the same load meanwhile), while lookups of present entries wait only for an
//    insertion, never for a load;
//  - entries live until process exit, so the references handed out stay valid.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <utility>

namespace jax_aiter::runtime {

template <typename Key, typename Entry, typename Hash = std::hash<Key>>
class PerDeviceCache {
 public:
  // The entry, or nullptr if none was loaded yet.
  const Entry* find(int device, const Key& key) const {
    const Shard* s = find_shard(device);
    if (s == nullptr) return nullptr;
    std::shared_lock lock(s->mutex);
    auto it = s->entries.find(key);
    return it == s->entries.end() ? nullptr : it->second.get();
  }

  // The entry for (device, key), calling load() -> Entry to make it the first time. load runs with
  // no lock but this device's load lock held: it may call into other caches, not into this one.
  template <typename Load>
  const Entry& get_or_load(int device, const Key& key, Load&& load) {
    if (const Entry* e = find(device, key)) return *e;
    Shard& s = shard(device);
    std::lock_guard serial(s.load_mutex);
    {
      std::shared_lock lock(s.mutex);
      auto it = s.entries.find(key);
      if (it != s.entries.end()) return *it->second;
    }
    auto owned = std::make_unique<Entry>(load());
    std::unique_lock lock(s.mutex);
    return *s.entries.emplace(key, std::move(owned)).first->second;
  }

  size_t size(int device) const {
    const Shard* s = find_shard(device);
    if (s == nullptr) return 0;
    std::shared_lock lock(s->mutex);
    return s->entries.size();
  }

 private:
  struct Shard {
    mutable std::shared_mutex mutex;  // guards entries
    std::mutex load_mutex;            // one load at a time on this device
    std::unordered_map<Key, std::unique_ptr<Entry>, Hash> entries;
  };

  const Shard* find_shard(int device) const {
    std::shared_lock lock(shards_mutex_);
    auto it = shards_.find(device);
    return it == shards_.end() ? nullptr : it->second.get();
  }
  Shard& shard(int device) {
    if (const Shard* s = find_shard(device)) return *const_cast<Shard*>(s);
    std::unique_lock lock(shards_mutex_);
    auto& slot = shards_[device];
    if (!slot) slot = std::make_unique<Shard>();
    return *slot;
  }

  mutable std::shared_mutex shards_mutex_;
  std::map<int, std::unique_ptr<Shard>> shards_;
};

}  // namespace jax_aiter::runtime
