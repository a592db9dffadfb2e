// Host twins of the INT8 GEMM kernels: our portable kernels (kernels/gemm_i8.hpp) and the ABI
// twins of AITER's INT8 ASM kernels (kernels/aiter/i8gemm.hpp). Each reads the very bytes the plan
// packed, B through the shuffled layout, and computes exactly the tiles its launch grid covers
// with the kernel's tile sizes, so a wrong grid, split, stride, layout or memset in a plan shows
// up as a wrong or unwritten output. Sums are exact (int64 here, int32 on the GPUs; validate()
// bounds K so they agree); the epilogue is the kernels': float(sum) * sa[m] * sb[n] + bias[n] in
// float32, rounded to bf16.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/kernels/aiter/i8gemm.hpp"
#include "jax_aiter/kernels/gemm_i8.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/runtime/host.hpp"

namespace jax_aiter::host_twins {

namespace gemm_i8_detail {

namespace L = kernels::aiter_i8gemm;

// sum over k in [k0, k1) of a[k] * B[n][k], B shuffled for K columns.
inline int64_t dot(const int8_t* a_row, const int8_t* b, int64_t n, int64_t k0, int64_t k1,
                   int64_t K) {
  int64_t acc = 0;
  for (int64_t k = k0; k < k1; k += 16) {  // k0, k1 multiples of 16: whole contiguous chunks
    const int8_t* chunk = b + L::shuffled_chunk(n, k / 16, K);
    int32_t part = 0;
    for (int e = 0; e < 16 && k + e < k1; ++e) part += int32_t{a_row[k + e]} * chunk[e];
    acc += part;
  }
  return acc;
}

inline float epilogue(int64_t acc, float sa, float sb, float bias) {
  return static_cast<float>(acc) * sa * sb + bias;
}

}  // namespace gemm_i8_detail

// Our portable kernel with block tile BM x BN: block (x, y) computes rows [y*BM, +BM) and columns
// [x*BN, +BN) over all of K.
template <int BM, int BN>
void gemm_i8(const kernels::KernelArgs& packed, kernels::Dim3 grid, kernels::Dim3 /*block*/) {
  using namespace gemm_i8_detail;
  const auto a = packed.unpack<kernels::GemmI8Args>();
  const auto* A = static_cast<const int8_t*>(a.a);
  const auto* B = static_cast<const int8_t*>(a.b);
  const auto* sa = static_cast<const float*>(a.a_scale);
  const auto* sb = static_cast<const float*>(a.b_scale);
  const auto* bias = static_cast<const float*>(a.bias);
  auto* out = static_cast<uint16_t*>(a.out);
  for (uint32_t y = 0; y < grid.y; ++y) {
    for (uint32_t x = 0; x < grid.x; ++x) {
      for (int64_t r = int64_t{y} * BM; r < std::min<int64_t>(a.M, (y + 1) * int64_t{BM}); ++r) {
        for (int64_t c = int64_t{x} * BN; c < std::min<int64_t>(a.N, (x + 1) * int64_t{BN}); ++c) {
          const int64_t acc = dot(A + r * a.lda, B, c, 0, a.K, a.K);
          out[r * a.N + c] =
              float_to_bf16(epilogue(acc, sa[r], sb[c], bias != nullptr ? bias[c] : 0.f));
        }
      }
    }
  }
}

// Our split kernel with block tile BM x BN: block (x, y, z) adds the sums of its tile over K
// [z k_chunk, min(K, (z + 1) k_chunk)) into the int32 accumulator (wrapping, as the GPUs' atomics).
template <int BM, int BN>
void gemm_i8_split(const kernels::KernelArgs& packed, kernels::Dim3 grid, kernels::Dim3 /*block*/) {
  using namespace gemm_i8_detail;
  const auto a = packed.unpack<kernels::GemmI8SplitArgs>();
  const auto* A = static_cast<const int8_t*>(a.a);
  const auto* B = static_cast<const int8_t*>(a.b);
  auto* acc = static_cast<uint32_t*>(a.acc);
  for (uint32_t z = 0; z < grid.z; ++z) {
    const int64_t k0 = int64_t{z} * a.k_chunk;
    if (k0 >= a.K) continue;
    const int64_t k1 = std::min<int64_t>(a.K, k0 + a.k_chunk);
    for (uint32_t y = 0; y < grid.y; ++y) {
      for (uint32_t x = 0; x < grid.x; ++x) {
        for (int64_t r = int64_t{y} * BM; r < std::min<int64_t>(a.M, (y + 1) * int64_t{BM}); ++r) {
          for (int64_t c = int64_t{x} * BN; c < std::min<int64_t>(a.N, (x + 1) * int64_t{BN});
               ++c) {
            acc[r * a.N + c] += static_cast<uint32_t>(dot(A + r * a.lda, B, c, k0, k1, a.K));
          }
        }
      }
    }
  }
}

// jax_aiter_gemm_i8_finish: one element a thread, block kGemmI8FinishThreads.
inline void gemm_i8_finish(const kernels::KernelArgs& packed, kernels::Dim3 grid,
                           kernels::Dim3 block) {
  using namespace gemm_i8_detail;
  const auto a = packed.unpack<kernels::GemmI8FinishArgs>();
  const auto* acc = static_cast<const int32_t*>(a.acc);
  const auto* sa = static_cast<const float*>(a.a_scale);
  const auto* sb = static_cast<const float*>(a.b_scale);
  const auto* bias = static_cast<const float*>(a.bias);
  auto* out = static_cast<uint16_t*>(a.out);
  const int64_t covered = int64_t{grid.x} * block.x, total = int64_t{a.M} * a.N;
  for (int64_t i = 0; i < std::min(covered, total); ++i) {
    const int64_t r = i / a.N, c = i % a.N;
    out[i] = float_to_bf16(epilogue(acc[i], sa[r], sb[c], bias != nullptr ? bias[c] : 0.f));
  }
}

// The ABI twin of one AITER INT8 row (the contract, as kernels_co/aiter_i8gemm.twin.cpp states
// it): grid ((N / tile_n) * ks, ceil(M / tile_m)); block x = z * (N / tile_n) + column block;
// split z covers K [z chunk, min(K, (z + 1) chunk)), chunk = roundup(ceil(K / ks), 128). With
// ks == 1 a block stores its tile; with ks > 1 each split adds its scaled partial (split 0 with
// the bias) into the bf16 out, which the plan zeroed (blocks run in grid order here).
template <size_t kRow>
void aiter_i8gemm(const kernels::KernelArgs& packed, kernels::Dim3 grid, kernels::Dim3 /*block*/) {
  using namespace gemm_i8_detail;
  constexpr const kernels::AiterI8GemmRow& row = kernels::kAiterI8GemmRows[kRow];
  const auto a = packed.unpack<kernels::AiterI8GemmArgs>();  // the wide struct starts alike
  const uint32_t M = a.M.value, N = a.N.value, K = a.K.value;
  const auto* A = static_cast<const int8_t*>(a.A.value);
  const auto* B = static_cast<const int8_t*>(a.B.value);
  const auto* sa = static_cast<const float*>(a.SA.value);
  const auto* sb = static_cast<const float*>(a.SB.value);
  const auto* bias = static_cast<const float*>(a.BIAS.value);
  auto* C = static_cast<std::byte*>(a.C.value);
  const uint32_t split = std::max<uint32_t>(a.ks.value, 1);
  const int64_t chunk = L::split_chunk(K, split);
  const uint32_t col_blocks = N / row.tile_n;
  if (col_blocks == 0) return;
  for (uint32_t y = 0; y < grid.y; ++y) {
    for (uint32_t x = 0; x < grid.x; ++x) {
      const uint32_t z = x / col_blocks, cb = x % col_blocks;
      if (z >= split) continue;
      const int64_t k0 = std::min<int64_t>(K, int64_t{z} * chunk);
      const int64_t k1 = std::min<int64_t>(K, k0 + chunk);
      const int64_t r_end = std::min<int64_t>(M, (int64_t{y} + 1) * row.tile_m);
      for (int64_t r = int64_t{y} * row.tile_m; r < r_end; ++r) {
        auto* out = reinterpret_cast<uint16_t*>(C + r * a.ldc.value);
        for (int64_t c = int64_t{cb} * row.tile_n; c < int64_t{cb + 1} * row.tile_n; ++c) {
          const int64_t acc = dot(A + r * a.lda.value, B, c, k0, k1, K);
          const float v = epilogue(acc, sa[r], sb[c], z == 0 ? bias[c] : 0.f);
          out[c] = float_to_bf16(split > 1 ? bf16_to_float(out[c]) + v : v);
        }
      }
    }
  }
}

namespace gemm_i8_detail {

template <size_t... I>
bool register_portable(std::index_sequence<I...>) {
  (runtime::HostTwins::add(kernels::kGemmI8Tiles[I].kernel.symbol,
                           &gemm_i8<kernels::kGemmI8Tiles[I].bm, kernels::kGemmI8Tiles[I].bn>),
   ...);
  (runtime::HostTwins::add(
       kernels::kGemmI8Tiles[I].split_kernel.symbol,
       &gemm_i8_split<kernels::kGemmI8Tiles[I].bm, kernels::kGemmI8Tiles[I].bn>),
   ...);
  runtime::HostTwins::add(kernels::kGemmI8Finish.symbol, &gemm_i8_finish);
  return true;
}

template <size_t... I>
bool register_aiter(std::index_sequence<I...>) {
  (runtime::HostTwins::add(kernels::kAiterI8GemmRows[I].kernel.symbol, &aiter_i8gemm<I>), ...);
  return true;
}

inline const bool kRegistered =
    register_portable(std::make_index_sequence<std::size(kernels::gemm_i8_detail::kTiles)>{}) &&
    register_aiter(std::make_index_sequence<std::size(kernels::kAiterI8GemmRows)>{});

}  // namespace gemm_i8_detail

}  // namespace jax_aiter::host_twins
