// Host twins of the GEMM kernels: our portable kernels and reduction (kernels/gemm.hpp), and the
// ABI twins of AITER's BF16 ASM kernels (kernels/aiter/bf16gemm.hpp). Each reads the very bytes
// the plan packed and computes exactly the tiles its launch grid covers, with the kernel's tile
// sizes, so a wrong grid, split, stride, workspace or memset in a plan shows up as a wrong or
// unwritten output. Accumulation is float32 in eight interleaved partial sums, as a GPU tile
// accumulates in float32.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/kernels/aiter/bf16gemm.hpp"
#include "jax_aiter/kernels/gemm.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/runtime/host.hpp"

namespace jax_aiter::host_twins {

namespace gemm_detail {

using kernels::gemm::OutType;

template <bool kBF16>
inline float load16(uint16_t h) {
  if constexpr (kBF16) {
    return bf16_to_float(h);
  } else {
    return static_cast<float>(std::bit_cast<_Float16>(h));
  }
}

inline float load(const void* base, int64_t i, OutType t) {
  switch (t) {
    case OutType::kOutBF16: return bf16_to_float(static_cast<const uint16_t*>(base)[i]);
    case OutType::kOutF16: return f16_to_float(static_cast<const uint16_t*>(base)[i]);
    case OutType::kOutF32: return static_cast<const float*>(base)[i];
  }
  return 0.f;
}

inline void store(void* base, int64_t i, OutType t, float v) {
  switch (t) {
    case OutType::kOutBF16: static_cast<uint16_t*>(base)[i] = float_to_bf16(v); break;
    case OutType::kOutF16: static_cast<uint16_t*>(base)[i] = float_to_f16(v); break;
    case OutType::kOutF32: static_cast<float*>(base)[i] = v; break;
  }
}

// sum over [k0, k1) of a[k] * b[k] in float32, eight interleaved sums added pairwise at the end
// (independent lanes, which the compiler vectorises).
template <bool kBF16>
float dot(const uint16_t* a, const uint16_t* b, int64_t k0, int64_t k1) {
  float acc[8] = {};
  int64_t k = k0;
  for (; k + 8 <= k1; k += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += load16<kBF16>(a[k + j]) * load16<kBF16>(b[k + j]);
  }
  for (int j = 0; k < k1; ++k, ++j) acc[j] += load16<kBF16>(a[k]) * load16<kBF16>(b[k]);
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

}  // namespace gemm_detail

// Our portable kernel with block tile BM x BN: block (x, y, z) computes rows [y*BM, +BM) and
// columns [x*BN, +BN) over K chunk z.
template <int BM, int BN, bool kBF16>
void gemm(const kernels::KernelArgs& packed, kernels::Dim3 grid, kernels::Dim3 /*block*/) {
  using namespace gemm_detail;
  const auto a = packed.unpack<kernels::GemmArgs>();
  const auto* A = static_cast<const uint16_t*>(a.a);
  const auto* B = static_cast<const uint16_t*>(a.b);
  const auto out_type = static_cast<OutType>(a.out_dtype);
  const auto bias_type = kBF16 ? OutType::kOutBF16 : OutType::kOutF16;
  for (uint32_t z = 0; z < grid.z; ++z) {
    const int64_t k0 = int64_t{z} * a.k_chunk, k1 = std::min<int64_t>(a.K, k0 + a.k_chunk);
    for (uint32_t y = 0; y < grid.y; ++y) {
      for (uint32_t x = 0; x < grid.x; ++x) {
        for (int64_t r = int64_t{y} * BM; r < std::min<int64_t>(a.M, (y + 1) * int64_t{BM}); ++r) {
          for (int64_t c = int64_t{x} * BN; c < std::min<int64_t>(a.N, (x + 1) * int64_t{BN});
               ++c) {
            const float acc = k0 < k1 ? dot<kBF16>(A + r * a.K, B + c * a.K, k0, k1) : 0.f;
            if (a.splits > 1) {
              static_cast<float*>(a.partials)[(int64_t{z} * a.M + r) * a.N + c] = acc;
            } else {
              const float bias = a.bias ? load(a.bias, c, bias_type) : 0.f;
              store(a.out, r * a.N + c, out_type, acc + bias);
            }
          }
        }
      }
    }
  }
}

inline void gemm_reduce(const kernels::KernelArgs& packed, kernels::Dim3 grid,
                        kernels::Dim3 block) {
  using namespace gemm_detail;
  const auto a = packed.unpack<kernels::GemmReduceArgs>();
  const int64_t covered = int64_t{grid.x} * block.x * kernels::gemm::kReduceVec;
  const int64_t count = std::min<int64_t>(int64_t{a.M} * a.N, covered);
  const auto* partials = static_cast<const float*>(a.partials);
  for (int64_t i = 0; i < count; ++i) {
    float s = 0.f;
    for (int32_t z = 0; z < a.splits; ++z) s += partials[int64_t{z} * a.M * a.N + i];
    if (a.bias) s += load(a.bias, i % a.N, static_cast<OutType>(a.bias_dtype));
    store(a.out, i, static_cast<OutType>(a.out_dtype), s);
  }
}

// The ABI twin of one AITER BF16 row: its tile, its grid, its split-K protocol. Blocks run one
// after another here, so a tile's splits arrive in grid order; the counters are read and left as
// the GPU twins leave them (an arrival past the split count means the semaphore was not zero on
// entry: that tile becomes NaN, so tests see it).
template <size_t kRow>
void aiter_bf16gemm(const kernels::KernelArgs& packed, kernels::Dim3 grid,
                    kernels::Dim3 /*block*/) {
  using namespace gemm_detail;
  constexpr const kernels::AiterBf16GemmRow& row = kernels::kAiterBf16GemmRows[kRow];
  constexpr int kSubK = kernels::aiter_bf16gemm::kSubK;
  const auto a = packed.unpack<kernels::AiterBf16GemmArgs>();
  const uint32_t M = a.M.value, N = a.N.value, K = a.K.value;
  const auto* A = static_cast<const std::byte*>(a.A.value);
  const auto* B = static_cast<const std::byte*>(a.B.value);
  auto* D = static_cast<std::byte*>(a.D.value);
  const auto* C = static_cast<const std::byte*>(a.C.value);
  const OutType out_type = a.is_out_b16.value ? OutType::kOutBF16 : OutType::kOutF32;
  const uint32_t split = std::max<uint32_t>(a.splitk.value, 1);
  const bool protocol = split > 1 && row.split_k && a.semaphore.value != nullptr;
  auto* counters = static_cast<uint32_t*>(a.semaphore.value);
  const int64_t chunk = ceil_div(ceil_div(K, kSubK), split) * kSubK;
  const int64_t out_bytes = out_type == OutType::kOutF32 ? 4 : 2;
  auto out_at = [&](int64_t r, int64_t c) { return D + r * a.stride_D0.value + c * out_bytes; };
  for (uint32_t z = 0; z < grid.z; ++z) {
    const int64_t k0 = int64_t{z} * chunk, k1 = std::min<int64_t>(K, k0 + chunk);
    for (uint32_t y = 0; y < grid.y; ++y) {
      for (uint32_t x = 0; x < grid.x; ++x) {
        uint32_t ticket = 0;
        if (protocol) {
          ticket = counters[y * grid.x + x]++ & 0xFFFFu;
        }
        const bool poisoned = protocol && ticket >= split;
        const int64_t r_end = std::min<int64_t>(M, (int64_t{y} + 1) * row.tile_m);
        const int64_t c_end = std::min<int64_t>(N, (int64_t{x} + 1) * row.tile_n);
        for (int64_t r = int64_t{y} * row.tile_m; r < r_end; ++r) {
          for (int64_t c = int64_t{x} * row.tile_n; c < c_end; ++c) {
            void* o = out_at(r, c);
            if (poisoned) {
              store(o, 0, out_type, std::numeric_limits<float>::quiet_NaN());
              continue;
            }
            const auto* ar = reinterpret_cast<const uint16_t*>(A + r * a.stride_A0.value);
            const auto* bc = reinterpret_cast<const uint16_t*>(B + c * a.stride_B0.value);
            float v = a.alpha.value * (k0 < k1 ? dot<true>(ar, bc, k0, k1) : 0.f);
            if (ticket == 0) {
              if (C != nullptr && a.beta.value != 0.f) {
                v += a.beta.value * load(C + r * a.stride_C0.value, c, out_type);
              }
              if (a.add_bias.value) {
                v += bf16_to_float(static_cast<const uint16_t*>(a.bias.value)[c]);
              }
            } else {
              v += load(o, 0, out_type);  // the running sum, in out's dtype
            }
            store(o, 0, out_type, v);
          }
        }
        if (protocol && !poisoned) {
          const uint32_t done = (counters[y * grid.x + x] += 1u << 16) >> 16;
          if (done == split) counters[y * grid.x + x] = 0;
        }
      }
    }
  }
}

namespace gemm_detail {

template <size_t... I>
bool register_portable(std::index_sequence<I...>) {
  using kernels::kGemmTiles;
  auto one = [](auto tile) {
    constexpr size_t t = decltype(tile)::value;
    constexpr int bm = kGemmTiles[t].bm, bn = kGemmTiles[t].bn;
    for (bool aligned : {true, false}) {
      runtime::HostTwins::add(kernels::gemm_kernel(t, DType::kBF16, aligned).symbol,
                              &gemm<bm, bn, true>);
      runtime::HostTwins::add(kernels::gemm_kernel(t, DType::kF16, aligned).symbol,
                              &gemm<bm, bn, false>);
    }
  };
  (one(std::integral_constant<size_t, I>{}), ...);
  runtime::HostTwins::add(kernels::kGemmReduceKernel.symbol, &gemm_reduce);
  return true;
}

template <size_t... I>
bool register_aiter(std::index_sequence<I...>) {
  (runtime::HostTwins::add(kernels::kAiterBf16GemmRows[I].kernel.symbol, &aiter_bf16gemm<I>), ...);
  return true;
}

inline const bool kRegistered =
    register_portable(std::make_index_sequence<std::size(kernels::gemm_detail::kTiles)>{}) &&
    register_aiter(std::make_index_sequence<std::size(kernels::kAiterBf16GemmRows)>{});

}  // namespace gemm_detail

}  // namespace jax_aiter::host_twins
