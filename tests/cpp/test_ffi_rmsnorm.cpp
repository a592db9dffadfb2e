// The RMSNorm FFI handlers, called the way XLA calls them but with no XLA: through the fake
// runtime of jax_aiter/testing/fake_ffi.hpp. Covers the registration handshake, every decode and
// validation error, results through the Host backend against a float64 reference
// (reference_testing.hpp, Eigen), and register_all.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <map>
#include <ostream>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jax_aiter/ffi/binder.hpp"
#include "jax_aiter/ffi/registry.hpp"
#include "jax_aiter/ffi/rmsnorm.hpp"
#include "jax_aiter/host_twins/rmsnorm.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/kernels/rmsnorm.hpp"
#include "jax_aiter/ops/rmsnorm.hpp"
#include "jax_aiter/runtime/host.hpp"
#include "jax_aiter/testing/fake_ffi.hpp"
#include "jax_aiter/testing/host_array.hpp"
#include "reference_testing.hpp"

namespace ja = jax_aiter;
namespace f64 = jax_aiter::reference;
namespace fake = jax_aiter::testing;
namespace ops = jax_aiter::ops;
using ja::DType;
using ja::kernels::KernelInfo;
using Host = ja::runtime::Host;

// The four handlers, as a consumer instantiates them.
JAX_AITER_DEFINE_HANDLER(test_rms_norm_cpu, ops::RmsNorm, Host);
JAX_AITER_DEFINE_HANDLER(test_rms_norm_with_add_cpu, ops::RmsNormWithAdd, Host);
JAX_AITER_DEFINE_HANDLER(test_rms_norm_bwd_cpu, ops::RmsNormBwd, Host);
JAX_AITER_DEFINE_HANDLER(test_rms_norm_with_add_bwd_cpu, ops::RmsNormWithAddBwd, Host);

namespace {

// ---- a GPU-like backend that records what reaches it ---------------------------------------

struct FakeGpuStream {
  int id = 0;
};

// Meets runtime::Backend the way Hip and Cuda do, but loads nothing: resolve hands out one Kernel
// per KernelInfo (with the status a test sets) and records each call; launch and memset record
// what reaches them.
struct FakeGpu {
  static constexpr ja::BackendKind kKind = ja::BackendKind::kCuda;
  static constexpr bool kCommandBufferCompatible = true;
  using Stream = FakeGpuStream*;

  struct Kernel {
    ja::Status status;
    const KernelInfo* info = nullptr;
  };
  struct Resolved {
    int device;
    const KernelInfo* info;
  };
  struct Seen {
    int device;
    Stream stream;
    const Kernel* kernel;
    ja::kernels::Launch launch;
  };
  static inline std::vector<Resolved> resolved;
  static inline std::vector<Seen> launches;
  static inline std::vector<ja::kernels::Memset> memsets;
  static inline bool throw_on_launch = false;
  static inline ja::Status launch_status;
  static inline ja::Status resolve_status;  // what every kernel resolves to

