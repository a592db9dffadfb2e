"""How every jax_aiter custom call partitions under ``jax.jit`` shardings: one mechanism, one rule
per op.

An op describes its call once, as a ``Rule``: each dimension of each operand and result is named
by a factor (Shardy's einsum-like notation: ``"m k, n k -> m n"``), a dimension that is the product
of two factors names both, major first (``("h", "g")``: the query heads of GQA are kv-head major),
and each factor says how the op treats a split along it:

  ``LOCAL``      each shard runs the op on its slice (rows, batch, heads, N of a GEMM); results
                 that lack the factor are partial sums the op adds up (``Shards.sum``: K-split
                 GEMMs, dgamma over row shards, dk/dv over query-row shards);
  ``REPLICATE``  the op needs the whole extent (head dims, the keys of attention, K of a
                 pre-shuffled weight): a split operand is gathered first (by XLA);

and a factor may ask that each shard's extent be a multiple of a block (a weight layout's or a
scale's block); a split that breaks a block is gathered too. The op's ``local`` function computes
one shard: it gets its slices and a ``Shards`` that says which factors are split, where its slice
starts (device data, from ``jax.lax.axis_index``) and how to sum partial results. The very same
function computes the unsplit call, with nothing split, so one code path serves one device, many
devices and ``shard_map``.

From a Rule this module derives what both of JAX's partitioners ask of a
``jax.experimental.custom_partitioning`` function:

  * Shardy (JAX's default): the ``sharding_rule`` (factors, need-replication and reduction
    factors, sizes of factors that only occur inside a compound dimension);
  * GSPMD (``jax_use_shardy_partitioner=False``): ``infer_sharding_from_operands``;
  * both: ``partition``, which decides the split (``decide``) from the operands' shardings and the
    requested result shardings and returns the shardings and the per-shard function.

A partial result is all-reduced, or reduce-scattered onto a dimension of the result when the
requested result sharding splits that dimension over exactly the summed axes (a row-parallel GEMM
whose output is wanted sharded).

On one device, and inside ``shard_map`` (every mesh axis manual), JAX inlines the function: no
partitioner runs and the call costs nothing extra. ``vmap`` of a partitioned call runs it once
per batch element (``jax.lax.map``); ops that can fold a batch into rows do so above this layer.
"""

from __future__ import annotations

import dataclasses
import math
import os
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_batching import custom_vmap
from jax.experimental.custom_partitioning import custom_partitioning
from jax.interpreters.mlir import ir
from jax.sharding import NamedSharding, PartitionSpec

from jax_aiter._call import Static

__all__ = ["LOCAL", "REPLICATE", "Decision", "Factor", "Rule", "Shards", "decide",
           "enabled", "op", "set_enabled"]

LOCAL = "local"
REPLICATE = "replicate"

# JAX_AITER_PARTITIONING=0 leaves every call opaque to the partitioners, as before they had rules
# (a split operand is then gathered and the call runs whole on every device): for comparisons.
_enabled = os.environ.get("JAX_AITER_PARTITIONING", "1") != "0"


def enabled() -> bool:
    """Whether calls traced from now on carry their partitioning rules."""
    return _enabled


def set_enabled(on: bool) -> None:
    global _enabled
    _enabled = bool(on)


@dataclasses.dataclass(frozen=True)
class Factor:
    """One factor of a rule: its size, how a split along it is treated, and the block a shard's
    extent must be a multiple of."""
    size: int
    kind: str = LOCAL
    block: int = 1


Dim = tuple  # the factor names of one dimension, major first ("m",) or ("h", "g")


