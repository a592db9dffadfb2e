"""Fused mixture-of-experts layer (``fused_moe``), AITER's fused-MoE contract (docs/ops/moe.md).

    out = fused_moe(x, w1, w2, topk_weights, topk_ids, activation="silu")   # [T, H]

For each token t and each of its k experts e = topk_ids[t, j]:
``h = x[t] . w1[e]^T`` ([2I]: gate then up, AITER's g1u1), ``a = act(h[:I]) * h[I:]``,
``o = a . w2[e]^T`` ([H]); ``out[t] = sum_j topk_weights[t, j] * o``, as AITER's ``torch_moe``
(aiter/fused_moe.py at e4048607a5): float32 accumulation, ``act`` silu or exact gelu. x [T, H]
bf16 or f16; w1 [E, 2I, H]; w2 [E, H, I]; ids outside [0, E) contribute nothing (expert
parallelism marks other devices' experts so).

Quantized modes (``quant``), inference only, as AITER's fmoe kernels take them; x stays bf16/f16 and
the op quantizes the activations on the fly (x before the first GEMM, ``a`` before the second):

  ``"fp8_per_token"``   w1, w2 fp8 (``fp8_dtype()``), ``w1_scale`` f32 [E, 2I, 1], ``w2_scale``
                        [E, H, 1] (per output channel); activations fp8 per token.
  ``"int8_per_token"``  the same with int8 weights and activations (symmetric, round to nearest).
  ``"fp8_blockscale"``  w1, w2 fp8 with 128 x 128 block scales ``w1_scale`` [E, 2I/128, H/128],
                        ``w2_scale`` [E, H/128, I/128]; activations fp8 per (token, 128 columns).

Tiers. The portable tier (every backend) is the layer as our ops: the routed (token, expert)
entries sorted by expert (``jnp.argsort``, stable: tokens in order within an expert), two grouped
GEMMs (``grouped_gemm``: ragged, no padding to a capacity), the activation, and the weighted sum
back to the tokens. Per-token modes run their GEMMs on the exact integer / fp8 values in bf16
(both are exact in bf16) and apply the token and channel scales to the f32 result; the block-scale
mode runs ``grouped_gemm``'s fp8 block-scale kernels. AITER's fmoe ASM kernels (one-stage
g1u1 rows, gfx942/gfx950; kernels/aiter/fmoe.hpp, python/jax_aiter/_fused_moe_asm.py) run a
quantized call with pre-shuffled weights (``ShuffledWeight`` in (16, 16)) when the call asks for
them (``dispatch=Dispatch("asm", arch)``, or ``kernel=``), or on a ROCm device by default; on the
CPU and on sm_90 they run as their ABI twins. ``stages=2`` (or ``kernel=`` naming a stage-1 row)
runs AITER's two-stage tier: its fmoe_2stages stage-1 ASM kernel (aiter.fused_moe_stage1: x . w1
and the activation) then our stage 2 (``_stage2``: the down projection as one grouped GEMM, the
top-k sum), AITER's own stage 2 being a CK kernel (docs/ops/moe.md).

Gradients: bf16/f16 (``quant=None``) through ``grouped_gemm``'s custom_vjp (dgrad and wgrad as
grouped GEMMs) and jnp for the rest: x, w1, w2 and topk_weights. Quantized modes raise.

Shardings under ``jax.jit``: tokens split -> local (each shard routes its own tokens); experts
split (w1, w2 on their first dim) -> each shard computes its experts' share and the shares are
summed (one all-reduce of [T, H]); H and I are needed whole.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jax_aiter import _partition
from jax_aiter._call import Dispatch, Static
from jax_aiter import _fused_moe_asm
from jax_aiter._fused_moe_asm import add_plan_arguments, asm_fused_moe, describe  # noqa: F401
from jax_aiter.grouped_gemm import grouped_gemm
from jax_aiter.quant import (FP8_BLOCK, ShuffledWeight, fp8_dtype, quantize_fp8_blocks,
                             quantize_fp8_per_token_block, quantize_per_token, unshuffle_weight)

__all__ = ["fused_moe"]

_OP = "jax_aiter.fused_moe"
_QUANTS = (None, "fp8_per_token", "int8_per_token", "fp8_blockscale")
_ACTS = ("silu", "gelu")


def _act(name, g):
    return jax.nn.silu(g) if name == "silu" else jax.nn.gelu(g, approximate=False)


def _gemm(rows, w, w_scale, group_sizes, quant):
    """One grouped GEMM of the layer: rows [M, K] (bf16/f16) by w [G, N, K] -> f32 [M, N]. The
    activations are quantized on the fly with the package's quantizers (jax_aiter.quant)."""
    if quant is None:
        return grouped_gemm(rows, w, group_sizes, out_dtype=jnp.float32)
    if quant == "fp8_blockscale":
        q, s = quantize_fp8_per_token_block(rows)
        return grouped_gemm(q, w, group_sizes, x_scale=s, w_scale=w_scale,
                            out_dtype=jnp.bfloat16).astype(jnp.float32)
    if quant == "int8_per_token":
        q, s = quantize_per_token(rows)
    else:  # fp8 per token: one block of the whole row
        q, s = quantize_fp8_blocks(rows, (1, rows.shape[1]))
    # int8 and fp8 e4m3 values are exact in bf16: the bf16 GEMM sums the true products in f32.
    acc = grouped_gemm(q.astype(jnp.bfloat16), w.astype(jnp.bfloat16), group_sizes,
                       out_dtype=jnp.float32)
    return acc * s  # the channel scale is applied per group by the caller


