// What the tools ask of an op, with no GPU and no XLA: its operand and attribute lists (which
// Python reads to order its operands), the size of its workspace for a call (which Python needs
// at trace time), and the plan of a call on a given target, every tier's verdict and the packed
// argument struct field by field (jax-aiter-plan). A call is described in JSON:
//
//   {"operands": {"a": {"dtype": "bf16", "shape": [4096, 4096]}, "bias": null, ...},
//    "attributes": {"splitk": -1, "tier": "asm"}}
//
// and decoded by the same Spec<Op> rules as a call from XLA. Operands get distinct made-up
// addresses (4 GiB apart, so every alignment-dependent choice sees aligned data); pointers in the
// printed arguments name the operand or workspace piece they point into.
#pragma once

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/core/status.hpp"
#include "jax_aiter/ffi/json.hpp"
#include "jax_aiter/ffi/spec.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/ops/dispatch.hpp"

namespace jax_aiter::ffi {

// The device a plan is made for, as jax-aiter-plan's --arch and --cus give it (0 to 4096 CUs,
// as the asm_cus attribute; 0: the arch's usual part).
inline Expected<Target> plan_target(std::string_view arch, int64_t compute_units) {
  if (compute_units < 0 || compute_units > 4096) {
    return InvalidArgument(
        StrCat("jax_aiter: plan: compute units: expected 0 (the arch's usual "
               "part) to 4096, got ",
               compute_units));
  }
  Target t;
  if (arch == "gfx942" || arch == "gfx950") {
    t.backend = BackendKind::kHip;
    t.arch = arch == "gfx942" ? Arch::kGfx942 : Arch::kGfx950;
    t.l2_bytes = int64_t{4} << 20;  // MI300X / MI355X: 4 MiB of L2 per XCD
  } else if (arch == "sm_90") {
    t.backend = BackendKind::kCuda;
    t.arch = Arch::kSm90;
    t.l2_bytes = int64_t{50} << 20;  // H100
  } else if (arch == "host") {
    t.backend = BackendKind::kHost;
    t.arch = Arch::kHost;
  } else {
    return InvalidArgument(
        StrCat("jax_aiter: unknown arch '", arch, "' (gfx942, gfx950, sm_90 or host)"));
  }
  t.compute_units = compute_units > 0       ? static_cast<int>(compute_units)
                    : t.arch == Arch::kSm90 ? 132
                                            : ops::default_compute_units(t.arch);
  return t;
}

namespace describe_detail {

inline constexpr uint64_t kAddressStride = uint64_t{1} << 32;

inline std::optional<DType> dtype_named(std::string_view s) {
  for (const DTypeInfo& d : kDTypes) {
    if (d.name == s) return d.dtype;
  }
  return std::nullopt;
}

// A call described in JSON, for Spec<Op>::decode. A workspace the description omits is empty.
template <typename Op>
class JsonCall {
 public:
  using S = Spec<Op>;

  static Expected<JsonCall> parse(std::string_view text) {
    auto doc = parse_json(text);
    if (!doc) return doc.status();
    JsonCall c;
    c.doc_ = std::move(*doc);
    const Json* operands = c.doc_.get("operands");
    if (c.doc_.type != Json::Type::kObject || operands == nullptr ||
        operands->type != Json::Type::kObject) {
      return InvalidArgument(StrCat(Op::kName,
                                    ": call description: expected {\"operands\": {...}, "
                                    "\"attributes\": {...}}"));
    }
    for (const auto& [name, _] : operands->members) {
      bool known = false;
      for (const auto& o : S::kOperands) known = known || o.name == name;
      if (!known) {
        return InvalidArgument(StrCat(Op::kName, ": call description: unknown operand '", name,
                                      "' (this op has: ", S::names(true), "; ", S::names(false),
                                      ")"));
      }
    }
    size_t index = 0;
    for (const auto& o : S::kOperands) {
      auto t = c.tensor(o, index++);
      if (!t) return t.status();
      (o.is_input() ? c.inputs_ : c.results_).push_back(*t);
    }
    return c;
  }

