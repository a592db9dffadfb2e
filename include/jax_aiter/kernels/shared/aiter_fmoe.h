// AITER's one-stage fused-MoE ASM kernels ("fmoe"), one row per kernel and list (origin:
// github.com/ROCm/aiter at e4048607a535, hsa/{gfx942,gfx950}/fmoe/{silu,gelu}/fmoe_*.csv, MIT
// licence, (c) AMD; each code object's kernarg size and argument names read from its own AMDGPU
// metadata with llvm-readelf-22 --notes). The rows are aiter_fmoe.csv, the one source of the host
// table (kernels/aiter/fmoe.hpp) and of the CMake function that embeds AITER's code objects
// (cmake/JaxAiterRows.cmake); C++ reads them as the X-macro JAX_AITER_FMOE_ROWS of the generated
// aiter_fmoe.rows.h. The rest is constexpr C++ the kernel compilers read too.
//
// X(symbol, code_object, out, quant, gate, act, tkw1, atm, vskip, smf, tg_num_perCU, ps, subGU_m,
//   subGU_n, flat, kernarg_bytes, arg_names, on_gfx942, on_gfx950)
//   out, quant, gate, act, tkw1: the AITER list (CSV) the row is in,
//                fmoe_<out>_<quant>_<gate>_<act>[_tkw1]; the launcher (csrc/py_itfs_cu/
//                asm_fmoe.cu) picks one list per call
//     out        bf16, fp16: the output's dtype
//     quant      pertokenFp8, pertokenInt8: x and weights quantized per row (x fp8/i8 with f32
//                [T, 1] scales); blockscaleFp8: x fp8 and weights in 128x128 blocks;
//                blockscaleBf16: the same weights with x bf16, quantized in the kernel ("a16")
//     gate       g1u1: w1 holds gate and up ([E, 2 inter, hidden]); g1u0: gate only (the a16
//                smooth-quant entry fmoe_int8_g1u0_a16; same struct, kept for check-aiter)
//     act        silu, gelu
//     tkw1       1: the top-k weight is applied to the activation before the down GEMM
//                (AITER's doweight_stage1, entry fmoe_g1u1_tkw1)
//   atm          how out is accumulated (0 plain atomics; 1 "atm_opt", 2 "atm_inlv": g1u0 only)
//   vskip        1: the kernel skips the padding blocks past num_valid_ids ("vs"); the heuristic
//                takes only rows of the process's vskip (AITER_ENABLE_VSKIP, default 1)
//   smf          smoothing: 0 none, 1 x smoothed (the a16 entries), 2 fc2 smoothed ("multix",
//                reads SMQ); the heuristic takes only rows of the call's smf
//   tg_num_perCU workgroups per CU of a persistent (ps) launch
//   ps           1: persistent: a grid of tg_num_perCU x CUs workgroups walks the tiles
//   subGU_m      sorted rows a workgroup takes: the moe_sorting block size (block_m) it reads
//   subGU_n      columns of inter a workgroup takes (the inter tile)
//   flat         0: reads moe_sorting's layout; 1: one workgroup per (token, k) of unsorted
//                routing; 2: sorts on the device ("emsort"). The heuristic takes only flat 0.
//   kernarg_bytes the kernarg segment the code object declares: 448 (AITER's struct), 416 (ends
//                after topk), 436 (ps_deno with no trailing pad), or 480 (two more pointer slots
//                a2, a2q that AITER's 448-byte struct leaves to stray host bytes; we pass null)
//   arg_names    the metadata's names for the struct's fields (kernels/aiter/fmoe.hpp): o_tgs
//                (O, X, G, ..., total_tgs, ps_deno), o_s_tgs (..., _s_total_tgs, _s_deno_tgs),
//                r_s_tgs and r_pad_tgs (R, X, G, ..., dim_len, ..., with _s_ or _pad_ names)
// A kernel sits in two lists (gfx942's a16 flat/emsort rows, in blockscaleBf16 and blockscaleFp8),
// or has other values per arch, as two rows. Order: list by list (quant, out, gate/tkw1, act as
// below), then by (subGU_m, subGU_n, smf, vskip descending, ps, atm, flat, code object).
// Left out (no AITER entry reads them at e4048607a535): fp16 blockscaleFp8 (blockscale needs bf16
// out), pertokenInt8 tkw1, noquant g1u0; and pertokenMXfp4 (gfx950, 4-bit strides) for now.
#pragma once

