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
#include <string>
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

// An AITER family's name and rows, for the knobs' check: AiterRowsOf{"i8gemm", kAiterI8GemmRows}.
template <typename Rows>
struct AiterRowsOf {
  std::string_view family;
  const Rows& rows;
};
template <typename Rows>
AiterRowsOf(std::string_view, const Rows&) -> AiterRowsOf<Rows>;

// The knobs, checked before any tier runs (so a misspelt kernel name never lets another tier
// answer instead): `kernel` is "" or a row of one of the op's families' tables, on any arch
// (whether the row runs on the call's arch is the ASM tier's verdict); `splitk` is 0..16, and a
// power of two for families that take log2 of it (FP4).
template <typename... Rows>
Status check_aiter_knobs(std::string_view op, const AiterKnobs& k, bool powers_of_two,
                         const AiterRowsOf<Rows>&... families) {
  if (!k.kernel.empty()) {
    bool known = false;
    (
        [&] {
          for (const auto& r : families.rows) known = known || kernels::names(r, k.kernel);
        }(),
        ...);
    if (!known) {
      // "AITER's i8gemm kernels by symbol or short name (e.g. ...)", or for several families
      // "AITER's kernels by symbol or short name: fp8gemm_blockscale kernels (e.g. ...), ...".
      std::string which;
      size_t i = 0;
      (
          [&] {
            const std::string example =
                StrCat(" (e.g. ", kernels::short_name(*std::begin(families.rows)), ")");
            which = sizeof...(Rows) == 1
                        ? StrCat(families.family, " kernels by symbol or short name", example)
                        : StrCat(which,
                                 i == 0                     ? "kernels by symbol or short name: "
                                 : i + 1 == sizeof...(Rows) ? " or "
                                                            : ", ",
                                 families.family, " kernels", example);
            ++i;
          }(),
          ...);
      return InvalidArgument(StrCat(op,
                                    ": attribute kernel: expected \"\" (the heuristic's choice) or "
                                    "one of AITER's ",
                                    which, ", got '", k.kernel, "'"));
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

// The knobs of an op with one AITER family.
template <typename Rows>
Status check_aiter_knobs(std::string_view op, std::string_view family, const Rows& rows,
                         const AiterKnobs& k, bool powers_of_two = false) {
  return check_aiter_knobs(op, k, powers_of_two, AiterRowsOf{family, rows});
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
