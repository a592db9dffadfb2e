// ops/rmsnorm.hpp with no GPU and no XLA: validation messages, and the launch plans its tier makes
// checked against rules stated here independently (coverage, block limits, vector width,
// alignment).
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/ops/rmsnorm.hpp"
#include "jax_aiter/runtime/occupancy.hpp"

namespace ja = jax_aiter;
using ja::DType;
using ja::kernels::KernelInfo;
using ja::ops::Tensor;

namespace {

Tensor tensor(DType t, std::initializer_list<int64_t> dims, uintptr_t address = 0x10000) {
  return Tensor::over(reinterpret_cast<void*>(address), t, dims);
}

ja::Target target_for(ja::Arch arch) {
  // H100: 132 SMs, 50 MB of L2.
  return {arch == ja::Arch::kSm90 ? ja::BackendKind::kCuda : ja::BackendKind::kHip, arch, 132,
          50 << 20};
}

ja::ops::RmsNorm::Params fwd_params(DType t, int64_t rows, int64_t n, uintptr_t align = 256) {
  ja::ops::RmsNorm::Params p;
  p.x = tensor(t, {rows, n}, 0x100000);
  p.gamma = tensor(t, {n}, 0x200000 + (align % 256));
  p.y = tensor(t, {rows, n}, 0x300000);
  return p;
}

// The plan of RMSNorm's one tier (portable) for a call, with the workspace (if any) at the address
// the call passes, as the binder hands it over.
template <typename Op>
ja::kernels::Plan plan_of(const typename Op::Params& p, const ja::Target& t) {
  static_assert(std::tuple_size_v<typename Op::Tiers> == 1);
  using Tier = std::tuple_element_t<0, typename Op::Tiers>;
  static_assert(Tier::kName == "portable");
  EXPECT_TRUE(Tier::supports(p, t).ok());
  ja::kernels::Plan plan;
  if constexpr (requires { p.workspace; }) plan.workspace_base = p.workspace.data;
  Tier::plan(p, t, plan);
  return plan;
}

// The launch of step i (which must be a launch).
const ja::kernels::Launch& launch_at(const ja::kernels::Plan& plan, size_t i) {
  EXPECT_LT(i, plan.count);
  EXPECT_EQ(plan.steps[i].kind, ja::kernels::Step::Kind::kLaunch);
  return plan.steps[i].launch;
}

// Independent statement of what a valid vector width is.
int expected_vec(DType t, int64_t n, uintptr_t misalign_bytes) {
  const int max = t == DType::kF32 ? 4 : 8;
  for (int v = max; v > 1; v /= 2) {
    if (n % v == 0 && misalign_bytes % (v * ja::size_bytes(t)) == 0) return v;
  }
  return 1;
}

}  // namespace

// Validation is target-independent (which tier runs the call is decided afterwards).
TEST(RmsNormValidate, AcceptsGoodShapes) {
  for (DType d : {DType::kBF16, DType::kF16, DType::kF32}) {
    EXPECT_TRUE(ja::ops::RmsNorm::validate(fwd_params(d, 3, 4095)).ok());
  }
}

// RMSNorm has one tier, our portable kernels (AITER ships no RMSNorm ASM kernel), for every op.
TEST(RmsNormTiers, OnePortableTierEach) {
  static_assert(
      std::is_same_v<ja::ops::RmsNorm::Tiers, std::tuple<ja::ops::RmsNormForwardPortable<false>>>);
  static_assert(std::is_same_v<ja::ops::RmsNormWithAdd::Tiers,
                               std::tuple<ja::ops::RmsNormForwardPortable<true>>>);
  static_assert(std::is_same_v<ja::ops::RmsNormBwd::Tiers,
                               std::tuple<ja::ops::RmsNormBackwardPortable<false>>>);
  static_assert(std::is_same_v<ja::ops::RmsNormWithAddBwd::Tiers,
                               std::tuple<ja::ops::RmsNormBackwardPortable<true>>>);
  for (ja::Arch arch : {ja::Arch::kGfx942, ja::Arch::kGfx950, ja::Arch::kSm90}) {
    EXPECT_TRUE(ja::ops::RmsNormForwardPortable<false>::supports(fwd_params(DType::kBF16, 3, 8),
                                                                 target_for(arch))
                    .ok());
  }
}

