"""MoE routing: top-k softmax over router logits, and the sort of the routed tokens into AITER's
layout for its fused-MoE kernels (docs/ops/moe.md).

  weights, ids = topk_softmax(logits, k, renormalize=True)    # [T, E] -> f32 [T, k], i32 [T, k]
  s = moe_sorting(ids, weights, num_experts, block_m)         # AITER's moe_sorting_fwd layout

``topk_softmax``: softmax over the experts in float32 (from bf16, f16 or f32 logits), the k
experts of largest probability, chosen by logit (the same order; equal logits go to the lower
expert id, as AITER's ArgMax), in decreasing order; weights are the softmax probabilities of the
chosen experts, or with ``renormalize`` those divided by their sum (each row sums to 1). A NaN
logit makes its row's weights NaN (and ranks below every number).

``moe_sorting``: the (token, slot) entries grouped by expert, experts in id order, tokens
increasing within an expert, each expert's group padded to a multiple of ``block_m`` rows (an
expert with no token gets none): ``sorted_token_ids`` holds ``(slot << 24) | token`` (as int32),
padding rows ``(k << 24) | T`` with weight 0; ``sorted_expert_ids`` the expert of each block of
``block_m`` rows (-1 past the rows used); ``num_valid_ids = [rows used, T]``. Sizes are AITER's:
``T*k + num_experts*block_m - k`` rows (``moe_sorting_sizes``). Ids outside ``[0, num_experts)``
are dropped (no row): expert parallelism may mark the experts of other devices so. AITER's sort
also zeroes the fused MoE's output buffer (``moe_buf``); here that buffer belongs to the fused
MoE op, which zeroes its own output, so ``moe_sorting`` returns none.

Gradients: ``topk_softmax`` is differentiable in its weights (the router learns through them;
the backward is the softmax's, in jnp, over the chosen experts with ``renormalize``, over all
otherwise); ``moe_sorting``'s ``sorted_weights`` pass their gradient back to ``weights`` (a scatter
by ``sorted_token_ids``). Ids are integers: no gradient.

Shardings under ``jax.jit``: ``topk_softmax`` with the tokens split runs locally (no collective);
the expert dim is needed whole (a split one is gathered). ``moe_sorting``'s layout depends on
every token (its size too), so its inputs are gathered first (T*k ids and weights, small) and each
device sorts all of them; a fused MoE with its tokens split sorts its own shard inside its local
function. Inside ``shard_map``, each call sorts the tokens of its shard.
"""

from __future__ import annotations

import functools
import operator
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jax_aiter import _call, _partition
from jax_aiter._call import Dispatch, Static

# What the package exports from this module (jax_aiter/__init__.py).
__all__ = ["MoeSorted", "moe_sorting", "moe_sorting_sizes", "topk_softmax"]

_F32, _I32 = np.dtype(np.float32), np.dtype(np.int32)
_TOKEN_BITS = 24  # kernels/shared/moe_routing.h


class MoeSorted(NamedTuple):
    """``moe_sorting``'s result: AITER's sorted layout (see the module's doc)."""
    sorted_token_ids: jax.Array   # i32 [P]: (slot << 24) | token; padding (k << 24) | T
    sorted_weights: jax.Array     # f32 [P]: the entry's weight; 0 on padding rows
    sorted_expert_ids: jax.Array  # i32 [P / block_m]: the expert of each block; -1 past the end
    num_valid_ids: jax.Array      # i32 [2]: rows used (the last expert's padding included), T


def _packed(token: int, slot: int) -> np.int32:
    """AITER's row id ``(slot << 24) | token`` as int32 (slots from 128 up set the sign bit)."""
    return np.array((slot << _TOKEN_BITS) | token, np.uint32).view(np.int32)[()]