def _channel_scale(acc, w_scale, expert_of_row):
    if w_scale is None:
        return acc
    return acc * w_scale[expert_of_row, :, 0]


# ---- the layer -------------------------------------------------------------------------------

def _layer(x, w1, w2, topk_weights, topk_ids, w1_scale, w2_scale, expert_lo, activation, quant):
    """The portable tier on one shard: experts [expert_lo, expert_lo + E_local) of w1/w2."""
    t, h = x.shape
    k = topk_ids.shape[1]
    e_local, n2, _ = w1.shape
    inter = n2 // 2
    ids = topk_ids.reshape(-1).astype(jnp.int32) - expert_lo
    valid = (ids >= 0) & (ids < e_local)
    key = jnp.where(valid, ids, e_local)  # entries of other experts sort last, in no group
    order = jnp.argsort(key, stable=True)
    group_sizes = jnp.bincount(key, length=e_local + 1)[:e_local].astype(jnp.int32)
    token = order // k
    rows = x[token]
    expert_of_row = jnp.minimum(key[order], e_local - 1)
    per_channel = quant in ("fp8_per_token", "int8_per_token")
    hid = _gemm(rows, w1, w1_scale, group_sizes, quant)
    if per_channel:
        hid = _channel_scale(hid, w1_scale, expert_of_row)
    a = (_act(activation, hid[:, :inter]) * hid[:, inter:]).astype(x.dtype)
    o = _gemm(a, w2, w2_scale, group_sizes, quant)
    if per_channel:
        o = _channel_scale(o, w2_scale, expert_of_row)
    w = jnp.where(valid[order], topk_weights.reshape(-1)[order].astype(jnp.float32), 0.0)
    out = jnp.zeros((t, h), jnp.float32).at[token].add(o * w[:, None])
    return out


def _rule(config, shapes):
    x, w1, w2, tw, ti, *scales = shapes
    activation, quant = config
    f = {"t": _partition.Factor(x[0]), "h": _partition.Factor(x[1], _partition.REPLICATE),
         "e": _partition.Factor(w1[0]), "n2": _partition.Factor(w1[1], _partition.REPLICATE),
         "i": _partition.Factor(w2[2], _partition.REPLICATE),
         "k": _partition.Factor(tw[1], _partition.REPLICATE)}
    ops = [(("t",), ("h",)), (("e",), ("n2",), ("h",)), (("e",), ("h",), ("i",)),
           (("t",), ("k",)), (("t",), ("k",))]
    for j, s in enumerate(scales):  # [E, a, b]: a and b whole
        f[f"s{j}a"] = _partition.Factor(s[1], _partition.REPLICATE)
        f[f"s{j}b"] = _partition.Factor(s[2], _partition.REPLICATE)
        ops.append((("e",), (f"s{j}a",), (f"s{j}b",)))
    return _partition.Rule(tuple(ops), ((("t",), ("h",)),), f)


