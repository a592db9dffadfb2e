// The generic AITER family tier (ops/aiter_tier.hpp) on a toy family whose rule is small enough
// to state here: the selection (heuristic, ties, forced kernel, forced split, reasons), the tier
// protocol (supports decides once, plan packs that decision and selects nothing), the knobs
// (ops/aiter_knobs.hpp), and the binder passing a call on when AITER's code object is absent or
// declares an argument layout we do not know (ffi/binder.hpp), through a fake backend.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>

#include "jax_aiter/ffi/binder.hpp"
#include "jax_aiter/kernels/aiter/row.hpp"
#include "jax_aiter/ops/aiter_tier.hpp"

namespace {

namespace ja = jax_aiter;
namespace kn = jax_aiter::kernels;
namespace ops = jax_aiter::ops;
using ja::Arch;

// ---- a toy family -------------------------------------------------------------------------------

struct ToyArgs {
  uint32_t tile_m, split;
};

struct ToyRow {
  kn::KernelInfo kernel;
  int tile_m;
  bool split_k;
  bool on_gfx942, on_gfx950;
};

constexpr kn::KernelInfo toy_kernel(std::string_view co, std::string_view symbol) {
  return {co, symbol, sizeof(ToyArgs), {}};
}

// Three rows: two on both archs (tile 32 splits, tile 64 does not), one on gfx950 only.
constexpr ToyRow kToyRows[] = {
    {toy_kernel("toy/toy_32.co", "_Z6toy_32"), 32, true, true, true},
    {toy_kernel("toy/toy_64.co", "_Z6toy_64"), 64, false, true, true},
    {toy_kernel("toy/toy_128.co", "_Z7toy_128"), 128, false, false, true},
};

struct ToyParams {
  int64_t m = 0;
  ops::Tensor a, out;  // for the binder's spec only
  ops::AiterKnobs aiter;
  ops::Dispatch dispatch;
};

int g_gates = 0;  // selections run (each starts at the family's gate)

// The rule: M % 16 == 0; rows whose tile divides M; at most 4 splits on the split row, whole
// tiles each; fewest blocks (M / tile * split... fewer is better, then more splits lose); the first
// row wins ties.
struct ToyFamily : ops::AiterFamily<ToyParams, kToyRows> {
  static constexpr std::string_view kNotARow = "the forced kernel is not a toy row for this arch";

  static ops::AiterQuery query(const Params& p, const ja::Target& t) {
    return {.m = p.m,
            .n = 1,
            .k = 1,
            .arch = t.arch,
            .compute_units = t.compute_units,
            .knobs = p.aiter};
  }
  static ja::Verdict gate(const ops::AiterQuery& q) {
    ++g_gates;
    return q.m % 16 == 0 ? ja::Verdict::yes() : ja::Verdict::no("M = {} is odd", q.m);
  }
  static constexpr ja::Verdict fits(const Row& r, const ops::AiterQuery& q) {
    return q.m % r.tile_m == 0 ? ja::Verdict::yes()
                               : ja::Verdict::no("tile {} does not divide M", r.tile_m);
  }
  static constexpr ops::SplitList splits(const Row& r, const ops::AiterQuery&) {
    ops::SplitList s;
    for (int64_t split = 1; split <= (r.split_k ? 4 : 1); ++split) s.add(split);
    return s;
  }
  static constexpr ja::Verdict runs(const Row& r, const ops::AiterQuery&, int64_t split) {
    return split > 1 && !r.split_k ? ja::Verdict::no("row cannot split {}", split)
                                   : ja::Verdict::yes();
  }
  struct Score {
    int64_t blocks;
    constexpr bool better_than(const Score& o) const { return blocks < o.blocks; }
  };
  static constexpr Score score(const Row& r, const ops::AiterQuery& q, int64_t split) {
    return {q.m / r.tile_m + split};
  }
  static constexpr ja::Verdict none(const ops::AiterQuery& q) {
    return ja::Verdict::no("no toy row for M = {}", q.m);
  }
  static void pack(const Params&, const ops::AiterChoice<Row>& c, kn::Plan& plan) {
    plan.launch(c.row->kernel, {1, 1, 1}, {64, 1, 1},
                ToyArgs{static_cast<uint32_t>(c.row->tile_m), static_cast<uint32_t>(c.split)});
  }
};

using ToyTier = ops::AiterTier<ToyFamily>;

ops::AiterQuery toy_query(int64_t m, Arch arch = Arch::kGfx942, std::string_view kernel = "",
                          int64_t splitk = -1) {
  ops::AiterQuery q;
  q.m = m;
  q.arch = arch;
  q.knobs.kernel = kernel;
  if (splitk >= 0) q.knobs.splitk = splitk;
  return q;
}

TEST(AiterTier, HeuristicScoresRowsAndSplitsInTableOrder) {
  // M = 64 on gfx942: 32 split 1 scores 3, 64 scores 2: the 64 row.
  auto d = ops::select_aiter<ToyFamily>(toy_query(64));
  ASSERT_TRUE(d.ok()) << d.text();
  EXPECT_EQ(d->row, &kToyRows[1]);
  EXPECT_EQ(d->split, 1);
  // M = 32: only the 32 row fits; its splits 1..4 score 2..5: split 1.
  d = ops::select_aiter<ToyFamily>(toy_query(32));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->row, &kToyRows[0]);
  EXPECT_EQ(d->split, 1);
  // M = 128 on gfx950: 64 and 128 rows tie at 3 and 2; 128 is better.
  d = ops::select_aiter<ToyFamily>(toy_query(128, Arch::kGfx950));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->row, &kToyRows[2]);
  // ... and does not exist on gfx942: 64 (score 3) beats 32 (score 5).
  d = ops::select_aiter<ToyFamily>(toy_query(128));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->row, &kToyRows[1]);
  // Reasons.
  EXPECT_EQ(ops::select_aiter<ToyFamily>(toy_query(24)).text(), "M = 24 is odd");
  EXPECT_EQ(ops::select_aiter<ToyFamily>(toy_query(16)).text(), "no toy row for M = 16");
  EXPECT_NE(ops::select_aiter<ToyFamily>(toy_query(64, Arch::kSm90)).text().find("asm_arch"),
            std::string::npos);
}

