// Handlers a consumer defined with JAX_AITER_DEFINE_HANDLER, with what the tools ask of each op:
//   jax_aiter::ffi::register_all(api, "ROCM")  registers every one of them for that platform
//                                              through the XLA FFI C API (static registration);
//   JAX_AITER_DEFINE_EXPORTS()                 C entry points through which Python learns the
//                                              targets (no hand-kept list), their operand lists
//                                              and workspace sizes, and runs the tools.
#pragma once

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/core/status.hpp"
#include "xla/ffi/api/c_api.h"

namespace jax_aiter::ffi {

struct HandlerEntry {
  std::string_view name;  // the custom-call target, e.g. "aiter.rms_norm"
  BackendKind backend;
  XLA_FFI_Handler_Bundle bundle;
  XLA_FFI_Handler_Traits traits;
  std::string (*spec)();                                                  // ffi/describe.hpp
  Expected<int64_t> (*workspace_bytes)(std::string_view call);            // ffi/describe.hpp
  Expected<std::string> (*plan)(std::string_view call, const Target& t);  // ffi/describe.hpp
  Expected<bool> (*validate)(std::string_view call);                      // ffi/describe.hpp
};

class HandlerRegistry {
 public:
  static void add(const HandlerEntry& e) {
    auto& r = instance();
    std::lock_guard lock(r.mutex_);
    r.entries_.push_back(e);
  }
  static std::vector<HandlerEntry> entries() {
    auto& r = instance();
    std::lock_guard lock(r.mutex_);
    return r.entries_;
  }
  static Expected<HandlerEntry> find(std::string_view name) {
    for (const HandlerEntry& e : entries()) {
      if (e.name == name) return e;
    }
    return NotFound(StrCat("jax_aiter: no handler for target '", name, "' in this library"));
  }

 private:
  static HandlerRegistry& instance() {
    static HandlerRegistry r;
    return r;
  }
  std::mutex mutex_;
  std::vector<HandlerEntry> entries_;
};

struct HandlerRegistrar {
  explicit HandlerRegistrar(const HandlerEntry& e) { HandlerRegistry::add(e); }
};

// XLA's platform names for each backend ("cpu" is what JAX says for "Host"; "gpu" means CUDA).
inline bool platform_matches(BackendKind backend, std::string_view platform) {
  std::string p(platform);
  for (char& c : p) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  switch (backend) {
    case BackendKind::kHip: return p == "rocm";
    case BackendKind::kCuda: return p == "cuda" || p == "gpu";
    case BackendKind::kHost: return p == "host" || p == "cpu";
  }
  return false;
}

// Registers every handler defined for `platform`; returns the first error XLA reports (the caller
// owns it), or nullptr.
inline XLA_FFI_Error* register_all(const XLA_FFI_Api* api, const char* platform) {
  const std::string_view wanted(platform ? platform : "");
  for (const HandlerEntry& e : HandlerRegistry::entries()) {
    if (!platform_matches(e.backend, wanted)) continue;
    XLA_FFI_Handler_Register_Args args;
    args.struct_size = XLA_FFI_Handler_Register_Args_STRUCT_SIZE;
    args.extension_start = nullptr;
    args.name = XLA_FFI_ByteSpan{e.name.data(), e.name.size()};
    args.platform = XLA_FFI_ByteSpan{wanted.data(), wanted.size()};
    args.bundle = e.bundle;
    args.traits = e.traits;
    if (XLA_FFI_Error* err = api->XLA_FFI_Handler_Register(&args)) return err;
  }
  return nullptr;
}

// A C string the caller frees with jax_aiter_free.
inline char* c_string(std::string_view s) {
  char* out = static_cast<char*>(std::malloc(s.size() + 1));
  if (out != nullptr) {
    std::memcpy(out, s.data(), s.size());
    out[s.size()] = '\0';
  }
  return out;
}

}  // namespace jax_aiter::ffi

// C entry points stay visible even when the consumer builds with -fvisibility=hidden.
#define JAX_AITER_EXPORT __attribute__((visibility("default")))

// Emits the C entry `XLA_FFI_Error* symbol(const XLA_FFI_Api*, const char* platform)` in one TU.
#define JAX_AITER_DEFINE_REGISTER_ALL(symbol)                                                     \
  extern "C" __attribute__((visibility("default"))) XLA_FFI_Error* symbol(const XLA_FFI_Api* api, \
                                                                          const char* platform) { \
    return ::jax_aiter::ffi::register_all(api, platform);                                         \
  }
