// AITER's BF16 ASM GEMM family: the 352-byte argument struct its kernels read and the table of its
// rows per arch, generated from the one list in kernels/shared/aiter_bf16gemm.h. Facts restated
// from github.com/ROCm/aiter at e4048607a535 (csrc/py_itfs_cu/asm_gemm_a16w16.cu, the CSVs, and
// the code objects' own metadata, which names the arguments as below).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/kernels/aiter/row.hpp"
#include "jax_aiter/kernels/kernel.hpp"
#include "jax_aiter/kernels/shared/aiter_bf16gemm.h"

namespace jax_aiter::kernels {

// out[M,N] = A[M,K] . B[N,K]^T (+ bias[N]); one argument per 16-byte slot. Strides in bytes.
struct AiterBf16GemmArgs {
  Slot<void*> D;  // out
  Slot<const void*> C;
  Slot<const void*> A;
  Slot<const void*> B;
  Slot<float> alpha;
  Slot<float> beta;
  Slot<uint32_t> stride_D0, stride_D1, stride_C0, stride_C1;
  Slot<uint32_t> stride_A0, stride_A1, stride_B0, stride_B1;
  Slot<uint32_t> M, N, K;
  Slot<uint32_t> splitk;
  Slot<uint32_t> is_out_b16;
  Slot<const void*> bias;
  Slot<uint32_t> add_bias;
  Slot<void*> semaphore;  // 16 x 64 u32 tile counters; declared only by the splitk_clean rows
};
static_assert(sizeof(AiterBf16GemmArgs) == 352);
static_assert(offsetof(AiterBf16GemmArgs, alpha) == 64 && offsetof(AiterBf16GemmArgs, M) == 224);
static_assert(offsetof(AiterBf16GemmArgs, splitk) == 272 &&
              offsetof(AiterBf16GemmArgs, bias) == 304);
static_assert(offsetof(AiterBf16GemmArgs, semaphore) == 336);

// Named as the code objects' metadata names them.
inline constexpr std::array kAiterBf16GemmFields{
    JAX_AITER_ARG_FIELD(AiterBf16GemmArgs, D),
    JAX_AITER_ARG_FIELD(AiterBf16GemmArgs, C),
    JAX_AITER_ARG_FIELD(AiterBf16GemmArgs, A),
    JAX_AITER_ARG_FIELD(AiterBf16GemmArgs, B),
    JAX_AITER_ARG_FIELD(AiterBf16GemmArgs, alpha),
    JAX_AITER_ARG_FIELD(AiterBf16GemmArgs, beta),
    JAX_AITER_NAMED_ARG_FIELD(AiterBf16GemmArgs, stride_D0, "strideD0"),
    JAX_AITER_NAMED_ARG_FIELD(AiterBf16GemmArgs, stride_D1, "strideD1"),
    JAX_AITER_NAMED_ARG_FIELD(AiterBf16GemmArgs, stride_C0, "strideC0"),
    JAX_AITER_NAMED_ARG_FIELD(AiterBf16GemmArgs, stride_C1, "strideC1"),
    JAX_AITER_NAMED_ARG_FIELD(AiterBf16GemmArgs, stride_A0, "strideA0"),
    JAX_AITER_NAMED_ARG_FIELD(AiterBf16GemmArgs, stride_A1, "strideA1"),
    JAX_AITER_NAMED_ARG_FIELD(AiterBf16GemmArgs, stride_B0, "strideB0"),
    JAX_AITER_NAMED_ARG_FIELD(AiterBf16GemmArgs, stride_B1, "strideB1"),
    JAX_AITER_NAMED_ARG_FIELD(AiterBf16GemmArgs, M, "Mdim"),
    JAX_AITER_NAMED_ARG_FIELD(AiterBf16GemmArgs, N, "Ndim"),
    JAX_AITER_NAMED_ARG_FIELD(AiterBf16GemmArgs, K, "Kdim"),
    JAX_AITER_ARG_FIELD(AiterBf16GemmArgs, splitk),
    JAX_AITER_ARG_FIELD(AiterBf16GemmArgs, is_out_b16),
    JAX_AITER_NAMED_ARG_FIELD(AiterBf16GemmArgs, bias, "Bias"),
    JAX_AITER_ARG_FIELD(AiterBf16GemmArgs, add_bias),
    JAX_AITER_NAMED_ARG_FIELD(AiterBf16GemmArgs, semaphore, "ptr_semaphore"),
};

struct AiterBf16GemmRow {
  KernelInfo kernel;
  int tile_m, tile_n;
  int prefetch;
  bool split_k;  // a splitk_clean row: may split K over blockIdx.z with the semaphore
  bool bias;
  bool on_gfx942, on_gfx950;
};

// clang-format off
#define JA_BF16GEMM_ROW(symbol, co, tm, tn, pf, sk, b, g942, g950)                          \
  AiterBf16GemmRow{KernelInfo{co, #symbol, sizeof(AiterBf16GemmArgs), kAiterBf16GemmFields}, \
                   tm, tn, pf, sk != 0, b != 0, g942 != 0, g950 != 0},
inline constexpr AiterBf16GemmRow kAiterBf16GemmRows[] = {JAX_AITER_BF16GEMM_ROWS(JA_BF16GEMM_ROW)};
#undef JA_BF16GEMM_ROW
// clang-format on

static_assert(short_name(kAiterBf16GemmRows[0]) == "bf16gemm_bf16_tn_256x256");

namespace aiter_bf16gemm_detail {
inline const AiterFamilyRegistrar kRegistrar =
    AiterTables<kAiterBf16GemmRows>::registrar("bf16gemm");
}  // namespace aiter_bf16gemm_detail

}  // namespace jax_aiter::kernels
