// The plugin's own op library, built as a STATIC library: the handler it instantiates, and (by
// jax_aiter_embed_kernels in CMakeLists.txt) the code objects its ops need. Nothing here refers to
// the embedded code objects, which is exactly the case where a linker would drop them; the
// embedding makes them part of whatever links this library instead.
#include <jax_aiter/ffi/rmsnorm.hpp>
#include <jax_aiter/host_twins/rmsnorm.hpp>
#include <jax_aiter/runtime/host.hpp>

JAX_AITER_DEFINE_HANDLER(MyRmsNorm, jax_aiter::ops::RmsNorm, jax_aiter::runtime::Host);
