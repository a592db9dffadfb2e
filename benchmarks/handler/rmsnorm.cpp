// RMSNorm: decode + validate + plan from XLA buffers, and the real handlers on the Host backend.
#include "bench_handler.hpp"

#include "jax_aiter/ffi/rmsnorm.hpp"
#include "jax_aiter/host_twins/rmsnorm.hpp"
#include "jax_aiter/ops/rmsnorm.hpp"
#include "jax_aiter/runtime/host.hpp"

JAX_AITER_DEFINE_HANDLER(bench_rms_norm_cpu, jax_aiter::ops::RmsNorm, jax_aiter::runtime::Host);
JAX_AITER_DEFINE_HANDLER(bench_rms_norm_bwd_cpu, jax_aiter::ops::RmsNormBwd,
                         jax_aiter::runtime::Host);

namespace {

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
