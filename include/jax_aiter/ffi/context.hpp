// Where a handler runs: the backend's stream and the device ordinal, decoded from XLA's execution
// context in one step. The host backend needs neither and asks XLA for nothing.
#pragma once

#include <cstdint>
#include <optional>

#include "jax_aiter/runtime/backend.hpp"
#include "xla/ffi/api/ffi.h"

namespace jax_aiter::ffi {

template <typename Backend>
struct Where {
  typename Backend::Stream stream{};
  int32_t device = 0;
};

}  // namespace jax_aiter::ffi

namespace xla::ffi {

template <typename Backend>
struct CtxDecoding<::jax_aiter::ffi::Where<Backend>> {
  using Type = ::jax_aiter::ffi::Where<Backend>;

  static std::optional<Type> Decode(const XLA_FFI_Api* api, XLA_FFI_ExecutionContext* ctx,
                                    DiagnosticEngine& diagnostic) {
    if constexpr (Backend::kKind == ::jax_aiter::BackendKind::kHost) {
      return Type{};
    } else {
      auto stream =
          CtxDecoding<PlatformStream<typename Backend::Stream>>::Decode(api, ctx, diagnostic);
      if (!stream) return std::nullopt;
      auto device = CtxDecoding<DeviceOrdinal>::Decode(api, ctx, diagnostic);
      if (!device) return std::nullopt;
      return Type{*stream, *device};
    }
  }
};

}  // namespace xla::ffi