// Rows are indexed in 32 bits and the backward steps them by up to kRmsNormMaxSlots: the largest
// row count accepted leaves that step inside int32 (2^31 - 1 - 2048).
TEST(RmsNormValidate, RowCountStaysInside32Bits) {
  constexpr int64_t kLargest = 2147483647 - 2048;
  EXPECT_TRUE(ja::ops::RmsNorm::validate(fwd_params(DType::kBF16, kLargest, 1)).ok());
  const auto st = ja::ops::RmsNorm::validate(fwd_params(DType::kBF16, kLargest + 1, 1));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("operand x: too large for 32-bit row indexing"), std::string::npos)
      << st.message();
}

TEST(RmsNormValidate, NamesTheOperand) {
  auto p = fwd_params(DType::kBF16, 4, 4096);
  p.gamma.dims[0] = 4095;
  auto st = ja::ops::RmsNorm::validate(p);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), ja::ErrorCode::kInvalidArgument);
  EXPECT_EQ(st.message(),
            "aiter.rms_norm: operand gamma: expected bf16[4096] (n and dtype from x), got "
            "bf16[4095]");

  p = fwd_params(DType::kBF16, 4, 16);
  p.x.dtype = DType::kI32;
  EXPECT_NE(ja::ops::RmsNorm::validate(p).message().find("operand x: expected dtype"),
            std::string::npos);

  p = fwd_params(DType::kBF16, 0, 16);
  EXPECT_NE(ja::ops::RmsNorm::validate(p).message().find("at least one row"), std::string::npos);

  p = fwd_params(DType::kF16, 2, 16);
  p.epsilon = std::numeric_limits<float>::quiet_NaN();
  EXPECT_NE(ja::ops::RmsNorm::validate(p).message().find("attribute epsilon"), std::string::npos);
  p.epsilon = -1.f;
  EXPECT_FALSE(ja::ops::RmsNorm::validate(p).ok());

  p = fwd_params(DType::kF16, 2, 16);
  p.y.dtype = DType::kF32;
  EXPECT_NE(ja::ops::RmsNorm::validate(p).message().find("operand y: expected f16[2,16] (like x)"),
            std::string::npos);
}

TEST(RmsNormValidate, FusedChecksResidual) {
  ja::ops::RmsNormWithAdd::Params p;
  p.x = tensor(DType::kBF16, {2, 8});
  p.gamma = tensor(DType::kBF16, {8});
  p.y = tensor(DType::kBF16, {2, 8});
  p.residual = tensor(DType::kBF16, {2, 7});
  p.residual_out = tensor(DType::kBF16, {2, 8});
  auto st = ja::ops::RmsNormWithAdd::validate(p);
  EXPECT_NE(st.message().find("aiter.rms_norm_with_add: operand residual"), std::string::npos);
}

