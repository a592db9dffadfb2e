// AITER's tuned-config knobs, the same two for every AITER op (AITER's kernelName and splitK),
// declared once: an op's Params holds `AiterKnobs aiter`, and its FFI spec gets the attributes
// `kernel` and `splitk` from that member (ffi/spec.hpp).
//   kernel  one of the op's AITER family rows, by symbol or short name; "" (the default): the
//           heuristic's choice.
//   splitk  absent (the default): the heuristic's choice; 0 or 1: no K split; 2..16: that many
//           (FP4: 2, 4, 8 or 16, AITER's 2^log2_k_split). Above 16 is refused when the call is
//           validated: AITER clamps a larger splitK to 16, but a config asking for more is an
//           error worth seeing, not a number to quietly change.
// The rule every tier follows: a tier that cannot honour a knob the call sets says no with the
// reason (the next tier that can runs the call, or the call fails listing every tier's reason);
// no tier drops a knob silently. Within 1..16 a tier may still adjust a split as AITER does (the
// BF16 ASM tier runs min(splitk, K / 64), AITER's clamp), which its header says.
#pragma once

#include <cstdint>
#include <iterator>
#include <optional>
#include <string_view>

#include "jax_aiter/core/status.hpp"
#include "jax_aiter/core/verdict.hpp"
#include "jax_aiter/kernels/aiter/row.hpp"

namespace jax_aiter::ops {

struct AiterKnobs {
  std::string_view kernel{};
  std::optional<int64_t> splitk{};

  // The split the call asks for, 0 and 1 both meaning none; nullopt when it asks for none.
  constexpr std::optional<int64_t> split() const {
    if (!splitk) return std::nullopt;
    return *splitk > 1 ? *splitk : 1;
  }
};

inline constexpr int64_t kAiterMaxSplit = 16;

// The knobs, checked before any tier runs (so a misspelt kernel name never lets another tier
// answer instead): `kernel` is "" or a row of the family's table, on any arch (whether the row runs
// on the call's arch is the ASM tier's verdict); `splitk` is 0..16, and a power of two for
// families that take log2 of it (FP4).
template <typename Rows>
Status check_aiter_knobs(std::string_view op, std::string_view family, const Rows& rows,
                         const AiterKnobs& k, bool powers_of_two = false) {
  if (!k.kernel.empty()) {
    bool known = false;
    for (const auto& r : rows) known = known || kernels::names(r, k.kernel);
    if (!known) {
      return InvalidArgument(StrCat(op,
                                    ": attribute kernel: expected \"\" (the heuristic's choice) or "
                                    "one of AITER's ",
                                    family, " kernels by symbol or short name (e.g. ",
                                    kernels::short_name(*std::begin(rows)), "), got '", k.kernel,
                                    "'"));
    }
  }
  if (k.splitk) {
    const int64_t s = *k.splitk;
    if (s < 0 || s > kAiterMaxSplit || (powers_of_two && s > 1 && (s & (s - 1)) != 0)) {
      return InvalidArgument(
          StrCat(op, ": attribute splitk: expected ",
                 powers_of_two ? "0 or 1 (no split), 2, 4, 8 or 16" : "0 or 1 (no split), or 2..16",
                 " (AITER's most is 16; leave it out for the heuristic's choice), got ", s));
    }
  }
  return {};
}

// A portable tier's answer to the knobs: it runs none of AITER's kernels, and splits K at most
// `max_split` ways for this call (1: never).
constexpr Verdict portable_takes_knobs(const AiterKnobs& k, int64_t max_split = 1) {
  if (!k.kernel.empty()) return Verdict::no("the call forces an AITER kernel (attribute kernel)");
  const auto s = k.split();
  if (s && *s > max_split) {
    return max_split <= 1 ? Verdict::no("our kernels for this op do not split K (splitk {})", *s)
                          : Verdict::no("splitk {}: our kernels split this call at most {} ways",
                                        *s, max_split);
  }
  return Verdict::yes();
}

}  // namespace jax_aiter::ops