TEST(AiterTier, ForcedKernelAndSplit) {
  // By short name or symbol; the family's split for a named row (1) unless splitk says.
  auto d = ops::select_aiter<ToyFamily>(toy_query(64, Arch::kGfx942, "toy_32"));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->row, &kToyRows[0]);
  EXPECT_EQ(d->split, 1);
  d = ops::select_aiter<ToyFamily>(toy_query(64, Arch::kGfx942, "_Z6toy_32", 3));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->split, 3);
  // splitk 0 and 1 both mean none.
  d = ops::select_aiter<ToyFamily>(toy_query(64, Arch::kGfx942, "toy_64", 0));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->split, 1);
  // Each refusal names its reason: not on this arch, does not fit, cannot split.
  EXPECT_EQ(ops::select_aiter<ToyFamily>(toy_query(128, Arch::kGfx942, "toy_128")).text(),
            "the forced kernel is not a toy row for this arch");
  EXPECT_EQ(ops::select_aiter<ToyFamily>(toy_query(32, Arch::kGfx942, "toy_64")).text(),
            "tile 64 does not divide M");
  EXPECT_EQ(ops::select_aiter<ToyFamily>(toy_query(64, Arch::kGfx942, "toy_64", 2)).text(),
            "row cannot split 2");
  // A forced split without a kernel: only rows that run it are candidates.
  d = ops::select_aiter<ToyFamily>(toy_query(64, Arch::kGfx942, "", 2));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->row, &kToyRows[0]);
  EXPECT_EQ(d->split, 2);
}

// supports() decides once; plan() packs that decision and selects nothing.
TEST(AiterTier, PlanPacksTheDecisionItIsGiven) {
  ToyParams p;
  p.m = 64;
  const ja::Target t{ja::BackendKind::kHip, Arch::kGfx942, 304};
  g_gates = 0;
  const auto d = ops::decide<ToyTier>(p, t);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(g_gates, 1);
  // Hand plan another (valid) choice than the heuristic's: it packs exactly that one.
  const ops::AiterChoice<ToyRow> other{&kToyRows[0], 4};
  kn::Plan plan;
  ops::plan_with<ToyTier>(p, t, other, plan);
  EXPECT_EQ(g_gates, 1);
  ASSERT_EQ(plan.count, 1u);
  const auto args = plan.steps[0].launch.args.unpack<ToyArgs>();
  EXPECT_EQ(args.tile_m, 32u);
  EXPECT_EQ(args.split, 4u);
  EXPECT_EQ(plan.steps[0].launch.kernel, &kToyRows[0].kernel);
  // decide_and_plan: the heuristic's choice.
  kn::Plan again;
  ASSERT_TRUE(ops::decide_and_plan<ToyTier>(p, t, again).ok());
  EXPECT_EQ(again.steps[0].launch.kernel, &kToyRows[1].kernel);
  // A tier that declines leaves the plan empty.
  p.m = 24;
  kn::Plan none;
  EXPECT_EQ(ops::decide_and_plan<ToyTier>(p, t, none).text(), "M = 24 is odd");
  EXPECT_EQ(none.count, 0u);
}

