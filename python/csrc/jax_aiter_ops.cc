// The handler library of the Python package, one build per backend (python/csrc/backend.hpp): the
// C entry points through which Python learns the handlers and runs the tools (ffi/exports.hpp) and
// the static-registration entry for plugins. The handlers themselves are defined in one generated
// translation unit per op of the manifest (ops.cmake; python/CMakeLists.txt), each recording its
// targets in the registry these entry points read.
#include "backend.hpp"
#include "jax_aiter/ffi/exports.hpp"
#include "jax_aiter/ffi/registry.hpp"

JAX_AITER_DEFINE_REGISTER_ALL(jax_aiter_register_all)
JAX_AITER_DEFINE_EXPORTS()

#if !defined(JAX_AITER_BACKEND_CPU)
// What the backend's per-device caches hold for device `device` (kernels resolved, code objects
// loaded): the multi-device tests check each device loads its own, once.
extern "C" JAX_AITER_EXPORT int64_t jax_aiter_resolved_kernels(int device) {
  return static_cast<int64_t>(Backend::resolved_kernels(device));
}
extern "C" JAX_AITER_EXPORT int64_t jax_aiter_loaded_modules(int device) {
  return static_cast<int64_t>(Backend::loaded_modules(device));
}
#endif
