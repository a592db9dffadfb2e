// AITER's FP4 (a4w4, MXFP4) ASM GEMM family (bf16 out, gfx950): the argument struct its kernels
// read and the table of its rows, generated from the one list in kernels/shared/aiter_f4gemm.h.
// Facts restated from github.com/ROCm/aiter at e4048607a535 (csrc/py_itfs_cu/asm_gemm_a4w4.cu,
// hsa/gfx950/f4gemm/f4gemm_bf16_per1x32Fp4.csv and the code objects' own metadata, which names
// the arguments as below).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/kernels/aiter/row.hpp"
#include "jax_aiter/kernels/kernel.hpp"
#include "jax_aiter/kernels/shared/aiter_f4gemm.h"

namespace jax_aiter::kernels {

// D[M,N] bf16 = alpha * (A[M,K] fp4 . B[N,K]^T fp4, each 32-block scaled by its e8m0 scales)
// + beta * C[M,N] f32 (C may be null); one argument per 16-byte slot. AITER's packed struct ends
// after log2_k_split (372 bytes); the BpreShuffle code objects declare 384, so ours is 384 and
// zero-filled. Strides as AITER fills them: stride_A0/B0 in fp4 elements (2 per byte),
// stride_C0 out's row stride in elements, stride_Scale*0 the scales' (padded) row stride in bytes.
// AITER leaves stride_D0, D1, C1, A1, B1, ScaleA1 and ScaleB1 uninitialised; we fill every one
// (D0 = C0, the *1 = 1).
struct AiterF4GemmArgs {
  Slot<void*> D;        // out, bf16 [M, N]
  Slot<const void*> C;  // f32 [M, N] or null
  Slot<const void*> A;  // fp4x2 [M, K/2]
  Slot<const void*> B;  // fp4x2 [N, K/2], shuffled (bpreshuffle rows) or plain
  Slot<float> alpha, beta;
  Slot<uint32_t> stride_D0, stride_D1, stride_C0, stride_C1, stride_A0, stride_A1, stride_B0,
      stride_B1;
  Slot<uint32_t> M, N, K;
  Slot<const void*> ScaleA, ScaleB;  // e8m0, AITER's e8m0_shuffle layout
  Slot<uint32_t> stride_ScaleA0, stride_ScaleA1, stride_ScaleB0, stride_ScaleB1;
  Slot<int32_t> log2_k_split;  // AITER: a bare int at 368; the code objects declare up to 384
};
static_assert(sizeof(AiterF4GemmArgs) == 384);
static_assert(offsetof(AiterF4GemmArgs, alpha) == 64 && offsetof(AiterF4GemmArgs, beta) == 80);
static_assert(offsetof(AiterF4GemmArgs, stride_D0) == 96 &&
              offsetof(AiterF4GemmArgs, stride_B1) == 208);
static_assert(offsetof(AiterF4GemmArgs, M) == 224 && offsetof(AiterF4GemmArgs, K) == 256);
static_assert(offsetof(AiterF4GemmArgs, ScaleA) == 272 && offsetof(AiterF4GemmArgs, ScaleB) == 288);
static_assert(offsetof(AiterF4GemmArgs, stride_ScaleA0) == 304 &&
              offsetof(AiterF4GemmArgs, stride_ScaleB1) == 352);
static_assert(offsetof(AiterF4GemmArgs, log2_k_split) == 368);

// Named as the code objects' metadata names them.
inline constexpr std::array kAiterF4GemmFields{
    JAX_AITER_ARG_FIELD(AiterF4GemmArgs, D),
    JAX_AITER_ARG_FIELD(AiterF4GemmArgs, C),
    JAX_AITER_ARG_FIELD(AiterF4GemmArgs, A),
    JAX_AITER_ARG_FIELD(AiterF4GemmArgs, B),
    JAX_AITER_ARG_FIELD(AiterF4GemmArgs, alpha),
    JAX_AITER_ARG_FIELD(AiterF4GemmArgs, beta),
    JAX_AITER_NAMED_ARG_FIELD(AiterF4GemmArgs, stride_D0, "strideD0"),
    JAX_AITER_NAMED_ARG_FIELD(AiterF4GemmArgs, stride_D1, "strideD1"),
    JAX_AITER_NAMED_ARG_FIELD(AiterF4GemmArgs, stride_C0, "strideC0"),
    JAX_AITER_NAMED_ARG_FIELD(AiterF4GemmArgs, stride_C1, "strideC1"),
    JAX_AITER_NAMED_ARG_FIELD(AiterF4GemmArgs, stride_A0, "strideA0"),
    JAX_AITER_NAMED_ARG_FIELD(AiterF4GemmArgs, stride_A1, "strideA1"),
    JAX_AITER_NAMED_ARG_FIELD(AiterF4GemmArgs, stride_B0, "strideB0"),
    JAX_AITER_NAMED_ARG_FIELD(AiterF4GemmArgs, stride_B1, "strideB1"),
    JAX_AITER_NAMED_ARG_FIELD(AiterF4GemmArgs, M, "Mdim"),
    JAX_AITER_NAMED_ARG_FIELD(AiterF4GemmArgs, N, "Ndim"),
    JAX_AITER_NAMED_ARG_FIELD(AiterF4GemmArgs, K, "Kdim"),
    JAX_AITER_ARG_FIELD(AiterF4GemmArgs, ScaleA),
    JAX_AITER_ARG_FIELD(AiterF4GemmArgs, ScaleB),
    JAX_AITER_NAMED_ARG_FIELD(AiterF4GemmArgs, stride_ScaleA0, "strideScaleA0"),
    JAX_AITER_NAMED_ARG_FIELD(AiterF4GemmArgs, stride_ScaleA1, "strideScaleA1"),
    JAX_AITER_NAMED_ARG_FIELD(AiterF4GemmArgs, stride_ScaleB0, "strideScaleB0"),
    JAX_AITER_NAMED_ARG_FIELD(AiterF4GemmArgs, stride_ScaleB1, "strideScaleB1"),
    JAX_AITER_ARG_FIELD(AiterF4GemmArgs, log2_k_split),
};

struct AiterF4GemmRow {
  KernelInfo kernel;
  int tile_m, tile_n;
  bool split_k;      // may split K
  bool bpreshuffle;  // reads B pre-shuffled (16, 16); else plain [N, K/2]
  uint32_t kernarg_bytes;

  static constexpr bool on_gfx942 = false, on_gfx950 = true;  // AITER ships them for gfx950
};

// clang-format off
#define JA_F4GEMM_ROW(symbol, co, tm, tn, sk, bpre, kernarg, g942, g950)                \
  AiterF4GemmRow{KernelInfo{co, #symbol, sizeof(AiterF4GemmArgs), kAiterF4GemmFields}, \
                 tm, tn, sk != 0, bpre != 0, kernarg},
inline constexpr AiterF4GemmRow kAiterF4GemmRows[] = {JAX_AITER_F4GEMM_ROWS(JA_F4GEMM_ROW)};
#undef JA_F4GEMM_ROW
// clang-format on

static_assert(std::size(kAiterF4GemmRows) == 35);
static_assert(short_name(kAiterF4GemmRows[0]) == "f4gemm_bf16_per1x32Fp4_noBpreShuffle_256x256");
static_assert(!kAiterF4GemmRows[0].bpreshuffle && kAiterF4GemmRows[0].kernarg_bytes == 368);

namespace aiter_f4gemm_detail {
inline const AiterFamilyRegistrar kRegistrar = AiterTables<kAiterF4GemmRows>::registrar("f4gemm");
}  // namespace aiter_f4gemm_detail

}  // namespace jax_aiter::kernels
