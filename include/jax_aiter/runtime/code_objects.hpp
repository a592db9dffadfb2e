// Where code objects come from, by (name, arch), in this order:
//  1. embedded into the consumer's binary by jax_aiter_embed_kernels(): our portable kernels
//     always, AITER's own code objects when the build was given an AITER checkout;
//  2. AITER's hsa/ directory of a checkout the consumer names at run time
//     (CodeObjects::set_aiter_root; read once per file and kept; only regular files of bounded
//     size are read, see runtime/code_object_file.hpp, and a file there that cannot be read is
//     the lookup's error, naming it, rather than a silent fall back to the twin);
//  3. embedded ABI twins of AITER's kernels (our kernels that read AITER's argument structs),
//     stand-ins that let an AITER plan run where AITER's code objects are absent.
// A name is our module ("rmsnorm") or an AITER code object's path under hsa/<arch>/
// ("bf16gemm/bf16gemm_fp32bf16_tn_32x64_splitk_clean.co"). Lookup is a map; the bytes handed out
// stay valid and unchanged for the life of the process (nothing is ever removed or replaced).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "jax_aiter/core/status.hpp"
#include "jax_aiter/runtime/code_object_file.hpp"

namespace jax_aiter::runtime {

enum class CodeObjectKind : uint8_t {
  kOurs,   // our portable kernels
  kAiter,  // AITER's own code object
  kTwin,   // an ABI twin standing in for AITER's code object of the same name
};

constexpr std::string_view name(CodeObjectKind k) {
  switch (k) {
    case CodeObjectKind::kOurs: return "ours";
    case CodeObjectKind::kAiter: return "aiter";
    case CodeObjectKind::kTwin: return "twin";
  }
  return "?";
}

struct CodeObject {
  std::string_view name;
  std::string_view arch;
  CodeObjectKind kind;
  std::span<const std::byte> bytes;
  std::string_view origin;  // "embedded", or the file it was read from
};

class CodeObjects {
 public:
  // Called at static initialisation by the sources jax_aiter_embed_kernels() generates. A second
  // registration of the same (name, arch, kind) keeps the first.
  static void embed(std::string_view name, std::string_view arch, CodeObjectKind kind,
                    std::span<const std::byte> bytes) {
    auto& r = instance();
    std::unique_lock lock(r.mutex_);
    r.entries_.try_emplace(Key{std::string(name), std::string(arch), kind},
                           std::make_unique<Stored>(Stored{{}, "embedded", bytes}));
  }

  // The AITER checkout (its root, holding hsa/) to read AITER's code objects from when they were
  // not embedded. Set it before the first call that needs one: kernels already resolved (or
  // already found missing) keep their answer. A path that is not a directory holding hsa/ is
  // refused (and the previous root kept).
  static Status set_aiter_root(std::string_view root) {
    JAX_AITER_RETURN_IF_ERROR(check_aiter_root(std::string(root), "set_aiter_root"));
    auto& r = instance();
    std::unique_lock lock(r.mutex_);
    r.aiter_root_ = std::string(root);
    return {};
  }
  static std::string aiter_root() {
    auto& r = instance();
    std::shared_lock lock(r.mutex_);
    return r.aiter_root_;
  }

  // The code object for (name, arch) by the order above; NotFound says what was tried.
  static Expected<CodeObject> find(std::string_view name, std::string_view arch) {
    auto& r = instance();
    const std::string n(name), a(arch);
    std::string root;
    {
      std::shared_lock lock(r.mutex_);
      for (CodeObjectKind kind : {CodeObjectKind::kOurs, CodeObjectKind::kAiter}) {
        if (auto it = r.entries_.find(Key{n, a, kind}); it != r.entries_.end()) {
          return it->second->view(it->first);
        }
      }
      root = r.aiter_root_;
    }
    std::string tried = StrCat("not embedded for ", arch);
    if (!root.empty()) {
      const std::string path = StrCat(root, "/hsa/", arch, "/", name);
      std::unique_lock lock(r.mutex_);
      const Key key{n, a, CodeObjectKind::kAiter};
      if (auto it = r.entries_.find(key); it != r.entries_.end()) {
        return it->second->view(it->first);  // another thread read it meanwhile
      }
      auto bytes = read_code_object_file(path);
      if (bytes.ok()) {
        auto stored = std::make_unique<Stored>(Stored{std::move(*bytes), path, {}});
        stored->bytes = stored->owned;
        auto [it, inserted] = r.entries_.emplace(key, std::move(stored));
        return it->second->view(it->first);
      }
      // Present but unreadable (a directory, FIFO, device, a file too large): say so.
      if (bytes.status().code() != ErrorCode::kNotFound) return bytes.status();
      tried = StrCat(tried, ", not in ", path);
    } else {
      tried = StrCat(tried, ", no AITER root set");
    }
    {
      std::shared_lock lock(r.mutex_);
      if (auto it = r.entries_.find(Key{n, a, CodeObjectKind::kTwin}); it != r.entries_.end()) {
        return it->second->view(it->first);
      }
    }
    return NotFound(StrCat("jax_aiter: code object '", name, "' for ", arch, ": ", tried,
                           ", no ABI twin embedded"));
  }

  // Everything embedded (and read so far), for tools and tests.
  static std::vector<CodeObject> all() {
    auto& r = instance();
    std::shared_lock lock(r.mutex_);
    std::vector<CodeObject> out;
    for (const auto& [key, stored] : r.entries_) out.push_back(stored->view(key));
    return out;
  }

 private:
  struct Key {
    std::string name, arch;
    CodeObjectKind kind;
    friend bool operator<(const Key& a, const Key& b) {
      return std::tie(a.name, a.arch, a.kind) < std::tie(b.name, b.arch, b.kind);
    }
  };
  struct Stored {
    std::vector<std::byte> owned;  // a file's bytes; empty for embedded ones
    std::string origin;
    std::span<const std::byte> bytes;

    CodeObject view(const Key& k) const { return {k.name, k.arch, k.kind, bytes, origin}; }
  };

  static CodeObjects& instance() {
    static CodeObjects r;  // constructed on first use: safe against static-init order
    return r;
  }

  std::shared_mutex mutex_;
  // Nodes of a std::map never move, and a Stored is never replaced: views stay valid.
  std::map<Key, std::unique_ptr<Stored>> entries_;
  std::string aiter_root_;
};

// One generated source of jax_aiter_embed_kernels() registers its target's code objects with one
// of these.
struct EmbeddedCodeObject {
  const char* name;
  const char* arch;
  CodeObjectKind kind;
  const unsigned char* begin;
  const unsigned char* end;
};

struct CodeObjectRegistrar {
  explicit CodeObjectRegistrar(std::span<const EmbeddedCodeObject> objects) {
    for (const EmbeddedCodeObject& o : objects) {
      CodeObjects::embed(o.name, o.arch, o.kind,
                         std::as_bytes(std::span<const unsigned char>(o.begin, o.end)));
    }
  }
};

}  // namespace jax_aiter::runtime
