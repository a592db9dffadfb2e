// ops/moe_routing.hpp with no GPU and no XLA: validation messages, the launch plans of every tier
// against rules stated here independently (grids, blocks, workspace pieces, argument bytes; the
// top-k softmax ASM tier's choice of AITER topksoftmax row over a grid of problems per arch), and
// the plans run through the host twins (runtime::Host, as the CPU handlers do; every AITER
// topksoftmax row's ABI twin) against references written here: a sort built expert by expert, and
// a float64 softmax.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "jax_aiter/host_twins/aiter_topksoftmax.hpp"
#include "jax_aiter/host_twins/moe_routing.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/ops/moe_routing.hpp"
#include "jax_aiter/runtime/host.hpp"

namespace ja = jax_aiter;
using ja::DType;
using ja::ops::MoeSorting;
using ja::ops::Tensor;
using ja::ops::TopkSoftmax;

namespace {

Tensor at(void* data, DType t, std::initializer_list<int64_t> dims) {
  return Tensor::over(data, t, dims);
}
Tensor fake(DType t, std::initializer_list<int64_t> dims, uintptr_t address = 0x100000) {
  return at(reinterpret_cast<void*>(address), t, dims);
}

// AITER's sizes, restated: T*k + E*block_m - k rows, ceil(rows / block_m) blocks.
int64_t rows_of(int64_t t, int64_t k, int64_t e, int64_t bm) { return t * k + e * bm - k; }
int64_t blocks_of(int64_t rows, int64_t bm) { return (rows + bm - 1) / bm; }

TopkSoftmax::Params topk_params(int64_t t, int64_t e, int64_t k, DType d = DType::kBF16) {
  TopkSoftmax::Params p;
  p.logits = fake(d, {t, e}, 0x100000);
  p.weights = fake(DType::kF32, {t, k}, 0x200000);
  p.ids = fake(DType::kI32, {t, k}, 0x300000);
  return p;
}

MoeSorting::Params sort_params(int64_t t, int64_t k, int64_t e, int64_t bm) {
  MoeSorting::Params p;
  const int64_t rows = rows_of(t, k, e, bm);
  p.ids = fake(DType::kI32, {t, k}, 0x100000);
  p.weights = fake(DType::kF32, {t, k}, 0x200000);
  p.sorted_token_ids = fake(DType::kI32, {rows}, 0x300000);
  p.sorted_weights = fake(DType::kF32, {rows}, 0x400000);
  p.sorted_expert_ids = fake(DType::kI32, {blocks_of(rows, bm)}, 0x500000);
  p.num_valid_ids = fake(DType::kI32, {2}, 0x600000);
  p.num_experts = e;
  p.block_m = bm;
  return p;
}

std::string message_of(const ja::Status& s) { return s.ok() ? "OK" : s.message(); }

ja::Target target_for(ja::Arch arch) {
  const ja::BackendKind b = arch == ja::Arch::kSm90   ? ja::BackendKind::kCuda
                            : arch == ja::Arch::kHost ? ja::BackendKind::kHost
                                                      : ja::BackendKind::kHip;
  return {b, arch, 132, 0};
}

constexpr ja::Arch kArchs[] = {ja::Arch::kGfx942, ja::Arch::kGfx950, ja::Arch::kSm90,
                               ja::Arch::kHost};

}  // namespace

// ---- validation -------------------------------------------------------------------------------

TEST(MoeRoutingValidate, AcceptsGoodShapes) {
  for (DType d : {DType::kBF16, DType::kF16, DType::kF32}) {
    EXPECT_TRUE(TopkSoftmax::validate(topk_params(3, 256, 8, d)).ok());
  }
  EXPECT_TRUE(TopkSoftmax::validate(topk_params(1, 4096, 4096)).ok());
  EXPECT_TRUE(MoeSorting::validate(sort_params(300, 8, 256, 32)).ok());
  EXPECT_TRUE(MoeSorting::validate(sort_params(1, 255, 4096, 1024)).ok());
}

