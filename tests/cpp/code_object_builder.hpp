// Hand-built AMDGPU code objects for the reader's tests: a minimal ELF64 with a metadata note in a
// PT_NOTE segment or an SHT_NOTE section, and msgpack metadata laid out the way LLVM writes it.
#pragma once

#ifndef MSGPACK_NO_BOOST
#define MSGPACK_NO_BOOST 1
#endif
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <msgpack.hpp>
#include <string_view>
#include <vector>

#include "jax_aiter/runtime/code_object.hpp"

namespace code_object_builder {

using Bytes = std::vector<std::byte>;
using jax_aiter::runtime::KernelMetadata;

inline void put_u16(Bytes& b, size_t off, uint16_t v) {
  for (int i = 0; i < 2; ++i) b[off + i] = std::byte(v >> (8 * i));
}
inline void put_u32(Bytes& b, size_t off, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[off + i] = std::byte(v >> (8 * i));
}
inline void put_u64(Bytes& b, size_t off, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[off + i] = std::byte(v >> (8 * i));
}
inline uint32_t get_u32(const Bytes& b, size_t off) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t{std::to_integer<uint8_t>(b[off + i])} << (8 * i);
  return v;
}

// One ELF note: header, NUL-terminated owner padded to 4, descriptor padded to 4.
inline Bytes make_note(std::string_view owner, uint32_t type, const Bytes& desc) {
  const size_t namesz = owner.size() + 1;
  Bytes out(12 + (namesz + 3) / 4 * 4 + (desc.size() + 3) / 4 * 4);
  put_u32(out, 0, static_cast<uint32_t>(namesz));
  put_u32(out, 4, static_cast<uint32_t>(desc.size()));
  put_u32(out, 8, type);
  std::memcpy(out.data() + 12, owner.data(), owner.size());
  if (!desc.empty()) std::memcpy(out.data() + 12 + (namesz + 3) / 4 * 4, desc.data(), desc.size());
  return out;
}

enum class NoteIn { kSegment, kSection };

// A minimal AMDGPU ELF64 holding `notes` in one PT_NOTE segment (with a PT_LOAD before it) or in
// one SHT_NOTE section (relocatable-object style, no program headers).
inline Bytes make_elf(const Bytes& notes, NoteIn where = NoteIn::kSegment,
                      uint16_t machine = 0xe0) {
  constexpr size_t kEhdr = 64, kPhdr = 56, kShdr = 64;
  const bool seg = where == NoteIn::kSegment;
  const size_t phnum = seg ? 2 : 0, shnum = seg ? 0 : 2;
  const size_t notes_off = kEhdr + phnum * kPhdr;
  const size_t shoff = (notes_off + notes.size() + 7) / 8 * 8;
  Bytes b(shoff + shnum * kShdr);
  const unsigned char ident[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 64 /*ELFOSABI_AMDGPU_HSA*/, 3};
  std::memcpy(b.data(), ident, sizeof ident);
  put_u16(b, 16, seg ? 3 : 1);  // ET_DYN / ET_REL
  put_u16(b, 18, machine);
  put_u32(b, 20, 1);
  put_u64(b, 32, seg ? kEhdr : 0);
  put_u64(b, 40, seg ? 0 : shoff);
  put_u16(b, 52, kEhdr);
  put_u16(b, 54, kPhdr);
  put_u16(b, 56, static_cast<uint16_t>(phnum));
  put_u16(b, 58, kShdr);
  put_u16(b, 60, static_cast<uint16_t>(shnum));
  if (seg) {
    put_u32(b, kEhdr, 1);  // PT_LOAD over everything, to be skipped
    put_u64(b, kEhdr + 32, b.size());
    const size_t ph = kEhdr + kPhdr;
    put_u32(b, ph, 4);  // PT_NOTE
    put_u64(b, ph + 8, notes_off);
    put_u64(b, ph + 32, notes.size());
    put_u64(b, ph + 48, 4);
  } else {
    const size_t sh = shoff + kShdr;  // section 0 stays SHT_NULL
    put_u32(b, sh + 4, 7);            // SHT_NOTE
    put_u64(b, sh + 24, notes_off);
    put_u64(b, sh + 32, notes.size());
    put_u64(b, sh + 48, 4);
  }
  if (!notes.empty()) std::memcpy(b.data() + notes_off, notes.data(), notes.size());
  return b;
}

inline Bytes from_sbuffer(const msgpack::sbuffer& sb) {
  Bytes out(sb.size());
  if (sb.size() != 0) std::memcpy(out.data(), sb.data(), sb.size());
  return out;
}

inline void pack_str(msgpack::packer<msgpack::sbuffer>& pk, std::string_view s) {
  pk.pack_str(static_cast<uint32_t>(s.size()));
  pk.pack_str_body(s.data(), static_cast<uint32_t>(s.size()));
}

// Packs KernelMetadata the way LLVM lays out the document (only the keys the reader uses).
inline Bytes pack_metadata(std::string_view target, const std::vector<KernelMetadata>& kernels) {
  msgpack::sbuffer sb;
  msgpack::packer<msgpack::sbuffer> pk(sb);
  pk.pack_map(2);
  pack_str(pk, "amdhsa.kernels");
  pk.pack_array(static_cast<uint32_t>(kernels.size()));
  for (const auto& k : kernels) {
    pk.pack_map(8);
    pack_str(pk, ".args");
    pk.pack_array(static_cast<uint32_t>(k.args.size()));
    for (const auto& a : k.args) {
      pk.pack_map(a.name.empty() ? 3 : 4);
      if (!a.name.empty()) {
        pack_str(pk, ".name");
        pack_str(pk, a.name);
      }
      pack_str(pk, ".offset");
      pk.pack(a.offset);
      pack_str(pk, ".size");
      pk.pack(a.size);
      pack_str(pk, ".value_kind");
      pack_str(pk, a.value_kind);
    }
    pack_str(pk, ".group_segment_fixed_size");
    pk.pack(k.group_segment_fixed_size);
    pack_str(pk, ".kernarg_segment_align");
    pk.pack(k.kernarg_segment_align);
    pack_str(pk, ".kernarg_segment_size");
    pk.pack(k.kernarg_segment_size);
    pack_str(pk, ".name");
    pack_str(pk, k.name);
    pack_str(pk, ".private_segment_fixed_size");
    pk.pack(k.private_segment_fixed_size);
    pack_str(pk, ".symbol");
    pack_str(pk, k.symbol);
    pack_str(pk, ".wavefront_size");
    pk.pack(k.wavefront_size);
  }
  pack_str(pk, "amdhsa.target");
  pack_str(pk, target);
  return from_sbuffer(sb);
}

inline Bytes metadata_elf(const Bytes& payload, NoteIn where = NoteIn::kSegment) {
  return make_elf(make_note("AMDGPU", 32, payload), where);
}

}  // namespace code_object_builder
