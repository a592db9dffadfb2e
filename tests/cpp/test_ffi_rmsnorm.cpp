// The RMSNorm FFI handlers, called the way XLA calls them but with no XLA: through the fake
// runtime of jax_aiter/testing/fake_ffi.hpp. Covers the registration handshake, every decode and
// validation error, results through the Host backend against a float64 reference written here,
// and register_all.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <ostream>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "jax_aiter/ffi/binder.hpp"
#include "jax_aiter/ffi/registry.hpp"
#include "jax_aiter/ffi/rmsnorm.hpp"
#include "jax_aiter/kernels/rmsnorm_host.hpp"
#include "jax_aiter/ops/rmsnorm.hpp"
#include "jax_aiter/runtime/host.hpp"
#include "jax_aiter/testing/fake_ffi.hpp"

namespace ja = jax_aiter;
namespace fake = jax_aiter::testing;
namespace ops = jax_aiter::ops;
using ja::DType;
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

struct FakeGpu {
  static constexpr ja::BackendKind kKind = ja::BackendKind::kCuda;
  static constexpr bool kCommandBufferCompatible = true;
  using Stream = FakeGpuStream*;

  struct Seen {
    int device;
    Stream stream;
    ja::kernels::Launch launch;
  };
  static inline std::vector<Seen> launches;
  static inline int prepared_device = -1;
  static inline bool throw_on_launch = false;
  static inline ja::Status launch_status;

  static ja::Expected<ja::Target> target(int /*device*/) {
    return ja::Target{ja::BackendKind::kCuda, ja::Arch::kSm90, 132};
  }
  template <ja::runtime::Module M>
  static ja::Status prepare(int device) {
    prepared_device = device;
    return {};
  }
  template <ja::runtime::Module M>
  static ja::Status launch(int device, Stream stream, const ja::kernels::Launch& l) {
    if (throw_on_launch) throw std::runtime_error("boom");
    launches.push_back({device, stream, l});
    return launch_status;
  }
  static void reset() {
    launches.clear();
    prepared_device = -1;
    throw_on_launch = false;
    launch_status = {};
  }
};
static_assert(ja::runtime::Backend<FakeGpu>);

XLA_FFI_Error* gpu_rms_norm(XLA_FFI_CallFrame* f) {
  return ja::ffi::Handler<ops::RmsNorm, FakeGpu>::execute(f);
}
XLA_FFI_Error* gpu_rms_norm_initialize(XLA_FFI_CallFrame* f) {
  return ja::ffi::Handler<ops::RmsNorm, FakeGpu>::initialize(f);
}

// ---- element types, converted here independently of core/dtype.hpp -------------------------