// The backward's workspace: Op::workspace_bytes is the bound Python sizes the output with (the
// binder checks the buffer against it and its alignment before any tier runs: test_ffi_rmsnorm),
// and the tier's plan lays out exactly that much, one piece from the workspace's start.
TEST(RmsNormValidate, BackwardWorkspace) {
  ja::ops::RmsNormBwd::Params p;
  p.dy = tensor(DType::kF32, {600, 64});
  p.x = tensor(DType::kF32, {600, 64});
  p.gamma = tensor(DType::kF32, {64});
  p.dx = tensor(DType::kF32, {600, 64});
  p.dgamma = tensor(DType::kF32, {64});
  // A 256-byte header, then room for up to 1024 slots of one row each; beyond, 16 rows a slot,
  // between 1024 and 2048 slots.
  EXPECT_EQ(ja::ops::rmsnorm_bwd_workspace_bytes(600, 64), 256 + 600 * 64 * 4);
  EXPECT_EQ(ja::ops::rmsnorm_bwd_workspace_bytes(5000, 64), 256 + 1024 * 64 * 4);
  EXPECT_EQ(ja::ops::rmsnorm_bwd_workspace_bytes(16384 * 2, 64), 256 + 2048 * 64 * 4);
  EXPECT_EQ(ja::ops::rmsnorm_bwd_workspace_bytes(1 << 20, 64), 256 + 2048 * 64 * 4);
  EXPECT_EQ(ja::ops::rmsnorm_bwd_workspace_bytes(3, 64), 256 + 3 * 64 * 4);
  // The op's bound: every row of x ([20, 30, 64] is 600 rows), the same for the fused op.
  EXPECT_EQ(ja::ops::RmsNormBwd::workspace_bytes(p), 153856);
  ja::ops::RmsNormWithAddBwd::Params fused;
  fused.x = tensor(DType::kBF16, {20, 30, 64});
  EXPECT_EQ(ja::ops::RmsNormWithAddBwd::workspace_bytes(fused), 153856);
  fused.x = tensor(DType::kBF16, {4, 0});  // refused by validate; no workspace asked for
  EXPECT_EQ(ja::ops::RmsNormWithAddBwd::workspace_bytes(fused), 0);

  p.workspace = tensor(DType::kU8, {256 + 600 * 64 * 4}, 0x700000);
  ASSERT_TRUE(ja::ops::RmsNormBwd::validate(p).ok());
  const auto plan = plan_of<ja::ops::RmsNormBwd>(p, target_for(ja::Arch::kSm90));
  ASSERT_EQ(plan.workspace.count, 1u);
  EXPECT_EQ(plan.workspace.pieces[0].name, "partials");
  EXPECT_EQ(plan.workspace.pieces[0].offset, 0);
  EXPECT_EQ(plan.workspace.pieces[0].bytes, 153856);
  EXPECT_EQ(plan.workspace.total, ja::ops::RmsNormBwd::workspace_bytes(p));
  const auto a = launch_at(plan, 0).args.unpack<ja::kernels::RmsNormBwdArgs>();
  EXPECT_EQ(a.workspace, p.workspace.data);
  EXPECT_EQ(launch_at(plan, 1).args.unpack<ja::kernels::RmsNormDgammaArgs>().workspace,
            p.workspace.data);
  // The partials move a vector of floats at a time: 4 from a 16-byte aligned workspace; one only
  // 8-byte aligned (which the binder refuses) would narrow the vector to 2.
  EXPECT_EQ(launch_at(plan, 0).kernel->symbol, "jax_aiter_rmsnorm_bwd_f32_v4");
  p.workspace = tensor(DType::kU8, {256 + 600 * 64 * 4}, 0x700008);
  EXPECT_EQ(
      launch_at(plan_of<ja::ops::RmsNormBwd>(p, target_for(ja::Arch::kSm90)), 0).kernel->symbol,
      "jax_aiter_rmsnorm_bwd_f32_v2");
}

// The plan covers every row, respects the kernels' block caps and the warp rules, and picks the
// widest legal vector; over a grid of shapes, dtypes, archs and alignments.
TEST(RmsNormPlan, ForwardRules) {
  for (ja::Arch arch : {ja::Arch::kGfx942, ja::Arch::kGfx950, ja::Arch::kSm90}) {
    const ja::Target t = target_for(arch);
    const int warp = ja::warp_size(arch);
    for (DType d : {DType::kBF16, DType::kF16, DType::kF32}) {
      for (int64_t n : {1, 2, 7, 64, 100, 3584, 4095, 4096, 5120, 8192, 16384, 32768, 65536}) {
        for (int64_t rows : {1, 3, 1000}) {
          for (uintptr_t mis : {uintptr_t{0}, uintptr_t{2}, uintptr_t{4}, uintptr_t{8}}) {
            auto p = fwd_params(d, rows, n, mis);
            ASSERT_TRUE(ja::ops::RmsNorm::validate(p).ok());
            const auto plan = plan_of<ja::ops::RmsNorm>(p, t);
            ASSERT_EQ(plan.count, 1u);
            EXPECT_EQ(plan.workspace.total, 0);
            const auto& l = launch_at(plan, 0);
            const auto a = l.args.unpack<ja::kernels::RmsNormFwdArgs>();
            const int vec = expected_vec(d, n, mis);
            const KernelInfo& info = *l.kernel;
            EXPECT_EQ(&info, &ja::kernels::rmsnorm_fwd_kernel(d, vec, false));
            EXPECT_EQ(info.code_object, "rmsnorm");
            EXPECT_EQ(info.symbol, std::string("jax_aiter_rmsnorm_fwd_") +
                                       std::string(ja::name(d)) + "_v" + std::to_string(vec));
            EXPECT_EQ(l.block.x, static_cast<uint32_t>(a.threads_per_row * a.rows_per_block));
            EXPECT_LE(l.block.x, uint32_t{ja::kernels::rmsnorm::kMaxThreadsFwd});
            EXPECT_EQ(l.block.x % warp, 0u) << "n=" << n;
            // Shuffles reduce a row within a warp; past a warp, one row per block (shared memory).
            if (a.threads_per_row <= warp) {
              EXPECT_TRUE(std::has_single_bit(static_cast<unsigned>(a.threads_per_row)));
            } else {
              EXPECT_EQ(a.threads_per_row % warp, 0);
              EXPECT_EQ(a.rows_per_block, 1);
            }
            EXPECT_GE(int64_t{l.grid.x} * a.rows_per_block, rows);
            EXPECT_LT(int64_t{l.grid.x - 1} * a.rows_per_block, rows);  // no empty blocks
            EXPECT_EQ(l.shared_bytes, 0u);  // the plain forward never stages its rows
            EXPECT_EQ(a.rows, rows);
            EXPECT_EQ(a.n, n);
            EXPECT_EQ(a.residual, nullptr);
            EXPECT_EQ(a.x, p.x.data);
            EXPECT_EQ(a.gamma, p.gamma.data);
            EXPECT_EQ(a.y, p.y.data);
          }
        }
      }
    }
  }
}

