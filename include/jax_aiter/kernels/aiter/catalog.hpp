// Every AITER code object our tables name, by family and arch: what jax-aiter-check-aiter checks a
// user's AITER checkout against, and what jax_aiter_embed_kernels() embeds from one. Each family's
// table header registers itself here when included, so adding a family edits no shared list.
#pragma once

#include <mutex>
#include <span>
#include <string_view>
#include <vector>

#include "jax_aiter/kernels/kernel.hpp"

namespace jax_aiter::kernels {

struct AiterFamily {
  std::string_view name;  // "bf16gemm"
  std::string_view arch;  // "gfx942", "gfx950"
  std::span<const KernelInfo* const> kernels;
};

class AiterCatalog {
 public:
  static void add(const AiterFamily& f) {
    if (f.kernels.empty()) return;  // a family with no kernel on that arch
    auto& c = instance();
    std::lock_guard lock(c.mutex_);
    for (const AiterFamily& g : c.families_) {
      if (g.name == f.name && g.arch == f.arch) return;  // a header included twice
    }
    c.families_.push_back(f);
  }
  static std::vector<AiterFamily> families() {
    auto& c = instance();
    std::lock_guard lock(c.mutex_);
    return c.families_;
  }

 private:
  static AiterCatalog& instance() {
    static AiterCatalog c;
    return c;
  }
  std::mutex mutex_;
  std::vector<AiterFamily> families_;
};

struct AiterFamilyRegistrar {
  explicit AiterFamilyRegistrar(std::initializer_list<AiterFamily> families) {
    for (const AiterFamily& f : families) AiterCatalog::add(f);
  }
};

}  // namespace jax_aiter::kernels
