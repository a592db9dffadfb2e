// Host twins of the RMSNorm kernels: the same arithmetic (float32 statistics, the stored residual
// normalised, dgamma folded onto slots' partial rows, the slot count passed through the workspace
// header) read from the very same packed argument bytes, covering exactly the rows the launch
// grid covers, so a wrong plan or a wrong packing shows up as wrong or unwritten outputs.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/kernels/launch.hpp"
#include "jax_aiter/kernels/rmsnorm.hpp"
#include "jax_aiter/runtime/host.hpp"

namespace jax_aiter::kernels::host {

template <DType T>
struct Elem;
template <>
struct Elem<DType::kBF16> {
  using Storage = uint16_t;
  static float load(Storage s) { return bf16_to_float(s); }
  static Storage store(float f) { return float_to_bf16(f); }
};
template <>
struct Elem<DType::kF16> {
  using Storage = uint16_t;
  static float load(Storage s) { return f16_to_float(s); }
  static Storage store(float f) { return float_to_f16(f); }
};
template <>
struct Elem<DType::kF32> {
  using Storage = float;
  static float load(Storage s) { return s; }
  static Storage store(float f) { return f; }
};

template <DType T>
void rmsnorm_fwd(const KernelArgs& packed, Dim3 grid, Dim3 /*block*/) {
  using E = Elem<T>;
  using S = typename E::Storage;
  const auto a = packed.unpack<RmsNormFwdArgs>();
  const int64_t n = a.n;
  const int64_t rows = std::min<int64_t>(a.rows, int64_t{grid.x} * a.rows_per_block);
  const S* x = static_cast<const S*>(a.x);
  const S* res = static_cast<const S*>(a.residual);
  const S* g = static_cast<const S*>(a.gamma);
  S* y = static_cast<S*>(a.y);
  S* res_out = static_cast<S*>(a.residual_out);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t base = r * n;
    float ss = 0.f;
    for (int64_t j = 0; j < n; ++j) {
      float t = E::load(x[base + j]);
      if (res) {
        const S stored = E::store(t + E::load(res[base + j]));
        res_out[base + j] = stored;
        t = E::load(stored);
      }
      ss += t * t;
    }
    const float rstd = 1.f / std::sqrt(ss / static_cast<float>(n) + a.epsilon);
    const S* src = res ? res_out : x;  // the stored residual is what gets normalised
    for (int64_t j = 0; j < n; ++j)
      y[base + j] = E::store(E::load(src[base + j]) * rstd * E::load(g[j]));
  }
}

template <DType T>
void rmsnorm_bwd(const KernelArgs& packed, Dim3 grid, Dim3 /*block*/) {
  using E = Elem<T>;
  using S = typename E::Storage;
  const auto a = packed.unpack<RmsNormBwdArgs>();
  const int64_t n = a.n;
  const int64_t slots = std::min<int64_t>(a.max_slots, int64_t{grid.x} * a.rows_per_block);
  auto* header = static_cast<int32_t*>(a.workspace);
  header[0] = static_cast<int32_t>(slots);
  float* partial = reinterpret_cast<float*>(static_cast<std::byte*>(a.workspace) +
                                            RmsNormKernelFacts::kWorkspaceHeaderBytes);
  const S* dy = static_cast<const S*>(a.dy);
  const S* x = static_cast<const S*>(a.x);
  const S* g = static_cast<const S*>(a.gamma);
  const S* dres = static_cast<const S*>(a.dresidual);
  S* dx = static_cast<S*>(a.dx);
  for (int64_t s = 0; s < slots; ++s) {
    float* part = partial + s * n;
    std::fill(part, part + n, 0.f);
    for (int64_t r = s; r < a.rows; r += slots) {
      const int64_t base = r * n;
      float ss = 0.f, dot = 0.f;
      for (int64_t j = 0; j < n; ++j) {
        const float xv = E::load(x[base + j]);
        ss += xv * xv;
        dot += E::load(g[j]) * E::load(dy[base + j]) * xv;
      }
      const float rstd = 1.f / std::sqrt(ss / static_cast<float>(n) + a.epsilon);
      const float coef = rstd * rstd * rstd * dot / static_cast<float>(n);
      for (int64_t j = 0; j < n; ++j) {
        const float xv = E::load(x[base + j]);
        const float d = E::load(dy[base + j]);
        const float extra = dres ? E::load(dres[base + j]) : 0.f;
        dx[base + j] = E::store(rstd * E::load(g[j]) * d - coef * xv + extra);
        part[j] += d * xv * rstd;
      }
    }
  }
}

template <DType T>
void rmsnorm_dgamma(const KernelArgs& packed, Dim3 grid, Dim3 /*block*/) {
  using E = Elem<T>;
  const auto a = packed.unpack<RmsNormDgammaArgs>();
  const int64_t cols = std::min<int64_t>(a.n, int64_t{grid.x} * RmsNormKernelFacts::kDgammaColumns);
  auto* out = static_cast<typename E::Storage*>(a.dgamma);
  const int64_t slots = static_cast<const int32_t*>(a.workspace)[0];
  const float* partial = reinterpret_cast<const float*>(static_cast<const std::byte*>(a.workspace) +
                                                        RmsNormKernelFacts::kWorkspaceHeaderBytes);
  for (int64_t j = 0; j < cols; ++j) {
    float s = 0.f;
    for (int64_t r = 0; r < slots; ++r) s += partial[r * a.n + j];
    out[j] = E::store(s);
  }
}

}  // namespace jax_aiter::kernels::host

namespace jax_aiter::runtime {

namespace detail {
using RmsNormTwins = std::array<HostTwin, kernels::RmsNormModule::kKernels.size()>;

// One twin per dtype and kind, at the indices the module's own functions give (the vector width
// changes nothing on the host; the forward twin reads the residual pointer, so it stands for the
// plain and the fused kernels, and one backward twin for the in-register, split and streamed ones:
// the host runs no clusters, so a split kernel there would be the in-register one).
template <DType T>
constexpr void place_rmsnorm_twins(RmsNormTwins& t) {
  using M = kernels::RmsNormModule;
  for (int vec = 1; vec <= kernels::rmsnorm_max_vec(T); vec *= 2) {
    t[M::fwd_kernel(T, vec, false)] = &kernels::host::rmsnorm_fwd<T>;
    t[M::fwd_kernel(T, vec, true)] = &kernels::host::rmsnorm_fwd<T>;
    for (auto rows :
         {kernels::BwdRows::kInRegisters, kernels::BwdRows::kSplit, kernels::BwdRows::kStreamed}) {
      t[M::bwd_kernel(T, vec, rows)] = &kernels::host::rmsnorm_bwd<T>;
    }
  }
  t[M::dgamma_kernel(T)] = &kernels::host::rmsnorm_dgamma<T>;
}

constexpr RmsNormTwins rmsnorm_twins() {
  RmsNormTwins t{};
  place_rmsnorm_twins<DType::kBF16>(t);
  place_rmsnorm_twins<DType::kF16>(t);
  place_rmsnorm_twins<DType::kF32>(t);
  return t;
}
}  // namespace detail

// Parallel to RmsNormModule::kKernels.
template <>
struct HostTwins<kernels::RmsNormModule> {
  static constexpr detail::RmsNormTwins kTwins = detail::rmsnorm_twins();
  static_assert(std::ranges::none_of(kTwins, [](HostTwin f) { return f == nullptr; }),
                "every RMSNorm kernel has a host twin");
};

}  // namespace jax_aiter::runtime