// The fused forward has kernels of its own (the plain one is compiled without the residual path):
// same layout as the plain forward, the residual pointers passed through.
TEST(RmsNormPlan, FusedForwardUsesTheAddKernels) {
  for (ja::Arch arch : {ja::Arch::kGfx942, ja::Arch::kSm90}) {
    const ja::Target t = target_for(arch);
    for (DType d : {DType::kBF16, DType::kF16, DType::kF32}) {
      for (int64_t n : {8, 4095, 4096}) {
        ja::ops::RmsNormWithAdd::Params p;
        p.x = tensor(d, {33, n}, 0x100000);
        p.gamma = tensor(d, {n}, 0x200000);
        p.y = tensor(d, {33, n}, 0x300000);
        p.residual = tensor(d, {33, n}, 0x400000);
        p.residual_out = tensor(d, {33, n}, 0x500000);
        ASSERT_TRUE(ja::ops::RmsNormWithAdd::validate(p).ok());
        const auto fused = launch_at(plan_of<ja::ops::RmsNormWithAdd>(p, t), 0);
        const auto plain = launch_at(plan_of<ja::ops::RmsNorm>(fwd_params(d, 33, n), t), 0);
        const int vec = expected_vec(d, n, 0);
        EXPECT_EQ(fused.kernel, &ja::kernels::rmsnorm_fwd_kernel(d, vec, true));
        EXPECT_EQ(fused.kernel->symbol, std::string("jax_aiter_rmsnorm_fwd_add_") +
                                            std::string(ja::name(d)) + "_v" + std::to_string(vec));
        EXPECT_EQ(fused.grid.x, plain.grid.x);
        EXPECT_EQ(fused.block.x, plain.block.x);
        const auto a = fused.args.unpack<ja::kernels::RmsNormFwdArgs>();
        EXPECT_EQ(a.residual, p.residual.data);
        EXPECT_EQ(a.residual_out, p.residual_out.data);
      }
    }
  }
}

// The fused forward's staging, stated independently: on CUDA, for 16-byte vectors, rows that stay
// in registers (two vectors a thread), x and residual rows of a block within 48 KiB, and x at least
// as large as L2 (50 MB on the test target), the block gets its rows of x and the residual in
// shared memory; otherwise nothing.
TEST(RmsNormPlan, FusedForwardStaging) {
  auto plan = [](ja::Arch arch, DType d, int64_t rows, int64_t n) {
    ja::ops::RmsNormWithAdd::Params p;
    p.x = tensor(d, {rows, n}, 0x100000);
    p.gamma = tensor(d, {n}, 0x200000);
    p.y = tensor(d, {rows, n}, 0x300000);
    p.residual = tensor(d, {rows, n}, 0x400000);
    p.residual_out = tensor(d, {rows, n}, 0x500000);
    return launch_at(plan_of<ja::ops::RmsNormWithAdd>(p, target_for(arch)), 0);
  };
  for (ja::Arch arch : {ja::Arch::kGfx942, ja::Arch::kGfx950, ja::Arch::kSm90}) {
    for (DType d : {DType::kBF16, DType::kF16, DType::kF32}) {
      for (int64_t n : {8, 256, 1024, 4092, 4095, 4096, 8192, 16384, 32768}) {
        for (int64_t rows : {1, 600, 1599, 1600, 3200, 6400, 16384, 65536}) {
          const auto l = plan(arch, d, rows, n);
          const auto a = l.args.unpack<ja::kernels::RmsNormFwdArgs>();
          const int64_t esz = int64_t(ja::size_bytes(d));
          const int vec = expected_vec(d, n, 0);
          const int64_t bytes = 2 * a.rows_per_block * n * esz;
          const bool staged = arch == ja::Arch::kSm90 && vec * esz == 16 &&
                              n / vec <= 2 * a.threads_per_row && bytes <= 48 * 1024 &&
                              rows * n * esz >= (50 << 20);
          EXPECT_EQ(l.shared_bytes, staged ? bytes : 0) << "n=" << n << " rows=" << rows;
        }
      }
    }
  }
  auto bytes = [&](ja::Arch arch, int64_t rows, int64_t n) {
    return plan(arch, DType::kBF16, rows, n).shared_bytes;
  };
  EXPECT_EQ(bytes(ja::Arch::kSm90, 16384, 4096), 16384u);  // 256 threads a row, x and residual
  EXPECT_EQ(bytes(ja::Arch::kSm90, 32768, 8192), 32768u);
  EXPECT_EQ(bytes(ja::Arch::kSm90, 6400, 4096), 16384u);  // x of exactly 50 MiB
  EXPECT_EQ(bytes(ja::Arch::kSm90, 6399, 4096), 0u);      // inputs partly in L2
  EXPECT_EQ(bytes(ja::Arch::kSm90, 8, 4096), 0u);
  EXPECT_EQ(bytes(ja::Arch::kSm90, 4096, 16384), 0u);    // 64 KiB a block
  EXPECT_EQ(bytes(ja::Arch::kSm90, 4096, 32768), 0u);    // streamed rows
  EXPECT_EQ(bytes(ja::Arch::kGfx950, 16384, 4096), 0u);  // AMD loads directly
}