TEST(MoeRoutingValidate, TopkSoftmaxNamesEveryBadOperand) {
  auto p = topk_params(4, 8, 2);
  p.logits = fake(DType::kI32, {4, 8});
  EXPECT_EQ(message_of(TopkSoftmax::validate(p)),
            "aiter.topk_softmax: operand logits: expected bf16, f16 or f32 [T,E], got i32[4,8]");
  p = topk_params(4, 4097, 2);
  EXPECT_EQ(message_of(TopkSoftmax::validate(p)),
            "aiter.topk_softmax: operand logits: expected 1 to 4096 experts (the last dim), got "
            "bf16[4,4097]");
  p = topk_params(int64_t{1} << 24, 8, 2);
  EXPECT_EQ(message_of(TopkSoftmax::validate(p)),
            "aiter.topk_softmax: operand logits: expected at most 16777215 rows (one block a "
            "row), got bf16[16777216,8]");
  p = topk_params(4, 8, 9);
  EXPECT_EQ(message_of(TopkSoftmax::validate(p)),
            "aiter.topk_softmax: operand weights: expected f32[4,k] with 1 <= k <= 8 (T and E "
            "from logits), got f32[4,9]");
  p = topk_params(4, 8, 2);
  p.weights = fake(DType::kBF16, {4, 2});
  EXPECT_EQ(message_of(TopkSoftmax::validate(p)),
            "aiter.topk_softmax: operand weights: expected f32[4,k] with 1 <= k <= 8 (T and E "
            "from logits), got bf16[4,2]");
  p = topk_params(4, 8, 2);
  p.ids = fake(DType::kI32, {4, 3});
  EXPECT_EQ(message_of(TopkSoftmax::validate(p)),
            "aiter.topk_softmax: operand ids: expected i32[4,2] (like weights), got i32[4,3]");
  p = topk_params(4, 8, 2);
  p.ids.data = nullptr;
  EXPECT_EQ(message_of(TopkSoftmax::validate(p)),
            "aiter.topk_softmax: operand ids: null data pointer");
  const ja::Status empty = TopkSoftmax::validate(topk_params(0, 8, 2));
  EXPECT_EQ(empty.code(), ja::ops::kEmptyProblem) << empty.message();
}

TEST(MoeRoutingValidate, MoeSortingNamesEveryBadOperandAndAttribute) {
  auto p = sort_params(4, 2, 8, 32);
  p.ids = fake(DType::kF32, {4, 2});
  EXPECT_EQ(message_of(MoeSorting::validate(p)),
            "aiter.moe_sorting: operand ids: expected i32[T,topk], got f32[4,2]");
  p = sort_params(4, 2, 8, 32);
  p.num_experts = 0;
  EXPECT_EQ(message_of(MoeSorting::validate(p)),
            "aiter.moe_sorting: attribute num_experts: expected 1 to 4096, got 0");
  p = sort_params(4, 2, 8, 32);
  p.block_m = 1025;
  EXPECT_EQ(message_of(MoeSorting::validate(p)),
            "aiter.moe_sorting: attribute block_m: expected 1 to 1024, got 1025");
  p = sort_params(4, 9, 8, 32);
  EXPECT_EQ(message_of(MoeSorting::validate(p)),
            "aiter.moe_sorting: operand ids: expected 1 <= topk <= 8 (at most num_experts and "
            "255), got i32[4,9]");
  p = sort_params(4, 256, 4096, 32);
  EXPECT_EQ(message_of(MoeSorting::validate(p)),
            "aiter.moe_sorting: operand ids: expected 1 <= topk <= 255 (at most num_experts and "
            "255), got i32[4,256]");
  p = sort_params(int64_t{1} << 24, 1, 8, 32);
  EXPECT_EQ(message_of(MoeSorting::validate(p)),
            "aiter.moe_sorting: operand ids: expected at most 16777215 tokens (24 bits of the "
            "packed id), got i32[16777216,1]");
  p = sort_params((int64_t{1} << 24) - 1, 255, 4096, 1024);
  EXPECT_EQ(message_of(MoeSorting::validate(p)),
            "aiter.moe_sorting: operand ids: too large: 4282383874 padded rows (tokens*topk + "
            "num_experts*block_m - topk), at most 2^30");
  // 2^30 rows pass (T = 2^23, k = E = 128, block_m 1), one more does not (E = 129).
  EXPECT_TRUE(MoeSorting::validate(sort_params(int64_t{1} << 23, 128, 128, 1)).ok());
  EXPECT_EQ(message_of(MoeSorting::validate(sort_params(int64_t{1} << 23, 128, 129, 1))),
            "aiter.moe_sorting: operand ids: too large: 1073741825 padded rows (tokens*topk + "
            "num_experts*block_m - topk), at most 2^30");
  p = sort_params(4, 2, 8, 32);
  p.weights = fake(DType::kF32, {2, 4});
  EXPECT_EQ(message_of(MoeSorting::validate(p)),
            "aiter.moe_sorting: operand weights: expected f32[4,2] (like ids), got f32[2,4]");
  p = sort_params(4, 2, 8, 32);
  p.sorted_token_ids = fake(DType::kI32, {261});
  EXPECT_EQ(message_of(MoeSorting::validate(p)),
            "aiter.moe_sorting: operand sorted_token_ids: expected i32[262] (tokens*topk + "
            "num_experts*block_m - topk, AITER's max_num_tokens_padded), got i32[261]");
  p = sort_params(4, 2, 8, 32);
  p.sorted_weights = fake(DType::kI32, {262});
  EXPECT_EQ(message_of(MoeSorting::validate(p)),
            "aiter.moe_sorting: operand sorted_weights: expected f32[262] (like "
            "sorted_token_ids), got i32[262]");
  p = sort_params(4, 2, 8, 32);
  p.sorted_expert_ids = fake(DType::kI32, {8});
  EXPECT_EQ(message_of(MoeSorting::validate(p)),
            "aiter.moe_sorting: operand sorted_expert_ids: expected i32[9] (ceil(padded rows / "
            "block_m)), got i32[8]");
  p = sort_params(4, 2, 8, 32);
  p.num_valid_ids = fake(DType::kI32, {1});
  EXPECT_EQ(message_of(MoeSorting::validate(p)),
            "aiter.moe_sorting: operand num_valid_ids: expected i32[2] (rows used, tokens), got "
            "i32[1]");
  p = sort_params(4, 2, 8, 32);
  p.sorted_weights.data = nullptr;
  EXPECT_EQ(message_of(MoeSorting::validate(p)),
            "aiter.moe_sorting: operand sorted_weights: null data pointer");
  const ja::Status empty = MoeSorting::validate(sort_params(0, 2, 8, 32));
  EXPECT_EQ(empty.code(), ja::ops::kEmptyProblem) << empty.message();
}

