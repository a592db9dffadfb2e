// The backend of one build of the Python package's handler library (JAX_AITER_BACKEND_CPU, _CUDA
// or _ROCM), for its translation units: the per-op ones python/CMakeLists.txt generates from the
// manifest (ops.cmake) and jax_aiter_ops.cc.
#pragma once

#if defined(JAX_AITER_BACKEND_CPU)
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
