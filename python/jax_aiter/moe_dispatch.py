"""Expert-parallel dispatch and combine (ROCm MORI's semantics) for JAX, with gradients.

In an expert-parallel MoE layer every token goes to the ranks that own its top-k experts and its
expert outputs come back to it. ``moe_dispatch`` / ``moe_combine`` do those two moves inside
``shard_map`` over the expert axis (``axis_name``; n ranks, rank r owning experts
``[r * E/n, (r + 1) * E/n)``)::

    recv = moe_dispatch(x, topk_ids, topk_weights, num_experts=E, axis_name="ep")
    y = local_experts(recv.x, recv.ids, recv.weights)     # [max_recv, H]: rows weighted here
    out = moe_combine(y, recv.handle, axis_name="ep")      # [T, H]: summed over the ranks

As MORI does, a token travels once to each rank that owns at least one of its experts (not once per
expert), with all k ids and weights; on arrival the ids of experts the rank does not own read -1 and
their weights 0, so the local expert computation (e.g. ``fused_moe`` on the received rows) applies
exactly the weights of its own experts. ``moe_combine`` adds, for each source token, the rows the
ranks send back: the weighted sum of all k experts once each rank has weighted its own.

Receive buffer: ``max_recv`` rows (default n * T, which no routing can overflow), n blocks of
``max_recv / n``: block s holds what rank s sent, in its token order, ``counts[s]`` rows of it
valid, the rest zeros with ids -1 and ``src_index`` -1. A routing that sends more than
``max_recv / n`` tokens from one rank to another is refused with an error naming the ranks' counts
(``on_overflow="error"``, the default: the check reads one count per call on the host, so it is
added only when ``max_recv`` is below n * T) or its extra tokens dropped and counted in
``dropped`` (``on_overflow="drop"``).

Gradients: ``jax.custom_vjp`` on the two moves: dispatch's gradient is a combine of the received
rows' cotangents (x, weights and scales), combine's is a dispatch of the output's.

The tier here is XLA's collectives (``jax.lax.all_to_all`` of fixed-size blocks): it works across
hosts and on every backend, CPU included. The intra-node peer tier of the issue (kernels storing
into peer GPUs' buffers) is not built yet.

Composing with a jit-sharded model: run the MoE layer under ``jax.shard_map`` with the tokens
sharded over the expert axis (``P("ep", None)``) and the expert weights sharded over their expert
dimension (``P("ep", ...)``); outside it the model stays jit-sharded (python/jax_aiter/_partition.py
gives our other ops their rules); the layer's inputs and outputs are token-sharded arrays.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["DispatchHandle", "Dispatched", "moe_combine", "moe_dispatch"]

_OP = "jax_aiter.moe_dispatch"


class DispatchHandle(NamedTuple):
    """What ``moe_combine`` needs of a dispatch: ``slots[t, d]``, the row of the block token t was
    sent to rank d in (-1: not sent there, or dropped)."""
    slots: jax.Array  # int32 [T, n]


class Dispatched(NamedTuple):
    """The rows a rank received (``max_recv`` of them, n blocks; module docstring)."""
    x: jax.Array           # [max_recv, H]
    ids: jax.Array         # int32 [max_recv, k]: global expert ids, -1 where not this rank's
    weights: jax.Array     # [max_recv, k]: 0 where ids is -1
    scales: jax.Array | None  # [max_recv, S] (FP8 dispatch's per-token scales) or None
    src_rank: jax.Array    # int32 [max_recv]: the rank a row came from, -1 for an empty row
    src_index: jax.Array   # int32 [max_recv]: its token index there, -1 for an empty row
    counts: jax.Array      # int32 [n]: valid rows of each block
    dropped: jax.Array     # int32 []: tokens this rank could not send (on_overflow="drop")
    handle: DispatchHandle


def _axis_size(axis_name) -> int:
    return jax.lax.axis_size(axis_name)


# ---- the two moves, each the other's transpose -----------------------------------------------
# send: rows [T, X] -> [n * C, X] received (block s from rank s); back: [n * C, X] -> [T, X] summed
# over the ranks a token went to. `slots` [T, n] (int32, -1 none) says where token t sits in the
# block for rank d.

def _send_impl(rows, slots, axis_name, capacity):
    n = slots.shape[1]
    t = rows.shape[0]
    # Which token fills row c of the block for rank d: scatter the token indices (cheap), then
    # gather the rows (no scatter of wide data).
    d_idx = jnp.broadcast_to(jnp.arange(n, dtype=jnp.int32)[None, :], slots.shape)
    tok = jnp.broadcast_to(jnp.arange(t, dtype=jnp.int32)[:, None], slots.shape)
    flat_slot = jnp.where(slots >= 0, d_idx * capacity + slots, n * capacity)
    src = jnp.full((n * capacity,), -1, jnp.int32).at[flat_slot.reshape(-1)].set(
        tok.reshape(-1), mode="drop")
    block = jnp.where((src >= 0)[:, None], rows[jnp.maximum(src, 0)], jnp.zeros((), rows.dtype))
    block = block.reshape(n, capacity, *rows.shape[1:])
    recv = jax.lax.all_to_all(block, axis_name, split_axis=0, concat_axis=0)
    return recv.reshape(n * capacity, *rows.shape[1:])


def _back_impl(rows, slots, axis_name, capacity):
    n = slots.shape[1]
    back = jax.lax.all_to_all(rows.reshape(n, capacity, *rows.shape[1:]), axis_name,
                              split_axis=0, concat_axis=0)
    acc = jnp.zeros((slots.shape[0], *rows.shape[1:]), jnp.float32)
    for d in range(n):  # n is small and static: n gathers of [T, X], no [T, n, X] temporary
        got = back[d][jnp.maximum(slots[:, d], 0)].astype(jnp.float32)
        acc = acc + jnp.where((slots[:, d] >= 0)[:, None], got, 0.0)
    return acc.astype(rows.dtype)


@functools.partial(jax.custom_vjp, nondiff_argnums=(2, 3))
def _send(rows, slots, axis_name, capacity):
    return _send_impl(rows, slots, axis_name, capacity)


def _send_fwd(rows, slots, axis_name, capacity):
    return _send_impl(rows, slots, axis_name, capacity), slots


def _send_bwd(axis_name, capacity, slots, g):
    return _back_impl(g, slots, axis_name, capacity), np.zeros(slots.shape, jax.dtypes.float0)


_send.defvjp(_send_fwd, _send_bwd)


@functools.partial(jax.custom_vjp, nondiff_argnums=(2, 3))
def _back(rows, slots, axis_name, capacity):
    return _back_impl(rows, slots, axis_name, capacity)


def _back_fwd(rows, slots, axis_name, capacity):
    return _back_impl(rows, slots, axis_name, capacity), slots


def _back_bwd(axis_name, capacity, slots, g):
    return _send_impl(g, slots, axis_name, capacity), np.zeros(slots.shape, jax.dtypes.float0)


_back.defvjp(_back_fwd, _back_bwd)


# ---- checks ----------------------------------------------------------------------------------

def _err(operand, msg):
    return ValueError(f"{_OP}: operand {operand}: {msg}")


def _check(x, topk_ids, topk_weights, scales, num_experts, n, max_recv):
    if x.ndim != 2:
        raise _err("x", f"expected [T, H] (the rank's tokens), got shape {x.shape}")
    t = x.shape[0]
    if topk_ids.ndim != 2 or topk_ids.shape[0] != t:
        raise _err("topk_ids", f"expected [{t}, k] (T from x), got shape {topk_ids.shape}")
    if not jnp.issubdtype(topk_ids.dtype, jnp.integer):
        raise _err("topk_ids", f"expected an integer dtype, got {topk_ids.dtype}")
    if topk_weights.shape != topk_ids.shape:
        raise _err("topk_weights", f"expected shape {topk_ids.shape} (that of topk_ids), got "
                   f"{topk_weights.shape}")
    if not jnp.issubdtype(topk_weights.dtype, jnp.floating):
        raise _err("topk_weights", f"expected a floating dtype, got {topk_weights.dtype}")
    if scales is not None and (scales.ndim != 2 or scales.shape[0] != t):
        raise _err("scales", f"expected [{t}, S] (one row per token), got shape {scales.shape}")
    if not isinstance(num_experts, (int, np.integer)) or num_experts < 1 or num_experts % n:
        raise ValueError(f"{_OP}: attribute num_experts: expected a positive multiple of the "
                         f"{n} ranks of the expert axis, got {num_experts}")
    if max_recv is not None and (max_recv < n or max_recv % n):
        raise ValueError(f"{_OP}: attribute max_recv: expected a positive multiple of the {n} "
                         f"ranks (n blocks of max_recv / n rows), got {max_recv}")


def _raise_overflow(counts, capacity):
    counts = np.asarray(counts)
    if (counts > capacity).any():
        d = int(np.argmax(counts))
        raise RuntimeError(
            f"{_OP}: max_recv overflow: this rank routes {int(counts[d])} tokens to rank {d}, more "
            f"than the {capacity} rows (max_recv / n) of a receive block (per-rank counts "
            f"{counts.tolist()}); raise max_recv (n * T never overflows) or pass "
            f"on_overflow=\"drop\"")


# ---- the API ---------------------------------------------------------------------------------

def moe_dispatch(x, topk_ids, topk_weights, scales=None, *, num_experts: int, axis_name,
                 max_recv: int | None = None, on_overflow: str = "error") -> Dispatched:
    """Sends each of this rank's tokens to the ranks owning its experts (module docstring).

    Call inside ``shard_map`` over ``axis_name``, per rank:
      x: [T, H] tokens (any dtype; fp8 with ``scales`` for an FP8 dispatch).
      topk_ids: int [T, k] global expert ids in [0, num_experts) (ids outside it go nowhere).
      topk_weights: float [T, k].
      scales: optional [T, S] per-token scales sent with x (e.g. the FP8 block scales).
      num_experts: E, a multiple of the axis size n.
      max_recv: rows of the receive buffer, a multiple of n (default n * T).
      on_overflow: "error" (default) or "drop" (module docstring).
    Returns ``Dispatched``; its ``handle`` goes to ``moe_combine``.
    """
    x, topk_ids, topk_weights = jnp.asarray(x), jnp.asarray(topk_ids), jnp.asarray(topk_weights)
    scales = None if scales is None else jnp.asarray(scales)
    n = _axis_size(axis_name)
    _check(x, topk_ids, topk_weights, scales, num_experts, n, max_recv)
    if on_overflow not in ("error", "drop"):
        raise ValueError(f"{_OP}: attribute on_overflow: expected \"error\" or \"drop\", got "
                         f"{on_overflow!r}")
    t = x.shape[0]
    capacity = (max_recv if max_recv is not None else n * t) // n
    per_rank = num_experts // n
    ids = topk_ids.astype(jnp.int32)
    owner = jnp.where((ids >= 0) & (ids < num_experts), ids // per_rank, -1)
    goes = (owner[:, :, None] == jnp.arange(n, dtype=jnp.int32)[None, None, :]).any(axis=1)
    pos = jnp.cumsum(goes.astype(jnp.int32), axis=0) - 1
    wanted = goes.sum(axis=0).astype(jnp.int32)  # [n] tokens this rank routes to each rank
    if on_overflow == "error" and capacity < t:
        jax.debug.callback(_raise_overflow, wanted, capacity)
    slots = jnp.where(goes & (pos < capacity), pos, -1).astype(jnp.int32)
    sent = jnp.minimum(wanted, capacity)
    dropped = (wanted - sent).sum().astype(jnp.int32)

    me = jax.lax.axis_index(axis_name)
    tok = jnp.arange(t, dtype=jnp.int32)[:, None]
    # Integer rows travel without gradients: ids, source index; +1 so that an empty row reads -1.
    meta = jnp.concatenate([ids + 1, tok + 1], axis=1)
    recv_meta = _send_impl(meta, slots, axis_name, capacity) - 1
    recv_ids, recv_src = recv_meta[:, :-1], recv_meta[:, -1]
    counts = jax.lax.all_to_all(sent.reshape(n, 1), axis_name, 0, 0).reshape(n)
    rows = jnp.arange(n * capacity, dtype=jnp.int32)
    src_rank = jnp.where(recv_src >= 0, rows // capacity, -1)
    mine = (recv_ids >= me * per_rank) & (recv_ids < (me + 1) * per_rank)
    recv_x = _send(x, slots, axis_name, capacity)
    recv_w = _send(topk_weights, slots, axis_name, capacity)
    recv_w = jnp.where(mine, recv_w, jnp.zeros((), recv_w.dtype))
    recv_s = None if scales is None else _send(scales, slots, axis_name, capacity)
    return Dispatched(recv_x, jnp.where(mine, recv_ids, -1), recv_w, recv_s, src_rank, recv_src,
                      counts, dropped, DispatchHandle(slots))


def moe_combine(y, handle: DispatchHandle, *, axis_name):
    """Returns each source token's sum of the rows the ranks computed for it (module docstring).

    Call inside the same ``shard_map`` as the dispatch: ``y`` [max_recv, H] in the received rows'
    order (each row already weighted by its rank's experts), ``handle`` the dispatch's. Returns
    [T, H] in y's dtype (summed in float32).
    """
    y = jnp.asarray(y)
    if not isinstance(handle, DispatchHandle):
        raise TypeError(f"jax_aiter.moe_combine: operand handle: expected the DispatchHandle of "
                        f"moe_dispatch, got {type(handle).__name__}")
    n = _axis_size(axis_name)
    if handle.slots.ndim != 2 or handle.slots.shape[1] != n:
        raise ValueError(f"jax_aiter.moe_combine: operand handle: expected slots [T, {n}] (one "
                         f"column per rank of {axis_name!r}), got {handle.slots.shape}")
    if y.ndim != 2 or y.shape[0] % n:
        raise ValueError(f"jax_aiter.moe_combine: operand y: expected [max_recv, H] with max_recv "
                         f"a multiple of {n} (the dispatch's receive rows), got shape {y.shape}")
    return _back(y, handle.slots, axis_name, y.shape[0] // n)