// ---- plans ------------------------------------------------------------------------------------

TEST(MoeRoutingPlan, TopkSoftmaxOneBlockARowOfWholeWarps) {
  for (ja::Arch arch : kArchs) {
    const ja::Target target = target_for(arch);
    const int warp = arch == ja::Arch::kGfx942 || arch == ja::Arch::kGfx950 ? 64 : 32;
    for (int64_t e : {1, 8, 31, 64, 65, 256, 257, 1000, 4096}) {
      for (DType d : {DType::kBF16, DType::kF16, DType::kF32}) {
        const auto p = topk_params(77, e, std::min<int64_t>(e, 8), d);
        ASSERT_TRUE(TopkSoftmax::validate(p).ok());
        ja::kernels::Plan plan;
        ja::ops::TopkSoftmaxPortable::plan(p, target, plan);
        ASSERT_EQ(plan.count, 1u);
        const auto& l = plan.steps[0].launch;
        EXPECT_EQ(l.kernel, &ja::kernels::topk_softmax_kernel(d));
        EXPECT_EQ(l.grid, (ja::kernels::Dim3{77, 1, 1}));
        // Whole warps covering the experts, at most 256, each thread owning at most 16 experts.
        const int64_t want = std::min<int64_t>(256, (e + warp - 1) / warp * warp);
        EXPECT_EQ(l.block, (ja::kernels::Dim3{static_cast<uint32_t>(want), 1, 1})) << e;
        EXPECT_LE((e + want - 1) / want, 16);
        const auto a = l.args.unpack<ja::kernels::TopkSoftmaxArgs>();
        EXPECT_EQ(a.logits, p.logits.data);
        EXPECT_EQ(a.weights, p.weights.data);
        EXPECT_EQ(a.ids, p.ids.data);
        EXPECT_EQ(a.rows, 77);
        EXPECT_EQ(a.experts, e);
        EXPECT_EQ(a.topk, std::min<int64_t>(e, 8));
        EXPECT_EQ(a.renormalize, 1);
      }
    }
  }
}

