// Host-side cost of one FFI handler call, and proof that the execute path does not allocate.
//
//   BM_NoopHandler              decode + validate + tier + plan + pack + resolve + dispatch of an
//                               op whose one kernel (a Host twin) does nothing: the binder's whole
//                               overhead
//   BM_RmsNormDecodeValidatePlan  the real RmsNorm's share of that: Spec::decode, validate, the
//                               tier's plan
//   BM_RmsNormHandler, BM_RmsNormBwdHandler  the real handlers on the Host backend, small shapes
//                               (the Host kernel twin's work included)
//
// Every benchmark also reports allocs_per_call, counted through a replaced global operator new
// over a fixed number of calls outside the timed loop, after one warm-up call (which builds XLA's
// handler object and lets the backend resolve, and cache, the plan's kernels). Any allocation makes
// the benchmark report an error and the program exit 1 (the ctest test bench_handler_allocs relies
// on that).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/ffi/attention.hpp"
#include "jax_aiter/ffi/binder.hpp"
#include "jax_aiter/ffi/flatmm_fp8.hpp"
#include "jax_aiter/ffi/gemm_fp4.hpp"
#include "jax_aiter/ffi/gemm_fp8_mi350.hpp"
#include "jax_aiter/ffi/gemm_fp8bs.hpp"
#include "jax_aiter/ffi/gemm_i8.hpp"
#include "jax_aiter/ffi/rmsnorm.hpp"
#include "jax_aiter/ffi/spec.hpp"
#include "jax_aiter/ffi/tensor.hpp"
#include "jax_aiter/host_twins/rmsnorm.hpp"
#include "jax_aiter/kernels/kernel.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/ops/attention.hpp"
#include "jax_aiter/ops/dispatch.hpp"
#include "jax_aiter/ops/rmsnorm.hpp"
#include "jax_aiter/ops/tensor.hpp"
#include "jax_aiter/runtime/host.hpp"
#include "jax_aiter/testing/fake_ffi.hpp"

// ---- counting allocator --------------------------------------------------------------------

namespace {
std::atomic<uint64_t> g_allocs{0};

void* counted_alloc(std::size_t size) {
  g_allocs.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size ? size : 1);
}
void* counted_aligned_alloc(std::size_t size, std::align_val_t align) {
  g_allocs.fetch_add(1, std::memory_order_relaxed);
  void* p = nullptr;
  const std::size_t a = std::max(static_cast<std::size_t>(align), sizeof(void*));
  return posix_memalign(&p, a, size ? size : 1) == 0 ? p : nullptr;
}
void* or_throw(void* p) {
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
}  // namespace

