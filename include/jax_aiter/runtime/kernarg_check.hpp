// Checks a kernel's declared arguments (code-object metadata) against the struct we launch it with.
//
// Why: with one packed argument buffer, the HIP runtime ignores the size we pass and copies every
// argument the metadata declares from `struct + offset`. A struct shorter than the declared
// explicit arguments makes the kernel read stray host bytes; a field at another offset makes it
// read the wrong value. AITER's metadata is not uniform (gfx942 BF16 `_pf3_splitk` kernels
// declare 336 bytes without `ptr_semaphore`, gfx950 ones 352 with it), so we compare named
// offsets and require coverage, rather than demanding equal sizes.
//
// AITER's structs also change between versions, with its code objects rebuilt to match: a row
// lists the layouts it knows (kernels::AbiVariant), and match_kernel_abi picks the one a code
// object declares, or says why none fits (that AITER is newer or older than any we know).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "jax_aiter/core/status.hpp"
#include "jax_aiter/kernels/kernel.hpp"
#include "jax_aiter/runtime/code_object.hpp"

namespace jax_aiter::runtime {

namespace kernarg_check_detail {

// AITER's hand-written metadata names its slot padding "pad"; such entries carry no value.
inline bool is_padding(std::string_view name) {
  if (name.empty()) return true;
  if (!name.starts_with("pad")) return false;
  for (char c : name.substr(3)) {
    if (c < '0' || c > '9') return false;  // "pad", "pad0", "pad12"; not "padding_value"
  }
  return true;
}

// Whether the kernel receives every byte of our field `f` from its declaration `a` (same offset):
// a declaration of the same size, or a smaller one followed by padding entries up to the field's
// end. AITER's hand-written metadata declares some pointers that way (the v3 attention kernels'
// `ptr_seqstart_q@224:4`, then `pad@228:4`): the runtime copies the padding too, so all 8 bytes of
// the pointer arrive.
inline bool fed_whole(const KernelMetadata& md, const KernelArgMetadata& a,
                      const kernels::ArgField& f) {
  if (a.size >= f.size) return a.size == f.size;
  uint64_t end = uint64_t{a.offset} + a.size;
  const uint64_t want = uint64_t{f.offset} + f.size;
  while (end < want) {
    const KernelArgMetadata* next = nullptr;
    for (const auto& p : md.args) {
      if (!p.hidden() && is_padding(p.name) && p.offset == end && p.size > 0) next = &p;
    }
    if (next == nullptr) return false;
    end += next->size;
  }
  return true;
}

}  // namespace kernarg_check_detail

// OK when launching `md`'s kernel with a struct of `args_size` bytes and named `fields` feeds every
// declared argument from the field of the same name; FailedPrecondition naming the first mismatch
// otherwise.
inline Status check_kernel_arguments(const KernelMetadata& md, uint32_t args_size,
                                     std::span<const kernels::ArgField> fields) {
  bool has_hidden = false;
  for (const auto& a : md.args) has_hidden = has_hidden || a.hidden();

  // Hidden arguments (code object v5 block counts, ...) are written by the runtime, so only the
  // explicit part has to come from our struct. Without them, the whole segment does.
  const uint32_t required = has_hidden ? md.explicit_kernarg_bytes() : md.kernarg_segment_size;
  if (required > args_size) {
    if (has_hidden) {
      return FailedPrecondition(
          StrCat("jax_aiter: kernel ", md.name, " declares ", required,
                 " bytes of explicit arguments (of a ", md.kernarg_segment_size,
                 "-byte kernarg segment) but our argument struct has ", args_size, " bytes"));
    }
    return FailedPrecondition(StrCat("jax_aiter: kernel ", md.name, " declares a ", required,
                                     "-byte kernarg segment but our argument struct has ",
                                     args_size, " bytes"));
  }

  for (const auto& a : md.args) {
    if (a.hidden() || kernarg_check_detail::is_padding(a.name)) continue;
    const kernels::ArgField* field = nullptr;
    for (const auto& f : fields) {
      if (f.name == a.name) {
        field = &f;
        break;
      }
    }
    if (field == nullptr) {
      return FailedPrecondition(StrCat("jax_aiter: kernel ", md.name, ": argument '", a.name,
                                       "' (offset ", a.offset, ", size ", a.size,
                                       ") is not a field of our argument struct"));
    }
    if (field->offset != a.offset || !kernarg_check_detail::fed_whole(md, a, *field)) {
      return FailedPrecondition(StrCat("jax_aiter: kernel ", md.name, ": argument '", a.name,
                                       "': expected offset ", a.offset, " size ", a.size,
                                       " (code object), got offset ", field->offset, " size ",
                                       field->size, " (our struct)"));
    }
  }
  // Fields of ours the metadata does not declare are fine: the kernel never reads them.
  return Status::Ok();
}

// The same for the layout a plan packs for `ours` (KernelInfo's own).
inline Status check_kernel_arguments(const KernelMetadata& md, const kernels::KernelInfo& ours) {
  return check_kernel_arguments(md, ours.args_size, ours.fields);
}

// The name a report gives a layout of `ours`: a variant's, or its own (by size when unnamed).
inline std::string abi_name(const kernels::KernelInfo& ours, const kernels::AbiVariant* variant) {
  if (variant != nullptr) return std::string(variant->name);
  if (!ours.abi.empty()) return std::string(ours.abi);
  return StrCat(ours.args_size, "-byte struct");
}

// The layout of `ours` that `md`'s kernel declares: its own (nullptr) or the first of its
// variants that fits; FailedPrecondition when none does (with the one reason when `ours` knows a
// single layout, else each layout's).
inline Expected<const kernels::AbiVariant*> match_kernel_abi(const KernelMetadata& md,
                                                             const kernels::KernelInfo& ours) {
  Status own = check_kernel_arguments(md, ours);
  if (own.ok()) return static_cast<const kernels::AbiVariant*>(nullptr);
  if (ours.variants.empty()) return own;
  std::string why = StrCat(abi_name(ours, nullptr), ": ", own.message());
  for (const kernels::AbiVariant& v : ours.variants) {
    const Status st = check_kernel_arguments(md, v.args_size, v.fields);
    if (st.ok()) return &v;
    why = StrCat(why, "; ", v.name, ": ", st.message());
  }
  return FailedPrecondition(StrCat("jax_aiter: kernel ", md.name,
                                   " declares none of the argument layouts we know for it (", why,
                                   ")"));
}

}  // namespace jax_aiter::runtime
