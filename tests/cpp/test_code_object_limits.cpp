// The code-object reader's memory stays proportional to the bytes actually present: a metadata
// note that declares a huge array must not make the reader reserve room for it. (It did: a
// 15 MiB note declaring 15 million kernels made read_code_object ask for a 2.1 GiB vector.)
// A separate executable: it replaces the global operator new to see every allocation's size.
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

#include "code_object_builder.hpp"
#include "jax_aiter/runtime/code_object.hpp"

namespace {
std::atomic<size_t> g_largest{0};
void* counted(size_t n) {
  size_t seen = g_largest.load();
  while (n > seen && !g_largest.compare_exchange_weak(seen, n)) {
  }
  void* p = std::malloc(n ? n : 1);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
}  // namespace

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(size_t n) { return counted(n); }
void* operator new[](size_t n) { return counted(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace {

using namespace code_object_builder;

// {"amdhsa.kernels": [nil x count]} (array32 header): 5 bytes of header claim `count` kernels,
// one byte each.
Bytes huge_kernel_array(uint32_t count) {
  msgpack::sbuffer sb;
  msgpack::packer<msgpack::sbuffer> pk(sb);
  pk.pack_map(1);
  pack_str(pk, "amdhsa.kernels");
  pk.pack_array(count);
  for (uint32_t i = 0; i < count; ++i) pk.pack_nil();
  return from_sbuffer(sb);
}

TEST(CodeObjectLimits, ADeclaredArrayLengthReservesNothing) {
  constexpr uint32_t kCount = 15u << 20;  // a 15 MiB note
  const Bytes elf = metadata_elf(huge_kernel_array(kCount));
  g_largest = 0;
  auto info = jax_aiter::runtime::read_code_object(elf);
  ASSERT_FALSE(info.ok());  // kernel 0 is not a map
  EXPECT_NE(info.status().message().find("kernel 0 is not a map"), std::string::npos)
      << info.status().message();
  // Nothing close to kCount elements of anything: the largest single request is far below the
  // 15 MiB the note occupies.
  EXPECT_LT(g_largest.load(), size_t{1} << 20) << "largest allocation " << g_largest.load();
}

// The same for a kernel's .args array.
TEST(CodeObjectLimits, ADeclaredArgumentCountReservesNothing) {
  msgpack::sbuffer sb;
  msgpack::packer<msgpack::sbuffer> pk(sb);
  pk.pack_map(1);
  pack_str(pk, "amdhsa.kernels");
  pk.pack_array(1);
  pk.pack_map(4);
  pack_str(pk, ".name");
  pack_str(pk, "k");
  pack_str(pk, ".symbol");
  pack_str(pk, "k.kd");
  pack_str(pk, ".kernarg_segment_size");
  pk.pack(uint32_t{8});
  pack_str(pk, ".args");
  constexpr uint32_t kArgs = 4u << 20;
  pk.pack_array(kArgs);
  for (uint32_t i = 0; i < kArgs; ++i) pk.pack_nil();
  const Bytes elf = metadata_elf(from_sbuffer(sb));
  g_largest = 0;
  auto info = jax_aiter::runtime::read_code_object(elf);
  ASSERT_FALSE(info.ok());
  EXPECT_NE(info.status().message().find("argument 0 is not a map"), std::string::npos)
      << info.status().message();
  EXPECT_LT(g_largest.load(), size_t{1} << 20) << "largest allocation " << g_largest.load();
}

}  // namespace