  static ja::Expected<ja::Target> target(int /*device*/) {
    return ja::Target{ja::BackendKind::kCuda, ja::Arch::kSm90, 132};
  }
  static const Kernel& resolve(int device, const KernelInfo& info) {
    resolved.push_back({device, &info});
    static std::map<const KernelInfo*, Kernel> kernels;  // node-based: references stay valid
    Kernel& k = kernels[&info];
    k = {resolve_status, &info};
    return k;
  }
  static ja::Status launch(int device, Stream stream, const Kernel& kernel,
                           const ja::kernels::Launch& l) {
    if (throw_on_launch) throw std::runtime_error("boom");
    launches.push_back({device, stream, &kernel, l});
    return launch_status;
  }
  static ja::Status memset(int /*device*/, Stream /*stream*/, const ja::kernels::Memset& m) {
    memsets.push_back(m);
    return {};
  }
  static void reset() {
    resolved.clear();
    launches.clear();
    memsets.clear();
    throw_on_launch = false;
    launch_status = {};
    resolve_status = {};
  }
};
static_assert(ja::runtime::Backend<FakeGpu>);

XLA_FFI_Error* gpu_rms_norm(XLA_FFI_CallFrame* f) {
  return ja::ffi::Handler<ops::RmsNorm, FakeGpu>::execute(f);
}
XLA_FFI_Error* gpu_rms_norm_initialize(XLA_FFI_CallFrame* f) {
  return ja::ffi::Handler<ops::RmsNorm, FakeGpu>::initialize(f);
}
XLA_FFI_Error* gpu_rms_norm_bwd(XLA_FFI_CallFrame* f) {
  return ja::ffi::Handler<ops::RmsNormBwd, FakeGpu>::execute(f);
}
XLA_FFI_Error* gpu_rms_norm_bwd_initialize(XLA_FFI_CallFrame* f) {
  return ja::ffi::Handler<ops::RmsNormBwd, FakeGpu>::initialize(f);
}

// ---- host arrays, element types converted independently of core/dtype.hpp (testing/) --------

using fake::add_arg;
using fake::add_ret;
using fake::Array;
using fake::fill;
using fake::fill_signed;
using fake::Rng;

// ---- assertions -------------------------------------------------------------------------------

::testing::AssertionResult Fails(const fake::CallResult& r, XLA_FFI_Error_Code code,
                                 std::initializer_list<std::string_view> parts) {
  if (r.ok()) return ::testing::AssertionFailure() << "expected an error, got OK";
  if (r.code != code) {
    return ::testing::AssertionFailure() << "expected code " << static_cast<int>(code) << ", got "
                                         << static_cast<int>(r.code) << ": " << r.message;
  }
  for (std::string_view p : parts) {
    if (r.message.find(p) == std::string::npos) {
      return ::testing::AssertionFailure() << "message lacks \"" << p << "\": " << r.message;
    }
  }
  return ::testing::AssertionSuccess() << r.message;
}

// Element-wise |got - ref| <= atol + rtol * |ref|: one bound with both parts in force at once,
// never "abs OR rel"; a NaN fails. The reference is float64; the handler computes in float32 and
// rounds once to the output dtype, so rtol is one unit in the last place at the bottom of a
// binade (rounding alone costs half of it) and atol covers float32 rounding in sums of O(1)
// terms. Inputs are O(1) by construction (see Rng).
//
//   dtype | rtol                        | atol
//   f32   | 5e-6                        | 5e-6
//   f16   | 2^-10 (11 significant bits) | 1e-4
//   bf16  | 2^-7  (8 significant bits)  | 1e-3
//
// dgamma sums one term per row in float32, so its rounding error grows with the rows like a random
// walk: its atol is the table's times sqrt(rows) (summed_over).
struct Tolerance {
  double atol, rtol;
};
Tolerance tolerance(DType t) {
  switch (t) {
    case DType::kF32: return {5e-6, 5e-6};
    case DType::kF16: return {1e-4, 0x1.0p-10};
    default: return {1e-3, 0x1.0p-7};
  }
}

Tolerance summed_over(Tolerance t, int64_t terms) {
  return {t.atol * std::sqrt(static_cast<double>(terms)), t.rtol};
}

::testing::AssertionResult AllClose(std::string_view what, const Array& got,
                                    const std::vector<double>& ref, Tolerance tol) {
  if (got.size() != static_cast<int64_t>(ref.size())) {
    return ::testing::AssertionFailure() << what << ": size " << got.size() << " vs " << ref.size();
  }
  int64_t bad = 0, first = -1;
  double worst = 0;
  for (int64_t i = 0; i < got.size(); ++i) {
    const double err = std::abs(got.at(i) - ref[i]);
    if (!(err <= tol.atol + tol.rtol * std::abs(ref[i]))) {
      if (bad++ == 0) first = i;
    }
    if (!(err <= worst)) worst = err;  // NaN sticks
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << what << ": " << bad << " of " << got.size() << " elements out of tolerance (atol "
         << tol.atol << ", rtol " << tol.rtol << "); first at " << first << ": got "
         << got.at(first) << ", want " << ref[first] << "; worst |error| " << worst;
}

::testing::AssertionResult AllEqual(std::string_view what, const Array& got,
                                    const std::vector<double>& ref) {
  return AllClose(what, got, ref, {0.0, 0.0});
}

// The checker itself: a poisoned (unwritten) output never passes, however loose the tolerance.
TEST(RmsNormFfiChecker, PoisonNeverPasses) {
  for (DType t : {DType::kBF16, DType::kF16, DType::kF32}) {
    Array a(t, {4});
    a.poison();
    EXPECT_TRUE(std::isnan(a.at(0))) << ja::name(t);
    EXPECT_FALSE(AllClose("poisoned", a, std::vector<double>(4, 0.0), {1e30, 1e30})) << ja::name(t);
  }
}

// ---- float64 references --------------------------------------------------------------------

// rows x n views of the flat buffers for the float64 references (reference_testing.hpp, Eigen).
f64::Matrix as_rows(const std::vector<double>& flat, size_t n) {
  f64::Matrix m(static_cast<int64_t>(flat.size() / n), static_cast<int64_t>(n));
  m.v = flat;
  return m;
}

// y = x * rsqrt(mean(x^2) + eps) * gamma, row by row over the last dimension.
std::vector<double> rms_norm_ref(const std::vector<double>& x, const std::vector<double>& gamma,
                                 double eps) {
  return f64::rms_norm(as_rows(x, gamma.size()), gamma, eps).v;
}

struct BwdRef {
  std::vector<double> dx, dgamma;
};

// dx (+ dresidual, which passes through the residual add) and dgamma of rms_norm.
BwdRef rms_norm_bwd_ref(const std::vector<double>& dy, const std::vector<double>& x,
                        const std::vector<double>& gamma, const std::vector<double>* dresidual,
                        double eps) {
  const size_t n = gamma.size();
  f64::RmsNormGrad g = f64::rms_norm_grad(as_rows(dy, n), as_rows(x, n), gamma, eps);
  if (dresidual) {
    for (size_t i = 0; i < g.dx.v.size(); ++i) g.dx.v[i] += (*dresidual)[i];
  }
  return {std::move(g.dx.v), std::move(g.dgamma)};
}

std::vector<double> values(const Array& a) {
  std::vector<double> v(a.size());
  for (int64_t i = 0; i < a.size(); ++i) v[i] = a.at(i);
  return v;
}

constexpr float kEps = 1e-6f;

// ---- results through the Host backend ------------------------------------------------------

struct Shape {
  DType dtype;
  int64_t rows;
  int64_t n;
};
void PrintTo(const Shape& s, std::ostream* os) {
  *os << ja::name(s.dtype) << " rows=" << s.rows << " n=" << s.n;
}

// rows = 600 as [20, 30, n] (rank 3). Backward folds rows onto at most kRmsNormMaxSlots dgamma
// slots; kFoldRows exceeds that twice over, so slots take two or three rows each.
constexpr int64_t kFoldRows = 2 * ops::kRmsNormMaxSlots + 3;
static_assert(ops::rmsnorm_bwd_max_slots(kFoldRows) < kFoldRows);

std::vector<int64_t> dims_for(const Shape& s) {
  if (s.rows == 600) return {20, 30, s.n};
  return {s.rows, s.n};
}

class RmsNormHost : public ::testing::TestWithParam<Shape> {
 protected:
  uint64_t seed(int which) const {
    const Shape& s = GetParam();
    return (static_cast<uint64_t>(s.dtype) << 48) ^ (static_cast<uint64_t>(s.rows) << 24) ^
           static_cast<uint64_t>(s.n) ^ (static_cast<uint64_t>(which) << 56);
  }
};

TEST_P(RmsNormHost, Forward) {
  const Shape s = GetParam();
  Rng rng(seed(1));
  Array x(s.dtype, dims_for(s)), gamma(s.dtype, {s.n}), y(s.dtype, dims_for(s));
  fill_signed(x, rng);
  fill(gamma, rng, 0.5, 1.5);
  y.poison();

  fake::CallFrame f;
  add_arg(f, x);
  add_arg(f, gamma);
  add_ret(f, y);
  f.attr("epsilon", kEps);
  const fake::CallResult r = fake::call(test_rms_norm_cpu, f);
  ASSERT_TRUE(r.ok()) << r.message;

  EXPECT_TRUE(AllClose("y", y, rms_norm_ref(values(x), values(gamma), kEps), tolerance(s.dtype)));
}

TEST_P(RmsNormHost, ForwardWithAdd) {
  const Shape s = GetParam();
  Rng rng(seed(2));
  Array x(s.dtype, dims_for(s)), residual(s.dtype, dims_for(s)), gamma(s.dtype, {s.n});
  Array y(s.dtype, dims_for(s)), residual_out(s.dtype, dims_for(s));
  fill_signed(x, rng);
  fill_signed(residual, rng);
  fill(gamma, rng, 0.5, 1.5);
  y.poison();
  residual_out.poison();

  fake::CallFrame f;
  add_arg(f, x);
  add_arg(f, residual);
  add_arg(f, gamma);
  add_ret(f, y);
  add_ret(f, residual_out);
  f.attr("epsilon", kEps);
  const fake::CallResult r = fake::call(test_rms_norm_with_add_cpu, f);
  ASSERT_TRUE(r.ok()) << r.message;

  // residual_out = x + residual rounded once to the dtype (the sum of two stored values is exact
  // in double), and the normalised value is that stored residual.
  Array stored(s.dtype, dims_for(s));
  std::vector<double> want_residual(x.size());
  for (int64_t i = 0; i < x.size(); ++i) want_residual[i] = stored.set(i, x.at(i) + residual.at(i));
  EXPECT_TRUE(AllEqual("residual_out", residual_out, want_residual));
  EXPECT_TRUE(
      AllClose("y", y, rms_norm_ref(want_residual, values(gamma), kEps), tolerance(s.dtype)));
}

void check_backward(const Shape& s, uint64_t seed, bool fused) {
  Rng rng(seed);
  Array dy(s.dtype, dims_for(s)), x(s.dtype, dims_for(s)), gamma(s.dtype, {s.n});
  Array dresidual(s.dtype, dims_for(s));
  const int64_t rows = x.size() / s.n;
  Array dx(s.dtype, dims_for(s)), dgamma(s.dtype, {s.n});
  Array workspace(DType::kU8, {ops::rmsnorm_bwd_workspace_bytes(rows, s.n)});
  fill(dy, rng, -1.0, 1.0);
  fill_signed(x, rng);
  fill(gamma, rng, 0.5, 1.5);
  fill(dresidual, rng, -1.0, 1.0);
  dx.poison();
  dgamma.poison();
  workspace.poison();

  fake::CallFrame f;
  add_arg(f, dy);
  add_arg(f, x);  // residual_out for the fused op
  add_arg(f, gamma);
  if (fused) add_arg(f, dresidual);
  add_ret(f, dx);
  add_ret(f, dgamma);
  add_ret(f, workspace);
  f.attr("epsilon", kEps);
  const fake::CallResult r =
      fake::call(fused ? test_rms_norm_with_add_bwd_cpu : test_rms_norm_bwd_cpu, f);
  ASSERT_TRUE(r.ok()) << r.message;

  const std::vector<double> dres = values(dresidual);
  const BwdRef want =
      rms_norm_bwd_ref(values(dy), values(x), values(gamma), fused ? &dres : nullptr, kEps);
  EXPECT_TRUE(AllClose("dx", dx, want.dx, tolerance(s.dtype)));
  EXPECT_TRUE(AllClose("dgamma", dgamma, want.dgamma, summed_over(tolerance(s.dtype), rows)));
}

// What a GPU does with the backward's fill_device launch: it runs only the blocks it holds at once,
// fewer than the cap the workspace was sized for. The host twins given that smaller grid must fold
// more rows onto each slot, record the slot count in the header, and still give dx and dgamma.
TEST(RmsNormHostPersistent, SmallDeviceFoldsMoreRowsPerSlot) {
  for (int64_t n : {64, 5}) {  // one row per block; several rows per block (tpr below a warp)
    Rng rng(77 + n);
    const int64_t rows = 600;
    Array dy(DType::kF32, {rows, n}), x(DType::kF32, {rows, n}), gamma(DType::kF32, {n});
    Array dx(DType::kF32, {rows, n}), dgamma(DType::kF32, {n});
    Array workspace(DType::kU8, {ops::rmsnorm_bwd_workspace_bytes(rows, n)});
    fill(dy, rng, -1.0, 1.0);
    fill_signed(x, rng);
    fill(gamma, rng, 0.5, 1.5);
    dx.poison();
    dgamma.poison();
    workspace.poison();
    auto tensor = [](Array& a) { return ops::Tensor::over(a.data(), a.dtype, a.dims); };
    ops::RmsNormBwd::Params p{tensor(dy),     tensor(x),         tensor(gamma), {}, tensor(dx),
                              tensor(dgamma), tensor(workspace), kEps,          {}};
    const ja::Target target = *Host::target(0);
    ASSERT_TRUE(ops::RmsNormBwd::validate(p).ok());
    ja::kernels::Plan plan;
    plan.workspace_base = p.workspace.data;
    ops::RmsNormBackwardPortable<false>::plan(p, target, plan);
    ASSERT_EQ(plan.count, 2u);
    ASSERT_EQ(plan.steps[0].kind, ja::kernels::Step::Kind::kLaunch);
    ASSERT_EQ(plan.steps[1].kind, ja::kernels::Step::Kind::kLaunch);
    ja::kernels::Launch main = plan.steps[0].launch;
    ASSERT_TRUE(main.fill_device);
    const auto a = main.args.unpack<ja::kernels::RmsNormBwdArgs>();
    main.grid.x = ja::kernels::fill_device_blocks(main.grid.x, 3, 1);  // 3 units, 1 block each
    ASSERT_EQ(main.grid.x, 3u);
    const Host::Kernel& rows_pass = Host::resolve(0, *main.kernel);
    const Host::Kernel& reduce = Host::resolve(0, *plan.steps[1].launch.kernel);
    ASSERT_TRUE(rows_pass.status.ok()) << rows_pass.status.message();
    ASSERT_TRUE(reduce.status.ok()) << reduce.status.message();
    ASSERT_TRUE(Host::launch(0, nullptr, rows_pass, main).ok());
    ASSERT_TRUE(Host::launch(0, nullptr, reduce, plan.steps[1].launch).ok());
    int32_t slots = 0;
    std::memcpy(&slots, workspace.data(), sizeof(slots));
    EXPECT_EQ(slots, 3 * a.rows_per_block) << "n=" << n;
    const BwdRef want = rms_norm_bwd_ref(values(dy), values(x), values(gamma), nullptr, kEps);
    EXPECT_TRUE(AllClose("dx", dx, want.dx, tolerance(DType::kF32))) << "n=" << n;
    EXPECT_TRUE(AllClose("dgamma", dgamma, want.dgamma, summed_over(tolerance(DType::kF32), rows)))
        << "n=" << n;
  }
}

TEST_P(RmsNormHost, Backward) { check_backward(GetParam(), seed(3), false); }
TEST_P(RmsNormHost, BackwardWithAdd) { check_backward(GetParam(), seed(4), true); }

std::vector<Shape> all_shapes() {
  std::vector<Shape> out;
  for (DType t : {DType::kBF16, DType::kF16, DType::kF32}) {
    for (int64_t rows : {int64_t{1}, int64_t{3}, int64_t{600}}) {
      for (int64_t n : {1, 7, 64, 4095, 4096}) out.push_back({t, rows, n});
    }
    for (int64_t n : {1, 7, 64}) out.push_back({t, kFoldRows, n});  // small n: keeps it quick
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Shapes, RmsNormHost, ::testing::ValuesIn(all_shapes()),
                         [](const ::testing::TestParamInfo<Shape>& info) {
                           const Shape& s = info.param;
                           return std::string(ja::name(s.dtype)) + "_rows" +
                                  std::to_string(s.rows) + "_n" + std::to_string(s.n);
                         });

// ---- decode and validation errors ------------------------------------------------------------

// Buffers of a call that succeeds; each error test breaks one thing.
struct FwdCall {
  Array x{DType::kF32, {4, 8}};
  Array gamma{DType::kF32, {8}};
  Array y{DType::kF32, {4, 8}};

  fake::CallFrame frame() {
    fake::CallFrame f;
    add_arg(f, x);
    add_arg(f, gamma);
    add_ret(f, y);
    f.attr("epsilon", kEps);
    return f;
  }
};

fake::CallResult call_fwd(FwdCall& c) {
  fake::CallFrame f = c.frame();
  return fake::call(test_rms_norm_cpu, f);
}

TEST(RmsNormFfiErrors, BaselineCallSucceeds) {
  FwdCall c;
  const fake::CallResult r = call_fwd(c);
  EXPECT_TRUE(r.ok()) << r.message;
}

TEST(RmsNormFfiErrors, WrongDtype) {
  FwdCall c;
  c.x = Array(DType::kI32, {4, 8});
  EXPECT_TRUE(Fails(call_fwd(c), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"aiter.rms_norm: operand x:", "bf16, f16 or f32", "got i32"}));
}

TEST(RmsNormFfiErrors, DtypeXlaHasButWeDoNot) {
  FwdCall c;
  std::vector<double> x64(32, 1.0);
  fake::CallFrame f;
  f.arg(XLA_FFI_DataType_F64, {4, 8}, x64.data());
  add_arg(f, c.gamma);
  add_ret(f, c.y);
  f.attr("epsilon", kEps);
  EXPECT_TRUE(Fails(fake::call(test_rms_norm_cpu, f), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"aiter.rms_norm: operand x:", "unsupported XLA dtype (code 12)"}));
}

TEST(RmsNormFfiErrors, GammaLengthMismatch) {
  FwdCall c;
  c.gamma = Array(DType::kF32, {7});
  EXPECT_TRUE(Fails(call_fwd(c), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"aiter.rms_norm: operand gamma:", "expected f32[8]", "got f32[7]"}));
}

