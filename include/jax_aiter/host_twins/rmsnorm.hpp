// Host twins of the RMSNorm kernels: the same arithmetic as the kernels (float32 statistics, the
// stored residual normalised, dgamma folded onto slots' partial rows, the slot count passed through
// the workspace header), read from the very same packed argument bytes, covering exactly the rows
// the launch grid covers, so a wrong plan or a wrong packing shows up as wrong or unwritten
// outputs. Row sums are accumulated in double: a float32 running sum's error grows with the row
// (8e-6 relative at n = 65536, 2e-4 at 2^20), a double's stays below float32 rounding.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/kernels/rmsnorm.hpp"
#include "jax_aiter/runtime/host.hpp"

namespace jax_aiter::host_twins {

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
void rmsnorm_fwd(const kernels::KernelArgs& packed, kernels::Dim3 grid, kernels::Dim3 /*block*/) {
  using E = Elem<T>;
  using S = typename E::Storage;
  const auto a = packed.unpack<kernels::RmsNormFwdArgs>();
  const int64_t n = a.n;
  const int64_t rows = std::min<int64_t>(a.rows, int64_t{grid.x} * a.rows_per_block);
  const S* x = static_cast<const S*>(a.x);
  const S* res = static_cast<const S*>(a.residual);
  const S* g = static_cast<const S*>(a.gamma);
  S* y = static_cast<S*>(a.y);
  S* res_out = static_cast<S*>(a.residual_out);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t base = r * n;
    double ss = 0.0;
    for (int64_t j = 0; j < n; ++j) {
      float t = E::load(x[base + j]);
      if (res) {
        const S stored = E::store(t + E::load(res[base + j]));
        res_out[base + j] = stored;
        t = E::load(stored);
      }
      ss += double{t} * t;
    }
    const float mean = static_cast<float>(ss / static_cast<double>(n));
    const float rstd = 1.f / std::sqrt(mean + a.epsilon);
    const S* src = res ? res_out : x;  // the stored residual is what gets normalised
    for (int64_t j = 0; j < n; ++j)
      y[base + j] = E::store(E::load(src[base + j]) * rstd * E::load(g[j]));
  }
}

template <DType T>
void rmsnorm_bwd(const kernels::KernelArgs& packed, kernels::Dim3 grid, kernels::Dim3 /*block*/) {
  using E = Elem<T>;
  using S = typename E::Storage;
  const auto a = packed.unpack<kernels::RmsNormBwdArgs>();
  const int64_t n = a.n;
  const int64_t slots = std::min<int64_t>(a.max_slots, int64_t{grid.x} * a.rows_per_block);
  auto* header = static_cast<int32_t*>(a.workspace);
  header[0] = static_cast<int32_t>(slots);
  float* partial = reinterpret_cast<float*>(static_cast<std::byte*>(a.workspace) +
                                            kernels::rmsnorm::kWorkspaceHeaderBytes);
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
      double ss = 0.0, dot = 0.0;
      for (int64_t j = 0; j < n; ++j) {
        const float xv = E::load(x[base + j]);
        ss += double{xv} * xv;
        dot += double{E::load(g[j]) * E::load(dy[base + j])} * xv;
      }
      const float rstd =
          1.f / std::sqrt(static_cast<float>(ss / static_cast<double>(n)) + a.epsilon);
      const float coef = rstd * rstd * rstd * static_cast<float>(dot / static_cast<double>(n));
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
void rmsnorm_dgamma(const kernels::KernelArgs& packed, kernels::Dim3 grid,
                    kernels::Dim3 /*block*/) {
  using E = Elem<T>;
  const auto a = packed.unpack<kernels::RmsNormDgammaArgs>();
  const int64_t cols = std::min<int64_t>(a.n, int64_t{grid.x} * kernels::rmsnorm::kDgammaColumns);
  auto* out = static_cast<typename E::Storage*>(a.dgamma);
  const int64_t slots = static_cast<const int32_t*>(a.workspace)[0];
  const float* partial = reinterpret_cast<const float*>(static_cast<const std::byte*>(a.workspace) +
                                                        kernels::rmsnorm::kWorkspaceHeaderBytes);
  for (int64_t j = 0; j < cols; ++j) {
    double s = 0.0;
    for (int64_t r = 0; r < slots; ++r) s += partial[r * a.n + j];
    out[j] = E::store(static_cast<float>(s));
  }
}

namespace rmsnorm_detail {

template <template <DType> class Twin>
constexpr runtime::HostTwin by_dtype(DType t) {
  return t == DType::kBF16  ? &Twin<DType::kBF16>::run
         : t == DType::kF16 ? &Twin<DType::kF16>::run
                            : &Twin<DType::kF32>::run;
}
template <DType T>
struct Fwd {
  static void run(const kernels::KernelArgs& a, kernels::Dim3 g, kernels::Dim3 b) {
    rmsnorm_fwd<T>(a, g, b);
  }
};
template <DType T>
struct Bwd {
  static void run(const kernels::KernelArgs& a, kernels::Dim3 g, kernels::Dim3 b) {
    rmsnorm_bwd<T>(a, g, b);
  }
};
template <DType T>
struct Dgamma {
  static void run(const kernels::KernelArgs& a, kernels::Dim3 g, kernels::Dim3 b) {
    rmsnorm_dgamma<T>(a, g, b);
  }
};

// One twin per dtype and kind, under every symbol of the kernel table. The vector width changes
// nothing on the host; the forward twin reads the residual pointer, so it stands for the plain and
// the fused kernels; one backward twin stands for the in-register, split and streamed kernels (the
// host runs no clusters, so a split kernel there would be the in-register one).
inline bool register_twins() {
  namespace k = kernels::rmsnorm_detail;
  for (size_t i = 0; i < std::size(k::kVariants); ++i) {
    const DType t = k::kVariants[i].dtype;
    runtime::HostTwins::add(k::kFwd[i].symbol, by_dtype<Fwd>(t));
    runtime::HostTwins::add(k::kFwdAdd[i].symbol, by_dtype<Fwd>(t));
    for (const kernels::KernelInfo* table : {k::kBwd, k::kBwdSplit, k::kBwdStreamed}) {
      runtime::HostTwins::add(table[i].symbol, by_dtype<Bwd>(t));
    }
  }
  for (size_t i = 0; i < std::size(k::kDgamma); ++i) {
    runtime::HostTwins::add(k::kDgamma[i].symbol, by_dtype<Dgamma>(k::kDgammaDTypes[i]));
  }
  return true;
}

inline const bool kRegistered = register_twins();

}  // namespace rmsnorm_detail

}  // namespace jax_aiter::host_twins
