// Tiers and how a call picks one. Each op lists its tiers in order (AITER's ASM kernels first, then
// our portable kernels); a tier decides whether it runs the call (supports), and plans the call
// from that decision. The first tier that supports the call runs it, unless the call forces one by
// its `tier` attribute.
//
// A tier whose kernels are AITER's (kRunsAiterCode) plans for an AMD arch. Everywhere else those
// kernels run as their ABI twins (our kernels that read AITER's argument structs: sm_90 cubins on
// CUDA, C++ functions on the host), so a call may ask for the plan AITER's code would get on a
// given arch and CU count with the `asm_arch` / `asm_cus` attributes: that plan (row, grid, split,
// packed bytes, memsets, workspace) then runs for real here. On an AMD device asm_arch must be the
// device's own.
//
//   struct SomeOp {
//     static constexpr std::string_view kName = "aiter.some_op";
//     struct Params { ...; Dispatch dispatch; };
//     static Status validate(const Params&);                 // operands, target-independent
//     static int64_t workspace_bytes(const Params&);         // if it has a workspace output
//     using Tiers = std::tuple<SomeAsmTier, SomePortableTier>;
//   };
//   struct SomeAsmTier {                // a tier that chooses (a row, a split, a tile)
//     static constexpr std::string_view kName = "asm";
//     static constexpr bool kRunsAiterCode = true;
//     using Choice = ...;
//     static Decision<Choice> supports(const SomeOp::Params&, const Target&);
//     static void plan(const SomeOp::Params&, const Target&, const Choice&, kernels::Plan&);
//   };
//   struct SomePortableTier {           // a tier with nothing to choose
//     static constexpr std::string_view kName = "portable";
//     static Verdict supports(const SomeOp::Params&, const Target&);
//     static void plan(const SomeOp::Params&, const Target&, kernels::Plan&);
//   };
// supports decides once; plan carries out that decision (it never selects again, and never plans
// a call its tier declined). Both shapes are driven by decide() and plan_with() below, which is
// all the binder and the tools call.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <tuple>
#include <utility>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/core/status.hpp"
#include "jax_aiter/core/verdict.hpp"
#include "jax_aiter/kernels/plan.hpp"

