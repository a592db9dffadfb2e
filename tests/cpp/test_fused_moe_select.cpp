// The fused-MoE ASM tier's choice of AITER fmoe row (ops/fused_moe_asm.hpp) over a grid of
// (tokens, experts, top-k, inter, hidden) problems per arch and every list a call can read,
// against the rule written again here: the rows parsed from the CSV text (not the library's
// table), every candidate keyed by (CU rounds, idle CUs, plain after persistent, table order) and
// the minimum taken. Then AITER's own loop (restated) in two visiting orders, to show where its
// choice depends on the order; the forced-kernel path; the declines; and one call planned end to
// end (packed bytes, memset, grid). Then the same for the two-stage family's stage 1
// (ops/fused_moe_stage1.hpp): its rows parsed from aiter_fmoe_2stages.csv, AITER's block_m
// (get_block_size_M, or 64/16 for block scales) and kernel rule written again, over a grid of
// problems per arch.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "jax_aiter/ops/fused_moe_asm.hpp"
#include "jax_aiter/ops/fused_moe_stage1.hpp"

#include "fmoe_csv_testing.hpp"

namespace {

namespace ja = jax_aiter;
namespace kn = ja::kernels;
using fmoe_testing::CsvRow;
using ja::Arch;
using ja::DType;
using Family = ja::ops::AiterFmoe;
using Choice = ja::ops::AiterChoice<Family::Row>;

const std::vector<CsvRow>& rows() {
  static const std::vector<CsvRow> r = fmoe_testing::our_rows(JAX_AITER_FMOE_CSV);
  return r;
}

// The indices of the rows of one list built for one arch, in table order.
const std::vector<size_t>& rows_of(const std::string& arch, const std::string& list) {
  static const auto index = [] {
    std::map<std::string, std::vector<size_t>> m;
    for (size_t i = 0; i < rows().size(); ++i) {
      for (const std::string a : {"gfx942", "gfx950"}) {
        if (rows()[i].on(a)) m[a + " " + rows()[i].list()].push_back(i);
      }
    }
    return m;
  }();
  static const std::vector<size_t> none;
  const auto it = index.find(arch + " " + list);
  return it == index.end() ? none : it->second;
}

// A call's list and the knobs the rule reads besides the shape.
struct Mode {
  std::string quant, out, act;
  int tkw1 = 0, block_m = 32, vskip = 1;
  std::string list = as_list().list();  // the AITER list's name