#include "jax_aiter/kernels/shared/aiter_fmoe.rows.h"

// The layout functions below run in host code, our kernels and the host twins: nvcc needs them
// marked for both sides (clang in HIP mode treats constexpr functions as both already).
#if defined(__CUDACC__)
#define JAX_AITER_FMOE_FN __host__ __device__ constexpr
#else
#define JAX_AITER_FMOE_FN constexpr
#endif

namespace jax_aiter::kernels::aiter_fmoe {
inline constexpr int kBlockThreads = 256;  // every row's workgroup (asm_fmoe.cu launch_kernel)
// The block-scale lists' scale blocks: 128 rows by 128 columns of a weight, 128 columns of x
// (asm_fmoe.cu fmoe_fp8_blockscale_g1u1 takes only fc_scale_blkn == fc_scale_blkk == 128).
inline constexpr int kScaleBlock = 128;
// The block size of every list but the block-scale ones: the launcher passes its default
// block_size_M = 32 ("fmoe sorting kernel and fmoe kernel only support 32 for now").
inline constexpr int kDefaultBlockM = 32;

// moe_sorting's sorted token ids: (k << 24) | token, k the top-k slot; a padding entry is
// (topk << 24) | tokens (aiter/ops/flydsl/kernels/moe_sorting_kernel.py states the format).
inline constexpr int kTokenBits = 24;
JAX_AITER_FMOE_FN int sorted_token(int id) { return id & ((1 << kTokenBits) - 1); }
JAX_AITER_FMOE_FN int sorted_slot(int id) { return static_cast<unsigned>(id) >> kTokenBits; }
JAX_AITER_FMOE_FN int sorted_id(int token, int slot) { return (slot << kTokenBits) | token; }

// The sorted layout's sizes for T tokens, top-k and E experts at block size B (aiter/fused_moe.py
// _moe_sorting_impl): every expert's rows padded to whole blocks, at most this many.
JAX_AITER_FMOE_FN long long max_sorted_rows(long long t, long long topk, long long e, long long b) {
  return t * topk + e * b - topk;
}
JAX_AITER_FMOE_FN long long max_blocks(long long t, long long topk, long long e, long long b) {
  return (max_sorted_rows(t, topk, e, b) + b - 1) / b;
}

// The weights are pre-shuffled per expert as AITER's shuffle_weight(w, layout=(16, 16)) leaves
// 1-byte elements: each [N, K] matrix viewed as [N/16, 16, K/32, 2, 16] and stored as
// [N/16, K/32, 2, 16, 16] (the INT8 GEMM's layout, kernels/shared/aiter_i8gemm.h).
inline constexpr int kShuffleN = 16;
inline constexpr int kShuffleK = 32;
inline constexpr const char* kShuffleName = "16x16";
// Byte offset of W[n][k] within one expert's shuffled [N, K] matrix (N % 16 == 0, K % 32 == 0).
JAX_AITER_FMOE_FN long long shuffled_offset(long long n, long long k, long long K) {
  return ((n / kShuffleN) * (K / kShuffleK) + k / kShuffleK) * (kShuffleN * kShuffleK) +
         ((k % kShuffleK) / 16) * (kShuffleN * 16) + (n % kShuffleN) * 16 + k % 16;
}

// The fp8 format of a plan's operands (a gfx942 plan reads e4m3fnuz, a gfx950 plan e4m3fn), for
// our twins: in the first pad byte of the topk slot, which AITER's kernels never read.
inline constexpr int kFormatFnuz = 1;

// The persistent launch of a ps row (asm_fmoe.cu launch_kernel): ps_deno = the inter tiles,
// total_tgs = the persistent workgroups rounded down to whole multiples of ps_deno.
JAX_AITER_FMOE_FN unsigned ps_deno(unsigned inter, unsigned sub_n) {
  return (inter + sub_n - 1) / sub_n;
}
JAX_AITER_FMOE_FN unsigned total_tgs(unsigned persistent, unsigned deno) {
  return persistent / deno * deno;
}
}  // namespace jax_aiter::kernels::aiter_fmoe
