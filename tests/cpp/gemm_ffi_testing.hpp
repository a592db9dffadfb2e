// What the GEMM FFI tests (test_ffi_gemm*.cpp, test_ffi_flatmm.cpp) share: the dispatch attributes
// a call is made with (Options, add_dispatch_attrs), the error-message assertion (Fails), the
// tolerance tally of a value check (Mismatches), AITER's (16, 16) weight shuffle, a Tensor over a
// host Array, a plan run step by step on the Host backend, and the arch cases of the ASM tiers.
// Each family's operands and float64 reference stay in its own test file.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/ops/tensor.hpp"
#include "jax_aiter/runtime/host.hpp"
#include "jax_aiter/testing/fake_ffi.hpp"
#include "jax_aiter/testing/host_array.hpp"

namespace jax_aiter::gemm_testing {

// The dispatch attributes of one call. An empty layout is the family's default (see Dispatch).
struct Options {
  std::string kernel;
  int64_t splitk = -1;
  std::string tier = "auto";
  std::string asm_arch;
  int64_t asm_cus = 0;
  std::string layout;

  Options& with_kernel(std::string k, int64_t split = -1) {
    kernel = std::move(k);
    splitk = split;
    return *this;
  }
  Options& with_split(int64_t split) {
    splitk = split;
    return *this;
  }
  Options& with_tier(std::string t) {
    tier = std::move(t);
    return *this;
  }
  Options& for_arch(std::string arch, int64_t cus = 0) {
    asm_arch = std::move(arch);
    asm_cus = cus;
    return *this;
  }
  Options& with_layout(std::string l) {
    layout = std::move(l);
    return *this;
  }
};

// Which dispatch attributes an op takes besides AITER's knobs: its weight-layout attribute (none
// where empty) and that attribute's default value. splitk is written only where a test sets it.
struct Dispatch {
  std::string_view layout_attr;
  std::string_view default_layout;
};

// Appends, in the ops' order: the layout, kernel, splitk, tier; asm_arch and asm_cus where set.
inline void add_dispatch_attrs(jax_aiter::testing::CallFrame& f, const Options& o,
                               const Dispatch& d) {
  if (!d.layout_attr.empty()) {
    f.string_attr(std::string(d.layout_attr),
                  o.layout.empty() ? std::string(d.default_layout) : o.layout);
  }
  f.string_attr("kernel", o.kernel);
  if (o.splitk != -1) f.attr("splitk", o.splitk);  // -1: left out (the heuristic's choice)
  f.string_attr("tier", o.tier);
  if (!o.asm_arch.empty()) f.string_attr("asm_arch", o.asm_arch);
  if (o.asm_cus) f.attr("asm_cus", o.asm_cus);
}

// The call failed, and its message holds every part.
inline ::testing::AssertionResult Fails(const jax_aiter::testing::CallResult& r,
                                        std::initializer_list<std::string_view> parts) {
  if (r.ok()) return ::testing::AssertionFailure() << "expected an error, got OK";
  for (std::string_view p : parts) {
    if (r.message.find(p) == std::string::npos) {
      return ::testing::AssertionFailure() << "message lacks \"" << p << "\": " << r.message;
    }
  }
  return ::testing::AssertionSuccess() << r.message;
}

// The outputs out of tolerance, counted, the first one named.
class Mismatches {
 public:
  // |got - ref| <= bound, or counted (a NaN got counts).
  void expect_near(int64_t r, int64_t c, double got, double ref, double bound) {
    if (!(std::abs(got - ref) <= bound) && bad_++ == 0) {
      first_ = "(" + std::to_string(r) + ", " + std::to_string(c) + "): got " +
               std::to_string(got) + ", want " + std::to_string(ref);
    }
  }
  ::testing::AssertionResult result(int64_t outputs) const {
    if (bad_ == 0) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << bad_ << " of " << outputs << " outputs out of tolerance, first " << first_;
  }

 private:
  int64_t bad_ = 0;
  std::string first_;
};

struct Shape {
  int64_t m, n, k;
};

// AITER's shuffle_weight(w, layout=(16, 16)) for a 1-byte dtype on bytes [N, K], written as its
// view/permute: w[N/16, 16, K/32, 2, 16] -> [N/16, K/32, 2, 16, 16].
inline std::vector<unsigned char> shuffle_16x16(const std::vector<unsigned char>& w, int64_t n,
                                                int64_t k) {
  std::vector<unsigned char> out(w.size());
  size_t i = 0;
  for (int64_t n0 = 0; n0 < n / 16; ++n0) {
    for (int64_t k0 = 0; k0 < k / 32; ++k0) {
      for (int64_t h = 0; h < 2; ++h) {
        for (int64_t r = 0; r < 16; ++r) {
          for (int64_t e = 0; e < 16; ++e) out[i++] = w[(n0 * 16 + r) * k + k0 * 32 + h * 16 + e];
        }
      }
    }
  }
  return out;
}

// An ops::Tensor over a host array.
inline ops::Tensor tensor(jax_aiter::testing::Array& arr) {
  ops::Tensor t;
  t.data = arr.data();
  t.dtype = arr.dtype;
  t.rank = static_cast<int>(arr.dims.size());
  for (int i = 0; i < t.rank; ++i) t.dims[i] = arr.dims[i];
  return t;
}

// Runs a plan's steps by hand on the Host backend, memsets included.
inline ::testing::AssertionResult run_on_host(const kernels::Plan& plan) {
  for (const auto& step : plan.view()) {
    if (step.kind == kernels::Step::Kind::kMemset) {
      if (!runtime::Host::memset(0, nullptr, step.memset).ok()) {
        return ::testing::AssertionFailure() << "memset " << step.memset.what << " failed";
      }
    } else {
      const auto& k = runtime::Host::resolve(0, *step.launch.kernel);
      if (!k.status.ok()) return ::testing::AssertionFailure() << "resolve failed";
      if (!runtime::Host::launch(0, nullptr, k, step.launch).ok()) {
        return ::testing::AssertionFailure() << "launch failed";
      }
    }
  }
  return ::testing::AssertionSuccess();
}

// The archs the ASM tiers run on, with their compute units.
struct ArchCase {
  const char* arch;
  int cus;
};
constexpr ArchCase kArchs[] = {{"gfx942", 304}, {"gfx950", 256}};

inline Arch arch_of(const ArchCase& a) {
  return std::string_view(a.arch) == "gfx942" ? Arch::kGfx942 : Arch::kGfx950;
}

}  // namespace jax_aiter::gemm_testing
