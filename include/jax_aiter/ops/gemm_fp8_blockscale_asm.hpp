// The ASM tiers of aiter.gemm_fp8_blockscale: AITER's three FP8 block-scale families, each a
// family of the generic tier (ops/aiter_tier.hpp), each with the rule AITER's launcher applies,
// in the op's order:
//   fp8gemm_blockscale  gfx942 and gfx950, bf16 out, N % 128, may split K (AITER's current path);
//   mi350               gfx950, bf16 out, M >= 16, K >= 512 (AITER's deleted MI350 launcher);
//   flatmm              gfx942, f16 out, N % 256 (one kernel).
// What every family checks of a call beyond its shape (fp8_family_accepts): the call does not ask
// for another family (Params::family), out is the dtype its kernels write, and the fp8 operands
// are the planned arch's format on every backend (ops/fp8_format.hpp: e4m3fnuz for gfx942,
// e4m3fn for gfx950; the ABI twins read the same).
//
// fp8gemm_blockscale (restated from get_heuristic_kernel in AITER's
// asm_a8w8_blockscale_bpreshuffle.cu at e4048607a535; our aiter-facts ABI-AND-RULES.md 4.2):
//  - candidates are the six rows (all may split; tile N = 128 must divide N);
//  - each candidate is tried with every valid split s in 1..16: a split's K chunk is
//    roundup(ceil(K / s), 128), and s is valid when ceil(K / chunk) == s (AITER corrects an
//    invalid split to that count; here only the corrected splits are scored, once);
//  - (row, split) pairs are compared by CU rounds = ceil(tiles * s / cus), tiles =
//    ceil(M / tile_m) * N / 128, then idle CUs in the last round, then tile efficiency
//    tile_m * tile_n / (tile_m + tile_n) (higher is better, compared exactly); the first in table
//    order (ascending tile_m), then the smaller split, wins what is still tied;
//  - a forced kernel (AITER's kernelName) runs split 1 unless splitk says otherwise; a forced
//    split (splitk: 0 or 1 = none, 2..16) must be valid as above, else the tier says no.
//  Where ours differs from AITER's (docs/ops/gemm_fp8_blockscale.md): AITER's heuristic scores
//  only k_split = splitK ?: 1, so its automatic path never splits K (we score 1..16); it visits
//  rows in std::unordered_map order with a non-lexicographic comparison (54-62% of a shape grid
//  depend on hash order; ours is the order above); its efficiency truncates (changing no
//  comparison among these six tiles). The kernels read BIAS regardless: the plan passes a zeroed
//  workspace piece (AITER's Python passes a cached zero buffer).
//
// mi350 (AITER's launcher csrc/py_itfs_cu/asm_mi350_a8w8_blockscale.cu as of 06de6e9aee^; there
// is no CSV and no heuristic beyond it): N % 128 == 0, K % 128 == 0, M >= 16, K >= 512; the row
// f8_block_scale_mi350_x32 if M <= 32, else _x128 (x64 and x96 ship beside them, reachable by
// name only, as in AITER's launcher). Grid (ceil(N / 256), ceil(M / tile_m), 1), block 256; no
// split (a forced splitk above 1 is refused), no workspace, no memset. The struct's fields AITER
// leaves uninitialised (Xc, the tmp pointers and values, SW) are zero here. AITER deleted this
// launcher; its gfx950 path is the fp8gemm_blockscale rows, which is why they come first.
//
// flatmm (AITER's flatmm_a8w8_blockscale_asm at e4048607a535; ABI-AND-RULES.md 4.5): one kernel,
// no heuristic: gfx942, N % 256 == 0, K % 128 == 0, M <= 65536 * 128 (the grid's y limit on
// AMD's runtime; AITER does not check). AITER's kernel reads w_scale [K/128, N/128], the
// transpose of this op's b_scale, so the plan first runs our transpose kernel (code object
// "gemm_fp8_blockscale") into a workspace piece, then AITER's kernel reading that piece. Grid
// (N / 256, ceil(M / 128), 1), block 256, no split. AITER leaves dbg_*, num_experts, topk and
// stride_token uninitialised; we pass null, 0, 1 and K.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/core/verdict.hpp"
#include "jax_aiter/kernels/aiter/flatmm.hpp"
#include "jax_aiter/kernels/aiter/fp8gemm_blockscale.hpp"
#include "jax_aiter/kernels/aiter/mi350.hpp"
#include "jax_aiter/kernels/gemm_fp8_blockscale.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/ops/aiter_tier.hpp"
#include "jax_aiter/ops/fp8_format.hpp"
#include "jax_aiter/ops/gemm_fp8_blockscale_params.hpp"