TEST(MoeRoutingPlan, SortingThreeLaunchesAndItsWorkspace) {
  for (ja::Arch arch : kArchs) {
    for (auto [t, k, e, bm] : {std::tuple{1, 8, 256, 32}, std::tuple{4096, 8, 256, 64},
                               std::tuple{300, 1, 7, 128}, std::tuple{33, 255, 4096, 1}}) {
      auto p = sort_params(t, k, e, bm);
      ASSERT_TRUE(MoeSorting::validate(p).ok());
      const int64_t ws = MoeSorting::workspace_bytes(p);
      p.workspace = fake(DType::kU8, {ws}, 0x700000);
      ja::kernels::Plan plan;
      plan.workspace_base = p.workspace.data;
      ja::ops::MoeSortingPortable::plan(p, target_for(arch), plan);
      ASSERT_EQ(plan.count, 3u);
      EXPECT_EQ(plan.workspace.total, ws);
      // Pieces: starts [E + 1], counts [E], per-tile counts [tiles, E], int32, disjoint, in order.
      const int64_t tiles = (int64_t{t} * k + 255) / 256;
      const auto pieces = plan.workspace.view();
      ASSERT_EQ(pieces.size(), 3u);
      EXPECT_EQ(pieces[0].bytes, 4 * (e + 1));
      EXPECT_EQ(pieces[1].bytes, 4 * e);
      EXPECT_EQ(pieces[2].bytes, 4 * tiles * e);
      for (size_t i = 1; i < pieces.size(); ++i) {
        EXPECT_GE(pieces[i].offset, pieces[i - 1].offset + pieces[i - 1].bytes);
      }
      const int64_t rows = rows_of(t, k, e, bm);
      const ja::kernels::KernelInfo* kernels[] = {
          &ja::kernels::kMoeSortCount, &ja::kernels::kMoeSortScan, &ja::kernels::kMoeSortScatter};
      const uint32_t grids[] = {static_cast<uint32_t>(tiles), 1,
                                static_cast<uint32_t>(tiles + (rows + 255) / 256)};
      for (size_t s = 0; s < 3; ++s) {
        const auto& l = plan.steps[s].launch;
        EXPECT_EQ(l.kernel, kernels[s]);
        EXPECT_EQ(l.grid, (ja::kernels::Dim3{grids[s], 1, 1})) << s;
        EXPECT_EQ(l.block, (ja::kernels::Dim3{256, 1, 1}));
        const auto a = l.args.unpack<ja::kernels::MoeSortingArgs>();
        auto* base = static_cast<std::byte*>(p.workspace.data);
        EXPECT_EQ(a.expert_starts, base + pieces[0].offset);
        EXPECT_EQ(a.expert_counts, base + pieces[1].offset);
        EXPECT_EQ(a.tile_counts, base + pieces[2].offset);
        EXPECT_EQ(a.sorted_token_ids, p.sorted_token_ids.data);
        EXPECT_EQ(a.sorted_expert_ids, p.sorted_expert_ids.data);
        EXPECT_EQ(a.tokens, t);
        EXPECT_EQ(a.topk, k);
        EXPECT_EQ(a.experts, e);
        EXPECT_EQ(a.block_m, bm);
        EXPECT_EQ(a.padded_rows, rows);
        EXPECT_EQ(a.tiles, tiles);
      }
    }
  }
}

// ---- the plans run through the host twins -----------------------------------------------------

namespace {

ja::Status run_plan(const ja::kernels::Plan& plan) {
  using ja::runtime::Host;
  for (const auto& step : plan.view()) {
    const auto& kernel = Host::resolve(0, *step.launch.kernel);
    if (!kernel.status.ok()) return kernel.status;
    JAX_AITER_RETURN_IF_ERROR(Host::launch(0, nullptr, kernel, step.launch));
  }
  return {};
}

struct Sorted {
  std::vector<int32_t> ids, experts, valid;
  std::vector<float> weights;
};

// AITER's layout, expert by expert (its run_torch_moe_sorting, restated).
Sorted reference_sort(const std::vector<int32_t>& ids, const std::vector<float>& w, int t, int k,
                      int e, int bm) {
  const int64_t rows = rows_of(t, k, e, bm);
  const auto pad =
      static_cast<int32_t>((static_cast<uint32_t>(k) << 24) | static_cast<uint32_t>(t));
  Sorted s{std::vector<int32_t>(rows, pad),
           std::vector<int32_t>(blocks_of(rows, bm), -1),
           {},
           std::vector<float>(rows, 0.f)};
  int64_t r = 0;
  for (int x = 0; x < e; ++x) {
    int64_t n = 0;
    for (int i = 0; i < t * k; ++i) {
      if (ids[i] != x) continue;
      s.ids[r + n] =
          static_cast<int32_t>((static_cast<uint32_t>(i % k) << 24) | static_cast<uint32_t>(i / k));
      s.weights[r + n] = w[i];
      ++n;
    }
    const int64_t nb = (n + bm - 1) / bm;
    for (int64_t b = 0; b < nb; ++b) s.experts[r / bm + b] = x;
    r += nb * bm;
  }
  s.valid = {static_cast<int32_t>(r), t};
  return s;
}

}  // namespace

