// How an op meets XLA, declared once: its operands in call order (name, kind, the Params member
// each fills) and its attributes (name, type, required, the Params member each fills). Decoding,
// dtype/shape checks, every error message and the tools (jax-aiter-plan, the workspace query, the
// operand list Python reads) all come from these two lists.
//
//   template <> struct FfiSpec<ops::Gemm> {
//     using P = ops::Gemm::Params;
//     static constexpr std::array operands{input("a", &P::a), input("b", &P::b),
//                                          optional_input("bias", &P::bias),
//                                          output("out", &P::out), workspace(&P::workspace)};
//     static constexpr std::array attributes{attr<&P::splitk>("splitk")};
//   };
//
// Every op also takes the dispatch attributes (ops/dispatch.hpp): tier, asm_arch, asm_cus, a
// struct-like set that fills Params::dispatch. An AITER op (Params::aiter, ops/aiter_knobs.hpp)
// takes AITER's knobs too: kernel and splitk (absent: the heuristic's choice), declared here once.
//
// Conventions at the XLA boundary:
//  - an optional input that is absent is passed as a u8[0] buffer (kAbsent; Python's ffi helper
//    does this), since XLA custom calls have no empty operand slot;
//  - attributes are looked up by name; one not declared is an error (a typo must not be ignored);
//    a float accepts F32 or F64 (a Python float is F64), an integer S32 or S64; an enum member
//    (its namespace declaring `attr_names(E)`, the names of values 0, 1, ...) a string naming one
//    of its values, any other string being an error that lists them;
//  - the workspace, if any, is the last result: a u8 buffer of at least Op::workspace_bytes.
#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "jax_aiter/core/status.hpp"
#include "jax_aiter/ops/aiter_knobs.hpp"
#include "jax_aiter/ops/dispatch.hpp"
#include "jax_aiter/ops/tensor.hpp"

namespace jax_aiter::ffi {

template <typename Op>
struct FfiSpec;  // specialised per op in ffi/<op>.hpp

enum class OperandKind : uint8_t { kInput, kOptionalInput, kOutput, kWorkspace };

constexpr std::string_view name(OperandKind k) {
  switch (k) {
    case OperandKind::kInput: return "input";
    case OperandKind::kOptionalInput: return "optional_input";
    case OperandKind::kOutput: return "output";
    case OperandKind::kWorkspace: return "workspace";
  }
  return "?";
}

template <typename P>
struct OperandSpec {
  std::string_view name;
  OperandKind kind;
  ops::Tensor P::*tensor = nullptr;                   // every kind but kOptionalInput
  std::optional<ops::Tensor> P::*optional = nullptr;  // kOptionalInput

  constexpr bool is_input() const {
    return kind == OperandKind::kInput || kind == OperandKind::kOptionalInput;
  }
  void assign(P& p, const ops::Tensor& t) const {
    if (kind == OperandKind::kOptionalInput) {
      p.*optional = is_absent(t) ? std::nullopt : std::optional<ops::Tensor>(t);
    } else {
      p.*tensor = t;
    }
  }
  // How an absent optional operand arrives.
  static constexpr bool is_absent(const ops::Tensor& t) {
    return t.dtype == DType::kU8 && t.rank == 1 && t.dims[0] == 0;
  }
};

template <typename P>
constexpr OperandSpec<P> input(std::string_view name, ops::Tensor P::*member) {
  return {name, OperandKind::kInput, member, nullptr};
}
template <typename P>
constexpr OperandSpec<P> optional_input(std::string_view name,
                                        std::optional<ops::Tensor> P::*member) {
  return {name, OperandKind::kOptionalInput, nullptr, member};
}
template <typename P>
constexpr OperandSpec<P> output(std::string_view name, ops::Tensor P::*member) {
  return {name, OperandKind::kOutput, member, nullptr};
}
template <typename P>
constexpr OperandSpec<P> workspace(ops::Tensor P::*member) {
  return {"workspace", OperandKind::kWorkspace, member, nullptr};
}

// ---- attributes ---------------------------------------------------------------------------------

enum class AttrType : uint8_t { kF32, kI64, kBool, kString, kOther };

constexpr std::string_view name(AttrType t) {
  switch (t) {
    case AttrType::kF32: return "f32 (F32 or F64)";
    case AttrType::kI64: return "integer (S32 or S64)";
    case AttrType::kBool: return "bool (PRED)";
    case AttrType::kString: return "string";
    case AttrType::kOther: return "other";
  }
  return "?";
}

// One decoded attribute value, from XLA or from a tool's call description; `arrived` names what
// the source had (XLA's type, e.g. "F64"), for error messages.
struct AttrValue {
  AttrType type = AttrType::kOther;
  std::string_view arrived;
  double number = 0;
  int64_t integer = 0;
  bool flag = false;
  std::string_view text;

