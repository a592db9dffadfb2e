// jax-aiter-check-aiter as a library function: for every AITER code object our tables name
// (kernels/aiter/catalog.hpp), whether an AITER checkout has it and whether its kernel's declared
// arguments (its own metadata) match the struct we would launch it with. Users run it against
// their AITER version before building with it. Each code object that matches says which of the
// argument layouts we know for its kernel it declares (kernels::AbiVariant: AITER's structs change
// between versions) and how many kernarg bytes. Every file is read by read_code_object_file (only
// regular files, bounded in size); a file that cannot be read is a mismatch saying why, and
// nothing here throws.
#pragma once

#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "jax_aiter/core/status.hpp"
#include "jax_aiter/kernels/aiter/catalog.hpp"
#include "jax_aiter/runtime/code_object.hpp"
#include "jax_aiter/runtime/code_object_file.hpp"
#include "jax_aiter/runtime/kernarg_check.hpp"

namespace jax_aiter::runtime {

struct AiterCheck {
  std::string family, arch, code_object, symbol;
  enum class Result { kOk, kMissing, kMismatch } result = Result::kOk;
  std::string detail;     // why, for a mismatch (or an unreadable file, which counts as one)
  std::string abi;        // the layout it matched (runtime/kernarg_check.hpp abi_name), when ok
  uint32_t declared = 0;  // the kernarg bytes its metadata declares, when ok
};

inline std::string_view name(AiterCheck::Result r) {
  switch (r) {
    case AiterCheck::Result::kOk: return "ok";
    case AiterCheck::Result::kMissing: return "missing";
    case AiterCheck::Result::kMismatch: return "mismatch";
  }
  return "?";
}

namespace check_aiter_detail {

inline AiterCheck check_one(const std::string& root, const kernels::AiterFamily& f,
                            const kernels::KernelInfo& k) {
  AiterCheck c;
  c.family = f.name;
  c.arch = f.arch;
  c.code_object = k.code_object;
  c.symbol = k.symbol;
  const std::string path = StrCat(root, "/hsa/", f.arch, "/", k.code_object);
  auto raw = read_code_object_file(path);
  if (!raw.ok() && raw.status().code() == ErrorCode::kNotFound) {
    c.result = AiterCheck::Result::kMissing;
    c.detail = path;
    return c;
  }
  Status st = raw.status();
  if (st.ok()) {
    auto info = read_code_object(*raw);
    st = info.status();
    if (st.ok()) {
      const KernelMetadata* md = info->find(k.symbol);
      if (md == nullptr) {
        st = NotFound(StrCat("no kernel ", k.symbol, " in ", path));
      } else if (auto abi = match_kernel_abi(*md, k); !abi) {
        st = abi.status();
      } else {
        c.abi = abi_name(k, *abi);
        c.declared = md->kernarg_segment_size;
      }
    }
  }
  if (!st.ok()) {
    c.result = AiterCheck::Result::kMismatch;
    c.detail = st.message();
  }
  return c;
}

}  // namespace check_aiter_detail

// One row per code object our tables name. An error only when `root` is not an AITER checkout
// (no such directory, or no hsa/ in it) or memory runs out.
inline Expected<std::vector<AiterCheck>> check_aiter(std::string_view root) {
  const std::string r(root);
  JAX_AITER_RETURN_IF_ERROR(check_aiter_root(r, "check_aiter"));
  try {
    std::vector<AiterCheck> out;
    for (const kernels::AiterFamily& f : kernels::AiterCatalog::families()) {
      for (const kernels::KernelInfo* k : f.kernels) {
        out.push_back(check_aiter_detail::check_one(r, f, *k));
      }
    }
    return out;
  } catch (const std::exception& e) {  // bad_alloc: still an error value
    return Internal(StrCat("jax_aiter: check_aiter ", r, ": ", e.what()));
  }
}

}  // namespace jax_aiter::runtime
