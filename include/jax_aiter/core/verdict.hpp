// A tier's answer to "can you run this call?": yes, or why not. Built on the execute path of every
// call (a tier that declines is asked again next call), so it never allocates: the reason is a
// constant with up to three integers, put together as text only when someone reads it (an error
// message, jax-aiter-plan).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

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

}  // namespace jax_aiter