TEST(MoeRoutingTwins, SortingPlanMatchesTheReference) {
  std::mt19937 rng(7);
  for (auto [t, k, e, bm] :
       {std::tuple{1, 8, 256, 32}, std::tuple{300, 8, 256, 64}, std::tuple{257, 2, 8, 128},
        std::tuple{40, 200, 300, 16}, std::tuple{500, 3, 11, 1}}) {
    // Ids from -2 to e + 1: repeats within a row, and ids outside [0, e) that must be dropped.
    std::uniform_int_distribution<int32_t> pick(-2, e + 1);
    std::vector<int32_t> ids(int64_t{t} * k);
    std::vector<float> w(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      ids[i] = pick(rng);
      w[i] = static_cast<float>(i) * 0.25f;
    }
    const int64_t rows = rows_of(t, k, e, bm);
    // Outputs poisoned, so that an unwritten element shows.
    std::vector<int32_t> out_ids(rows, 0x5a5a5a5a), out_experts(blocks_of(rows, bm), 0x5a5a5a5a),
        valid(2, 0x5a5a5a5a);
    std::vector<float> out_w(rows, -7.f);
    auto p = sort_params(t, k, e, bm);
    p.ids = at(ids.data(), DType::kI32, {t, k});
    p.weights = at(w.data(), DType::kF32, {t, k});
    p.sorted_token_ids = at(out_ids.data(), DType::kI32, {rows});
    p.sorted_weights = at(out_w.data(), DType::kF32, {rows});
    p.sorted_expert_ids = at(out_experts.data(), DType::kI32, {blocks_of(rows, bm)});
    p.num_valid_ids = at(valid.data(), DType::kI32, {2});
    ASSERT_TRUE(MoeSorting::validate(p).ok());
    std::vector<uint32_t> workspace((MoeSorting::workspace_bytes(p) + 3) / 4, 0xdeadbeef);
    p.workspace = at(workspace.data(), DType::kU8, {MoeSorting::workspace_bytes(p)});
    ja::kernels::Plan plan;
    plan.workspace_base = p.workspace.data;
    ja::ops::MoeSortingPortable::plan(p, {}, plan);
    ASSERT_TRUE(run_plan(plan).ok());
    const Sorted want = reference_sort(ids, w, t, k, e, bm);
    EXPECT_EQ(out_ids, want.ids) << t << "x" << k << " E=" << e << " block_m=" << bm;
    EXPECT_EQ(out_w, want.weights);
    EXPECT_EQ(out_experts, want.experts);
    EXPECT_EQ(valid, want.valid);
  }
}

TEST(MoeRoutingTwins, TopkSoftmaxPlanMatchesFloat64) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.f, 2.f);
  for (auto [t, e, k, renormalize] : {std::tuple{5, 256, 8, true}, std::tuple{9, 60, 1, false},
                                      std::tuple{3, 4096, 8, false}, std::tuple{4, 8, 8, true}}) {
    std::vector<float> logits(int64_t{t} * e);
    for (float& x : logits) x = std::round(normal(rng) * 4.f) / 4.f;  // ties on quarter steps
    std::vector<float> w(int64_t{t} * k, -7.f);
    std::vector<int32_t> ids(w.size(), -7);
    auto p = topk_params(t, e, k, DType::kF32);
    p.logits = at(logits.data(), DType::kF32, {t, e});
    p.weights = at(w.data(), DType::kF32, {t, k});
    p.ids = at(ids.data(), DType::kI32, {t, k});
    p.renormalize = renormalize;
    ASSERT_TRUE(TopkSoftmax::validate(p).ok());
    ja::kernels::Plan plan;
    ja::ops::TopkSoftmaxPortable::plan(p, target_for(ja::Arch::kHost), plan);
    ASSERT_TRUE(run_plan(plan).ok());
    for (int r = 0; r < t; ++r) {
      const float* x = logits.data() + int64_t{r} * e;
      std::vector<int> order(e);
      std::iota(order.begin(), order.end(), 0);
      std::sort(order.begin(), order.end(),
                [&](int a, int b) { return x[a] > x[b] || (x[a] == x[b] && a < b); });
      const double m = *std::max_element(x, x + e);
      double z = 0, chosen = 0;
      for (int j = 0; j < e; ++j) z += std::exp(double{x[j]} - m);
      for (int i = 0; i < k; ++i) chosen += std::exp(double{x[order[i]]} - m);
      for (int i = 0; i < k; ++i) {
        ASSERT_EQ(ids[r * k + i], order[i]) << "row " << r << " choice " << i;
        const double want = std::exp(double{x[order[i]]} - m) / (renormalize ? chosen : z);
        EXPECT_NEAR(w[r * k + i], want, 2e-5 * want) << "row " << r << " choice " << i;
      }
    }
  }
}