// Rounds through float, then to nearest even on the 16 dropped bits. Exact where it matters: a
// sum of two stored values (the fused residual) is a float already; a random input only needs
// to be some bf16 value.
uint16_t to_bf16(double v) {
  const uint32_t u = std::bit_cast<uint32_t>(static_cast<float>(v));
  if (std::isnan(v)) return 0x7FC0;
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
double from_bf16(uint16_t b) { return std::bit_cast<float>(uint32_t{b} << 16); }
uint16_t to_f16(double v) { return std::bit_cast<uint16_t>(static_cast<_Float16>(v)); }
double from_f16(uint16_t b) { return static_cast<double>(std::bit_cast<_Float16>(b)); }

XLA_FFI_DataType xla_type(DType t) {
  switch (t) {
    case DType::kBF16: return XLA_FFI_DataType_BF16;
    case DType::kF16: return XLA_FFI_DataType_F16;
    case DType::kF32: return XLA_FFI_DataType_F32;
    case DType::kI32: return XLA_FFI_DataType_S32;
    case DType::kU8: return XLA_FFI_DataType_U8;
    default: ADD_FAILURE() << "no XLA type in this test for " << ja::name(t); return {};
  }
}

size_t elem_bytes(DType t) {
  if (t == DType::kF32 || t == DType::kI32) return 4;
  return t == DType::kU8 ? 1 : 2;
}

// A host array of one of the test's dtypes.
struct Array {
  DType dtype;
  std::vector<int64_t> dims;
  std::vector<unsigned char> bytes;

  Array(DType t, std::vector<int64_t> d) : dtype(t), dims(std::move(d)) {
    bytes.resize(static_cast<size_t>(size()) * elem_bytes(t));
  }
  int64_t size() const {
    int64_t s = 1;
    for (int64_t d : dims) s *= d;
    return s;
  }
  void* data() { return bytes.data(); }
  double at(int64_t i) const {
    uint16_t h;
    float f;
    switch (dtype) {
      case DType::kBF16: std::memcpy(&h, &bytes[i * 2], 2); return from_bf16(h);
      case DType::kF16: std::memcpy(&h, &bytes[i * 2], 2); return from_f16(h);
      default: std::memcpy(&f, &bytes[i * 4], 4); return f;
    }
  }
  // Rounds to the dtype; returns the value stored.
  double set(int64_t i, double v) {
    uint16_t h;
    float f;
    switch (dtype) {
      case DType::kBF16:
        h = to_bf16(v);
        std::memcpy(&bytes[i * 2], &h, 2);
        break;
      case DType::kF16:
        h = to_f16(v);
        std::memcpy(&bytes[i * 2], &h, 2);
        break;
      default:
        f = static_cast<float>(v);
        std::memcpy(&bytes[i * 4], &f, 4);
        break;
    }
    return at(i);
  }
  // All-ones bytes: a NaN in bf16, f16 and f32, so an unwritten element cannot pass.
  void poison() { std::fill(bytes.begin(), bytes.end(), 0xFF); }
};

void add_arg(fake::CallFrame& f, Array& a) { f.arg(xla_type(a.dtype), a.dims, a.data()); }
void add_ret(fake::CallFrame& f, Array& a) { f.ret(xla_type(a.dtype), a.dims, a.data()); }

// Deterministic inputs (splitmix64), independent of the standard library's distributions.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  double uniform(double lo, double hi) {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return lo + (hi - lo) * (static_cast<double>(z >> 11) * 0x1.0p-53);
  }
  // Magnitude in [0.25, 2] with a random sign: no value near zero, so the cancellation in
  // dx = r*g*dy - r^3*x*mean(g*dy*x) stays within float32's reach even at n = 1.
  double signed_away_from_zero() {
    const double m = uniform(0.25, 2.0);
    return uniform(0, 1) < 0.5 ? -m : m;
  }

 private:
  uint64_t s_;
};

void fill(Array& a, Rng& rng, double lo, double hi) {
  for (int64_t i = 0; i < a.size(); ++i) a.set(i, rng.uniform(lo, hi));
}
void fill_signed(Array& a, Rng& rng) {
  for (int64_t i = 0; i < a.size(); ++i) a.set(i, rng.signed_away_from_zero());
}

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

// y = x * rsqrt(mean(x^2) + eps) * gamma, row by row over the last dimension.
std::vector<double> rms_norm_ref(const std::vector<double>& x, const std::vector<double>& gamma,
                                 double eps) {
  const size_t n = gamma.size();
  std::vector<double> y(x.size());
  for (size_t base = 0; base < x.size(); base += n) {
    double ss = 0;
    for (size_t j = 0; j < n; ++j) ss += x[base + j] * x[base + j];
    const double r = 1.0 / std::sqrt(ss / n + eps);
    for (size_t j = 0; j < n; ++j) y[base + j] = x[base + j] * r * gamma[j];
  }
  return y;
}

struct BwdRef {
  std::vector<double> dx, dgamma;
};

