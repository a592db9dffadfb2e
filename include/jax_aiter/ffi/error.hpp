// Status to XLA FFI error: the codes are the same numbers (both mirror absl::StatusCode).
#pragma once

#include "jax_aiter/core/status.hpp"
#include "xla/ffi/api/ffi.h"

namespace jax_aiter::ffi {

namespace xffi = ::xla::ffi;

static_assert(static_cast<int>(xffi::ErrorCode::kInvalidArgument) ==
              static_cast<int>(ErrorCode::kInvalidArgument));
static_assert(static_cast<int>(xffi::ErrorCode::kUnauthenticated) ==
              static_cast<int>(ErrorCode::kUnauthenticated));

inline xffi::Error to_error(const Status& s) {
  if (s.ok()) return xffi::Error::Success();
  return xffi::Error(static_cast<xffi::ErrorCode>(s.code()), s.message());
}

}  // namespace jax_aiter::ffi