TEST(Decision, AYesWithoutAChoiceIsANo) {
  const ja::Decision<ops::AiterChoice<ToyRow>> d = ja::Verdict::yes();
  EXPECT_FALSE(d.ok());
  EXPECT_NE(d.text().find("without a choice"), std::string::npos);
  const ja::Decision<ja::NoChoice> fine = ja::Verdict::yes();
  EXPECT_TRUE(fine.ok());
}

TEST(Table, HelpersOverTheRowConcept) {
  static_assert(kn::AiterRow<ToyRow>);
  EXPECT_EQ(kn::short_name(kToyRows[0]), "toy_32");
  EXPECT_TRUE(kn::names(kToyRows[0], "_Z6toy_32"));
  EXPECT_TRUE(kn::names(kToyRows[0], "toy_32"));
  EXPECT_FALSE(kn::names(kToyRows[0], "toy_64"));
  EXPECT_FALSE(kn::on(kToyRows[2], Arch::kGfx942));
  constexpr auto k942 = kn::kernels_on<Arch::kGfx942, kToyRows>();
  constexpr auto k950 = kn::kernels_on<Arch::kGfx950, kToyRows>();
  static_assert(k942.size() == 2 && k950.size() == 3);
  EXPECT_EQ(k942[1], &kToyRows[1].kernel);
  constexpr kn::KernelInfo plain{"plain_name.co", "plain_name", 4, {}};
  EXPECT_EQ(kn::short_name(plain), "plain_name");
}

// ---- the knobs ----------------------------------------------------------------------------------

TEST(AiterKnobs, CheckedBeforeAnyTier) {
  ops::AiterKnobs k;
  EXPECT_TRUE(ops::check_aiter_knobs("aiter.toy", "toy", kToyRows, k).ok());
  k.kernel = "toy_128";  // a row on any arch
  EXPECT_TRUE(ops::check_aiter_knobs("aiter.toy", "toy", kToyRows, k).ok());
  k.kernel = "toy_7";
  const ja::Status bad = ops::check_aiter_knobs("aiter.toy", "toy", kToyRows, k);
  EXPECT_EQ(bad.message(),
            "aiter.toy: attribute kernel: expected \"\" (the heuristic's choice) or one of AITER's "
            "toy kernels by symbol or short name (e.g. toy_32), got 'toy_7'");
  k.kernel = "";
  for (int64_t s : {0, 1, 2, 16}) {
    k.splitk = s;
    EXPECT_TRUE(ops::check_aiter_knobs("aiter.toy", "toy", kToyRows, k).ok()) << s;
  }
  for (int64_t s : {-1, 17}) {
    k.splitk = s;
    const ja::Status st = ops::check_aiter_knobs("aiter.toy", "toy", kToyRows, k);
    EXPECT_NE(st.message().find("attribute splitk: expected 0 or 1 (no split), or 2..16"),
              std::string::npos)
        << st.message();
  }
  k.splitk = 3;
  EXPECT_NE(
      ops::check_aiter_knobs("aiter.toy", "toy", kToyRows, k, true).message().find("2, 4, 8 or 16"),
      std::string::npos);
}

TEST(AiterKnobs, PortableTiersSayWhatTheyCannotHonour) {
  ops::AiterKnobs k;
  EXPECT_TRUE(ops::portable_takes_knobs(k).ok());
  k.splitk = 1;
  EXPECT_TRUE(ops::portable_takes_knobs(k).ok());
  k.splitk = 4;
  EXPECT_EQ(ops::portable_takes_knobs(k).text(),
            "our kernels for this op do not split K (splitk 4)");
  EXPECT_TRUE(ops::portable_takes_knobs(k, 8).ok());
  EXPECT_EQ(ops::portable_takes_knobs(k, 2).text(),
            "splitk 4: our kernels split this call at most 2 ways");
  k.splitk.reset();
  k.kernel = "toy_32";
  EXPECT_EQ(ops::portable_takes_knobs(k).text(),
            "the call forces an AITER kernel (attribute kernel)");
}

