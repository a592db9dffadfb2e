"""Loading the handler libraries, registering their FFI targets with XLA, and the C entry points
the tools use.

The libraries sit beside this file (the build tree's ``python/jax_aiter/`` or the installed
package), one per backend:

  ``_jax_aiter_cpu.so``   platform "cpu"   (the Host backend: C++ twins of the kernels)
  ``_jax_aiter_cuda.so``  platform "CUDA"  (optional: our portable kernels and ABI twins, sm_90)
  ``_jax_aiter_rocm.so``  platform "ROCM"  (optional: AITER and portable kernels)

Each library says which targets it holds (``jax_aiter_handler_count`` / ``_name`` / ``_stage``),
and each target's operand and attribute lists (``jax_aiter_spec``): nothing here keeps a list of
its own. Registration happens once, on the first traced call of any op (or an explicit
``register()``), under a lock. A GPU library that is missing or fails to load is not an import
error: the op raises ``JaxAiterUnavailableError`` when it is traced for that platform.

``JAX_AITER_AITER_ROOT``, if set, names an AITER checkout whose ``hsa/`` code objects the ROCm
library reads at run time (the same as ``set_aiter_root``, except that a path that is not an AITER
checkout is a warning at registration rather than an error: ops that need no AITER code object
still run).
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import json
import operator
import os
import threading
import warnings

import jax

__all__ = [
    "JaxAiterUnavailableError",
    "OpSpec",
    "check_aiter",
    "plan",
    "register",
    "registered_platforms",
    "require_platform",
    "set_aiter_root",
    "spec",
    "validate",
    "workspace_bytes",
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

_INITIALIZE, _EXECUTE = 2, 3  # XLA_FFI_ExecutionStage


class JaxAiterUnavailableError(RuntimeError):
    """The handler library for a platform is missing or could not be loaded."""


_lock = threading.Lock()
_done = False
_libraries: dict[str, ctypes.CDLL] = {}  # XLA platform -> loaded library
_problems: dict[str, str] = {}  # XLA platform -> why it is unavailable

_EXPORTS = {
    # name: (restype, argtypes)
    "jax_aiter_handler_count": (ctypes.c_int, []),
    "jax_aiter_handler_name": (ctypes.c_char_p, [ctypes.c_int]),
    "jax_aiter_handler_stage": (ctypes.c_void_p, [ctypes.c_int, ctypes.c_int]),
    "jax_aiter_spec": (ctypes.c_void_p, [ctypes.c_char_p]),
    "jax_aiter_workspace_bytes": (ctypes.c_int64, [ctypes.c_char_p, ctypes.c_char_p,
                                                   ctypes.POINTER(ctypes.c_void_p)]),
    "jax_aiter_validate": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p,
                                          ctypes.POINTER(ctypes.c_void_p)]),
    "jax_aiter_plan": (ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                         ctypes.c_int64, ctypes.POINTER(ctypes.c_void_p)]),
    "jax_aiter_check_aiter": (ctypes.c_void_p, [ctypes.c_char_p]),
    "jax_aiter_set_aiter_root": (ctypes.c_int, [ctypes.c_char_p,
                                                ctypes.POINTER(ctypes.c_void_p)]),
    "jax_aiter_peer_report": (ctypes.c_void_p, []),
    "jax_aiter_peer_reset": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p)]),
    "jax_aiter_peer_stage": (ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_int64, ctypes.c_int,
                                               ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)]),
    "jax_aiter_peer_join": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_int64, ctypes.c_int,
                                           ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]),
    "jax_aiter_peer_seal": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_int64,
                                           ctypes.POINTER(ctypes.c_void_p)]),
    "jax_aiter_free": (None, [ctypes.c_void_p]),
}


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
    missing = [name for name in _EXPORTS if not hasattr(lib, name)]
    if missing:
        raise JaxAiterUnavailableError(
            f"jax_aiter: {path} does not export {', '.join(missing)} (a stale or foreign build?)")
    for name, (restype, argtypes) in _EXPORTS.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return lib


def _take_string(lib: ctypes.CDLL, address) -> str | None:
    """A C string the library allocated, copied and freed."""
    if not address:
        return None
    try:
        return ctypes.string_at(address).decode()
    finally:
        lib.jax_aiter_free(address)


def _targets(lib: ctypes.CDLL) -> list[tuple[str, int, int]]:
    """(target, initialize address, execute address) of every handler the library defines."""
    out = []
    for i in range(lib.jax_aiter_handler_count()):
        out.append((lib.jax_aiter_handler_name(i).decode(),
                    lib.jax_aiter_handler_stage(i, _INITIALIZE),
                    lib.jax_aiter_handler_stage(i, _EXECUTE)))
    return out


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
        root = os.environ.get("JAX_AITER_AITER_ROOT")
        for platform in _LIBRARIES:
            try:
                lib = _load(platform)
            except JaxAiterUnavailableError as e:
                _problems[platform] = str(e)
                continue
            if root:
                try:
                    _set_root(lib, root)
                except ValueError as e:
                    warnings.warn(f"JAX_AITER_AITER_ROOT ignored: {e}", RuntimeWarning,
                                  stacklevel=2)
            for target, initialize, execute in _targets(lib):
                jax.ffi.register_ffi_target(
                    target,
                    {"initialize": jax.ffi.pycapsule(initialize),
                     "execute": jax.ffi.pycapsule(execute)},
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


def _cpu() -> ctypes.CDLL:
    register()
    return _libraries["cpu"]  # every library answers the tools alike (the same C++ rules)


# ---- what Python learns from C++ ----------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class OpSpec:
    """A target's operands in call order and its attributes, as the C++ FfiSpec declares them."""
    target: str
    inputs: tuple[str, ...]
    optional: frozenset[str]
    outputs: tuple[str, ...]
    workspace: bool
    attributes: dict[str, str]  # name -> type ("f32", "i64", "bool", "string")
    tiers: tuple[str, ...]


