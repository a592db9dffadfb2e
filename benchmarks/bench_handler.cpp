// Host-side cost of one FFI handler call, and proof that the execute path does not allocate.
//
//   BM_NoopHandler              decode + validate + tier + plan + pack + resolve + dispatch of an
//                               op whose one kernel (a Host twin) does nothing: the binder's whole
//                               overhead
//   benchmarks/handler/<op>.cpp each op's own: its decode + validate + plan (for AITER's tier on
//                               its AMD arch and the portable tier on sm_90), and for RMSNorm the
//                               real handlers on the Host backend (the twin's work included)
//
// Every benchmark also reports allocs_per_call, counted through a replaced global operator new
// over a fixed number of calls outside the timed loop, after one warm-up call (which builds XLA's
// handler object and lets the backend resolve, and cache, the plan's kernels). Any allocation makes
// the benchmark report an error and the program exit 1 (the ctest test bench_handler_allocs relies
// on that).
#include "bench_handler.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <new>

#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/kernels/kernel.hpp"
#include "jax_aiter/runtime/host.hpp"

// ---- counting allocator --------------------------------------------------------------------

namespace {
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

namespace {

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