@dataclasses.dataclass(frozen=True)
class Rule:
    """Factor names of every dimension of every present operand and of every result.

    operands: one tuple of Dims per operand actually passed (absent optional inputs are left
    out); results: one tuple of Dims per result; factors: name -> Factor.
    """
    operands: tuple
    results: tuple
    factors: dict

    def dims(self):
        return self.operands + self.results

    def shardy(self) -> tuple[str, dict]:
        """Shardy's einsum-like rule and its keyword arguments."""
        def simple(d):  # Shardy takes no factor of size 1 inside a compound dimension
            kept = tuple(f for f in d if self.factors[f].size != 1)
            return kept if kept else d[:1]

        operands = tuple(tuple(simple(d) for d in t) for t in self.operands)
        results = tuple(tuple(simple(d) for d in t) for t in self.results)

        def dim(d):
            return d[0] if len(d) == 1 else "(" + " ".join(d) + ")"

        def side(tensors):
            return ", ".join(" ".join(dim(d) for d in t) if t else "" for t in tensors)

        text = f"{side(operands)} -> {side(results)}"
        every = operands + results
        alone = {d[0] for t in every for d in t if len(d) == 1}
        inside = {f for t in every for d in t if len(d) > 1 for f in d}
        kwargs = {f: self.factors[f].size for f in sorted(inside - alone)}
        in_results = {f for t in results for d in t for f in d}
        # Shardy wants the special factors in the order the rule first names them.
        order = list(dict.fromkeys(f for t in every for d in t for f in d))
        replicate = tuple(f for f in order if self.factors[f].kind == REPLICATE)
        reduction = tuple(f for f in order if self.factors[f].kind == LOCAL
                          and f not in in_results)
        if replicate:
            kwargs["need_replication_factors"] = replicate
        if reduction:
            kwargs["reduction_factors"] = reduction
        return text, kwargs


# ---- deciding a split ---------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Decision:
    """How one call is split: factor -> the mesh axes it is split over (major first), and for each
    result that sums partials, the dimension it is reduce-scattered onto (None: all-reduced)."""
    axes: dict
    axis_sizes: dict
    scatter: dict  # result index -> dimension index

    def count(self, factor: str) -> int:
        return math.prod(self.axis_sizes[a] for a in self.axes.get(factor, ()))

    def spec(self, dims, extra: dict | None = None) -> PartitionSpec:
        entries = []
        for i, d in enumerate(dims):
            axes = tuple(a for f in d for a in self.axes.get(f, ()))
            if extra and i in extra:
                axes = axes + extra[i]
            entries.append(None if not axes else axes[0] if len(axes) == 1 else axes)
        return PartitionSpec(*entries)


def _spec_axes(spec: PartitionSpec, ndim: int) -> list[tuple]:
    entries = tuple(spec) + (None,) * (ndim - len(spec))
    out = []
    for e in entries[:ndim]:
        if e is None or e is PartitionSpec.UNCONSTRAINED:
            out.append(())
        else:
            out.append(tuple(e) if isinstance(e, (tuple, list)) else (e,))
    return out


def _claim(dim: Dim, axes: tuple, rule: Rule, sizes: dict, taken: dict, used: set) -> None:
    """Gives a dimension's split axes to its factors, major first: a factor takes axes while their
    product divides its size; the next factor may take axes only once the previous one is split
    completely (else the shards' ranges would straddle its elements). A factor split already
    (by an earlier operand) keeps that split."""
    i = 0
    for f in dim:
        if f in taken:
            return  # decided by an earlier operand: this operand is resharded to match
        mine, product = [], 1
        while i < len(axes) and axes[i] not in used and \
                rule.factors[f].size % (product * sizes[axes[i]]) == 0:
            product *= sizes[axes[i]]
            mine.append(axes[i])
            i += 1
        if mine:
            taken[f] = tuple(mine)
            used.update(mine)
        if i == len(axes) or product != rule.factors[f].size:
            return