  static AttrValue f32(std::string_view arrived, double v) {
    AttrValue a;
    a.type = AttrType::kF32;
    a.arrived = arrived;
    a.number = v;
    return a;
  }
  static AttrValue i64(std::string_view arrived, int64_t v) {
    AttrValue a;
    a.type = AttrType::kI64;
    a.arrived = arrived;
    a.integer = v;
    return a;
  }
  static AttrValue boolean(std::string_view arrived, bool v) {
    AttrValue a;
    a.type = AttrType::kBool;
    a.arrived = arrived;
    a.flag = v;
    return a;
  }
  static AttrValue string(std::string_view arrived, std::string_view v) {
    AttrValue a;
    a.type = AttrType::kString;
    a.arrived = arrived;
    a.text = v;
    return a;
  }
  static AttrValue other(std::string_view arrived) {
    AttrValue a;
    a.arrived = arrived;
    return a;
  }
};

template <typename P>
struct AttrSpec {
  std::string_view name;
  AttrType type;
  bool required;
  // Stores the value (of `type`) in the member; an error (without the op's and attribute's names,
  // which the caller adds) for a value the member cannot take: an enum's unknown name.
  Status (*set)(P&, const AttrValue&);
};

namespace spec_detail {

template <typename M>
struct MemberOf;
template <typename C, typename T>
struct MemberOf<T C::*> {
  using Class = C;
  using Type = T;
};

// An enum whose namespace names its values for attributes:
//   constexpr std::span<const std::string_view> attr_names(E) (value i is named names[i]).
template <typename T>
concept NamedEnum = std::is_enum_v<T> && requires(T e) {
  { attr_names(e) } -> std::convertible_to<std::span<const std::string_view>>;
};

template <typename T>
constexpr AttrType attr_type() {
  if constexpr (NamedEnum<T>) {
    return AttrType::kString;
  } else if constexpr (std::is_same_v<T, float>) {
    return AttrType::kF32;
  } else if constexpr (std::is_same_v<T, bool>) {
    return AttrType::kBool;
  } else if constexpr (std::is_same_v<T, std::string_view>) {
    return AttrType::kString;
  } else if constexpr (std::is_same_v<T, std::optional<int64_t>>) {
    return AttrType::kI64;  // absent unless the call sets it
  } else {
    static_assert(std::is_same_v<T, int64_t>,
                  "attributes are float, int64_t, bool, string_view or a named enum");
    return AttrType::kI64;
  }
}

template <typename T>
Status store(T& out, const AttrValue& v) {
  if constexpr (NamedEnum<T>) {
    const std::span<const std::string_view> names = attr_names(T{});
    std::string expected;
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == v.text) {
        out = static_cast<T>(i);
        return {};
      }
      expected = StrCat(expected,
                        i == 0                  ? ""
                        : i + 1 == names.size() ? " or "
                                                : ", ",
                        "'", names[i], "'");
    }
    return InvalidArgument(StrCat("expected ", expected, ", got '", v.text, "'"));
  } else if constexpr (std::is_same_v<T, float>) {
    out = static_cast<float>(v.number);
  } else if constexpr (std::is_same_v<T, bool>) {
    out = v.flag;
  } else if constexpr (std::is_same_v<T, std::string_view>) {
    out = v.text;
  } else if constexpr (std::is_same_v<T, std::optional<int64_t>>) {
    out = v.integer;
  } else {
    out = v.integer;
  }
  return {};
}

}  // namespace spec_detail

inline constexpr bool kRequired = true;

// An attribute filling Params member `Member`.
template <auto Member>
constexpr auto attr(std::string_view name, bool required = false) {
  using M = spec_detail::MemberOf<decltype(Member)>;
  using P = typename M::Class;
  return AttrSpec<P>{name, spec_detail::attr_type<typename M::Type>(), required,
                     [](P& p, const AttrValue& v) { return spec_detail::store(p.*Member, v); }};
}

// An attribute filling member `Inner` of the struct member `Outer` (a struct-like attribute set).
template <auto Outer, auto Inner>
constexpr auto attr_in(std::string_view name, bool required = false) {
  using P = typename spec_detail::MemberOf<decltype(Outer)>::Class;
  using T = typename spec_detail::MemberOf<decltype(Inner)>::Type;
  return AttrSpec<P>{name, spec_detail::attr_type<T>(), required, [](P& p, const AttrValue& v) {
                       return spec_detail::store((p.*Outer).*Inner, v);
                     }};
}

// The dispatch attributes every op takes.
template <typename P>
constexpr std::array<AttrSpec<P>, 3> dispatch_attributes() {
  return {attr_in<&P::dispatch, &ops::Dispatch::tier>("tier"),
          attr_in<&P::dispatch, &ops::Dispatch::asm_arch>("asm_arch"),
          attr_in<&P::dispatch, &ops::Dispatch::asm_cus>("asm_cus")};
}