TEST(RmsNormPlan, BackwardRules) {
  for (ja::Arch arch : {ja::Arch::kGfx950, ja::Arch::kSm90}) {
    const ja::Target t = target_for(arch);
    for (int64_t rows : {1, 7, 1024, 1025, 5000, 20000, 40000}) {
      for (int64_t n : {1, 8, 4096, 4095, 8196, 16384, 32768, 32772, 65535}) {
        ja::ops::RmsNormWithAddBwd::Params p;
        p.dy = tensor(DType::kBF16, {rows, n}, 0x100000);
        p.x = tensor(DType::kBF16, {rows, n}, 0x200000);
        p.gamma = tensor(DType::kBF16, {n}, 0x300000);
        p.dresidual = tensor(DType::kBF16, {rows, n}, 0x400000);
        p.dx = tensor(DType::kBF16, {rows, n}, 0x500000);
        p.dgamma = tensor(DType::kBF16, {n}, 0x600000);
        p.workspace = tensor(DType::kU8, {ja::ops::rmsnorm_bwd_workspace_bytes(rows, n)}, 0x700010);
        ASSERT_TRUE(ja::ops::RmsNormWithAddBwd::validate(p).ok());
        const auto plan = plan_of<ja::ops::RmsNormWithAddBwd>(p, t);
        ASSERT_EQ(plan.count, 2u);
        EXPECT_EQ(plan.workspace.total, ja::ops::RmsNormWithAddBwd::workspace_bytes(p));
        const auto& main = launch_at(plan, 0);
        const auto a = main.args.unpack<ja::kernels::RmsNormBwdArgs>();
        const int64_t want_slots =
            rows <= 1024 ? rows : std::min<int64_t>(std::max<int64_t>(rows / 16, 1024), 2048);
        EXPECT_EQ(a.max_slots, want_slots);
        // A persistent launch capped at the blocks the workspace has room for. Rows that need
        // more than 2 vectors a thread of a 512-thread block are split over a cluster of up to
        // 8 such blocks on CUDA, a cluster a slot; longer ones, and all of them on AMD, are
        // streamed, by kernels of their own whose blocks are also capped so that their float32
        // partial rows take at most 16 MiB (but never fewer blocks than compute units).
        EXPECT_TRUE(main.fill_device);
        EXPECT_TRUE(main.kernel->fill_device);
        const int vec = n % 4 == 0 ? 4 : n % 2 == 0 ? 2 : 1;
        const bool in_registers = n / vec <= 2 * int64_t{a.threads_per_row};
        const int64_t split = (n / vec + 1023) / 1024;  // 512 threads a block, 2 vectors each
        const bool split_rows = !in_registers && arch == ja::Arch::kSm90 && split <= 8;
        const bool streamed = !in_registers && !split_rows;
        int64_t want_blocks = (a.max_slots + a.rows_per_block - 1) / a.rows_per_block;
        if (streamed) {
          want_blocks = std::min<int64_t>(
              want_blocks, std::max<int64_t>((int64_t{16} << 20) / (4 * n), t.compute_units));
        }
        if (split_rows) {
          want_blocks = a.max_slots * split;
          // Shares as equal as whole warps allow.
          const int64_t share = (n / vec + split - 1) / split;
          EXPECT_EQ(a.threads_per_row, std::min<int64_t>(512, ((share + 1) / 2 + 31) / 32 * 32));
          EXPECT_GE(int64_t{a.threads_per_row} * 2 * split, n / vec);
          EXPECT_EQ(a.rows_per_block, 1);
        }
        EXPECT_EQ(int64_t{main.grid.x}, want_blocks) << "rows=" << rows << " n=" << n;
        EXPECT_EQ(int64_t{main.cluster}, split_rows ? split : 1) << "rows=" << rows << " n=" << n;
        // The facts the plan shows: the slots, and the cluster size where rows split.
        ASSERT_EQ(plan.note_count, split_rows ? 2u : 1u);
        EXPECT_EQ(plan.notes[0].name, "max_slots");
        EXPECT_EQ(plan.notes[0].value, want_slots);
        if (split_rows) {
          EXPECT_EQ(plan.notes[1].name, "cluster");
          EXPECT_EQ(plan.notes[1].value, split);
        }
        EXPECT_EQ(a.workspace, p.workspace.data);
        EXPECT_LE(main.block.x, uint32_t{ja::kernels::rmsnorm::kMaxThreadsBwd});
        EXPECT_EQ(a.dresidual, p.dresidual.data);
        // The workspace is only 16-byte aligned here: at most 4 floats per access.
        const KernelInfo& info = *main.kernel;
        const std::string kind = streamed ? "streamed_" : split_rows ? "split_" : "";
        EXPECT_EQ(info.symbol, "jax_aiter_rmsnorm_bwd_" + kind + "bf16_v" + std::to_string(vec));
        const auto& red = launch_at(plan, 1);
        EXPECT_EQ(red.kernel, &ja::kernels::rmsnorm_dgamma_kernel(DType::kBF16));
        const auto r = red.args.unpack<ja::kernels::RmsNormDgammaArgs>();
        EXPECT_FALSE(red.fill_device);
        EXPECT_EQ(r.workspace, a.workspace);
        EXPECT_EQ(r.n, n);
        EXPECT_GE(int64_t{red.grid.x} * 32, n);  // 32 columns per block
      }
    }
  }
}

