"""jax_aiter: AMD AITER kernels (and portable twins) as XLA FFI custom calls from JAX.

The handler libraries are found beside this package (``_jax_aiter_cpu.so``, and where built
``_jax_aiter_cuda.so`` / ``_jax_aiter_rocm.so``) and registered with XLA on first use.
"""

from jax_aiter._ffi import JaxAiterUnavailableError, register, registered_platforms
from jax_aiter.rmsnorm import rms_norm, rms_norm_with_add

__version__ = "0.1.0"

__all__ = [
    "JaxAiterUnavailableError",
    "register",
    "registered_platforms",
    "rms_norm",
    "rms_norm_with_add",
]
