// AITER's FP8 block-scale ASM GEMM family (bf16 out, B pre-shuffled): the 256-byte argument
// struct its kernels read and the table of its rows per arch, generated from the one list in
// kernels/shared/aiter_fp8gemm_blockscale.h. Facts restated from github.com/ROCm/aiter at
// e4048607a535 (csrc/py_itfs_cu/asm_a8w8_blockscale_bpreshuffle.cu, the CSVs and the code objects'
// own metadata, which names the arguments as below).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/kernels/aiter/row.hpp"
#include "jax_aiter/kernels/kernel.hpp"
#include "jax_aiter/kernels/shared/aiter_fp8gemm_blockscale.h"

namespace jax_aiter::kernels {

// out[M,N] bf16 = sum_kb (A[:, kb] . B[:, kb]^T) * SA[kb][m] * SB[n / 128][kb] + BIAS[n]; one
// argument per 16-byte slot. lda, ldb: byte strides of A's and B's rows; ldc: out's, in bytes.
// scale_m = M (the row stride of SA's K-block-major layout), scale_n = N / 128, scale_k = K / 128
// (the row stride of SB).
struct AiterFp8BsArgs {
  Slot<void*> C;           // out, bf16 [M, N]
  Slot<const void*> A;     // fp8 [M, K]
  Slot<const void*> B;     // fp8 [N, K], shuffled (16, 16)
  Slot<const void*> SA;    // f32 [K/128, M] (AITER's x_scale, transposed)
  Slot<const void*> SB;    // f32 [N/128, K/128]
  Slot<const void*> BIAS;  // f32 [N]; read always (AITER passes a zero buffer)
  Slot<uint32_t> M, N, K;
  Slot<uint32_t> lda, ldb, ldc;
  Slot<uint32_t> ks;  // K splits (1: none)
  Slot<uint32_t> scale_m, scale_n, scale_k;
};
static_assert(sizeof(AiterFp8BsArgs) == 256);
static_assert(offsetof(AiterFp8BsArgs, BIAS) == 80 && offsetof(AiterFp8BsArgs, M) == 96);
static_assert(offsetof(AiterFp8BsArgs, N) == 112 && offsetof(AiterFp8BsArgs, K) == 128);
static_assert(offsetof(AiterFp8BsArgs, lda) == 144 && offsetof(AiterFp8BsArgs, ldb) == 160);
static_assert(offsetof(AiterFp8BsArgs, ldc) == 176 && offsetof(AiterFp8BsArgs, ks) == 192);
static_assert(offsetof(AiterFp8BsArgs, scale_m) == 208 && offsetof(AiterFp8BsArgs, scale_n) == 224);
static_assert(offsetof(AiterFp8BsArgs, scale_k) == 240);

// Named as the code objects' metadata names them.
inline constexpr std::array kAiterFp8BsFields{
    JAX_AITER_ARG_FIELD(AiterFp8BsArgs, C),
    JAX_AITER_ARG_FIELD(AiterFp8BsArgs, A),
    JAX_AITER_ARG_FIELD(AiterFp8BsArgs, B),
    JAX_AITER_ARG_FIELD(AiterFp8BsArgs, SA),
    JAX_AITER_ARG_FIELD(AiterFp8BsArgs, SB),
    JAX_AITER_ARG_FIELD(AiterFp8BsArgs, BIAS),
    JAX_AITER_ARG_FIELD(AiterFp8BsArgs, M),
    JAX_AITER_NAMED_ARG_FIELD(AiterFp8BsArgs, N, "Ndim"),
    JAX_AITER_ARG_FIELD(AiterFp8BsArgs, K),
    JAX_AITER_NAMED_ARG_FIELD(AiterFp8BsArgs, lda, "PA"),
    JAX_AITER_NAMED_ARG_FIELD(AiterFp8BsArgs, ldb, "PB"),
    JAX_AITER_NAMED_ARG_FIELD(AiterFp8BsArgs, ldc, "PC"),
    JAX_AITER_NAMED_ARG_FIELD(AiterFp8BsArgs, ks, "KS"),
    JAX_AITER_ARG_FIELD(AiterFp8BsArgs, scale_m),
    JAX_AITER_ARG_FIELD(AiterFp8BsArgs, scale_n),
    JAX_AITER_ARG_FIELD(AiterFp8BsArgs, scale_k),
};

struct AiterFp8BsRow {
  KernelInfo kernel;
  int tile_m, tile_n;
  bool on_gfx942, on_gfx950;
};

// clang-format off
#define JA_FP8BS_ROW(symbol, co, tm, tn, g942, g950)                                   \
  AiterFp8BsRow{KernelInfo{co, #symbol, sizeof(AiterFp8BsArgs), kAiterFp8BsFields},    \
                tm, tn, g942 != 0, g950 != 0},
inline constexpr AiterFp8BsRow kAiterFp8BsRows[] = {
    JAX_AITER_FP8GEMM_BLOCKSCALE_ROWS(JA_FP8BS_ROW)};
#undef JA_FP8BS_ROW
// clang-format on

static_assert(short_name(kAiterFp8BsRows[0]) == "fp8gemm_bf16_blockscale_BpreShuffle_32x128");

namespace aiter_fp8bs_detail {
using Tables = AiterTables<kAiterFp8BsRows>;
static_assert(Tables::kGfx942.size() == 6 && Tables::kGfx950.size() == 6);
inline const AiterFamilyRegistrar kRegistrar = Tables::registrar("fp8gemm_blockscale");
}  // namespace aiter_fp8bs_detail

}  // namespace jax_aiter::kernels