def _valid(rule: Rule, axes: dict, sizes: dict) -> dict:
    """Drops splits the factors refuse (REPLICATE, or a shard extent off the block), then splits of
    a compound dimension whose major factors are not split completely."""
    out = {}
    for f, a in axes.items():
        factor = rule.factors[f]
        n = math.prod(sizes[x] for x in a)
        if factor.kind == REPLICATE or factor.size % n or (factor.size // n) % factor.block:
            continue
        out[f] = a
    for t in rule.dims():
        for d in t:
            for major, minor in zip(d, d[1:]):
                full = math.prod(sizes[x] for x in out.get(major, ())) == rule.factors[major].size
                if minor in out and not full:
                    out.pop(minor)
    return out


def decide(rule: Rule, mesh, operand_specs: list, result_specs: list | None = None,
           refine: Callable | None = None) -> Decision:
    """The split of one call from its operands' PartitionSpecs and, when known, the requested
    result specs: the first operand that splits a factor decides its axes (a requested result
    split counts after every operand: a factor no operand splits is split as the result is
    wanted, the operands sliced to match); an axis serves one factor; then the factors' own
    limits, then the op's ``refine(rule, axes, sizes) -> axes``."""
    sizes = dict(mesh.shape)
    taken, used = {}, set()
    for dims, spec in zip(rule.operands + rule.results,
                          list(operand_specs) + list(result_specs or ())):
        for dim, axes in zip(dims, _spec_axes(spec, len(dims))):
            if axes:
                _claim(dim, axes, rule, sizes, taken, used)
    axes = _valid(rule, taken, sizes)
    if refine is not None:
        axes = _valid(rule, refine(rule, dict(axes), sizes), sizes)
    return Decision(axes, sizes, _scatter(rule, axes, sizes, result_specs))


def _scatter(rule: Rule, axes: dict, sizes: dict, result_specs) -> dict:
    """Where a result of partial sums is wanted split over exactly the axes it sums over, along a
    dimension that is otherwise whole: reduce-scatter onto that dimension."""
    out = {}
    if not result_specs:
        return out
    for r, (dims, spec) in enumerate(zip(rule.results, result_specs)):
        partial = _partial_axes(rule, axes, r)
        if not partial:
            continue
        n = math.prod(sizes[a] for a in partial)
        for i, (d, want) in enumerate(zip(dims, _spec_axes(spec, len(dims)))):
            split = any(f in axes for f in d)
            extent = math.prod(rule.factors[f].size for f in d)
            if not split and set(want) == set(partial) and extent % n == 0:
                out[r] = i
                break
    return out


def _partial_axes(rule: Rule, axes: dict, result: int) -> tuple:
    present = {f for d in rule.results[result] for f in d}
    return tuple(a for f, fa in axes.items() if f not in present for a in fa)


# ---- what a shard knows -------------------------------------------------------------------------

class Shards:
    """What the per-shard function knows of its split (nothing split: the whole call)."""

    def __init__(self, rule: Rule, decision: Decision | None = None):
        self.rule = rule
        self.decision = decision

    def axes(self, factor: str) -> tuple:
        return () if self.decision is None else self.decision.axes.get(factor, ())

    def split(self, factor: str) -> bool:
        return bool(self.axes(factor))

    def count(self, factor: str) -> int:
        return 1 if self.decision is None else self.decision.count(factor)

    def size(self, factor: str) -> int:
        """The factor's extent in the whole call."""
        return self.rule.factors[factor].size

    def local(self, factor: str) -> int:
        return self.size(factor) // self.count(factor)

    def index(self, factor: str):
        """This shard's position along the factor (int32 device data; 0 when unsplit)."""
        axes = self.axes(factor)
        if not axes:
            return jnp.int32(0)
        return jax.lax.axis_index(axes if len(axes) > 1 else axes[0]).astype(jnp.int32)

    def offset(self, factor: str):
        """Where this shard's slice starts along the factor, in the whole call."""
        return self.index(factor) * jnp.int32(self.local(factor))

    def psum(self, x, factor: str):
        """Sums x over the shards of a factor (identity when it is not split)."""
        axes = self.axes(factor)
        return jax.lax.psum(x, axes if len(axes) > 1 else axes[0]) if axes else x

    def partial(self, result: int) -> tuple:
        """The mesh axes result ``result`` is a partial sum over (factors split here that the
        result lacks)."""
        return () if self.decision is None else _partial_axes(self.rule, self.decision.axes, result)

    def sum(self, x, result: int):
        """Adds up a result's partials over the shards (float32 for floating types), then rounds
        back to x's dtype: all-reduce, or reduce-scatter onto the dimension the decision says."""
        axes = self.partial(result)
        if not axes:
            return x
        wide = jnp.issubdtype(x.dtype, jnp.floating) and jnp.finfo(x.dtype).bits < 32
        y = x.astype(jnp.float32) if wide else x
        dim = self.decision.scatter.get(result)
        name = axes if len(axes) > 1 else axes[0]
        if dim is None:
            y = jax.lax.psum(y, name)
        else:
            y = jax.lax.psum_scatter(y, name, scatter_dimension=dim, tiled=True)
        return y.astype(x.dtype) if wide else y


# ---- the custom_partitioning function of one op -------------------------------------------------

def _named(mesh, spec):
    return NamedSharding(mesh, spec)


def _specs_of(shapes) -> list:
    out = []
    for s in shapes:
        sharding = getattr(s, "sharding", None)
        out.append(sharding.spec if isinstance(sharding, NamedSharding) else PartitionSpec())
    return out


class _Op:
    """One op's custom_partitioning function, built once (module level), called with the static
    configuration first and the operands after (None for an absent optional input)."""

    def __init__(self, name: str, rule: Callable, local: Callable, refine: Callable | None):
        self.name = name
        self._rule = rule  # (config, shapes: tuple of shape or None) -> Rule
        self._local = local  # (config, shards, *operands) -> tuple of results
        self._refine = refine
        cp = custom_partitioning(self._whole, static_argnums=(0,))
        cp.def_partition(partition=self._partition,
                         infer_sharding_from_operands=self._infer,
                         sharding_rule=self._shardy)
        self._cp = cp
        self._vmapped = custom_vmap(self._unbatched)
        self._vmapped.def_vmap(self._batched)

    # The call: config travels as a leafless pytree through custom_vmap, as a static argument
    # through custom_partitioning. Absent inputs are None (leafless pytrees too).
    def __call__(self, config, *operands):
        if not enabled():
            present = tuple(x is not None for x in operands)
            return self._whole((config, present), *operands)
        return self._vmapped(Static(config), *operands)

    def _unbatched(self, config, *operands):
        present = tuple(x is not None for x in operands)
        return self._cp((config.value, present), *operands)

    def _batched(self, axis_size, in_batched, config, *operands):
        flags = in_batched[1:]

        def one(xs):
            it = iter(xs)
            args = [next(it) if b else x for x, b in zip(operands, flags)]
            return self._unbatched(config, *args)

        batched = [x for x, b in zip(operands, flags) if b]
        out = jax.lax.map(one, batched)
        return out, jax.tree_util.tree_map(lambda _: True, out)

    def _rule_for(self, static, shapes) -> Rule:
        config, present = static
        it = iter(shapes)
        full = tuple(tuple(next(it)) if p else None for p in present)
        return self._rule(config, full)

    def _whole(self, static, *operands):
        config, present = static
        rule = self._rule(config, tuple(None if x is None else x.shape for x in operands))
        return tuple(self._local(config, Shards(rule), *operands))

    def _decide(self, static, mesh, arg_shapes, result_shapes=None) -> tuple[Rule, Decision]:
        shapes = [s for s in arg_shapes if s is not None]
        rule = self._rule_for(static, [s.shape for s in shapes])
        results = None if result_shapes is None else _specs_of(result_shapes)
        return rule, decide(rule, mesh, _specs_of(shapes), results, self._refine)

    def _infer(self, static, mesh, arg_shapes, result_shape):
        rule, d = self._decide(static, mesh, arg_shapes)
        return tuple(_named(mesh, d.spec(dims, _scatter_extra(rule, d, r)))
                     for r, dims in enumerate(rule.results))

    def _partition(self, static, mesh, arg_shapes, result_shape):
        rule, d = self._decide(static, mesh, arg_shapes, list(result_shape))
        config, present = static
        it = iter(rule.operands)
        arg_shardings = tuple(None if s is None else _named(mesh, d.spec(next(it)))
                              for s in arg_shapes)
        result_shardings = tuple(_named(mesh, d.spec(dims, _scatter_extra(rule, d, r)))
                                 for r, dims in enumerate(rule.results))
        shards = Shards(rule, d)

        def lower(*operands):
            return tuple(self._local(config, shards, *operands))

        return mesh, lower, result_shardings, arg_shardings

    def _shardy(self, static, mesh, value_types, result_types):
        shapes = [tuple(ir.RankedTensorType(t).shape) for t in value_types]
        return self._rule_for(static, shapes).shardy()


def _scatter_extra(rule: Rule, d: Decision, result: int) -> dict | None:
    dim = d.scatter.get(result)
    if dim is None:
        return None
    return {dim: _partial_axes(rule, d.axes, result)}


def op(name: str, *, rule: Callable, refine: Callable | None = None):
    """Decorator: ``@op("aiter.rms_norm", rule=...)`` on ``local(config, shards, *operands)``
    gives the partitioned call ``f(config, *operands) -> tuple of results``. ``config`` must be
    hashable (it is a static argument of custom_partitioning)."""
    return lambda local: _Op(name, rule, local, refine)
