// What every AITER table row has, and the helpers over it, written once for every family: a row
// names its kernel (`KernelInfo kernel`) and the archs it is built for (`on_gfx942` and
// `on_gfx950`, or one `arch`). The family headers (kernels/aiter/*.hpp) hold only their own facts
// and register their kernels with the catalog through AiterTables.
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <string_view>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/kernels/aiter/catalog.hpp"
#include "jax_aiter/kernels/kernel.hpp"

namespace jax_aiter::kernels {

template <typename Row>
concept AiterRow = requires(const Row& r) {
  { r.kernel } -> std::convertible_to<const KernelInfo&>;
}
&&(
    requires(const Row& r) {
      { r.arch } -> std::convertible_to<Arch>;
    } ||
    requires(const Row& r) {
      { r.on_gfx942 } -> std::convertible_to<bool>;
      { r.on_gfx950 } -> std::convertible_to<bool>;
    });

// Whether the row's kernel is built for arch a.
template <AiterRow Row>
constexpr bool on(const Row& r, Arch a) {
  if constexpr (requires { r.arch; }) {
    return r.arch == a;
  } else {
    return (a == Arch::kGfx942 && r.on_gfx942) || (a == Arch::kGfx950 && r.on_gfx950);
  }
}

// The name AITER's tuned configs use (kernelName, without the arch prefix): the code object's file
// name without ".co" ("bf16gemm/bf16gemm_bf16_tn_256x256.co" -> "bf16gemm_bf16_tn_256x256";
// "fmoe/silu/fmoe_..._32x128.co" -> "fmoe_..._32x128").
constexpr std::string_view short_name(const KernelInfo& k) {
  std::string_view s = k.code_object;
  s.remove_prefix(s.rfind('/') + 1);  // npos + 1 == 0: no folder
  return s.ends_with(".co") ? s.substr(0, s.size() - 3) : s;
}
template <AiterRow Row>
constexpr std::string_view short_name(const Row& r) {
  return short_name(r.kernel);
}

// Whether a caller's `kernel` names the row: by its symbol or its short name.
template <AiterRow Row>
constexpr bool names(const Row& r, std::string_view kernel) {
  return r.kernel.symbol == kernel || short_name(r) == kernel;
}

// The KernelInfo of every row of Tables built for arch A, in table order.
template <Arch A, const auto&... Tables>
constexpr auto kernels_on() {
  constexpr size_t n = [] {
    size_t c = 0;
    (
        [&] {
          for (const auto& r : Tables) c += on(r, A) ? 1 : 0;
        }(),
        ...);
    return c;
  }();
  std::array<const KernelInfo*, n> out{};
  size_t i = 0;
  (
      [&] {
        for (const auto& r : Tables) {
          if (on(r, A)) out[i++] = &r.kernel;
        }
      }(),
      ...);
  return out;
}

// A family's kernels per arch, from its tables; registrar(name) puts them in the catalog (each
// arch that has any), which is how a family header registers itself when it is included:
//   inline const AiterFamilyRegistrar kRegistrar = AiterTables<kAiterBf16GemmRows>::registrar(...);
template <const auto&... Tables>
struct AiterTables {
  static constexpr auto kGfx942 = kernels_on<Arch::kGfx942, Tables...>();
  static constexpr auto kGfx950 = kernels_on<Arch::kGfx950, Tables...>();

  static AiterFamilyRegistrar registrar(std::string_view family) {
    return AiterFamilyRegistrar{AiterFamily{family, "gfx942", kGfx942},
                                AiterFamily{family, "gfx950", kGfx950}};
  }
};

}  // namespace jax_aiter::kernels