namespace jax_aiter::ops {

// The family's checks beyond the shape (the header's note); F supplies kFamily, kOut (the dtype
// its kernels write) and kWrongOut (the verdict for the other).
template <typename F>
Verdict fp8_family_accepts(const GemmFp8BlockscaleParams& p, const Target& t) {
  if (!p.family.empty() && p.family != F::kFamily) {
    return Verdict::no("the call asks for another AITER family (attribute family)");
  }
  if (p.out.dtype != F::kOut) return Verdict::no(F::kWrongOut);
  return reads_fp8(p.a.dtype, t);
}

// AITER's FP8 block-scale GEMM family (kernels/aiter/fp8gemm_blockscale.hpp).
struct AiterFp8Bs : AiterChunkSplitFamily<GemmFp8BlockscaleParams, kernels::kAiterFp8BsRows> {
  static constexpr std::string_view kFamily = "fp8gemm_blockscale";
  static constexpr DType kOut = DType::kBF16;
  static constexpr std::string_view kWrongOut =
      "out is f16: AITER's fp8gemm_blockscale kernels write bf16";
  static constexpr std::string_view kNotARow =
      "the forced kernel is not an fp8gemm_blockscale row for this arch";
  static_assert(chunk(4096, 3) == kernels::aiter_fp8bs::split_chunk(4096, 3));

  static Verdict accepts(const Params& p, const Target& t) {
    return fp8_family_accepts<AiterFp8Bs>(p, t);
  }
  static constexpr Verdict none(const AiterQuery& q) {
    return Verdict::no("N = {} is not a multiple of 128", q.n);
  }

  // As AITER's gemm_a8w8_blockscale_bpreshuffle_asm packs it, every field written (the rest of
  // the slots zero but for the host twins' format byte).
  static void pack(const Params& p, const AiterChoice<Row>& c, kernels::Plan& plan) {
    namespace A = kernels::aiter_fp8bs;
    const Row& r = *c.row;
    const auto m = static_cast<uint32_t>(p.m()), n = static_cast<uint32_t>(p.n()),
               k = static_cast<uint32_t>(p.k());
    kernels::AiterFp8BsArgs args{};
    args.C = p.out.data;
    args.A = p.a.data;
    args.B = p.b.data;
    args.SA = p.a_scale.data;
    args.SB = p.b_scale.data;
    args.M = m;
    args.N = n;
    args.K = k;
    args.lda = k;  // elements (= bytes)
    args.ldb = k;
    args.ldc = n * 2;  // bytes
    args.ks = static_cast<uint32_t>(c.split);
    args.scale_m = m;
    args.scale_n = n / A::kScaleN;
    args.scale_k = k / A::kScaleK;
    args.scale_k.pad[0] = std::byte{p.a.dtype == DType::kF8E4M3FNUZ ? uint8_t{A::kFormatFnuz}
                                                                    : uint8_t{A::kFormatFn}};
    // The kernels read BIAS always: a zeroed f32 [N] stands in.
    const int zero = plan.workspace.add("zero_bias", int64_t{n} * 4);
    args.BIAS = plan.piece(zero);
    plan.memset(plan.piece(zero), uint64_t{n} * 4, 0, "zero_bias");
    if (c.split > 1) {
      // The splits add their partial products into out atomically: it must start at zero.
      plan.memset(p.out.data, uint64_t{m} * n * 2, 0, "out");
    }
    const kernels::Dim3 grid{static_cast<uint32_t>(n / r.tile_n * c.split),
                             static_cast<uint32_t>(ceil_div(m, r.tile_m)), 1};
    plan.launch(r.kernel, grid, {A::kBlockThreads, 1, 1}, args);
    plan.note("tile_m", r.tile_m);
    plan.note("tile_n", r.tile_n);
    plan.note("split", c.split);
  }
};

// AITER's MI350 FP8 block-scale family (kernels/aiter/mi350.hpp; gfx950 only).
struct AiterMi350 : AiterFamily<GemmFp8BlockscaleParams, kernels::kAiterMi350Rows> {
  static constexpr std::string_view kFamily = "mi350";
  static constexpr DType kOut = DType::kBF16;
  static constexpr std::string_view kWrongOut = "out is f16: AITER's MI350 kernels write bf16";
  static constexpr std::string_view kNotOnArch =
      "AITER's MI350 FP8 block-scale kernels are gfx950 code only";
  static constexpr std::string_view kNotARow =
      "the forced kernel is not an MI350 FP8 row (f8_block_scale_mi350_x32, _x64, _x96 or _x128)";

  static constexpr int want_tile_m(int64_t m) { return m <= 32 ? 32 : 128; }

