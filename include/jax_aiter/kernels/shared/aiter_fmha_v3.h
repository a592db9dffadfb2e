// AITER's ASM v3 attention kernels we launch, one row each (origin: github.com/ROCm/aiter at
// e4048607a535, hsa/<arch>/fmha_v3_fwd/fmha_fwd.csv and hsa/<arch>/fmha_v3_bwd/fmha_bwd_{odo,
// dqdkdv,dq_convert,dq_shuffle}.csv, MIT licence, (c) AMD). One list for the host tables
// (kernels/aiter/fmha_v3.hpp), the ABI twins' kernel source and the CMake function that embeds
// AITER's code objects (cmake/JaxAiterKernels.cmake takes each row's one string, the code-object
// path under hsa/<arch>/, and its last two columns, on_gfx942 and on_gfx950). Plain preprocessor
// data: the kernel compilers read it too.
//
// The columns are the CSVs' in their order, then the code object's arch. Rows are in CSV order,
// gfx942's before gfx950's, and each names one code object of one arch (exactly one of on_gfx942,
// on_gfx950 is 1). dtype is the token bf16 or fp16: paste it (JA_DT_##dtype), never expand it.
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
//   The fp8 rows are left out (our q is bf16 or f16).
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

#define JAX_AITER_FMHA_V3_FWD_ROWS(X)                                                        \
  X(bf16, 128, 128, 0, 0, 0, 256, 32, _ZN5aiter24fmha_fwd_hd128_bf16_rtneE,                  \
    "fmha_v3_fwd/MI300/fwd_hd128_bf16_rtne.co", 1, 1, 0)                                     \
  X(bf16, 128, 128, 0, 0, 1, 256, 32, _ZN5aiter24fmha_fwd_hd128_bf16_rtnaE,                  \
    "fmha_v3_fwd/MI300/fwd_hd128_bf16_rtna.co", 1, 1, 0)                                     \
  X(bf16, 128, 128, 0, 0, 2, 256, 32, _ZN5aiter23fmha_fwd_hd128_bf16_rtzE,                   \
    "fmha_v3_fwd/MI300/fwd_hd128_bf16_rtz.co", 1, 1, 0)                                      \
  X(bf16, 128, 128, 2, 0, 0, 256, 32, _ZN5aiter31fmha_fwd_hd128_bf16_causal_rtneE,           \
    "fmha_v3_fwd/MI300/fwd_hd128_bf16_causal_rtne.co", 1, 1, 0)                              \
  X(bf16, 128, 128, 2, 0, 1, 256, 32, _ZN5aiter31fmha_fwd_hd128_bf16_causal_rtnaE,           \
    "fmha_v3_fwd/MI300/fwd_hd128_bf16_causal_rtna.co", 1, 1, 0)                              \
  X(bf16, 128, 128, 2, 0, 2, 256, 32, _ZN5aiter30fmha_fwd_hd128_bf16_causal_rtzE,            \
    "fmha_v3_fwd/MI300/fwd_hd128_bf16_causal_rtz.co", 1, 1, 0)                               \
  X(bf16, 128, 128, 0, 1, 0, 256, 32, _ZN5aiter30fmha_fwd_hd128_bf16_rtne_groupE,            \
    "fmha_v3_fwd/MI300/fwd_hd128_bf16_rtne_group.co", 1, 1, 0)                               \
  X(bf16, 128, 128, 0, 1, 1, 256, 32, _ZN5aiter30fmha_fwd_hd128_bf16_rtna_groupE,            \
    "fmha_v3_fwd/MI300/fwd_hd128_bf16_rtna_group.co", 1, 1, 0)                               \
  X(bf16, 128, 128, 0, 1, 2, 256, 32, _ZN5aiter29fmha_fwd_hd128_bf16_rtz_groupE,             \
    "fmha_v3_fwd/MI300/fwd_hd128_bf16_rtz_group.co", 1, 1, 0)                                \
  X(bf16, 128, 128, 2, 1, 0, 256, 32, _ZN5aiter37fmha_fwd_hd128_bf16_causal_rtne_groupE,     \
    "fmha_v3_fwd/MI300/fwd_hd128_bf16_causal_rtne_group.co", 1, 1, 0)                        \
  X(bf16, 128, 128, 2, 1, 1, 256, 32, _ZN5aiter37fmha_fwd_hd128_bf16_causal_rtna_groupE,     \
    "fmha_v3_fwd/MI300/fwd_hd128_bf16_causal_rtna_group.co", 1, 1, 0)                        \
  X(bf16, 128, 128, 2, 1, 2, 256, 32, _ZN5aiter36fmha_fwd_hd128_bf16_causal_rtz_groupE,      \
    "fmha_v3_fwd/MI300/fwd_hd128_bf16_causal_rtz_group.co", 1, 1, 0)                         \
  X(bf16, 192, 128, 0, 0, 0, 128, 32, _ZN5aiter28fmha_fwd_hd192x128_bf16_rtneE,              \
    "fmha_v3_fwd/MI300/fwd_hd192x128_bf16_rtne.co", 1, 1, 0)                                 \
  X(bf16, 192, 128, 0, 0, 1, 128, 32, _ZN5aiter28fmha_fwd_hd192x128_bf16_rtnaE,              \
    "fmha_v3_fwd/MI300/fwd_hd192x128_bf16_rtna.co", 1, 1, 0)                                 \
  X(bf16, 192, 128, 0, 0, 2, 128, 32, _ZN5aiter27fmha_fwd_hd192x128_bf16_rtzE,               \
    "fmha_v3_fwd/MI300/fwd_hd192x128_bf16_rtz.co", 1, 1, 0)                                  \
  X(bf16, 192, 128, 2, 0, 0, 128, 32, _ZN5aiter35fmha_fwd_hd192x128_bf16_causal_rtneE,       \
    "fmha_v3_fwd/MI300/fwd_hd192x128_bf16_causal_rtne.co", 1, 1, 0)                          \
  X(bf16, 192, 128, 2, 0, 1, 128, 32, _ZN5aiter35fmha_fwd_hd192x128_bf16_causal_rtnaE,       \
    "fmha_v3_fwd/MI300/fwd_hd192x128_bf16_causal_rtna.co", 1, 1, 0)                          \
  X(bf16, 192, 128, 2, 0, 2, 128, 32, _ZN5aiter34fmha_fwd_hd192x128_bf16_causal_rtzE,        \
    "fmha_v3_fwd/MI300/fwd_hd192x128_bf16_causal_rtz.co", 1, 1, 0)                           \
  X(bf16, 192, 128, 0, 1, 0, 128, 32, _ZN5aiter34fmha_fwd_hd192x128_bf16_rtne_groupE,        \
    "fmha_v3_fwd/MI300/fwd_hd192x128_bf16_rtne_group.co", 1, 1, 0)                           \
  X(bf16, 192, 128, 0, 1, 1, 128, 32, _ZN5aiter34fmha_fwd_hd192x128_bf16_rtna_groupE,        \
    "fmha_v3_fwd/MI300/fwd_hd192x128_bf16_rtna_group.co", 1, 1, 0)                           \
  X(bf16, 192, 128, 0, 1, 2, 128, 32, _ZN5aiter33fmha_fwd_hd192x128_bf16_rtz_groupE,         \
    "fmha_v3_fwd/MI300/fwd_hd192x128_bf16_rtz_group.co", 1, 1, 0)                            \
  X(bf16, 192, 128, 2, 1, 0, 128, 32, _ZN5aiter41fmha_fwd_hd192x128_bf16_causal_rtne_groupE, \
    "fmha_v3_fwd/MI300/fwd_hd192x128_bf16_causal_rtne_group.co", 1, 1, 0)                    \
  X(bf16, 192, 128, 2, 1, 1, 128, 32, _ZN5aiter41fmha_fwd_hd192x128_bf16_causal_rtna_groupE, \
    "fmha_v3_fwd/MI300/fwd_hd192x128_bf16_causal_rtna_group.co", 1, 1, 0)                    \
  X(bf16, 192, 128, 2, 1, 2, 128, 32, _ZN5aiter40fmha_fwd_hd192x128_bf16_causal_rtz_groupE,  \
    "fmha_v3_fwd/MI300/fwd_hd192x128_bf16_causal_rtz_group.co", 1, 1, 0)                     \
  X(bf16, 128, 128, 0, 0, 0, 256, 32, _ZN5aiter24fmha_fwd_hd128_bf16_rtneE,                  \
    "fmha_v3_fwd/MI308/fwd_hd128_bf16_rtne.co", 2, 1, 0)                                     \
  X(bf16, 128, 128, 0, 0, 1, 256, 32, _ZN5aiter24fmha_fwd_hd128_bf16_rtnaE,                  \
    "fmha_v3_fwd/MI308/fwd_hd128_bf16_rtna.co", 2, 1, 0)                                     \
  X(bf16, 128, 128, 0, 0, 2, 256, 32, _ZN5aiter23fmha_fwd_hd128_bf16_rtzE,                   \
    "fmha_v3_fwd/MI308/fwd_hd128_bf16_rtz.co", 2, 1, 0)                                      \
  X(bf16, 128, 128, 2, 0, 0, 256, 32, _ZN5aiter31fmha_fwd_hd128_bf16_causal_rtneE,           \
    "fmha_v3_fwd/MI308/fwd_hd128_bf16_causal_rtne.co", 2, 1, 0)                              \
  X(bf16, 128, 128, 2, 0, 1, 256, 32, _ZN5aiter31fmha_fwd_hd128_bf16_causal_rtnaE,           \
    "fmha_v3_fwd/MI308/fwd_hd128_bf16_causal_rtna.co", 2, 1, 0)                              \
  X(bf16, 128, 128, 2, 0, 2, 256, 32, _ZN5aiter30fmha_fwd_hd128_bf16_causal_rtzE,            \
    "fmha_v3_fwd/MI308/fwd_hd128_bf16_causal_rtz.co", 2, 1, 0)                               \
  X(bf16, 128, 128, 0, 1, 0, 256, 32, _ZN5aiter30fmha_fwd_hd128_bf16_rtne_groupE,            \
    "fmha_v3_fwd/MI308/fwd_hd128_bf16_rtne_group.co", 2, 1, 0)                               \
  X(bf16, 128, 128, 0, 1, 1, 256, 32, _ZN5aiter30fmha_fwd_hd128_bf16_rtna_groupE,            \
    "fmha_v3_fwd/MI308/fwd_hd128_bf16_rtna_group.co", 2, 1, 0)                               \
  X(bf16, 128, 128, 0, 1, 2, 256, 32, _ZN5aiter29fmha_fwd_hd128_bf16_rtz_groupE,             \
    "fmha_v3_fwd/MI308/fwd_hd128_bf16_rtz_group.co", 2, 1, 0)                                \
  X(bf16, 128, 128, 2, 1, 0, 256, 32, _ZN5aiter37fmha_fwd_hd128_bf16_causal_rtne_groupE,     \
    "fmha_v3_fwd/MI308/fwd_hd128_bf16_causal_rtne_group.co", 2, 1, 0)                        \
  X(bf16, 128, 128, 2, 1, 1, 256, 32, _ZN5aiter37fmha_fwd_hd128_bf16_causal_rtna_groupE,     \
    "fmha_v3_fwd/MI308/fwd_hd128_bf16_causal_rtna_group.co", 2, 1, 0)                        \
  X(bf16, 128, 128, 2, 1, 2, 256, 32, _ZN5aiter36fmha_fwd_hd128_bf16_causal_rtz_groupE,      \
    "fmha_v3_fwd/MI308/fwd_hd128_bf16_causal_rtz_group.co", 2, 1, 0)                         \
  X(bf16, 192, 128, 0, 0, 0, 128, 32, _ZN5aiter28fmha_fwd_hd192x128_bf16_rtneE,              \
    "fmha_v3_fwd/MI308/fwd_hd192x128_bf16_rtne.co", 2, 1, 0)                                 \
  X(bf16, 192, 128, 0, 0, 1, 128, 32, _ZN5aiter28fmha_fwd_hd192x128_bf16_rtnaE,              \
    "fmha_v3_fwd/MI308/fwd_hd192x128_bf16_rtna.co", 2, 1, 0)                                 \
  X(bf16, 192, 128, 0, 0, 2, 128, 32, _ZN5aiter27fmha_fwd_hd192x128_bf16_rtzE,               \
    "fmha_v3_fwd/MI308/fwd_hd192x128_bf16_rtz.co", 2, 1, 0)                                  \
  X(bf16, 192, 128, 2, 0, 0, 128, 32, _ZN5aiter35fmha_fwd_hd192x128_bf16_causal_rtneE,       \
    "fmha_v3_fwd/MI308/fwd_hd192x128_bf16_causal_rtne.co", 2, 1, 0)                          \
  X(bf16, 192, 128, 2, 0, 1, 128, 32, _ZN5aiter35fmha_fwd_hd192x128_bf16_causal_rtnaE,       \
    "fmha_v3_fwd/MI308/fwd_hd192x128_bf16_causal_rtna.co", 2, 1, 0)                          \
  X(bf16, 192, 128, 2, 0, 2, 128, 32, _ZN5aiter34fmha_fwd_hd192x128_bf16_causal_rtzE,        \
    "fmha_v3_fwd/MI308/fwd_hd192x128_bf16_causal_rtz.co", 2, 1, 0)                           \
  X(bf16, 192, 128, 0, 1, 0, 128, 32, _ZN5aiter34fmha_fwd_hd192x128_bf16_rtne_groupE,        \
    "fmha_v3_fwd/MI308/fwd_hd192x128_bf16_rtne_group.co", 2, 1, 0)                           \
  X(bf16, 192, 128, 0, 1, 1, 128, 32, _ZN5aiter34fmha_fwd_hd192x128_bf16_rtna_groupE,        \
    "fmha_v3_fwd/MI308/fwd_hd192x128_bf16_rtna_group.co", 2, 1, 0)                           \
  X(bf16, 192, 128, 0, 1, 2, 128, 32, _ZN5aiter33fmha_fwd_hd192x128_bf16_rtz_groupE,         \
    "fmha_v3_fwd/MI308/fwd_hd192x128_bf16_rtz_group.co", 2, 1, 0)                            \
  X(bf16, 192, 128, 2, 1, 0, 128, 32, _ZN5aiter41fmha_fwd_hd192x128_bf16_causal_rtne_groupE, \
    "fmha_v3_fwd/MI308/fwd_hd192x128_bf16_causal_rtne_group.co", 2, 1, 0)                    \
  X(bf16, 192, 128, 2, 1, 1, 128, 32, _ZN5aiter41fmha_fwd_hd192x128_bf16_causal_rtna_groupE, \
    "fmha_v3_fwd/MI308/fwd_hd192x128_bf16_causal_rtna_group.co", 2, 1, 0)                    \
  X(bf16, 192, 128, 2, 1, 2, 128, 32, _ZN5aiter40fmha_fwd_hd192x128_bf16_causal_rtz_groupE,  \
    "fmha_v3_fwd/MI308/fwd_hd192x128_bf16_causal_rtz_group.co", 2, 1, 0)                     \
  X(bf16, 128, 128, 0, 0, 0, 256, 64, _ZN5aiter19fmha_fwd_hd128_bf16E,                       \
    "fmha_v3_fwd/fwd_hd128_bf16.co", 0, 0, 1)                                                \
  X(bf16, 128, 128, 2, 0, 0, 256, 64, _ZN5aiter26fmha_fwd_hd128_bf16_causalE,                \
    "fmha_v3_fwd/fwd_hd128_bf16_causal.co", 0, 0, 1)                                         \
  X(bf16, 128, 128, 0, 1, 0, 256, 64, _ZN5aiter25fmha_fwd_hd128_bf16_groupE,                 \
    "fmha_v3_fwd/fwd_hd128_bf16_group.co", 0, 0, 1)                                          \
  X(bf16, 128, 128, 2, 1, 0, 256, 64, _ZN5aiter32fmha_fwd_hd128_bf16_causal_groupE,          \
    "fmha_v3_fwd/fwd_hd128_bf16_causal_group.co", 0, 0, 1)                                   \
  X(bf16, 192, 128, 0, 0, 0, 128, 128, _ZN5aiter25fmha_fwd_hd192_hd128_bf16E,                \
    "fmha_v3_fwd/fwd_hd192_hd128_bf16.co", 0, 0, 1)                                          \
  X(bf16, 192, 128, 2, 0, 0, 128, 128, _ZN5aiter32fmha_fwd_hd192_hd128_bf16_causalE,         \
    "fmha_v3_fwd/fwd_hd192_hd128_bf16_causal.co", 0, 0, 1)                                   \
  X(bf16, 192, 128, 0, 1, 0, 128, 128, _ZN5aiter31fmha_fwd_hd192_hd128_bf16_groupE,          \
    "fmha_v3_fwd/fwd_hd192_hd128_bf16_group.co", 0, 0, 1)                                    \
  X(bf16, 192, 128, 2, 1, 0, 128, 128, _ZN5aiter38fmha_fwd_hd192_hd128_bf16_causal_groupE,   \
    "fmha_v3_fwd/fwd_hd192_hd128_bf16_causal_group.co", 0, 0, 1)