def moe_sorting_sizes(tokens: int, topk: int, num_experts: int, block_m: int) -> tuple[int, int]:
    """(rows, blocks) of ``moe_sorting``'s outputs: AITER's max_num_tokens_padded
    ``tokens*topk + num_experts*block_m - topk`` and ``ceil(rows / block_m)``."""
    rows = max(tokens * topk + num_experts * block_m - topk, 0)
    return rows, (-(-rows // block_m) if block_m > 0 else 0)


# ---- the calls ---------------------------------------------------------------------------------

def _topk_io(logits, k: int, renormalize: bool, kernel: str = ""):
    t = logits.shape[0] if logits.ndim else 0
    return ({"logits": logits}, {"weights": ((t, k), _F32), "ids": ((t, k), _I32)},
            {"renormalize": bool(renormalize), "kernel": kernel})


def _kernel_topk(logits, k: int, renormalize: bool, kernel: str, dispatch: Dispatch):
    inputs, outputs, attributes = _topk_io(logits, k, renormalize, kernel)
    out = _call.call("aiter.topk_softmax", inputs=inputs, outputs=outputs,
                     attributes=attributes, dispatch=dispatch)
    return out["weights"], out["ids"]


def _sort_io(ids, weights, num_experts: int, block_m: int):
    t, k = ids.shape if ids.ndim == 2 else (0, 0)
    rows, blocks = moe_sorting_sizes(t, k, num_experts, block_m)
    outputs = {"sorted_token_ids": ((rows,), _I32), "sorted_weights": ((rows,), _F32),
               "sorted_expert_ids": ((blocks,), _I32), "num_valid_ids": ((2,), _I32)}
    return ({"ids": ids, "weights": weights}, outputs,
            {"num_experts": num_experts, "block_m": block_m})


def _kernel_sort(ids, weights, num_experts: int, block_m: int, dispatch: Dispatch):
    inputs, outputs, attributes = _sort_io(ids, weights, num_experts, block_m)
    out = _call.call("aiter.moe_sorting", inputs=inputs, outputs=outputs, attributes=attributes,
                     dispatch=dispatch)
    return tuple(out[n] for n in MoeSorted._fields)


# ---- partitioning (jax_aiter._partition) -------------------------------------------------------
#
# topk_softmax: tokens LOCAL, experts and k REPLICATE. moe_sorting: everything REPLICATE (the
# layout's rows depend on all tokens; its inputs are T*k words).

def _topk_rule(config, shapes):
    (t, e), k = shapes[0], config[0]
    F, R = _partition.Factor, _partition.REPLICATE
    factors = {"t": F(t), "e": F(e, R), "k": F(k, R)}
    tk = (("t",), ("k",))
    return _partition.Rule(((("t",), ("e",)),), (tk, tk), factors)


@_partition.op("aiter.topk_softmax", rule=_topk_rule)
def _part_topk(config, shards, logits):
    k, renormalize, kernel, dispatch = config
    return _kernel_topk(logits, k, renormalize, kernel, dispatch)


def _sort_rule(config, shapes):
    (t, k), (num_experts, block_m, _) = shapes[0], config
    rows, blocks = moe_sorting_sizes(t, k, num_experts, block_m)
    F, R = _partition.Factor, _partition.REPLICATE
    factors = {"t": F(t, R), "k": F(k, R), "p": F(rows, R), "b": F(blocks, R), "two": F(2, R)}
    tk = (("t",), ("k",))
    return _partition.Rule((tk, tk), ((("p",),), (("p",),), (("b",),), (("two",),)), factors)


@_partition.op("aiter.moe_sorting", rule=_sort_rule)
def _part_sort(config, shards, ids, weights):
    num_experts, block_m, dispatch = config
    return _kernel_sort(ids, weights, num_experts, block_m, dispatch)


# ---- top-k softmax, with the softmax's gradient ------------------------------------------------

def _topk_forward(logits, config):
    k, renormalize, kernel, dispatch = config
    inputs, outputs, attributes = _topk_io(logits, k, renormalize, kernel)
    # Validated at trace time (errors name the operand before anything runs); an empty call (no
    # token) is answered here.
    if not _call.validate("aiter.topk_softmax", inputs=inputs, outputs=outputs,
                          attributes=attributes, dispatch=dispatch):
        return jnp.zeros((0, k), _F32), jnp.zeros((0, k), _I32)
    return _part_topk(config, logits)


@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
def _topk_softmax(logits, config):
    return _topk_forward(logits, config.value)


def _topk_vjp_fwd(logits, config):
    weights, ids = _topk_forward(logits, config.value)
    return (weights, ids), (logits, weights, ids)


def _topk_vjp_bwd(config, res, cotangents):
    logits, weights, ids = res
    dw = cotangents[0].astype(_F32)  # ids' cotangent is float0: they have no gradient
    k, renormalize, _, _ = config.value
    rows = jnp.arange(logits.shape[0])[:, None]
    scatter = lambda v: jnp.zeros(logits.shape, _F32).at[rows, ids].add(v)  # noqa: E731
    if renormalize:  # weights = softmax of the chosen logits
        dl = scatter(weights * (dw - jnp.sum(dw * weights, -1, keepdims=True)))
    else:  # weights = p[ids], p = softmax of the row
        p = jax.nn.softmax(logits.astype(_F32), axis=-1)
        dp = scatter(dw)
        dl = p * (dp - jnp.sum(dp * p, -1, keepdims=True))
    return (dl.astype(logits.dtype),)


_topk_softmax.defvjp(_topk_vjp_fwd, _topk_vjp_bwd)


# ---- sorting, with the weights' gradient -------------------------------------------------------

def _sort_forward(ids, weights, config):
    num_experts, block_m, dispatch = config
    inputs, outputs, attributes = _sort_io(ids, weights, num_experts, block_m)
    if not _call.validate("aiter.moe_sorting", inputs=inputs, outputs=outputs,
                          attributes=attributes, dispatch=dispatch):
        # No token: every row padding, no block used (what the kernels would leave).
        (rows,), (blocks,) = outputs["sorted_token_ids"][0], outputs["sorted_expert_ids"][0]
        return (jnp.full((rows,), _packed(0, ids.shape[1]), _I32), jnp.zeros((rows,), _F32),
                jnp.full((blocks,), -1, _I32), jnp.zeros((2,), _I32))
    return tuple(_part_sort(config, ids, weights))


@functools.partial(jax.custom_vjp, nondiff_argnums=(2,))
def _moe_sorting(ids, weights, config):
    return _sort_forward(ids, weights, config.value)


def _sort_vjp_fwd(ids, weights, config):
    out = _sort_forward(ids, weights, config.value)
    return out, (ids, out[0])


def _sort_vjp_bwd(config, res, cotangents):
    ids, sorted_token_ids = res
    d_sorted = cotangents[1]
    packed = sorted_token_ids.astype(jnp.uint32)
    token = (packed & ((1 << _TOKEN_BITS) - 1)).astype(_I32)
    slot = (packed >> _TOKEN_BITS).astype(_I32)
    # Padding rows name token T, one past the rows: dropped. Each (token, slot) has one row at most.
    dweights = jnp.zeros(ids.shape, _F32).at[token, slot].add(d_sorted, mode="drop")
    return None, dweights


_moe_sorting.defvjp(_sort_vjp_fwd, _sort_vjp_bwd)


# ---- public API --------------------------------------------------------------------------------

def _static_int(op: str, name: str, value) -> int:
    try:
        return operator.index(value)
    except TypeError as e:
        raise TypeError(f"{op}: attribute {name}: expected a static Python int, got "
                        f"{type(value).__name__} (pass it as a static argument under jit)") from e


def _check_rank(op: str, operand: str, a, want: str) -> None:
    # The outputs' shapes are read from these dims at trace time, before C++ sees the call.
    if np.ndim(a) != 2:
        raise ValueError(f"{op}: operand {operand}: expected rank 2 ({want}), got shape "
                         f"{tuple(np.shape(a))}")


def topk_softmax(logits, k: int, renormalize: bool = True, *, kernel: str | None = None,
                 dispatch: Dispatch | None = None):
    """The k most probable experts of each token and their softmax weights (AITER's
    ``topk_softmax``).

    On ROCm (gfx942, gfx950) AITER's ASM ``topksoftmax`` kernels run it where one fits: fp32 or
    bf16 logits with (E, k) in (128, 4|6|8), (256, 6|8), (384, 8), (640, 8); our portable kernel
    runs everything else, and every call elsewhere. ``dispatch=Dispatch("asm", "gfx942")`` plans
    the ASM tier for that arch anywhere, where the kernels' ABI twins run it (CPU, CUDA).

    Args:
      logits: ``[T, E]`` router logits, bf16, f16 or f32 (1 <= E <= 4096).
      k: a static int, 1 <= k <= E.
      renormalize: divide the chosen weights by their sum (each row then sums to 1).
      kernel: an AITER topksoftmax kernel to use (by symbol or short name, e.g.
        "topksoftmax_4x128x8_bf16"); it must take the call's dtype, E and k.
      dispatch: which tier runs it (``jax_aiter.Dispatch``: "auto", "asm" or "portable").
    Returns:
      ``(weights, ids)``: f32 ``[T, k]`` and int32 ``[T, k]``, by decreasing probability; equal
      logits go to the lower expert id.
    """
    op = "aiter.topk_softmax"
    k = _static_int(op, "k", k)
    if k < 1:
        raise ValueError(f"{op}: attribute k: expected an int >= 1, got {k}")
    _check_rank(op, "logits", logits, "[T, E]")
    if kernel is not None and not isinstance(kernel, str):
        raise TypeError(f"{op}: attribute kernel: expected a str (an AITER topksoftmax kernel's "
                        f"name) or None, got {type(kernel).__name__}")
    config = (k, bool(renormalize), kernel or "", dispatch or Dispatch())
    return _topk_softmax(logits, Static(config))


def moe_sorting(ids, weights, num_experts: int, block_m: int, *,
                dispatch: Dispatch | None = None) -> MoeSorted:
    """The routed (token, slot) entries sorted by expert into AITER's layout for its fused-MoE
    kernels (``moe_sorting_fwd``; the module's doc and docs/ops/moe.md).

    Args:
      ids: int32 ``[T, k]`` expert ids (``topk_softmax``'s), 1 <= k <= min(num_experts, 255),
        T < 2^24; ids outside ``[0, num_experts)`` are dropped.
      weights: f32 ``[T, k]``.
      num_experts: a static int, 1 to 4096.
      block_m: a static int, 1 to 1024: the rows of a block of the fused-MoE kernel.
      dispatch: which tier runs it (only "portable" so far).
    Returns:
      ``MoeSorted(sorted_token_ids, sorted_weights, sorted_expert_ids, num_valid_ids)``, of
      ``moe_sorting_sizes(T, k, num_experts, block_m)`` rows and blocks.
    """
    op = "aiter.moe_sorting"
    num_experts = _static_int(op, "num_experts", num_experts)
    block_m = _static_int(op, "block_m", block_m)
    _check_rank(op, "ids", ids, "[T, k]")
    config = (num_experts, block_m, dispatch or Dispatch())
    return MoeSorted(*_moe_sorting(ids, weights, Static(config)))


# ---- jax-aiter-plan ----------------------------------------------------------------------------

def describe(tokens: int, experts: int, topk: int, dtype="bfloat16", renormalize: bool = True,
             sorting: bool = False, block_m: int = 32,
             kernel: str | None = None) -> tuple[str, dict, dict]:
    """The call jax-aiter-plan describes: target, operands name -> (dtype, shape), attrs."""
    if sorting:
        ops, outputs, attributes = _sort_io(np.zeros((tokens, topk), np.int32),
                                            np.zeros((tokens, topk), np.float32), experts,
                                            block_m)
        operands = {"ids": ("int32", (tokens, topk)), "weights": ("float32", (tokens, topk))}
    else:
        operands = {"logits": (dtype, (tokens, experts))}
        outputs = {"weights": ((tokens, topk), _F32), "ids": ((tokens, topk), _I32)}
        attributes = {"renormalize": bool(renormalize), "kernel": kernel or ""}
    operands.update({n: (np.dtype(d).name, s) for n, (s, d) in outputs.items()})
    target = "aiter.moe_sorting" if sorting else "aiter.topk_softmax"
    return target, operands, attributes


def add_plan_arguments(p) -> None:
    """jax-aiter-plan's options of this op alone (tools.py calls it); --dtype is the logits'."""
    p.add_argument("--tokens", type=int, help="topk_softmax, moe_sorting: T")
    p.add_argument("--experts", type=int, help="topk_softmax, moe_sorting: E")
    p.add_argument("--topk", type=int, help="topk_softmax, moe_sorting: k")
    p.add_argument("--block-m", type=int, default=32, help="moe_sorting: rows of a block")
    p.add_argument("--no-renormalize", action="store_true", help="topk_softmax")


def _plan_topk(p, args):
    return describe(args.tokens, args.experts, args.topk, args.dtype, not args.no_renormalize,
                    kernel=getattr(args, "kernel", None))


def _plan_sort(p, args):
    if args.block_m < 1:
        p.error(f"--block-m: expected an int >= 1, got {args.block_m}")
    return describe(args.tokens, args.experts, args.topk, sorting=True, block_m=args.block_m)


# jax-aiter-plan's commands for this op (tools.py finds them): name -> (the options a call needs,
# plan(parser, args) -> (target, operands, attributes)).
_NEEDS = ("tokens", "experts", "topk")
PLAN_COMMANDS = {"topk_softmax": (_NEEDS, _plan_topk), "aiter.topk_softmax": (_NEEDS, _plan_topk),
                 "moe_sorting": (_NEEDS, _plan_sort), "aiter.moe_sorting": (_NEEDS, _plan_sort)}