// ---- the ASM tier: AITER's topksoftmax kernels ------------------------------------------------

namespace {

using ja::ops::TopkSoftmaxAsmTier;

// AITER's rule, restated from asm_topksoftmax.cu and its CSVs at e4048607a5 independently of the
// tier: fp32 or bf16 logits; (E, k) one of seven pairs, of which five also have 12-row kernels;
// 12 rows a workgroup from 10000 tokens where one exists, else 4. The kernel's short name, or ""
// when AITER has none (its caller then runs the HIP kernel: our portable tier).
std::string aiter_topksoftmax_rule(int64_t t, int64_t e, int64_t k, DType d) {
  if (d != DType::kF32 && d != DType::kBF16) return "";
  const std::set<std::pair<int64_t, int64_t>> four = {{128, 4}, {128, 6}, {128, 8}, {256, 6},
                                                      {256, 8}, {384, 8}, {640, 8}};
  const std::set<std::pair<int64_t, int64_t>> twelve = {
      {128, 4}, {128, 6}, {128, 8}, {256, 6}, {256, 8}};
  if (!four.count({e, k})) return "";
  const int subm = t >= 10000 && twelve.count({e, k}) ? 12 : 4;
  return "topksoftmax_" + std::to_string(subm) + "x" + std::to_string(e) + "x" + std::to_string(k) +
         (d == DType::kBF16 ? "_bf16" : "");
}

}  // namespace

