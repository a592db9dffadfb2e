// The ASM tier of aiter.gemm_fp8_mi350: AITER's MI350 FP8 block-scale kernels
// (kernels/aiter/mi350.hpp; gfx950 only), chosen and packed as AITER's launcher did
// (csrc/py_itfs_cu/asm_mi350_a8w8_blockscale.cu as of 06de6e9aee^, github.com/ROCm/aiter).
//
// The rule (AITER's, restated; there is no CSV and no heuristic beyond it):
//  - the arch must be gfx950 (AITER ships these code objects for gfx950 only), and the fp8
//    operands e4m3fn, gfx950's format, on every backend (ops/fp8_format.hpp);
//  - N % 128 == 0 and K % 128 == 0 (validate()), M >= 16 and K >= 512 (AITER's checks);
//  - the row: f8_block_scale_mi350_x32 if M <= 32, else f8_block_scale_mi350_x128. x64 and x96
//    ship beside them but AITER's launcher never picked them (it loads only x32 and x128); we keep
//    that rule, so the ASM tier behaves as AITER's did, and keep x64/x96 in the table, forceable
//    by name (kernel=...), checked and twinned like the others;
//  - a forced kernel (by symbol or short name, e.g. "f8_block_scale_mi350_x64") runs regardless
//    of M, under the same gates.
// Grid (ceil(N / 256), ceil(M / tile_m), 1), block 256: every workgroup covers 256 columns (two
// 128-column tiles; the last covers 128 when N % 256 == 128) and tile_m rows (the last clipped).
// No split (the struct's splitk = 0; a forced splitk above 1 is refused), no workspace, no memset:
// the kernels store every element of out.
// Where ours differs from AITER's: nothing in the choice; the struct's fields AITER leaves
// uninitialised (Xc, the tmp pointers and values, SW) are zero here.
#pragma once

#include <cstdint>
#include <string_view>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/core/verdict.hpp"
#include "jax_aiter/kernels/aiter/mi350.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/ops/aiter_tier.hpp"
#include "jax_aiter/ops/fp8_format.hpp"
#include "jax_aiter/ops/gemm_fp8_mi350_params.hpp"

namespace jax_aiter::ops {

// AITER's MI350 FP8 block-scale family: the facts AiterTier (ops/aiter_tier.hpp) selects and
// packs with.
struct AiterMi350 : AiterFamily<GemmFp8Mi350Params, kernels::kAiterMi350Rows> {
  static constexpr std::string_view kNotOnArch =
      "AITER's MI350 FP8 block-scale kernels are gfx950 code only";
  static constexpr std::string_view kNotARow =
      "the forced kernel is not an MI350 FP8 row (f8_block_scale_mi350_x32, _x64, _x96 or _x128)";

  static constexpr int want_tile_m(int64_t m) { return m <= 32 ? 32 : 128; }

  static Verdict accepts(const Params& p, const Target& t) { return reads_fp8(p.xq.dtype, t); }
  static constexpr Verdict gate(const AiterQuery& q) {
    namespace L = kernels::aiter_mi350;
    if (q.n % L::kScaleBlock != 0 || q.k % L::kScaleBlock != 0) {
      return Verdict::no("N = {} and K = {} must be multiples of 128", q.n, q.k);
    }
    if (q.m < L::kMinM) {
      return Verdict::no("M = {} is below 16 (AITER's kernels need M >= 16)", q.m);
    }
    if (q.k < L::kMinK) {
      return Verdict::no("K = {} is below 512 (AITER's kernels need K >= 512)", q.k);
    }
    return Verdict::yes();
  }
  static constexpr Verdict fits(const Row&, const AiterQuery&) { return Verdict::yes(); }
  // AITER's launcher loads x32 and x128 only: x32 for M <= 32, else x128.
  static constexpr bool auto_row(const Row& r, const AiterQuery& q) {
    return r.tile_m == want_tile_m(q.m);
  }
  static constexpr Verdict none(const AiterQuery& q) {
    if (const auto s = q.knobs.split(); s && *s > 1) return runs(kRows[0], q, *s);
    return Verdict::no("no MI350 row with tile_m {}", want_tile_m(q.m));
  }

  // As AITER's mi350_a8w8_blockscale_asm packs it (the fields it leaves unset are zero).
  static void pack(const Params& p, const AiterChoice<Row>& c, kernels::Plan& plan) {
    namespace L = kernels::aiter_mi350;
    const auto m = static_cast<uint32_t>(p.m()), n = static_cast<uint32_t>(p.n()),
               k = static_cast<uint32_t>(p.k());
    kernels::AiterMi350Args args{};
    args.ptr_C = p.out.data;
    args.ptr_X = p.xq.data;
    args.ptr_W = p.wq.data;
    args.ptr_XQ = p.x_scale.data;
    args.ptr_WQ = p.w_scale.data;
    args.K = k;
    args.N = n;
    args.M = m;
    args.eprt_cnt = 1;
    args.Xs = k;  // bytes: fp8
    args.Ws = k;
    args.Cs = n * 2;  // bytes: bf16
    args.splitk = 0;
    args.activation = 0;
    const kernels::Dim3 grid{static_cast<uint32_t>(ceil_div(n, L::kTileN)),
                             static_cast<uint32_t>(ceil_div(m, c.row->tile_m)), 1};
    plan.launch(c.row->kernel, grid, {L::kBlockThreads, 1, 1}, args);
    plan.note("tile_m", c.row->tile_m);
    plan.note("tile_n", L::kTileN);
  }
};

using GemmFp8Mi350AsmTier = AiterTier<AiterMi350>;

}  // namespace jax_aiter::ops
