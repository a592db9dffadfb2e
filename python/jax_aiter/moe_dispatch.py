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

Tiers (``tier=``): "xla" (the default), XLA's collectives (``jax.lax.all_to_all`` of fixed-size
blocks): works across hosts and on every backend, CPU included; "peer", the intra-node peer tier
(``aiter.peer_all_to_all``): kernels store each rank's rows straight into the other ranks'
receive buffers (peer access between the devices of this process; on the CPU the mesh's host
devices are the peers), only the rows that exist, with completion flags in device memory and a
wait bounded by ``timeout_ms``: a rank that never arrives makes the others give up with status
set (``Dispatched.status``), the timeout recorded (``peer_errors()``), and every later exchange
of that mesh refused with an error saying so until ``reset_peer_groups()``. It needs the mesh
(``mesh=``, the one shard_map runs over). A mesh spanning processes (one process per GPU, after
``jax.distributed.initialize``) works too: each rank then owns a staging buffer the others store
into (IPC handles, or shared memory on the CPU, exchanged through jax.distributed's key-value store
while tracing) and copies its rows out of it; on GPUs each process holds one device of the mesh.

Composing with a jit-sharded model: run the MoE layer under ``jax.shard_map`` with the tokens
sharded over the expert axis (``P("ep", None)``) and the expert weights sharded over their expert
dimension (``P("ep", ...)``); outside it the model stays jit-sharded (python/jax_aiter/_partition.py
gives our other ops their rules); the layer's inputs and outputs are token-sharded arrays.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jax_aiter import _call, _ffi

__all__ = ["DispatchHandle", "Dispatched", "moe_combine", "moe_dispatch", "peer_errors",
           "reset_peer_groups"]

_OP = "jax_aiter.moe_dispatch"


@functools.partial(jax.tree_util.register_dataclass, data_fields=["slots", "counts"],
                   meta_fields=["exchange"])
@dataclasses.dataclass(frozen=True)
class DispatchHandle:
    """What ``moe_combine`` needs of a dispatch: ``slots[t, d]``, the row of the block token t was
    sent to rank d in (-1: not sent there, or dropped); ``counts``, the rows received from each
    rank (the peer tier sends back only those; None: all rows); ``exchange``, the tier and mesh
    the dispatch used (static; None: XLA's collectives)."""
    slots: jax.Array  # int32 [T, n]
    counts: jax.Array | None = None  # int32 [n]
    exchange: object = None


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
    status: jax.Array | None = None  # int32 [4], peer tier: (0 or timeout code, rank, call, 0)


def _axis_size(axis_name) -> int:
    return jax.lax.axis_size(axis_name)


# ---- the two moves, each the other's transpose -----------------------------------------------
# send: rows [T, X] -> [n * C, X] received (block s from rank s); back: [n * C, X] -> [T, X] summed
# over the ranks a token went to. `slots` [T, n] (int32, -1 none) says where token t sits in the
# block for rank d.

def _pack(arrays):
    """[T, ...] arrays of any dtypes -> one uint8 [T, B] (their bytes side by side) and how to
    undo it: every field of a token travels in one all-to-all (each collective costs a launch and
    a rendezvous: five separate ones made the dispatch 4 to 20 x slower than the combine on
    H200s), and fp8 travels as bytes (NCCL has no fp8 type)."""
    cols, spec = [], []
    for a in arrays:
        flat = a.reshape(a.shape[0], -1)
        raw = flat if flat.dtype == jnp.uint8 else jax.lax.bitcast_convert_type(flat, jnp.uint8)
        raw = raw.reshape(a.shape[0], -1)
        cols.append(raw)
        spec.append((a.shape[1:], a.dtype, raw.shape[1]))
    return (cols[0] if len(cols) == 1 else jnp.concatenate(cols, axis=1)), tuple(spec)


def _unpack(packed, spec):
    out, at = [], 0
    for shape, dtype, width in spec:
        raw = packed[:, at:at + width]
        at += width
        size = jnp.dtype(dtype).itemsize
        if dtype != jnp.uint8:
            raw = raw.reshape(raw.shape[0], -1, size) if size > 1 else raw
            raw = jax.lax.bitcast_convert_type(raw, dtype)
        out.append(raw.reshape(packed.shape[0], *shape))
    return out


