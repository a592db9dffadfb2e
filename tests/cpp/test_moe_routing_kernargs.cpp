// Our MoE routing code objects for gfx942 and gfx950 (kernels_co/moe_routing.kernel.cpp, built by
// jax_aiter_embed_kernels' rule): every kernel the table names is there, and its metadata matches
// the argument struct the plans pack (names, offsets, sizes; no hidden arguments, so the struct is
// the whole kernarg segment), as the HIP backend checks before a first launch.
#include <gtest/gtest.h>

#include <cstddef>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "jax_aiter/kernels/moe_routing.hpp"
#include "jax_aiter/runtime/code_object.hpp"
#include "jax_aiter/runtime/kernarg_check.hpp"

namespace {

std::vector<std::byte> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  const std::vector<char> chars((std::istreambuf_iterator<char>(f)),
                                std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  for (size_t i = 0; i < chars.size(); ++i) out[i] = static_cast<std::byte>(chars[i]);
  return out;
}

}  // namespace

TEST(MoeRoutingCodeObjects, EveryKernelMatchesItsStruct) {
  const std::string_view all = JAX_AITER_TEST_MOE_ROUTING_COS;  // "a.co|b.co"
  size_t checked = 0;
  for (size_t begin = 0; begin < all.size();) {
    const size_t end = std::min(all.find('|', begin), all.size());
    const std::string path(all.substr(begin, end - begin));
    begin = end + 1;
    SCOPED_TRACE(path);
    const auto bytes = read_file(path);
    ASSERT_FALSE(bytes.empty()) << "cannot read " << path;
    auto info = jax_aiter::runtime::read_code_object(bytes);
    ASSERT_TRUE(info.ok()) << info.status().message();
    EXPECT_EQ(info->kernels.size(), jax_aiter::kernels::kMoeRoutingKernels.size());
    for (const jax_aiter::kernels::KernelInfo* k : jax_aiter::kernels::kMoeRoutingKernels) {
      SCOPED_TRACE(k->symbol);
      EXPECT_EQ(k->code_object, "moe_routing");
      const auto* md = info->find(k->symbol);
      ASSERT_NE(md, nullptr);
      EXPECT_EQ(md->kernarg_segment_size, k->args_size);
      const jax_aiter::Status st = jax_aiter::runtime::check_kernel_arguments(*md, *k);
      EXPECT_TRUE(st.ok()) << st.message();
      ++checked;
    }
  }
  EXPECT_EQ(checked, 2 * jax_aiter::kernels::kMoeRoutingKernels.size());
}
