// Registry of code objects embedded into the consumer's binary by jax_aiter_embed_kernels(): each
// generated translation unit registers its blob at static initialisation; backends find a blob by
// (code object name, arch) when they load a module.
#pragma once

#include <cstddef>
#include <mutex>
#include <span>
#include <string_view>
#include <vector>

namespace jax_aiter::runtime {

struct EmbeddedCodeObject {
  std::string_view name;  // module name: our op's portable kernels, or an AITER .co file stem
  std::string_view arch;  // "gfx942", "gfx950", "sm_90"
  std::span<const std::byte> bytes;
};

class EmbeddedRegistry {
 public:
  static void add(const EmbeddedCodeObject& blob) {
    auto& r = instance();
    std::lock_guard lock(r.mutex_);
    r.blobs_.push_back(blob);
  }

  static const EmbeddedCodeObject* find(std::string_view name, std::string_view arch) {
    auto& r = instance();
    std::lock_guard lock(r.mutex_);
    for (const auto& b : r.blobs_) {
      if (b.name == name && b.arch == arch) return &b;
    }
    return nullptr;
  }

  static std::vector<EmbeddedCodeObject> all() {
    auto& r = instance();
    std::lock_guard lock(r.mutex_);
    return r.blobs_;
  }

 private:
  static EmbeddedRegistry& instance() {
    static EmbeddedRegistry r;  // constructed on first use: safe against static-init order
    return r;
  }
  std::mutex mutex_;
  std::vector<EmbeddedCodeObject> blobs_;  // entries point at static storage; never freed
};

struct EmbeddedRegistrar {
  EmbeddedRegistrar(std::string_view name, std::string_view arch, const char* data, size_t size) {
    EmbeddedRegistry::add({name, arch, std::as_bytes(std::span<const char>(data, size))});
  }
};

}  // namespace jax_aiter::runtime
