"""Loading the handler libraries and registering their FFI targets with XLA.

The libraries sit beside this file (the build tree's ``python/jax_aiter/`` or the installed
package), one per backend:

  ``_jax_aiter_cpu.so``   platform "cpu"   (the Host backend: C++ twins of the kernels)
  ``_jax_aiter_cuda.so``  platform "CUDA"  (optional: our portable kernels on sm_90)
  ``_jax_aiter_rocm.so``  platform "ROCM"  (optional: AITER and portable kernels)

Registration happens once, on the first traced call of any op (or an explicit ``register()``),
under a lock. A GPU library that is missing or fails to load is not an import error: the op
raises ``JaxAiterUnavailableError`` when it is traced for that platform.
"""

from __future__ import annotations

import ctypes
import functools
import os
import threading

import jax

__all__ = [
    "JaxAiterUnavailableError",
    "TARGETS",
    "register",
    "registered_platforms",
    "require_platform",
    "rms_norm_bwd_workspace_bytes",
]

_HERE = os.path.dirname(os.path.abspath(__file__))

# XLA platform name -> handler library file name.
_LIBRARIES = {
    "cpu": "_jax_aiter_cpu.so",
    "CUDA": "_jax_aiter_cuda.so",
    "ROCM": "_jax_aiter_rocm.so",
}

# jax.default_backend() / Device.platform spelling -> XLA platform name.
_JAX_TO_XLA_PLATFORM = {"cpu": "cpu", "cuda": "CUDA", "gpu": "CUDA", "rocm": "ROCM"}

# Custom-call target -> C symbol of its execute stage (the initialize stage is symbol + "_initialize").
TARGETS = {
    "aiter.rms_norm": "jax_aiter_rms_norm",
    "aiter.rms_norm_with_add": "jax_aiter_rms_norm_with_add",
    "aiter.rms_norm_bwd": "jax_aiter_rms_norm_bwd",
    "aiter.rms_norm_with_add_bwd": "jax_aiter_rms_norm_with_add_bwd",
}


class JaxAiterUnavailableError(RuntimeError):
    """The handler library for a platform is missing or could not be loaded."""


_lock = threading.Lock()
_done = False
_libraries: dict[str, ctypes.CDLL] = {}  # XLA platform -> loaded library
_problems: dict[str, str] = {}  # XLA platform -> why it is unavailable


def _load(platform: str) -> ctypes.CDLL:
    path = os.path.join(_HERE, _LIBRARIES[platform])
    if not os.path.exists(path):
        raise JaxAiterUnavailableError(
            f"jax_aiter: no handler library for platform {platform!r}: {path} does not exist "
            "(this build of jax_aiter was made without that backend)")
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise JaxAiterUnavailableError(
            f"jax_aiter: the handler library for platform {platform!r} ({path}) could not be "
            f"loaded: {e}") from e
    missing = [s for sym in TARGETS.values() for s in (sym, sym + "_initialize")
               if not hasattr(lib, s)]
    if not hasattr(lib, "jax_aiter_rms_norm_bwd_workspace_bytes"):
        missing.append("jax_aiter_rms_norm_bwd_workspace_bytes")
    if missing:
        raise JaxAiterUnavailableError(
            f"jax_aiter: {path} does not export {', '.join(missing)} "
            "(a stale or foreign build?)")
    lib.jax_aiter_rms_norm_bwd_workspace_bytes.argtypes = [ctypes.c_int64, ctypes.c_int64]
    lib.jax_aiter_rms_norm_bwd_workspace_bytes.restype = ctypes.c_int64
    return lib


def register() -> None:
    """Loads every handler library present and registers its targets. Idempotent, thread-safe.

    The CPU library is required: its absence raises. A GPU library that is absent or fails to
    load is remembered and reported by ``require_platform`` when an op is used on that platform.
    """
    global _done
    if _done:
        return
    with _lock:
        if _done:
            return
        for platform in _LIBRARIES:
            try:
                lib = _load(platform)
            except JaxAiterUnavailableError as e:
                _problems[platform] = str(e)
                continue
            for target, symbol in TARGETS.items():
                jax.ffi.register_ffi_target(
                    target,
                    {
                        "initialize": jax.ffi.pycapsule(getattr(lib, symbol + "_initialize")),
                        "execute": jax.ffi.pycapsule(getattr(lib, symbol)),
                    },
                    platform=platform,
                    api_version=1,
                    # No traits argument: XLA reads them (command-buffer compatible for the GPU
                    # backends) from the handler's own metadata when it registers it.
                )
            _libraries[platform] = lib
        _done = True
    if "cpu" not in _libraries:
        raise JaxAiterUnavailableError(_problems["cpu"])


def registered_platforms() -> tuple[str, ...]:
    """XLA platform names whose targets are registered (registers first if needed)."""
    register()
    return tuple(_libraries)


@functools.cache
def _check_platform(jax_platform: str) -> None:
    platform = _JAX_TO_XLA_PLATFORM.get(jax_platform.lower(), jax_platform)
    if platform in _libraries:
        return
    why = _problems.get(platform, f"jax_aiter has no backend for platform {platform!r}")
    raise JaxAiterUnavailableError(
        f"{why}. jax_aiter ops cannot run on JAX's {jax_platform!r} backend; registered "
        f"platforms: {sorted(_libraries)}")


def require_platform() -> None:
    """Registers on first use and checks that JAX's default backend has a handler library.

    Called while tracing an op (never per execution). A computation explicitly lowered for another
    platform whose library is absent fails in XLA instead, with its "No registered implementation
    for custom call to aiter.*" message.
    """
    register()
    _check_platform(jax.default_backend())  # only successes are cached


@functools.lru_cache(maxsize=1024)
def rms_norm_bwd_workspace_bytes(rows: int, n: int) -> int:
    """Bytes of the float32 workspace ``aiter.rms_norm_bwd`` needs (computed by the C++ op)."""
    register()
    lib = next(iter(_libraries.values()))  # the same constexpr formula in every library
    return int(lib.jax_aiter_rms_norm_bwd_workspace_bytes(int(rows), int(n)))
