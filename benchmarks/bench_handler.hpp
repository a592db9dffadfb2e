// What the handler benchmarks share: the allocation counter (the program, bench_handler.cpp,
// replaces operator new to feed it), the measuring loop, call frames and decode sources. Each op's
// benchmarks are a file of benchmarks/handler/ (benchmarks/CMakeLists.txt builds every one).
#pragma once

#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "jax_aiter/ffi/binder.hpp"
#include "jax_aiter/ffi/spec.hpp"
#include "jax_aiter/ffi/tensor.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/ops/dispatch.hpp"
#include "jax_aiter/ops/tensor.hpp"
#include "jax_aiter/testing/fake_ffi.hpp"

namespace ja = jax_aiter;
namespace fake = jax_aiter::testing;

// Heap allocations so far (bench_handler.cpp's operator new counts them).
inline std::atomic<uint64_t> g_allocs{0};

inline bool g_failed = false;
inline constexpr int kCountedCalls = 1000;

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

inline bool call_ok(XLA_FFI_Handler* handler, XLA_FFI_CallFrame* frame) {
  XLA_FFI_Error* err = handler(frame);
  if (err == nullptr) return true;
  const fake::CallResult r = fake::take(frame->api, err);
  std::fprintf(stderr, "handler failed: %s\n", r.message.c_str());
  return false;
}

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

// An op's decode + validate + plan for one target (the execute path minus the launches): the
// first of its tiers that supports the call plans it.
template <typename Op>
void decode_validate_plan(benchmark::State& state, GenericCall<Op>& call,
                          const ja::Target& target) {
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

inline const ja::Target kGfx942{ja::BackendKind::kHip, ja::Arch::kGfx942, 304};
inline const ja::Target kSm90{ja::BackendKind::kCuda, ja::Arch::kSm90, 132};

// The attributes of a quantized GEMM call: its layout and no kernel forced (splitk left out: the
// heuristic's choice).
using Attrs = std::vector<std::pair<std::string_view, ja::ffi::AttrValue>>;

inline Attrs gemm_attrs(std::string_view layout_name, std::string_view layout) {
  return {{layout_name, ja::ffi::AttrValue::string("STRING", layout)},
          {"kernel", ja::ffi::AttrValue::string("STRING", "")}};
}

inline const ja::Target kGfx950{ja::BackendKind::kHip, ja::Arch::kGfx950, 256};

// fp8 of the format the target reads (gfx942: e4m3fnuz; gfx950 and sm_90: e4m3fn).
inline XLA_FFI_DataType fp8_for(const ja::Target& t) {
  return t.arch == ja::Arch::kGfx942 ? XLA_FFI_DataType_F8E4M3FNUZ : XLA_FFI_DataType_F8E4M3FN;
}