@_partition.op("jax_aiter.fused_moe", rule=_rule)
def _part_moe(config, shards, x, w1, w2, topk_weights, topk_ids, *scales):
    activation, quant = config
    w1_scale, w2_scale = scales if scales else (None, None)
    out = _layer(x, w1, w2, topk_weights, topk_ids, w1_scale, w2_scale, shards.offset("e"),
                 activation, quant)
    return (shards.sum(out, 0).astype(x.dtype),)


@functools.partial(jax.custom_vjp, nondiff_argnums=(5,))
def _moe(x, w1, w2, topk_weights, topk_ids, config, w1_scale, w2_scale):
    scales = () if w1_scale is None else (w1_scale, w2_scale)
    return _part_moe(config.value, x, w1, w2, topk_weights, topk_ids, *scales)[0]


def _moe_fwd(x, w1, w2, topk_weights, topk_ids, config, w1_scale, w2_scale):
    out = _moe(x, w1, w2, topk_weights, topk_ids, config, w1_scale, w2_scale)
    return out, (x, w1, w2, topk_weights, topk_ids)


def _moe_bwd(config, res, g):
    activation, quant = config.value
    if quant is not None:
        raise TypeError(f"{_OP}: the quantized modes are inference only: they have no gradient "
                        f"(train with quant=None, bf16 or f16)")
    x, w1, w2, topk_weights, topk_ids = res

    def layer(x, w1, w2, tw):  # the unsplit layer: its grouped GEMMs carry their own rules
        return _layer(x, w1, w2, tw, topk_ids, None, None, 0, activation, None).astype(x.dtype)

    _, vjp = jax.vjp(layer, x, w1, w2, topk_weights)
    dx, dw1, dw2, dtw = vjp(g)
    return dx, dw1, dw2, dtw, np.zeros(topk_ids.shape, jax.dtypes.float0), None, None


_moe.defvjp(_moe_fwd, _moe_bwd)


# ---- the two-stage ASM tier: AITER's stage 1, our stage 2 ----------------------------------------

