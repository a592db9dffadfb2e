// XLA buffers to ops::Tensor: dtype mapping and shape, with errors naming the operand.
#pragma once

#include <optional>
#include <string_view>
#include <utility>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/core/status.hpp"
#include "jax_aiter/ops/tensor.hpp"
#include "xla/ffi/api/ffi.h"

namespace jax_aiter::ffi {

namespace xffi = ::xla::ffi;

// Appends kArgs operands then kRets results, each an AnyBuffer (dtypes are checked by the op, so
// that FP8/FP4 bind too and errors name the operand), to an FFI binding in call order. (Every
// return is a fresh binding: XLA's Binding cannot be moved from outside.)
template <int kArgs, int kRets, typename Binding>
auto bind_buffers(Binding&& b) {
  static_assert(kArgs >= 0 && kRets >= 0 && kArgs + kRets > 0);
  if constexpr (kArgs > 0) {
    if constexpr (kArgs + kRets == 1) {
      return std::move(b).template Arg<xffi::AnyBuffer>();
    } else {
      return bind_buffers<kArgs - 1, kRets>(std::move(b).template Arg<xffi::AnyBuffer>());
    }
  } else if constexpr (kRets == 1) {
    return std::move(b).template Ret<xffi::AnyBuffer>();
  } else {
    return bind_buffers<0, kRets - 1>(std::move(b).template Ret<xffi::AnyBuffer>());
  }
}

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

// Reads an operand's dtype, shape and address (never its contents: it may live on a device).
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
  ops::Tensor t;
  t.data = buffer.untyped_data();
  t.dtype = *dtype;
  t.rank = static_cast<int>(dims.size());
  for (int i = 0; i < t.rank; ++i) t.dims[i] = dims[i];
  return t;
}

}  // namespace jax_aiter::ffi

namespace jax_aiter::ffi {

// Fills `out` from one buffer; for chaining with JAX_AITER_RETURN_IF_ERROR.
inline Status decode_into(ops::Tensor& out, std::string_view op, std::string_view operand,
                          const xffi::AnyBuffer& buffer) {
  auto t = to_tensor(op, operand, buffer);
  if (!t) return t.status();
  out = *t;
  return {};
}

}  // namespace jax_aiter::ffi
