// jax-aiter-check-aiter as a library function: for every AITER code object our tables name
// (kernels/aiter/catalog.hpp), whether an AITER checkout has it and whether its kernel's declared
// arguments (its own metadata) match the struct we would launch it with. Users run it against
// their AITER version before building with it.
#pragma once

#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "jax_aiter/core/status.hpp"
#include "jax_aiter/kernels/aiter/catalog.hpp"
#include "jax_aiter/runtime/code_object.hpp"
#include "jax_aiter/runtime/kernarg_check.hpp"

namespace jax_aiter::runtime {

struct AiterCheck {
  std::string family, arch, code_object, symbol;
  enum class Result { kOk, kMissing, kMismatch } result = Result::kOk;
  std::string detail;  // why, for a mismatch (or an unreadable file, which counts as one)
};

inline std::string_view name(AiterCheck::Result r) {
  switch (r) {
    case AiterCheck::Result::kOk: return "ok";
    case AiterCheck::Result::kMissing: return "missing";
    case AiterCheck::Result::kMismatch: return "mismatch";
  }
  return "?";
}

inline std::vector<AiterCheck> check_aiter(std::string_view root) {
  std::vector<AiterCheck> out;
  for (const kernels::AiterFamily& f : kernels::AiterCatalog::families()) {
    for (const kernels::KernelInfo* k : f.kernels) {
      AiterCheck c;
      c.family = f.name;
      c.arch = f.arch;
      c.code_object = k->code_object;
      c.symbol = k->symbol;
      const std::string path = StrCat(root, "/hsa/", f.arch, "/", k->code_object);
      std::ifstream file(path, std::ios::binary);
      if (!file) {
        c.result = AiterCheck::Result::kMissing;
        c.detail = path;
        out.push_back(std::move(c));
        continue;
      }
      const std::vector<char> raw((std::istreambuf_iterator<char>(file)),
                                  std::istreambuf_iterator<char>());
      auto info = read_code_object(std::as_bytes(std::span<const char>(raw)));
      Status st = info.status();
      if (st.ok()) {
        const KernelMetadata* md = info->find(k->symbol);
        st = md == nullptr ? NotFound(StrCat("no kernel ", k->symbol, " in ", path))
                           : check_kernel_arguments(*md, *k);
      }
      if (!st.ok()) {
        c.result = AiterCheck::Result::kMismatch;
        c.detail = st.message();
      }
      out.push_back(std::move(c));
    }
  }
  return out;
}

}  // namespace jax_aiter::runtime