TEST(RmsNormFfiErrors, GammaDtypeMismatch) {
  FwdCall c;
  c.gamma = Array(DType::kBF16, {8});
  EXPECT_TRUE(Fails(call_fwd(c), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"aiter.rms_norm: operand gamma:", "expected f32[8]", "got bf16[8]"}));
}

TEST(RmsNormFfiErrors, GammaRankMismatch) {
  FwdCall c;
  c.gamma = Array(DType::kF32, {1, 8});
  EXPECT_TRUE(Fails(call_fwd(c), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"aiter.rms_norm: operand gamma:", "got f32[1,8]"}));
}

TEST(RmsNormFfiErrors, YShapeMismatch) {
  FwdCall c;
  c.y = Array(DType::kF32, {4, 7});
  EXPECT_TRUE(Fails(call_fwd(c), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"aiter.rms_norm: operand y:", "expected f32[4,8] (like x)", "got f32[4,7]"}));
}

TEST(RmsNormFfiErrors, YDtypeMismatch) {
  FwdCall c;
  c.y = Array(DType::kF16, {4, 8});
  EXPECT_TRUE(Fails(call_fwd(c), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"aiter.rms_norm: operand y:", "got f16[4,8]"}));
}

// The handler decodes its attributes itself (by the op's spec, ffi/spec.hpp): a missing one is
// named with the type it takes.
TEST(RmsNormFfiErrors, MissingAttribute) {
  FwdCall c;
  fake::CallFrame f = c.frame();
  f.remove_attr("epsilon");
  EXPECT_TRUE(Fails(fake::call(test_rms_norm_cpu, f), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"aiter.rms_norm: attribute epsilon: missing (f32 (F32 or F64))"}));
}