@dataclasses.dataclass(frozen=True)
class _Exchange:
    """How the rows move (static): the axis, the receive block's rows, the tier and, for the peer
    tier, the mesh (its devices' ordinals, the axis's stride, every axis's name and stride)."""
    axis_name: object
    capacity: int
    tier: str = "xla"
    devices: str = ""
    stride: int = 1
    axes: tuple = ()  # ((name, stride), ...) of the mesh, for this device's mesh index
    timeout_ms: int = 10000
    # A mesh spanning processes: its platform and this process's ((mesh position, ordinal), ...);
    # `devices` then lists global device ids.
    platform: str = ""
    local: tuple = ()

    def position(self):
        mesh_index = sum(jax.lax.axis_index(a) * st for a, st in self.axes)
        return jnp.stack([mesh_index, jax.lax.axis_index(self.axis_name)]).astype(jnp.int32)


def _pad16(a):
    pad = -a.shape[1] % 16  # the peer kernels move 16-byte words
    return jnp.pad(a, ((0, 0), (0, pad))) if pad else a


def _move(ex, arrays, src, identity=False):
    """Rows of `arrays` ([R, ...] each), src [n, C] (row for (rank d, row c); -1 ends rank d's
    rows) -> (received [n * C, ...] each, counts [n] or None, status [4] or None). XLA's tier
    packs every field into one byte row; the peer tier moves the first field from and into its
    own array when its rows are whole 16-byte words (the tokens) and packs only the others.
    identity: src is row d * C + c everywhere (XLA's tier then moves the rows as they are)."""
    n, c = src.shape
    if ex.tier == "xla":
        packed, spec = _pack(arrays)
        if identity:
            block = packed.reshape(n, c, -1)
        else:
            block = jnp.where((src >= 0)[..., None], packed[jnp.maximum(src, 0)], jnp.uint8(0))
        recv = jax.lax.all_to_all(block, ex.axis_name, 0, 0)
        return _unpack(recv.reshape(n * c, -1), spec), None, None
    first = arrays[0]
    whole = first.ndim == 2 and (first.shape[1] * first.dtype.itemsize) % 16 == 0 and \
        first.shape[1] > 0
    main, rest = (first, arrays[1:]) if whole else (None, arrays)
    if rest:
        side, spec = _pack(rest)
    else:
        side, spec = jnp.zeros((first.shape[0], 0), jnp.uint8), ()
    width = side.shape[1]
    side = _pad16(side)
    if main is None:
        main, side = side, jnp.zeros((side.shape[0], 0), jnp.uint8)
    staging = 0
    if ex.local:  # across processes: every rank's block of both fields, in its staging buffer
        row_bytes = main.shape[1] * main.dtype.itemsize + side.shape[1] * side.dtype.itemsize
        staging = n * c * row_bytes
        _set_up_across_processes(ex, staging)
    out = _call.call("aiter.peer_all_to_all",
                     inputs={"rows": main, "side": side, "src": src, "position": ex.position()},
                     outputs={"recv": ((n, c, main.shape[1]), main.dtype),
                              "side_recv": ((n, c, side.shape[1]), side.dtype),
                              "counts": ((n,), jnp.int32), "status": ((4,), jnp.int32)},
                     attributes={"devices": ex.devices, "stride": ex.stride,
                                 "timeout_ms": ex.timeout_ms, "staging_bytes": staging})
    recv, side_recv = out["recv"].reshape(n * c, -1), out["side_recv"].reshape(n * c, -1)
    if whole:
        fields = [recv] + (_unpack(side_recv[:, :width], spec) if rest else [])
    else:
        fields = _unpack(recv[:, :width], spec)
    return fields, out["counts"], out["status"]


