// Reads the kernel metadata of an AMDGPU code object (ELF64, code object v3+): the msgpack
// NT_AMDGPU_METADATA note that says, per kernel, where each argument sits in the kernarg segment.
// The kernarg check (kernarg_check.hpp) compares it with our argument structs before a launch.
//
// Input is untrusted bytes (an embedded blob, a user's AITER checkout): every offset is checked
// against the buffer, msgpack sizes are capped by the payload length, nothing is reserved from a
// declared length (memory grows with what actually decodes, so it stays proportional to the bytes
// present), and no exception leaves read_code_object(); truncated or garbage input yields an
// error, never a crash.
// Format references: the ELF64 gABI and LLVM's AMDGPUUsage ("Code Object V3+ Metadata").
#pragma once

#ifndef MSGPACK_NO_BOOST
#define MSGPACK_NO_BOOST 1
#endif
#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <msgpack.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "jax_aiter/core/status.hpp"

namespace jax_aiter::runtime {

struct KernelArgMetadata {
  std::string name;  // empty when the compiler was not asked for names (and for hidden args)
  uint32_t offset = 0;
  uint32_t size = 0;
  std::string value_kind;  // "global_buffer", "by_value", "hidden_block_count_x", ...

  // Hidden arguments are filled by the runtime, not read from our argument struct.
  bool hidden() const { return std::string_view(value_kind).starts_with("hidden_"); }
};

struct KernelMetadata {
  std::string name;
  std::string symbol;  // the kernel descriptor symbol, "<name>.kd"
  uint32_t kernarg_segment_size = 0;
  uint32_t kernarg_segment_align = 0;
  uint32_t group_segment_fixed_size = 0;
  uint32_t private_segment_fixed_size = 0;
  uint32_t wavefront_size = 0;
  std::vector<KernelArgMetadata> args;  // in metadata order, hidden ones included

  // End of the last non-hidden argument (offset + size); 0 if there is none. Saturates rather
  // than wraps, so garbage metadata cannot make a huge argument look small.
  uint32_t explicit_kernarg_bytes() const {
    uint64_t end = 0;
    for (const auto& a : args) {
      if (a.hidden()) continue;
      const uint64_t e = uint64_t{a.offset} + a.size;
      if (e > end) end = e;
    }
    return end > std::numeric_limits<uint32_t>::max() ? std::numeric_limits<uint32_t>::max()
                                                      : static_cast<uint32_t>(end);
  }
};

struct CodeObjectInfo {
  std::string target;  // amdhsa.target, e.g. "amdgcn-amd-amdhsa--gfx950"; empty in v3 objects
  std::vector<KernelMetadata> kernels;

  // Matches .name, or .symbol with or without its ".kd" suffix; nullptr if none does.
  const KernelMetadata* find(std::string_view name_or_symbol) const {
    constexpr std::string_view kKd = ".kd";
    for (const auto& k : kernels) {
      const std::string_view sym = k.symbol;
      if (k.name == name_or_symbol || sym == name_or_symbol) return &k;
      if (sym.ends_with(kKd) && sym.substr(0, sym.size() - kKd.size()) == name_or_symbol) {
        return &k;
      }
    }
    return nullptr;
  }
};

namespace code_object_detail {

inline constexpr std::string_view kPrefix = "jax_aiter: code object: ";
inline constexpr uint16_t kEmAmdgpu = 0xe0;
inline constexpr uint32_t kPtNote = 4;
inline constexpr uint32_t kShtNote = 7;
inline constexpr uint32_t kNtAmdgpuMetadata = 32;
inline constexpr std::string_view kAmdgpuOwner = "AMDGPU";
inline constexpr size_t kEhdrSize = 64, kPhdrSize = 56, kShdrSize = 64;

inline std::string hex(uint64_t v) {
  constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  do {
    out.insert(out.begin(), kDigits[v & 0xf]);
    v >>= 4;
  } while (v != 0);
  if (out.size() == 1) out.insert(out.begin(), '0');
  return "0x" + out;
}

template <typename... Parts>
Status invalid(const Parts&... parts) {
  return InvalidArgument(StrCat(kPrefix, parts...));
}
template <typename... Parts>
Status data_loss(const Parts&... parts) {
  return {ErrorCode::kDataLoss, StrCat(kPrefix, parts...)};
}

// Little-endian loads that refuse to read past the end; ELF fields are fixed-width.
class Bytes {
 public:
  explicit Bytes(std::span<const std::byte> b) : b_(b) {}
  uint64_t size() const { return b_.size(); }
  // True when [off, off + len) lies inside the buffer, without overflowing.
  bool contains(uint64_t off, uint64_t len) const {
    return off <= b_.size() && len <= b_.size() - off;
  }
  uint64_t load(uint64_t off, unsigned width) const {  // caller checked contains(off, width)
    uint64_t v = 0;
    for (unsigned i = 0; i < width; ++i)
      v |= uint64_t{std::to_integer<uint8_t>(b_[off + i])} << (8 * i);
    return v;
  }
  uint16_t u16(uint64_t off) const { return static_cast<uint16_t>(load(off, 2)); }
  uint32_t u32(uint64_t off) const { return static_cast<uint32_t>(load(off, 4)); }
  uint64_t u64(uint64_t off) const { return load(off, 8); }
  std::span<const std::byte> sub(uint64_t off, uint64_t len) const { return b_.subspan(off, len); }