@functools.cache
def spec(target: str) -> OpSpec:
    lib = _cpu()
    text = _take_string(lib, lib.jax_aiter_spec(target.encode()))
    if text is None:
        raise ValueError(f"jax_aiter: no target {target!r}")
    s = json.loads(text)
    ops = s["operands"]
    return OpSpec(
        target=target,
        inputs=tuple(o["name"] for o in ops if o["kind"] in ("input", "optional_input")),
        optional=frozenset(o["name"] for o in ops if o["kind"] == "optional_input"),
        outputs=tuple(o["name"] for o in ops if o["kind"] == "output"),
        workspace=any(o["kind"] == "workspace" for o in ops),
        attributes={a["name"]: a["type"] for a in s["attributes"]},
        tiers=tuple(s["tiers"]),
    )


def describe_call(operands: dict, attributes: dict, target: str = "jax_aiter") -> str:
    """A call description (ffi/describe.hpp): operands name -> (dtype, shape) or None. Raises
    ValueError naming the operand for anything else."""
    ops = {}
    for name, v in operands.items():
        if v is None:
            ops[name] = None
            continue
        try:
            dtype, shape = v
            ops[name] = {"dtype": _dtype_name(dtype), "shape": list(shape)}
        except (TypeError, ValueError) as e:
            raise ValueError(f"{target}: operand {name}: expected (dtype, shape) or None, got "
                             f"{v!r} ({e})") from None
    attributes = {k: v for k, v in attributes.items() if v is not None}  # None: left out
    try:
        return json.dumps({"operands": ops, "attributes": attributes})
    except (TypeError, ValueError) as e:
        raise ValueError(f"{target}: the call's operands or attributes are not plain numbers, "
                         f"strings and lists: {e}") from None


def _dtype_name(dtype) -> str:
    import numpy as np
    name = np.dtype(dtype).name
    return {"bfloat16": "bf16", "float16": "f16", "float32": "f32", "int8": "i8", "int32": "i32",
            "uint8": "u8", "float8_e4m3fn": "f8_e4m3fn", "float8_e4m3fnuz": "f8_e4m3fnuz",
            "float8_e5m2": "f8_e5m2", "float4_e2m1fn": "f4_e2m1x2",
            "float8_e8m0fnu": "f8_e8m0"}.get(name, name)


def _error(lib: ctypes.CDLL, err: ctypes.c_void_p, what: str) -> ValueError:
    return ValueError(_take_string(lib, err.value) or what)


@functools.lru_cache(maxsize=4096)
def _workspace_bytes(target: str, call: str) -> int:
    lib = _cpu()
    err = ctypes.c_void_p()
    n = lib.jax_aiter_workspace_bytes(target.encode(), call.encode(), ctypes.byref(err))
    if n < 0:
        raise _error(lib, err, f"{target}: workspace size query failed")
    return int(n)


def workspace_bytes(target: str, operands: dict, attributes: dict) -> int:
    """Bytes of the workspace output a call needs, computed by the op's C++ rule."""
    return _workspace_bytes(target, describe_call(operands, attributes))


@functools.lru_cache(maxsize=4096)
def _validate(target: str, call: str) -> bool:
    lib = _cpu()
    err = ctypes.c_void_p()
    got = lib.jax_aiter_validate(target.encode(), call.encode(), ctypes.byref(err))
    if got < 0:
        raise _error(lib, err, f"{target}: validation failed")
    return got == 1


def validate(target: str, operands: dict, attributes: dict) -> bool:
    """Checks a call by the op's C++ rules (as its handler would) without running it: raises
    ValueError naming the operand or attribute when it is invalid; returns False when it is valid
    but empty (M, N or K of 0, no rows...: the caller computes that result itself), True when
    there is work for a kernel."""
    return _validate(target, describe_call(operands, attributes, target))