// The replacements pair malloc with free; GCC, seeing operator new's result reach free() once
// delete is inlined, would call that a mismatch.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t n) { return or_throw(counted_alloc(n)); }
void* operator new[](std::size_t n) { return or_throw(counted_alloc(n)); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n); }
void* operator new(std::size_t n, std::align_val_t a) {
  return or_throw(counted_aligned_alloc(n, a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return or_throw(counted_aligned_alloc(n, a));
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_aligned_alloc(n, a);
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_aligned_alloc(n, a);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace ja = jax_aiter;
namespace fake = jax_aiter::testing;

// ---- a no-op op: the binder's overhead with nothing behind it ------------------------------

namespace bench {

struct NoopArgs {
  const void* x;
  void* y;
  int32_t n;
  float scale;
};

inline constexpr std::array kNoopFields{
    JAX_AITER_ARG_FIELD(NoopArgs, x), JAX_AITER_ARG_FIELD(NoopArgs, y),
    JAX_AITER_ARG_FIELD(NoopArgs, n), JAX_AITER_ARG_FIELD(NoopArgs, scale)};

inline constexpr ja::kernels::KernelInfo kNoopKernel{"bench_noop", "bench_noop", sizeof(NoopArgs),
                                                     kNoopFields};

// The twin does nothing but keep its arguments observable.
inline void noop_twin(const ja::kernels::KernelArgs& args, ja::kernels::Dim3, ja::kernels::Dim3) {
  benchmark::DoNotOptimize(args.size);
}
inline const ja::runtime::HostTwinRegistrar kNoopTwin({{"bench_noop", &noop_twin}});

struct NoopParams {
  ja::ops::Tensor x, y;
  float scale = 1.f;
  ja::ops::Dispatch dispatch;
};

struct NoopTier {
  static constexpr std::string_view kName = "portable";

  static ja::Verdict supports(const NoopParams&, const ja::Target&) { return ja::Verdict::yes(); }

  static void plan(const NoopParams& p, const ja::Target& /*target*/, ja::kernels::Plan& plan) {
    const int64_t n = p.x.elements();
    plan.launch(kNoopKernel, {static_cast<uint32_t>(ja::ceil_div(n, 256)), 1, 1}, {256, 1, 1},
                NoopArgs{p.x.data, p.y.data, static_cast<int32_t>(n), p.scale});
  }
};

struct NoopOp {
  static constexpr std::string_view kName = "bench.noop";
  using Params = NoopParams;
  using Tiers = std::tuple<NoopTier>;

  static ja::Status validate(const Params& p) {
    if (p.x.dtype != ja::DType::kF32 || p.x.rank < 1) {
      return ja::ops::operand_error(kName, "x", "expected f32[..., n]");
    }
    return ja::ops::expect_like(kName, "y", p.y, p.x, "x");
  }
};

}  // namespace bench

template <>
struct jax_aiter::ffi::FfiSpec<bench::NoopOp> {
  using P = bench::NoopOp::Params;
  static constexpr std::array operands{input("x", &P::x), output("y", &P::y)};
  static constexpr std::array attributes{attr<&P::scale>("scale", kRequired)};
};

JAX_AITER_DEFINE_HANDLER(bench_noop_cpu, bench::NoopOp, jax_aiter::runtime::Host);
JAX_AITER_DEFINE_HANDLER(bench_rms_norm_cpu, jax_aiter::ops::RmsNorm, jax_aiter::runtime::Host);
JAX_AITER_DEFINE_HANDLER(bench_rms_norm_bwd_cpu, jax_aiter::ops::RmsNormBwd,
                         jax_aiter::runtime::Host);

// ---- measuring -------------------------------------------------------------------------------

namespace {

bool g_failed = false;
constexpr int kCountedCalls = 1000;

// Counts heap allocations over kCountedCalls calls (after one warm-up call, which builds XLA's
// handler object once per process), then times the calls. `body` returns false on failure.
template <typename Body>
void measure(benchmark::State& state, Body body) {
  if (!body()) {
    g_failed = true;
    state.SkipWithError("the call failed");
    return;
  }
  const uint64_t before = g_allocs.load();
  for (int i = 0; i < kCountedCalls; ++i) body();
  const uint64_t allocs = g_allocs.load() - before;

  bool ok = true;
  for (auto _ : state) ok &= body();

  state.counters["allocs_per_call"] = static_cast<double>(allocs) / kCountedCalls;
  if (!ok) {
    g_failed = true;
    state.SkipWithError("a call failed");
  } else if (allocs != 0) {
    g_failed = true;
    const std::string what = "heap allocation on the execute path: allocs_per_call=" +
                             std::to_string(static_cast<double>(allocs) / kCountedCalls);
    state.SkipWithError(what.c_str());
  }
}

// A call frame and the f32 buffers (all ones) its operands point to.
struct Frame {
  std::vector<std::vector<float>> storage;
  fake::CallFrame frame;

  float* buffer(size_t elements) {
    storage.emplace_back(elements, 1.0f);
    return storage.back().data();
  }
};

bool call_ok(XLA_FFI_Handler* handler, XLA_FFI_CallFrame* frame) {
  XLA_FFI_Error* err = handler(frame);
  if (err == nullptr) return true;
  const fake::CallResult r = fake::take(frame->api, err);
  std::fprintf(stderr, "handler failed: %s\n", r.message.c_str());
  return false;
}

void BM_NoopHandler(benchmark::State& state) {
  Frame f;
  f.storage.reserve(2);
  f.frame.arg(XLA_FFI_DataType_F32, {8, 1024}, f.buffer(8 * 1024))
      .ret(XLA_FFI_DataType_F32, {8, 1024}, f.buffer(8 * 1024))
      .attr("scale", 1.0f);
  XLA_FFI_CallFrame* frame = f.frame.get();
  measure(state, [&] { return call_ok(bench_noop_cpu, frame); });
}
BENCHMARK(BM_NoopHandler);

// XLA buffers and an epsilon as a source for Spec<RmsNorm>::decode: the operands go through the
// same to_tensor as a call from XLA (ffi/tensor.hpp), without XLA's argument list around them.
struct BufferCall {
  std::array<XLA_FFI_Buffer*, 2> in;
  XLA_FFI_Buffer* out;
  float epsilon;

  size_t inputs() const { return in.size(); }
  size_t results() const { return 1; }
  ja::Expected<ja::ops::Tensor> input(size_t i, std::string_view name) const {
    return ja::ffi::to_tensor(ja::ops::RmsNorm::kName, name, xla::ffi::AnyBuffer(in[i]));
  }
  ja::Expected<ja::ops::Tensor> result(size_t, std::string_view name) const {
    return ja::ffi::to_tensor(ja::ops::RmsNorm::kName, name, xla::ffi::AnyBuffer(out));
  }
  template <typename Visit>
  ja::Status attributes(Visit&& visit) const {
    return visit("epsilon", ja::ffi::AttrValue::f32("F32", epsilon));
  }
  bool has_attribute(std::string_view name) const { return name == "epsilon"; }
};

// The real op's decode + validate + plan, from the XLA buffers a frame would carry.
void BM_RmsNormDecodeValidatePlan(benchmark::State& state) {
  const int64_t rows = state.range(0), n = state.range(1);
  std::vector<float> x(rows * n, 1.0f), gamma(n, 1.0f), y(rows * n);
  int64_t dims[2] = {rows, n};
  int64_t gdims[1] = {n};
  auto buffer = [](void* data, int64_t* d, int64_t rank) {
    XLA_FFI_Buffer b{};
    b.struct_size = XLA_FFI_Buffer_STRUCT_SIZE;
    b.dtype = XLA_FFI_DataType_F32;
    b.data = data;
    b.rank = rank;
    b.dims = d;
    return b;
  };
  XLA_FFI_Buffer bx = buffer(x.data(), dims, 2), bg = buffer(gamma.data(), gdims, 1),
                 by = buffer(y.data(), dims, 2);
  using Op = ja::ops::RmsNorm;
  using Tier = ja::ops::RmsNormForwardPortable<false>;
  const ja::Target target{ja::BackendKind::kHost, ja::Arch::kHost, 1};
  const BufferCall call{{&bx, &bg}, &by, 1e-6f};
  measure(state, [&] {
    auto params = ja::ffi::Spec<Op>::decode(call);
    if (!params || !Op::validate(*params).ok() ||
        !ja::ops::validate_dispatch<Op>(params->dispatch).ok() ||
        !Tier::supports(*params, target).ok()) {
      return false;
    }
    ja::kernels::Plan plan;
    Tier::plan(*params, target, plan);
    benchmark::DoNotOptimize(plan.count);
    return true;
  });
}
BENCHMARK(BM_RmsNormDecodeValidatePlan)->Args({1, 64})->Args({600, 4096});

// Any op's operands as XLA buffers and its attributes as values: a Spec<Op>::decode source.
template <typename Op>
struct GenericCall {
  std::vector<XLA_FFI_Buffer*> in, out;
  std::vector<std::pair<std::string_view, ja::ffi::AttrValue>> attrs;

  size_t inputs() const { return in.size(); }
  size_t results() const { return out.size(); }
  ja::Expected<ja::ops::Tensor> input(size_t i, std::string_view name) const {
    return ja::ffi::to_tensor(Op::kName, name, xla::ffi::AnyBuffer(in[i]));
  }
  ja::Expected<ja::ops::Tensor> result(size_t i, std::string_view name) const {
    return ja::ffi::to_tensor(Op::kName, name, xla::ffi::AnyBuffer(out[i]));
  }
  template <typename Visit>
  ja::Status attributes(Visit&& visit) const {
    for (const auto& [name, value] : attrs) JAX_AITER_RETURN_IF_ERROR(visit(name, value));
    return {};
  }
  bool has_attribute(std::string_view name) const {
    for (const auto& a : attrs) {
      if (a.first == name) return true;
    }
    return false;
  }
};

// Buffers described by (dtype, dims), backed by one zeroed arena; dims of {0} is an absent operand.
struct Buffers {
  std::vector<std::vector<int64_t>> dims;
  std::vector<XLA_FFI_Buffer> buffers;
  std::vector<unsigned char> arena;

  Buffers(std::initializer_list<std::pair<XLA_FFI_DataType, std::vector<int64_t>>> specs) {
    size_t bytes = 0;
    for (const auto& s : specs) {
      int64_t n = 1;
      for (int64_t d : s.second) n *= d;
      bytes += static_cast<size_t>(n) * 4 + 64;
    }
    arena.assign(bytes, 0);
    dims.reserve(specs.size());
    buffers.reserve(specs.size());
    size_t offset = 0;
    for (const auto& s : specs) {
      dims.push_back(s.second);
      int64_t n = 1;
      for (int64_t d : s.second) n *= d;
      XLA_FFI_Buffer b{};
      b.struct_size = XLA_FFI_Buffer_STRUCT_SIZE;
      b.dtype = s.first;
      b.data = n == 0 ? nullptr : arena.data() + offset;
      b.rank = static_cast<int64_t>(s.second.size());
      b.dims = dims.back().data();
      buffers.push_back(b);
      offset += static_cast<size_t>(n) * 4 + 64;
    }
  }
  XLA_FFI_Buffer* at(size_t i) { return &buffers[i]; }
};

// Attention's decode + validate + plan for one target (the execute path minus the launches): the
// ASM tier planned for gfx942 (AITER's v3 kernels, memsets and carved workspace in the backward)
// and the portable tier for sm_90. Batch b=2 s=512 hq=16 hk=4 d=128 causal, bf16.
template <typename Op>
void attention_plan(benchmark::State& state, GenericCall<Op>& call, const ja::Target& target) {
  measure(state, [&] {
    auto params = ja::ffi::Spec<Op>::decode(call);
    if (!params || !Op::validate(*params).ok() ||
        !ja::ops::validate_dispatch<Op>(params->dispatch).ok()) {
      return false;
    }
    ja::kernels::Plan plan;
    bool planned = false;
    auto try_tier = [&]<typename Tier>(std::type_identity<Tier>) {
      if (planned) return;
      const auto decision = ja::ops::decide<Tier>(*params, target);
      if (!decision.ok()) return;
      ja::ops::plan_with<Tier>(*params, target, *decision, plan);
      planned = true;
    };
    [&]<typename... T>(std::tuple<T...>*) {
      (try_tier(std::type_identity<T>{}), ...);
    }(static_cast<typename Op::Tiers*>(nullptr));
    benchmark::DoNotOptimize(plan.count);
    return planned;
  });
}

std::vector<std::pair<std::string_view, ja::ffi::AttrValue>> attention_attrs(bool backward) {
  std::vector<std::pair<std::string_view, ja::ffi::AttrValue>> a{
      {"softmax_scale", ja::ffi::AttrValue::f32("F32", 0.088)},
      {"causal", ja::ffi::AttrValue::boolean("PRED", true)},
      {"window_left", ja::ffi::AttrValue::i64("S64", -1)},
      {"window_right", ja::ffi::AttrValue::i64("S64", -1)},
      {"dropout_p", ja::ffi::AttrValue::f32("F32", 0.0)},
      {"max_seqlen_q", ja::ffi::AttrValue::i64("S64", 0)},
      {"max_seqlen_k", ja::ffi::AttrValue::i64("S64", 0)},
      {"bf16_cvt", ja::ffi::AttrValue::i64("S64", 1)}};
  if (backward) {
    a.emplace_back("deterministic", ja::ffi::AttrValue::boolean("PRED", false));
    a.emplace_back("atomic32", ja::ffi::AttrValue::boolean("PRED", true));
  }
  return a;
}

const ja::Target kGfx942{ja::BackendKind::kHip, ja::Arch::kGfx942, 304};
const ja::Target kSm90{ja::BackendKind::kCuda, ja::Arch::kSm90, 132};

void BM_AttnFwdDecodeValidatePlan(benchmark::State& state) {
  constexpr auto kBf16 = XLA_FFI_DataType_BF16;
  Buffers b{
      {kBf16, {2, 512, 16, 128}}, {kBf16, {2, 512, 4, 128}},           {kBf16, {2, 512, 4, 128}},
      {XLA_FFI_DataType_U8, {0}}, {XLA_FFI_DataType_U8, {0}},          {XLA_FFI_DataType_U8, {0}},
      {XLA_FFI_DataType_U8, {0}}, {XLA_FFI_DataType_U8, {0}},          {XLA_FFI_DataType_U8, {0}},
      {kBf16, {2, 512, 16, 128}}, {XLA_FFI_DataType_F32, {2, 16, 512}}};
  GenericCall<ja::ops::FlashAttnFwd> call{
      {b.at(0), b.at(1), b.at(2), b.at(3), b.at(4), b.at(5), b.at(6), b.at(7), b.at(8)},
      {b.at(9), b.at(10)},
      attention_attrs(false)};
  attention_plan(state, call, state.range(0) == 0 ? kGfx942 : kSm90);
}
BENCHMARK(BM_AttnFwdDecodeValidatePlan)->Arg(0)->Arg(1);

void BM_AttnBwdDecodeValidatePlan(benchmark::State& state) {
  constexpr auto kBf16 = XLA_FFI_DataType_BF16;
  constexpr auto kU8 = XLA_FFI_DataType_U8;
  ja::ops::FlashAttnBwdParams sizing;  // the workspace the op asks for, as Python sizes it
  int64_t q[4] = {2, 512, 16, 128}, kv[4] = {2, 512, 4, 128}, lse[3] = {2, 16, 512}, none[1] = {0};
  sizing.dout = sizing.out = ja::ops::Tensor::over(nullptr, ja::DType::kBF16, q);
  sizing.q = sizing.dq = ja::ops::Tensor::over(nullptr, ja::DType::kBF16, q);
  sizing.k = sizing.v = sizing.dk = sizing.dv =
      ja::ops::Tensor::over(nullptr, ja::DType::kBF16, kv);
  sizing.lse = ja::ops::Tensor::over(nullptr, ja::DType::kF32, lse);
  sizing.dbias = ja::ops::Tensor::over(nullptr, ja::DType::kF32, none);
  sizing.opt.causal = true;
  const int64_t ws = ja::ops::FlashAttnBwd::workspace_bytes(sizing);
  Buffers b{{kBf16, {2, 512, 16, 128}},
            {kBf16, {2, 512, 16, 128}},
            {kBf16, {2, 512, 4, 128}},
            {kBf16, {2, 512, 4, 128}},
            {kBf16, {2, 512, 16, 128}},
            {XLA_FFI_DataType_F32, {2, 16, 512}},
            {kU8, {0}},
            {kU8, {0}},
            {kU8, {0}},
            {kU8, {0}},
            {kU8, {0}},
            {kU8, {0}},
            {kBf16, {2, 512, 16, 128}},
            {kBf16, {2, 512, 4, 128}},
            {kBf16, {2, 512, 4, 128}},
            {XLA_FFI_DataType_F32, {0}},
            {kU8, {ws / 4}}};
  GenericCall<ja::ops::FlashAttnBwd> call{{b.at(0), b.at(1), b.at(2), b.at(3), b.at(4), b.at(5),
                                           b.at(6), b.at(7), b.at(8), b.at(9), b.at(10), b.at(11)},
                                          {b.at(12), b.at(13), b.at(14), b.at(15), b.at(16)},
                                          attention_attrs(true)};
  attention_plan(state, call, state.range(0) == 0 ? kGfx942 : kSm90);
}
BENCHMARK(BM_AttnBwdDecodeValidatePlan)->Arg(0)->Arg(1);

// The quantized GEMMs' decode + validate + plan for a decode-sized call (M = 16, or 32 for FP4
// as gemm_fp4 pads it; N = K = 4096): Arg 0 plans AITER's tier for its AMD arch, Arg 1 the
// portable tier for sm_90 (the INT8 one splits K into its workspace accumulator).
using Attrs = std::vector<std::pair<std::string_view, ja::ffi::AttrValue>>;

Attrs gemm_attrs(std::string_view layout_name, std::string_view layout) {
  // splitk left out: the heuristic's choice.
  return {{layout_name, ja::ffi::AttrValue::string("STRING", layout)},
          {"kernel", ja::ffi::AttrValue::string("STRING", "")}};
}

const ja::Target kGfx950{ja::BackendKind::kHip, ja::Arch::kGfx950, 256};

void BM_GemmI8DecodeValidatePlan(benchmark::State& state) {
  ja::ops::GemmI8Params sizing;
  int64_t a[2] = {16, 4096}, b[2] = {4096, 4096};
  sizing.a = ja::ops::Tensor::over(nullptr, ja::DType::kI8, a);
  sizing.b = ja::ops::Tensor::over(nullptr, ja::DType::kI8, b);
  const int64_t ws = ja::ops::GemmI8::workspace_bytes(sizing);
  Buffers bufs{{XLA_FFI_DataType_S8, {16, 4096}},  {XLA_FFI_DataType_S8, {4096, 4096}},
               {XLA_FFI_DataType_F32, {16, 1}},    {XLA_FFI_DataType_F32, {1, 4096}},
               {XLA_FFI_DataType_U8, {0}},         {XLA_FFI_DataType_BF16, {16, 4096}},
               {XLA_FFI_DataType_U8, {ws / 4 + 1}}};
  GenericCall<ja::ops::GemmI8> call{{bufs.at(0), bufs.at(1), bufs.at(2), bufs.at(3), bufs.at(4)},
                                    {bufs.at(5), bufs.at(6)},
                                    gemm_attrs("b_layout", "16x16")};
  attention_plan(state, call, state.range(0) == 0 ? kGfx942 : kSm90);
}
BENCHMARK(BM_GemmI8DecodeValidatePlan)->Arg(0)->Arg(1);

// fp8 of the format the target reads (gfx942: e4m3fnuz; gfx950 and sm_90: e4m3fn).
XLA_FFI_DataType fp8_for(const ja::Target& t) {
  return t.arch == ja::Arch::kGfx942 ? XLA_FFI_DataType_F8E4M3FNUZ : XLA_FFI_DataType_F8E4M3FN;
}

void BM_GemmFp8BlockscaleDecodeValidatePlan(benchmark::State& state) {
  const ja::Target& t = state.range(0) == 0 ? kGfx942 : kSm90;
  Buffers bufs{{fp8_for(t), {16, 4096}},
               {fp8_for(t), {4096, 4096}},
               {XLA_FFI_DataType_F32, {32, 16}},
               {XLA_FFI_DataType_F32, {32, 32}},
               {XLA_FFI_DataType_BF16, {16, 4096}},
               {XLA_FFI_DataType_U8, {4096}}};
  GenericCall<ja::ops::GemmFp8Bs> call{{bufs.at(0), bufs.at(1), bufs.at(2), bufs.at(3)},
                                       {bufs.at(4), bufs.at(5)},
                                       gemm_attrs("b_layout", "16x16")};
  attention_plan(state, call, t);
}
BENCHMARK(BM_GemmFp8BlockscaleDecodeValidatePlan)->Arg(0)->Arg(1);

void BM_GemmFp8Mi350DecodeValidatePlan(benchmark::State& state) {
  const ja::Target& t = state.range(0) == 0 ? kGfx950 : kSm90;
  Buffers bufs{{fp8_for(t), {16, 4096}},
               {fp8_for(t), {4096, 4096}},
               {XLA_FFI_DataType_F32, {32, 16}},
               {XLA_FFI_DataType_F32, {32, 32}},
               {XLA_FFI_DataType_BF16, {16, 4096}}};
  GenericCall<ja::ops::GemmFp8Mi350> call{{bufs.at(0), bufs.at(1), bufs.at(2), bufs.at(3)},
                                          {bufs.at(4)},
                                          gemm_attrs("b_layout", "16x16")};
  attention_plan(state, call, t);
}
BENCHMARK(BM_GemmFp8Mi350DecodeValidatePlan)->Arg(0)->Arg(1);

void BM_FlatmmFp8DecodeValidatePlan(benchmark::State& state) {
  const ja::Target& t = state.range(0) == 0 ? kGfx942 : kSm90;
  Buffers bufs{{fp8_for(t), {16, 4096}},
               {fp8_for(t), {4096, 4096}},
               {XLA_FFI_DataType_F32, {32, 16}},
               {XLA_FFI_DataType_F32, {32, 32}},
               {XLA_FFI_DataType_F16, {16, 4096}}};
  GenericCall<ja::ops::FlatmmFp8> call{{bufs.at(0), bufs.at(1), bufs.at(2), bufs.at(3)},
                                       {bufs.at(4)},
                                       gemm_attrs("w_layout", "flatmm")};
  attention_plan(state, call, t);
}
BENCHMARK(BM_FlatmmFp8DecodeValidatePlan)->Arg(0)->Arg(1);

void BM_GemmFp4DecodeValidatePlan(benchmark::State& state) {
  Buffers bufs{{XLA_FFI_DataType_U8, {32, 2048}},
               {XLA_FFI_DataType_U8, {4096, 2048}},
               {XLA_FFI_DataType_U8, {256, 128}},
               {XLA_FFI_DataType_U8, {4096, 128}},
               {XLA_FFI_DataType_BF16, {32, 4096}}};
  GenericCall<ja::ops::GemmFp4> call{{bufs.at(0), bufs.at(1), bufs.at(2), bufs.at(3)},
                                     {bufs.at(4)},
                                     gemm_attrs("b_layout", "16x16")};
  attention_plan(state, call, state.range(0) == 0 ? kGfx950 : kSm90);
}
BENCHMARK(BM_GemmFp4DecodeValidatePlan)->Arg(0)->Arg(1);

void BM_RmsNormHandler(benchmark::State& state) {
  const int64_t rows = state.range(0), n = state.range(1);
  Frame f;
  f.storage.reserve(3);
  f.frame.arg(XLA_FFI_DataType_F32, {rows, n}, f.buffer(rows * n))
      .arg(XLA_FFI_DataType_F32, {n}, f.buffer(n))
      .ret(XLA_FFI_DataType_F32, {rows, n}, f.buffer(rows * n))
      .attr("epsilon", 1e-6f);
  XLA_FFI_CallFrame* frame = f.frame.get();
  measure(state, [&] { return call_ok(bench_rms_norm_cpu, frame); });
}
BENCHMARK(BM_RmsNormHandler)->Args({1, 8})->Args({1, 64});

void BM_RmsNormBwdHandler(benchmark::State& state) {
  const int64_t rows = state.range(0), n = state.range(1);
  const int64_t ws = ja::ops::rmsnorm_bwd_workspace_bytes(rows, n);  // bytes, a multiple of 4
  Frame f;
  f.storage.reserve(6);
  f.frame.arg(XLA_FFI_DataType_F32, {rows, n}, f.buffer(rows * n))
      .arg(XLA_FFI_DataType_F32, {rows, n}, f.buffer(rows * n))
      .arg(XLA_FFI_DataType_F32, {n}, f.buffer(n))
      .ret(XLA_FFI_DataType_F32, {rows, n}, f.buffer(rows * n))
      .ret(XLA_FFI_DataType_F32, {n}, f.buffer(n))
      .ret(XLA_FFI_DataType_U8, {ws}, f.buffer(ws / 4))  // the workspace: u8[workspace_bytes]
      .attr("epsilon", 1e-6f);
  XLA_FFI_CallFrame* frame = f.frame.get();
  measure(state, [&] { return call_ok(bench_rms_norm_bwd_cpu, frame); });
}
BENCHMARK(BM_RmsNormBwdHandler)->Args({1, 8});

}  // namespace

// The counter must see what a handler allocates, or a 0 above proves nothing: the error path
// (a message string, an XLA_FFI_Error) allocates, so a failing call must count.
bool counter_sees_handler_allocations() {
  std::vector<float> x(8);
  fake::CallFrame bad;
  bad.arg(XLA_FFI_DataType_F32, {8}, x.data()).ret(XLA_FFI_DataType_F32, {7}, x.data());
  bad.attr("scale", 1.0f);
  XLA_FFI_CallFrame* frame = bad.get();
  const uint64_t before = g_allocs.load();
  XLA_FFI_Error* err = bench_noop_cpu(frame);
  const uint64_t allocs = g_allocs.load() - before;
  const bool failed = fake::take(frame->api, err).code == XLA_FFI_Error_Code_INVALID_ARGUMENT;
  return failed && allocs > 0;
}

int main(int argc, char** argv) {
  if (!counter_sees_handler_allocations()) {
    std::fprintf(stderr,
                 "bench_handler: the allocation counter does not see handler allocations\n");
    return 1;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (g_failed) {
    std::fprintf(stderr, "bench_handler: FAILED (a handler call failed or allocated; see above)\n");
    return 1;
  }
  return 0;
}