// An attribute the op does not declare is an error (a typo must not be ignored), listing what the
// op takes: its own attributes, then the dispatch attributes every op takes.
TEST(RmsNormFfiErrors, MisnamedAttribute) {
  FwdCall c;
  fake::CallFrame f = c.frame();
  f.remove_attr("epsilon").attr("eps", kEps);
  EXPECT_TRUE(Fails(fake::call(test_rms_norm_cpu, f), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"aiter.rms_norm: unknown attribute 'eps' (this op takes: epsilon, tier, "
                     "asm_arch, asm_cus)"}));
  f.attr("epsilon", kEps);  // epsilon present, the typo still refused
  EXPECT_TRUE(Fails(fake::call(test_rms_norm_cpu, f), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"aiter.rms_norm: unknown attribute 'eps'"}));
}

// A Python float arrives as F64: a float attribute takes it (as it takes F32), and the value is
// the one used. x = 1, gamma = 2 and epsilon = 3 give y = 2 / sqrt(1 + 3) = 1 exactly.
TEST(RmsNormFfiErrors, EpsilonSentAsF64IsAccepted) {
  FwdCall c;
  for (int64_t i = 0; i < c.x.size(); ++i) c.x.set(i, 1.0);
  for (int64_t i = 0; i < c.gamma.size(); ++i) c.gamma.set(i, 2.0);
  c.y.poison();
  fake::CallFrame f = c.frame();
  f.attr("epsilon", 3.0);
  const fake::CallResult r = fake::call(test_rms_norm_cpu, f);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_TRUE(AllEqual("y", c.y, std::vector<double>(c.y.size(), 1.0)));
  // Validated the same way as an F32 one.
  f.attr("epsilon", -1e-6);
  EXPECT_TRUE(Fails(fake::call(test_rms_norm_cpu, f), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"aiter.rms_norm: attribute epsilon: expected a finite value >= 0, got -"}));
}

TEST(RmsNormFfiErrors, EpsilonOfOtherScalarTypes) {
  FwdCall c;
  fake::CallFrame f = c.frame();
  f.attr("epsilon", int64_t{0});
  EXPECT_TRUE(Fails(fake::call(test_rms_norm_cpu, f), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"aiter.rms_norm: attribute epsilon: expected f32 (F32 or F64), got S64"}));
  f.attr("epsilon", true);
  EXPECT_TRUE(Fails(fake::call(test_rms_norm_cpu, f), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"aiter.rms_norm: attribute epsilon: expected f32 (F32 or F64), got PRED"}));
  f.string_attr("epsilon", "1e-6");
  EXPECT_TRUE(
      Fails(fake::call(test_rms_norm_cpu, f), XLA_FFI_Error_Code_INVALID_ARGUMENT,
            {"aiter.rms_norm: attribute epsilon: expected f32 (F32 or F64), got a string"}));
}

// The dispatch attributes every op takes: tier (auto or one of the op's tiers), asm_arch, asm_cus.
TEST(RmsNormFfiErrors, DispatchAttributes) {
  FwdCall c;
  fake::CallFrame f = c.frame();
  f.string_attr("tier", "portable");
  const fake::CallResult forced = fake::call(test_rms_norm_cpu, f);
  EXPECT_TRUE(forced.ok()) << forced.message;
  f.string_attr("tier", "auto");
  const fake::CallResult automatic = fake::call(test_rms_norm_cpu, f);
  EXPECT_TRUE(automatic.ok()) << automatic.message;
  f.string_attr("tier", "asm");
  EXPECT_TRUE(Fails(fake::call(test_rms_norm_cpu, f), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"aiter.rms_norm: attribute tier: expected one of auto, portable; got 'asm'"}));
  f.remove_attr("tier").string_attr("asm_arch", "gfx90a");
  EXPECT_TRUE(
      Fails(fake::call(test_rms_norm_cpu, f), XLA_FFI_Error_Code_INVALID_ARGUMENT,
            {"aiter.rms_norm: attribute asm_arch: expected gfx942 or gfx950, got 'gfx90a'"}));
  f.remove_attr("asm_arch").attr("asm_cus", int64_t{-1});
  EXPECT_TRUE(Fails(fake::call(test_rms_norm_cpu, f), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"aiter.rms_norm: attribute asm_cus: expected 0 (default) to 4096, got -1"}));
  f.attr("asm_cus", 1.5f);
  EXPECT_TRUE(Fails(fake::call(test_rms_norm_cpu, f), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"aiter.rms_norm: attribute asm_cus: expected integer (S32 or S64), got F32"}));
}

TEST(RmsNormFfiErrors, NonFiniteEpsilon) {
  for (float eps : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    FwdCall c;
    fake::CallFrame f = c.frame();
    f.attr("epsilon", eps);
    EXPECT_TRUE(Fails(fake::call(test_rms_norm_cpu, f), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                      {"aiter.rms_norm: attribute epsilon: expected a finite value >= 0"}))
        << "epsilon " << eps;
  }
}

TEST(RmsNormFfiErrors, NegativeEpsilon) {
  FwdCall c;
  fake::CallFrame f = c.frame();
  f.attr("epsilon", -1e-6f);
  EXPECT_TRUE(Fails(fake::call(test_rms_norm_cpu, f), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"aiter.rms_norm: attribute epsilon: expected a finite value >= 0, got -"}));
}