  size_t inputs() const { return inputs_.size(); }
  size_t results() const { return results_.size(); }
  Expected<ops::Tensor> input(size_t i, std::string_view) const { return inputs_[i]; }
  Expected<ops::Tensor> result(size_t i, std::string_view) const { return results_[i]; }

  template <typename Visit>
  Status attributes(Visit&& visit) const {
    const Json* attrs = doc_.get("attributes");
    if (attrs == nullptr) return {};
    if (attrs->type != Json::Type::kObject) {
      return InvalidArgument(StrCat(Op::kName, ": call description: attributes is not an object"));
    }
    for (const auto& [name, v] : attrs->members) {
      AttrValue a = AttrValue::other("null or a container");
      if (v.type == Json::Type::kNumber) {
        // An integer is a fine value for a float attribute (epsilon: 0).
        const AttrSpec<typename Op::Params>* spec = S::find_attribute(name);
        const bool as_float = !v.integral || (spec && spec->type == AttrType::kF32);
        a = as_float ? AttrValue::f32("a number", v.number)
                     : AttrValue::i64("an integer", static_cast<int64_t>(v.number));
      } else if (v.type == Json::Type::kBool) {
        a = AttrValue::boolean("a bool", v.flag);
      } else if (v.type == Json::Type::kString) {
        a = AttrValue::string("a string", v.text);
      }
      JAX_AITER_RETURN_IF_ERROR(visit(name, a));
    }
    return {};
  }
  bool has_attribute(std::string_view name) const {
    const Json* attrs = doc_.get("attributes");
    return attrs != nullptr && attrs->get(name) != nullptr;
  }

  // Operand names and their made-up address ranges, for naming pointers.
  struct Range {
    std::string_view name;
    uint64_t begin, bytes;
  };
  std::vector<Range> ranges() const {
    std::vector<Range> out;
    size_t in = 0, res = 0;
    for (const auto& o : S::kOperands) {
      const ops::Tensor& t = o.is_input() ? inputs_[in++] : results_[res++];
      if (t.data != nullptr) {
        out.push_back(
            {o.name, reinterpret_cast<uint64_t>(t.data), static_cast<uint64_t>(t.bytes())});
      }
    }
    return out;
  }

 private:
  Expected<ops::Tensor> tensor(const OperandSpec<typename Op::Params>& o, size_t index) const {
    ops::Tensor t;
    t.data = reinterpret_cast<void*>((index + 1) * kAddressStride);
    const Json* d = doc_.get("operands")->get(o.name);
    if (d == nullptr || d->type == Json::Type::kNull) {
      if (o.kind == OperandKind::kOptionalInput || o.kind == OperandKind::kWorkspace) {
        t.data = o.kind == OperandKind::kWorkspace ? t.data : nullptr;
        t.dtype = DType::kU8;
        t.rank = 1;
        t.dims[0] = 0;
        return t;
      }
      return InvalidArgument(StrCat(Op::kName, ": call description: operand ", o.name,
                                    " is missing (it is not optional)"));
    }
    const Json* dtype = d->get("dtype");
    const Json* shape = d->get("shape");
    if (dtype == nullptr || dtype->type != Json::Type::kString || shape == nullptr ||
        shape->type != Json::Type::kArray) {
      return InvalidArgument(StrCat(Op::kName, ": call description: operand ", o.name,
                                    ": expected {\"dtype\": \"bf16\", \"shape\": [...]}"));
    }
    const auto dt = dtype_named(dtype->text);
    if (!dt) {
      return InvalidArgument(StrCat(Op::kName, ": call description: operand ", o.name,
                                    ": unknown dtype '", dtype->text, "'"));
    }
    if (shape->items.size() > static_cast<size_t>(ops::kMaxRank)) {
      return InvalidArgument(StrCat(Op::kName, ": call description: operand ", o.name,
                                    ": rank above ", ops::kMaxRank));
    }
    t.dtype = *dt;
    t.rank = static_cast<int>(shape->items.size());
    // Every dimension and the operand's byte size must fit int64 exactly (below 2^53, where the
    // JSON number is still exact): sizes past that would wrap in every product taken later.
    constexpr double kMaxDim = 9007199254740992.0;  // 2^53
    double bytes = static_cast<double>(size_bytes(t.dtype));
    for (int i = 0; i < t.rank; ++i) {
      const Json& dim = shape->items[i];
      if (dim.type != Json::Type::kNumber || !dim.integral || dim.number < 0) {
        return InvalidArgument(StrCat(Op::kName, ": call description: operand ", o.name,
                                      ": dimensions are integers >= 0"));
      }
      if (dim.number >= kMaxDim) {
        return InvalidArgument(StrCat(Op::kName, ": call description: operand ", o.name,
                                      ": dimension ", i, " is too large (at most 2^53 - 1)"));
      }
      t.dims[i] = static_cast<int64_t>(dim.number);
      bytes *= dim.number;
    }
    if (bytes >= kMaxDim) {
      return InvalidArgument(StrCat(Op::kName, ": call description: operand ", o.name, " (",
                                    ops::describe(t), ") is too large: its size overflows"));
    }
    return t;
  }