def _stage2(a, a_scale, w2, w2_scale, topk_weights, topk_ids, quant, weight_first, out_dtype):
    """Our stage 2 (AITER's is a CK kernel): the down projection of stage 1's a [T, k, I] by the
    routed experts' w2 [E, H, I] (plain row-major) as one grouped GEMM over the (token, slot)
    entries sorted by expert (the portable tier's _gemm: a per-token mode quantizes a per row as
    AITER's fused_moe_2stages does before its stage 2; block scales read stage 1's own fp8 a and
    scales), then the top-k weighted sum back to the tokens (weight_first: stage 1 applied it)."""
    t, k, inter = a.shape
    e = w2.shape[0]
    ids = topk_ids.reshape(-1).astype(jnp.int32)
    valid = (ids >= 0) & (ids < e)
    key = jnp.where(valid, ids, e)
    order = jnp.argsort(key, stable=True)
    group_sizes = jnp.bincount(key, length=e + 1)[:e].astype(jnp.int32)
    rows = a.reshape(t * k, inter)[order]
    if quant == "fp8_blockscale":
        o = grouped_gemm(rows, w2, group_sizes, x_scale=a_scale[order], w_scale=w2_scale,
                         out_dtype=jnp.bfloat16).astype(jnp.float32)
    else:
        o = _channel_scale(_gemm(rows, w2, w2_scale, group_sizes, quant), w2_scale,
                           jnp.minimum(key[order], e - 1))
    w = jnp.ones((t * k,), jnp.float32) if weight_first else topk_weights.reshape(-1).astype(
        jnp.float32)
    w = jnp.where(valid[order], w[order], 0.0)
    out = jnp.zeros((t, w2.shape[1]), jnp.float32).at[order // k].add(o * w[:, None])
    return out.astype(out_dtype)


def _two_stage_forward(x, w1, w2, topk_weights, topk_ids, w1_scale, w2_scale, config):
    activation, quant, weight_first, kernel, block_m, dispatch = config
    a, a_scale = _fused_moe_asm.asm_stage1(
        x, w1, topk_weights, topk_ids, activation=activation, quant=_ASM_QUANT[quant],
        w1_scale=w1_scale, weight_first=weight_first, kernel=kernel, block_m=block_m,
        dispatch=dispatch)
    return _stage2(a, a_scale, w2, w2_scale, topk_weights, topk_ids, quant, weight_first, x.dtype)


@functools.partial(jax.custom_vjp, nondiff_argnums=(7,))
def _two_stage(x, w1, w2, topk_weights, topk_ids, w1_scale, w2_scale, config):
    return _two_stage_forward(x, w1, w2, topk_weights, topk_ids, w1_scale, w2_scale,
                              config.value)


def _two_stage_no_grad(*_):
    raise TypeError(f"{_OP}: the two-stage ASM fused MoE is an inference op: it has no gradient "
                    "(differentiate the bf16 model, quant=None, instead)")


_two_stage.defvjp(lambda *args: _two_stage_no_grad(), lambda config, res, g: _two_stage_no_grad())


def _is_stage1_kernel(kernel) -> bool:
    return bool(kernel) and "fmoe_stage1_" in kernel


def _fused_moe_2stages(x, w1, w2, topk_weights, topk_ids, activation, quant, w1_scale, w2_scale,
                       kernel, weight_first, block_m, dispatch):
    if quant not in _ASM_QUANT:
        raise ValueError(f"{_OP}: attribute quant: AITER's two-stage (fmoe_2stages) kernels take "
                         f"{tuple(_ASM_QUANT)}; got {quant!r}")
    if weight_first and quant != "fp8_per_token":
        raise ValueError(f"{_OP}: attribute weight_first: AITER's doweight stage-1 kernels take "
                         f"quant 'fp8_per_token' only; got {quant!r}")
    if kernel and not _is_stage1_kernel(kernel):
        raise ValueError(f"{_OP}: attribute kernel: stages=2 runs AITER's fmoe_2stages stage-1 "
                         f"kernels (fmoe_stage1_...); got {kernel!r}")
    for name, w in (("w1", w1), ("w2", w2)):
        if not isinstance(w, ShuffledWeight):
            raise TypeError(f"{_OP}: operand {name}: AITER's fmoe_2stages kernels read weights "
                            f"pre-shuffled in (16, 16): expected a ShuffledWeight "
                            f"(jax_aiter.shuffle_weight(w, (16, 16))), got {type(w).__name__}")
    w1d = _fused_moe_asm._weight(w1, "w1")
    _fused_moe_asm._weight(w2, "w2")
    # Stage 2 is ours: it reads w2 plain (unshuffled in the graph, a copy per call).
    w2p = jax.vmap(lambda d: unshuffle_weight(ShuffledWeight(d, w2.layout)))(w2.data)
    x = jnp.asarray(x)
    topk_weights, topk_ids = jnp.asarray(topk_weights), jnp.asarray(topk_ids)
    w1_scale = None if w1_scale is None else jnp.asarray(w1_scale)
    w2_scale = None if w2_scale is None else jnp.asarray(w2_scale)
    _check(x, w1d, w2p, topk_weights, topk_ids, activation, quant, w1_scale, w2_scale,
           w_dtype=w1d.dtype)
    if x.shape[0] == 0:
        return jnp.zeros(x.shape, x.dtype)
    if block_m is not None and (isinstance(block_m, bool) or not isinstance(block_m, int)):
        raise TypeError(f"{_OP}: attribute block_m: expected a static int or None, got "
                        f"{type(block_m).__name__}")
    dispatch = Dispatch("asm", dispatch.asm_arch if dispatch else None,
                        dispatch.asm_cus if dispatch else None)
    config = (activation, quant, bool(weight_first), kernel or "", block_m, dispatch)
    return _two_stage(x, w1d, w2p, topk_weights, topk_ids.astype(jnp.int32), w1_scale, w2_scale,
                      Static(config))


def _check(x, w1, w2, topk_weights, topk_ids, activation, quant, w1_scale, w2_scale,
           w_dtype=None):
    def err(operand, msg):
        return ValueError(f"{_OP}: operand {operand}: {msg}")

    if activation not in _ACTS:
        raise ValueError(f"{_OP}: attribute activation: expected one of {_ACTS}, got "
                         f"{activation!r}")
    if quant not in _QUANTS:
        raise ValueError(f"{_OP}: attribute quant: expected one of {_QUANTS}, got {quant!r}")
    if x.ndim != 2 or x.dtype not in (jnp.bfloat16, jnp.float16):
        raise err("x", f"expected bf16 or f16 [T, H], got {x.dtype}{list(x.shape)}")
    t, h = x.shape
    if w1.ndim != 3 or w1.shape[2] != h or w1.shape[1] % 2:
        raise err("w1", f"expected [E, 2*I, {h}] (gate then up, H from x), got "
                  f"{w1.dtype}{list(w1.shape)}")
    e, inter = w1.shape[0], w1.shape[1] // 2
    if w2.shape != (e, h, inter):
        raise err("w2", f"expected [{e}, {h}, {inter}] ([E, H, I] from w1), got "
                  f"{w2.dtype}{list(w2.shape)}")
    if topk_ids.ndim != 2 or topk_ids.shape[0] != t or not jnp.issubdtype(topk_ids.dtype,
                                                                             jnp.integer):
        raise err("topk_ids", f"expected int [{t}, k], got {topk_ids.dtype}{list(topk_ids.shape)}")
    if topk_weights.shape != topk_ids.shape or not jnp.issubdtype(topk_weights.dtype,
                                                                   jnp.floating):
        raise err("topk_weights", f"expected float {list(topk_ids.shape)} (that of topk_ids), got "
                  f"{topk_weights.dtype}{list(topk_weights.shape)}")
    fp8 = w_dtype if w_dtype in (jnp.float8_e4m3fn, jnp.float8_e4m3fnuz) else fp8_dtype()
    want = {None: (x.dtype, None, None),
            "fp8_per_token": (fp8, (e, 2 * inter, 1), (e, h, 1)),
            "int8_per_token": (jnp.int8, (e, 2 * inter, 1), (e, h, 1)),
            "fp8_blockscale": (fp8, (e, 2 * inter // FP8_BLOCK, h // FP8_BLOCK),
                               (e, h // FP8_BLOCK, inter // FP8_BLOCK))}[quant]
    for name, w in (("w1", w1), ("w2", w2)):
        if w.dtype != want[0]:
            raise err(name, f"expected {jnp.dtype(want[0]).name} for quant={quant!r}, got "
                      f"{w.dtype}")
    if quant == "fp8_blockscale" and (h % FP8_BLOCK or inter % FP8_BLOCK):
        raise err("w1", f"fp8_blockscale needs H and I multiples of 128, got H={h}, I={inter}")
    for name, s, shape in (("w1_scale", w1_scale, want[1]), ("w2_scale", w2_scale, want[2])):
        if shape is None:
            if s is not None:
                raise err(name, "expected None for quant=None (bf16/f16 weights)")
        elif s is None or s.shape != shape or s.dtype != jnp.float32:
            got = "None" if s is None else f"{s.dtype}{list(s.shape)}"
            raise err(name, f"expected f32{list(shape)} for quant={quant!r}, got {got}")


# jax-aiter-plan's command for this op (tools.py finds it here): the plan of AITER's tier.
PLAN_COMMANDS = {"fused_moe": _fused_moe_asm.PLAN_COMMANDS["asm_fused_moe"],
                 "fused_moe_stage1": _fused_moe_asm.PLAN_COMMANDS[_fused_moe_asm.STAGE1_TARGET]}

_ASM_QUANT = {"fp8_per_token": "fp8_per_token", "int8_per_token": "int8_per_token",
              "fp8_blockscale": "fp8_block_scale"}


def _wants_asm(w1, quant, kernel, dispatch) -> bool:
    if dispatch is not None and dispatch.tier not in ("auto", "asm", "portable"):
        raise ValueError(f"{_OP}: attribute dispatch.tier: expected 'auto', 'asm' or 'portable', "
                         f"got {dispatch.tier!r}")
    if dispatch is not None and dispatch.tier == "portable":
        if kernel:
            raise ValueError(f"{_OP}: attribute kernel: an AITER kernel cannot run on the "
                             f"portable tier (dispatch.tier 'portable')")
        return False
    if kernel or (dispatch is not None and dispatch.tier == "asm"):
        return True
    return (jax.devices()[0].platform == "rocm" and quant in _ASM_QUANT
            and isinstance(w1, ShuffledWeight))


def fused_moe(x, w1, w2, topk_weights, topk_ids, *, activation: str = "silu", quant=None,
              w1_scale=None, w2_scale=None, kernel: str | None = None,
              dispatch: Dispatch | None = None, stages: int | None = None,
              weight_first: bool = False):
    """The fused MoE layer (module docstring): x [T, H], w1 [E, 2I, H], w2 [E, H, I],
    topk_weights [T, k], topk_ids int [T, k] -> [T, H] in x's dtype.

    ``w1``/``w2`` may be ``ShuffledWeight``s (AITER's pre-shuffled layout, what its ASM kernels
    read): the portable tier unshuffles them in the XLA graph first (a copy of the weights per
    call: keep plain weights where only the portable tier runs). ``kernel`` (an fmoe row by name)
    and ``dispatch`` (``Dispatch("asm", "gfx942")``: AITER's plan, run by its ABI twins off AMD)
    pick AITER's tier for a quantized call. ``stages=2`` (or ``kernel=`` naming one of AITER's
    fmoe_2stages stage-1 kernels, "fmoe_stage1_...") runs AITER's two-stage tier: its stage-1 ASM
    kernel (x . w1, the activation) then our portable stage 2 (the down projection as a grouped
    GEMM, the top-k sum); ``stages=1`` (the default otherwise) AITER's one-stage fmoe kernels.
    ``weight_first`` (fp8 per token, ASM tiers only) applies the top-k weight to the activation
    before the down projection (AITER's doweight_stage1 / tkw1 kernels)."""
    if stages is None:
        stages = 2 if _is_stage1_kernel(kernel) else 1
    if isinstance(stages, bool) or stages not in (1, 2):
        raise ValueError(f"{_OP}: attribute stages: expected 1 or 2 (AITER's one- or two-stage "
                         f"fused MoE) or None, got {stages!r}")
    if stages == 2:
        if dispatch is not None and dispatch.tier not in ("auto", "asm"):
            raise ValueError(f"{_OP}: attribute stages: stages=2 runs AITER's two-stage ASM tier; "
                             f"got dispatch tier {dispatch.tier!r}")
        return _fused_moe_2stages(x, w1, w2, topk_weights, topk_ids, activation, quant, w1_scale,
                                  w2_scale, kernel, weight_first, None, dispatch)
    if _is_stage1_kernel(kernel):
        raise ValueError(f"{_OP}: attribute kernel: {kernel!r} is a stage-1 kernel of AITER's "
                         f"two-stage fused MoE: it needs stages=2 (or stages=None)")
    if weight_first and not _wants_asm(w1, quant, kernel, dispatch):
        raise ValueError(f"{_OP}: attribute weight_first: only AITER's tiers apply the top-k "
                         f"weight first (dispatch=Dispatch('asm', arch) or stages=2)")
    if _wants_asm(w1, quant, kernel, dispatch):
        if quant not in _ASM_QUANT:
            raise ValueError(f"{_OP}: attribute quant: AITER's fmoe kernels take quantized "
                             f"weights ({tuple(_ASM_QUANT)}); got {quant!r} (quant=None runs the "
                             f"portable tier)")
        for name, w in (("w1", w1), ("w2", w2)):
            if not isinstance(w, ShuffledWeight):
                raise TypeError(f"{_OP}: operand {name}: AITER's fmoe kernels read weights "
                                f"pre-shuffled in (16, 16): expected a ShuffledWeight "
                                f"(jax_aiter.shuffle_weight(w, (16, 16))), got "
                                f"{type(w).__name__}")
        return asm_fused_moe(x, w1, w2, topk_weights, topk_ids, activation=activation,
                             quant=_ASM_QUANT[quant], w1_scale=w1_scale, w2_scale=w2_scale,
                             kernel=kernel, weight_first=weight_first,
                             dispatch=dispatch or Dispatch("asm"))
    if isinstance(w1, ShuffledWeight):
        w1 = jax.vmap(lambda d: unshuffle_weight(ShuffledWeight(d, w1.layout)))(w1.data)
    if isinstance(w2, ShuffledWeight):
        w2 = jax.vmap(lambda d: unshuffle_weight(ShuffledWeight(d, w2.layout)))(w2.data)
    x, w1, w2 = jnp.asarray(x), jnp.asarray(w1), jnp.asarray(w2)
    topk_weights, topk_ids = jnp.asarray(topk_weights), jnp.asarray(topk_ids)
    w1_scale = None if w1_scale is None else jnp.asarray(w1_scale)
    w2_scale = None if w2_scale is None else jnp.asarray(w2_scale)
    _check(x, w1, w2, topk_weights, topk_ids, activation, quant, w1_scale, w2_scale)
    if x.shape[0] == 0:
        return jnp.zeros(x.shape, x.dtype)
    return _moe(x, w1, w2, topk_weights, topk_ids, Static((activation, quant)), w1_scale, w2_scale)