#define JAX_AITER_FMHA_V3_BWD_ODO_ROWS(X)                                                \
  X(fp16, 64, 64, 0, 0, 0, 0, 0, 3, 0, 128, _ZN5aiter22fmha_bwd_hd64_odo_fp16E,          \
    "fmha_v3_bwd/bwd_hd64_odo_fp16.co", 1, 0)                                            \
  X(fp16, 64, 64, 0, 0, 0, 0, 1, 3, 0, 128, _ZN5aiter28fmha_bwd_hd64_odo_fp16_groupE,    \
    "fmha_v3_bwd/bwd_hd64_odo_fp16_group.co", 1, 0)                                      \
  X(bf16, 64, 64, 0, 0, 0, 0, 0, 3, 0, 128, _ZN5aiter22fmha_bwd_hd64_odo_bf16E,          \
    "fmha_v3_bwd/bwd_hd64_odo_bf16.co", 1, 0)                                            \
  X(bf16, 64, 64, 0, 0, 0, 0, 1, 3, 0, 128, _ZN5aiter28fmha_bwd_hd64_odo_bf16_groupE,    \
    "fmha_v3_bwd/bwd_hd64_odo_bf16_group.co", 1, 0)                                      \
  X(fp16, 128, 128, 0, 0, 0, 0, 0, 3, 0, 128, _ZN5aiter23fmha_bwd_hd128_odo_fp16E,       \
    "fmha_v3_bwd/bwd_hd128_odo_fp16.co", 1, 0)                                           \
  X(fp16, 128, 128, 0, 0, 0, 0, 1, 3, 0, 128, _ZN5aiter29fmha_bwd_hd128_odo_fp16_groupE, \
    "fmha_v3_bwd/bwd_hd128_odo_fp16_group.co", 1, 0)                                     \
  X(bf16, 128, 128, 0, 0, 0, 0, 0, 3, 0, 128, _ZN5aiter23fmha_bwd_hd128_odo_bf16E,       \
    "fmha_v3_bwd/bwd_hd128_odo_bf16.co", 1, 0)                                           \
  X(bf16, 128, 128, 0, 0, 0, 0, 1, 3, 0, 128, _ZN5aiter29fmha_bwd_hd128_odo_bf16_groupE, \
    "fmha_v3_bwd/bwd_hd128_odo_bf16_group.co", 1, 0)                                     \
  X(fp16, 192, 192, 0, 0, 0, 0, 0, 3, 0, 128, _ZN5aiter23fmha_bwd_hd192_odo_fp16E,       \
    "fmha_v3_bwd/bwd_hd192_odo_fp16.co", 1, 0)                                           \
  X(fp16, 192, 192, 0, 0, 0, 0, 1, 3, 0, 128, _ZN5aiter29fmha_bwd_hd192_odo_fp16_groupE, \
    "fmha_v3_bwd/bwd_hd192_odo_fp16_group.co", 1, 0)                                     \
  X(bf16, 192, 192, 0, 0, 0, 0, 0, 3, 0, 128, _ZN5aiter23fmha_bwd_hd192_odo_bf16E,       \
    "fmha_v3_bwd/bwd_hd192_odo_bf16.co", 1, 0)                                           \
  X(bf16, 192, 192, 0, 0, 0, 0, 1, 3, 0, 128, _ZN5aiter29fmha_bwd_hd192_odo_bf16_groupE, \
    "fmha_v3_bwd/bwd_hd192_odo_bf16_group.co", 1, 0)                                     \
  X(fp16, 128, 128, 0, 0, 0, 0, 0, 3, 0, 128, _ZN5aiter23fmha_bwd_hd128_odo_fp16E,       \
    "fmha_v3_bwd/bwd_hd128_odo_fp16.co", 0, 1)                                           \
  X(fp16, 128, 128, 0, 0, 0, 0, 1, 3, 0, 128, _ZN5aiter29fmha_bwd_hd128_odo_fp16_groupE, \
    "fmha_v3_bwd/bwd_hd128_odo_fp16_group.co", 0, 1)                                     \
  X(bf16, 128, 128, 0, 0, 0, 0, 0, 3, 0, 128, _ZN5aiter23fmha_bwd_hd128_odo_bf16E,       \
    "fmha_v3_bwd/bwd_hd128_odo_bf16.co", 0, 1)                                           \
  X(bf16, 128, 128, 0, 0, 0, 0, 1, 3, 0, 128, _ZN5aiter29fmha_bwd_hd128_odo_bf16_groupE, \
    "fmha_v3_bwd/bwd_hd128_odo_bf16_group.co", 0, 1)