TEST(TopkSoftmaxAsm, SelectionMatchesAitersRuleOnEveryArch) {
  int problems = 0, asm_runs = 0;
  for (ja::Arch arch : kArchs) {
    const ja::Target target = target_for(arch);
    const bool amd = arch == ja::Arch::kGfx942 || arch == ja::Arch::kGfx950;
    for (int64_t t : {1, 3, 4, 5, 13, 4096, 9999, 10000, 10001, 65537}) {
      for (int64_t e : {8, 64, 127, 128, 129, 200, 256, 384, 512, 640, 1024}) {
        for (int64_t k : {1, 2, 4, 5, 6, 7, 8, 9}) {
          if (k > e) continue;
          for (DType d : {DType::kBF16, DType::kF16, DType::kF32}) {
            for (bool renormalize : {true, false}) {
              auto p = topk_params(t, e, k, d);
              p.renormalize = renormalize;
              ASSERT_TRUE(TopkSoftmax::validate(p).ok());
              ++problems;
              const std::string want = amd ? aiter_topksoftmax_rule(t, e, k, d) : "";
              const auto choice = ja::ops::decide<TopkSoftmaxAsmTier>(p, target);
              ASSERT_EQ(choice.ok(), !want.empty())
                  << name(arch) << " T=" << t << " E=" << e << " k=" << k << " " << name(d) << ": "
                  << choice.verdict().text();
              // The portable tier takes every call (the one the ASM tier declines, too).
              ASSERT_TRUE(ja::ops::decide<ja::ops::TopkSoftmaxPortable>(p, target).ok());
              if (want.empty()) continue;
              ++asm_runs;
              const auto& row = *choice->row;
              ASSERT_EQ(ja::kernels::short_name(row), want) << "T=" << t;
              ja::kernels::Plan plan;
              ja::ops::plan_with<TopkSoftmaxAsmTier>(p, target, *choice, plan);
              ASSERT_EQ(plan.count, 1u);
              const auto& l = plan.steps[0].launch;
              EXPECT_EQ(l.kernel, &row.kernel);
              EXPECT_EQ(l.grid, (ja::kernels::Dim3{
                                    static_cast<uint32_t>((t + row.subm - 1) / row.subm), 1, 1}));
              EXPECT_EQ(l.block, (ja::kernels::Dim3{256, 1, 1}));
              ASSERT_EQ(l.args.size, 128u);
              // The bytes, as AITER packs them: pointers at 0/16/32, u32s at 48..112, pads zero.
              const auto u32_at = [&](size_t off) {
                uint32_t v;
                std::memcpy(&v, l.args.bytes.data() + off, 4);
                return v;
              };
              const auto ptr_at = [&](size_t off) {
                void* v;
                std::memcpy(&v, l.args.bytes.data() + off, 8);
                return v;
              };
              EXPECT_EQ(ptr_at(0), p.ids.data);
              EXPECT_EQ(ptr_at(16), p.weights.data);
              EXPECT_EQ(ptr_at(32), p.logits.data);
              EXPECT_EQ(u32_at(48), t);
              EXPECT_EQ(u32_at(64), e);
              EXPECT_EQ(u32_at(80), k);
              EXPECT_EQ(u32_at(96), renormalize ? 1u : 0u);
              EXPECT_EQ(u32_at(112), k * 4);
              for (size_t off = 0; off < 128; off += 16) {
                const size_t value = off < 48 ? 8 : 4;
                for (size_t b = off + value; b < off + 16; ++b) {
                  EXPECT_EQ(l.args.bytes[b], std::byte{0}) << "pad byte " << b;
                }
              }
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(problems, 4 * 10 * 87 * 3 * 2);  // 87 (E, k) pairs with k <= E
  EXPECT_EQ(asm_runs, 2 * 10 * 2 * 2 * 7);
  std::printf("topksoftmax selection: %d problems over 4 archs, %d on AITER's kernels\n", problems,
              asm_runs);
}

TEST(TopkSoftmaxAsm, ForcedKernelsAndWhatTheTiersSay) {
  const ja::Target gfx942 = target_for(ja::Arch::kGfx942);
  auto p = topk_params(5, 128, 4, DType::kF32);
  // A 12-row kernel by name on 5 tokens: its subm may exceed AITER's cap.
  p.aiter.kernel = "topksoftmax_12x128x4";
  ASSERT_TRUE(TopkSoftmax::validate(p).ok());
  const auto forced = ja::ops::decide<TopkSoftmaxAsmTier>(p, gfx942);
  ASSERT_TRUE(forced.ok()) << forced.verdict().text();
  EXPECT_EQ(forced->row->subm, 12);
  EXPECT_EQ(ja::ops::decide<ja::ops::TopkSoftmaxPortable>(p, gfx942).verdict().text(),
            "the call forces an AITER kernel (attribute kernel)");
  p.aiter.kernel = "_ZN5aiter24topksoftmax_4x128x4_bf16E";  // by symbol; the call's logits are f32
  EXPECT_EQ(ja::ops::decide<TopkSoftmaxAsmTier>(p, gfx942).verdict().text(),
            "the forced kernel reads bf16 logits, not fp32");
  p.aiter.kernel = "topksoftmax_4x256x8";
  EXPECT_EQ(ja::ops::decide<TopkSoftmaxAsmTier>(p, gfx942).verdict().text(),
            "the forced kernel takes E = 256 experts, the call has 128");
  p.aiter.kernel = "topksoftmax_4x128x8";
  EXPECT_EQ(ja::ops::decide<TopkSoftmaxAsmTier>(p, gfx942).verdict().text(),
            "the forced kernel chooses k = 8, the call asks for 4");
  p.aiter.kernel = "topksoftmax_4x128x5";
  EXPECT_NE(
      message_of(TopkSoftmax::validate(p)).find("topksoftmax kernels by symbol or short name"),
      std::string::npos)
      << message_of(TopkSoftmax::validate(p));
  p.aiter.kernel = "";
  p.aiter.splitk = 2;
  EXPECT_EQ(ja::ops::decide<TopkSoftmaxAsmTier>(p, gfx942).verdict().text(),
            "AITER's topksoftmax kernels split nothing (splitk 2)");
  p.aiter.splitk.reset();
  auto f16 = topk_params(5, 128, 4, DType::kF16);
  EXPECT_EQ(ja::ops::decide<TopkSoftmaxAsmTier>(f16, gfx942).verdict().text(),
            "AITER's topksoftmax kernels read fp32 or bf16 logits, not f16");
  auto odd = topk_params(5, 128, 5, DType::kF32);
  EXPECT_EQ(ja::ops::decide<TopkSoftmaxAsmTier>(odd, gfx942).verdict().text(),
            "AITER ships no topksoftmax kernel for E = 128, k = 5 (its (E, k): (128, 4|6|8), "
            "(256, 6|8), (384, 8), (640, 8))");
}

namespace {

// Checks one [t, k] result against float64 of logits x (ties: the lower id; renormalize or not).
void expect_topk(const std::vector<float>& x_all, int t, int e, int k, bool renormalize,
                 const float* w, const int32_t* ids, int64_t ld, const std::string& what) {
  for (int r = 0; r < t; ++r) {
    const float* x = x_all.data() + int64_t{r} * e;
    std::vector<int> order(e);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return x[a] > x[b]; });
    const double m = *std::max_element(x, x + e);
    double z = 0, chosen = 0;
    for (int j = 0; j < e; ++j) z += std::exp(double{x[j]} - m);
    for (int i = 0; i < k; ++i) chosen += std::exp(double{x[order[i]]} - m);
    for (int i = 0; i < k; ++i) {
      ASSERT_EQ(ids[r * ld + i], order[i]) << what << " row " << r << " choice " << i;
      const double want = std::exp(double{x[order[i]]} - m) / (renormalize ? chosen : z);
      EXPECT_NEAR(w[r * ld + i], want, 2e-5 * want) << what << " row " << r << " choice " << i;
    }
  }
}

}  // namespace

// Every AITER topksoftmax row through its host twin, forced by name on a call of its (E, k, dtype)
// on 13 tokens (a partial last workgroup for both subm), renormalize on and off; the outputs are
// exactly [T, k] with a poisoned guard after them, which must stay untouched.
TEST(TopkSoftmaxAsm, EveryRowsTwinMatchesFloat64) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.f, 2.f);
  int rows_run = 0;
  for (const auto& row : ja::kernels::kAiterTopksoftmaxRows) {
    for (bool renormalize : {true, false}) {
      const int t = 13, e = row.experts, k = row.topk;
      std::vector<float> x(int64_t{t} * e);
      for (float& v : x) v = std::round(normal(rng) * 4.f) / 4.f;  // ties; exact in bf16
      std::vector<uint16_t> x16(x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        uint32_t bits;
        std::memcpy(&bits, &x[i], 4);
        x16[i] = static_cast<uint16_t>(bits >> 16);
      }
      const int64_t guard = 16;
      std::vector<float> w(int64_t{t} * k + guard, -7.f);
      std::vector<int32_t> ids(w.size(), -7);
      auto p = topk_params(t, e, k, row.dtype);
      p.logits = at(row.dtype == DType::kBF16 ? static_cast<void*>(x16.data()) : x.data(),
                    row.dtype, {t, e});
      p.weights = at(w.data(), DType::kF32, {t, k});
      p.ids = at(ids.data(), DType::kI32, {t, k});
      p.renormalize = renormalize;
      p.aiter.kernel = ja::kernels::short_name(row);
      ASSERT_TRUE(TopkSoftmax::validate(p).ok());
      for (ja::Arch arch : {ja::Arch::kGfx942, ja::Arch::kGfx950}) {
        std::fill(w.begin(), w.end(), -7.f);
        std::fill(ids.begin(), ids.end(), -7);
        ja::kernels::Plan plan;
        const ja::Verdict v =
            ja::ops::decide_and_plan<TopkSoftmaxAsmTier>(p, target_for(arch), plan);
        ASSERT_TRUE(v.ok()) << v.text();
        ASSERT_EQ(plan.steps[0].launch.kernel, &row.kernel);
        ASSERT_TRUE(run_plan(plan).ok());
        const std::string what = std::string(row.kernel.symbol) + (renormalize ? " renorm" : "");
        expect_topk(x, t, e, k, renormalize, w.data(), ids.data(), k, what);
        for (int64_t i = int64_t{t} * k; i < static_cast<int64_t>(w.size()); ++i) {
          ASSERT_EQ(w[i], -7.f) << what << ": wrote past [T, k]";
          ASSERT_EQ(ids[i], -7) << what << ": wrote past [T, k]";
        }
      }
      ++rows_run;
    }
  }
  EXPECT_EQ(rows_run, 48);
}