def _send_impl(arrays, slots, ex):
    """Rows of every array in `arrays` ([T, ...]) -> (the received [n * capacity, ...] rows,
    counts, status)."""
    n = slots.shape[1]
    t = slots.shape[0]
    capacity = ex.capacity
    # Which token fills row c of the block for rank d: scatter the token indices (cheap), then
    # gather the rows (no scatter of wide data). Each block's rows are a prefix (slots count up).
    d_idx = jnp.broadcast_to(jnp.arange(n, dtype=jnp.int32)[None, :], slots.shape)
    tok = jnp.broadcast_to(jnp.arange(t, dtype=jnp.int32)[:, None], slots.shape)
    flat_slot = jnp.where(slots >= 0, d_idx * capacity + slots, n * capacity)
    src = jnp.full((n * capacity,), -1, jnp.int32).at[flat_slot.reshape(-1)].set(
        tok.reshape(-1), mode="drop")
    return _move(ex, list(arrays), src.reshape(n, capacity))


def _back_impl(arrays, slots, counts, ex):
    """Received rows of every array ([n * capacity, ...]) -> [T, ...] each, summed (f32) over
    the ranks each token went to. counts: the rows received from each rank (None: all)."""
    n = slots.shape[1]
    capacity = ex.capacity
    rows = jnp.arange(n * capacity, dtype=jnp.int32).reshape(n, capacity)
    if counts is not None:
        rows = jnp.where(jnp.arange(capacity)[None, :] < counts[:, None], rows, -1)
    back, _, _ = _move(ex, list(arrays), rows, identity=counts is None)
    parts = [[f.reshape(n, capacity, *f.shape[1:])[d] for f in back] for d in range(n)]
    out = []
    for i, a in enumerate(arrays):
        acc = jnp.zeros((slots.shape[0], *a.shape[1:]), jnp.float32)
        for d in range(n):  # n is small and static: n gathers of [T, X], no [T, n, X] temporary
            got = parts[d][i][jnp.maximum(slots[:, d], 0)].astype(jnp.float32)
            ok = (slots[:, d] >= 0).reshape(-1, *([1] * (a.ndim - 1)))
            acc = acc + jnp.where(ok, got, 0.0)
        out.append(acc.astype(a.dtype))
    return out


def _differentiable(a) -> bool:
    return jnp.issubdtype(a.dtype, jnp.floating)


def _no_grad(a):
    return np.zeros(a.shape, jax.dtypes.float0)


@functools.partial(jax.custom_vjp, nondiff_argnums=(2,))
def _send(arrays, slots, ex):
    """-> (received arrays, counts [n] (None on the xla tier), status [4] or None)."""
    recv, counts, status = _send_impl(arrays, slots, ex)
    return tuple(recv), counts, status


def _send_fwd(arrays, slots, ex):
    out = _send(arrays, slots, ex)
    return out, (slots, out[1])  # the routing only: not x itself


def _send_bwd(ex, res, cts):
    slots, counts = res
    gs = cts[0]
    # A received field's cotangent has its dtype: float0 for the integer fields.
    idx = [i for i, g in enumerate(gs) if _differentiable(g)]
    back = _back_impl([gs[i] for i in idx], slots, counts, ex) if idx else []
    grads = [np.zeros((slots.shape[0], *g.shape[1:]), jax.dtypes.float0) for g in gs]
    for i, g in zip(idx, back):
        grads[i] = g
    return tuple(grads), _no_grad(slots)


_send.defvjp(_send_fwd, _send_bwd)


@functools.partial(jax.custom_vjp, nondiff_argnums=(3,))
def _back(rows, slots, counts, ex):
    return _back_impl([rows], slots, counts, ex)[0]


def _back_fwd(rows, slots, counts, ex):
    return _back(rows, slots, counts, ex), (slots, counts)


def _back_bwd(ex, res, g):
    slots, counts = res
    sent, _, _ = _send_impl([g], slots, ex)
    return sent[0], _no_grad(slots), None if counts is None else _no_grad(counts)


_back.defvjp(_back_fwd, _back_bwd)


# ---- the peer tier's mesh and its recovery ---------------------------------------------------

