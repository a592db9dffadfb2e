// C entry points of a handler library for Python (ctypes) and the tools, emitted once per library
// with JAX_AITER_DEFINE_EXPORTS():
//   int         jax_aiter_handler_count(void)
//   const char* jax_aiter_handler_name(int i)           custom-call target of handler i
//   void*       jax_aiter_handler_stage(int i, int s)   its XLA_FFI_Handler* for stage s (2 or 3)
//   char*       jax_aiter_spec(const char* target)      its operand and attribute lists (JSON)
//   int64_t     jax_aiter_workspace_bytes(const char* target, const char* call, char** error)
//   int         jax_aiter_validate(const char* target, const char* call, char** error)
//                                                       1: valid; 0: valid but empty (the caller
//                                                       answers it); -1: invalid (*error says why)
//   char*       jax_aiter_plan(const char* target, const char* call, const char* arch,
//                              int64_t cus, char** error) every tier's verdict and the plan (JSON)
//   char*       jax_aiter_check_aiter(const char* root) the AITER checkout check (JSON)
//   int         jax_aiter_set_aiter_root(const char* root, char** error)
//   char*       jax_aiter_peer_report(void)             the peer groups' recorded timeouts (JSON)
//   int         jax_aiter_peer_reset(char** error)      zeroes every peer group (ranks idle)
//   char*       jax_aiter_peer_stage(const char* devices, int64_t staging_bytes, int position,
//                                    int device, char** error)
//   int         jax_aiter_peer_join(const char* devices, int64_t staging_bytes, int position,
//                                   const char* handle, char** error)
//   int         jax_aiter_peer_seal(const char* devices, int64_t staging_bytes, char** error)
//                                                       a peer group across processes, set up in
//                                                       three steps (runtime/peer_groups.hpp):
//                                                       stage returns the handle to publish
//   void        jax_aiter_free(char*)                   frees what the others return
// A call is described as in ffi/describe.hpp. On failure the functions return -1 / nullptr and set
// *error (when error is not null) to the message.
#pragma once

#include <cstdint>
#include <string>

#include "jax_aiter/core/status.hpp"
#include "jax_aiter/ffi/describe.hpp"
#include "jax_aiter/ffi/json.hpp"
#include "jax_aiter/ffi/registry.hpp"
#include "jax_aiter/runtime/code_objects.hpp"
#include "jax_aiter/runtime/peer_groups.hpp"

// The AITER check reads code-object metadata with msgpack-cxx (Debian: libmsgpack-cxx-dev); a
// library built without it answers the check with an error instead.
#if __has_include(<msgpack.hpp>)
#include "jax_aiter/runtime/check_aiter.hpp"
#define JAX_AITER_HAVE_CHECK_AITER 1
#else
#define JAX_AITER_HAVE_CHECK_AITER 0
#endif

namespace jax_aiter::ffi {

inline void set_error(char** error, const Status& st) {
  if (error != nullptr) *error = c_string(st.message());
}

inline std::string check_aiter_json(std::string_view root) {
#if !JAX_AITER_HAVE_CHECK_AITER
  return StrCat("{\"root\": ", json_quote(root),
                ", \"error\": \"this jax_aiter library was built without msgpack-cxx, which the "
                "AITER check needs to read code-object metadata\"}");
#else
  const auto checked = runtime::check_aiter(root);
  if (!checked.ok()) {
    return StrCat("{\"root\": ", json_quote(root),
                  ", \"error\": ", json_quote(checked.status().message()), "}");
  }
  size_t ok = 0, missing = 0, mismatch = 0;
  std::string rows;
  for (const runtime::AiterCheck& c : *checked) {
    ok += c.result == runtime::AiterCheck::Result::kOk;
    missing += c.result == runtime::AiterCheck::Result::kMissing;
    mismatch += c.result == runtime::AiterCheck::Result::kMismatch;
    rows =
        StrCat(rows, rows.empty() ? "" : ", ", "{\"family\": ", json_quote(c.family),
               ", \"arch\": ", json_quote(c.arch), ", \"code_object\": ", json_quote(c.code_object),
               ", \"symbol\": ", json_quote(c.symbol),
               ", \"result\": ", json_quote(runtime::name(c.result)),
               ", \"detail\": ", json_quote(c.detail), ", \"abi\": ", json_quote(c.abi),
               ", \"declared\": ", c.declared, "}");
  }
  return StrCat("{\"root\": ", json_quote(root), ", \"checked\": [", rows, "], \"ok\": ", ok,
                ", \"missing\": ", missing, ", \"mismatch\": ", mismatch, "}");
#endif
}

}  // namespace jax_aiter::ffi

