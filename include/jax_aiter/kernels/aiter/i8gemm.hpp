// AITER's INT8 ASM GEMM family (per-token a8w8, bf16 out): the 208-byte argument struct its
// kernels read, the 256-byte one the compiler-made gfx942 112x256 kernel declares, and the table
// of its rows per arch, generated from the one list in kernels/shared/aiter_i8gemm.h. Facts
// restated from github.com/ROCm/aiter at e4048607a535 (csrc/py_itfs_cu/asm_gemm_a8w8.cu, the CSVs
// and the code objects' own metadata, which names the arguments as below).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/kernels/aiter/row.hpp"
#include "jax_aiter/kernels/kernel.hpp"
#include "jax_aiter/kernels/shared/aiter_i8gemm.h"

namespace jax_aiter::kernels {

// out[M,N] bf16 = (A[M,K] i8 . B[N,K]^T i8) * sa[m] * sb[n] + bias[n]; one argument per 16-byte
// slot. lda, ldb are element (= byte) strides of A and B's rows; ldc is out's row stride in bytes.
struct AiterI8GemmArgs {
  Slot<void*> C;           // out, bf16 [M, N]
  Slot<const void*> A;     // i8 [M, K]
  Slot<const void*> B;     // i8 [N, K], shuffled (aiter_i8gemm::shuffled_offset)
  Slot<const void*> SA;    // f32 [M] (AITER's [M, 1])
  Slot<const void*> SB;    // f32 [N] (AITER's [1, N])
  Slot<const void*> BIAS;  // f32 [N]; read always (AITER: "asm gemm must give bias")
  Slot<uint32_t> M, N, K;
  Slot<uint32_t> lda, ldb, ldc;
  Slot<uint32_t> ks;  // K splits (1: none)
};
static_assert(sizeof(AiterI8GemmArgs) == 208);
static_assert(offsetof(AiterI8GemmArgs, BIAS) == 80 && offsetof(AiterI8GemmArgs, M) == 96);
static_assert(offsetof(AiterI8GemmArgs, lda) == 144 && offsetof(AiterI8GemmArgs, ks) == 192);

// The gfx942 112x256 kernel declares 256 bytes: AITER's fields, then three pointer slots that
// AITER's struct does not cover. We pass them as null.
struct AiterI8GemmWideArgs {
  AiterI8GemmArgs base;
  Slot<const void*> extra0, extra1, extra2;
};
static_assert(sizeof(AiterI8GemmWideArgs) == 256);
static_assert(offsetof(AiterI8GemmWideArgs, extra0) == 208);

// Named as the code objects' metadata names them (the 112x256 kernel's are anonymous).
inline constexpr std::array kAiterI8GemmFields{
    JAX_AITER_ARG_FIELD(AiterI8GemmArgs, C),
    JAX_AITER_ARG_FIELD(AiterI8GemmArgs, A),
    JAX_AITER_ARG_FIELD(AiterI8GemmArgs, B),
    JAX_AITER_ARG_FIELD(AiterI8GemmArgs, SA),
    JAX_AITER_ARG_FIELD(AiterI8GemmArgs, SB),
    JAX_AITER_ARG_FIELD(AiterI8GemmArgs, BIAS),
    JAX_AITER_ARG_FIELD(AiterI8GemmArgs, M),
    JAX_AITER_NAMED_ARG_FIELD(AiterI8GemmArgs, N, "Ndim"),
    JAX_AITER_ARG_FIELD(AiterI8GemmArgs, K),
    JAX_AITER_NAMED_ARG_FIELD(AiterI8GemmArgs, lda, "PA"),
    JAX_AITER_NAMED_ARG_FIELD(AiterI8GemmArgs, ldb, "PB"),
    JAX_AITER_NAMED_ARG_FIELD(AiterI8GemmArgs, ldc, "PC"),
    JAX_AITER_NAMED_ARG_FIELD(AiterI8GemmArgs, ks, "KS"),
};

struct AiterI8GemmRow {
  KernelInfo kernel;
  int tile_m, tile_n;
  bool split_k;  // may split K (and the heuristic may pick it)
  bool on_gfx942, on_gfx950;

  constexpr bool wide() const { return kernel.args_size == sizeof(AiterI8GemmWideArgs); }
};

namespace aiter_i8gemm_detail {
constexpr uint32_t args_size(int kernarg_bytes) {
  return kernarg_bytes == 256 ? sizeof(AiterI8GemmWideArgs) : sizeof(AiterI8GemmArgs);
}
}  // namespace aiter_i8gemm_detail

// clang-format off
#define JA_I8GEMM_ROW(symbol, co, tm, tn, sk, kernarg, g942, g950)                             \
  AiterI8GemmRow{KernelInfo{co, #symbol, aiter_i8gemm_detail::args_size(kernarg),              \
                            kAiterI8GemmFields},                                               \
                 tm, tn, sk != 0, g942 != 0, g950 != 0},
inline constexpr AiterI8GemmRow kAiterI8GemmRows[] = {JAX_AITER_I8GEMM_ROWS(JA_I8GEMM_ROW)};
#undef JA_I8GEMM_ROW
// clang-format on

static_assert(short_name(kAiterI8GemmRows[0]) == "I8gemm_bf16_perTokenI8_BpreShuffle_112x256");
static_assert(kAiterI8GemmRows[0].wide() && !kAiterI8GemmRows[1].wide());

namespace aiter_i8gemm_detail {
using Tables = AiterTables<kAiterI8GemmRows>;
static_assert(Tables::kGfx942.size() == 9 && Tables::kGfx950.size() == 8);
inline const AiterFamilyRegistrar kRegistrar = Tables::registrar("i8gemm");
}  // namespace aiter_i8gemm_detail

}  // namespace jax_aiter::kernels
