// ops/moe_routing.hpp with no GPU and no XLA: validation messages, the launch plans of both tiers
// against rules stated here independently (grids, blocks, workspace pieces, argument bytes), and
// the plans run through the host twins (runtime::Host, as the CPU handlers do) against references
// written here: a sort built expert by expert, and a float64 softmax.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

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
