// AITER's MI350 FP8 block-scale GEMM family (gfx950): the 368-byte argument struct its kernels
// read and the table of its rows, generated from the one list in kernels/shared/aiter_mi350.h.
// Facts restated from github.com/ROCm/aiter: the struct and its fill from the launcher
// csrc/py_itfs_cu/asm_mi350_a8w8_blockscale.cu as of 06de6e9aee^ (deleted in 06de6e9aee), the
// argument names from the code objects' own metadata at e4048607a535 (MoE-style names at the
// same offsets; shared/aiter-facts/kernel-arguments.txt).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/kernels/aiter/row.hpp"
#include "jax_aiter/kernels/kernel.hpp"
#include "jax_aiter/kernels/shared/aiter_mi350.h"

namespace jax_aiter::kernels {

// out[M,N] bf16 = sum_kb x_scale[kb][m] w_scale[n/128][kb] (X[m, kb] . W[n, kb]) over 128-wide
// K blocks kb; one argument per 16-byte slot. Members are named as AITER's C++ struct names them;
// the code objects' metadata names are in kAiterMi350Fields. AITER fills the ones marked "set";
// the rest it leaves uninitialised (its struct is not value-initialised): we pass zeros.
struct AiterMi350Args {
  Slot<void*> ptr_C;           // O     set: out, bf16 [M, N], rows Cs bytes apart
  Slot<const void*> ptr_X;     // X     set: xq, fp8 [M, K], rows Xs bytes apart
  Slot<const void*> ptr_W;     // G     set: wq, fp8 [N, K] shuffled (16, 16), rows Ws bytes
  Slot<const void*> ptr_XC;    // Xc
  Slot<const void*> ptr_XQ;    // XQ    set: x_scale, f32 [K/128, M]
  Slot<const void*> ptr_WQ;    // GQ    set: w_scale, f32 [N/128, K/128]
  Slot<const void*> ptr_tmp0;  // SMQ
  Slot<const void*> ptr_tmp1;  // STP
  Slot<const void*> ptr_tmp2;  // SEP
  Slot<uint32_t> K;            // dim   set
  Slot<uint32_t> N;            // hdim  set
  Slot<uint32_t> M;            // batch set
  Slot<uint32_t> eprt_cnt;     // eprt  set: 1 (one "expert")
  Slot<uint32_t> Xs;           // Xs    set: K * 1 (bytes of an xq row)
  Slot<uint32_t> Ws;           // GUs   set: K * 1 (AITER: "k * XQ->element_size()")
  Slot<uint32_t> Cs;           // Os    set: N * 2 (bytes of an out row)
  Slot<uint32_t> tmp0;         // eGUs
  Slot<uint32_t> tmp1;         // eGUQs
  Slot<uint32_t> tmp2;         // eSMQs
  Slot<uint32_t> tmp3;         // topk
  Slot<uint32_t> splitk;       // splitk     set: 0
  Slot<uint32_t> activation;   // activation set: 0
  // SW: AITER's struct has a pointer (ptr_tmp3) here, which it never sets; the code objects
  // declare a 4-byte value at 352 in a 368-byte segment. A 4-byte slot, zero.
  Slot<uint32_t> ptr_tmp3;
};
static_assert(sizeof(AiterMi350Args) == 368);
static_assert(offsetof(AiterMi350Args, ptr_WQ) == 80 && offsetof(AiterMi350Args, ptr_tmp2) == 128);
static_assert(offsetof(AiterMi350Args, K) == 144 && offsetof(AiterMi350Args, N) == 160);
static_assert(offsetof(AiterMi350Args, M) == 176 && offsetof(AiterMi350Args, eprt_cnt) == 192);
static_assert(offsetof(AiterMi350Args, Xs) == 208 && offsetof(AiterMi350Args, Ws) == 224);
static_assert(offsetof(AiterMi350Args, Cs) == 240 && offsetof(AiterMi350Args, tmp0) == 256);
static_assert(offsetof(AiterMi350Args, tmp3) == 304 && offsetof(AiterMi350Args, splitk) == 320);
static_assert(offsetof(AiterMi350Args, activation) == 336);
static_assert(offsetof(AiterMi350Args, ptr_tmp3) == 352);

// Named as the code objects' metadata names them.
inline constexpr std::array kAiterMi350Fields{
    JAX_AITER_NAMED_ARG_FIELD(AiterMi350Args, ptr_C, "O"),
    JAX_AITER_NAMED_ARG_FIELD(AiterMi350Args, ptr_X, "X"),
    JAX_AITER_NAMED_ARG_FIELD(AiterMi350Args, ptr_W, "G"),
    JAX_AITER_NAMED_ARG_FIELD(AiterMi350Args, ptr_XC, "Xc"),
    JAX_AITER_NAMED_ARG_FIELD(AiterMi350Args, ptr_XQ, "XQ"),
    JAX_AITER_NAMED_ARG_FIELD(AiterMi350Args, ptr_WQ, "GQ"),
    JAX_AITER_NAMED_ARG_FIELD(AiterMi350Args, ptr_tmp0, "SMQ"),
    JAX_AITER_NAMED_ARG_FIELD(AiterMi350Args, ptr_tmp1, "STP"),
    JAX_AITER_NAMED_ARG_FIELD(AiterMi350Args, ptr_tmp2, "SEP"),
    JAX_AITER_NAMED_ARG_FIELD(AiterMi350Args, K, "dim"),
    JAX_AITER_NAMED_ARG_FIELD(AiterMi350Args, N, "hdim"),
    JAX_AITER_NAMED_ARG_FIELD(AiterMi350Args, M, "batch"),
    JAX_AITER_NAMED_ARG_FIELD(AiterMi350Args, eprt_cnt, "eprt"),
    JAX_AITER_NAMED_ARG_FIELD(AiterMi350Args, Xs, "Xs"),
    JAX_AITER_NAMED_ARG_FIELD(AiterMi350Args, Ws, "GUs"),
    JAX_AITER_NAMED_ARG_FIELD(AiterMi350Args, Cs, "Os"),
    JAX_AITER_NAMED_ARG_FIELD(AiterMi350Args, tmp0, "eGUs"),
    JAX_AITER_NAMED_ARG_FIELD(AiterMi350Args, tmp1, "eGUQs"),
    JAX_AITER_NAMED_ARG_FIELD(AiterMi350Args, tmp2, "eSMQs"),
    JAX_AITER_NAMED_ARG_FIELD(AiterMi350Args, tmp3, "topk"),
    JAX_AITER_NAMED_ARG_FIELD(AiterMi350Args, splitk, "splitk"),
    JAX_AITER_NAMED_ARG_FIELD(AiterMi350Args, activation, "activation"),
    JAX_AITER_NAMED_ARG_FIELD(AiterMi350Args, ptr_tmp3, "SW"),
};

struct AiterMi350Row {
  KernelInfo kernel;
  int tile_m;
  bool on_gfx942, on_gfx950;
};

// clang-format off
#define JA_MI350_ROW(symbol, co, tm, g942, g950)                                            \
  AiterMi350Row{KernelInfo{co, #symbol, sizeof(AiterMi350Args), kAiterMi350Fields}, tm,  \
                g942 != 0, g950 != 0},
inline constexpr AiterMi350Row kAiterMi350Rows[] = {JAX_AITER_MI350_ROWS(JA_MI350_ROW)};
#undef JA_MI350_ROW
// clang-format on

static_assert(std::size(kAiterMi350Rows) == 4 && kAiterMi350Rows[0].tile_m == 32 &&
              kAiterMi350Rows[3].tile_m == 128);
static_assert(short_name(kAiterMi350Rows[3]) == "f8_block_scale_mi350_x128");

namespace aiter_mi350_detail {
inline const AiterFamilyRegistrar kRegistrar = AiterTables<kAiterMi350Rows>::registrar("mi350");
}  // namespace aiter_mi350_detail

}  // namespace jax_aiter::kernels