// With r = (mean(x^2) + eps)^-1/2 and y_j = x_j r g_j: dr/dx_k = -r^3 x_k / n, so
//   dx_k     = r g_k dy_k - (r^3 x_k / n) * sum_j dy_j g_j x_j   [+ dresidual_k]
//   dgamma_j = sum over rows of dy_j x_j r
BwdRef rms_norm_bwd_ref(const std::vector<double>& dy, const std::vector<double>& x,
                        const std::vector<double>& gamma, const std::vector<double>* dresidual,
                        double eps) {
  const size_t n = gamma.size();
  BwdRef out{std::vector<double>(x.size()), std::vector<double>(n, 0.0)};
  for (size_t base = 0; base < x.size(); base += n) {
    double ss = 0, dot = 0;
    for (size_t j = 0; j < n; ++j) {
      ss += x[base + j] * x[base + j];
      dot += dy[base + j] * gamma[j] * x[base + j];
    }
    const double r = 1.0 / std::sqrt(ss / n + eps);
    for (size_t j = 0; j < n; ++j) {
      double d = r * gamma[j] * dy[base + j] - r * r * r * x[base + j] * dot / n;
      if (dresidual) d += (*dresidual)[base + j];
      out.dx[base + j] = d;
      out.dgamma[j] += dy[base + j] * x[base + j] * r;
    }
  }
  return out;
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
    auto tensor = [](Array& a) {
      ops::Tensor t;
      t.data = a.data();
      t.dtype = a.dtype;
      t.rank = static_cast<int>(a.dims.size());
      for (int i = 0; i < t.rank; ++i) t.dims[i] = a.dims[i];
      return t;
    };
    ops::RmsNormBwd::Params p{tensor(dy), tensor(x),      tensor(gamma),     {},
                              tensor(dx), tensor(dgamma), tensor(workspace), kEps};
    const ja::Target target = *Host::target(0);
    ASSERT_TRUE(ops::RmsNormBwd::validate(p, target).ok());
    const auto plan = ops::RmsNormBwd::plan(p, target);
    ja::kernels::Launch main = plan.launches.launches[0];
    ASSERT_TRUE(main.fill_device);
    const auto a = main.args.unpack<ja::kernels::RmsNormBwdArgs>();
    main.grid.x = ja::kernels::fill_device_blocks(main.grid.x, 3, 1);  // 3 units, 1 block each
    ASSERT_EQ(main.grid.x, 3u);
    ASSERT_TRUE(Host::launch<ja::kernels::RmsNormModule>(0, nullptr, main).ok());
    ASSERT_TRUE(
        Host::launch<ja::kernels::RmsNormModule>(0, nullptr, plan.launches.launches[1]).ok());
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

// XLA's decoder rejects a call with no epsilon before our code runs: its message names the
// attribute count, not the op (see the report on binder.hpp).
TEST(RmsNormFfiErrors, MissingAttribute) {
  FwdCall c;
  fake::CallFrame f = c.frame();
  f.remove_attr("epsilon");
  EXPECT_TRUE(Fails(fake::call(test_rms_norm_cpu, f), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"Wrong number of attributes: expected 1 but got 0"}));
}

TEST(RmsNormFfiErrors, MisnamedAttribute) {
  FwdCall c;
  fake::CallFrame f = c.frame();
  f.remove_attr("epsilon").attr("eps", kEps);
  EXPECT_TRUE(Fails(fake::call(test_rms_norm_cpu, f), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"Attribute name mismatch: eps vs epsilon"}));
}

// A Python float arrives as F64; the binding takes F32. XLA's decoder reports the type mismatch
// and nothing aborts.
TEST(RmsNormFfiErrors, EpsilonSentAsF64) {
  FwdCall c;
  fake::CallFrame f = c.frame();
  f.attr("epsilon", 1e-6);
  EXPECT_TRUE(Fails(fake::call(test_rms_norm_cpu, f), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"Wrong scalar data type: expected F32 but got F64"}));
}

