"""AITER's one-stage fused-MoE ASM kernels (the ``fmoe`` family) from JAX: the ASM tier of the
fused MoE, ``asm_fused_moe`` (private: ``jax_aiter.fused_moe`` is the public op).

    out[t] = sum over k of  topk_weights[t, k] *
                            (w2[e] . (act(w1_gate[e] . x[t]) * (w1_up[e] . x[t])))

with e = topk_ids[t, k], w1 ``[E, 2I, H]`` (gate rows, then up rows: AITER's "g1u1"), w2
``[E, H, I]``, both quantized (fp8 or int8) and pre-shuffled per expert in the (16, 16) layout
(``jax_aiter.shuffle_weight(w, (16, 16))`` on the ``[E, N, K]`` array shuffles each expert). One
call is AITER's ``fused_moe_1stage``: x is quantized here as AITER's ``fused_moe`` quantizes it,
the routing sorted by ``moe_sorting`` into AITER's layout, then one ``aiter.fused_moe`` call (its
plan: a memset of out, one fmoe kernel, chosen as AITER's ``get_heuristic_kernel`` chooses).

Quantization modes (``quant``), as AITER's entry points take them (csrc/py_itfs_cu/asm_fmoe.cu):

    "fp8_per_token"        x quantized to w1's fp8 per token (scale [T, 1]), weights fp8 with one
                           scale per row: w1_scale [E, 2I, 1], w2_scale [E, H, 1]    (fmoe_g1u1)
    "int8_per_token"       the same in int8                                           (fmoe_g1u1)
    "fp8_block_scale"      weights fp8 in 128 x 128 blocks: w1_scale [E, 2I/128, H/128], w2_scale
                           [E, H/128, I/128]; x quantized to fp8 per (token, 128 columns), its
                           scale passed [H/128, T] as the kernels read it    (fmoe_fp8_blockscale)
    "fp8_block_scale_a16"  the same weights, x passed as bf16: the kernel quantizes it (AITER's
                           blockscaleBf16 kernels; AITER_XBFLOAT16)

The fp8 format is the arch's (e4m3fnuz on gfx942, e4m3fn on gfx950: ``jax_aiter.fp8_dtype``);
x is quantized into w1's dtype. ``weight_first`` (fp8 per token only) applies the top-k weight
to the activation before the down product (AITER's ``doweight_stage1``, the tkw1 kernels).

What the kernels compute and what our host twins (the CPU backend) compute differ in one place:
AITER's kernels quantize the intermediate ``act(gate) * up`` again (to the weights' 8-bit type)
before the down product; the twins keep it in f32 (host_twins/aiter_fmoe.hpp). Both add each
(inter tile, top-k slot) partial into the 16-bit out, in an order the kernels leave unspecified.

``asm_fused_moe`` is an inference op: it has no gradient, and differentiating through it raises.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jax_aiter import _call, _ffi
from jax_aiter._call import Dispatch, Static
from jax_aiter.moe_routing import moe_sorting, moe_sorting_sizes
from jax_aiter.quant import (FP8_BLOCK, I8_LAYOUT, ShuffledWeight, fp8_dtype, quantize_fp8_blocks,
                             quantize_per_token)

__all__ = ["asm_fused_moe"]

TARGET = "aiter.fused_moe"
# The layout the fmoe kernels read each expert's weights in (kernels/shared/aiter_fmoe.h).
FMOE_LAYOUT = I8_LAYOUT
ACTIVATIONS = ("silu", "gelu")
# Python's modes -> (the target's quant attribute, x passed as bf16 for the kernel to quantize).
QUANTS = {"fp8_per_token": ("fp8_per_token", False),
          "int8_per_token": ("int8_per_token", False),
          "fp8_block_scale": ("fp8_block_scale", False),
          "fp8_block_scale_a16": ("fp8_block_scale", True)}
# The sorting's block size when the call does not give one: AITER's BLOCK_SIZE_M (32, what its
# fused_moe sorts with when no tuned config says otherwise, and the only block the per-token
# kernels read), else the first of the others that an fmoe kernel of the call's list takes (the
# block-scale lists have 16- and 64-row kernels; gfx942's bf16-x ones only 16-row).
BLOCK_M_ORDER = (32, 16, 64)

_F32, _I32 = np.dtype(np.float32), np.dtype(np.int32)


def _io(x, w1, w2, sorted_, x_scale, w1_scale, w2_scale, *, topk, block_m, activation, quant,
        weight_first, kernel):
    """The target's inputs (arrays, or (dtype, shape) descriptions) and attributes."""
    inputs = {"x": x, "w1": w1, "w2": w2, "sorted_token_ids": sorted_[0],
              "sorted_weights": sorted_[1], "sorted_expert_ids": sorted_[2],
              "num_valid_ids": sorted_[3], "x_scale": x_scale, "w1_scale": w1_scale,
              "w2_scale": w2_scale}
    attributes = {"w_layout": "x".join(str(v) for v in FMOE_LAYOUT), "topk": int(topk),
                  "block_m": int(block_m), "activation": activation, "quant": QUANTS[quant][0],
                  "weight_first": bool(weight_first), "kernel": kernel or ""}
    return inputs, attributes


