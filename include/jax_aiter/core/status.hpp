// Errors as values. Codes mirror absl::StatusCode, which XLA_FFI_Error_Code also mirrors, so the
// FFI layer maps one onto the other with a cast and nothing is lost in translation.
#pragma once

#include <cstdint>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace jax_aiter {

enum class ErrorCode : uint8_t {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

// OK carries no message and never allocates; only the error path builds a string.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string message) {
  return {ErrorCode::kInvalidArgument, std::move(message)};
}
inline Status FailedPrecondition(std::string message) {
  return {ErrorCode::kFailedPrecondition, std::move(message)};
}
inline Status Unimplemented(std::string message) {
  return {ErrorCode::kUnimplemented, std::move(message)};
}
inline Status NotFound(std::string message) { return {ErrorCode::kNotFound, std::move(message)}; }
inline Status Internal(std::string message) { return {ErrorCode::kInternal, std::move(message)}; }
inline Status OutOfRange(std::string message) {
  return {ErrorCode::kOutOfRange, std::move(message)};
}

// A value or the Status that explains why there is none (std::expected is C++23).
template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : ok_(true) { new (&value_) T(std::move(value)); }  // NOLINT: implicit
  Expected(Status status) : ok_(false) { new (&status_) Status(std::move(status)); }  // NOLINT
  Expected(const Expected& other) : ok_(other.ok_) {
    if (ok_) {
      new (&value_) T(other.value_);
    } else {
      new (&status_) Status(other.status_);
    }
  }
  Expected(Expected&& other) noexcept : ok_(other.ok_) {
    if (ok_) {
      new (&value_) T(std::move(other.value_));
    } else {
      new (&status_) Status(std::move(other.status_));
    }
  }
  Expected& operator=(Expected other) noexcept {
    this->~Expected();
    new (this) Expected(std::move(other));
    return *this;
  }
  ~Expected() {
    if (ok_) {
      value_.~T();
    } else {
      status_.~Status();
    }
  }

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  T& value() & { return value_; }
  const T& value() const& { return value_; }
  T&& value() && { return std::move(value_); }
  T& operator*() & { return value_; }
  const T& operator*() const& { return value_; }
  T* operator->() { return &value_; }
  const T* operator->() const { return &value_; }
  // The error; OK when a value is present.
  Status status() const { return ok_ ? Status() : status_; }

 private:
  bool ok_;
  union {
    T value_;
    Status status_;
  };
};

// Concatenates pieces into an error message; only used on the error path.
template <typename... Parts>
std::string StrCat(const Parts&... parts) {
  std::string out;
  auto append = [&out](const auto& part) {
    using P = std::decay_t<decltype(part)>;
    if constexpr (std::is_same_v<P, std::string> || std::is_same_v<P, std::string_view> ||
                  std::is_same_v<P, const char*> || std::is_same_v<P, char*>) {
      out += part;
    } else if constexpr (std::is_same_v<P, char>) {
      out += part;
    } else if constexpr (std::is_array_v<std::remove_reference_t<decltype(part)>>) {
      out += part;
    } else {
      out += std::to_string(part);
    }
  };
  (append(parts), ...);
  return out;
}

}  // namespace jax_aiter

// Propagates a non-OK Status from an expression returning Status.
#define JAX_AITER_RETURN_IF_ERROR(expr)                \
  do {                                                 \
    if (::jax_aiter::Status _st = (expr); !_st.ok()) { \
      return _st;                                      \
    }                                                  \
  } while (false)