TEST(RmsNormFfiErrors, EpsilonOfOtherScalarTypes) {
  FwdCall c;
  fake::CallFrame f = c.frame();
  f.attr("epsilon", int64_t{0});
  EXPECT_TRUE(Fails(fake::call(test_rms_norm_cpu, f), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"Wrong scalar data type: expected F32 but got S64"}));
  f.attr("epsilon", true);
  EXPECT_TRUE(Fails(fake::call(test_rms_norm_cpu, f), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"Wrong scalar data type: expected F32 but got PRED"}));
  f.string_attr("epsilon", "1e-6");
  EXPECT_TRUE(Fails(fake::call(test_rms_norm_cpu, f), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"Wrong attribute type"}));
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
  EXPECT_TRUE(Fails(call_fwd(c), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"aiter.rms_norm: operand x:", "at least one row", "got f32[0,8]"}));
}

TEST(RmsNormFfiErrors, EmptyLastDimension) {
  FwdCall c;
  c.x = Array(DType::kF32, {4, 0});
  c.gamma = Array(DType::kF32, {0});
  c.y = Array(DType::kF32, {4, 0});
  EXPECT_TRUE(Fails(call_fwd(c), XLA_FFI_Error_Code_INVALID_ARGUMENT,
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
                    {"Wrong number of arguments: expected 2 but got 1"}));
}

TEST(RmsNormFfiErrors, WrongNumberOfResults) {
  FwdCall c;
  fake::CallFrame f = c.frame();
  add_ret(f, c.y);
  EXPECT_TRUE(Fails(fake::call(test_rms_norm_cpu, f), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"Wrong number of results: expected 1 but got 2"}));
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

// The initialize stage of a Host handler loads nothing and succeeds, with any operands.
TEST(RmsNormFfiErrors, InitializeStageSucceeds) {
  FwdCall c;
  fake::CallFrame f = c.frame();
  f.stage(XLA_FFI_ExecutionStage_INITIALIZE);
  const fake::CallResult r = fake::call(test_rms_norm_cpu_initialize, f);
  EXPECT_TRUE(r.ok()) << r.message;
}

struct BwdCall {
  Array dy{DType::kF32, {600, 8}};
  Array x{DType::kF32, {600, 8}};
  Array gamma{DType::kF32, {8}};
  Array dresidual{DType::kF32, {600, 8}};
  Array dx{DType::kF32, {600, 8}};
  Array dgamma{DType::kF32, {8}};
  Array workspace{DType::kU8, {ops::rmsnorm_bwd_workspace_bytes(600, 8)}};

  fake::CallResult call(bool fused) {
    fake::CallFrame f;
    add_arg(f, dy);
    add_arg(f, x);
    add_arg(f, gamma);
    if (fused) add_arg(f, dresidual);
    add_ret(f, dx);
    add_ret(f, dgamma);
    add_ret(f, workspace);
    f.attr("epsilon", kEps);
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
  const std::string want = "expected at least " + std::to_string(need) + " bytes";
  const std::string got = "got " + std::to_string(need - 1);
  EXPECT_TRUE(Fails(c.call(false), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"aiter.rms_norm_bwd: operand workspace:", want, got}));
  EXPECT_TRUE(Fails(c.call(true), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    {"aiter.rms_norm_with_add_bwd: operand workspace:"}));
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
    // The fused backward's second operand is residual_out; validation calls it x (see report).
    BwdCall c;
    c.x = Array(DType::kI32, {600, 8});
    EXPECT_TRUE(Fails(c.call(true), XLA_FFI_Error_Code_INVALID_ARGUMENT,
                      {"aiter.rms_norm_with_add_bwd: operand", "got i32"}));
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
  const auto& info = ja::kernels::RmsNormModule::kKernels[FakeGpu::launches[0].launch.kernel];
  EXPECT_TRUE(info.symbol.starts_with("jax_aiter_rmsnorm_fwd_f32_")) << info.symbol;
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
}

TEST_F(RmsNormFfiGpu, InitializePreparesTheDevice) {
  FwdCall c;
  FakeGpuStream stream;
  fake::FakeContext ctx{&stream, 2};
  fake::CallFrame f = c.frame();
  f.context(&ctx).stage(XLA_FFI_ExecutionStage_INITIALIZE);
  const fake::CallResult r = fake::call(gpu_rms_norm_initialize, f);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(FakeGpu::prepared_device, 2);
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
