// The HIP backend with no AMD GPU: it compiles against Debian's libamdhip64, answers with clear
// errors (never a crash), and our embedded gfx942/gfx950 RMSNorm code objects carry exactly the
// argument layout our structs pack, kernel by kernel, as the backend checks before a launch.
#include <gtest/gtest.h>

#include <string>

#include "jax_aiter/ffi/rmsnorm.hpp"
#include "jax_aiter/kernels/rmsnorm.hpp"
#include "jax_aiter/ops/rmsnorm.hpp"
#include "jax_aiter/runtime/code_object.hpp"
#include "jax_aiter/runtime/embedded.hpp"
#include "jax_aiter/runtime/hip.hpp"
#include "jax_aiter/runtime/kernarg_check.hpp"

namespace ja = jax_aiter;

TEST(HipBackend, NoDeviceIsAClearError) {
  int count = -1;
  const hipError_t e = hipGetDeviceCount(&count);
  if (e == hipSuccess && count > 0) GTEST_SKIP() << "an AMD GPU is present: this test is for none";
  auto t = ja::runtime::Hip::target(0);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("hipGetDeviceProperties(0) failed"), std::string::npos)
      << t.status().message();
  // The whole handler path reports it as a Status, too.
  ja::ops::RmsNorm::Params p;
  const ja::Status st = ja::ffi::Handler<ja::ops::RmsNorm, ja::runtime::Hip>::run({}, p);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(ja::runtime::Hip::prepare<ja::kernels::RmsNormModule>(0).code(),
            ja::ErrorCode::kInternal);
}

class EmbeddedRmsNorm : public ::testing::TestWithParam<const char*> {};

TEST_P(EmbeddedRmsNorm, EveryKernelMatchesOurStruct) {
  const auto* blob = ja::runtime::EmbeddedRegistry::find("rmsnorm", GetParam());
  ASSERT_NE(blob, nullptr) << "jax_aiter_embed_kernels did not embed rmsnorm for " << GetParam();
  auto info = ja::runtime::read_code_object(blob->bytes);
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->target, std::string("amdgcn-amd-amdhsa--") + GetParam());
  EXPECT_EQ(info->kernels.size(), ja::kernels::RmsNormModule::kKernels.size());
  for (const auto& k : ja::kernels::RmsNormModule::kKernels) {
    const auto* md = info->find(k.symbol);
    ASSERT_NE(md, nullptr) << k.symbol;
    const ja::Status st = ja::runtime::check_kernel_arguments(*md, k);
    EXPECT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(md->wavefront_size, 64u);
    // Our kernels use no hidden arguments: the segment is exactly the explicit parameters.
    EXPECT_EQ(md->explicit_kernarg_bytes(), md->kernarg_segment_size) << k.symbol;
    EXPECT_LE(md->kernarg_segment_size, k.args_size);
  }
}

// A struct that disagrees with the kernel by one field offset is refused, naming the field.
TEST_P(EmbeddedRmsNorm, MismatchedStructIsRefused) {
  const auto* blob = ja::runtime::EmbeddedRegistry::find("rmsnorm", GetParam());
  ASSERT_NE(blob, nullptr);
  auto info = ja::runtime::read_code_object(blob->bytes);
  ASSERT_TRUE(info.ok());
  auto fields = ja::kernels::kRmsNormFwdFields;
  fields[7].offset += 4;  // epsilon moved
  const ja::kernels::KernelInfo wrong{"jax_aiter_rmsnorm_fwd_bf16_v8", 64, fields};
  const ja::Status st = ja::runtime::check_kernel_arguments(*info->find(wrong.symbol), wrong);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("epsilon"), std::string::npos) << st.message();
  const ja::kernels::KernelInfo short_struct{"jax_aiter_rmsnorm_fwd_bf16_v8", 48,
                                             ja::kernels::kRmsNormFwdFields};
  EXPECT_FALSE(ja::runtime::check_kernel_arguments(*info->find(wrong.symbol), short_struct).ok());
}

INSTANTIATE_TEST_SUITE_P(Archs, EmbeddedRmsNorm, ::testing::Values("gfx942", "gfx950"));
