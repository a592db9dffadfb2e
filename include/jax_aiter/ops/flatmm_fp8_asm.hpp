// The ASM tier of aiter.flatmm_fp8: AITER's one FlatMM kernel (kernels/aiter/flatmm.hpp), gated and
// packed as AITER's flatmm_a8w8_blockscale_asm does (github.com/ROCm/aiter at e4048607a535,
// csrc/py_itfs_cu/asm_flatmm_a8w8_blockscale.cu; restated in aiter-facts ABI-AND-RULES.md 4.5).
//
// The rule (a single kernel: there is no heuristic):
//  - the arch is gfx942 (AITER ships the code object for gfx942 only);
//  - the fp8 operands are e4m3fnuz, gfx942's format, on every backend (ops/fp8_format.hpp: the
//    ABI twins on sm_90 and on the host read it as the MI300 does);
//  - N % 256 == 0 and K % 128 == 0 (AITER's check: "only support 128x256x128 tile"); out f16;
//  - M <= 65536 * 128 (the grid's y is at most 65536 on AMD's runtime; AITER does not check);
//  - a forced kernel must be this row (by symbol, or the code object's name without ".co"); a
//    forced splitk above 1 is refused (the kernel does not split K).
// Grid (ceil(N / 256), ceil(M / 128), 1), block 256, one launch, no split, no memset.
// Where ours differs from AITER's (docs/ops/flatmm_fp8.md): AITER leaves dbg_int/fp8/f16/fp32_ptr,
// num_experts, topk and stride_token uninitialised (host stack bytes the kernel is handed); we set
// them to null, 0, 1 and K. AITER checks nothing of the operands but the output dtype and N, K;
// ours validates every operand (ops/flatmm_fp8_params.hpp).
#pragma once

#include <cstdint>
#include <string_view>

#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/core/verdict.hpp"
#include "jax_aiter/kernels/aiter/flatmm.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/ops/aiter_tier.hpp"
#include "jax_aiter/ops/flatmm_fp8_params.hpp"
#include "jax_aiter/ops/fp8_format.hpp"

namespace jax_aiter::ops {

// AITER's FlatMM family (one kernel): the facts AiterTier (ops/aiter_tier.hpp) selects and packs
// with.
struct AiterFlatmm : AiterFamily<FlatmmFp8Params, kernels::kAiterFlatmmRows> {
  static constexpr std::string_view kNotOnArch = "AITER ships its FlatMM kernel for gfx942 only";
  static constexpr std::string_view kNotARow = "the forced kernel is not AITER's FlatMM kernel";
  static constexpr int64_t kMaxGridY = 65536;

  static constexpr kernels::Dim3 grid(const Row& r, int64_t m, int64_t n) {
    return {static_cast<uint32_t>(ceil_div(n, r.tile_n)),
            static_cast<uint32_t>(ceil_div(m, r.tile_m)), 1};
  }

  static Verdict accepts(const Params& p, const Target& t) { return reads_fp8(p.x.dtype, t); }
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

  // As AITER's flatmm_a8w8_blockscale_asm packs it, plus the fields AITER leaves uninitialised.
  static void pack(const Params& p, const AiterChoice<Row>& c, kernels::Plan& plan) {
    kernels::AiterFlatmmArgs args{};
    args.a_ptr = p.x.data;
    args.b_ptr = p.w.data;
    args.c_ptr = nullptr;
    args.sa_ptr = p.x_scale.data;
    args.sb_ptr = p.w_scale.data;
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

using FlatmmFp8AsmTier = AiterTier<AiterFlatmm>;

}  // namespace jax_aiter::ops
