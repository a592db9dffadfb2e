// The handler library of the Python package, one build per backend (JAX_AITER_BACKEND_CPU, _CUDA
// or _ROCM): every op's FFI handlers for that platform, the C entry points through which Python
// learns them and runs the tools (ffi/exports.hpp), and the static-registration entry for plugins.
#include "jax_aiter/ffi/attention.hpp"
#include "jax_aiter/ffi/exports.hpp"
#include "jax_aiter/ffi/flatmm_fp8.hpp"
#include "jax_aiter/ffi/gemm.hpp"
#include "jax_aiter/ffi/gemm_fp4.hpp"
#include "jax_aiter/ffi/gemm_fp8_mi350.hpp"
#include "jax_aiter/ffi/gemm_fp8bs.hpp"
#include "jax_aiter/ffi/gemm_i8.hpp"
#include "jax_aiter/ffi/registry.hpp"
#include "jax_aiter/ffi/rmsnorm.hpp"

#if defined(JAX_AITER_BACKEND_CPU)
#include "jax_aiter/host_twins/aiter_fmha_v3.hpp"
#include "jax_aiter/host_twins/attention.hpp"
#include "jax_aiter/host_twins/flatmm_fp8.hpp"
#include "jax_aiter/host_twins/gemm.hpp"
#include "jax_aiter/host_twins/gemm_fp4.hpp"
#include "jax_aiter/host_twins/gemm_fp8_mi350.hpp"
#include "jax_aiter/host_twins/gemm_fp8bs.hpp"
#include "jax_aiter/host_twins/gemm_i8.hpp"
#include "jax_aiter/host_twins/rmsnorm.hpp"
#include "jax_aiter/runtime/host.hpp"
using Backend = jax_aiter::runtime::Host;
#elif defined(JAX_AITER_BACKEND_CUDA)
#include "jax_aiter/runtime/cuda.hpp"
using Backend = jax_aiter::runtime::Cuda;
#elif defined(JAX_AITER_BACKEND_ROCM)
#include "jax_aiter/runtime/hip.hpp"
using Backend = jax_aiter::runtime::Hip;
#else
#error "define JAX_AITER_BACKEND_CPU, JAX_AITER_BACKEND_CUDA or JAX_AITER_BACKEND_ROCM"
#endif

namespace ops = jax_aiter::ops;

JAX_AITER_DEFINE_HANDLER(jax_aiter_rms_norm, ops::RmsNorm, Backend);
JAX_AITER_DEFINE_HANDLER(jax_aiter_rms_norm_with_add, ops::RmsNormWithAdd, Backend);
JAX_AITER_DEFINE_HANDLER(jax_aiter_rms_norm_bwd, ops::RmsNormBwd, Backend);
JAX_AITER_DEFINE_HANDLER(jax_aiter_rms_norm_with_add_bwd, ops::RmsNormWithAddBwd, Backend);
JAX_AITER_DEFINE_HANDLER(jax_aiter_gemm, ops::Gemm, Backend);
JAX_AITER_DEFINE_HANDLER(jax_aiter_gemm_i8, ops::GemmI8, Backend);
JAX_AITER_DEFINE_HANDLER(jax_aiter_gemm_fp8_mi350, ops::GemmFp8Mi350, Backend);
JAX_AITER_DEFINE_HANDLER(jax_aiter_flatmm_fp8, ops::FlatmmFp8, Backend);
JAX_AITER_DEFINE_HANDLER(jax_aiter_gemm_fp4, ops::GemmFp4, Backend);
JAX_AITER_DEFINE_HANDLER(jax_aiter_gemm_fp8_blockscale, ops::GemmFp8Bs, Backend);
JAX_AITER_DEFINE_HANDLER(jax_aiter_flash_attn_fwd, ops::FlashAttnFwd, Backend);
JAX_AITER_DEFINE_HANDLER(jax_aiter_flash_attn_bwd, ops::FlashAttnBwd, Backend);
JAX_AITER_DEFINE_HANDLER(jax_aiter_attn_dropout_mask, ops::AttnDropoutMask, Backend);
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