def _peer_exchange(axis_name, capacity, mesh, timeout_ms) -> _Exchange:
    if mesh is None:
        raise ValueError(f"{_OP}: attribute mesh: the peer tier needs the jax.sharding.Mesh the "
                         f"shard_map runs over (mesh=...), got None")
    names = tuple(mesh.axis_names)
    if axis_name not in names:
        raise ValueError(f"{_OP}: attribute axis_name: {axis_name!r} is not an axis of the mesh "
                         f"{names}")
    devices = list(mesh.devices.flat)
    here = jax.process_index()
    platform, local = "", ()
    if any(d.process_index != here for d in devices):
        platform = getattr(devices[0].client, "platform", devices[0].platform)
        local = tuple((i, _ordinal(d)) for i, d in enumerate(devices) if d.process_index == here)
        if platform != "cpu" and len(local) != 1:
            raise NotImplementedError(
                f"{_OP}: the peer tier across processes takes one GPU per process; this process "
                f"has {len(local)} devices of the mesh (use one process for all of a node's GPUs, "
                f"or tier=\"xla\")")
        if _distributed_client() is None:
            raise RuntimeError(f"{_OP}: the peer tier on a mesh spanning processes sets its group "
                               f"up through jax.distributed: call jax.distributed.initialize() "
                               f"first")
    sizes = dict(zip(names, mesh.devices.shape))
    strides, acc = {}, 1
    for name in reversed(names):
        strides[name] = acc
        acc *= sizes[name]
    if not isinstance(timeout_ms, (int, np.integer)) or not 1 <= timeout_ms <= 3600 * 1000:
        raise ValueError(f"{_OP}: attribute timeout_ms: expected an int from 1 to 3,600,000, got "
                         f"{timeout_ms!r}")
    ids = [d.id for d in devices] if local else [_ordinal(d) for d in devices]
    return _Exchange(axis_name, capacity, "peer", ",".join(map(str, ids)), strides[axis_name],
                     tuple((a, strides[a]) for a in names), int(timeout_ms), platform, local)


def _ordinal(d):
    return d.local_hardware_id if d.local_hardware_id is not None else d.id


def _distributed_client():
    from jax._src import distributed  # the key-value store of jax.distributed.initialize
    return distributed.global_state.client


_SETUP_TIMEOUT_MS = 300_000  # every process must reach the same exchange while tracing
_set_up: set = set()
_set_up_lock = threading.Lock()


def _set_up_across_processes(ex: _Exchange, staging: int) -> None:
    """The peer group of a mesh spanning processes, once per (mesh, staging size), while tracing
    (every process traces the same program): each process stages its devices' slot and staging
    buffer and publishes their handles in jax.distributed's key-value store, maps every other
    process's, waits until all have, and seals (runtime/peer_groups.hpp)."""
    key = (ex.platform, ex.devices, staging)
    with _set_up_lock:
        if key in _set_up:
            return
        client = _distributed_client()
        prefix = f"jax_aiter/peer/{ex.platform}/{ex.devices}/{staging}"
        for position, device in ex.local:
            handle = _ffi.peer_stage(ex.platform, ex.devices, staging, position, device)
            client.key_value_set(f"{prefix}/{position}", handle)
        mine = {position for position, _ in ex.local}
        for position in range(len(ex.devices.split(","))):
            if position not in mine:
                handle = client.blocking_key_value_get(f"{prefix}/{position}", _SETUP_TIMEOUT_MS)
                _ffi.peer_join(ex.platform, ex.devices, staging, position, handle)
        client.wait_at_barrier(f"{prefix}/joined", _SETUP_TIMEOUT_MS)
        _ffi.peer_seal(ex.platform, ex.devices, staging)
        _set_up.add(key)


def peer_errors() -> list[dict]:
    """The peer tier's recorded timeouts, one dict per device that gave up: its mesh (``devices``),
    ``position`` in it, the peer ``rank`` it waited for (``peer``), the exchange number
    (``epoch``), ``waited_ms`` and ``code`` (1: the peer never started the exchange; 2: it never
    finished sending). Empty when none timed out."""
    return _ffi.peer_report()