TEST(RmsNormFfiErrors, ZeroEpsilonIsAccepted) {
  FwdCall c;
  for (int64_t i = 0; i < c.x.size(); ++i) c.x.set(i, 1.0);
  for (int64_t i = 0; i < c.gamma.size(); ++i) c.gamma.set(i, 2.0);
  fake::CallFrame f = c.frame();
  f.attr("epsilon", 0.0f);
  const fake::CallResult r = fake::call(test_rms_norm_cpu, f);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(c.y.at(0), 2.0);
}

TEST(RmsNormFfiErrors, EmptyRows) {
  FwdCall c;
  c.x = Array(DType::kF32, {0, 8});
  c.y = Array(DType::kF32, {0, 8});
  // An empty problem has its own code (ops/tensor.hpp's kEmptyProblem): Python answers it itself.
  EXPECT_TRUE(Fails(call_fwd(c), XLA_FFI_Error_Code_OUT_OF_RANGE,
                    {"aiter.rms_norm: operand x:", "at least one row", "got f32[0,8]"}));
}

// Every other check comes first: an empty x with a wrong gamma is the gamma's error.
TEST(RmsNormFfiErrors, EmptyRowsAreValidatedFirst) {
  FwdCall c;
  c.x = Array(DType::kF32, {0, 8});
  c.gamma = Array(DType::kF32, {7});
  c.y = Array(DType::kF32, {0, 8});
  EXPECT_TRUE(Fails(call_fwd(c), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"aiter.rms_norm: operand gamma:", "expected f32[8]", "got f32[7]"}));
}

TEST(RmsNormFfiErrors, EmptyLastDimension) {
  FwdCall c;
  c.x = Array(DType::kF32, {4, 0});
  c.gamma = Array(DType::kF32, {0});
  c.y = Array(DType::kF32, {4, 0});
  EXPECT_TRUE(Fails(call_fwd(c), XLA_FFI_Error_Code_OUT_OF_RANGE,
                    {"aiter.rms_norm: operand x:", "got f32[4,0]"}));
}

TEST(RmsNormFfiErrors, ScalarInput) {
  FwdCall c;
  c.x = Array(DType::kF32, {});
  c.y = Array(DType::kF32, {});
  EXPECT_TRUE(Fails(call_fwd(c), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"aiter.rms_norm: operand x:", "rank >= 1"}));
}

TEST(RmsNormFfiErrors, NullData) {
  FwdCall c;
  fake::CallFrame f;
  f.arg(XLA_FFI_DataType_F32, {4, 8}, nullptr);
  add_arg(f, c.gamma);
  add_ret(f, c.y);
  f.attr("epsilon", kEps);
  EXPECT_TRUE(Fails(fake::call(test_rms_norm_cpu, f), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"aiter.rms_norm: operand x: null data pointer"}));
}

TEST(RmsNormFfiErrors, WrongNumberOfArgs) {
  FwdCall c;
  fake::CallFrame f;
  add_arg(f, c.x);
  add_ret(f, c.y);
  f.attr("epsilon", kEps);
  EXPECT_TRUE(Fails(fake::call(test_rms_norm_cpu, f), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"aiter.rms_norm: expected 2 operands (x, gamma), got 1"}));
}

TEST(RmsNormFfiErrors, WrongNumberOfResults) {
  FwdCall c;
  fake::CallFrame f = c.frame();
  add_ret(f, c.y);
  EXPECT_TRUE(Fails(fake::call(test_rms_norm_cpu, f), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"aiter.rms_norm: expected 1 result (y), got 2"}));
}

TEST(RmsNormFfiErrors, WrongStage) {
  FwdCall c;
  fake::CallFrame f = c.frame();
  f.stage(XLA_FFI_ExecutionStage_INITIALIZE);
  EXPECT_TRUE(Fails(fake::call(test_rms_norm_cpu, f), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"Wrong execution stage"}));
  f.stage(XLA_FFI_ExecutionStage_EXECUTE);
  EXPECT_TRUE(Fails(fake::call(test_rms_norm_cpu_initialize, f),
                    XLA_FFI_Error_Code_INVALID_ARGUMENT, {"Wrong execution stage"}));
}

// The initialize stage of a Host handler resolves the plan's host twins (nothing to load) and
// succeeds without running them. It decodes, validates and plans as execute does, so a bad call
// fails there already.
TEST(RmsNormFfiErrors, InitializeStageSucceeds) {
  FwdCall c;
  c.y.poison();
  fake::CallFrame f = c.frame();
  f.stage(XLA_FFI_ExecutionStage_INITIALIZE);
  const fake::CallResult r = fake::call(test_rms_norm_cpu_initialize, f);
  EXPECT_TRUE(r.ok()) << r.message;
  EXPECT_TRUE(std::isnan(c.y.at(0)));  // nothing ran
  c.gamma = Array(DType::kF32, {7});
  fake::CallFrame bad = c.frame();
  bad.stage(XLA_FFI_ExecutionStage_INITIALIZE);
  EXPECT_TRUE(Fails(fake::call(test_rms_norm_cpu_initialize, bad),
                    XLA_FFI_Error_Code_INVALID_ARGUMENT, {"aiter.rms_norm: operand gamma:"}));
}

struct BwdCall {
  Array dy{DType::kF32, {600, 8}};
  Array x{DType::kF32, {600, 8}};
  Array gamma{DType::kF32, {8}};
  Array dresidual{DType::kF32, {600, 8}};
  Array dx{DType::kF32, {600, 8}};
  Array dgamma{DType::kF32, {8}};
  Array workspace{DType::kU8, {ops::rmsnorm_bwd_workspace_bytes(600, 8)}};

  fake::CallFrame frame(bool fused) {
    fake::CallFrame f;
    add_arg(f, dy);
    add_arg(f, x);
    add_arg(f, gamma);
    if (fused) add_arg(f, dresidual);
    add_ret(f, dx);
    add_ret(f, dgamma);
    add_ret(f, workspace);
    f.attr("epsilon", kEps);
    return f;
  }
  fake::CallResult call(bool fused) {
    fake::CallFrame f = frame(fused);
    return fake::call(fused ? test_rms_norm_with_add_bwd_cpu : test_rms_norm_bwd_cpu, f);
  }
};

TEST(RmsNormFfiErrors, BackwardWorkspaceTooSmall) {
  // A 256-byte header, then [slots, n] float32 partials, slots = min(rows, kRmsNormMaxSlots).
  const int64_t need = 256 + std::min<int64_t>(600, ops::kRmsNormMaxSlots) * 8 * 4;
  ASSERT_EQ(ops::rmsnorm_bwd_workspace_bytes(600, 8), need);
  BwdCall c;
  EXPECT_TRUE(c.call(false).ok());
  c.workspace = Array(DType::kU8, {need - 1});
  // The binder checks the workspace against the op's workspace_bytes before any tier runs.
  const std::string want = "expected u8[>= " + std::to_string(need) + "] (workspace_bytes)";
  const std::string got = "got u8[" + std::to_string(need - 1) + "]";
  EXPECT_TRUE(Fails(c.call(false), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"aiter.rms_norm_bwd: operand workspace:", want, got}));
  EXPECT_TRUE(Fails(c.call(true), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"aiter.rms_norm_with_add_bwd: operand workspace:", want, got}));
  // Enough bytes, but not a u8 vector.
  c.workspace = Array(DType::kF32, {need / 4});
  EXPECT_TRUE(Fails(c.call(false), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"aiter.rms_norm_bwd: operand workspace:", want,
                     "got f32[" + std::to_string(need / 4) + "]"}));
}

