// AITER's FlatMM fp8 block-scale GEMM (gfx942 only): the 112-byte DENSE argument struct its code
// object reads (no 16-byte slots, unlike AITER's other GEMMs) and its one-row table, generated from
// the list in kernels/shared/aiter_flatmm.h. Facts restated from github.com/ROCm/aiter at
// e4048607a535 (csrc/py_itfs_cu/asm_flatmm_a8w8_blockscale.cu and the code object's metadata,
// which names the arguments as below).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/kernels/aiter/row.hpp"
#include "jax_aiter/kernels/kernel.hpp"
#include "jax_aiter/kernels/shared/aiter_flatmm.h"

namespace jax_aiter::kernels {

// out[M,N] f16 = sum_b sa[b][m] sb[b][n/128] (a[m, 128b:+128] . b[n, 128b:+128]). Pointers then
// 32-bit ints, each at its natural offset: 112 bytes, no padding.
struct AiterFlatmmArgs {
  const void* a_ptr;   // fp8 [M, K] (XQ)
  const void* b_ptr;   // fp8 [N, K] in the FlatMM layout (WQ, "[N/128, K*128]")
  const void* c_ptr;   // unused: AITER passes null
  const void* sa_ptr;  // f32 [K/128, M] (x_scale)
  const void* sb_ptr;  // f32 [K/128, N/128] (w_scale)
  void* d_ptr;         // unused: AITER passes null
  void* d_f16_ptr;     // f16 [M, N] (out)
  void* dbg_int_ptr;   // the four debug pointers: AITER leaves them uninitialised; we pass null
  void* dbg_fp8_ptr;
  void* dbg_f16_ptr;
  void* dbg_fp32_ptr;
  int32_t hidden_size;        // K
  int32_t intermediate_size;  // N
  int32_t num_tokens;         // M
  int32_t num_experts;        // uninitialised in AITER; we pass 0
  int32_t topk;               // uninitialised in AITER; we pass 1
  int32_t stride_token;       // uninitialised in AITER; we pass K (a's row stride in bytes)
};
static_assert(sizeof(AiterFlatmmArgs) == 112);
static_assert(offsetof(AiterFlatmmArgs, b_ptr) == 8 && offsetof(AiterFlatmmArgs, c_ptr) == 16);
static_assert(offsetof(AiterFlatmmArgs, sa_ptr) == 24 && offsetof(AiterFlatmmArgs, sb_ptr) == 32);
static_assert(offsetof(AiterFlatmmArgs, d_ptr) == 40 && offsetof(AiterFlatmmArgs, d_f16_ptr) == 48);
static_assert(offsetof(AiterFlatmmArgs, dbg_int_ptr) == 56);
static_assert(offsetof(AiterFlatmmArgs, dbg_fp8_ptr) == 64);
static_assert(offsetof(AiterFlatmmArgs, dbg_f16_ptr) == 72);
static_assert(offsetof(AiterFlatmmArgs, dbg_fp32_ptr) == 80);
static_assert(offsetof(AiterFlatmmArgs, hidden_size) == 88);
static_assert(offsetof(AiterFlatmmArgs, intermediate_size) == 92);
static_assert(offsetof(AiterFlatmmArgs, num_tokens) == 96);
static_assert(offsetof(AiterFlatmmArgs, num_experts) == 100);
static_assert(offsetof(AiterFlatmmArgs, topk) == 104);
static_assert(offsetof(AiterFlatmmArgs, stride_token) == 108);

inline constexpr std::array kAiterFlatmmFields{
    JAX_AITER_ARG_FIELD(AiterFlatmmArgs, a_ptr),
    JAX_AITER_ARG_FIELD(AiterFlatmmArgs, b_ptr),
    JAX_AITER_ARG_FIELD(AiterFlatmmArgs, c_ptr),
    JAX_AITER_ARG_FIELD(AiterFlatmmArgs, sa_ptr),
    JAX_AITER_ARG_FIELD(AiterFlatmmArgs, sb_ptr),
    JAX_AITER_ARG_FIELD(AiterFlatmmArgs, d_ptr),
    JAX_AITER_ARG_FIELD(AiterFlatmmArgs, d_f16_ptr),
    JAX_AITER_ARG_FIELD(AiterFlatmmArgs, dbg_int_ptr),
    JAX_AITER_ARG_FIELD(AiterFlatmmArgs, dbg_fp8_ptr),
    JAX_AITER_ARG_FIELD(AiterFlatmmArgs, dbg_f16_ptr),
    JAX_AITER_ARG_FIELD(AiterFlatmmArgs, dbg_fp32_ptr),
    JAX_AITER_ARG_FIELD(AiterFlatmmArgs, hidden_size),
    JAX_AITER_ARG_FIELD(AiterFlatmmArgs, intermediate_size),
    JAX_AITER_ARG_FIELD(AiterFlatmmArgs, num_tokens),
    JAX_AITER_ARG_FIELD(AiterFlatmmArgs, num_experts),
    JAX_AITER_ARG_FIELD(AiterFlatmmArgs, topk),
    JAX_AITER_ARG_FIELD(AiterFlatmmArgs, stride_token),
};

struct AiterFlatmmRow {
  KernelInfo kernel;
  int tile_m, tile_n, tile_k;
  bool on_gfx942, on_gfx950;
};

// clang-format off
#define JA_FLATMM_ROW(symbol, co, tm, tn, tk, kernarg, g942, g950)                           \
  AiterFlatmmRow{KernelInfo{co, #symbol, sizeof(AiterFlatmmArgs), kAiterFlatmmFields}, tm, tn, \
                 tk, g942 != 0, g950 != 0},
inline constexpr AiterFlatmmRow kAiterFlatmmRows[] = {JAX_AITER_FLATMM_ROWS(JA_FLATMM_ROW)};
#undef JA_FLATMM_ROW
// clang-format on

static_assert(std::size(kAiterFlatmmRows) == 1);
static_assert(short_name(kAiterFlatmmRows[0]) == kAiterFlatmmRows[0].kernel.symbol);
static_assert(kAiterFlatmmRows[0].tile_m == aiter_flatmm::kTileM &&
              kAiterFlatmmRows[0].tile_n == aiter_flatmm::kTileN &&
              kAiterFlatmmRows[0].tile_k == aiter_flatmm::kTileK);

namespace aiter_flatmm_detail {
inline const AiterFamilyRegistrar kRegistrar = AiterTables<kAiterFlatmmRows>::registrar("flatmm");
}  // namespace aiter_flatmm_detail

}  // namespace jax_aiter::kernels