 private:
  std::span<const std::byte> b_;
};

struct NoteHit {
  bool found = false;
  std::span<const std::byte> payload;  // the note's descriptor: the msgpack document
};

// Walks the notes of one PT_NOTE segment or SHT_NOTE section; records the first
// NT_AMDGPU_METADATA note owned by "AMDGPU" in *hit.
inline Status find_metadata_in(const Bytes& elf, std::string_view what, uint64_t off, uint64_t size,
                               uint64_t align, NoteHit* hit) {
  if (!elf.contains(off, size)) {
    return data_loss(what, " at offset ", off, " with ", size, " bytes runs past the end of the ",
                     elf.size(), "-byte file");
  }
  if (align > 8 || (align & (align - 1)) != 0) {
    return data_loss(what, " at offset ", off, " has unsupported alignment ", align);
  }
  // Notes are 4-byte aligned even in ELF64 code objects; honour 8 where the header says so.
  const uint64_t a = align == 8 ? 8 : 4;
  auto pad = [a](uint64_t n) { return (n + a - 1) / a * a; };  // n < 2^33: no overflow
  uint64_t pos = off;
  const uint64_t end = off + size;
  while (end - pos >= 12) {
    const uint64_t namesz = elf.u32(pos), descsz = elf.u32(pos + 4), type = elf.u32(pos + 8);
    const uint64_t name_off = pos + 12;
    const uint64_t desc_off = name_off + pad(namesz);
    const uint64_t next = desc_off + pad(descsz);
    if (desc_off > end || descsz > end - desc_off) {
      return data_loss("note truncated at offset ", pos, " (name ", namesz, " bytes, descriptor ",
                       descsz, " bytes, ", end - pos, " bytes left in the ", what, ")");
    }
    // The owner is NUL-terminated within namesz; some writers omit the NUL.
    std::string_view owner(reinterpret_cast<const char*>(elf.sub(name_off, namesz).data()), namesz);
    if (!owner.empty() && owner.back() == '\0') owner.remove_suffix(1);
    if (type == kNtAmdgpuMetadata && owner == kAmdgpuOwner) {
      *hit = {true, elf.sub(desc_off, descsz)};
      return Status::Ok();
    }
    if (next >= end) break;
    pos = next;
  }
  // Fewer than 12 bytes left over is tail padding, not a note.
  return Status::Ok();
}

inline Status find_metadata_note(const Bytes& elf, NoteHit* hit) {
  if (elf.size() < 4 || elf.u32(0) != 0x464c457fu) {  // "\x7fELF"
    return invalid("not an ELF file (", elf.size(), " bytes, bad magic)");
  }
  if (elf.size() < kEhdrSize) {
    return data_loss("ELF header truncated: ", elf.size(), " of ", kEhdrSize, " bytes");
  }
  const uint8_t ei_class = static_cast<uint8_t>(elf.load(4, 1));
  const uint8_t ei_data = static_cast<uint8_t>(elf.load(5, 1));
  if (ei_class != 2) return invalid("ELF class ", int{ei_class}, " is not ELF64 (2)");
  if (ei_data != 1) return invalid("ELF data encoding ", int{ei_data}, " is not little-endian (1)");
  const uint16_t machine = elf.u16(18);
  if (machine != kEmAmdgpu) {
    return invalid("e_machine ", hex(machine), " is not AMDGPU (", hex(kEmAmdgpu), ")");
  }

  const uint64_t phoff = elf.u64(32), shoff = elf.u64(40);
  const uint64_t phentsize = elf.u16(54), phnum = elf.u16(56);
  const uint64_t shentsize = elf.u16(58), shnum = elf.u16(60);
  // Both tables must be whole: a file cut short anywhere in them is damaged, even where the note
  // itself survived.
  if (phnum != 0) {
    if (phentsize < kPhdrSize) return data_loss("e_phentsize ", phentsize, " < ", kPhdrSize);
    if (!elf.contains(phoff, phnum * phentsize)) {
      return data_loss("program header table (", phnum, " x ", phentsize, " bytes at offset ",
                       phoff, ") runs past the end of the ", elf.size(), "-byte file");
    }
  }
  if (shnum != 0) {
    if (shentsize < kShdrSize) return data_loss("e_shentsize ", shentsize, " < ", kShdrSize);
    if (!elf.contains(shoff, shnum * shentsize)) {
      return data_loss("section header table (", shnum, " x ", shentsize, " bytes at offset ",
                       shoff, ") runs past the end of the ", elf.size(), "-byte file");
    }
  }

  // Loaders read PT_NOTE; relocatable objects have only sections. Same note, either route.
  for (uint64_t i = 0; i < phnum; ++i) {
    const uint64_t ph = phoff + i * phentsize;
    if (elf.u32(ph) != kPtNote) continue;
    JAX_AITER_RETURN_IF_ERROR(find_metadata_in(elf, "PT_NOTE segment", elf.u64(ph + 8),
                                               elf.u64(ph + 32), elf.u64(ph + 48), hit));
    if (hit->found) return Status::Ok();
  }
  for (uint64_t i = 0; i < shnum; ++i) {
    const uint64_t sh = shoff + i * shentsize;
    if (elf.u32(sh + 4) != kShtNote) continue;
    JAX_AITER_RETURN_IF_ERROR(find_metadata_in(elf, "SHT_NOTE section", elf.u64(sh + 24),
                                               elf.u64(sh + 32), elf.u64(sh + 48), hit));
    if (hit->found) return Status::Ok();
  }
  return invalid("no NT_AMDGPU_METADATA note (", phnum, " program headers, ", shnum,
                 " sections searched)");
}

// Typed access to the msgpack document without msgpack's throwing converters.
inline const msgpack::object* member(const msgpack::object& map, std::string_view key) {
  if (map.type != msgpack::type::MAP) return nullptr;
  for (uint32_t i = 0; i < map.via.map.size; ++i) {
    const auto& kv = map.via.map.ptr[i];
    if (kv.key.type == msgpack::type::STR &&
        std::string_view(kv.key.via.str.ptr, kv.key.via.str.size) == key) {
      return &kv.val;
    }
  }
  return nullptr;
}

// Reads an optional (or, when required, mandatory) string / uint32 member; `where` names the
// enclosing entry in the error.
inline Status get_string(const msgpack::object& map, std::string_view key, bool required,
                         const std::string& where, std::string* out) {
  const msgpack::object* v = member(map, key);
  if (v == nullptr)
    return required ? data_loss("metadata: ", where, ": ", key, " is missing") : Status();
  if (v->type != msgpack::type::STR)
    return data_loss("metadata: ", where, ": ", key, " is not a string");
  out->assign(v->via.str.ptr, v->via.str.size);
  return Status::Ok();
}

inline Status get_u32(const msgpack::object& map, std::string_view key, bool required,
                      const std::string& where, uint32_t* out) {
  const msgpack::object* v = member(map, key);
  if (v == nullptr)
    return required ? data_loss("metadata: ", where, ": ", key, " is missing") : Status();
  if (v->type != msgpack::type::POSITIVE_INTEGER ||
      v->via.u64 > std::numeric_limits<uint32_t>::max()) {
    return data_loss("metadata: ", where, ": ", key, " is not an unsigned 32-bit integer");
  }
  *out = static_cast<uint32_t>(v->via.u64);
  return Status::Ok();
}

inline Status decode_kernel(const msgpack::object& obj, size_t index, KernelMetadata* k) {
  std::string where = StrCat("kernel ", index);
  if (obj.type != msgpack::type::MAP) return data_loss("metadata: ", where, " is not a map");
  JAX_AITER_RETURN_IF_ERROR(get_string(obj, ".name", true, where, &k->name));
  where = StrCat("kernel ", index, " (", k->name, ")");
  JAX_AITER_RETURN_IF_ERROR(get_string(obj, ".symbol", true, where, &k->symbol));
  JAX_AITER_RETURN_IF_ERROR(
      get_u32(obj, ".kernarg_segment_size", true, where, &k->kernarg_segment_size));
  // Optional here though the spec requires them: hand-written AITER metadata need not be complete.
  JAX_AITER_RETURN_IF_ERROR(
      get_u32(obj, ".kernarg_segment_align", false, where, &k->kernarg_segment_align));
  JAX_AITER_RETURN_IF_ERROR(
      get_u32(obj, ".group_segment_fixed_size", false, where, &k->group_segment_fixed_size));
  JAX_AITER_RETURN_IF_ERROR(
      get_u32(obj, ".private_segment_fixed_size", false, where, &k->private_segment_fixed_size));
  JAX_AITER_RETURN_IF_ERROR(get_u32(obj, ".wavefront_size", false, where, &k->wavefront_size));

  const msgpack::object* args = member(obj, ".args");
  if (args == nullptr) return Status::Ok();  // a kernel without arguments may omit .args
  if (args->type != msgpack::type::ARRAY)
    return data_loss("metadata: ", where, ": .args is not an array");
  // No reservation from the declared length: it is the untrusted part. The vector grows with the
  // arguments actually decoded.
  for (uint32_t i = 0; i < args->via.array.size; ++i) {
    const msgpack::object& a = args->via.array.ptr[i];
    const std::string at = StrCat(where, ": argument ", i);
    if (a.type != msgpack::type::MAP) return data_loss("metadata: ", at, " is not a map");
    KernelArgMetadata arg;
    JAX_AITER_RETURN_IF_ERROR(get_string(a, ".name", false, at, &arg.name));
    JAX_AITER_RETURN_IF_ERROR(get_u32(a, ".offset", true, at, &arg.offset));
    JAX_AITER_RETURN_IF_ERROR(get_u32(a, ".size", true, at, &arg.size));
    JAX_AITER_RETURN_IF_ERROR(get_string(a, ".value_kind", true, at, &arg.value_kind));
    k->args.push_back(std::move(arg));
  }
  return Status::Ok();
}

inline Status decode_metadata(std::span<const std::byte> payload, CodeObjectInfo* info) {
  const auto* data = reinterpret_cast<const char*>(payload.data());
  const size_t n = payload.size();
  // Every array element takes at least one byte and every map entry two, so these caps refuse
  // a forged length before msgpack allocates for it.
  const msgpack::unpack_limit limit(n, n / 2, n, n, n, /*depth=*/32);
  msgpack::object_handle handle;
  size_t off = 0;
  try {
    handle = msgpack::unpack(data, n, off, nullptr, nullptr, limit);
  } catch (const std::exception& e) {
    return data_loss("metadata note (", n, " bytes) is not valid msgpack: ", e.what());
  }
  const msgpack::object& root = handle.get();
  if (root.type != msgpack::type::MAP) return data_loss("metadata: the root is not a map");
  JAX_AITER_RETURN_IF_ERROR(get_string(root, "amdhsa.target", false, "document", &info->target));
  const msgpack::object* kernels = member(root, "amdhsa.kernels");
  if (kernels == nullptr) return data_loss("metadata: amdhsa.kernels is missing");
  if (kernels->type != msgpack::type::ARRAY)
    return data_loss("metadata: amdhsa.kernels is not an array");
  // Grown one decoded kernel at a time, never sized from the declared length.
  for (uint32_t i = 0; i < kernels->via.array.size; ++i) {
    KernelMetadata k;
    JAX_AITER_RETURN_IF_ERROR(decode_kernel(kernels->via.array.ptr[i], i, &k));
    info->kernels.push_back(std::move(k));
  }
  return Status::Ok();
}

}  // namespace code_object_detail

// Parses `elf` (an AMDGPU ELF64 code object) and decodes its kernel metadata. Errors:
// kInvalidArgument when the bytes are not an AMDGPU ELF64 code object with a metadata note,
// kDataLoss when they are damaged (truncated tables or notes, malformed msgpack).
inline Expected<CodeObjectInfo> read_code_object(std::span<const std::byte> elf) {
  namespace d = code_object_detail;
  try {
    d::NoteHit hit;
    JAX_AITER_RETURN_IF_ERROR(d::find_metadata_note(d::Bytes(elf), &hit));
    CodeObjectInfo info;
    JAX_AITER_RETURN_IF_ERROR(d::decode_metadata(hit.payload, &info));
    return info;
  } catch (const std::exception& e) {  // bad_alloc and the like: still an error value
    return Status(ErrorCode::kInternal, StrCat(d::kPrefix, "unexpected exception: ", e.what()));
  } catch (...) {
    return Status(ErrorCode::kInternal, StrCat(d::kPrefix, "unexpected exception"));
  }
}

}  // namespace jax_aiter::runtime