// ---- the binder: an AITER code object absent, or of a layout we do not know --------------------

const kn::KernelInfo kPortableKernel{"toy_portable", "toy_portable", sizeof(ToyArgs), {}};

struct ToyPortableTier {
  static constexpr std::string_view kName = "portable";
  static ja::Verdict supports(const ToyParams& p, const ja::Target&) {
    return ops::portable_takes_knobs(p.aiter);
  }
  static void plan(const ToyParams&, const ja::Target&, kn::Plan& plan) {
    plan.launch(kPortableKernel, {1, 1, 1}, {64, 1, 1}, ToyArgs{0, 1});
  }
};

struct ToyOp {
  static constexpr std::string_view kName = "aiter.toy";
  using Params = ToyParams;
  using Tiers = std::tuple<ToyTier, ToyPortableTier>;
  static ja::Status validate(const Params&) { return {}; }
};

}  // namespace

// The spec the binder decodes by (unused here: run() takes decoded params).
template <>
struct jax_aiter::ffi::FfiSpec<ToyOp> {
  using P = ToyOp::Params;
  static constexpr std::array operands{input("a", &P::a), output("out", &P::out)};
  static constexpr std::array<AttrSpec<P>, 0> attributes{};
};

namespace {

// A device whose kernels resolve as `statuses` says (by symbol; absent: OK), recording launches.
struct FakeBackend {
  static constexpr ja::BackendKind kKind = ja::BackendKind::kHip;
  static constexpr bool kCommandBufferCompatible = false;
  using Stream = void*;
  struct Kernel {
    ja::Status status;
    const kn::KernelInfo* info = nullptr;
  };
  static inline std::map<std::string, ja::Status> statuses;
  static inline std::map<const kn::KernelInfo*, Kernel> resolved;
  static inline std::string launched;

  static ja::Expected<ja::Target> target(int) {
    return ja::Target{ja::BackendKind::kHip, Arch::kGfx942, 304};
  }
  static const Kernel& resolve(int, const kn::KernelInfo& info) {
    Kernel& k = resolved[&info];
    auto it = statuses.find(std::string(info.symbol));
    k.status = it == statuses.end() ? ja::Status() : it->second;
    k.info = &info;
    return k;
  }
  static ja::Status launch(int, Stream, const Kernel& k, const kn::Launch&) {
    launched = std::string(k.info->symbol);
    return {};
  }
  static ja::Status memset(int, Stream, const kn::Memset&) { return {}; }
};
static_assert(ja::runtime::Backend<FakeBackend>);

ja::Status run(ToyOp::Params p) {
  FakeBackend::launched.clear();
  return ja::ffi::Handler<ToyOp, FakeBackend>::run({}, p);
}

TEST(Binder, PassesTheCallOnWhenAitersCodeObjectCannotRun) {
  ToyOp::Params p;
  p.m = 64;
  FakeBackend::statuses.clear();
  ASSERT_TRUE(run(p).ok());
  EXPECT_EQ(FakeBackend::launched, "_Z6toy_64");
  // Absent (NotFound) or of another AITER version (FailedPrecondition): the portable tier runs.
  for (auto status : {ja::NotFound("no code object"),
                      ja::FailedPrecondition("declares none of the argument layouts we know")}) {
    FakeBackend::statuses = {{"_Z6toy_64", status}};
    p.dispatch.tier = "auto";
    ASSERT_TRUE(run(p).ok());
    EXPECT_EQ(FakeBackend::launched, "toy_portable");
    // Forced to the ASM tier, the reason is the call's error.
    p.dispatch.tier = "asm";
    const ja::Status st = run(p);
    EXPECT_EQ(st.code(), status.code());
    EXPECT_EQ(st.message(), status.message());
  }
  // Any other failure is the call's error, tier forced or not.
  FakeBackend::statuses = {{"_Z6toy_64", ja::Internal("load failed")}};
  p.dispatch.tier = "auto";
  EXPECT_EQ(run(p).code(), ja::ErrorCode::kInternal);
  // A forced kernel the ASM tier cannot run: the portable tier says no too (nothing dropped).
  FakeBackend::statuses.clear();
  p.aiter.kernel = "toy_64";
  p.m = 32;
  const ja::Status st = run(p);
  EXPECT_EQ(st.message(),
            "aiter.toy: no tier runs this call (asm: tile 64 does not divide M; portable: the call "
            "forces an AITER kernel (attribute kernel))");
}

}  // namespace