def _sorted_shapes(tokens: int, topk: int, experts: int, block_m: int):
    """moe_sorting's outputs at block_m: (dtype, shape) each."""
    rows, blocks = moe_sorting_sizes(tokens, topk, experts, block_m)
    return ((_I32, (rows,)), (_F32, (rows,)), (_I32, (blocks,)), (_I32, (2,)))


def _sds(described):
    return [jax.ShapeDtypeStruct(s, d) for d, s in described]


def _x_operands(x, quant: str, w_dtype):
    """Descriptions of x and x_scale as the kernel reads them (the quantizer's outputs)."""
    t, h = x.shape
    xq = jax.ShapeDtypeStruct(x.shape, x.dtype if QUANTS[quant][1] else w_dtype)
    scale = {"fp8_per_token": (t, 1), "int8_per_token": (t, 1),
             "fp8_block_scale": (h // FP8_BLOCK, t)}.get(quant)
    return xq, None if scale is None else jax.ShapeDtypeStruct(scale, _F32)


def _asm_arch(dispatch: Dispatch) -> str | None:
    """The AMD arch the ASM tier plans for: the call's asm_arch, or a ROCm device's own."""
    if dispatch.asm_arch:
        return dispatch.asm_arch.split(":")[0]
    dev = jax.devices()[0]
    if dev.platform == "rocm":
        return str(getattr(dev, "compute_capability", "")).split(":")[0] or None
    return None


def _pick_block_m(args, out, topk: int, experts: int, attrs: dict, dispatch: Dispatch) -> int:
    """BLOCK_M_ORDER's first block size the ASM tier plans the call with on its arch (a forced
    kernel's own, where one is named), by the C++ rule itself (jax_aiter.plan: no device, no
    data); 32 where no AMD arch is known or the call is invalid (the call then says why)."""
    arch = _asm_arch(dispatch)
    if arch is None:
        return BLOCK_M_ORDER[0]
    x, w1, w2, x_scale, w1_scale, w2_scale = args
    for block_m in BLOCK_M_ORDER:
        sorted_ = _sorted_shapes(x.shape[0], topk, experts, block_m)
        inputs, attributes = _io(x, w1, w2, _sds(sorted_), x_scale, w1_scale, w2_scale,
                                 topk=topk, block_m=block_m, **attrs)
        operands = {n: None if a is None else (a.dtype, a.shape) for n, a in inputs.items()}
        operands["out"] = (out[1], out[0])
        attributes.update(dispatch.attributes())
        try:
            plan = _ffi.plan(TARGET, operands, attributes, arch, dispatch.asm_cus or 0)
        except ValueError:
            return BLOCK_M_ORDER[0]
        if plan["chosen"] is not None:
            return block_m
    return BLOCK_M_ORDER[0]


def _quantize_x(x, quant: str, w_dtype):
    """x as AITER's fused_moe passes it for the mode: (x, x_scale or None)."""
    if QUANTS[quant][1]:
        return x, None
    if quant == "int8_per_token":
        return quantize_per_token(x)
    if quant == "fp8_per_token":
        return quantize_fp8_blocks(x, (1, x.shape[1]), w_dtype)
    q, scale = quantize_fp8_blocks(x, (1, FP8_BLOCK), w_dtype)  # [T, H/128]
    return q, scale.T  # the kernels read it [H/128, T]


def _forward(x, w1, w2, topk_weights, topk_ids, w1_scale, w2_scale, config):
    activation, quant, weight_first, kernel, block_m, dispatch = config
    t, k = topk_ids.shape
    experts = w1.shape[0]
    out = (x.shape, x.dtype)
    attrs = {"activation": activation, "quant": quant, "weight_first": weight_first,
             "kernel": kernel}
    xq, x_scale = _x_operands(x, quant, w1.dtype)
    if block_m is None:
        block_m = _pick_block_m((xq, w1, w2, x_scale, w1_scale, w2_scale), out, k, experts,
                                attrs, dispatch)
    # Validated first, on shapes: errors name the operand before any quantizer or sort runs, and
    # an empty call (no token) is answered here.
    inputs, attributes = _io(xq, w1, w2, _sds(_sorted_shapes(t, k, experts, block_m)), x_scale,
                             w1_scale, w2_scale, topk=k, block_m=block_m, **attrs)
    if not _call.validate(TARGET, inputs=inputs, outputs={"out": out}, attributes=attributes,
                          dispatch=dispatch):
        return jnp.zeros(x.shape, x.dtype)
    xq, x_scale = _quantize_x(x, quant, w1.dtype)
    sorted_ = moe_sorting(topk_ids, topk_weights.astype(_F32), experts, block_m)
    inputs, attributes = _io(xq, w1, w2, tuple(sorted_), x_scale, w1_scale, w2_scale, topk=k,
                             block_m=block_m, **attrs)
    return _call.call(TARGET, inputs=inputs, outputs={"out": out}, attributes=attributes,
                      dispatch=dispatch)["out"]


@functools.partial(jax.custom_vjp, nondiff_argnums=(7,))
def _fused_moe(x, w1, w2, topk_weights, topk_ids, w1_scale, w2_scale, config):
    return _forward(x, w1, w2, topk_weights, topk_ids, w1_scale, w2_scale, config.value)


def _no_grad(*_):
    raise TypeError(f"{TARGET}: the ASM fused MoE is an inference op: it has no gradient "
                    "(differentiate the bf16 model instead)")


_fused_moe.defvjp(lambda x, w1, w2, tw, ti, s1, s2, config: _no_grad(),
                  lambda config, res, g: _no_grad())


def _weight(w, name: str) -> jax.Array:
    if not isinstance(w, ShuffledWeight):
        raise TypeError(f"{TARGET}: operand {name}: expected a ShuffledWeight (jax_aiter."
                        f"shuffle_weight(w, {FMOE_LAYOUT}) of the quantized [E, N, K] weight), got "
                        f"{type(w).__name__}: the kernels read pre-shuffled weights, and a plain "
                        "array is taken for an unshuffled one")
    if not w.in_layout(FMOE_LAYOUT):
        raise ValueError(f"{TARGET}: operand {name}: expected a weight shuffled in the layout "
                         f"{FMOE_LAYOUT}, got one in {w.layout!r}")
    if w.data.ndim != 3:
        raise ValueError(f"{TARGET}: operand {name}: expected [E, N, K] (one matrix per expert), "
                         f"got shape {w.data.shape}")
    return w.data


def asm_fused_moe(x, w1: ShuffledWeight, w2: ShuffledWeight, topk_weights, topk_ids, *,
                  activation: str = "silu", quant: str, w1_scale, w2_scale,
                  block_m: int | None = None, kernel: str | None = None,
                  weight_first: bool = False, dispatch: Dispatch | None = None):
    """The fused MoE on AITER's one-stage fmoe kernels (the module's doc says the math and modes).

    Args:
      x: bf16 or f16 ``[T, H]`` tokens (quantized here as the mode says; out has x's dtype, and
        the block-scale kernels write bf16 only).
      w1: ``[E, 2I, H]`` quantized gate and up weights, a ``ShuffledWeight`` in (16, 16).
      w2: ``[E, H, I]`` quantized down weights, a ``ShuffledWeight`` in (16, 16).
      topk_weights: ``[T, k]`` routing weights (``topk_softmax``'s), read as f32.
      topk_ids: int32 ``[T, k]`` experts; ids outside ``[0, E)`` are dropped (no contribution).
      activation: "silu" or "gelu" (erf).
      quant: "fp8_per_token", "int8_per_token", "fp8_block_scale" or "fp8_block_scale_a16".
      w1_scale, w2_scale: f32 weight scales of the mode's shapes (module doc).
      block_m: the sorting's block size (the kernels' sorted rows per block); None: 32 where the
        call's list has a kernel for it, else the first of 16, 64 that one takes (a forced
        kernel's own block size included); the per-token kernels take 32 only.
      kernel: one of AITER's fmoe kernels of the call's list (by symbol or short name); None lets
        AITER's heuristic choose.
      weight_first: apply the top-k weight before the down product (fp8 per token only).
      dispatch: the ASM tier's arch and CU count (``Dispatch("asm", "gfx942")`` plans AITER's
        gfx942 kernels and runs their twins off AMD); tier "auto" means "asm" here.
    Returns:
      ``[T, H]`` of x's dtype.
    """
    dispatch = dispatch or Dispatch()
    if dispatch.tier not in ("auto", "asm"):
        raise ValueError(f"{TARGET}: asm_fused_moe runs the ASM tier only; got dispatch tier "
                         f"{dispatch.tier!r}")
    dispatch = Dispatch("asm", dispatch.asm_arch, dispatch.asm_cus)
    if activation not in ACTIVATIONS:
        raise ValueError(f"{TARGET}: attribute activation: expected one of {ACTIVATIONS}, got "
                         f"{activation!r}")
    if quant not in QUANTS:
        raise ValueError(f"{TARGET}: attribute quant: expected one of {tuple(QUANTS)}, got "
                         f"{quant!r}")
    w1d, w2d = _weight(w1, "w1"), _weight(w2, "w2")
    x = jnp.asarray(x)
    if x.ndim != 2 or x.dtype not in (jnp.bfloat16, jnp.float16):
        raise ValueError(f"{TARGET}: operand x: expected bf16 or f16 [T, H], got "
                         f"{x.dtype}{list(x.shape)}")
    want = "int8" if quant == "int8_per_token" else "fp8 (e4m3fn or e4m3fnuz)"
    ok = w1d.dtype == jnp.int8 if quant == "int8_per_token" else w1d.dtype in (
        jnp.float8_e4m3fn, jnp.float8_e4m3fnuz)
    if not ok:
        raise ValueError(f"{TARGET}: operand w1: expected {want} weights for quant {quant!r}, "
                         f"got {w1d.dtype}")
    topk_ids = jnp.asarray(topk_ids)
    topk_weights = jnp.asarray(topk_weights)
    if topk_ids.ndim != 2 or topk_ids.shape[0] != x.shape[0] or topk_ids.dtype != jnp.int32:
        raise ValueError(f"{TARGET}: operand topk_ids: expected int32 [{x.shape[0]}, k] (T from "
                         f"x), got {topk_ids.dtype}{list(topk_ids.shape)}")
    if topk_weights.shape != topk_ids.shape:
        raise ValueError(f"{TARGET}: operand topk_weights: expected shape {topk_ids.shape} (like "
                         f"topk_ids), got {topk_weights.shape}")
    if block_m is not None and (isinstance(block_m, bool) or not isinstance(block_m, int)):
        raise TypeError(f"{TARGET}: attribute block_m: expected a static int or None, got "
                        f"{type(block_m).__name__}")
    w1_scale = None if w1_scale is None else jnp.asarray(w1_scale)
    w2_scale = None if w2_scale is None else jnp.asarray(w2_scale)
    config = (activation, quant, bool(weight_first), kernel or "", block_m, dispatch)
    return _fused_moe(x, w1d, w2d, topk_weights, topk_ids, w1_scale, w2_scale, Static(config))


# ---- the two-stage family's stage 1 --------------------------------------------------------------

STAGE1_TARGET = "aiter.fused_moe_stage1"
# The modes AITER's stage-1 kernels take (csrc/py_itfs_cu/asm_moe_2stage.cu get_cfg): x always
# 8-bit (no a16 list).
STAGE1_QUANTS = ("fp8_per_token", "int8_per_token", "fp8_block_scale")
# The block sizes the fmoe_2stages rows take (their tile_m), in the order a forced kernel's is
# looked for; without one the call takes AITER's own block_m rule (the plan's note aiter_block_m).
STAGE1_BLOCKS = (32, 16, 64, 128, 48, 80, 96, 112, 144, 160)


def _stage1_out(tokens: int, topk: int, inter: int, quant: str, w_dtype):
    """(dtype, shape) of stage 1's out: bf16 [T, k, I], or for block scales one fp8 buffer
    [T + ceil(4T/128), k, I]: the values, then their f32 scales (kernels/shared/
    aiter_fmoe_2stages.h)."""
    if quant == "fp8_block_scale":
        return jnp.dtype(w_dtype), (tokens + (4 * tokens + FP8_BLOCK - 1) // FP8_BLOCK, topk, inter)
    return jnp.dtype(jnp.bfloat16), (tokens, topk, inter)


def _io1(x, w1, sorted_, x_scale, w1_scale, *, topk, block_m, activation, quant, weight_first,
         kernel):
    inputs = {"x": x, "w1": w1, "sorted_token_ids": sorted_[0], "sorted_weights": sorted_[1],
              "sorted_expert_ids": sorted_[2], "num_valid_ids": sorted_[3], "x_scale": x_scale,
              "w1_scale": w1_scale}
    attributes = {"w_layout": "x".join(str(v) for v in FMOE_LAYOUT), "topk": int(topk),
                  "block_m": int(block_m), "activation": activation, "quant": quant,
                  "weight_first": bool(weight_first), "kernel": kernel or ""}
    return inputs, attributes


def _pick_block_m1(x, w1, x_scale, w1_scale, out, topk, experts, attrs, dispatch) -> int:
    """The sorting's block size for stage 1 on the ASM tier's arch: a forced kernel's tile_m, else
    AITER's rule (the C++ plan's note aiter_block_m: get_block_size_M, or 64/16 for block scales);
    32 where no AMD arch is known or no block size plans (the call then says why)."""
    arch = _asm_arch(dispatch)
    if arch is None:
        return STAGE1_BLOCKS[0]
    why = None  # a forced kernel's reason, other than its block size
    for block_m in STAGE1_BLOCKS:
        inputs, attributes = _io1(x, w1, _sds(_sorted_shapes(x.shape[0], topk, experts, block_m)),
                                  x_scale, w1_scale, topk=topk, block_m=block_m, **attrs)
        operands = {n: None if a is None else (a.dtype, a.shape) for n, a in inputs.items()}
        operands["out"] = out
        attributes.update(dispatch.attributes())
        try:
            plan = _ffi.plan(STAGE1_TARGET, operands, attributes, arch, dispatch.asm_cus or 0)
        except ValueError:
            return STAGE1_BLOCKS[0]
        if plan["chosen"] is None:
            verdict = plan["tiers"][0]["verdict"] if plan["tiers"] else ""
            if attrs["kernel"] and "the sorting's block_m" not in verdict:
                why = why or verdict
            continue
        if attrs["kernel"]:
            return block_m
        return int(plan["chosen"]["plan"]["notes"]["aiter_block_m"])
    if why:  # the forced kernel cannot run the call at its own block size: say why, now
        raise ValueError(f"{STAGE1_TARGET}: attribute kernel: {attrs['kernel']!r} cannot run this "
                         f"call on {arch}: {why}")
    return STAGE1_BLOCKS[0]


def asm_stage1(x, w1, topk_weights, topk_ids, *, activation: str, quant: str, w1_scale,
               weight_first: bool, kernel: str, block_m: int | None, dispatch: Dispatch):
    """Stage 1 of AITER's two-stage fused MoE on its fmoe_2stages kernels: x quantized as the
    mode says, the routing sorted at block_m (None: AITER's rule, or a forced kernel's), one
    aiter.fused_moe_stage1 call. Returns (a [T, k, I], a_scale): a bf16 and a_scale None (per
    token), or a of w1's fp8 with a_scale f32 [T * k, I/128] (block scales). Entries of ids
    outside [0, E) stay 0. Validates on shapes first (ValueError naming the operand)."""
    t, k = topk_ids.shape
    experts = w1.shape[0]
    inter = w1.shape[1] // 2
    attrs = {"activation": activation, "quant": quant, "weight_first": weight_first,
             "kernel": kernel}
    xq, x_scale = _x_operands(x, quant, w1.dtype)
    out = _stage1_out(t, k, inter, quant, w1.dtype)
    if block_m is None:
        block_m = _pick_block_m1(xq, w1, x_scale, w1_scale, out, k, experts, attrs, dispatch)
    inputs, attributes = _io1(xq, w1, _sds(_sorted_shapes(t, k, experts, block_m)), x_scale,
                              w1_scale, topk=k, block_m=block_m, **attrs)
    outputs = {"out": (out[1], out[0])}
    if not _call.validate(STAGE1_TARGET, inputs=inputs, outputs=outputs, attributes=attributes,
                          dispatch=dispatch):
        a = jnp.zeros((t, k, inter), jnp.bfloat16 if quant != "fp8_block_scale" else w1.dtype)
        return a, (None if quant != "fp8_block_scale" else
                   jnp.ones((t * k, inter // FP8_BLOCK), jnp.float32))
    xq, x_scale = _quantize_x(x, quant, w1.dtype)
    sorted_ = moe_sorting(topk_ids, topk_weights.astype(_F32), experts, block_m)
    inputs, attributes = _io1(xq, w1, tuple(sorted_), x_scale, w1_scale, topk=k,
                              block_m=block_m, **attrs)
    buf = _call.call(STAGE1_TARGET, inputs=inputs, outputs=outputs, attributes=attributes,
                     dispatch=dispatch)["out"]
    if quant != "fp8_block_scale":
        return buf, None
    n = t * k * (inter // FP8_BLOCK)
    raw = jax.lax.bitcast_convert_type(buf[t:].reshape(-1), jnp.uint8)[:4 * n]
    scale = jax.lax.bitcast_convert_type(raw.reshape(n, 4), jnp.float32)
    return buf[:t], scale.reshape(t * k, inter // FP8_BLOCK)


def describe_stage1(tokens: int, experts: int, topk: int, hidden: int, inter: int,
                    quant: str = "fp8_per_token", activation: str = "silu", arch: str = "gfx942",
                    block_m: int = 32, kernel: str | None = None, weight_first: bool = False):
    """The aiter.fused_moe_stage1 call jax-aiter-plan describes (after moe_sorting at block_m)."""
    if quant not in STAGE1_QUANTS:
        raise ValueError(f"{STAGE1_TARGET}: quant: expected one of {STAGE1_QUANTS}, got "
                         f"{quant!r}")
    w = "int8" if quant == "int8_per_token" else jnp.dtype(fp8_dtype(arch)).name
    t, e, h, i = tokens, experts, hidden, inter
    b = FP8_BLOCK
    scales = ((t, 1), (e, 2 * i, 1)) if quant != "fp8_block_scale" else (
        (h // b, t), (e, 2 * i // b, h // b))
    out_dtype, out_shape = _stage1_out(t, topk, i, quant, w if w != "int8" else np.int8)
    inputs, attributes = _io1(
        (w, (t, h)), (w, (e, 2 * i, h)),
        [(np.dtype(d).name, s) for d, s in _sorted_shapes(t, topk, e, block_m)],
        ("float32", scales[0]), ("float32", scales[1]), topk=topk, block_m=block_m,
        activation=activation, quant=quant, weight_first=weight_first, kernel=kernel)
    operands = dict(inputs)
    operands["out"] = (jnp.dtype(out_dtype).name, out_shape)
    return STAGE1_TARGET, operands, attributes


def _plan_stage1(p, args):
    arch = args.asm_arch or args.arch
    return describe_stage1(args.tokens, args.experts, args.topk, args.hidden, args.inter,
                           args.quant if args.quant in STAGE1_QUANTS else "fp8_per_token",
                           args.activation, arch, args.block_m, args.kernel, args.weight_first)


# ---- jax-aiter-plan ------------------------------------------------------------------------------

def describe(tokens: int, experts: int, topk: int, hidden: int, inter: int,
             quant: str = "fp8_per_token", activation: str = "silu", arch: str = "gfx942",
             block_m: int = 32, kernel: str | None = None, weight_first: bool = False,
             out_dtype="bfloat16") -> tuple[str, dict, dict]:
    """The aiter.fused_moe call jax-aiter-plan describes (after moe_sorting at block_m): target,
    operands name -> (dtype, shape), attributes. Weights in the arch's fp8 (or int8)."""
    if quant not in QUANTS:
        raise ValueError(f"{TARGET}: quant: expected one of {tuple(QUANTS)}, got {quant!r}")
    w = "int8" if quant == "int8_per_token" else jnp.dtype(fp8_dtype(arch)).name
    t, e, h, i = tokens, experts, hidden, inter
    a16 = quant == "fp8_block_scale_a16"
    scales = {"fp8_per_token": ((t, 1), (e, 2 * i, 1), (e, h, 1)),
              "int8_per_token": ((t, 1), (e, 2 * i, 1), (e, h, 1)),
              "fp8_block_scale": ((h // FP8_BLOCK, t), (e, 2 * i // FP8_BLOCK, h // FP8_BLOCK),
                                  (e, h // FP8_BLOCK, i // FP8_BLOCK)),
              "fp8_block_scale_a16": (None, (e, 2 * i // FP8_BLOCK, h // FP8_BLOCK),
                                      (e, h // FP8_BLOCK, i // FP8_BLOCK))}[quant]
    sorted_ = _sorted_shapes(t, topk, e, block_m)
    f32 = "float32"
    inputs, attributes = _io(
        ("bfloat16" if a16 else w, (t, h)), (w, (e, 2 * i, h)), (w, (e, h, i)),
        [(np.dtype(d).name, s) for d, s in sorted_],
        None if scales[0] is None else (f32, scales[0]), (f32, scales[1]), (f32, scales[2]),
        topk=topk, block_m=block_m, activation=activation, quant=quant,
        weight_first=weight_first, kernel=kernel)
    operands = dict(inputs)
    operands["out"] = (out_dtype, (t, h))
    return TARGET, operands, attributes


def add_plan_arguments(p) -> None:
    """jax-aiter-plan's options of this op alone (--tokens, --experts, --topk, --block-m, --kernel
    and --out-dtype are moe_routing's and the GEMMs')."""
    p.add_argument("--hidden", type=int, help="fused_moe: H (x's columns)")
    p.add_argument("--inter", type=int, help="fused_moe: I (each expert's intermediate size)")
    p.add_argument("--quant", default="fp8_per_token", choices=tuple(QUANTS), help="fused_moe")
    p.add_argument("--activation", default="silu", choices=ACTIVATIONS, help="fused_moe")
    p.add_argument("--weight-first", action="store_true", help="fused_moe: AITER's tkw1")


def _plan(p, args):
    arch = args.asm_arch or args.arch
    return describe(args.tokens, args.experts, args.topk, args.hidden, args.inter, args.quant,
                    args.activation, arch, args.block_m, args.kernel, args.weight_first,
                    args.out_dtype or "bfloat16")


# jax-aiter-plan's commands (tools.py finds them in public modules only: jax_aiter.fused_moe
# re-exports them).
_NEEDS = ("tokens", "experts", "topk", "hidden", "inter")
PLAN_COMMANDS = {"asm_fused_moe": (_NEEDS, _plan), TARGET: (_NEEDS, _plan),
                 STAGE1_TARGET: (_NEEDS, _plan_stage1)}