// The header holds an int and the partials move up to 16 bytes at a time: the binder refuses a
// workspace that is not 16-byte aligned.
TEST(RmsNormFfiErrors, BackwardWorkspaceMisaligned) {
  BwdCall c;
  const int64_t need = ops::rmsnorm_bwd_workspace_bytes(600, 8);
  Array bigger(DType::kU8, {need + 16});
  for (int offset : {0, 8}) {
    unsigned char* base = bigger.bytes.data();
    base += (16 - reinterpret_cast<uintptr_t>(base) % 16) % 16 + offset;
    fake::CallFrame f;
    add_arg(f, c.dy);
    add_arg(f, c.x);
    add_arg(f, c.gamma);
    add_ret(f, c.dx);
    add_ret(f, c.dgamma);
    f.ret(XLA_FFI_DataType_U8, {need}, base);
    f.attr("epsilon", kEps);
    const fake::CallResult r = fake::call(test_rms_norm_bwd_cpu, f);
    if (offset == 0) {
      EXPECT_TRUE(r.ok()) << r.message;
    } else {
      EXPECT_TRUE(Fails(r, XLA_FFI_Error_Code_INVALID_ARGUMENT,
                        {"aiter.rms_norm_bwd: operand workspace: expected a 16-byte aligned "
                         "buffer, got address " +
                         std::to_string(reinterpret_cast<uintptr_t>(base))}));
    }
  }
}

TEST(RmsNormFfiErrors, BackwardOperandMismatches) {
  {
    BwdCall c;
    c.dy = Array(DType::kF32, {600, 7});
    EXPECT_TRUE(
        Fails(c.call(false), XLA_FFI_Error_Code_INVALID_ARGUMENT,
              {"aiter.rms_norm_bwd: operand dy:", "expected f32[600,8]", "got f32[600,7]"}));
  }
  {
    BwdCall c;
    c.dgamma = Array(DType::kBF16, {8});
    EXPECT_TRUE(Fails(c.call(false), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                      {"aiter.rms_norm_bwd: operand dgamma:", "expected f32[8] (like gamma)"}));
  }
  {
    BwdCall c;
    c.dx = Array(DType::kF32, {8, 600});
    EXPECT_TRUE(Fails(c.call(false), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                      {"aiter.rms_norm_bwd: operand dx:", "got f32[8,600]"}));
  }
  {
    BwdCall c;
    c.dresidual = Array(DType::kF32, {600, 9});
    EXPECT_TRUE(Fails(c.call(true), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                      {"aiter.rms_norm_with_add_bwd: operand dresidual:", "got f32[600,9]"}));
  }
  {
    // The fused backward's second operand is residual_out, and errors call it that.
    BwdCall c;
    c.x = Array(DType::kI32, {600, 8});
    EXPECT_TRUE(Fails(c.call(true), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                      {"aiter.rms_norm_with_add_bwd: operand residual_out:", "got i32"}));
  }
}

struct FusedCall {
  Array x{DType::kBF16, {4, 8}};
  Array residual{DType::kBF16, {4, 8}};
  Array gamma{DType::kBF16, {8}};
  Array y{DType::kBF16, {4, 8}};
  Array residual_out{DType::kBF16, {4, 8}};

  fake::CallResult call() {
    fake::CallFrame f;
    add_arg(f, x);
    add_arg(f, residual);
    add_arg(f, gamma);
    add_ret(f, y);
    add_ret(f, residual_out);
    f.attr("epsilon", kEps);
    return fake::call(test_rms_norm_with_add_cpu, f);
  }
};

TEST(RmsNormFfiErrors, FusedResidualMismatch) {
  {
    FusedCall c;
    EXPECT_TRUE(c.call().ok());
    c.residual = Array(DType::kBF16, {4, 7});
    EXPECT_TRUE(Fails(c.call(), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                      {"aiter.rms_norm_with_add: operand residual:", "expected bf16[4,8] (like x)",
                       "got bf16[4,7]"}));
  }
  {
    FusedCall c;
    c.residual = Array(DType::kF16, {4, 8});
    EXPECT_TRUE(Fails(c.call(), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                      {"aiter.rms_norm_with_add: operand residual:", "got f16[4,8]"}));
  }
  {
    FusedCall c;
    c.residual_out = Array(DType::kBF16, {2, 2, 8});
    EXPECT_TRUE(Fails(c.call(), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                      {"aiter.rms_norm_with_add: operand residual_out:", "got bf16[2,2,8]"}));
  }
}

// ---- the registration handshake ---------------------------------------------------------------

TEST(RmsNormFfiHandshake, HostHandlersReportVersionAndNoTraits) {
  for (XLA_FFI_Handler* h :
       {test_rms_norm_cpu, test_rms_norm_with_add_cpu, test_rms_norm_bwd_cpu,
        test_rms_norm_with_add_bwd_cpu, test_rms_norm_cpu_initialize,
        test_rms_norm_with_add_cpu_initialize, test_rms_norm_bwd_cpu_initialize,
        test_rms_norm_with_add_bwd_cpu_initialize}) {
    const fake::Handshake hs = fake::handshake(h);
    ASSERT_TRUE(hs.result.ok()) << hs.result.message;
    EXPECT_EQ(hs.metadata.api_version.major_version, XLA_FFI_API_MAJOR);
    EXPECT_EQ(hs.metadata.api_version.minor_version, XLA_FFI_API_MINOR);
    EXPECT_EQ(hs.metadata.traits, 0u);  // the CPU has no command buffers
  }
}

static_assert(ja::ffi::Handler<ops::RmsNorm, Host>::kTraits == 0);
static_assert(ja::ffi::Handler<ops::RmsNorm, FakeGpu>::kTraits ==
              XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE);

TEST(RmsNormFfiHandshake, CommandBufferCompatibleBackendReportsTheTrait) {
  EXPECT_EQ((ja::ffi::Handler<ops::RmsNormBwd, FakeGpu>::kTraits),
            XLA_FFI_Handler_Traits{XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE});
  for (XLA_FFI_Handler* h : {gpu_rms_norm, gpu_rms_norm_initialize}) {
    const fake::Handshake hs = fake::handshake(h);
    ASSERT_TRUE(hs.result.ok()) << hs.result.message;
    EXPECT_EQ(hs.metadata.api_version.major_version, XLA_FFI_API_MAJOR);
    EXPECT_EQ(hs.metadata.api_version.minor_version, XLA_FFI_API_MINOR);
    EXPECT_EQ(hs.metadata.traits,
              XLA_FFI_Handler_Traits{XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE});
  }
}

// ---- what reaches a GPU-like backend ----------------------------------------------------------

class RmsNormFfiGpu : public ::testing::Test {
 protected:
  void SetUp() override { FakeGpu::reset(); }
  void TearDown() override { FakeGpu::reset(); }
};

// The vector width the forward plan picks for FwdCall's buffers (their addresses decide it).
int fwd_vec(FwdCall& c) {
  return ops::rmsnorm_vec(8, DType::kF32,
                          reinterpret_cast<uintptr_t>(c.x.data()) |
                              reinterpret_cast<uintptr_t>(c.gamma.data()) |
                              reinterpret_cast<uintptr_t>(c.y.data()));
}