  Json doc_;
  std::vector<ops::Tensor> inputs_, results_;
};

inline std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

}  // namespace describe_detail

// {"target": ..., "operands": [{"name", "kind"}...], "attributes": [{"name", "type", ...}],
//  "tiers": [...]}: what Python reads to call the op.
template <typename Op>
std::string spec_json() {
  using S = Spec<Op>;
  std::string out = StrCat("{\"target\": ", json_quote(Op::kName), ", \"operands\": [");
  for (size_t i = 0; i < S::kOperands.size(); ++i) {
    out = StrCat(out, i ? ", " : "", "{\"name\": ", json_quote(S::kOperands[i].name),
                 ", \"kind\": ", json_quote(name(S::kOperands[i].kind)), "}");
  }
  out += "], \"attributes\": [";
  for (size_t i = 0; i < S::kAttributes.size(); ++i) {
    const auto& a = S::kAttributes[i];
    std::string_view type = a.type == AttrType::kF32    ? "f32"
                            : a.type == AttrType::kI64  ? "i64"
                            : a.type == AttrType::kBool ? "bool"
                                                        : "string";
    out = StrCat(out, i ? ", " : "", "{\"name\": ", json_quote(a.name),
                 ", \"type\": ", json_quote(type),
                 ", \"required\": ", a.required ? "true" : "false", "}");
  }
  out += "], \"tiers\": [";
  const auto tiers = ops::tier_names<Op>();
  for (size_t i = 0; i < tiers.size(); ++i) out = StrCat(out, i ? ", " : "", json_quote(tiers[i]));
  return out + "]}";
}

// The workspace bytes a call needs (0 for an op without one), sized before any device is known.
template <typename Op>
Expected<int64_t> workspace_bytes_of(std::string_view call_json) {
  auto call = describe_detail::JsonCall<Op>::parse(call_json);
  if (!call) return call.status();
  auto p = Spec<Op>::decode(*call);
  if (!p) return p.status();
  JAX_AITER_RETURN_IF_ERROR(Op::validate(*p));
  if constexpr (Spec<Op>::kHasWorkspace) {
    return Op::workspace_bytes(*p);
  } else {
    return int64_t{0};
  }
}

// Whether a call is valid (as Op::validate and the dispatch attributes judge it) and has work to
// do: true, or false for a valid empty problem (ops/tensor.hpp's kEmptyProblem), which a caller
// answers itself. Any other failure is the error.
template <typename Op>
Expected<bool> validate_call(std::string_view call_json) {
  auto call = describe_detail::JsonCall<Op>::parse(call_json);
  if (!call) return call.status();
  auto p = Spec<Op>::decode(*call);
  if (!p) return p.status();
  const Status st = Op::validate(*p);
  if (!st.ok() && st.code() != ops::kEmptyProblem) return st;
  JAX_AITER_RETURN_IF_ERROR(ops::validate_dispatch<Op>(p->dispatch));
  return st.ok();
}

namespace describe_detail {

template <typename Ranges>
std::string pointer_name(uint64_t v, const Ranges& ranges, const kernels::Plan& plan) {
  if (v == 0) return "null";
  for (const auto& piece : plan.workspace.view()) {
    const uint64_t begin = reinterpret_cast<uint64_t>(plan.workspace_base) + piece.offset;
    if (plan.workspace_base != nullptr && v >= begin &&
        v < begin + std::max<int64_t>(piece.bytes, 1)) {
      return v == begin ? StrCat("workspace.", piece.name)
                        : StrCat("workspace.", piece.name, "+", v - begin);
    }
  }
  for (const auto& r : ranges) {
    if (v >= r.begin && v < r.begin + std::max<uint64_t>(r.bytes, 1)) {
      return v == r.begin ? std::string(r.name) : StrCat(r.name, "+", v - r.begin);
    }
  }
  return hex(v);
}

inline std::string field_value(const kernels::ArgField& f, const kernels::KernelArgs& args,
                               const std::string& pointer) {
  const std::byte* at = args.bytes.data() + f.offset;
  switch (f.kind) {
    case kernels::ArgKind::kPointer: return json_quote(pointer);
    case kernels::ArgKind::kF32: {
      float v;
      std::memcpy(&v, at, 4);
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
      return std::isfinite(v) ? std::string(buf) : json_quote(buf);
    }
    case kernels::ArgKind::kI32: {
      int32_t v;
      std::memcpy(&v, at, 4);
      return std::to_string(v);
    }
    case kernels::ArgKind::kU32: {
      uint32_t v;
      std::memcpy(&v, at, 4);
      return std::to_string(v);
    }
    case kernels::ArgKind::kI64: {
      int64_t v;
      std::memcpy(&v, at, 8);
      return std::to_string(v);
    }
    case kernels::ArgKind::kU64: {
      uint64_t v;
      std::memcpy(&v, at, 8);
      return std::to_string(v);
    }
  }
  return "null";
}

template <typename Ranges>
std::string plan_json(const kernels::Plan& plan, const Ranges& ranges) {
  std::string out =
      "{\"workspace\": {\"bytes\": " + std::to_string(plan.workspace.total) + ", \"pieces\": [";
  for (size_t i = 0; i < plan.workspace.count; ++i) {
    const auto& p = plan.workspace.pieces[i];
    out = StrCat(out, i ? ", " : "", "{\"name\": ", json_quote(p.name), ", \"offset\": ", p.offset,
                 ", \"bytes\": ", p.bytes, "}");
  }
  out += "]}, \"notes\": {";
  for (size_t i = 0; i < plan.note_count; ++i) {
    out = StrCat(out, i ? ", " : "", json_quote(plan.notes[i].name), ": ", plan.notes[i].value);
  }
  out += "}, \"steps\": [";
  for (size_t s = 0; s < plan.count; ++s) {
    const kernels::Step& step = plan.steps[s];
    if (s) out += ", ";
    if (step.kind == kernels::Step::Kind::kMemset) {
      const auto& m = step.memset;
      out = StrCat(out, "{\"memset\": {\"what\": ", json_quote(m.what), ", \"dst\": ",
                   json_quote(pointer_name(reinterpret_cast<uint64_t>(m.dst), ranges, plan)),
                   ", \"bytes\": ", m.bytes, ", \"value\": ", m.value, "}}");
      continue;
    }
    const auto& l = step.launch;
    out = StrCat(out, "{\"launch\": {\"code_object\": ", json_quote(l.kernel->code_object),
                 ", \"symbol\": ", json_quote(l.kernel->symbol), ", \"grid\": [", l.grid.x, ", ",
                 l.grid.y, ", ", l.grid.z, "], \"block\": [", l.block.x, ", ", l.block.y, ", ",
                 l.block.z, "], \"shared_bytes\": ", l.shared_bytes,
                 ", \"fill_device\": ", l.fill_device ? "true" : "false",
                 ", \"cluster\": ", int{l.cluster}, ", \"args_bytes\": ", l.args.size,
                 ", \"args\": [");
    for (size_t i = 0; i < l.kernel->fields.size(); ++i) {
      const kernels::ArgField& f = l.kernel->fields[i];
      uint64_t raw = 0;
      std::memcpy(&raw, l.args.bytes.data() + f.offset, f.size <= 8 ? f.size : 8);
      out = StrCat(out, i ? ", " : "", "{\"name\": ", json_quote(f.name),
                   ", \"offset\": ", f.offset, ", \"size\": ", f.size,
                   ", \"value\": ", field_value(f, l.args, pointer_name(raw, ranges, plan)), "}");
    }
    out += "]}}";
  }
  return out + "]}";
}

}  // namespace describe_detail

// Every tier's verdict for a call on `target` and the plan of the one that runs it, as JSON (a
// tier that runs one AITER family's kernels names it: {"tier": "asm", "family": "flatmm", ...}).
// The plan of a tier whose kernels are AITER's assumes their code objects are present: a device
// without them passes the call to the next tier (see ffi/binder.hpp).
template <typename Op>
Expected<std::string> plan_json(std::string_view call_json, const Target& target) {
  using namespace describe_detail;
  auto call = JsonCall<Op>::parse(call_json);
  if (!call) return call.status();
  auto decoded = Spec<Op>::decode(*call);
  if (!decoded) return decoded.status();
  typename Op::Params& p = *decoded;
  JAX_AITER_RETURN_IF_ERROR(Op::validate(p));
  JAX_AITER_RETURN_IF_ERROR(ops::validate_dispatch<Op>(p.dispatch));
  if constexpr (Spec<Op>::kHasWorkspace) {
    p.workspace.dtype = DType::kU8;
    p.workspace.rank = 1;
    p.workspace.dims[0] = Op::workspace_bytes(p);
  }
  std::string tiers = "[";
  std::string chosen = "null";
  bool taken = false;
  Status error;
  ops::for_each_tier<Op>([&](auto i) {
    using T = ops::TierAt<Op, i>;
    constexpr std::string_view kFamily = ops::tier_family<T>();
    const std::string family = kFamily.empty() ? "" : StrCat(", \"family\": ", json_quote(kFamily));
    std::string verdict;
    if (taken) {
      verdict = "not reached";
    } else if (p.dispatch.tier != "auto" && p.dispatch.tier != T::kName) {
      verdict = ops::not_forced(T::kName).text();
    } else if (auto t = ops::tier_target<T>(Op::kName, target, p.dispatch); !t) {
      error = t.status();
      return true;
    } else if (const auto d = ops::decide<T>(p, *t); !d.ok()) {
      verdict = d.text();
    } else {
      kernels::Plan plan;
      if constexpr (Spec<Op>::kHasWorkspace) plan.workspace_base = p.workspace.data;
      ops::plan_with<T>(p, *t, *d, plan);
      verdict = "taken";
      taken = true;
      chosen = StrCat("{\"tier\": ", json_quote(T::kName), family,
                      ", \"arch\": ", json_quote(name(t->arch)),
                      ", \"compute_units\": ", t->compute_units,
                      ", \"plan\": ", describe_detail::plan_json(plan, call->ranges()), "}");
    }
    tiers = StrCat(tiers, i ? ", " : "", "{\"tier\": ", json_quote(T::kName), family,
                   ", \"verdict\": ", json_quote(verdict), "}");
    return false;
  });
  if (!error.ok()) return error;
  return StrCat("{\"op\": ", json_quote(Op::kName),
                ", \"target\": {\"arch\": ", json_quote(name(target.arch)),
                ", \"compute_units\": ", target.compute_units, "}, \"tiers\": ", tiers,
                "], \"chosen\": ", chosen, "}");
}

}  // namespace jax_aiter::ffi