def reset_peer_groups() -> None:
    """Forgets every peer group's state (exchange counts, flags, recorded timeouts), so that
    exchanges run again after a timeout. Call it only while no exchange is running on any rank
    (e.g. after ``jax.block_until_ready`` of every step that dispatched)."""
    _ffi.peer_reset()


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
                 max_recv: int | None = None, on_overflow: str = "error", tier: str = "xla",
                 mesh=None, timeout_ms: int = 10000) -> Dispatched:
    """Sends each of this rank's tokens to the ranks owning its experts (module docstring).

    Call inside ``shard_map`` over ``axis_name``, per rank:
      x: [T, H] tokens (any dtype; fp8 with ``scales`` for an FP8 dispatch).
      topk_ids: int [T, k] global expert ids in [0, num_experts) (ids outside it go nowhere).
      topk_weights: float [T, k].
      scales: optional [T, S] per-token scales sent with x (e.g. the FP8 block scales).
      num_experts: E, a multiple of the axis size n.
      max_recv: rows of the receive buffer, a multiple of n (default n * T).
      on_overflow: "error" (default) or "drop" (module docstring).
      tier: "xla" (XLA's all-to-all, the default) or "peer" (the intra-node peer kernels; needs
        ``mesh``, the mesh of the shard_map, and bounds every wait by ``timeout_ms``).
    Returns ``Dispatched``; its ``handle`` goes to ``moe_combine`` (which uses the same tier).
    """
    x, topk_ids, topk_weights = jnp.asarray(x), jnp.asarray(topk_ids), jnp.asarray(topk_weights)
    scales = None if scales is None else jnp.asarray(scales)
    n = _axis_size(axis_name)
    _check(x, topk_ids, topk_weights, scales, num_experts, n, max_recv)
    if on_overflow not in ("error", "drop"):
        raise ValueError(f"{_OP}: attribute on_overflow: expected \"error\" or \"drop\", got "
                         f"{on_overflow!r}")
    if tier not in ("xla", "peer"):
        raise ValueError(f"{_OP}: attribute tier: expected \"xla\" or \"peer\", got {tier!r}")
    t = x.shape[0]
    capacity = (max_recv if max_recv is not None else n * t) // n
    ex = (_Exchange(axis_name, capacity) if tier == "xla"
          else _peer_exchange(axis_name, capacity, mesh, timeout_ms))
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
    # Every field of a token in one exchange; the integer fields (ids, source index) travel +1
    # so that an empty row reads -1, and carry no gradient.
    meta = jnp.concatenate([ids + 1, tok + 1], axis=1)
    fields = (x, topk_weights, meta) + (() if scales is None else (scales,))
    recv, peer_counts, status = _send(fields, slots, ex)
    recv_x, recv_w, recv_meta = recv[0], recv[1], recv[2] - 1
    recv_s = None if scales is None else recv[3]
    recv_ids, recv_src = recv_meta[:, :-1], recv_meta[:, -1]
    counts = (recv_src >= 0).reshape(n, capacity).sum(axis=1).astype(jnp.int32)
    rows = jnp.arange(n * capacity, dtype=jnp.int32)
    src_rank = jnp.where(recv_src >= 0, rows // capacity, -1)
    mine = (recv_ids >= me * per_rank) & (recv_ids < (me + 1) * per_rank)
    recv_w = jnp.where(mine, recv_w, jnp.zeros((), recv_w.dtype))
    handle = DispatchHandle(slots, peer_counts, None if tier == "xla" else ex)
    return Dispatched(recv_x, jnp.where(mine, recv_ids, -1), recv_w, recv_s, src_rank, recv_src,
                      counts, dropped, handle, status)


def moe_combine(y, handle: DispatchHandle, *, axis_name):
    """Returns each source token's sum of the rows the ranks computed for it (module docstring).

    Call inside the same ``shard_map`` as the dispatch: ``y`` [max_recv, H] in the received rows'
    order (each row already weighted by its rank's experts), ``handle`` the dispatch's (its tier
    moves the rows back). Returns [T, H] in y's dtype (summed in float32).
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
    capacity = y.shape[0] // n
    ex = handle.exchange
    ex = _Exchange(axis_name, capacity) if ex is None else dataclasses.replace(ex,
                                                                               capacity=capacity)
    return _back(y, handle.slots, handle.counts, ex)