TEST_F(RmsNormFfiGpu, StreamAndDeviceComeFromTheContext) {
  FwdCall c;
  FakeGpuStream stream{7};
  fake::FakeContext ctx{&stream, 3};
  fake::CallFrame f = c.frame();
  f.context(&ctx);
  const fake::CallResult r = fake::call(gpu_rms_norm, f);
  ASSERT_TRUE(r.ok()) << r.message;
  ASSERT_EQ(FakeGpu::launches.size(), 1u);
  EXPECT_EQ(FakeGpu::launches[0].device, 3);
  EXPECT_EQ(FakeGpu::launches[0].stream, &stream);
  EXPECT_TRUE(FakeGpu::memsets.empty());
  const KernelInfo& info = *FakeGpu::launches[0].launch.kernel;
  EXPECT_TRUE(info.symbol.starts_with("jax_aiter_rmsnorm_fwd_f32_")) << info.symbol;
  EXPECT_EQ(&info, &ja::kernels::rmsnorm_fwd_kernel(DType::kF32, fwd_vec(c), false));
  // Execute resolves the plan's kernel on the call's device (a cache lookup in a real backend)
  // and launches exactly what resolve handed out for it.
  ASSERT_EQ(FakeGpu::resolved.size(), 1u);
  EXPECT_EQ(FakeGpu::resolved[0].device, 3);
  EXPECT_EQ(FakeGpu::resolved[0].info, &info);
  EXPECT_EQ(FakeGpu::launches[0].kernel->info, &info);
  // The packed bytes carry the very buffers of the call.
  const auto args = FakeGpu::launches[0].launch.args.unpack<ja::kernels::RmsNormFwdArgs>();
  EXPECT_EQ(args.x, c.x.data());
  EXPECT_EQ(args.y, c.y.data());
  EXPECT_EQ(args.rows, 4);
  EXPECT_EQ(args.n, 8);
  EXPECT_EQ(args.epsilon, kEps);
}

TEST_F(RmsNormFfiGpu, NoStreamIsADecodeError) {
  FwdCall c;
  fake::CallFrame f = c.frame();  // no context: XLA_FFI_Stream_Get fails
  EXPECT_TRUE(Fails(fake::call(gpu_rms_norm, f), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"Failed to get platform stream", "XLA_FFI_Stream_Get"}));
  EXPECT_TRUE(FakeGpu::launches.empty());
  EXPECT_TRUE(FakeGpu::resolved.empty());
}

// The initialize stage resolves (loads, checks) every kernel of the plan for the call's shapes on
// the call's device, and launches nothing.
TEST_F(RmsNormFfiGpu, InitializeResolvesThePlansKernels) {
  FwdCall c;
  FakeGpuStream stream;
  fake::FakeContext ctx{&stream, 2};
  fake::CallFrame f = c.frame();
  f.context(&ctx).stage(XLA_FFI_ExecutionStage_INITIALIZE);
  const fake::CallResult r = fake::call(gpu_rms_norm_initialize, f);
  ASSERT_TRUE(r.ok()) << r.message;
  ASSERT_EQ(FakeGpu::resolved.size(), 1u);
  EXPECT_EQ(FakeGpu::resolved[0].device, 2);
  EXPECT_EQ(FakeGpu::resolved[0].info,
            &ja::kernels::rmsnorm_fwd_kernel(DType::kF32, fwd_vec(c), false));
  EXPECT_TRUE(FakeGpu::launches.empty());
  EXPECT_TRUE(FakeGpu::memsets.empty());
}

TEST_F(RmsNormFfiGpu, InitializeResolvesBothBackwardKernels) {
  BwdCall c;
  FakeGpuStream stream;
  fake::FakeContext ctx{&stream, 1};
  fake::CallFrame f = c.frame(false);
  f.context(&ctx).stage(XLA_FFI_ExecutionStage_INITIALIZE);
  const fake::CallResult r = fake::call(gpu_rms_norm_bwd_initialize, f);
  ASSERT_TRUE(r.ok()) << r.message;
  // n = 8 stays in registers: the in-register row pass, then the f32 dgamma reduction.
  ASSERT_EQ(FakeGpu::resolved.size(), 2u);
  EXPECT_EQ(FakeGpu::resolved[0].device, 1);
  EXPECT_EQ(FakeGpu::resolved[1].device, 1);
  const KernelInfo& rows_pass = *FakeGpu::resolved[0].info;
  EXPECT_TRUE(rows_pass.symbol.starts_with("jax_aiter_rmsnorm_bwd_f32_v")) << rows_pass.symbol;
  EXPECT_TRUE(rows_pass.fill_device);
  EXPECT_EQ(FakeGpu::resolved[1].info, &ja::kernels::rmsnorm_dgamma_kernel(DType::kF32));
  EXPECT_TRUE(FakeGpu::launches.empty());

  // Execute launches those two, in that order, each with the Kernel resolve gave for it.
  FakeGpu::reset();
  f.stage(XLA_FFI_ExecutionStage_EXECUTE);
  const fake::CallResult e = fake::call(gpu_rms_norm_bwd, f);
  ASSERT_TRUE(e.ok()) << e.message;
  ASSERT_EQ(FakeGpu::launches.size(), 2u);
  EXPECT_EQ(FakeGpu::launches[0].launch.kernel, &rows_pass);
  EXPECT_EQ(FakeGpu::launches[0].kernel->info, &rows_pass);
  EXPECT_TRUE(FakeGpu::launches[0].launch.fill_device);
  EXPECT_EQ(FakeGpu::launches[1].launch.kernel, &ja::kernels::rmsnorm_dgamma_kernel(DType::kF32));
  EXPECT_EQ(FakeGpu::launches[1].kernel->info, FakeGpu::launches[1].launch.kernel);
  const auto a = FakeGpu::launches[0].launch.args.unpack<ja::kernels::RmsNormBwdArgs>();
  EXPECT_EQ(a.workspace, c.workspace.data());
}

// A kernel whose code object is nowhere to be found passes the call to the next tier; RMSNorm has
// no other, so the call fails saying why each tier did not run it. Any other failure to resolve
// is the call's error as it stands. Either way nothing is launched.
TEST_F(RmsNormFfiGpu, KernelThatDoesNotResolveIsAClearError) {
  FwdCall c;
  FakeGpuStream stream;
  fake::FakeContext ctx{&stream, 0};
  fake::CallFrame f = c.frame();
  f.context(&ctx);
  FakeGpu::resolve_status =
      ja::NotFound("jax_aiter: code object 'rmsnorm' for sm_90: not embedded");
  EXPECT_TRUE(Fails(fake::call(gpu_rms_norm, f), XLA_FFI_Error_Code_UNIMPLEMENTED,
                    {"aiter.rms_norm: no tier runs this call (portable: jax_aiter: code object "
                     "'rmsnorm' for sm_90: not embedded)"}));
  FakeGpu::resolve_status = ja::FailedPrecondition("kernel arguments disagree");
  EXPECT_TRUE(Fails(fake::call(gpu_rms_norm, f), XLA_FFI_Error_Code_FAILED_PRECONDITION,
                    {"aiter.rms_norm: kernel arguments disagree"}));
  f.stage(XLA_FFI_ExecutionStage_INITIALIZE);
  EXPECT_TRUE(Fails(fake::call(gpu_rms_norm_initialize, f), XLA_FFI_Error_Code_FAILED_PRECONDITION,
                    {"aiter.rms_norm: kernel arguments disagree"}));
  EXPECT_TRUE(FakeGpu::launches.empty());
}