// AITER's knobs, for an op whose Params holds them (none otherwise).
template <typename P>
constexpr auto aiter_knob_attributes() {
  if constexpr (requires { &P::aiter; }) {
    return std::array<AttrSpec<P>, 2>{attr_in<&P::aiter, &ops::AiterKnobs::kernel>("kernel"),
                                      attr_in<&P::aiter, &ops::AiterKnobs::splitk>("splitk")};
  } else {
    return std::array<AttrSpec<P>, 0>{};
  }
}

// ---- the whole list, and decoding from any source
// ------------------------------------------------

template <typename Op>
struct Spec {
  using P = typename Op::Params;
  static constexpr auto kOperands = FfiSpec<Op>::operands;
  static constexpr auto kAttributes = [] {
    constexpr auto own = FfiSpec<Op>::attributes;
    constexpr auto knobs = aiter_knob_attributes<P>();
    constexpr auto dispatch = dispatch_attributes<P>();
    std::array<AttrSpec<P>, own.size() + knobs.size() + dispatch.size()> all{};
    size_t n = 0;
    for (const auto& a : own) all[n++] = a;
    for (const auto& a : knobs) all[n++] = a;
    for (const auto& a : dispatch) all[n++] = a;
    return all;
  }();

  static constexpr size_t count(bool inputs) {
    size_t n = 0;
    for (const auto& o : kOperands) n += o.is_input() == inputs ? 1 : 0;
    return n;
  }
  static constexpr size_t kInputs = count(true);
  static constexpr size_t kResults = count(false);
  static constexpr bool kHasWorkspace = [] {
    for (const auto& o : kOperands) {
      if (o.kind == OperandKind::kWorkspace) return true;
    }
    return false;
  }();

  // "x, gamma" (inputs) or "y" (results), for error messages.
  static std::string names(bool inputs) {
    std::string out;
    for (const auto& o : kOperands) {
      if (o.is_input() != inputs) continue;
      out = out.empty() ? std::string(o.name) : StrCat(out, ", ", o.name);
    }
    return out;
  }
  static std::string attribute_names() {
    std::string out;
    for (const auto& a : kAttributes) {
      out = out.empty() ? std::string(a.name) : StrCat(out, ", ", a.name);
    }
    return out;
  }

  static const AttrSpec<P>* find_attribute(std::string_view name) {
    for (const auto& a : kAttributes) {
      if (a.name == name) return &a;
    }
    return nullptr;
  }

  // Decodes from a source with:
  //   size_t inputs(), results()
  //   Expected<ops::Tensor> input(i, name), result(i, name)
  //   Status attributes(visit(name, AttrValue)) and bool has_attribute(name)
  // so XLA's call frame and a tool's call description decode by the same rules.
  template <typename Source>
  static Expected<P> decode(const Source& src) {
    P p{};
    if (src.inputs() != kInputs) {
      return InvalidArgument(StrCat(Op::kName, ": expected ", kInputs,
                                    kInputs == 1 ? " operand (" : " operands (", names(true),
                                    "), got ", src.inputs()));
    }
    if (src.results() != kResults) {
      return InvalidArgument(StrCat(Op::kName, ": expected ", kResults,
                                    kResults == 1 ? " result (" : " results (", names(false),
                                    "), got ", src.results()));
    }
    size_t in = 0, out = 0;
    for (const auto& o : kOperands) {
      auto t = o.is_input() ? src.input(in++, o.name) : src.result(out++, o.name);
      if (!t) return t.status();
      o.assign(p, *t);
    }
    JAX_AITER_RETURN_IF_ERROR(src.attributes([&](std::string_view name, const AttrValue& v) {
      const AttrSpec<P>* a = find_attribute(name);
      if (a == nullptr) {
        return InvalidArgument(StrCat(Op::kName, ": unknown attribute '", name,
                                      "' (this op takes: ", attribute_names(), ")"));
      }
      if (a->type != v.type) {
        return InvalidArgument(StrCat(Op::kName, ": attribute ", name, ": expected ",
                                      ffi::name(a->type), ", got ", v.arrived));
      }
      if (Status s = a->set(p, v); !s.ok()) {
        return InvalidArgument(StrCat(Op::kName, ": attribute ", name, ": ", s.message()));
      }
      return Status();
    }));
    for (const auto& a : kAttributes) {
      if (a.required && !src.has_attribute(a.name)) {
        return InvalidArgument(
            StrCat(Op::kName, ": attribute ", a.name, ": missing (", ffi::name(a.type), ")"));
      }
    }
    return p;
  }
};

}  // namespace jax_aiter::ffi
