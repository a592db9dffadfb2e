// XLA's call frame as a source for Spec::decode (ffi/spec.hpp): buffers become ops::Tensor (dtype,
// shape, address: never the contents, which may live on a device), attributes become AttrValue,
// and every error names the op and the operand or attribute.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/core/status.hpp"
#include "jax_aiter/ffi/spec.hpp"
#include "jax_aiter/ops/tensor.hpp"
#include "xla/ffi/api/ffi.h"

namespace jax_aiter::ffi {

namespace xffi = ::xla::ffi;

constexpr std::optional<DType> to_dtype(xffi::DataType t) {
  switch (t) {
    case xffi::DataType::BF16: return DType::kBF16;
    case xffi::DataType::F16: return DType::kF16;
    case xffi::DataType::F32: return DType::kF32;
    case xffi::DataType::F8E4M3FN: return DType::kF8E4M3FN;
    case xffi::DataType::F8E4M3FNUZ: return DType::kF8E4M3FNUZ;
    case xffi::DataType::F8E5M2: return DType::kF8E5M2;
    case xffi::DataType::F4E2M1FN: return DType::kF4E2M1x2;
    case xffi::DataType::F8E8M0FNU: return DType::kE8M0;
    case xffi::DataType::S8: return DType::kI8;
    case xffi::DataType::S32: return DType::kI32;
    case xffi::DataType::U8: return DType::kU8;
    default: return std::nullopt;
  }
}

inline Expected<ops::Tensor> to_tensor(std::string_view op, std::string_view operand,
                                       const xffi::AnyBuffer& buffer) {
  const auto dtype = to_dtype(buffer.element_type());
  if (!dtype) {
    return ops::operand_error(
        op, operand,
        StrCat("unsupported XLA dtype (code ", static_cast<int>(buffer.element_type()), ")"));
  }
  const auto dims = buffer.dimensions();
  if (dims.size() > static_cast<size_t>(ops::kMaxRank)) {
    return ops::operand_error(
        op, operand, StrCat("rank ", dims.size(), " exceeds the supported ", ops::kMaxRank));
  }
  return ops::Tensor::over(buffer.untyped_data(), *dtype,
                           std::span<const int64_t>(dims.begin(), dims.size()));
}

// One call as XLA passes it, for Spec<Op>::decode.
class XlaCall {
 public:
  XlaCall(std::string_view op, const xffi::RemainingArgs& args, const xffi::RemainingRets& rets,
          const xffi::Dictionary& attrs)
      : op_(op), args_(args), rets_(rets), attrs_(attrs) {}

  size_t inputs() const { return args_.size(); }
  size_t results() const { return rets_.size(); }

  Expected<ops::Tensor> input(size_t i, std::string_view name) const {
    auto b = args_.get<xffi::AnyBuffer>(i);
    if (!b.has_value()) return ops::operand_error(op_, name, "expected a buffer");
    return to_tensor(op_, name, *b);
  }
  Expected<ops::Tensor> result(size_t i, std::string_view name) const {
    auto r = rets_.get<xffi::AnyBuffer>(i);
    if (!r.has_value()) return ops::operand_error(op_, name, "expected a buffer");
    return to_tensor(op_, name, **r);
  }

  template <typename Visit>
  Status attributes(Visit&& visit) const {
    for (auto it = attrs_.begin(); it != attrs_.end(); ++it) {
      JAX_AITER_RETURN_IF_ERROR(visit(*it, value(it)));
    }
    return {};
  }
  bool has_attribute(std::string_view name) const { return attrs_.contains(name); }

 private:
  // (By name: jaxlib 0.10's Dictionary::get by iterator does not compile for every type.)
  template <typename T>
  std::optional<T> get(const xffi::Dictionary::Iterator& it) const {
    if (!attrs_.isa<T>(it)) return std::nullopt;
    auto v = attrs_.get<T>(*it);
    return v.has_value() ? std::optional<T>(*v) : std::nullopt;
  }

  AttrValue value(const xffi::Dictionary::Iterator& it) const {
    if (auto f = get<float>(it)) return AttrValue::f32("F32", *f);
    if (auto d = get<double>(it)) return AttrValue::f32("F64", *d);
    if (auto i32 = get<int32_t>(it)) return AttrValue::i64("S32", *i32);
    if (auto i64 = get<int64_t>(it)) return AttrValue::i64("S64", *i64);
    if (auto b = get<bool>(it)) return AttrValue::boolean("PRED", *b);
    if (auto s = get<std::string_view>(it)) return AttrValue::string("a string", *s);
    return AttrValue::other("another XLA attribute type");
  }

  std::string_view op_;
  const xffi::RemainingArgs& args_;
  const xffi::RemainingRets& rets_;
  const xffi::Dictionary& attrs_;
};

}  // namespace jax_aiter::ffi
