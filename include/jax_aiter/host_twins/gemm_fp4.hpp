// Host twins of the FP4 GEMM kernels: our portable kernels (kernels/gemm_fp4.hpp) and the ABI
// twins of AITER's FP4 ASM kernels (kernels/aiter/f4gemm.hpp). Each reads the very bytes the plan
// packed, B through its layout (shuffled or plain) and the scales through the e8m0_shuffle
// layout at the packed strides, and computes exactly the tiles its launch grid covers with the
// kernel's tile sizes, so a wrong grid, split, stride, layout or memset in a plan shows up as a
// wrong or unwritten output. Each 32-block's e2m1 products are summed exactly in float (they are
// multiples of 1/4 below 2^11), scaled by the two e8m0 powers and accumulated in float, in K
// order, as the device kernels do; the result is rounded to bf16 once (per split with a split).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/kernels/aiter/f4gemm.hpp"
#include "jax_aiter/kernels/gemm_fp4.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/runtime/host.hpp"

namespace jax_aiter::host_twins {

namespace gemm_fp4_detail {

namespace L = kernels::aiter_f4gemm;

inline float e2m1(uint32_t nibble) {
  static constexpr float kValues[16] = {0.f,  0.5f,  1.f,  1.5f,  2.f,  3.f,  4.f,  6.f,
                                        -0.f, -0.5f, -1.f, -1.5f, -2.f, -3.f, -4.f, -6.f};
  return kValues[nibble & 15u];
}
inline float e8m0(uint8_t code) {
  if (code == 0xFF) return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(1.0f, int{code} - 127);  // code 0: 2^-127 (a float subnormal)
}

struct Operands {
  const uint8_t* a;  // row r at a + r * lda
  int64_t lda;
  const uint8_t* b;
  bool b_shuffled;
  const uint8_t* sa;
  int64_t sa_stride;
  const uint8_t* sb;
  int64_t sb_stride;
  int64_t K;
};

// sa * sb * (sum of the block's products) for out (r, c) and the 32-block starting at K index k.
inline float block_term(const Operands& o, int64_t r, int64_t c, int64_t k) {
  const int64_t kb_total = o.K / 2;
  const uint8_t* ar = o.a + r * o.lda + k / 2;
  const uint8_t* br =
      o.b_shuffled ? o.b + L::shuffled_b_offset(c, k / 2, kb_total) : o.b + c * kb_total + k / 2;
  float part = 0.f;
  for (int e = 0; e < 16; ++e) {
    part += e2m1(ar[e]) * e2m1(br[e]);
    part += e2m1(ar[e] >> 4u) * e2m1(br[e] >> 4u);
  }
  const int64_t blk = k / L::kScaleBlock;
  const float s = e8m0(o.sa[L::shuffled_scale_offset(r, blk, o.sa_stride)]) *
                  e8m0(o.sb[L::shuffled_scale_offset(c, blk, o.sb_stride)]);
  return part * s;
}

// sum over 32-blocks in [k0, k1) of sa * sb * (sum of the block's products), for out (r, c).
inline float dot(const Operands& o, int64_t r, int64_t c, int64_t k0, int64_t k1) {
  float acc = 0.f;
  for (int64_t k = k0; k < k1; k += L::kScaleBlock) acc += block_term(o, r, c, k);
  return acc;
}

}  // namespace gemm_fp4_detail

// Our portable kernel with block tile BM x BN: block (x, y) computes rows [y*BM, +BM) and columns
// [x*BN, +BN) over all of K.
template <int BM, int BN>
void gemm_fp4(const kernels::KernelArgs& packed, kernels::Dim3 grid, kernels::Dim3 /*block*/) {
  using namespace gemm_fp4_detail;
  const auto a = packed.unpack<kernels::GemmFp4Args>();
  const Operands o{static_cast<const uint8_t*>(a.a),
                   a.lda,
                   static_cast<const uint8_t*>(a.b),
                   a.b_shuffled != 0,
                   static_cast<const uint8_t*>(a.a_scale),
                   a.sa_stride,
                   static_cast<const uint8_t*>(a.b_scale),
                   a.sb_stride,
                   a.K};
  auto* out = static_cast<uint16_t*>(a.out);
  for (uint32_t y = 0; y < grid.y; ++y) {
    for (uint32_t x = 0; x < grid.x; ++x) {
      for (int64_t r = int64_t{y} * BM; r < std::min<int64_t>(a.M, (y + 1) * int64_t{BM}); ++r) {
        for (int64_t c = int64_t{x} * BN; c < std::min<int64_t>(a.N, (x + 1) * int64_t{BN}); ++c) {
          out[r * a.N + c] = float_to_bf16(dot(o, r, c, 0, a.K));
        }
      }
    }
  }
}

// Our decode kernel with BM out rows a block (kernels/shared/gemm_fp4.h): block (x, y) computes
// rows [y*BM, +BM) and B rows [x*16, +16), clipped to M and N, over all of K split into 16
// interleaved slices (slice s: the 32-blocks kb = s + 16 i, in K order), the slice sums added in
// slice order. (U, the chunks a thread loads a stage, changes no sum.)
template <int BM>
void gemm_fp4_decode(const kernels::KernelArgs& packed, kernels::Dim3 grid,
                     kernels::Dim3 /*block*/) {
  using namespace gemm_fp4_detail;
  constexpr int64_t kRows = kernels::kGemmFp4DecodeRows, kSlices = kernels::kGemmFp4DecodeSlices;
  const auto a = packed.unpack<kernels::GemmFp4Args>();
  const Operands o{static_cast<const uint8_t*>(a.a),
                   a.lda,
                   static_cast<const uint8_t*>(a.b),
                   a.b_shuffled != 0,
                   static_cast<const uint8_t*>(a.a_scale),
                   a.sa_stride,
                   static_cast<const uint8_t*>(a.b_scale),
                   a.sb_stride,
                   a.K};
  const int64_t nblk = a.K / L::kScaleBlock;
  auto* out = static_cast<uint16_t*>(a.out);
  for (uint32_t y = 0; y < grid.y; ++y) {
    for (uint32_t x = 0; x < grid.x; ++x) {
      for (int64_t r = int64_t{y} * BM; r < std::min<int64_t>(a.M, (y + 1) * int64_t{BM}); ++r) {
        for (int64_t c = int64_t{x} * kRows; c < std::min<int64_t>(a.N, (x + 1) * kRows); ++c) {
          float total = 0.f;
          for (int64_t s = 0; s < kSlices; ++s) {
            float acc = 0.f;
            for (int64_t kb = s; kb < nblk; kb += kSlices) {
              acc += block_term(o, r, c, kb * L::kScaleBlock);
            }
            total += acc;
          }
          out[r * a.N + c] = float_to_bf16(total);
        }
      }
    }
  }
}

// The ABI twin of one AITER FP4 row (the contract, as kernels_co/aiter_f4gemm.twin.cpp states
// it): grid (ceil(N / tile_n), ceil(M / tile_m), splits); block (x, y, z) owns out rows
// [y tile_m, +tile_m) and columns [x tile_n, +tile_n), clipped to M and N, over split z's K range
// [z chunk, min(K, (z + 1) chunk)), chunk = roundup(K / 2^log2_k_split, 256) (log2_k_split
// read only by the rows that may split). D rows are stride_C0 elements apart (AITER fills only
// stride_C0, from out). With one split a block stores alpha * acc (+ beta * C); with more, each
// split adds its bf16-rounded part (split 0 with beta * C) into the out the plan zeroed (blocks
// run in grid order here).
template <size_t kRow>
void aiter_f4gemm(const kernels::KernelArgs& packed, kernels::Dim3 grid, kernels::Dim3 /*block*/) {
  using namespace gemm_fp4_detail;
  constexpr const kernels::AiterF4GemmRow& row = kernels::kAiterF4GemmRows[kRow];
  const auto a = packed.unpack<kernels::AiterF4GemmArgs>();
  const uint32_t M = a.M.value, N = a.N.value, K = a.K.value;
  const Operands o{static_cast<const uint8_t*>(a.A.value),
                   a.stride_A0.value / 2,
                   static_cast<const uint8_t*>(a.B.value),
                   row.bpreshuffle,
                   static_cast<const uint8_t*>(a.ScaleA.value),
                   a.stride_ScaleA0.value,
                   static_cast<const uint8_t*>(a.ScaleB.value),
                   a.stride_ScaleB0.value,
                   K};
  const auto* C = static_cast<const float*>(a.C.value);
  auto* D = static_cast<uint16_t*>(a.D.value);
  const int log2 = row.split_k ? a.log2_k_split.value : 0;
  const int64_t chunk = L::split_chunk(K, log2);
  const bool accumulate = log2 > 0;
  for (uint32_t z = 0; z < grid.z; ++z) {
    const int64_t k0 = std::min<int64_t>(K, int64_t{z} * chunk);
    const int64_t k1 = std::min<int64_t>(K, k0 + chunk);
    for (uint32_t y = 0; y < grid.y; ++y) {
      for (uint32_t x = 0; x < grid.x; ++x) {
        const int64_t r_end = std::min<int64_t>(M, (int64_t{y} + 1) * row.tile_m);
        const int64_t c_end = std::min<int64_t>(N, (int64_t{x} + 1) * row.tile_n);
        for (int64_t r = int64_t{y} * row.tile_m; r < r_end; ++r) {
          for (int64_t c = int64_t{x} * row.tile_n; c < c_end; ++c) {
            const int64_t at = r * a.stride_C0.value + c;
            float v = a.alpha.value * dot(o, r, c, k0, k1);
            if (C != nullptr && z == 0) v += a.beta.value * C[at];
            D[at] = float_to_bf16(accumulate ? bf16_to_float(D[at]) + v : v);
          }
        }
      }
    }
  }
}

namespace gemm_fp4_detail {

template <size_t... I>
bool register_portable(std::index_sequence<I...>) {
  (runtime::HostTwins::add(kernels::kGemmFp4Tiles[I].kernel.symbol,
                           &gemm_fp4<kernels::kGemmFp4Tiles[I].bm, kernels::kGemmFp4Tiles[I].bn>),
   ...);
  return true;
}

template <size_t... I>
bool register_decode(std::index_sequence<I...>) {
  (runtime::HostTwins::add(kernels::kGemmFp4Decodes[I].kernel.symbol,
                           &gemm_fp4_decode<kernels::kGemmFp4Decodes[I].bm>),
   ...);
  return true;
}

template <size_t... I>
bool register_aiter(std::index_sequence<I...>) {
  (runtime::HostTwins::add(kernels::kAiterF4GemmRows[I].kernel.symbol, &aiter_f4gemm<I>), ...);
  return true;
}

inline const bool kRegistered =
    register_portable(std::make_index_sequence<std::size(kernels::gemm_fp4_detail::kTiles)>{}) &&
    register_decode(std::make_index_sequence<std::size(kernels::gemm_fp4_detail::kDecodes)>{}) &&
    register_aiter(std::make_index_sequence<std::size(kernels::kAiterF4GemmRows)>{});

}  // namespace gemm_fp4_detail

}  // namespace jax_aiter::host_twins