TEST_F(RmsNormFfiGpu, LaunchErrorKeepsItsCode) {
  FwdCall c;
  FakeGpuStream stream;
  fake::FakeContext ctx{&stream, 0};
  fake::CallFrame f = c.frame();
  f.context(&ctx);
  FakeGpu::launch_status = ja::Unimplemented("no kernel for this device");
  EXPECT_TRUE(Fails(fake::call(gpu_rms_norm, f), XLA_FFI_Error_Code_UNIMPLEMENTED,
                    {"no kernel for this device"}));
}

TEST_F(RmsNormFfiGpu, ExceptionBecomesInternalError) {
  FwdCall c;
  FakeGpuStream stream;
  fake::FakeContext ctx{&stream, 0};
  fake::CallFrame f = c.frame();
  f.context(&ctx);
  FakeGpu::throw_on_launch = true;
  EXPECT_TRUE(Fails(fake::call(gpu_rms_norm, f), XLA_FFI_Error_Code_INTERNAL,
                    {"aiter.rms_norm: internal error: boom"}));
}

// ---- register_all -------------------------------------------------------------------------------

XLA_FFI_Api recording_api() {
  XLA_FFI_Api api = fake::make_fake_api();
  api.XLA_FFI_Handler_Register = &fake::record_registration;
  fake::registrations().clear();
  return api;
}

TEST(RmsNormFfiRegister, RegistersTheFourHandlersForCpu) {
  const XLA_FFI_Api api = recording_api();
  EXPECT_TRUE(fake::take(&api, ja::ffi::register_all(&api, "cpu")).ok());
  const auto& regs = fake::registrations();
  ASSERT_EQ(regs.size(), 4u);

  struct Want {
    std::string_view name;
    XLA_FFI_Handler* execute;
    XLA_FFI_Handler* initialize;
  };
  const Want want[] = {
      {"aiter.rms_norm", test_rms_norm_cpu, test_rms_norm_cpu_initialize},
      {"aiter.rms_norm_with_add", test_rms_norm_with_add_cpu,
       test_rms_norm_with_add_cpu_initialize},
      {"aiter.rms_norm_bwd", test_rms_norm_bwd_cpu, test_rms_norm_bwd_cpu_initialize},
      {"aiter.rms_norm_with_add_bwd", test_rms_norm_with_add_bwd_cpu,
       test_rms_norm_with_add_bwd_cpu_initialize},
  };
  std::set<std::string> names;
  for (const fake::Registration& reg : regs) {
    names.insert(reg.name);
    EXPECT_EQ(reg.platform, "cpu");
    EXPECT_EQ(reg.traits, 0u);
    EXPECT_EQ(reg.bundle.instantiate, nullptr);
    EXPECT_EQ(reg.bundle.prepare, nullptr);
    const auto* w = std::find_if(std::begin(want), std::end(want),
                                 [&](const Want& x) { return x.name == reg.name; });
    ASSERT_NE(w, std::end(want)) << "unexpected handler " << reg.name;
    EXPECT_EQ(reg.bundle.execute, w->execute) << reg.name;
    EXPECT_EQ(reg.bundle.initialize, w->initialize) << reg.name;
  }
  EXPECT_EQ(names, (std::set<std::string>{"aiter.rms_norm", "aiter.rms_norm_with_add",
                                          "aiter.rms_norm_bwd", "aiter.rms_norm_with_add_bwd"}));
}

// JAX_AITER_DEFINE_HANDLER's registry entry also carries what the tools ask of the op: its spec
// (the operand order Python follows) and the workspace size of a call (which Python allocates).
TEST(RmsNormFfiRegister, EntriesCarryTheOpsTools) {
  for (std::string_view name : {"aiter.rms_norm", "aiter.rms_norm_with_add", "aiter.rms_norm_bwd",
                                "aiter.rms_norm_with_add_bwd"}) {
    const auto e = ja::ffi::HandlerRegistry::find(name);
    ASSERT_TRUE(e.ok()) << e.status().message();
    EXPECT_EQ(e->backend, ja::BackendKind::kHost) << name;
    ASSERT_NE(e->spec, nullptr) << name;
    ASSERT_NE(e->workspace_bytes, nullptr) << name;
    EXPECT_NE(e->plan, nullptr) << name;
    EXPECT_NE(e->spec().find("\"name\": \"epsilon\""), std::string::npos) << e->spec();
  }
  const auto bwd = ja::ffi::HandlerRegistry::find("aiter.rms_norm_bwd");
  ASSERT_TRUE(bwd.ok());
  EXPECT_NE(bwd->spec().find("{\"name\": \"dy\", \"kind\": \"input\"}, {\"name\": \"x\""),
            std::string::npos)
      << bwd->spec();
  const auto bytes = bwd->workspace_bytes(
      R"({"operands": {"dy": {"dtype": "f32", "shape": [20, 30, 8]},
                       "x": {"dtype": "f32", "shape": [20, 30, 8]},
                       "gamma": {"dtype": "f32", "shape": [8]},
                       "dx": {"dtype": "f32", "shape": [20, 30, 8]},
                       "dgamma": {"dtype": "f32", "shape": [8]}},
          "attributes": {"epsilon": 1e-6}})");
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  EXPECT_EQ(*bytes, ops::rmsnorm_bwd_workspace_bytes(600, 8));
}

TEST(RmsNormFfiRegister, RegistersNothingForRocm) {
  const XLA_FFI_Api api = recording_api();
  EXPECT_TRUE(fake::take(&api, ja::ffi::register_all(&api, "ROCM")).ok());
  EXPECT_TRUE(fake::registrations().empty());
  EXPECT_TRUE(fake::take(&api, ja::ffi::register_all(&api, "CUDA")).ok());
  EXPECT_TRUE(fake::registrations().empty());
}

int g_register_calls = 0;
XLA_FFI_Error* refuse_second(XLA_FFI_Handler_Register_Args* args) {
  if (++g_register_calls < 2) return fake::record_registration(args);
  XLA_FFI_Error_Create_Args e{};
  e.struct_size = XLA_FFI_Error_Create_Args_STRUCT_SIZE;
  e.errc = XLA_FFI_Error_Code_ALREADY_EXISTS;
  e.message = "already registered";
  return fake::fake_api()->XLA_FFI_Error_Create(&e);
}

TEST(RmsNormFfiRegister, StopsAtTheFirstErrorAndHandsItBack) {
  XLA_FFI_Api api = recording_api();
  api.XLA_FFI_Handler_Register = &refuse_second;
  g_register_calls = 0;
  const fake::CallResult r = fake::take(&api, ja::ffi::register_all(&api, "cpu"));
  EXPECT_TRUE(Fails(r, XLA_FFI_Error_Code_ALREADY_EXISTS, {"already registered"}));
  EXPECT_EQ(g_register_calls, 2);
  EXPECT_EQ(fake::registrations().size(), 1u);
}

}  // namespace
