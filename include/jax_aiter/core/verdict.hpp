// A tier's answer to "can you run this call?": yes, or why not. Built on the execute path of every
// call (a tier that declines is asked again next call), so it never allocates: the reason is a
// constant with up to three integers, put together as text only when someone reads it (an error
// message, jax-aiter-plan).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace jax_aiter {

class Verdict {
 public:
  static constexpr Verdict yes() { return Verdict(); }
  // `why` holds up to three "{}", replaced by a, b and c in order.
  static constexpr Verdict no(std::string_view why, int64_t a = 0, int64_t b = 0, int64_t c = 0) {
    Verdict v;
    v.why_ = why;
    v.values_ = {a, b, c};
    return v;
  }

  constexpr bool ok() const { return why_.empty(); }
  constexpr std::string_view why() const { return why_; }

  std::string text() const {
    std::string out;
    size_t next = 0;
    for (size_t i = 0; i < why_.size(); ++i) {
      if (why_[i] == '{' && i + 1 < why_.size() && why_[i + 1] == '}' && next < values_.size()) {
        out += std::to_string(values_[next++]);
        ++i;
      } else {
        out += why_[i];
      }
    }
    return out;
  }

 private:
  std::string_view why_;
  std::array<int64_t, 3> values_{};
};

// What a tier has nothing to choose with (its plan reads the call alone).
struct NoChoice {};

// A tier's answer with what it decided: yes with the choice its plan carries out (a row, a split),
// or why not. Allocation-free like Verdict; the choice is read only when ok().
template <typename C>
class Decision {
 public:
  constexpr Decision(C choice) : choice_(choice) {}  // NOLINT: implicit, yes with this choice
  // A no; or, for a tier with nothing to choose, a yes. A yes without a choice would leave the plan
  // nothing to carry out, so it reads as a no.
  constexpr Decision(Verdict v)  // NOLINT: implicit
      : verdict_(v.ok() && !std::is_empty_v<C> ? Verdict::no("internal: a yes without a choice")
                                               : v) {}

  constexpr bool ok() const { return verdict_.ok(); }
  constexpr const Verdict& verdict() const { return verdict_; }
  std::string text() const { return verdict_.text(); }
  constexpr const C& operator*() const { return choice_; }
  constexpr const C* operator->() const { return &choice_; }

 private:
  Verdict verdict_;
  C choice_{};
};

}  // namespace jax_aiter