// Which backward rows split over a cluster: 16-bit rows from 2 blocks' worth of vectors, f32 rows
// from 3 (the measured rule in ops/rmsnorm.hpp), never more than 8 blocks, only on CUDA.
TEST(RmsNormPlan, BackwardSplitRule) {
  const ja::Target cuda = target_for(ja::Arch::kSm90);
  const ja::Target hip = target_for(ja::Arch::kGfx942);
  using ja::ops::rmsnorm_bwd_split;
  EXPECT_EQ(rmsnorm_bwd_split(cuda, DType::kBF16, 1024), 0);  // fits one block (caller's check)
  EXPECT_EQ(rmsnorm_bwd_split(cuda, DType::kBF16, 1025), 2);
  EXPECT_EQ(rmsnorm_bwd_split(cuda, DType::kF16, 2048), 2);
  EXPECT_EQ(rmsnorm_bwd_split(cuda, DType::kBF16, 8192), 8);
  EXPECT_EQ(rmsnorm_bwd_split(cuda, DType::kBF16, 8193), 0);  // streamed
  EXPECT_EQ(rmsnorm_bwd_split(cuda, DType::kF32, 2048), 0);   // f32 [.., 8192]: streamed
  EXPECT_EQ(rmsnorm_bwd_split(cuda, DType::kF32, 2049), 3);
  EXPECT_EQ(rmsnorm_bwd_split(cuda, DType::kF32, 4096), 4);  // f32 [.., 16384]
  EXPECT_EQ(rmsnorm_bwd_split(hip, DType::kBF16, 2048), 0);  // no clusters on AMD
  // Equal shares: 1280 vectors over 2 blocks of 320 threads (not 1024 + 256).
  const auto l = ja::ops::rmsnorm_bwd_split_layout(1280, 8, 2, 32);
  EXPECT_EQ(l.threads_per_row, 320);
  EXPECT_EQ(l.rows_per_block, 1);
  EXPECT_EQ(ja::ops::rmsnorm_bwd_split_layout(8192, 8, 8, 32).threads_per_row, 512);
  EXPECT_EQ(ja::ops::rmsnorm_bwd_split_layout(1500, 8, 2, 32).threads_per_row, 384);
}