namespace jax_aiter::ops {

// The dispatch attributes every op takes (a struct-like attribute set: see ffi/spec.hpp).
struct Dispatch {
  std::string_view tier = "auto";  // "auto", or the name of one of the op's tiers
  std::string_view asm_arch;       // "" (the device's), "gfx942" or "gfx950"
  int64_t asm_cus = 0;             // 0: the device's, or the arch's flagship part
};

template <typename Op>
inline constexpr size_t kTierCount = std::tuple_size_v<typename Op::Tiers>;

template <typename Op, size_t I>
using TierAt = std::tuple_element_t<I, typename Op::Tiers>;

template <typename Tier>
constexpr bool runs_aiter_code() {
  if constexpr (requires { Tier::kRunsAiterCode; }) {
    return Tier::kRunsAiterCode;
  } else {
    return false;
  }
}

// What a tier decides: its Choice, or NoChoice for a tier with nothing to choose.
template <typename Tier>
struct ChoiceOfTier {
  using type = NoChoice;
};
template <typename Tier>
requires requires { typename Tier::Choice; }
struct ChoiceOfTier<Tier> {
  using type = typename Tier::Choice;
};
template <typename Tier>
using ChoiceOf = typename ChoiceOfTier<Tier>::type;

// The tier's decision for a call on a target.
template <typename Tier, typename P>
constexpr Decision<ChoiceOf<Tier>> decide(const P& p, const Target& t) {
  return Tier::supports(p, t);
}

// The tier's plan of a call it decided to run (`choice` from decide()).
template <typename Tier, typename P>
void plan_with(const P& p, const Target& t, const ChoiceOf<Tier>& choice, kernels::Plan& plan) {
  if constexpr (requires { typename Tier::Choice; }) {
    Tier::plan(p, t, choice, plan);
  } else {
    Tier::plan(p, t, plan);
  }
}

// Decides and, when the tier runs the call, plans it: the verdict either way (tests and tools).
template <typename Tier, typename P>
Verdict decide_and_plan(const P& p, const Target& t, kernels::Plan& plan) {
  const auto d = decide<Tier>(p, t);
  if (d.ok()) plan_with<Tier>(p, t, *d, plan);
  return d.verdict();
}

// Calls fn(std::integral_constant<size_t, I>{}) for each tier in order until it returns true.
template <typename Op, typename Fn>
constexpr void for_each_tier(Fn&& fn) {
  [&]<size_t... I>(std::index_sequence<I...>) {
    (void)(fn(std::integral_constant<size_t, I>{}) || ...);
  }
  (std::make_index_sequence<kTierCount<Op>>{});
}

template <typename Op>
constexpr std::array<std::string_view, kTierCount<Op>> tier_names() {
  std::array<std::string_view, kTierCount<Op>> names{};
  for_each_tier<Op>([&](auto i) {
    names[i] = TierAt<Op, i>::kName;
    return false;
  });
  return names;
}

// The AITER family a tier runs ("" for one that is not a family's): an op may have several "asm"
// tiers, one per family, which errors and plans tell apart by it.
template <typename Tier>
constexpr std::string_view tier_family() {
  if constexpr (requires { Tier::kFamily; }) {
    return Tier::kFamily;
  } else {
    return {};
  }
}

template <typename Op>
constexpr std::array<std::string_view, kTierCount<Op>> tier_families() {
  std::array<std::string_view, kTierCount<Op>> families{};
  for_each_tier<Op>([&](auto i) {
    families[i] = tier_family<TierAt<Op, i>>();
    return false;
  });
  return families;
}

// CUs of the part a plan assumes when asm_cus is not given for an emulated arch: MI300X, MI355X.
constexpr int default_compute_units(Arch a) {
  return a == Arch::kGfx942 ? 304 : a == Arch::kGfx950 ? 256 : 1;
}

// Checks the dispatch attributes against the op's tiers.
template <typename Op>
Status validate_dispatch(const Dispatch& d) {
  const auto names = tier_names<Op>();
  bool known = d.tier == "auto";
  for (std::string_view name : names) known = known || d.tier == name;
  if (!known) {
    std::string expected = "auto";
    for (size_t i = 0; i < names.size(); ++i) {
      bool listed = false;  // several tiers may share a name (one "asm" per AITER family)
      for (size_t j = 0; j < i; ++j) listed = listed || names[j] == names[i];
      if (!listed) expected = StrCat(expected, ", ", names[i]);
    }
    return InvalidArgument(
        StrCat(Op::kName, ": attribute tier: expected one of ", expected, "; got '", d.tier, "'"));
  }
  if (!d.asm_arch.empty() && d.asm_arch != "gfx942" && d.asm_arch != "gfx950") {
    return InvalidArgument(StrCat(
        Op::kName, ": attribute asm_arch: expected gfx942 or gfx950, got '", d.asm_arch, "'"));
  }
  if (d.asm_cus < 0 || d.asm_cus > 4096) {
    return InvalidArgument(
        StrCat(Op::kName, ": attribute asm_cus: expected 0 (default) to 4096, got ", d.asm_cus));
  }
  return {};
}

// The target a tier plans for: the device's, or for AITER's kernels the arch the call asked for.
template <typename Tier>
Expected<Target> tier_target(std::string_view op, const Target& device, const Dispatch& d) {
  if constexpr (!runs_aiter_code<Tier>()) {
    return device;
  } else {
    if (d.asm_arch.empty()) return device;
    const Arch arch = d.asm_arch == "gfx942" ? Arch::kGfx942 : Arch::kGfx950;
    if (device.backend == BackendKind::kHip && arch != device.arch) {
      return InvalidArgument(StrCat(op, ": attribute asm_arch: this device is ", name(device.arch),
                                    "; it cannot run ", d.asm_arch, " code objects"));
    }
    Target t = device;
    t.arch = arch;
    t.compute_units = d.asm_cus > 0         ? static_cast<int>(d.asm_cus)
                      : device.arch == arch ? device.compute_units
                                            : default_compute_units(arch);
    return t;
  }
}

// The tier verdict when a call forces another tier.
inline Verdict not_forced(std::string_view) {
  return Verdict::no("the call forces another tier (attribute tier)");
}

}  // namespace jax_aiter::ops