#define JAX_AITER_FMHA_V3_BWD_DQDKDV_ROWS(X)                                                       \
  X(fp16, 192, 192, 0, 1, 1, 1, 0, 3, 16, 64, _ZN5aiter31fmha_bwd_hd192_fp16_a32_psskddvE,         \
    "fmha_v3_bwd/bwd_hd192_fp16_a32_psskddv.co", 1, 0)                                             \
  X(fp16, 128, 128, 0, 0, 0, 0, 0, 3, 16, 192, _ZN5aiter23fmha_bwd_hd128_fp16_a16E,                \
    "fmha_v3_bwd/bwd_hd128_fp16_a16.co", 1, 0)                                                     \
  X(fp16, 128, 128, 0, 0, 0, 1, 0, 3, 16, 192, _ZN5aiter28fmha_bwd_hd128_fp16_a16_pddvE,           \
    "fmha_v3_bwd/bwd_hd128_fp16_a16_pddv.co", 1, 0)                                                \
  X(fp16, 128, 128, 1, 0, 0, 0, 0, 3, 16, 192, _ZN5aiter30fmha_bwd_hd128_fp16_causal_a16E,         \
    "fmha_v3_bwd/bwd_hd128_fp16_causal_a16.co", 1, 0)                                              \
  X(fp16, 128, 128, 1, 0, 0, 1, 0, 3, 16, 192, _ZN5aiter35fmha_bwd_hd128_fp16_causal_a16_pddvE,    \
    "fmha_v3_bwd/bwd_hd128_fp16_causal_a16_pddv.co", 1, 0)                                         \
  X(fp16, 128, 128, 0, 1, 0, 0, 0, 3, 16, 192, _ZN5aiter23fmha_bwd_hd128_fp16_a32E,                \
    "fmha_v3_bwd/bwd_hd128_fp16_a32.co", 1, 0)                                                     \
  X(fp16, 128, 128, 0, 1, 1, 1, 0, 3, 16, 192, _ZN5aiter31fmha_bwd_hd128_fp16_a32_psskddvE,        \
    "fmha_v3_bwd/bwd_hd128_fp16_a32_psskddv.co", 1, 0)                                             \
  X(fp16, 128, 128, 0, 1, 1, 0, 1, 3, 16, 192, _ZN5aiter34fmha_bwd_hd128_fp16_a32_pssk_groupE,     \
    "fmha_v3_bwd/bwd_hd128_fp16_a32_pssk_group.co", 1, 0)                                          \
  X(fp16, 128, 128, 0, 1, 1, 1, 1, 3, 16, 192, _ZN5aiter37fmha_bwd_hd128_fp16_a32_psskddv_groupE,  \
    "fmha_v3_bwd/bwd_hd128_fp16_a32_psskddv_group.co", 1, 0)                                       \
  X(fp16, 128, 128, 3, 1, 1, 1, 0, 3, 16, 192, _ZN5aiter35fmha_bwd_hd128_fp16_swa_a32_psskddvE,    \
    "fmha_v3_bwd/bwd_hd128_fp16_swa_a32_psskddv.co", 1, 0)                                         \
  X(fp16, 64, 64, 0, 0, 0, 0, 0, 3, 32, 192, _ZN5aiter22fmha_bwd_hd64_fp16_a16E,                   \
    "fmha_v3_bwd/bwd_hd64_fp16_a16.co", 1, 0)                                                      \
  X(fp16, 64, 64, 1, 0, 0, 0, 0, 3, 32, 192, _ZN5aiter29fmha_bwd_hd64_fp16_causal_a16E,            \
    "fmha_v3_bwd/bwd_hd64_fp16_causal_a16.co", 1, 0)                                               \
  X(fp16, 64, 64, 0, 1, 1, 0, 0, 3, 32, 192, _ZN5aiter27fmha_bwd_hd64_fp16_a32_psskE,              \
    "fmha_v3_bwd/bwd_hd64_fp16_a32_pssk.co", 1, 0)                                                 \
  X(fp16, 128, 128, 2, 1, 1, 1, 0, 3, 16, 192,                                                     \
    _ZN5aiter41fmha_bwd_hd128_fp16_causal_br_a32_psskddvE,                                         \
    "fmha_v3_bwd/bwd_hd128_fp16_causal_br_a32_psskddv.co", 1, 0)                                   \
  X(fp16, 128, 128, 2, 1, 1, 0, 1, 3, 16, 192,                                                     \
    _ZN5aiter44fmha_bwd_hd128_fp16_causal_br_a32_pssk_groupE,                                      \
    "fmha_v3_bwd/bwd_hd128_fp16_causal_br_a32_pssk_group.co", 1, 0)                                \
  X(fp16, 128, 128, 2, 1, 1, 1, 1, 3, 16, 192,                                                     \
    _ZN5aiter47fmha_bwd_hd128_fp16_causal_br_a32_psskddv_groupE,                                   \
    "fmha_v3_bwd/bwd_hd128_fp16_causal_br_a32_psskddv_group.co", 1, 0)                             \
  X(fp16, 192, 192, 0, 1, 1, 1, 1, 3, 16, 64, _ZN5aiter37fmha_bwd_hd192_fp16_a32_psskddv_groupE,   \
    "fmha_v3_bwd/bwd_hd192_fp16_a32_psskddv_group.co", 1, 0)                                       \
  X(fp16, 192, 192, 2, 1, 1, 1, 0, 3, 16, 64,                                                      \
    _ZN5aiter41fmha_bwd_hd192_fp16_causal_br_a32_psskddvE,                                         \
    "fmha_v3_bwd/bwd_hd192_fp16_causal_br_a32_psskddv.co", 1, 0)                                   \
  X(fp16, 192, 192, 2, 1, 1, 1, 1, 3, 16, 64,                                                      \
    _ZN5aiter47fmha_bwd_hd192_fp16_causal_br_a32_psskddv_groupE,                                   \
    "fmha_v3_bwd/bwd_hd192_fp16_causal_br_a32_psskddv_group.co", 1, 0)                             \
  X(fp16, 64, 64, 0, 1, 1, 0, 1, 3, 32, 192, _ZN5aiter33fmha_bwd_hd64_fp16_a32_pssk_groupE,        \
    "fmha_v3_bwd/bwd_hd64_fp16_a32_pssk_group.co", 1, 0)                                           \
  X(fp16, 64, 64, 2, 1, 1, 0, 0, 3, 32, 192, _ZN5aiter37fmha_bwd_hd64_fp16_causal_br_a32_psskE,    \
    "fmha_v3_bwd/bwd_hd64_fp16_causal_br_a32_pssk.co", 1, 0)                                       \
  X(fp16, 64, 64, 2, 1, 1, 0, 1, 3, 32, 192,                                                       \
    _ZN5aiter43fmha_bwd_hd64_fp16_causal_br_a32_pssk_groupE,                                       \
    "fmha_v3_bwd/bwd_hd64_fp16_causal_br_a32_pssk_group.co", 1, 0)                                 \
  X(bf16, 64, 64, 2, 1, 1, 0, 1, 0, 32, 192,                                                       \
    _ZN5aiter48fmha_bwd_hd64_bf16_causal_br_a32_rtne_pssk_groupE,                                  \
    "fmha_v3_bwd/bwd_hd64_bf16_causal_br_a32_rtne_pssk_group.co", 1, 0)                            \
  X(bf16, 64, 64, 2, 1, 1, 0, 1, 1, 32, 192,                                                       \
    _ZN5aiter48fmha_bwd_hd64_bf16_causal_br_a32_rtna_pssk_groupE,                                  \
    "fmha_v3_bwd/bwd_hd64_bf16_causal_br_a32_rtna_pssk_group.co", 1, 0)                            \
  X(bf16, 64, 64, 2, 1, 1, 0, 1, 2, 32, 192,                                                       \
    _ZN5aiter47fmha_bwd_hd64_bf16_causal_br_a32_rtz_pssk_groupE,                                   \
    "fmha_v3_bwd/bwd_hd64_bf16_causal_br_a32_rtz_pssk_group.co", 1, 0)                             \
  X(bf16, 192, 192, 0, 1, 1, 1, 1, 0, 16, 64,                                                      \
    _ZN5aiter42fmha_bwd_hd192_bf16_a32_rtne_psskddv_groupE,                                        \
    "fmha_v3_bwd/bwd_hd192_bf16_a32_rtne_psskddv_group.co", 1, 0)                                  \
  X(bf16, 192, 192, 0, 1, 1, 1, 1, 1, 16, 64,                                                      \
    _ZN5aiter42fmha_bwd_hd192_bf16_a32_rtna_psskddv_groupE,                                        \
    "fmha_v3_bwd/bwd_hd192_bf16_a32_rtna_psskddv_group.co", 1, 0)                                  \
  X(bf16, 192, 192, 0, 1, 1, 1, 1, 2, 16, 64,                                                      \
    _ZN5aiter41fmha_bwd_hd192_bf16_a32_rtz_psskddv_groupE,                                         \
    "fmha_v3_bwd/bwd_hd192_bf16_a32_rtz_psskddv_group.co", 1, 0)                                   \
  X(bf16, 192, 192, 0, 1, 1, 1, 0, 0, 16, 64, _ZN5aiter36fmha_bwd_hd192_bf16_a32_rtne_psskddvE,    \
    "fmha_v3_bwd/bwd_hd192_bf16_a32_rtne_psskddv.co", 1, 0)                                        \
  X(bf16, 192, 192, 0, 1, 1, 1, 0, 1, 16, 64, _ZN5aiter36fmha_bwd_hd192_bf16_a32_rtna_psskddvE,    \
    "fmha_v3_bwd/bwd_hd192_bf16_a32_rtna_psskddv.co", 1, 0)                                        \
  X(bf16, 192, 192, 0, 1, 1, 1, 0, 2, 16, 64, _ZN5aiter35fmha_bwd_hd192_bf16_a32_rtz_psskddvE,     \
    "fmha_v3_bwd/bwd_hd192_bf16_a32_rtz_psskddv.co", 1, 0)                                         \
  X(bf16, 192, 192, 2, 1, 1, 1, 0, 0, 16, 64,                                                      \
    _ZN5aiter46fmha_bwd_hd192_bf16_causal_br_a32_rtne_psskddvE,                                    \
    "fmha_v3_bwd/bwd_hd192_bf16_causal_br_a32_rtne_psskddv.co", 1, 0)                              \
  X(bf16, 192, 192, 2, 1, 1, 1, 0, 1, 16, 64,                                                      \
    _ZN5aiter46fmha_bwd_hd192_bf16_causal_br_a32_rtna_psskddvE,                                    \
    "fmha_v3_bwd/bwd_hd192_bf16_causal_br_a32_rtna_psskddv.co", 1, 0)                              \
  X(bf16, 192, 192, 2, 1, 1, 1, 0, 2, 16, 64,                                                      \
    _ZN5aiter45fmha_bwd_hd192_bf16_causal_br_a32_rtz_psskddvE,                                     \
    "fmha_v3_bwd/bwd_hd192_bf16_causal_br_a32_rtz_psskddv.co", 1, 0)                               \
  X(bf16, 192, 192, 2, 1, 1, 1, 1, 0, 16, 64,                                                      \
    _ZN5aiter52fmha_bwd_hd192_bf16_causal_br_a32_rtne_psskddv_groupE,                              \
    "fmha_v3_bwd/bwd_hd192_bf16_causal_br_a32_rtne_psskddv_group.co", 1, 0)                        \
  X(bf16, 192, 192, 2, 1, 1, 1, 1, 1, 16, 64,                                                      \
    _ZN5aiter52fmha_bwd_hd192_bf16_causal_br_a32_rtna_psskddv_groupE,                              \
    "fmha_v3_bwd/bwd_hd192_bf16_causal_br_a32_rtna_psskddv_group.co", 1, 0)                        \
  X(bf16, 192, 192, 2, 1, 1, 1, 1, 2, 16, 64,                                                      \
    _ZN5aiter51fmha_bwd_hd192_bf16_causal_br_a32_rtz_psskddv_groupE,                               \
    "fmha_v3_bwd/bwd_hd192_bf16_causal_br_a32_rtz_psskddv_group.co", 1, 0)                         \
  X(bf16, 64, 64, 1, 0, 0, 0, 0, 0, 32, 192, _ZN5aiter34fmha_bwd_hd64_bf16_causal_a16_rtneE,       \
    "fmha_v3_bwd/bwd_hd64_bf16_causal_a16_rtne.co", 1, 0)                                          \
  X(bf16, 64, 64, 1, 0, 0, 0, 0, 1, 32, 192, _ZN5aiter34fmha_bwd_hd64_bf16_causal_a16_rtnaE,       \
    "fmha_v3_bwd/bwd_hd64_bf16_causal_a16_rtna.co", 1, 0)                                          \
  X(bf16, 64, 64, 1, 0, 0, 0, 0, 2, 32, 192, _ZN5aiter33fmha_bwd_hd64_bf16_causal_a16_rtzE,        \
    "fmha_v3_bwd/bwd_hd64_bf16_causal_a16_rtz.co", 1, 0)                                           \
  X(bf16, 64, 64, 0, 1, 1, 0, 0, 0, 32, 192, _ZN5aiter32fmha_bwd_hd64_bf16_a32_rtne_psskE,         \
    "fmha_v3_bwd/bwd_hd64_bf16_a32_rtne_pssk.co", 1, 0)                                            \
  X(bf16, 64, 64, 0, 1, 1, 0, 0, 1, 32, 192, _ZN5aiter32fmha_bwd_hd64_bf16_a32_rtna_psskE,         \
    "fmha_v3_bwd/bwd_hd64_bf16_a32_rtna_pssk.co", 1, 0)                                            \
  X(bf16, 64, 64, 0, 1, 1, 0, 0, 2, 32, 192, _ZN5aiter31fmha_bwd_hd64_bf16_a32_rtz_psskE,          \
    "fmha_v3_bwd/bwd_hd64_bf16_a32_rtz_pssk.co", 1, 0)                                             \
  X(bf16, 64, 64, 0, 1, 1, 0, 1, 0, 32, 192, _ZN5aiter38fmha_bwd_hd64_bf16_a32_rtne_pssk_groupE,   \
    "fmha_v3_bwd/bwd_hd64_bf16_a32_rtne_pssk_group.co", 1, 0)                                      \
  X(bf16, 64, 64, 0, 1, 1, 0, 1, 1, 32, 192, _ZN5aiter38fmha_bwd_hd64_bf16_a32_rtna_pssk_groupE,   \
    "fmha_v3_bwd/bwd_hd64_bf16_a32_rtna_pssk_group.co", 1, 0)                                      \
  X(bf16, 64, 64, 0, 1, 1, 0, 1, 2, 32, 192, _ZN5aiter37fmha_bwd_hd64_bf16_a32_rtz_pssk_groupE,    \
    "fmha_v3_bwd/bwd_hd64_bf16_a32_rtz_pssk_group.co", 1, 0)                                       \
  X(bf16, 64, 64, 2, 1, 1, 0, 0, 0, 32, 192,                                                       \
    _ZN5aiter42fmha_bwd_hd64_bf16_causal_br_a32_rtne_psskE,                                        \
    "fmha_v3_bwd/bwd_hd64_bf16_causal_br_a32_rtne_pssk.co", 1, 0)                                  \
  X(bf16, 64, 64, 2, 1, 1, 0, 0, 1, 32, 192,                                                       \
    _ZN5aiter42fmha_bwd_hd64_bf16_causal_br_a32_rtna_psskE,                                        \
    "fmha_v3_bwd/bwd_hd64_bf16_causal_br_a32_rtna_pssk.co", 1, 0)                                  \
  X(bf16, 64, 64, 2, 1, 1, 0, 0, 2, 32, 192,                                                       \
    _ZN5aiter41fmha_bwd_hd64_bf16_causal_br_a32_rtz_psskE,                                         \
    "fmha_v3_bwd/bwd_hd64_bf16_causal_br_a32_rtz_pssk.co", 1, 0)                                   \
  X(bf16, 128, 128, 0, 0, 0, 0, 0, 0, 16, 192, _ZN5aiter28fmha_bwd_hd128_bf16_a16_rtneE,           \
    "fmha_v3_bwd/bwd_hd128_bf16_a16_rtne.co", 1, 0)                                                \
  X(bf16, 128, 128, 0, 0, 0, 0, 0, 1, 16, 192, _ZN5aiter28fmha_bwd_hd128_bf16_a16_rtnaE,           \
    "fmha_v3_bwd/bwd_hd128_bf16_a16_rtna.co", 1, 0)                                                \
  X(bf16, 128, 128, 0, 0, 0, 0, 0, 2, 16, 192, _ZN5aiter27fmha_bwd_hd128_bf16_a16_rtzE,            \
    "fmha_v3_bwd/bwd_hd128_bf16_a16_rtz.co", 1, 0)                                                 \
  X(bf16, 128, 128, 0, 0, 0, 1, 0, 0, 16, 192, _ZN5aiter33fmha_bwd_hd128_bf16_a16_rtne_pddvE,      \
    "fmha_v3_bwd/bwd_hd128_bf16_a16_rtne_pddv.co", 1, 0)                                           \
  X(bf16, 128, 128, 0, 0, 0, 1, 0, 1, 16, 192, _ZN5aiter33fmha_bwd_hd128_bf16_a16_rtna_pddvE,      \
    "fmha_v3_bwd/bwd_hd128_bf16_a16_rtna_pddv.co", 1, 0)                                           \
  X(bf16, 128, 128, 0, 0, 0, 1, 0, 2, 16, 192, _ZN5aiter32fmha_bwd_hd128_bf16_a16_rtz_pddvE,       \
    "fmha_v3_bwd/bwd_hd128_bf16_a16_rtz_pddv.co", 1, 0)                                            \
  X(bf16, 128, 128, 1, 0, 0, 0, 0, 0, 16, 192, _ZN5aiter35fmha_bwd_hd128_bf16_causal_a16_rtneE,    \
    "fmha_v3_bwd/bwd_hd128_bf16_causal_a16_rtne.co", 1, 0)                                         \
  X(bf16, 128, 128, 1, 0, 0, 0, 0, 1, 16, 192, _ZN5aiter35fmha_bwd_hd128_bf16_causal_a16_rtnaE,    \
    "fmha_v3_bwd/bwd_hd128_bf16_causal_a16_rtna.co", 1, 0)                                         \
  X(bf16, 128, 128, 1, 0, 0, 0, 0, 2, 16, 192, _ZN5aiter34fmha_bwd_hd128_bf16_causal_a16_rtzE,     \
    "fmha_v3_bwd/bwd_hd128_bf16_causal_a16_rtz.co", 1, 0)                                          \
  X(bf16, 128, 128, 1, 0, 0, 1, 0, 0, 16, 192,                                                     \
    _ZN5aiter40fmha_bwd_hd128_bf16_causal_a16_rtne_pddvE,                                          \
    "fmha_v3_bwd/bwd_hd128_bf16_causal_a16_rtne_pddv.co", 1, 0)                                    \
  X(bf16, 128, 128, 1, 0, 0, 1, 0, 1, 16, 192,                                                     \
    _ZN5aiter40fmha_bwd_hd128_bf16_causal_a16_rtna_pddvE,                                          \
    "fmha_v3_bwd/bwd_hd128_bf16_causal_a16_rtna_pddv.co", 1, 0)                                    \
  X(bf16, 128, 128, 1, 0, 0, 1, 0, 2, 16, 192,                                                     \
    _ZN5aiter39fmha_bwd_hd128_bf16_causal_a16_rtz_pddvE,                                           \
    "fmha_v3_bwd/bwd_hd128_bf16_causal_a16_rtz_pddv.co", 1, 0)                                     \
  X(bf16, 128, 128, 0, 1, 0, 0, 0, 0, 16, 192, _ZN5aiter28fmha_bwd_hd128_bf16_a32_rtneE,           \
    "fmha_v3_bwd/bwd_hd128_bf16_a32_rtne.co", 1, 0)                                                \
  X(bf16, 128, 128, 0, 1, 0, 0, 0, 1, 16, 192, _ZN5aiter28fmha_bwd_hd128_bf16_a32_rtnaE,           \
    "fmha_v3_bwd/bwd_hd128_bf16_a32_rtna.co", 1, 0)                                                \
  X(bf16, 128, 128, 0, 1, 0, 0, 0, 2, 16, 192, _ZN5aiter27fmha_bwd_hd128_bf16_a32_rtzE,            \
    "fmha_v3_bwd/bwd_hd128_bf16_a32_rtz.co", 1, 0)                                                 \
  X(bf16, 128, 128, 0, 1, 1, 1, 0, 0, 16, 192, _ZN5aiter36fmha_bwd_hd128_bf16_a32_rtne_psskddvE,   \
    "fmha_v3_bwd/bwd_hd128_bf16_a32_rtne_psskddv.co", 1, 0)                                        \
  X(bf16, 128, 128, 0, 1, 1, 1, 0, 1, 16, 192, _ZN5aiter36fmha_bwd_hd128_bf16_a32_rtna_psskddvE,   \
    "fmha_v3_bwd/bwd_hd128_bf16_a32_rtna_psskddv.co", 1, 0)                                        \
  X(bf16, 128, 128, 0, 1, 1, 1, 0, 2, 16, 192, _ZN5aiter35fmha_bwd_hd128_bf16_a32_rtz_psskddvE,    \
    "fmha_v3_bwd/bwd_hd128_bf16_a32_rtz_psskddv.co", 1, 0)                                         \
  X(bf16, 128, 128, 0, 1, 1, 0, 1, 0, 16, 192,                                                     \
    _ZN5aiter39fmha_bwd_hd128_bf16_a32_rtne_pssk_groupE,                                           \
    "fmha_v3_bwd/bwd_hd128_bf16_a32_rtne_pssk_group.co", 1, 0)                                     \
  X(bf16, 128, 128, 0, 1, 1, 1, 1, 0, 16, 192,                                                     \
    _ZN5aiter42fmha_bwd_hd128_bf16_a32_rtne_psskddv_groupE,                                        \
    "fmha_v3_bwd/bwd_hd128_bf16_a32_rtne_psskddv_group.co", 1, 0)                                  \
  X(bf16, 128, 128, 0, 1, 1, 0, 1, 1, 16, 192,                                                     \
    _ZN5aiter39fmha_bwd_hd128_bf16_a32_rtna_pssk_groupE,                                           \
    "fmha_v3_bwd/bwd_hd128_bf16_a32_rtna_pssk_group.co", 1, 0)                                     \
  X(bf16, 128, 128, 0, 1, 1, 1, 1, 1, 16, 192,                                                     \
    _ZN5aiter42fmha_bwd_hd128_bf16_a32_rtna_psskddv_groupE,                                        \
    "fmha_v3_bwd/bwd_hd128_bf16_a32_rtna_psskddv_group.co", 1, 0)                                  \
  X(bf16, 128, 128, 0, 1, 1, 0, 1, 2, 16, 192, _ZN5aiter38fmha_bwd_hd128_bf16_a32_rtz_pssk_groupE, \
    "fmha_v3_bwd/bwd_hd128_bf16_a32_rtz_pssk_group.co", 1, 0)                                      \
  X(bf16, 128, 128, 0, 1, 1, 1, 1, 2, 16, 192,                                                     \
    _ZN5aiter41fmha_bwd_hd128_bf16_a32_rtz_psskddv_groupE,                                         \
    "fmha_v3_bwd/bwd_hd128_bf16_a32_rtz_psskddv_group.co", 1, 0)                                   \
  X(bf16, 128, 128, 2, 1, 1, 1, 0, 0, 16, 192,                                                     \
    _ZN5aiter46fmha_bwd_hd128_bf16_causal_br_a32_rtne_psskddvE,                                    \
    "fmha_v3_bwd/bwd_hd128_bf16_causal_br_a32_rtne_psskddv.co", 1, 0)                              \
  X(bf16, 128, 128, 2, 1, 1, 1, 0, 1, 16, 192,                                                     \
    _ZN5aiter46fmha_bwd_hd128_bf16_causal_br_a32_rtna_psskddvE,                                    \
    "fmha_v3_bwd/bwd_hd128_bf16_causal_br_a32_rtna_psskddv.co", 1, 0)                              \
  X(bf16, 128, 128, 2, 1, 1, 1, 0, 2, 16, 192,                                                     \
    _ZN5aiter45fmha_bwd_hd128_bf16_causal_br_a32_rtz_psskddvE,                                     \
    "fmha_v3_bwd/bwd_hd128_bf16_causal_br_a32_rtz_psskddv.co", 1, 0)                               \
  X(bf16, 128, 128, 2, 1, 1, 0, 1, 0, 16, 192,                                                     \
    _ZN5aiter49fmha_bwd_hd128_bf16_causal_br_a32_rtne_pssk_groupE,                                 \
    "fmha_v3_bwd/bwd_hd128_bf16_causal_br_a32_rtne_pssk_group.co", 1, 0)                           \
  X(bf16, 128, 128, 2, 1, 1, 1, 1, 0, 16, 192,                                                     \
    _ZN5aiter52fmha_bwd_hd128_bf16_causal_br_a32_rtne_psskddv_groupE,                              \
    "fmha_v3_bwd/bwd_hd128_bf16_causal_br_a32_rtne_psskddv_group.co", 1, 0)                        \
  X(bf16, 128, 128, 2, 1, 1, 0, 1, 1, 16, 192,                                                     \
    _ZN5aiter49fmha_bwd_hd128_bf16_causal_br_a32_rtna_pssk_groupE,                                 \
    "fmha_v3_bwd/bwd_hd128_bf16_causal_br_a32_rtna_pssk_group.co", 1, 0)                           \
  X(bf16, 128, 128, 2, 1, 1, 1, 1, 1, 16, 192,                                                     \
    _ZN5aiter52fmha_bwd_hd128_bf16_causal_br_a32_rtna_psskddv_groupE,                              \
    "fmha_v3_bwd/bwd_hd128_bf16_causal_br_a32_rtna_psskddv_group.co", 1, 0)                        \
  X(bf16, 128, 128, 2, 1, 1, 0, 1, 2, 16, 192,                                                     \
    _ZN5aiter48fmha_bwd_hd128_bf16_causal_br_a32_rtz_pssk_groupE,                                  \
    "fmha_v3_bwd/bwd_hd128_bf16_causal_br_a32_rtz_pssk_group.co", 1, 0)                            \
  X(bf16, 128, 128, 2, 1, 1, 1, 1, 2, 16, 192,                                                     \
    _ZN5aiter51fmha_bwd_hd128_bf16_causal_br_a32_rtz_psskddv_groupE,                               \
    "fmha_v3_bwd/bwd_hd128_bf16_causal_br_a32_rtz_psskddv_group.co", 1, 0)                         \
  X(bf16, 128, 128, 3, 1, 1, 1, 0, 0, 16, 192,                                                     \
    _ZN5aiter40fmha_bwd_hd128_bf16_swa_a32_rtne_psskddvE,                                          \
    "fmha_v3_bwd/bwd_hd128_bf16_swa_a32_rtne_psskddv.co", 1, 0)                                    \
  X(bf16, 128, 128, 3, 1, 1, 1, 0, 1, 16, 192,                                                     \
    _ZN5aiter40fmha_bwd_hd128_bf16_swa_a32_rtna_psskddvE,                                          \
    "fmha_v3_bwd/bwd_hd128_bf16_swa_a32_rtna_psskddv.co", 1, 0)                                    \
  X(bf16, 128, 128, 3, 1, 1, 1, 0, 2, 16, 192,                                                     \
    _ZN5aiter39fmha_bwd_hd128_bf16_swa_a32_rtz_psskddvE,                                           \
    "fmha_v3_bwd/bwd_hd128_bf16_swa_a32_rtz_psskddv.co", 1, 0)                                     \
  X(bf16, 64, 64, 0, 0, 0, 0, 0, 0, 32, 192, _ZN5aiter27fmha_bwd_hd64_bf16_a16_rtneE,              \
    "fmha_v3_bwd/bwd_hd64_bf16_a16_rtne.co", 1, 0)                                                 \
  X(bf16, 64, 64, 0, 0, 0, 0, 0, 1, 32, 192, _ZN5aiter27fmha_bwd_hd64_bf16_a16_rtnaE,              \
    "fmha_v3_bwd/bwd_hd64_bf16_a16_rtna.co", 1, 0)                                                 \
  X(bf16, 64, 64, 0, 0, 0, 0, 0, 2, 32, 192, _ZN5aiter26fmha_bwd_hd64_bf16_a16_rtzE,               \
    "fmha_v3_bwd/bwd_hd64_bf16_a16_rtz.co", 1, 0)                                                  \
  X(fp16, 128, 128, 0, 0, 1, 1, 0, 3, 16, 256, _ZN5aiter31fmha_bwd_hd128_fp16_a16_psskddvE,        \
    "fmha_v3_bwd/bwd_hd128_fp16_a16_psskddv.co", 0, 1)                                             \
  X(fp16, 128, 128, 0, 0, 1, 1, 1, 3, 16, 256, _ZN5aiter37fmha_bwd_hd128_fp16_a16_psskddv_groupE,  \
    "fmha_v3_bwd/bwd_hd128_fp16_a16_psskddv_group.co", 0, 1)                                       \
  X(bf16, 128, 128, 0, 0, 1, 1, 0, 3, 16, 256, _ZN5aiter31fmha_bwd_hd128_bf16_a16_psskddvE,        \
    "fmha_v3_bwd/bwd_hd128_bf16_a16_psskddv.co", 0, 1)                                             \
  X(bf16, 128, 128, 0, 0, 1, 1, 1, 3, 16, 256, _ZN5aiter37fmha_bwd_hd128_bf16_a16_psskddv_groupE,  \
    "fmha_v3_bwd/bwd_hd128_bf16_a16_psskddv_group.co", 0, 1)                                       \
  X(fp16, 192, 128, 0, 0, 1, 1, 0, 3, 16, 192, _ZN5aiter32fmha_bwd_hd192_128_fp16_a16_psskE,       \
    "fmha_v3_bwd/bwd_hd192_128_fp16_a16_pssk.co", 0, 1)                                            \
  X(bf16, 192, 128, 0, 0, 1, 1, 0, 3, 16, 192, _ZN5aiter32fmha_bwd_hd192_128_bf16_a16_psskE,       \
    "fmha_v3_bwd/bwd_hd192_128_bf16_a16_pssk.co", 0, 1)                                            \
  X(bf16, 192, 128, 2, 1, 1, 1, 0, 3, 16, 192,                                                     \
    _ZN5aiter42fmha_bwd_hd192_128_bf16_causal_br_a32_psskE,                                        \
    "fmha_v3_bwd/bwd_hd192_128_bf16_causal_br_a32_pssk.co", 0, 1)                                  \
  X(fp16, 192, 128, 2, 1, 1, 1, 0, 3, 16, 192,                                                     \
    _ZN5aiter42fmha_bwd_hd192_128_fp16_causal_br_a32_psskE,                                        \
    "fmha_v3_bwd/bwd_hd192_128_fp16_causal_br_a32_pssk.co", 0, 1)                                  \
  X(fp16, 128, 128, 0, 1, 1, 1, 0, 3, 16, 256, _ZN5aiter31fmha_bwd_hd128_fp16_a32_psskddvE,        \
    "fmha_v3_bwd/bwd_hd128_fp16_a32_psskddv.co", 0, 1)                                             \
  X(fp16, 128, 128, 0, 1, 1, 1, 1, 3, 16, 256, _ZN5aiter37fmha_bwd_hd128_fp16_a32_psskddv_groupE,  \
    "fmha_v3_bwd/bwd_hd128_fp16_a32_psskddv_group.co", 0, 1)                                       \
  X(bf16, 128, 128, 0, 1, 1, 1, 0, 3, 16, 256, _ZN5aiter31fmha_bwd_hd128_bf16_a32_psskddvE,        \
    "fmha_v3_bwd/bwd_hd128_bf16_a32_psskddv.co", 0, 1)                                             \
  X(bf16, 128, 128, 0, 1, 1, 1, 1, 3, 16, 256, _ZN5aiter37fmha_bwd_hd128_bf16_a32_psskddv_groupE,  \
    "fmha_v3_bwd/bwd_hd128_bf16_a32_psskddv_group.co", 0, 1)                                       \
  X(fp16, 192, 128, 0, 1, 1, 1, 0, 3, 16, 192, _ZN5aiter32fmha_bwd_hd192_128_fp16_a32_psskE,       \
    "fmha_v3_bwd/bwd_hd192_128_fp16_a32_pssk.co", 0, 1)                                            \
  X(bf16, 192, 128, 0, 1, 1, 1, 0, 3, 16, 192, _ZN5aiter32fmha_bwd_hd192_128_bf16_a32_psskE,       \
    "fmha_v3_bwd/bwd_hd192_128_bf16_a32_pssk.co", 0, 1)                                            \
  X(fp16, 128, 128, 2, 0, 1, 1, 0, 3, 16, 256,                                                     \
    _ZN5aiter41fmha_bwd_hd128_fp16_causal_br_a16_psskddvE,                                         \
    "fmha_v3_bwd/bwd_hd128_fp16_causal_br_a16_psskddv.co", 0, 1)                                   \
  X(fp16, 128, 128, 2, 0, 1, 1, 1, 3, 16, 256,                                                     \
    _ZN5aiter47fmha_bwd_hd128_fp16_causal_br_a16_psskddv_groupE,                                   \
    "fmha_v3_bwd/bwd_hd128_fp16_causal_br_a16_psskddv_group.co", 0, 1)                             \
  X(bf16, 128, 128, 2, 0, 1, 1, 0, 3, 16, 256,                                                     \
    _ZN5aiter41fmha_bwd_hd128_bf16_causal_br_a16_psskddvE,                                         \
    "fmha_v3_bwd/bwd_hd128_bf16_causal_br_a16_psskddv.co", 0, 1)                                   \
  X(bf16, 128, 128, 2, 0, 1, 1, 1, 3, 16, 256,                                                     \
    _ZN5aiter47fmha_bwd_hd128_bf16_causal_br_a16_psskddv_groupE,                                   \
    "fmha_v3_bwd/bwd_hd128_bf16_causal_br_a16_psskddv_group.co", 0, 1)                             \
  X(fp16, 128, 128, 2, 1, 1, 1, 0, 3, 16, 256,                                                     \
    _ZN5aiter41fmha_bwd_hd128_fp16_causal_br_a32_psskddvE,                                         \
    "fmha_v3_bwd/bwd_hd128_fp16_causal_br_a32_psskddv.co", 0, 1)                                   \
  X(fp16, 128, 128, 2, 1, 1, 1, 1, 3, 16, 256,                                                     \
    _ZN5aiter47fmha_bwd_hd128_fp16_causal_br_a32_psskddv_groupE,                                   \
    "fmha_v3_bwd/bwd_hd128_fp16_causal_br_a32_psskddv_group.co", 0, 1)                             \
  X(bf16, 128, 128, 2, 1, 1, 1, 0, 3, 16, 256,                                                     \
    _ZN5aiter41fmha_bwd_hd128_bf16_causal_br_a32_psskddvE,                                         \
    "fmha_v3_bwd/bwd_hd128_bf16_causal_br_a32_psskddv.co", 0, 1)                                   \
  X(bf16, 128, 128, 2, 1, 1, 1, 1, 3, 16, 256,                                                     \
    _ZN5aiter47fmha_bwd_hd128_bf16_causal_br_a32_psskddv_groupE,                                   \
    "fmha_v3_bwd/bwd_hd128_bf16_causal_br_a32_psskddv_group.co", 0, 1)                             \
  X(fp16, 192, 128, 2, 0, 1, 1, 0, 3, 16, 192,                                                     \
    _ZN5aiter42fmha_bwd_hd192_128_fp16_causal_br_a16_psskE,                                        \
    "fmha_v3_bwd/bwd_hd192_128_fp16_causal_br_a16_pssk.co", 0, 1)                                  \
  X(bf16, 192, 128, 2, 0, 1, 1, 0, 3, 16, 192,                                                     \
    _ZN5aiter42fmha_bwd_hd192_128_bf16_causal_br_a16_psskE,                                        \
    "fmha_v3_bwd/bwd_hd192_128_bf16_causal_br_a16_pssk.co", 0, 1)