  static Verdict accepts(const Params& p, const Target& t) {
    return fp8_family_accepts<AiterMi350>(p, t);
  }
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
    args.ptr_X = p.a.data;
    args.ptr_W = p.b.data;
    args.ptr_XQ = p.a_scale.data;
    args.ptr_WQ = p.b_scale.data;
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
    plan.note("split", 1);
  }
};

// AITER's FlatMM family (one kernel, kernels/aiter/flatmm.hpp; gfx942 only).
struct AiterFlatmm : AiterFamily<GemmFp8BlockscaleParams, kernels::kAiterFlatmmRows> {
  static constexpr std::string_view kFamily = "flatmm";
  static constexpr DType kOut = DType::kF16;
  static constexpr std::string_view kWrongOut = "out is bf16: AITER's FlatMM kernel writes f16";
  static constexpr std::string_view kNotOnArch = "AITER ships its FlatMM kernel for gfx942 only";
  static constexpr std::string_view kNotARow = "the forced kernel is not AITER's FlatMM kernel";
  static constexpr int64_t kMaxGridY = 65536;

  static constexpr kernels::Dim3 grid(const Row& r, int64_t m, int64_t n) {
    return {static_cast<uint32_t>(ceil_div(n, r.tile_n)),
            static_cast<uint32_t>(ceil_div(m, r.tile_m)), 1};
  }

  static Verdict accepts(const Params& p, const Target& t) {
    return fp8_family_accepts<AiterFlatmm>(p, t);
  }
  static constexpr Verdict gate(const AiterQuery&) { return Verdict::yes(); }
  static constexpr Verdict fits(const Row& r, const AiterQuery& q) {
    if (q.n % r.tile_n != 0) return Verdict::no("N = {} is not a multiple of 256", q.n);
    if (q.k % r.tile_k != 0) return Verdict::no("K = {} is not a multiple of 128", q.k);
    if (q.m < 1 || q.k < 1) return Verdict::no("empty product");
    if (ceil_div(q.m, r.tile_m) > kMaxGridY) {
      return Verdict::no("M = {} needs more than 65536 blocks of 128 rows", q.m);
    }
    return Verdict::yes();
  }
  // One row: why it does not run the call is the verdict.
  static constexpr Verdict none(const AiterQuery& q) {
    if (const Verdict v = fits(kRows[0], q); !v.ok()) return v;
    return runs(kRows[0], q, q.knobs.split().value_or(1));
  }

  // b_scale transposed into the workspace (the header's note), then AITER's kernel as
  // flatmm_a8w8_blockscale_asm packs it, plus the fields AITER leaves uninitialised.
  static void pack(const Params& p, const AiterChoice<Row>& c, kernels::Plan& plan) {
    namespace S = kernels::gemm_fp8_blockscale;
    const int64_t kb = p.k_blocks(), nb = p.n_blocks();
    const int piece = plan.workspace.add("b_scale_t", kb * nb * 4);
    const kernels::GemmFp8BlockscaleTransposeArgs transpose{
        p.b_scale.data, plan.piece(piece), static_cast<int32_t>(nb), static_cast<int32_t>(kb)};
    const int64_t blocks =
        std::min<int64_t>(ceil_div(kb * nb, S::kTransposeThreads), S::kTransposeMaxBlocks);
    plan.launch(kernels::kGemmFp8BlockscaleTranspose, {static_cast<uint32_t>(blocks), 1, 1},
                {S::kTransposeThreads, 1, 1}, transpose);
    kernels::AiterFlatmmArgs args{};
    args.a_ptr = p.a.data;
    args.b_ptr = p.b.data;
    args.c_ptr = nullptr;
    args.sa_ptr = p.a_scale.data;
    args.sb_ptr = plan.piece(piece);
    args.d_ptr = nullptr;
    args.d_f16_ptr = p.out.data;
    args.dbg_int_ptr = nullptr;
    args.dbg_fp8_ptr = nullptr;
    args.dbg_f16_ptr = nullptr;
    args.dbg_fp32_ptr = nullptr;
    args.hidden_size = static_cast<int32_t>(p.k());
    args.intermediate_size = static_cast<int32_t>(p.n());
    args.num_tokens = static_cast<int32_t>(p.m());
    args.num_experts = 0;
    args.topk = 1;
    args.stride_token = static_cast<int32_t>(p.k());
    plan.launch(c.row->kernel, grid(*c.row, p.m(), p.n()),
                {kernels::aiter_flatmm::kBlockThreads, 1, 1}, args);
    plan.note("tile_m", c.row->tile_m);
    plan.note("tile_n", c.row->tile_n);
    plan.note("split", 1);
  }
};

}  // namespace jax_aiter::ops