  CsvRow as_list() const {
    CsvRow r;
    r.quant = quant;
    r.out = out;
    r.act = act;
    r.gate = "g1u1";
    r.tkw1 = tkw1;
    return r;
  }
  bool block_scaled() const { return quant.rfind("blockscale", 0) == 0; }
};

// Every list an entry point reads, at each block size it can take and both vskips.
std::vector<Mode> all_modes() {
  std::vector<Mode> m;
  for (int vskip : {1, 0}) {
    for (const char* act : {"silu", "gelu"}) {
      for (const char* out : {"bf16", "fp16"}) {
        m.push_back({"pertokenFp8", out, act, 0, 32, vskip});
        m.push_back({"pertokenInt8", out, act, 0, 32, vskip});
        m.push_back({"pertokenFp8", out, act, 1, 32, vskip});
      }
      for (const char* q : {"blockscaleFp8", "blockscaleBf16"}) {
        for (int bm : {16, 32, 64}) m.push_back({q, "bf16", act, 0, bm, vskip});
      }
    }
  }
  return m;
}

struct Problem {
  int64_t tokens, experts, topk, inter, hidden;
};

// The blocks the rule counts and the blocks of the sorted layout (what the grid covers).
int64_t layout_blocks(const Problem& p, int64_t block_m) {
  return kn::aiter_fmoe::max_blocks(p.tokens, p.topk, p.experts, block_m);
}
int64_t counted_blocks(const Problem& p, const Mode& m) {
  return m.tkw1 ? (p.tokens * p.topk + 31) / 32 : layout_blocks(p, m.block_m);
}

struct Expected {
  bool any = false;
  std::string symbol, code_object;
  uint32_t gx = 0, gy = 0;
};

// A candidate of the heuristic among its list's rows.
bool candidate(const CsvRow& r, const Mode& m, int64_t inter) {
  return r.vskip == m.vskip && r.smf == 0 && r.sub_m == m.block_m && r.flat == 0 &&
         inter % r.sub_n == 0;
}

// The rule: the least (rounds, idle, not ps, table index) over the candidates.
Expected reference(const Problem& p, const Mode& m, const std::string& arch, int cus) {
  if (!m.block_scaled() && m.block_m != 32) return {};
  const int64_t sub_x = counted_blocks(p, m);
  using Key = std::tuple<int64_t, int64_t, int, size_t>;
  bool found = false;
  Key best{};
  size_t best_i = 0;
  for (size_t i : rows_of(arch, m.list)) {
    const CsvRow& r = rows()[i];
    if (!candidate(r, m, p.inter)) continue;
    const int64_t tg = p.inter / r.sub_n * sub_x;
    const int64_t rounds = (tg + cus - 1) / cus;
    const Key k{rounds, rounds * cus - tg, r.ps ? 0 : 1, i};
    if (!found || k < best) {
      best = k;
      best_i = i;
      found = true;
    }
  }
  if (!found) return {};
  const CsvRow& r = rows()[best_i];
  Expected e{true, r.symbol, r.code_object};
  // The grid: a persistent row launches tg_num_perCU x CUs workgroups when that covers the inter
  // tiles at least once; otherwise (and a plain row) one per (inter tile, sorted block).
  const int64_t deno = (p.inter + r.sub_n - 1) / r.sub_n;
  const int64_t persistent = r.ps ? int64_t{r.tgs} * cus : 0;
  if (persistent > 0 && persistent / deno * deno > 0) {
    e.gx = static_cast<uint32_t>(persistent);
    e.gy = 1;
  } else {
    e.gx = static_cast<uint32_t>(deno);
    e.gy = static_cast<uint32_t>(layout_blocks(p, m.block_m));
  }
  return e;
}

ja::ops::FmoeQuery query(const Problem& p, const Mode& m, Arch arch, int cus,
                         std::string_view kernel = "") {
  ja::ops::FmoeQuery q;
  q.m = p.tokens;
  q.n = p.inter;
  q.k = p.hidden;
  q.arch = arch;
  q.compute_units = cus;
  q.knobs.kernel = kernel;
  using Q = kn::AiterFmoeQuant;
  q.quant = m.quant == "pertokenFp8"     ? Q::kPertokenFp8
            : m.quant == "pertokenInt8"  ? Q::kPertokenInt8
            : m.quant == "blockscaleFp8" ? Q::kBlockscaleFp8
                                         : Q::kBlockscaleBf16;
  q.out = m.out == "bf16" ? DType::kBF16 : DType::kF16;
  q.act = m.act == "silu" ? kn::AiterFmoeAct::kSilu : kn::AiterFmoeAct::kGelu;
  q.tkw1 = m.tkw1 != 0;
  q.vskip = m.vskip;
  q.block_m = m.block_m;
  q.inter = p.inter;
  q.sub_x = counted_blocks(p, m);
  return q;
}

Expected ours(const Problem& p, const Mode& m, Arch arch, int cus) {
  const auto d = ja::ops::select_aiter<Family>(query(p, m, arch, cus));
  if (!d.ok()) return {};
  const Family::Row& r = *d->row;
  const auto l = Family::launch_of(r, p.inter, layout_blocks(p, m.block_m), cus);
  return {true, std::string(r.kernel.symbol), std::string(r.kernel.code_object), l.grid.x,
          l.grid.y};
}

std::vector<Problem> problems() {
  std::vector<Problem> out;
  for (int64_t t : {1, 2, 3, 8, 16, 17, 33, 64, 128, 256, 500, 1024, 2048, 4096, 16384}) {
    for (int64_t e : {8, 16, 64, 128, 256}) {
      for (int64_t k : {1, 2, 6, 8}) {
        for (int64_t i : {96, 128, 192, 256, 320, 384, 448, 512, 640, 768, 1024, 1280, 1408, 1536,
                          2048, 4096}) {
          for (int64_t h : {4096, 7168}) out.push_back({t, e, k, i, h});
        }
      }
    }
  }
  return out;
}

class FmoeSelectionGrid : public ::testing::TestWithParam<std::tuple<Arch, int>> {};

TEST_P(FmoeSelectionGrid, MatchesTheIndependentRule) {
  const auto [arch, cus] = GetParam();
  const std::string a(ja::name(arch));
  const auto ps = problems();
  const auto modes = all_modes();
  int calls = 0, chosen = 0, persistent = 0;
  std::map<std::string, int> picked;  // distinct rows the grid reaches
  for (const Problem& p : ps) {
    for (const Mode& m : modes) {
      const Expected w = reference(p, m, a, cus);
      const Expected g = ours(p, m, arch, cus);
      ++calls;
      if (g.any != w.any || (w.any && (g.symbol != w.symbol || g.code_object != w.code_object ||
                                       g.gx != w.gx || g.gy != w.gy))) {
        FAIL() << a << " T=" << p.tokens << " E=" << p.experts << " k=" << p.topk
               << " I=" << p.inter << " list " << m.list << " block_m " << m.block_m << " vskip "
               << m.vskip << ": got " << (g.any ? g.code_object : "no row") << " grid " << g.gx
               << "x" << g.gy << ", want " << (w.any ? w.code_object : "no row") << " grid " << w.gx
               << "x" << w.gy;
      }
      if (w.any) {
        ++chosen;
        persistent += w.gy == 1 && w.gx != 1;
        ++picked[w.code_object];
      }
    }
  }
  EXPECT_GE(ps.size(), 5000u);
  EXPECT_GT(chosen, calls / 4);
  EXPECT_GT(persistent, chosen / 10);
  std::printf(
      "%s (%d CUs): %zu problems x %zu lists = %d calls, %d with a row (%d persistent), "
      "%zu distinct rows\n",
      a.c_str(), cus, ps.size(), modes.size(), calls, chosen, persistent, picked.size());
}

INSTANTIATE_TEST_SUITE_P(Archs, FmoeSelectionGrid,
                         ::testing::Values(std::tuple{Arch::kGfx942, 304},
                                           std::tuple{Arch::kGfx942, 80},
                                           std::tuple{Arch::kGfx950, 256}));

// AITER's loop (asm_fmoe.cu get_heuristic_kernel) over candidates in a given visiting order: the
// index of the row it keeps, -1 for none.
int aiter_loop(const std::vector<const CsvRow*>& order, int64_t inter, int64_t sub_x, int cus) {
  uint32_t round = UINT32_MAX, empty = static_cast<uint32_t>(cus);
  int sel = -1;
  for (size_t i = 0; i < order.size(); ++i) {
    const CsvRow& r = *order[i];
    const uint32_t tg = static_cast<uint32_t>(inter / r.sub_n * sub_x);
    const uint32_t lr = (tg + cus - 1) / cus;
    const uint32_t e = lr * cus - tg;
    if (lr < round || (lr == round && (empty > e || (empty == e && r.ps == 1)))) {
      round = lr;
      empty = e;
      sel = static_cast<int>(i);
    }
  }
  return sel;
}

// Where the visiting order changes AITER's choice: never in the lists a call reads (rows of one
// list never repeat a (block, inter tile, ps) triple among the heuristic's candidates); only in
// the g1u0 lists at smf 0, which no entry point reads (the a16 g1u0 entry asks for smf 1).
TEST(FmoeSelection, AitersChoiceIsOrderFreeWhereACallReaches) {
  const std::string root = fmoe_testing::aiter_root(JAX_AITER_TEST_AITER_ROOT);
  int reached = 0, reached_sensitive = 0, unreached = 0, unreached_sensitive = 0;
  for (const std::string arch : {"gfx942", "gfx950"}) {
    for (const Mode& m0 : all_modes()) {
      for (const bool g1u0 : {false, true}) {
        if (g1u0 && (m0.tkw1 || m0.quant != "pertokenInt8")) continue;
        CsvRow list = m0.as_list();
        if (g1u0) list.gate = "g1u0";
        // AITER's own CSV order when the checkout is there, else ours.
        std::vector<CsvRow> from_aiter;
        if (!root.empty()) from_aiter = fmoe_testing::aiter_rows(root, arch, list);
        std::vector<const CsvRow*> order;
        for (const CsvRow& r : from_aiter.empty() ? rows() : from_aiter) {
          if (r.on(arch) && r.list() == list.list() && r.vskip == m0.vskip && r.smf == 0 &&
              r.sub_m == m0.block_m && r.flat == 0) {
            order.push_back(&r);
          }
        }
        for (const Problem& p : problems()) {
          if (p.hidden != 7168) continue;
          std::vector<const CsvRow*> fits;
          for (const CsvRow* r : order) {
            if (p.inter % r->sub_n == 0) fits.push_back(r);
          }
          std::vector<const CsvRow*> reversed(fits.rbegin(), fits.rend());
          const int64_t sub_x = counted_blocks(p, m0);
          const int f = aiter_loop(fits, p.inter, sub_x, 304);
          const int b = aiter_loop(reversed, p.inter, sub_x, 304);
          const bool differs = (f < 0) != (b < 0) || (f >= 0 && fits[f] != reversed[b]);
          (g1u0 ? unreached : reached) += 1;
          (g1u0 ? unreached_sensitive : reached_sensitive) += differs;
          if (!g1u0 && f >= 0) {
            // And it is the rule's choice.
            const Expected w = reference(p, m0, arch, 304);
            ASSERT_TRUE(w.any);
            EXPECT_EQ(fits[f]->code_object, w.code_object)
                << arch << " " << list.list() << " I=" << p.inter;
          }
        }
      }
    }
  }
  EXPECT_EQ(reached_sensitive, 0);
  EXPECT_GT(unreached_sensitive, 0);
  std::printf("order-sensitive calls: %d of %d reachable, %d of %d g1u0 smf-0 (unreached)%s\n",
              reached_sensitive, reached, unreached_sensitive, unreached,
              root.empty() ? "" : " (AITER's CSV order)");
}

// Worked examples of the stated rule.
TEST(FmoeSelection, WorkedExamples) {
  // DeepSeek-V3 decode on MI300X, fp8 block scales, I = 256 per GPU (2048 over 8): one token,
  // top-8 of 256 experts sorts into 256 blocks of 32 (T k + E 32 - k = 8192 rows). 128-wide
  // inter tiles make 512 workgroups: 2 rounds, 96 idle; 256-wide make 256: 1 round, 48 idle. The
  // persistent 32x256 row wins over the plain one.
  const Problem ds{1, 256, 8, 256, 7168};
  const Mode bs{"blockscaleFp8", "bf16", "silu", 0, 32, 1};
  const Expected a = ours(ds, bs, Arch::kGfx942, 304);
  ASSERT_TRUE(a.any);
  EXPECT_EQ(a.code_object, "fmoe/silu/fmoe_bf16_blockscaleFp8_g1u1_vs_silu_1tg_ps_32x256.co");
  EXPECT_EQ(a.gx, 304u);  // tg_num_perCU 1 x 304 CUs
  EXPECT_EQ(a.gy, 1u);
  // Per-token fp8, I = 1024, 4096 tokens top-8 of 128: 1152 blocks; 512-wide tiles make 2304
  // workgroups (8 rounds, 128 idle), 448 does not divide, 256-wide make 4608 (16 rounds, 256
  // idle), 128-wide 9216 (31 rounds, 208 idle): 512 wins, persistent over plain.
  const Expected b =
      ours({4096, 128, 8, 1024, 4096}, {"pertokenFp8", "bf16", "silu"}, Arch::kGfx942, 304);
  ASSERT_TRUE(b.any);
  EXPECT_NE(b.code_object.find("_ps_32x512"), std::string::npos) << b.code_object;
  // A persistent row whose workgroups (1 x 80 CUs) do not cover the inter tiles once (I = 16384
  // in 128-wide tiles: 128) launches the plain grid, total_tgs 0, as AITER's launcher does.
  const Family::Row* ps128 = nullptr;
  for (const Family::Row& r : kn::kAiterFmoeRows) {
    if (r.ps && r.sub_n == 128 && r.tg_num_per_cu == 1 && ps128 == nullptr) ps128 = &r;
  }
  ASSERT_NE(ps128, nullptr);
  const auto l = Family::launch_of(*ps128, 16384, 100, 80);
  EXPECT_FALSE(l.persistent);
  EXPECT_EQ(l.grid, (kn::Dim3{128, 100, 1}));
  EXPECT_EQ(l.total_tgs, 0u);
  EXPECT_EQ(l.ps_deno, 128u);
  const auto full = Family::launch_of(*ps128, 16384, 100, 304);
  EXPECT_TRUE(full.persistent);
  EXPECT_EQ(full.grid, (kn::Dim3{304, 1, 1}));
  EXPECT_EQ(full.total_tgs, 256u);  // 304 rounded down to whole multiples of 128
}

TEST(FmoeSelection, ForcedKernel) {
  const Problem p{64, 64, 8, 1024, 4096};
  const Mode m{"pertokenFp8", "bf16", "silu"};
  auto select = [&](std::string_view kernel, const Mode& mode, Arch arch = Arch::kGfx942,
                    int64_t inter = 1024) {
    Problem q = p;
    q.inter = inter;
    return ja::ops::select_aiter<Family>(query(q, mode, arch, 304, kernel));
  };
  // By short name or symbol, a plain row the heuristic would not pick.
  auto d = select("fmoe_bf16_pertokenFp8_g1u1_vs_silu_1tg_32x128", m);
  ASSERT_TRUE(d.ok()) << d.verdict().text();
  EXPECT_EQ(d->row->sub_n, 128);
  EXPECT_FALSE(d->row->ps);
  d = select("_ZN5aiter48fmoe_bf16_pertokenFp8_g1u1_vs_silu_1tg_ps_32x256E", m);
  ASSERT_TRUE(d.ok()) << d.verdict().text();
  EXPECT_TRUE(d->row->ps);
  // A novs row by name although vskip is on (AITER's kernelName path ignores vskip too).
  d = select("fmoe_bf16_blockscaleFp8_g1u1_novs_silu_1tg_32x256",
             {"blockscaleFp8", "bf16", "silu"});
  ASSERT_TRUE(d.ok()) << d.verdict().text();
  EXPECT_EQ(d->row->vskip, 0);
  // Refused: another list, smoothing scales, a tile that does not divide I, a flat kernel, a
  // block size the layout does not have, another arch's row, a name that is no row.
  EXPECT_NE(select("fmoe_bf16_pertokenFp8_g1u1_vs_gelu_1tg_32x128", m)
                .verdict()
                .text()
                .find("another AITER list"),
            std::string::npos);
  EXPECT_NE(select("fmoe_bf16_pertokenFp8_g1u1_vs_multix_silu_1tg_32x384", m)
                .verdict()
                .text()
                .find("smoothing scales (smf 2)"),
            std::string::npos);
  EXPECT_EQ(select("fmoe_bf16_pertokenFp8_g1u1_vs_silu_1tg_32x384", m).verdict().text(),
            "I = 1024 is not a multiple of the forced kernel's inter tile 384");
  const Mode bf16x{"blockscaleBf16", "bf16", "silu", 0, 16, 1};
  EXPECT_NE(select("fmoe_bf16_a16_blockscaleFp8_g1u1_vs_silu_1tg_16x128_flat_pf3", bf16x)
                .verdict()
                .text()
                .find("flat kernel (flat 1)"),
            std::string::npos);
  EXPECT_EQ(select("fmoe_bf16_blockscaleFp8_g1u1_vs_silu_1tg_64x256",
                   {"blockscaleFp8", "bf16", "silu", 0, 32, 1})
                .verdict()
                .text(),
            "the forced kernel takes blocks of 64 sorted rows; the sorting's block_m is 32");
  EXPECT_FALSE(select("fmoe_bf16_pertokenFp8_g1u1_tkw1_silu_1tg_32x64",
                      {"pertokenFp8", "bf16", "silu", 1}, Arch::kGfx942)
                   .ok());  // gfx950 only
  EXPECT_TRUE(select("fmoe_bf16_pertokenFp8_g1u1_tkw1_silu_1tg_32x64",
                     {"pertokenFp8", "bf16", "silu", 1}, Arch::kGfx950)
                  .ok());
  EXPECT_EQ(select("no_such_kernel", m).verdict().text(),
            "the forced kernel is not an fmoe row for this arch");
}

TEST(FmoeSelection, Declines) {
  const Problem p{64, 64, 8, 1024, 4096};
  auto why = [&](const Mode& m, Arch arch = Arch::kGfx942, int64_t inter = 1024) {
    Problem q = p;
    q.inter = inter;
    return ja::ops::select_aiter<Family>(query(q, m, arch, 304)).verdict().text();
  };
  EXPECT_EQ(why({"pertokenFp8", "bf16", "silu", 0, 64, 1}),
            "AITER's per-token fmoe kernels read blocks of 32 sorted rows; the sorting's block_m "
            "is 64");
  // gfx942 has blockscaleBf16 kernels for silu only.
  EXPECT_NE(why({"blockscaleBf16", "bf16", "gelu", 0, 16, 1}).find("ships no fmoe kernels"),
            std::string::npos);
  EXPECT_EQ(why({"pertokenInt8", "bf16", "silu"}, Arch::kGfx942, 96),
            "no AITER fmoe kernel of the call's list takes I = 96 in blocks of 32 sorted rows "
            "(vskip 1)");
  EXPECT_NE(why({"pertokenFp8", "bf16", "silu"}, Arch::kSm90).find("asm_arch"), std::string::npos);
  // A split: AITER's fmoe kernels do not split.
  ja::ops::FmoeQuery q = query(p, {"pertokenFp8", "bf16", "silu"}, Arch::kGfx942, 304);
  q.knobs.splitk = 2;
  EXPECT_FALSE(ja::ops::select_aiter<Family>(q).ok());
}

// One call through the tier: Params, supports, plan; the packed bytes read back field by field.
TEST(FmoeSelection, PlansAsAitersLauncherPacks) {
  namespace L = kn::aiter_fmoe;
  const int64_t t = 3, e = 8, k = 2, i = 256, h = 512, bm = 32;
  const int64_t s = L::max_sorted_rows(t, k, e, bm), b = L::max_blocks(t, k, e, bm);
  static std::byte mem[16][8];
  auto at = [](int n) { return static_cast<void*>(&mem[n][0]); };
  using ja::ops::Tensor;
  ja::ops::FusedMoeParams p;
  p.x = Tensor::over(at(0), DType::kF8E4M3FNUZ, {t, h});
  p.w1 = Tensor::over(at(1), DType::kF8E4M3FNUZ, {e, 2 * i, h});
  p.w2 = Tensor::over(at(2), DType::kF8E4M3FNUZ, {e, h, i});
  p.sorted_token_ids = Tensor::over(at(3), DType::kI32, {s});
  p.sorted_weights = Tensor::over(at(4), DType::kF32, {s});
  p.sorted_expert_ids = Tensor::over(at(5), DType::kI32, {b});
  p.num_valid_ids = Tensor::over(at(6), DType::kI32, {2});
  p.x_scale = Tensor::over(at(7), DType::kF32, {t, 1});
  p.w1_scale = Tensor::over(at(8), DType::kF32, {e, 2 * i, 1});
  p.w2_scale = Tensor::over(at(9), DType::kF32, {e, h, 1});
  p.out = Tensor::over(at(10), DType::kBF16, {t, h});
  p.topk = k;
  p.quant = ja::ops::MoeQuant::kFp8PerToken;
  p.w_layout = "16x16";
  ASSERT_TRUE(ja::ops::fused_moe_detail::check(p).ok())
      << ja::ops::fused_moe_detail::check(p).message();
  ja::Target target{ja::BackendKind::kHip, Arch::kGfx942, 304};
  const auto d = ja::ops::FusedMoeAsmTier::supports(p, target);
  ASSERT_TRUE(d.ok()) << d.verdict().text();
  kn::Plan plan;
  ja::ops::FusedMoeAsmTier::plan(p, target, *d, plan);
  ASSERT_EQ(plan.count, 2u);
  EXPECT_EQ(plan.steps[0].kind, kn::Step::Kind::kMemset);
  EXPECT_EQ(plan.steps[0].memset.dst, at(10));
  EXPECT_EQ(plan.steps[0].memset.bytes, uint64_t(t * h * 2));
  const kn::Launch& l = plan.steps[1].launch;
  EXPECT_EQ(l.block, (kn::Dim3{256, 1, 1}));
  const auto a = l.args.unpack<kn::AiterFmoeArgs>();
  EXPECT_EQ(l.args.size, 448u);
  EXPECT_EQ(a.O.value, at(10));
  EXPECT_EQ(a.XC.value, at(6));
  EXPECT_EQ(a.XQ.value, at(7));
  EXPECT_EQ(a.SMQ.value, nullptr);
  EXPECT_EQ(a.STP.value, at(3));
  EXPECT_EQ(a.SEP.value, at(5));
  EXPECT_EQ(a.dim.value, uint32_t(h));
  EXPECT_EQ(a.inter_dim.value, uint32_t(i));
  EXPECT_EQ(a.token_cnt.value, uint32_t(t));
  EXPECT_EQ(a.eprt_cnt.value, uint32_t(e));
  EXPECT_EQ(a.Xs.value, uint32_t(h));
  EXPECT_EQ(a.GUs.value, uint32_t(h));
  EXPECT_EQ(a.Ds.value, uint32_t(i));
  EXPECT_EQ(a.Os.value, uint32_t(2 * h));
  EXPECT_EQ(a.eGUs.value, uint32_t(2 * i * h));
  EXPECT_EQ(a.eDs.value, uint32_t(i * h));
  EXPECT_EQ(a.eGUQs.value, uint32_t(2 * i * 4));
  EXPECT_EQ(a.eDQs.value, uint32_t(h * 4));
  EXPECT_EQ(a.eSMQs.value, uint32_t(i * 4));
  EXPECT_EQ(a.topk.value, uint32_t(k));
  EXPECT_EQ(a.topk.pad[0], std::byte{L::kFormatFnuz});  // for the twins: a gfx942 plan's fp8
  const Family::Row& r = *d->row;
  EXPECT_EQ(a.ps_deno.value, uint32_t((i + r.sub_n - 1) / r.sub_n));
  if (r.ps) {
    EXPECT_EQ(l.grid, (kn::Dim3{uint32_t(r.tg_num_per_cu * 304), 1, 1}));
    EXPECT_EQ(a.total_tgs.value,
              uint32_t(r.tg_num_per_cu * 304) / a.ps_deno.value * a.ps_deno.value);
  } else {
    EXPECT_EQ(l.grid, (kn::Dim3{a.ps_deno.value, uint32_t(b), 1}));
    EXPECT_EQ(a.total_tgs.value, 0u);
  }
  // The operand checks the tier relies on.
  ja::ops::FusedMoeParams bad = p;
  bad.w_layout = "";
  EXPECT_FALSE(ja::ops::fused_moe_detail::check(bad).ok());
  bad = p;
  bad.sorted_expert_ids.dims[0] = b + 1;
  EXPECT_NE(ja::ops::fused_moe_detail::check(bad).message().find("ceil(S / block_m)"),
            std::string::npos);
  // gfx950 reads e4m3fn: the gfx942 format is refused with the reason.
  ja::Target mi355{ja::BackendKind::kHip, Arch::kGfx950, 256};
  EXPECT_NE(ja::ops::FusedMoeAsmTier::supports(p, mi355).verdict().text().find("gfx950 reads"),
            std::string::npos);
  // No quantization: no one-stage g1u1 kernel.
  ja::ops::FusedMoeParams none = p;
  none.quant = ja::ops::MoeQuant::kNone;
  EXPECT_NE(ja::ops::FusedMoeAsmTier::supports(none, target).verdict().text().find("g1u0"),
            std::string::npos);
}

// ---- the two-stage family's stage 1 -------------------------------------------------------------

struct Row2 {
  std::string symbol, code_object, quant;
  int doweight = 0, tile_m = 0, tile_n = 0, on942 = 0, on950 = 0;
};

// aiter_fmoe_2stages.csv, read here with no help from the library.
const std::vector<Row2>& rows2() {
  static const std::vector<Row2> rows = [] {
    std::vector<Row2> out;
    FILE* f = std::fopen(JAX_AITER_FMOE_2STAGES_CSV, "r");
    EXPECT_NE(f, nullptr) << JAX_AITER_FMOE_2STAGES_CSV;
    if (f == nullptr) return out;
    char line[512];
    bool header = true;
    while (std::fgets(line, sizeof line, f)) {
      if (header) {
        EXPECT_EQ(std::string(line),
                  "symbol,code_object,quant,doweight,tile_m,tile_n,kernarg_bytes,on_gfx942,"
                  "on_gfx950\n");
        header = false;
        continue;
      }
      std::vector<std::string> cells;
      std::string cell;
      for (const char* c = line; *c && *c != '\n'; ++c) {
        if (*c == ',') {
          cells.push_back(cell);
          cell.clear();
        } else {
          cell += *c;
        }
      }
      cells.push_back(cell);
      if (cells.size() != 9) continue;
      out.push_back({cells[0], cells[1], cells[2], std::stoi(cells[3]), std::stoi(cells[4]),
                     std::stoi(cells[5]), std::stoi(cells[7]), std::stoi(cells[8])});
    }
    std::fclose(f);
    return out;
  }();
  return rows;
}

// aiter/fused_moe.py get_block_size_M (Python's integer arithmetic; min() keeps the first).
int64_t block_size_m(int64_t padded, int64_t topk, int64_t e, int64_t inter, int64_t cus) {
  const int64_t tg_n = (inter + 127) / 128;
  int64_t best = -1, best_rnd = 0, best_empty = 0;
  for (int64_t el : {32, 64, 128}) {
    const int64_t max_tokens = padded * topk + e * el - topk;
    const int64_t tg = tg_n * (max_tokens + el - 1) / el;
    const int64_t rnd = (tg + cus - 1) / cus, empty = cus - tg % cus;
    if (best < 0 || std::make_pair(rnd, empty) < std::make_pair(best_rnd, best_empty)) {
      best = el;
      best_rnd = rnd;
      best_empty = empty;
    }
  }
  return best;
}
int64_t padded_m(int64_t m) {  // get_padded_M
  if (m < 32768) {
    int64_t p = 1;
    while (p < m) p <<= 1;
    return p;
  }
  return m >= 131072 ? 131072 : 32768;
}

struct Choice2 {
  bool any = false;
  std::string symbol;
  int tile_n = 0;
};

// The rule: among the list's rows on the arch with tile_m == block_m and I % tile_n == 0, the
// least (CU rounds, idle CUs, table index).
Choice2 reference2(const std::string& arch, const std::string& quant, int doweight, int64_t block_m,
                   int64_t inter, int64_t blocks, int64_t cus, int* tied = nullptr) {
  using Key = std::tuple<int64_t, int64_t, size_t>;
  bool found = false;
  Key best{};
  int ties = 0;
  for (size_t i = 0; i < rows2().size(); ++i) {
    const Row2& r = rows2()[i];
    if ((arch == "gfx942" ? r.on942 : r.on950) == 0 || r.quant != quant || r.doweight != doweight ||
        r.tile_m != block_m || inter % r.tile_n != 0) {
      continue;
    }
    const int64_t tg = inter / r.tile_n * blocks, rounds = (tg + cus - 1) / cus;
    const Key k{rounds, rounds * cus - tg, i};
    if (found && std::get<0>(k) == std::get<0>(best) && std::get<1>(k) == std::get<1>(best)) {
      ++ties;
    }
    if (!found || k < best) {
      if (!found || std::get<0>(k) != std::get<0>(best) || std::get<1>(k) != std::get<1>(best)) {
        ties = 0;
      }
      best = k;
      found = true;
    }
  }
  if (tied != nullptr) *tied = ties;
  if (!found) return {};
  const Row2& r = rows2()[std::get<2>(best)];
  return {true, r.symbol, r.tile_n};
}

class Fmoe2SelectionGrid : public ::testing::TestWithParam<std::tuple<Arch, int>> {};

TEST_P(Fmoe2SelectionGrid, MatchesTheIndependentRule) {
  const auto [arch, cus] = GetParam();
  const std::string a(ja::name(arch));
  int problems = 0, calls = 0, chosen = 0, tied = 0;
  std::map<std::string, int> picked;
  using Q = kn::AiterFmoe2StagesQuant;
  const std::tuple<const char*, Q, int> lists[] = {{"pertokenFp8", Q::kPertokenFp8, 0},
                                                   {"pertokenFp8", Q::kPertokenFp8, 1},
                                                   {"pertokenInt8", Q::kPertokenInt8, 0},
                                                   {"blockscaleFp8", Q::kBlockscaleFp8, 0}};
  for (int64_t t : {1, 2, 5, 16, 17, 32, 33, 100, 257, 1000, 4096, 20000, 40000, 200000}) {
    for (int64_t e : {8, 32, 128, 256}) {
      for (int64_t k : {1, 2, 6, 8}) {
        for (int64_t i : {64, 128, 192, 256, 320, 384, 512, 768, 1024, 1536, 2048, 3072, 4096}) {
          for (int64_t h : {2048, 7168}) {
            ++problems;
            for (const auto& [quant, q, doweight] : lists) {
              const bool blocks = q == Q::kBlockscaleFp8;
              if (blocks && (i % 128 != 0 || h % 128 != 0)) continue;
              // AITER's block_m: ours (the header's rule) against the one written here.
              const int64_t padded = padded_m(t);
              const int64_t want_bm =
                  blocks ? (padded > 32 ? 64 : 16) : block_size_m(padded, k, e, i, cus);
              const int64_t got_bm =
                  kn::aiter_fmoe_2stages::default_block_m(blocks, t, k, e, i, cus);
              ASSERT_EQ(got_bm, want_bm)
                  << a << " T=" << t << " E=" << e << " k=" << k << " I=" << i << " " << quant;
              const int64_t nb = kn::aiter_fmoe::max_blocks(t, k, e, want_bm);
              int ties = 0;
              const Choice2 w = reference2(a, quant, doweight, want_bm, i, nb, cus, &ties);
              ja::ops::Fmoe2StagesQuery qq;
              qq.m = t;
              qq.n = i;
              qq.k = h;
              qq.arch = arch;
              qq.compute_units = cus;
              qq.quant = q;
              qq.doweight = doweight != 0;
              qq.block_m = want_bm;
              qq.sub_x = nb;
              qq.inter = i;
              const auto d = ja::ops::select_aiter<ja::ops::AiterFmoe2Stages>(qq);
              ++calls;
              ASSERT_EQ(d.ok(), w.any) << a << " T=" << t << " E=" << e << " k=" << k << " I=" << i
                                       << " " << quant << " block_m " << want_bm;
              if (!w.any) continue;
              ASSERT_EQ(std::string(d->row->kernel.symbol), w.symbol)
                  << a << " T=" << t << " E=" << e << " k=" << k << " I=" << i << " " << quant;
              ++chosen;
              tied += ties > 0;
              ++picked[w.symbol];
            }
          }
        }
      }
    }
  }
  EXPECT_GE(problems, 5000);
  EXPECT_GT(chosen, calls / 2);
  std::printf(
      "%s, %d CUs: %d problems, %d stage-1 calls, %d with a kernel (%d distinct), %d where AITER's "
      "choice depends on its map's order (a tie of one tile's rows)\n",
      a.c_str(), cus, problems, calls, chosen, int(picked.size()), tied);
}

INSTANTIATE_TEST_SUITE_P(ArchsAndCus, Fmoe2SelectionGrid,
                         ::testing::Values(std::tuple{Arch::kGfx942, 304},
                                           std::tuple{Arch::kGfx942, 80},
                                           std::tuple{Arch::kGfx950, 256}));

TEST(Fmoe2Selection, ForcedKernelAndDeclines) {
  ja::ops::Fmoe2StagesQuery q;
  q.arch = Arch::kGfx942;
  q.compute_units = 304;
  q.quant = kn::AiterFmoe2StagesQuant::kPertokenInt8;
  q.block_m = 32;
  q.inter = q.n = 384;
  q.sub_x = 10;
  q.knobs.kernel = "fmoe_stage1_bf16_pertokenInt8_g1u1_32x384_pf3";
  auto d = ja::ops::select_aiter<ja::ops::AiterFmoe2Stages>(q);
  ASSERT_TRUE(d.ok()) << d.verdict().text();
  EXPECT_EQ(d->row->kernarg_bytes, 400u);
  EXPECT_EQ(d->row->kernel.args_size, 400u);
  q.arch = Arch::kGfx950;  // a gfx942-only kernel
  EXPECT_FALSE(ja::ops::select_aiter<ja::ops::AiterFmoe2Stages>(q).ok());
  q.arch = Arch::kGfx942;
  q.block_m = 16;
  d = ja::ops::select_aiter<ja::ops::AiterFmoe2Stages>(q);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.verdict().text().find("blocks of 32 sorted rows; the sorting's block_m is 16"),
            std::string::npos)
      << d.verdict().text();
  q.block_m = 32;
  q.inter = 256;
  d = ja::ops::select_aiter<ja::ops::AiterFmoe2Stages>(q);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.verdict().text().find("I = 256 is not a multiple"), std::string::npos);
  q.knobs.kernel = "fmoe_stage1_bf16_pertokenFp8_g1u1_32x128_3tg_pf2";  // another list
  d = ja::ops::select_aiter<ja::ops::AiterFmoe2Stages>(q);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.verdict().text().find("another AITER list"), std::string::npos);
  q.knobs.kernel = "";
  q.knobs.splitk = 2;
  d = ja::ops::select_aiter<ja::ops::AiterFmoe2Stages>(q);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.verdict().text().find("ksplit"), std::string::npos) << d.verdict().text();
  q.knobs.splitk = 0;
  q.block_m = 24;  // no row of 24 sorted rows
  d = ja::ops::select_aiter<ja::ops::AiterFmoe2Stages>(q);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.verdict().text().find("in blocks of 24"), std::string::npos);
}

}  // namespace