def plan(target: str, operands: dict, attributes: dict, arch: str, cus: int = 0) -> dict:
    """Every tier's verdict and the chosen plan of a call on `arch` (gfx942, gfx950, sm_90, host)
    with `cus` compute units (0: the arch's usual part; at most 4096), as jax-aiter-plan prints
    it. Raises ValueError for a bad call, arch or CU count."""
    if operands is None or not isinstance(operands, dict):
        raise ValueError(f"{target}: plan: operands: expected a dict of name -> (dtype, shape) or "
                         f"None, got {type(operands).__name__}")
    if attributes is None:
        attributes = {}
    if not isinstance(attributes, dict):
        raise ValueError(f"{target}: plan: attributes: expected a dict, got "
                         f"{type(attributes).__name__}")
    try:
        n = -1 if isinstance(cus, bool) else operator.index(cus)  # an int, numpy's included
    except TypeError:
        n = -1
    if not 0 <= n <= 4096:
        raise ValueError(f"jax_aiter: plan: compute units: expected 0 (the arch's usual part) to "
                         f"4096, got {cus!r}")
    lib = _cpu()
    err = ctypes.c_void_p()
    out = lib.jax_aiter_plan(target.encode(), describe_call(operands, attributes, target).encode(),
                             arch.encode(), n, ctypes.byref(err))
    if not out:
        raise _error(lib, err, f"{target}: plan failed")
    return json.loads(_take_string(lib, out))


def check_aiter(root: str) -> dict:
    """Checks an AITER checkout's code objects against our argument structs (the report: one row
    per code object our tables name, found or missing, matching or why not). Raises ValueError
    when ``root`` is not an AITER checkout (no such directory, or no ``hsa/`` in it) or this
    library cannot read code-object metadata."""
    lib = _cpu()
    report = json.loads(_take_string(lib, lib.jax_aiter_check_aiter(os.fspath(root).encode())))
    if "error" in report:
        raise ValueError(report["error"])
    return report


def _set_root(lib: ctypes.CDLL, root: str) -> None:
    err = ctypes.c_void_p()
    if lib.jax_aiter_set_aiter_root(os.fspath(root).encode(), ctypes.byref(err)) != 0:
        raise _error(lib, err, "set_aiter_root failed")


def set_aiter_root(root: str) -> None:
    """Names the AITER checkout whose ``hsa/`` code objects the ROCm library reads when they were
    not embedded at build time. Call it before the first op that needs one. Raises ValueError when
    ``root`` is not a directory holding ``hsa/`` (the previous root, if any, is kept)."""
    register()
    for lib in _libraries.values():
        _set_root(lib, root)


def device_cache_counts(platform: str, device: int) -> tuple[int, int] | None:
    """(kernels resolved, code objects loaded) in the backend's caches for one device of a GPU
    platform, or None where the library keeps no per-device caches (the CPU's)."""
    register()
    lib = _libraries.get(platform)
    if lib is None or not hasattr(lib, "jax_aiter_resolved_kernels"):
        return None
    kernels, modules = lib.jax_aiter_resolved_kernels, lib.jax_aiter_loaded_modules
    kernels.restype = modules.restype = ctypes.c_int64
    kernels.argtypes = modules.argtypes = [ctypes.c_int]
    return int(kernels(device)), int(modules(device))


def peer_report() -> list[dict]:
    """The timeouts every loaded library's peer groups recorded (aiter.peer_all_to_all)."""
    register()
    out = []
    for lib in _libraries.values():
        out.extend(json.loads(_take_string(lib, lib.jax_aiter_peer_report()) or "[]"))
    return out


def peer_reset() -> None:
    """Zeroes every peer group of every loaded library (every rank must be idle)."""
    register()
    for lib in _libraries.values():
        err = ctypes.c_void_p()
        if lib.jax_aiter_peer_reset(ctypes.byref(err)) != 0:
            raise RuntimeError(_take_string(lib, err.value) or "jax_aiter: peer reset failed")


def _peer_library(jax_platform: str) -> ctypes.CDLL:
    register()
    _check_platform(jax_platform)
    return _libraries[_JAX_TO_XLA_PLATFORM.get(jax_platform.lower(), jax_platform)]


def peer_stage(jax_platform: str, devices: str, staging: int, position: int, device: int) -> str:
    """Setup of a peer group across processes, step 1: this process's device at `position` (its
    slot and staging buffer); returns the handle the other processes join."""
    lib = _peer_library(jax_platform)
    err = ctypes.c_void_p()
    handle = _take_string(lib, lib.jax_aiter_peer_stage(devices.encode(), staging, position,
                                                        device, ctypes.byref(err)))
    if handle is None:
        raise RuntimeError(_take_string(lib, err.value) or "jax_aiter: peer stage failed")
    return handle


def peer_join(jax_platform: str, devices: str, staging: int, position: int, handle: str) -> None:
    """Step 2: another process's device at `position`, from the handle it staged."""
    lib = _peer_library(jax_platform)
    err = ctypes.c_void_p()
    if lib.jax_aiter_peer_join(devices.encode(), staging, position, handle.encode(),
                               ctypes.byref(err)) != 0:
        raise RuntimeError(_take_string(lib, err.value) or "jax_aiter: peer join failed")


def peer_seal(jax_platform: str, devices: str, staging: int) -> None:
    """Step 3 (every process has joined every other): the group is ready for calls."""
    lib = _peer_library(jax_platform)
    err = ctypes.c_void_p()
    if lib.jax_aiter_peer_seal(devices.encode(), staging, ctypes.byref(err)) != 0:
        raise RuntimeError(_take_string(lib, err.value) or "jax_aiter: peer seal failed")