#define JAX_AITER_FMHA_V3_BWD_DQ_CONVERT_ROWS(X)                                                   \
  X(fp16, 64, 64, 0, 0, 0, 0, 0, 3, 0, 64, _ZN5aiter29fmha_bwd_hd64_dq_convert_fp16E,              \
    "fmha_v3_bwd/bwd_hd64_dq_convert_fp16.co", 1, 0)                                               \
  X(fp16, 64, 64, 0, 0, 0, 0, 1, 3, 0, 64, _ZN5aiter35fmha_bwd_hd64_dq_convert_fp16_groupE,        \
    "fmha_v3_bwd/bwd_hd64_dq_convert_fp16_group.co", 1, 0)                                         \
  X(bf16, 64, 64, 0, 0, 0, 0, 0, 0, 0, 64, _ZN5aiter34fmha_bwd_hd64_dq_convert_bf16_rtneE,         \
    "fmha_v3_bwd/bwd_hd64_dq_convert_bf16_rtne.co", 1, 0)                                          \
  X(bf16, 64, 64, 0, 0, 0, 0, 0, 1, 0, 64, _ZN5aiter34fmha_bwd_hd64_dq_convert_bf16_rtnaE,         \
    "fmha_v3_bwd/bwd_hd64_dq_convert_bf16_rtna.co", 1, 0)                                          \
  X(bf16, 64, 64, 0, 0, 0, 0, 0, 2, 0, 64, _ZN5aiter33fmha_bwd_hd64_dq_convert_bf16_rtzE,          \
    "fmha_v3_bwd/bwd_hd64_dq_convert_bf16_rtz.co", 1, 0)                                           \
  X(bf16, 64, 64, 0, 0, 0, 0, 1, 0, 0, 64, _ZN5aiter40fmha_bwd_hd64_dq_convert_bf16_rtne_groupE,   \
    "fmha_v3_bwd/bwd_hd64_dq_convert_bf16_rtne_group.co", 1, 0)                                    \
  X(bf16, 64, 64, 0, 0, 0, 0, 1, 1, 0, 64, _ZN5aiter40fmha_bwd_hd64_dq_convert_bf16_rtna_groupE,   \
    "fmha_v3_bwd/bwd_hd64_dq_convert_bf16_rtna_group.co", 1, 0)                                    \
  X(bf16, 64, 64, 0, 0, 0, 0, 1, 2, 0, 64, _ZN5aiter39fmha_bwd_hd64_dq_convert_bf16_rtz_groupE,    \
    "fmha_v3_bwd/bwd_hd64_dq_convert_bf16_rtz_group.co", 1, 0)                                     \
  X(fp16, 128, 128, 0, 0, 0, 0, 0, 3, 0, 64, _ZN5aiter30fmha_bwd_hd128_dq_convert_fp16E,           \
    "fmha_v3_bwd/bwd_hd128_dq_convert_fp16.co", 1, 0)                                              \
  X(fp16, 128, 128, 0, 0, 0, 0, 1, 3, 0, 64, _ZN5aiter36fmha_bwd_hd128_dq_convert_fp16_groupE,     \
    "fmha_v3_bwd/bwd_hd128_dq_convert_fp16_group.co", 1, 0)                                        \
  X(bf16, 128, 128, 0, 0, 0, 0, 0, 0, 0, 64, _ZN5aiter35fmha_bwd_hd128_dq_convert_bf16_rtneE,      \
    "fmha_v3_bwd/bwd_hd128_dq_convert_bf16_rtne.co", 1, 0)                                         \
  X(bf16, 128, 128, 0, 0, 0, 0, 0, 1, 0, 64, _ZN5aiter35fmha_bwd_hd128_dq_convert_bf16_rtnaE,      \
    "fmha_v3_bwd/bwd_hd128_dq_convert_bf16_rtna.co", 1, 0)                                         \
  X(bf16, 128, 128, 0, 0, 0, 0, 0, 2, 0, 64, _ZN5aiter34fmha_bwd_hd128_dq_convert_bf16_rtzE,       \
    "fmha_v3_bwd/bwd_hd128_dq_convert_bf16_rtz.co", 1, 0)                                          \
  X(bf16, 128, 128, 0, 0, 0, 0, 1, 0, 0, 64,                                                       \
    _ZN5aiter41fmha_bwd_hd128_dq_convert_bf16_rtne_groupE,                                         \
    "fmha_v3_bwd/bwd_hd128_dq_convert_bf16_rtne_group.co", 1, 0)                                   \
  X(bf16, 128, 128, 0, 0, 0, 0, 1, 1, 0, 64,                                                       \
    _ZN5aiter41fmha_bwd_hd128_dq_convert_bf16_rtna_groupE,                                         \
    "fmha_v3_bwd/bwd_hd128_dq_convert_bf16_rtna_group.co", 1, 0)                                   \
  X(bf16, 128, 128, 0, 0, 0, 0, 1, 2, 0, 64, _ZN5aiter40fmha_bwd_hd128_dq_convert_bf16_rtz_groupE, \
    "fmha_v3_bwd/bwd_hd128_dq_convert_bf16_rtz_group.co", 1, 0)                                    \
  X(fp16, 192, 192, 0, 0, 0, 0, 0, 3, 0, 64, _ZN5aiter30fmha_bwd_hd192_dq_convert_fp16E,           \
    "fmha_v3_bwd/bwd_hd192_dq_convert_fp16.co", 1, 0)                                              \
  X(fp16, 192, 192, 0, 0, 0, 0, 1, 3, 0, 64, _ZN5aiter36fmha_bwd_hd192_dq_convert_fp16_groupE,     \
    "fmha_v3_bwd/bwd_hd192_dq_convert_fp16_group.co", 1, 0)                                        \
  X(bf16, 192, 192, 0, 0, 0, 0, 0, 0, 0, 64, _ZN5aiter35fmha_bwd_hd192_dq_convert_bf16_rtneE,      \
    "fmha_v3_bwd/bwd_hd192_dq_convert_bf16_rtne.co", 1, 0)                                         \
  X(bf16, 192, 192, 0, 0, 0, 0, 0, 1, 0, 64, _ZN5aiter35fmha_bwd_hd192_dq_convert_bf16_rtnaE,      \
    "fmha_v3_bwd/bwd_hd192_dq_convert_bf16_rtna.co", 1, 0)                                         \
  X(bf16, 192, 192, 0, 0, 0, 0, 0, 2, 0, 64, _ZN5aiter34fmha_bwd_hd192_dq_convert_bf16_rtzE,       \
    "fmha_v3_bwd/bwd_hd192_dq_convert_bf16_rtz.co", 1, 0)                                          \
  X(bf16, 192, 192, 0, 0, 0, 0, 1, 0, 0, 64,                                                       \
    _ZN5aiter41fmha_bwd_hd192_dq_convert_bf16_rtne_groupE,                                         \
    "fmha_v3_bwd/bwd_hd192_dq_convert_bf16_rtne_group.co", 1, 0)                                   \
  X(bf16, 192, 192, 0, 0, 0, 0, 1, 1, 0, 64,                                                       \
    _ZN5aiter41fmha_bwd_hd192_dq_convert_bf16_rtna_groupE,                                         \
    "fmha_v3_bwd/bwd_hd192_dq_convert_bf16_rtna_group.co", 1, 0)                                   \
  X(bf16, 192, 192, 0, 0, 0, 0, 1, 2, 0, 64, _ZN5aiter40fmha_bwd_hd192_dq_convert_bf16_rtz_groupE, \
    "fmha_v3_bwd/bwd_hd192_dq_convert_bf16_rtz_group.co", 1, 0)                                    \
  X(fp16, 128, 128, 0, 0, 0, 0, 0, 3, 0, 64, _ZN5aiter30fmha_bwd_hd128_dq_convert_fp16E,           \
    "fmha_v3_bwd/bwd_hd128_dq_convert_fp16.co", 0, 1)                                              \
  X(fp16, 128, 128, 0, 0, 0, 0, 1, 3, 0, 64, _ZN5aiter36fmha_bwd_hd128_dq_convert_fp16_groupE,     \
    "fmha_v3_bwd/bwd_hd128_dq_convert_fp16_group.co", 0, 1)                                        \
  X(bf16, 128, 128, 0, 0, 0, 0, 0, 3, 0, 64, _ZN5aiter30fmha_bwd_hd128_dq_convert_bf16E,           \
    "fmha_v3_bwd/bwd_hd128_dq_convert_bf16.co", 0, 1)                                              \
  X(bf16, 128, 128, 0, 0, 0, 0, 1, 3, 0, 64, _ZN5aiter36fmha_bwd_hd128_dq_convert_bf16_groupE,     \
    "fmha_v3_bwd/bwd_hd128_dq_convert_bf16_group.co", 0, 1)                                        \
  X(fp16, 192, 192, 0, 0, 0, 0, 0, 3, 0, 64, _ZN5aiter30fmha_bwd_hd192_dq_convert_fp16E,           \
    "fmha_v3_bwd/bwd_hd192_dq_convert_fp16.co", 0, 1)                                              \
  X(bf16, 192, 192, 0, 0, 0, 0, 0, 3, 0, 64, _ZN5aiter30fmha_bwd_hd192_dq_convert_bf16E,           \
    "fmha_v3_bwd/bwd_hd192_dq_convert_bf16.co", 0, 1)