// fill_device launches: the grid a backend resolves from the measured occupancy.
TEST(FillDevice, ResidentBlocksTimesUnitsUpToTheCap) {
  EXPECT_EQ(ja::kernels::fill_device_blocks(2048, 132, 3), 396u);  // H100, 3 blocks an SM
  EXPECT_EQ(ja::kernels::fill_device_blocks(100, 132, 3), 100u);   // capped
  EXPECT_EQ(ja::kernels::fill_device_blocks(2048, 304, 0), 1u);    // never an empty grid
}

TEST(FillDevice, ClustersOnTheDeviceUpToTheCap) {
  EXPECT_EQ(ja::kernels::fill_device_cluster_blocks(2048 * 4, 4, 32), 128u);  // 32 clusters of 4
  EXPECT_EQ(ja::kernels::fill_device_cluster_blocks(8 * 4, 4, 32), 32u);      // 8 slots' worth
  EXPECT_EQ(ja::kernels::fill_device_cluster_blocks(2 * 8, 8, 0), 8u);        // one cluster
}

TEST(FillDevice, OccupancyTableResolvesTheGrid) {
  std::vector<int> asked;
  // The persistent kernel holds 2048 / threads blocks, up to 512 threads a block; the plain one is
  // not launched fill_device, so it is never measured.
  const KernelInfo persistent{"test", "persistent", 8, {}, /*fill_device=*/true};
  const KernelInfo plain{"test", "plain", 8, {}};
  auto query = [&](int threads) -> ja::Expected<int> {
    asked.push_back(threads);
    return threads > 512 ? 0 : 2048 / threads;
  };
  auto occ = ja::runtime::KernelOccupancy::measure(persistent, 132, query);
  ASSERT_TRUE(occ.ok()) << occ.status().message();
  auto unmeasured = ja::runtime::KernelOccupancy::measure(plain, 132, query);
  ASSERT_TRUE(unmeasured.ok()) << unmeasured.status().message();
  ASSERT_EQ(asked.size(), 32u);
  EXPECT_EQ(asked.front(), 32);
  EXPECT_EQ(asked.back(), 1024);
  ja::kernels::Launch l;
  l.kernel = &persistent;
  l.grid = {5000, 1, 1};
  l.block = {256, 1, 1};
  EXPECT_EQ(occ->grid(l)->x, 5000u);  // not fill_device: as planned
  l.fill_device = true;
  EXPECT_EQ(occ->grid(l)->x, 132u * 8);
  l.block = {512, 1, 1};
  EXPECT_EQ(occ->grid(l)->x, 132u * 4);
  l.grid.x = 100;
  EXPECT_EQ(occ->grid(l)->x, 100u);
  l.block = {100, 1, 1};  // not whole warps: refused, not guessed
  EXPECT_FALSE(occ->grid(l).ok());
  l.block = {256, 1, 1};
  l.kernel = &plain;  // not declared fill_device: refused, not sized from an unmeasured table
  const auto refused = unmeasured->grid(l);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("kernel plain is launched fill_device but its "
                                            "KernelInfo does not say so"),
            std::string::npos)
      << refused.status().message();
  // A kernel never resolved (an empty table) measured nothing either: refused.
  EXPECT_FALSE(ja::runtime::KernelOccupancy{}.grid(l).ok());
}

// Cluster launches are sized from the clusters the device holds, measured per cluster size at the
// kernel's declared block size; a backend that measured none (HIP, the host) refuses them.
TEST(FillDevice, ClusterLaunchesUseTheClusterTable) {
  const KernelInfo split{"test", "split", 8, {}, /*fill_device=*/true, /*cluster_block=*/512};
  auto blocks = [](int threads) -> ja::Expected<int> { return threads > 512 ? 0 : 1; };
  std::vector<std::pair<int, int>> asked;
  auto clusters = [&](int threads, int size) -> ja::Expected<int> {
    asked.emplace_back(threads, size);
    return 128 / size;  // e.g. 128 SMs in whole clusters
  };
  auto cuda = ja::runtime::KernelOccupancy::measure(split, 132, blocks, clusters);
  ASSERT_TRUE(cuda.ok()) << cuda.status().message();
  ASSERT_EQ(asked.size(), 7u);  // sizes 2..8 at 512 threads
  EXPECT_EQ(asked.front(), std::make_pair(512, 2));
  EXPECT_EQ(asked.back(), std::make_pair(512, 8));
  ja::kernels::Launch l;
  l.kernel = &split;
  l.fill_device = true;
  l.cluster = 4;
  l.grid = {2048 * 4, 1, 1};
  l.block = {512, 1, 1};
  EXPECT_EQ(cuda->grid(l)->x, 128u);  // 32 clusters of 4
  l.grid.x = 3 * 4;
  EXPECT_EQ(cuda->grid(l)->x, 12u);
  l.block = {256, 1, 1};  // smaller than the measured block: at least as many clusters fit
  EXPECT_EQ(cuda->grid(l)->x, 12u);
  l.block = {544, 1, 1};  // larger: unmeasured
  EXPECT_FALSE(cuda->grid(l).ok());
  l.block = {512, 1, 1};
  l.cluster = 9;  // past the portable cluster size
  EXPECT_FALSE(cuda->grid(l).ok());
  l.cluster = 4;
  l.fill_device = false;  // cluster launches are sized from the table
  EXPECT_FALSE(cuda->grid(l).ok());
  l.fill_device = true;
  auto hip = ja::runtime::KernelOccupancy::measure(split, 304, blocks);  // no cluster query
  ASSERT_TRUE(hip.ok()) << hip.status().message();
  EXPECT_FALSE(hip->grid(l).ok());
  l.cluster = 1;  // without a cluster it is an ordinary persistent launch
  l.grid.x = 5000;
  EXPECT_EQ(hip->grid(l)->x, 304u);
}