#define JAX_AITER_DEFINE_EXPORTS()                                                                 \
  extern "C" JAX_AITER_EXPORT int jax_aiter_handler_count() {                                      \
    return static_cast<int>(::jax_aiter::ffi::HandlerRegistry::entries().size());                  \
  }                                                                                                \
  extern "C" JAX_AITER_EXPORT const char* jax_aiter_handler_name(int i) {                          \
    static const auto entries = ::jax_aiter::ffi::HandlerRegistry::entries();                      \
    return i >= 0 && i < static_cast<int>(entries.size()) ? entries[i].name.data() : nullptr;      \
  }                                                                                                \
  extern "C" JAX_AITER_EXPORT void* jax_aiter_handler_stage(int i, int stage) {                    \
    static const auto entries = ::jax_aiter::ffi::HandlerRegistry::entries();                      \
    if (i < 0 || i >= static_cast<int>(entries.size())) return nullptr;                            \
    const XLA_FFI_Handler_Bundle& b = entries[i].bundle;                                           \
    return reinterpret_cast<void*>(stage == XLA_FFI_ExecutionStage_INITIALIZE ? b.initialize       \
                                   : stage == XLA_FFI_ExecutionStage_EXECUTE  ? b.execute          \
                                                                              : nullptr);           \
  }                                                                                                \
  extern "C" JAX_AITER_EXPORT char* jax_aiter_spec(const char* target) {                           \
    auto e = ::jax_aiter::ffi::HandlerRegistry::find(target ? target : "");                        \
    return e.ok() ? ::jax_aiter::ffi::c_string(e->spec()) : nullptr;                               \
  }                                                                                                \
  extern "C" JAX_AITER_EXPORT int64_t jax_aiter_workspace_bytes(const char* target,                \
                                                                const char* call, char** error) {  \
    auto e = ::jax_aiter::ffi::HandlerRegistry::find(target ? target : "");                        \
    if (!e.ok()) return ::jax_aiter::ffi::set_error(error, e.status()), -1;                        \
    auto bytes = e->workspace_bytes(call ? call : "");                                             \
    if (!bytes.ok()) return ::jax_aiter::ffi::set_error(error, bytes.status()), -1;                \
    return *bytes;                                                                                 \
  }                                                                                                \
  extern "C" JAX_AITER_EXPORT int jax_aiter_validate(const char* target, const char* call,         \
                                                     char** error) {                               \
    auto e = ::jax_aiter::ffi::HandlerRegistry::find(target ? target : "");                        \
    if (!e.ok()) return ::jax_aiter::ffi::set_error(error, e.status()), -1;                        \
    auto valid = e->validate(call ? call : "");                                                    \
    if (!valid.ok()) return ::jax_aiter::ffi::set_error(error, valid.status()), -1;                \
    return *valid ? 1 : 0;                                                                         \
  }                                                                                                \
  extern "C" JAX_AITER_EXPORT char* jax_aiter_plan(const char* target, const char* call,           \
                                                   const char* arch, int64_t cus, char** error) {  \
    auto e = ::jax_aiter::ffi::HandlerRegistry::find(target ? target : "");                        \
    if (!e.ok()) return ::jax_aiter::ffi::set_error(error, e.status()), nullptr;                   \
    auto t = ::jax_aiter::ffi::plan_target(arch ? arch : "", cus);                                 \
    if (!t.ok()) return ::jax_aiter::ffi::set_error(error, t.status()), nullptr;                   \
    auto plan = e->plan(call ? call : "", *t);                                                     \
    if (!plan.ok()) return ::jax_aiter::ffi::set_error(error, plan.status()), nullptr;             \
    return ::jax_aiter::ffi::c_string(*plan);                                                      \
  }                                                                                                \
  extern "C" JAX_AITER_EXPORT char* jax_aiter_check_aiter(const char* root) {                      \
    return ::jax_aiter::ffi::c_string(::jax_aiter::ffi::check_aiter_json(root ? root : ""));       \
  }                                                                                                \
  extern "C" JAX_AITER_EXPORT int jax_aiter_set_aiter_root(const char* root, char** error) {       \
    const ::jax_aiter::Status st =                                                                 \
        ::jax_aiter::runtime::CodeObjects::set_aiter_root(root ? root : "");                       \
    if (!st.ok()) ::jax_aiter::ffi::set_error(error, st);                                          \
    return st.ok() ? 0 : -1;                                                                       \
  }                                                                                                \
  extern "C" JAX_AITER_EXPORT char* jax_aiter_peer_report() {                                      \
    return ::jax_aiter::ffi::c_string(::jax_aiter::runtime::PeerControl::report());                \
  }                                                                                                \
  extern "C" JAX_AITER_EXPORT int jax_aiter_peer_reset(char** error) {                             \
    const ::jax_aiter::Status st = ::jax_aiter::runtime::PeerControl::reset();                     \
    if (!st.ok()) ::jax_aiter::ffi::set_error(error, st);                                          \
    return st.ok() ? 0 : -1;                                                                       \
  }                                                                                                \
  extern "C" JAX_AITER_EXPORT char* jax_aiter_peer_stage(const char* devices, int64_t staging,     \
                                                         int position, int device, char** error) { \
    auto setup = ::jax_aiter::runtime::PeerControl::setup();                                       \
    if (!setup.ok()) return ::jax_aiter::ffi::set_error(error, setup.status()), nullptr;           \
    auto handle = setup->stage(devices ? devices : "", staging, position, device);                 \
    if (!handle.ok()) return ::jax_aiter::ffi::set_error(error, handle.status()), nullptr;         \
    return ::jax_aiter::ffi::c_string(*handle);                                                    \
  }                                                                                                \
  extern "C" JAX_AITER_EXPORT int jax_aiter_peer_join(                                             \
      const char* devices, int64_t staging, int position, const char* handle, char** error) {      \
    auto setup = ::jax_aiter::runtime::PeerControl::setup();                                       \
    ::jax_aiter::Status st =                                                                       \
        setup.ok() ? setup->join(devices ? devices : "", staging, position, handle ? handle : "")  \
                   : setup.status();                                                               \
    if (!st.ok()) ::jax_aiter::ffi::set_error(error, st);                                          \
    return st.ok() ? 0 : -1;                                                                       \
  }                                                                                                \
  extern "C" JAX_AITER_EXPORT int jax_aiter_peer_seal(const char* devices, int64_t staging,        \
                                                      char** error) {                              \
    auto setup = ::jax_aiter::runtime::PeerControl::setup();                                       \
    ::jax_aiter::Status st =                                                                       \
        setup.ok() ? setup->seal(devices ? devices : "", staging) : setup.status();                \
    if (!st.ok()) ::jax_aiter::ffi::set_error(error, st);                                          \
    return st.ok() ? 0 : -1;                                                                       \
  }                                                                                                \
  extern "C" JAX_AITER_EXPORT void jax_aiter_free(char* p) { std::free(p); }
