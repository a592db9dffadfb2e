// The ASM tier of aiter.flatmm_fp8: AITER's one FlatMM kernel (kernels/aiter/flatmm.hpp), gated and
// packed as AITER's flatmm_a8w8_blockscale_asm does (github.com/ROCm/aiter at e4048607a535,
// csrc/py_itfs_cu/asm_flatmm_a8w8_blockscale.cu; restated in aiter-facts ABI-AND-RULES.md 4.5).
//
// The rule (a single kernel: there is no heuristic):
//  - the arch is gfx942 (AITER ships the code object for gfx942 only);
//  - the fp8 operands are the format the device that runs the plan reads (ops/fp8_format.hpp:
//    e4m3fnuz on an MI300; the ABI twin on sm_90 reads e4m3fn; the host twin, standing for the
//    MI300's kernel, reads e4m3fnuz);
//  - N % 256 == 0 and K % 128 == 0 (AITER's check: "only support 128x256x128 tile"); out f16;
//  - M <= 65536 * 128 (the grid's y is at most 65536 on AMD's runtime; AITER does not check);
//  - a forced kernel must be this row (by symbol, or the code object's name without ".co").
// Grid (ceil(N / 256), ceil(M / 128), 1), block 256, one launch, no split, no memset.
// Where ours differs from AITER's (docs/ops/flatmm_fp8.md): AITER leaves dbg_int/fp8/f16/fp32_ptr,
// num_experts, topk and stride_token uninitialised (host stack bytes the kernel is handed); we set
// them to null, 0, 1 and K. AITER checks nothing of the operands but the output dtype and N, K;
// ours validates every operand (ops/flatmm_fp8_params.hpp).
#pragma once

#include <cstdint>
#include <string_view>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/core/verdict.hpp"
#include "jax_aiter/kernels/aiter/flatmm.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/ops/aiter_rules.hpp"
#include "jax_aiter/ops/flatmm_fp8_params.hpp"

namespace jax_aiter::ops {

struct AiterFlatmmQuery {
  int64_t m = 0, n = 0, k = 0;
  Arch arch = Arch::kGfx942;
  std::string_view kernel;  // forced row ("" = the one row)
};

struct AiterFlatmmChoice {
  const kernels::AiterFlatmmRow* row = nullptr;
  kernels::Dim3 grid{};
  kernels::Dim3 block{};
};

inline constexpr int64_t kAiterFlatmmMaxGridY = 65536;

// AITER's FlatMM kernel and its launch shape for a call, or why it cannot run it.
constexpr Verdict select_aiter_flatmm(const AiterFlatmmQuery& q, AiterFlatmmChoice* out) {
  namespace L = kernels::aiter_flatmm;
  if (!aiter_rules::aiter_arch(q.arch)) return aiter_rules::not_aiter_arch();
  const kernels::AiterFlatmmRow& r = kernels::kAiterFlatmmRows[0];
  if (!q.kernel.empty() && !aiter_rules::names(r, q.kernel)) {
    return Verdict::no("the forced kernel is not AITER's FlatMM kernel");
  }
  if (!r.on(q.arch)) return Verdict::no("AITER ships its FlatMM kernel for gfx942 only");
  if (q.n % r.tile_n != 0) return Verdict::no("N = {} is not a multiple of 256", q.n);
  if (q.k % r.tile_k != 0) return Verdict::no("K = {} is not a multiple of 128", q.k);
  if (q.m < 1 || q.k < 1) return Verdict::no("empty product");
  if (ceil_div(q.m, r.tile_m) > kAiterFlatmmMaxGridY) {
    return Verdict::no("M = {} needs more than 65536 blocks of 128 rows", q.m);
  }
  *out = {&r,
          {static_cast<uint32_t>(ceil_div(q.n, r.tile_n)),
           static_cast<uint32_t>(ceil_div(q.m, r.tile_m)), 1},
          {L::kBlockThreads, 1, 1}};
  return Verdict::yes();
}

struct FlatmmFp8AsmTier {
  static constexpr std::string_view kName = "asm";
  static constexpr bool kRunsAiterCode = true;

  static AiterFlatmmQuery query(const FlatmmFp8Params& p, const Target& t) {
    return {p.m(), p.n(), p.k(), t.arch, p.kernel};
  }

  static Verdict supports(const FlatmmFp8Params& p, const Target& t) {
    AiterFlatmmChoice choice;
    const Verdict v = select_aiter_flatmm(query(p, t), &choice);
    if (!v.ok()) return v;
    // On the host, the twin stands for the MI300's kernel and reads what it reads.
    if (t.backend == BackendKind::kHost && p.x.dtype != native_fp8(t.arch)) {
      return Verdict::no(
          "the host twin of AITER's gfx942 FlatMM kernel reads f8_e4m3fnuz, as an MI300 does");
    }
    return reads_fp8(p.x.dtype, t);
  }

  // As AITER's flatmm_a8w8_blockscale_asm packs it, plus the fields AITER leaves uninitialised.
  static void plan(const FlatmmFp8Params& p, const Target& t, kernels::Plan& plan) {
    AiterFlatmmChoice c;
    (void)select_aiter_flatmm(query(p, t), &c);
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
    plan.launch(c.row->kernel, c.grid, c.block, args);
    plan.note("tile_m", c.row->tile_m);
    plan.note("tile_n", c.row->tile_n);
    plan.note("split", 1);
  }
};

}  // namespace jax_aiter::ops