#define JAX_AITER_FMHA_V3_BWD_DQ_SHUFFLE_ROWS(X)                                          \
  X(bf16, 192, 192, 0, 0, 0, 0, 0, 3, 0, 64, _ZN5aiter25fmha_bwd_hd192_dq_shuffleE,       \
    "fmha_v3_bwd/bwd_hd192_dq_shuffle.co", 0, 1)                                          \
  X(bf16, 128, 128, 0, 0, 0, 0, 0, 3, 0, 64, _ZN5aiter25fmha_bwd_hd128_dq_shuffleE,       \
    "fmha_v3_bwd/bwd_hd128_dq_shuffle.co", 0, 1)                                          \
  X(bf16, 128, 128, 0, 0, 0, 0, 1, 3, 0, 64, _ZN5aiter31fmha_bwd_hd128_dq_shuffle_groupE, \
    "fmha_v3_bwd/bwd_hd128_dq_shuffle_group.co", 0, 1)

namespace jax_aiter::kernels::aiter_fmha_v3 {
// The part column of the forward rows.
inline constexpr int kPartAny = 0;    // gfx950's one build
inline constexpr int kPartMi300 = 1;  // gfx942: hsa/gfx942/fmha_v3_fwd/MI300/
inline constexpr int kPartMi308 = 2;  // gfx942: hsa/gfx942/fmha_v3_fwd/MI308/
}  // namespace jax_aiter::kernels::aiter_fmha_v3
