// The HIP backend with no AMD GPU: it compiles against Debian's libamdhip64, answers with clear
// errors (never a crash), and our embedded gfx942/gfx950 RMSNorm code objects carry exactly the
// argument layout our structs pack, kernel by kernel, as the backend checks before a launch.
#include <gtest/gtest.h>

#include <string>

#include "jax_aiter/ffi/rmsnorm.hpp"
#include "jax_aiter/kernels/rmsnorm.hpp"
#include "jax_aiter/ops/rmsnorm.hpp"
#include "jax_aiter/runtime/code_object.hpp"
#include "jax_aiter/runtime/code_objects.hpp"
#include "jax_aiter/runtime/hip.hpp"
#include "jax_aiter/runtime/kernarg_check.hpp"

namespace ja = jax_aiter;
using ja::kernels::KernelInfo;

namespace {

bool amd_gpu_present() {
  int count = -1;
  return hipGetDeviceCount(&count) == hipSuccess && count > 0;
}

ja::ops::Tensor tensor(ja::DType t, std::initializer_list<int64_t> dims, uintptr_t address) {
  return ja::ops::Tensor::over(reinterpret_cast<void*>(address), t, dims);
}

}  // namespace

TEST(HipBackend, NoDeviceIsAClearError) {
  if (amd_gpu_present()) GTEST_SKIP() << "an AMD GPU is present: this test is for none";
  auto t = ja::runtime::Hip::target(0);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), ja::ErrorCode::kInternal);
  EXPECT_NE(t.status().message().find("hipGetDeviceProperties(0) failed"), std::string::npos)
      << t.status().message();
  // The whole handler path reports it as a Status, too: a valid call fails at the device.
  ja::ops::RmsNorm::Params p;
  p.x = tensor(ja::DType::kBF16, {4, 64}, 0x100000);
  p.gamma = tensor(ja::DType::kBF16, {64}, 0x200000);
  p.y = tensor(ja::DType::kBF16, {4, 64}, 0x300000);
  ASSERT_TRUE(ja::ops::RmsNorm::validate(p).ok());
  const ja::Status st = ja::ffi::Handler<ja::ops::RmsNorm, ja::runtime::Hip>::run({}, p);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.code(), ja::ErrorCode::kInternal);
  EXPECT_NE(st.message().find("hipGetDeviceProperties(0) failed"), std::string::npos)
      << st.message();
  // An empty call is refused by validation before the device is asked.
  const ja::Status empty =
      ja::ffi::Handler<ja::ops::RmsNorm, ja::runtime::Hip>::run({}, ja::ops::RmsNorm::Params{});
  EXPECT_EQ(empty.code(), ja::ErrorCode::kInvalidArgument) << empty.message();
}

// Resolving a kernel with no device is a cached error, never a crash, the same on every call.
TEST(HipBackend, ResolveWithNoDeviceIsAnError) {
  if (amd_gpu_present()) GTEST_SKIP() << "an AMD GPU is present: this test is for none";
  const KernelInfo& fwd = ja::kernels::rmsnorm_fwd_kernel(ja::DType::kBF16, 8, false);
  const ja::runtime::Hip::Kernel& k = ja::runtime::Hip::resolve(0, fwd);
  ASSERT_FALSE(k.status.ok());
  EXPECT_EQ(k.status.code(), ja::ErrorCode::kInternal);
  EXPECT_NE(k.status.message().find("hipGetDeviceProperties(0) failed"), std::string::npos)
      << k.status.message();
  EXPECT_EQ(k.function, nullptr);
  EXPECT_EQ(&ja::runtime::Hip::resolve(0, fwd), &k);  // cached, failure included
  for (const KernelInfo* info : ja::kernels::kRmsNormKernels) {
    EXPECT_FALSE(ja::runtime::Hip::resolve(3, *info).status.ok()) << info->symbol;
  }
}

class EmbeddedRmsNorm : public ::testing::TestWithParam<const char*> {};

TEST_P(EmbeddedRmsNorm, EveryKernelMatchesOurStruct) {
  const auto co = ja::runtime::CodeObjects::find("rmsnorm", GetParam());
  ASSERT_TRUE(co.ok()) << "jax_aiter_embed_kernels did not embed rmsnorm for " << GetParam() << ": "
                       << co.status().message();
  EXPECT_EQ(co->name, "rmsnorm");
  EXPECT_EQ(co->arch, GetParam());
  EXPECT_EQ(co->kind, ja::runtime::CodeObjectKind::kOurs);
  EXPECT_EQ(co->origin, "embedded");
  auto info = ja::runtime::read_code_object(co->bytes);
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->target, std::string("amdgcn-amd-amdhsa--") + GetParam());
  EXPECT_EQ(info->kernels.size(), ja::kernels::kRmsNormKernels.size());
  for (const KernelInfo* kernel : ja::kernels::kRmsNormKernels) {
    const KernelInfo& k = *kernel;
    EXPECT_EQ(k.code_object, "rmsnorm");
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
  const auto co = ja::runtime::CodeObjects::find("rmsnorm", GetParam());
  ASSERT_TRUE(co.ok()) << co.status().message();
  auto info = ja::runtime::read_code_object(co->bytes);
  ASSERT_TRUE(info.ok());
  auto fields = ja::kernels::kRmsNormFwdFields;
  fields[7].offset += 4;  // epsilon moved
  const KernelInfo wrong{"rmsnorm", "jax_aiter_rmsnorm_fwd_bf16_v8", 64, fields};
  const ja::Status st = ja::runtime::check_kernel_arguments(*info->find(wrong.symbol), wrong);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("epsilon"), std::string::npos) << st.message();
  const KernelInfo short_struct{"rmsnorm", "jax_aiter_rmsnorm_fwd_bf16_v8", 48,
                                ja::kernels::kRmsNormFwdFields};
  EXPECT_FALSE(ja::runtime::check_kernel_arguments(*info->find(wrong.symbol), short_struct).ok());
}

INSTANTIATE_TEST_SUITE_P(Archs, EmbeddedRmsNorm, ::testing::Values("gfx942", "gfx950"));

// A code object that was not embedded (and no AITER root set) is NotFound, saying what was tried.
TEST(EmbeddedCodeObjects, MissingOneIsNotFound) {
  const auto co = ja::runtime::CodeObjects::find("rmsnorm", "sm_90");  // only gfx embedded here
  ASSERT_FALSE(co.ok());
  EXPECT_EQ(co.status().code(), ja::ErrorCode::kNotFound);
  EXPECT_NE(co.status().message().find("code object 'rmsnorm' for sm_90: not embedded"),
            std::string::npos)
      << co.status().message();
  // Everything this binary embedded: rmsnorm for the two gfx archs.
  int ours = 0;
  for (const auto& c : ja::runtime::CodeObjects::all()) {
    ours += c.name == "rmsnorm" && c.kind == ja::runtime::CodeObjectKind::kOurs;
  }
  EXPECT_EQ(ours, 2);
}
