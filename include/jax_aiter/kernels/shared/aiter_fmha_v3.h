// AITER's ASM v3 attention kernels we launch, one row each (origin: github.com/ROCm/aiter at
// e4048607a535, hsa/<arch>/fmha_v3_fwd/fmha_fwd.csv and hsa/<arch>/fmha_v3_bwd/fmha_bwd_{odo,
// dqdkdv,dq_convert,dq_shuffle}.csv, MIT licence, (c) AMD). The rows are the CSVs
// aiter_fmha_v3.{fwd,bwd_odo,bwd_dqdkdv,bwd_dq_convert,bwd_dq_shuffle}.csv, the one source of the
// host tables (kernels/aiter/fmha_v3.hpp), the ABI twins' kernel source, the CMake function that
// embeds AITER's code objects and the twins' metadata check (cmake/JaxAiterRows.cmake); C++ reads
// them as the X-macros JAX_AITER_FMHA_V3_<LIST>_ROWS of the generated aiter_fmha_v3.rows.h.
//
// The columns are the CSVs' in their order, then the code object's arch. Rows are in CSV order,
// gfx942's before gfx950's, and each names one code object of one arch (exactly one of on_gfx942,
// on_gfx950 is 1). dtype is the token bf16, fp16 or fp8bf16 (fp8 q, k, v in the arch's e4m3
// format, bf16 out): paste it (JA_DT_##dtype), never expand it.
//
// Forward: X(dtype, hdim_q, hdim_v, mask, mode, bf16_cvt, ts_qo, ts_kv, symbol, code_object,
//            part, on_gfx942, on_gfx950)
//   mask      0 none, 2 causal aligned to the bottom-right corner
//   mode      0 batch, 1 group (varlen)
//   bf16_cvt  how the kernel rounds its bf16 output: 0 to nearest even, 1 to nearest away from
//             zero, 2 toward zero (gfx950's one build rounds to nearest even)
//   ts_qo, ts_kv  query rows and key rows of a tile
//   part      0: the arch's one build (gfx950); gfx942 builds each kernel twice, under MI300/
//             (part 1) and MI308/ (part 2): AITER loads the MI308 build on the four MI308 PCI
//             chip ids (kernels/aiter/fmha_v3.hpp)
//   Every row is ours, the fp8bf16 ones included (gfx942: hd128, bf16_cvt 1 only; gfx950: hd128
//   and hd256).
//
// Backward: X(dtype, hdim_q, hdim_v, mask, atomic32, pssk, pddv, mode, bf16_cvt, ts_qo, ts,
//             symbol, code_object, on_gfx942, on_gfx950), in four lists: the odo pre-pass
//             (delta = rowsum(dout * out)), the dqdkdv main kernel, and the dq post-passes
//             dq_convert (float32 accumulator to dq) and dq_shuffle (16-bit accumulator to dq)
//   hdim_q, hdim_v  the kernel's head dims (a smaller 8-aligned d runs padded: pddv)
//   mask      0 none, 1 causal aligned top-left, 2 causal aligned bottom-right, 3 sliding window
//   atomic32  1: dq accumulates in float32 ("a32"), 0: in 16 bits ("a16")
//   pssk      1: any seqlen_q and seqlen_k (0: sq == sk, sk a multiple of the tile)
//   pddv      1: head dims below the kernel's (padded to it)
//   bf16_cvt  as above; 3: any (fp16 rows, and bf16 rows with one rounding)
//   ts        key rows of a dqdkdv tile; query rows of an odo or post tile
//   Rows no call can reach are left out: gfx942's a32 top-left causal rows (our causal is
//   bottom-right; AITER maps it to top-left only for a16), and on gfx950 every row of a head dim
//   AITER's gate refuses there (64, 192/192; group-mode 192/128) and the top-left causal rows.
//   test_attention_select checks our choice over these rows against AITER's rule over all.
#pragma once

#include "jax_aiter/kernels/shared/aiter_fmha_v3.rows.h"

namespace jax_aiter::kernels::aiter_fmha_v3 {
// The part column of the forward rows.
inline constexpr int kPartAny = 0;    // gfx950's one build
inline constexpr int kPartMi300 = 1;  // gfx942: hsa/gfx942/fmha_v3_fwd/MI300/
inline constexpr int kPartMi308 = 2;  // gfx942: hsa/gfx942/fmha_v3_fwd/MI308/
}  // namespace jax_aiter::kernels::aiter_fmha_v3