// Only the backward row passes are persistent launches; the other kernels are never measured.
TEST(FillDevice, RmsNormDeclaresItsPersistentKernels) {
  int declared = 0;
  for (const KernelInfo* k : ja::kernels::kRmsNormKernels) {
    EXPECT_EQ(k->fill_device, k->symbol.starts_with("jax_aiter_rmsnorm_bwd_")) << k->symbol;
    declared += k->fill_device;
  }
  EXPECT_EQ(declared, 33);
  for (const KernelInfo* k : ja::kernels::kRmsNormKernels) {
    EXPECT_EQ(k->cluster_block != 0, k->symbol.starts_with("jax_aiter_rmsnorm_bwd_split_"))
        << k->symbol;
  }
}

// The table: every kernel of the "rmsnorm" code object once, each with the argument struct its
// kind is launched with, and the look-ups return the kernels their names say.
TEST(RmsNormKernels, TableAndLookUps) {
  std::set<std::string_view> symbols;
  for (const KernelInfo* k : ja::kernels::kRmsNormKernels) {
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->code_object, "rmsnorm");
    EXPECT_TRUE(symbols.insert(k->symbol).second) << "twice: " << k->symbol;
    const bool fwd = k->symbol.starts_with("jax_aiter_rmsnorm_fwd_");
    const bool dgamma = k->symbol.starts_with("jax_aiter_rmsnorm_dgamma_");
    EXPECT_EQ(k->args_size, fwd      ? sizeof(ja::kernels::RmsNormFwdArgs)
                            : dgamma ? sizeof(ja::kernels::RmsNormDgammaArgs)
                                     : sizeof(ja::kernels::RmsNormBwdArgs))
        << k->symbol;
  }
  EXPECT_EQ(symbols.size(), 58u);
  using ja::kernels::BwdRows;
  for (DType d : {DType::kBF16, DType::kF16, DType::kF32}) {
    const std::string t(ja::name(d));
    EXPECT_EQ(ja::kernels::rmsnorm_dgamma_kernel(d).symbol, "jax_aiter_rmsnorm_dgamma_" + t);
    for (int vec = 1; vec <= ja::kernels::rmsnorm_max_vec(d); vec *= 2) {
      const std::string v = "_v" + std::to_string(vec);
      EXPECT_EQ(ja::kernels::rmsnorm_fwd_kernel(d, vec, false).symbol,
                "jax_aiter_rmsnorm_fwd_" + t + v);
      EXPECT_EQ(ja::kernels::rmsnorm_fwd_kernel(d, vec, true).symbol,
                "jax_aiter_rmsnorm_fwd_add_" + t + v);
      EXPECT_EQ(ja::kernels::rmsnorm_bwd_kernel(d, vec, BwdRows::kInRegisters).symbol,
                "jax_aiter_rmsnorm_bwd_" + t + v);
      EXPECT_EQ(ja::kernels::rmsnorm_bwd_kernel(d, vec, BwdRows::kSplit).symbol,
                "jax_aiter_rmsnorm_bwd_split_" + t + v);
      EXPECT_EQ(ja::kernels::rmsnorm_bwd_kernel(d, vec, BwdRows::kStreamed).symbol,
                "jax_aiter_rmsnorm_bwd_streamed_" + t + v);
    }
  }
}
