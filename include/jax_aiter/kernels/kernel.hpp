// What names a kernel and what it reads: the code object that holds it, its symbol, and the packed
// argument struct it is launched with (hipModuleLaunchKernel / cuLaunchKernelEx with one argument
// buffer). Plain data, no GPU headers: a plan refers to kernels by these descriptions, and each
// backend resolves one on first use (runtime/).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <type_traits>

namespace jax_aiter::kernels {

// How a tool prints an argument's bytes; the metadata check compares offsets and sizes only.
enum class ArgKind : uint8_t { kPointer, kI32, kU32, kF32, kI64, kU64 };

// One kernel argument as the code object's metadata names it, at its offset in our struct.
struct ArgField {
  std::string_view name;
  uint32_t offset;
  uint32_t size;
  ArgKind kind;
};

struct KernelArgs;

// Another argument layout a kernel of a row may declare. AITER changes an argument struct between
// versions and rebuilds its code objects with it (the v3 backward's odo pass: 208 bytes with
// shared o / do strides before 17d4a33b6f, 2026-03-23; 256 with separate ones since), so which
// layout a code object reads depends on the AITER checkout. A row lists the layouts it knows
// besides the one its plan packs (KernelInfo's own); the backend that loads AITER's code object
// picks the first its metadata matches, and repacks the plan's bytes into it at each launch.
struct AbiVariant {
  std::string_view name;             // for reports: "odo-208 (AITER before 17d4a33b6f)"
  uint32_t args_size;                // sizeof the layout's struct
  std::span<const ArgField> fields;  // its named fields, as the metadata names them
  // The plan's bytes (KernelInfo's layout) in this layout; false when the call cannot be said in
  // it (then the launch fails, naming the layout).
  bool (*repack)(const KernelArgs& packed, KernelArgs& out);
};

// One kernel: where it lives and the argument struct it reads.
struct KernelInfo {
  // The code object holding the kernel. AITER's are named by their path under hsa/<arch>/
  // ("bf16gemm/bf16gemm_fp32bf16_tn_32x64_splitk_clean.co"); ours by module ("rmsnorm").
  std::string_view code_object;
  std::string_view symbol;
  uint32_t args_size;                // sizeof our argument struct
  std::span<const ArgField> fields;  // its named fields, for the metadata check and for tools
  bool fill_device = false;  // launched fill_device: its occupancy is measured when it resolves
  // Launched in thread-block clusters of blocks of up to this many threads (0: never): backends
  // with clusters measure how many fit on the device at this size, for each cluster size up to
  // kMaxClusterSize.
  uint16_t cluster_block = 0;
  // The name of the layout above, for reports ("" : "<args_size>-byte struct"), and the other
  // layouts AITER's code objects of this kernel may declare (AbiVariant).
  std::string_view abi = {};
  std::span<const AbiVariant> variants = {};
  // The dynamic shared memory its launches give it (0: none). Above 48 KiB a CUDA kernel must opt
  // in once (the CUDA backend does when it resolves the kernel).
  uint32_t dynamic_shared = 0;
};

// The portable cluster size limit of sm_90 (larger ones need an opt-in per kernel).
inline constexpr int kMaxClusterSize = 8;

// The largest argument struct we pack: AITER's attention backward (704 bytes) rounded up.
inline constexpr size_t kMaxKernargBytes = 768;

// Packed kernel arguments, fixed capacity so a launch never allocates. Only the first `size` bytes
// mean anything, so the buffer is not zeroed (that was most of a handler's host cost).
struct KernelArgs {
  alignas(16) std::array<std::byte, kMaxKernargBytes> bytes;
  uint32_t size = 0;

  template <typename Abi>
  void set(const Abi& abi) {
    static_assert(std::is_trivially_copyable_v<Abi>, "kernel argument structs are plain bytes");
    static_assert(sizeof(Abi) <= kMaxKernargBytes, "raise kMaxKernargBytes");
    std::memcpy(bytes.data(), &abi, sizeof(Abi));
    size = sizeof(Abi);
  }

  template <typename Abi>
  Abi unpack() const {
    Abi abi;
    std::memcpy(&abi, bytes.data(), sizeof(Abi));
    return abi;
  }
};

// AITER's ASM kernels read each argument from a 16-byte slot: the value, then padding (pointer +
// 8 bytes, 4-byte scalar + 12). A struct of Slot members has those offsets with no hand-written
// padding; `args.M = m` stores the value. Value-initialise the struct so every pad byte is zero.
template <typename T, size_t kBytes = 16>
struct Slot {
  static_assert(sizeof(T) < kBytes && std::is_trivially_copyable_v<T>);
  T value;
  std::byte pad[kBytes - sizeof(T)];

  Slot& operator=(T v) {
    value = v;
    return *this;
  }
};

namespace detail {

template <typename T>
struct FieldValue {
  using type = T;
};
template <typename T, size_t kBytes>
struct FieldValue<Slot<T, kBytes>> {
  using type = T;
};

template <typename T>
constexpr ArgKind arg_kind() {
  if constexpr (std::is_pointer_v<T>) {
    return ArgKind::kPointer;
  } else if constexpr (std::is_same_v<T, float>) {
    return ArgKind::kF32;
  } else {
    static_assert(std::is_integral_v<T> && (sizeof(T) == 4 || sizeof(T) == 8),
                  "kernel arguments are pointers, float, or 32/64-bit integers");
    if constexpr (sizeof(T) == 4) return std::is_signed_v<T> ? ArgKind::kI32 : ArgKind::kU32;
    return std::is_signed_v<T> ? ArgKind::kI64 : ArgKind::kU64;
  }
}

}  // namespace detail

}  // namespace jax_aiter::kernels

// Declares the named field of an argument struct from its member (a Slot's value for slotted
// structs), so offsets, sizes and kinds cannot drift from the struct.
#define JAX_AITER_ARG_FIELD(Struct, member)                                                 \
  ::jax_aiter::kernels::ArgField {                                                          \
#member, offsetof(Struct, member),                                                      \
        sizeof(::jax_aiter::kernels::detail::FieldValue <decltype(Struct::member)>::type),  \
        ::jax_aiter::kernels::detail::arg_kind < ::jax_aiter::kernels::detail::FieldValue < \
            decltype(Struct::member)> ::type>()                                             \
  }
// The same, for a struct whose member names differ from the code object's argument names (AITER's
// metadata says "Mdim" where its C++ struct says "M").
#define JAX_AITER_NAMED_ARG_FIELD(Struct, member, metadata_name)                          \
  ::jax_aiter::kernels::ArgField {                                                        \
    metadata_name, offsetof(Struct, member),                                              \
        sizeof(::jax_aiter::kernels::detail::FieldValue<decltype(Struct::member)>::type), \
        ::jax_aiter::kernels::detail::arg_kind<                                           \
            ::jax_aiter::kernels::detail::FieldValue<decltype(Struct::member)>::type>()   \
  }
