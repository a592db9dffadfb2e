"""jax_aiter: AMD AITER kernels (and portable twins) as XLA FFI custom calls from JAX.

The handler libraries are found beside this package (``_jax_aiter_cpu.so``, and where built
``_jax_aiter_cuda.so`` / ``_jax_aiter_rocm.so``) and registered with XLA on first use; the targets
and their operands are learned from the libraries themselves.

The API is found, not listed: every public module of the package (one per op, named for it, and
``quant``, the quantizers the quantized GEMMs share) is imported, and what its ``__all__`` names
is exported here; ``tools`` (the command-line tools) is not part of it. A new op is a new module.
"""

import importlib as _importlib
import pkgutil as _pkgutil
import sys as _sys

from jax_aiter._call import Dispatch
from jax_aiter._ffi import (JaxAiterUnavailableError, check_aiter, plan, register,
                            registered_platforms, set_aiter_root)

__version__ = "0.1.0"

__all__ = ["Dispatch", "JaxAiterUnavailableError", "check_aiter", "plan", "register",
           "registered_platforms", "set_aiter_root"]

_NOT_API = ("tools",)


def _op_modules():
    """The package's public modules (the ops' and quant), by name."""
    names = sorted(m.name for m in _pkgutil.iter_modules(__path__)
                   if not m.name.startswith("_") and m.name not in _NOT_API)
    return [_importlib.import_module(f"{__name__}.{name}") for name in names]


def _export(modules) -> None:
    for module in modules:
        for name in module.__all__:
            value = getattr(module, name)
            if name in globals() and name in __all__ and globals()[name] is not value:
                raise ImportError(f"jax_aiter: {module.__name__} and another module both export "
                                  f"{name!r}")
            globals()[name] = value
            if name not in __all__:
                __all__.append(name)
    __all__.sort()


_export(_op_modules())

# Modules renamed for their ops: the old names still import (jax_aiter.gemm_fp8, .flatmm).
for _old, _new in (("gemm_fp8", "gemm_fp8_blockscale"), ("flatmm", "flatmm_fp8")):
    globals()[_old] = _sys.modules[f"{__name__}.{_old}"] = _sys.modules[f"{__name__}.{_new}"]
del _old, _new
