"""One generic way to call any jax_aiter target from JAX, so each op module holds only its math.

``call(target, inputs={...}, outputs={...}, attributes={...})`` orders the operands as the C++
spec declares them (learned from the library, see ``_ffi.spec``), passes an absent optional input
as the u8[0] placeholder the handlers expect, types the attributes as the handlers bind them,
sizes the workspace output with the op's C++ rule and drops it from the results, and makes the
call work inside ``shard_map``:

Inside shard_map (check_vma), an operand's type records the mesh axes it varies over. XLA's result
types must carry them too, else custom_vjp rejects the backward ("manual axis types do not match").
So operands are first cast to vary over the union of their axes (a replicated weight next to
sharded rows becomes varying, a no-op at run time), and results are typed from those operands.
Outside shard_map the union is empty and plain ShapeDtypeStructs are used.
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np

from jax_aiter import _ffi

__all__ = ["Dispatch", "Static", "call", "like_primal", "validate", "varying"]


@jax.tree_util.register_static
@dataclasses.dataclass(frozen=True)
class Static:
    """A pytree with no leaves: static data that custom_vmap / custom_vjp residuals carry along."""
    value: object


@dataclasses.dataclass(frozen=True)
class Dispatch:
    """Which tier runs a call, and for AITER's ASM kernels which AMD arch they are planned for.

    ``tier``: "auto" (the first tier that supports the call), or one of the op's tiers ("asm",
    "portable"). ``asm_arch`` / ``asm_cus``: plan the ASM tier as for this arch ("gfx942",
    "gfx950") and CU count; off AMD hardware that plan then runs through the kernels' ABI twins
    (our kernels that read AITER's exact argument structs), which is how the ASM tier's plans are
    tested on CPU and CUDA. On an AMD device asm_arch must be the device's own.
    """
    tier: str = "auto"
    asm_arch: str | None = None
    asm_cus: int | None = None

    def attributes(self) -> dict:
        out = {"tier": self.tier}
        if self.asm_arch:
            out["asm_arch"] = self.asm_arch
        if self.asm_cus:
            out["asm_cus"] = int(self.asm_cus)
        return out


def varying(a) -> frozenset:
    aval = jax.typeof(a)
    mat = getattr(aval, "mat", None)  # jax 0.10: aval.mat.varying; later: aval.vma
    return frozenset(mat.varying if mat is not None else getattr(aval, "vma", ()))


def _cast_to_union(args):
    vmas = [varying(a) for a in args]
    union = frozenset().union(*vmas)
    if not union:
        return args, None
    args = tuple(a if v == union else jax.lax.pcast(a, tuple(union - v), to="varying")
                 for a, v in zip(args, vmas))
    return args, union


def like_primal(ct, primal_varying: frozenset):
    """A cotangent varies over no more axes than its primal: psum the extra ones (the transpose of
    the cast in call(); e.g. the per-shard gradient of a replicated weight)."""
    extra = varying(ct) - primal_varying
    return jax.lax.psum(ct, tuple(extra)) if extra else ct


def _result(like, union, shape, dtype):
    if union is None:
        return jax.ShapeDtypeStruct(shape, dtype)
    return jax.typeof(like).update(shape=shape, dtype=dtype)


_ATTR_TYPES = {"f32": np.float32, "i64": np.int64, "bool": np.bool_, "string": str}


def _typed(target: str, spec: _ffi.OpSpec, attributes: dict) -> dict:
    """The attributes as the handler binds them; one whose value is None is left out (the op's
    default: e.g. splitk=None, the heuristic's choice)."""
    out = {}
    for name, value in attributes.items():
        if name not in spec.attributes:
            raise ValueError(f"{target}: unknown attribute {name!r} (this op takes: "
                             f"{', '.join(spec.attributes)})")
        if value is not None:
            out[name] = _ATTR_TYPES[spec.attributes[name]](value)
    return out


def call(target: str, *, inputs: dict, outputs: dict, attributes: dict | None = None,
         dispatch: Dispatch | None = None, vmap_method: str = "sequential") -> dict:
    """Calls `target`; returns its outputs by name (the workspace, if any, dropped).

    inputs: name -> array, or None for an absent optional input.
    outputs: name -> (shape, dtype).
    """
    _ffi.require_platform()
    spec = _ffi.spec(target)
    unknown = set(inputs) - set(spec.inputs)
    missing = [n for n in spec.inputs if inputs.get(n) is None and n not in spec.optional]
    if unknown or missing or set(outputs) != set(spec.outputs):
        raise ValueError(f"{target}: expected inputs {spec.inputs} (optional: "
                         f"{sorted(spec.optional)}) and outputs {spec.outputs}; got inputs "
                         f"{sorted(inputs)}, outputs {sorted(outputs)}")
    attrs = dict(attributes or {})
    attrs.update((dispatch or Dispatch()).attributes())
    attrs = _typed(target, spec, attrs)

    present = [n for n in spec.inputs if inputs.get(n) is not None]
    args, union = _cast_to_union(tuple(inputs[n] for n in present))
    args = dict(zip(present, args))
    like = args[present[0]]
    absent = jax.numpy.zeros((0,), np.uint8)  # traced: custom_partitioning takes no constants
    if union is not None and len(present) < len(spec.inputs):
        absent = jax.lax.pcast(jax.numpy.zeros((0,), np.uint8), tuple(union), to="varying")
    ordered = [args[n] if n in args else absent for n in spec.inputs]
    results = [_result(like, union, *outputs[n]) for n in spec.outputs]
    if spec.workspace:
        described = {n: (a.dtype, a.shape) for n, a in args.items()}
        described.update({n: (dtype, shape) for n, (shape, dtype) in outputs.items()})
        size = _ffi.workspace_bytes(target, described, {k: _plain(v) for k, v in attrs.items()})
        results.append(_result(like, union, (size,), np.uint8))
    got = jax.ffi.ffi_call(target, tuple(results), vmap_method=vmap_method)(*ordered, **attrs)
    return dict(zip(spec.outputs, got))


def validate(target: str, *, inputs: dict, outputs: dict, attributes: dict | None = None,
             dispatch: Dispatch | None = None) -> bool:
    """Checks a call of `target` by the op's C++ rules without making it (inputs and outputs as
    for ``call``; only shapes and dtypes are read). Raises ValueError naming the operand or
    attribute if the call is invalid; returns False if it is valid but empty (M, N or K of 0, no
    rows...), which the caller then answers itself, True otherwise. Empty short-cuts call this
    first, so bad input is an error whatever its size."""
    spec = _ffi.spec(target)
    attrs = dict(attributes or {})
    attrs.update((dispatch or Dispatch()).attributes())
    attrs = _typed(target, spec, attrs)
    described = {n: (a.dtype, a.shape) for n, a in inputs.items() if a is not None}
    described.update({n: (dtype, shape) for n, (shape, dtype) in outputs.items()})
    return _ffi.validate(target, described, {k: _plain(v) for k, v in attrs.items()})


def _plain(v):
    """An attribute value as JSON takes it."""
    return v.item() if isinstance(v, np.generic) else v
