// runtime/code_objects.hpp: where code objects come from (embedded ours and AITER's, then an AITER
// checkout's hsa/ folder, then embedded ABI twins), lookups by (name, arch), and views that stay
// valid however much is registered later.
#include <gtest/gtest.h>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "jax_aiter/runtime/code_objects.hpp"

namespace {

using jax_aiter::ErrorCode;
using jax_aiter::runtime::CodeObjectKind;
using jax_aiter::runtime::CodeObjects;

std::span<const std::byte> bytes_of(const std::string& s) {
  return std::as_bytes(std::span<const char>(s.data(), s.size()));
}

std::string text_of(std::span<const std::byte> b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

// Registrations outlive the test (the registry never forgets), so their bytes are static.
const std::string kOurs = "ours-bytes", kAiter = "aiter-bytes", kTwin = "twin-bytes";

TEST(CodeObjects, EmbeddedByNameAndArch) {
  CodeObjects::embed("test/one.co", "gfx942", CodeObjectKind::kOurs, bytes_of(kOurs));
  auto found = CodeObjects::find("test/one.co", "gfx942");
  ASSERT_TRUE(found.ok()) << found.status().message();
  EXPECT_EQ(text_of(found->bytes), kOurs);
  EXPECT_EQ(found->kind, CodeObjectKind::kOurs);
  EXPECT_EQ(found->origin, "embedded");
  auto other_arch = CodeObjects::find("test/one.co", "gfx950");
  ASSERT_FALSE(other_arch.ok());
  EXPECT_EQ(other_arch.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(other_arch.status().message().find("'test/one.co' for gfx950"), std::string::npos)
      << other_arch.status().message();
}

// The bytes and names a lookup returned stay where they were after many later registrations (the
// old registry was a vector whose growth moved its entries).
TEST(CodeObjects, ViewsStayValidAsMoreAreRegistered) {
  CodeObjects::embed("test/stable.co", "gfx950", CodeObjectKind::kOurs, bytes_of(kOurs));
  auto first = CodeObjects::find("test/stable.co", "gfx950");
  ASSERT_TRUE(first.ok());
  const auto* name_before = first->name.data();
  const auto* bytes_before = first->bytes.data();
  static std::vector<std::string> names;
  names.reserve(3000);
  for (int i = 0; i < 3000; ++i) {
    names.push_back("test/filler_" + std::to_string(i) + ".co");
    CodeObjects::embed(names.back(), "gfx950", CodeObjectKind::kOurs, bytes_of(kOurs));
  }
  EXPECT_EQ(first->name.data(), name_before);
  EXPECT_EQ(first->name, "test/stable.co");
  auto again = CodeObjects::find("test/stable.co", "gfx950");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->bytes.data(), bytes_before);
  EXPECT_EQ(again->name.data(), name_before);
}

// AITER's own code object wins over its twin; a checkout named at run time wins over a twin too;
// the twin is the last resort.
TEST(CodeObjects, AiterBeforeRootBeforeTwin) {
  CodeObjects::embed("bf16gemm/test_a.co", "gfx942", CodeObjectKind::kTwin, bytes_of(kTwin));
  CodeObjects::embed("bf16gemm/test_a.co", "gfx942", CodeObjectKind::kAiter, bytes_of(kAiter));
  auto a = CodeObjects::find("bf16gemm/test_a.co", "gfx942");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->kind, CodeObjectKind::kAiter);

  const auto root = std::filesystem::temp_directory_path() / "jax_aiter_test_root";
  std::filesystem::create_directories(root / "hsa/gfx942/bf16gemm");
  {
    std::ofstream f(root / "hsa/gfx942/bf16gemm/test_b.co", std::ios::binary);
    f << "from-the-checkout";
  }
  CodeObjects::embed("bf16gemm/test_b.co", "gfx942", CodeObjectKind::kTwin, bytes_of(kTwin));
  CodeObjects::embed("bf16gemm/test_c.co", "gfx942", CodeObjectKind::kTwin, bytes_of(kTwin));
  auto twin_before = CodeObjects::find("bf16gemm/test_b.co", "gfx942");
  ASSERT_TRUE(twin_before.ok());
  EXPECT_EQ(twin_before->kind, CodeObjectKind::kTwin) << "no root set yet";

  ASSERT_TRUE(CodeObjects::set_aiter_root(root.string()).ok());
  auto b = CodeObjects::find("bf16gemm/test_b.co", "gfx942");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->kind, CodeObjectKind::kAiter);
  EXPECT_EQ(text_of(b->bytes), "from-the-checkout");
  EXPECT_EQ(b->origin, (root / "hsa/gfx942/bf16gemm/test_b.co").string());
  // Read once: a second lookup returns the same bytes.
  EXPECT_EQ(CodeObjects::find("bf16gemm/test_b.co", "gfx942")->bytes.data(), b->bytes.data());
  auto c = CodeObjects::find("bf16gemm/test_c.co", "gfx942");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->kind, CodeObjectKind::kTwin) << "not in the checkout: the twin stands in";
  auto missing = CodeObjects::find("bf16gemm/test_d.co", "gfx942");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("not in " + root.string() + "/hsa/gfx942/"),
            std::string::npos)
      << missing.status().message();
  EXPECT_FALSE(CodeObjects::set_aiter_root("").ok());
}

TEST(CodeObjects, ConcurrentLookupsAndRegistrations) {
  CodeObjects::embed("test/concurrent.co", "sm_90", CodeObjectKind::kOurs, bytes_of(kOurs));
  static std::vector<std::string> names(800);
  for (int i = 0; i < 800; ++i) names[i] = "test/c_" + std::to_string(i) + ".co";
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = t; i < 800; i += 4) {
        CodeObjects::embed(names[i], "sm_90", CodeObjectKind::kOurs, bytes_of(kOurs));
        auto f = CodeObjects::find("test/concurrent.co", "sm_90");
        if (!f.ok() || text_of(f->bytes) != kOurs) failures.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
