"""The fused MoE's ASM tier through JAX (jax_aiter._fused_moe_asm.asm_fused_moe): x quantized as
AITER's fused_moe quantizes it, moe_sorting, then aiter.fused_moe planned for gfx942 and gfx950
(Dispatch("asm", arch)) and run by the fmoe kernels' ABI twins (the CPU backend's host twins),
outputs poisoned; every quantization mode and activation the family has, f16 out, weight-first,
forced kernels, the block size picked per list; bad inputs, grad, the plan tool and check-aiter.

The reference is float64 of the dequantized math over the very quantized operands the kernels
read, as the twins compute it: gate and up in f32 from the dequantized x and w1, act(gate) * up
kept in f32, the down product, the top-k weight, summed into the 16-bit out once per (inter
tile, slot). AITER's real kernels differ in two places the twins do not follow: they quantize
act(gate) * up again to the weights' 8-bit type before the down product, and the blockscaleBf16
("a16") kernels quantize x to fp8 per 128 columns themselves, where the twins read x's bf16
values. (C++ test_fused_moe_twin forces every runnable fmoe row by name; here a few, through JAX.)
"""

from __future__ import annotations

import functools
import math
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_tools import needs_metadata_reader

import jax_aiter
from jax_aiter import Dispatch, _call
from jax_aiter._fused_moe_asm import PLAN_COMMANDS, QUANTS, asm_fused_moe, describe
from jax_aiter.quant import quantize_fp8_blocks, quantize_per_token, shuffle_weight
from poison import run_poisoned

ASM = {"gfx942": Dispatch("asm", "gfx942", 304), "gfx950": Dispatch("asm", "gfx950", 256)}
FP8 = {"gfx942": jnp.float8_e4m3fnuz, "gfx950": jnp.float8_e4m3fn}
LAYOUT = (16, 16)
TARGET = "aiter.fused_moe"


# ---- the problem and its reference --------------------------------------------------------------

def _quantize_weight(w, quant, arch):
    """[E, N, K] f32 -> (quantized [E, N, K], f32 scale of the mode's shape, dequantized f64)."""
    if quant == "int8_per_token":
        q, s = quantize_per_token(w)                        # [E, N, 1]
        rep = np.asarray(s, np.float64)
    elif quant == "fp8_per_token":
        q, s = quantize_fp8_blocks(w, (1, w.shape[-1]), FP8[arch])
        rep = np.asarray(s, np.float64)
    else:
        q, s = quantize_fp8_blocks(w, (128, 128), FP8[arch])  # [E, N/128, K/128]
        rep = np.repeat(np.repeat(np.asarray(s, np.float64), 128, 1), 128, 2)
    return q, s, np.asarray(q.astype(jnp.float32), np.float64) * rep


def _dequantized_x(x, quant, arch):
    """x as the twins read it, in f64 (quantized as asm_fused_moe quantizes it)."""
    xf = jnp.asarray(x)
    if quant == "fp8_block_scale_a16":
        return np.asarray(xf.astype(jnp.float32), np.float64)
    if quant == "int8_per_token":
        q, s = quantize_per_token(xf)
        rep = np.asarray(s, np.float64)
    elif quant == "fp8_per_token":
        q, s = quantize_fp8_blocks(xf, (1, x.shape[1]), FP8[arch])
        rep = np.asarray(s, np.float64)
    else:
        q, s = quantize_fp8_blocks(xf, (1, 128), FP8[arch])
        rep = np.repeat(np.asarray(s, np.float64), 128, 1)
    return np.asarray(q.astype(jnp.float32), np.float64) * rep


def _act(name, g):
    if name == "silu":
        return g / (1.0 + np.exp(-g))
    erf = np.vectorize(math.erf)
    return 0.5 * g * (1.0 + erf(g / math.sqrt(2.0)))


def reference(xd, w1d, w2d, ids, weights, activation):
    """float64 of sum over k of w[t,k] * w2[e] . (act(w1_gate[e] . x[t]) * (w1_up[e] . x[t]))."""
    t, h = xd.shape
    e, two_i, _ = w1d.shape
    i = two_i // 2
    out = np.zeros((t, h))
    for ex in range(e):
        rows, slots = np.nonzero(ids == ex)
        if rows.size == 0:
            continue
        gu = xd[rows] @ w1d[ex].T                       # [n, 2I]
        hid = _act(activation, gu[:, :i]) * gu[:, i:]   # [n, I]
        np.add.at(out, rows, weights[rows, slots][:, None] * (hid @ w2d[ex].T))
    return out


class Problem:
    def __init__(self, seed, t, e, k, h, i, quant, arch, x_dtype=jnp.bfloat16, drop=False):
        rng = np.random.default_rng(seed)
        self.quant, self.arch = quant, arch
        self.x = jnp.asarray(rng.standard_normal((t, h)), x_dtype)
        w1 = jnp.asarray(rng.standard_normal((e, 2 * i, h)) / math.sqrt(h), jnp.float32)
        w2 = jnp.asarray(rng.standard_normal((e, h, i)) / math.sqrt(i), jnp.float32)
        q1, self.w1_scale, self.w1d = _quantize_weight(w1, quant, arch)
        q2, self.w2_scale, self.w2d = _quantize_weight(w2, quant, arch)
        self.w1, self.w2 = shuffle_weight(q1, LAYOUT), shuffle_weight(q2, LAYOUT)
        ids = np.stack([rng.permutation(e)[:k] for _ in range(t)]).astype(np.int32)
        if drop:  # expert parallelism's marks: ids of other devices' experts, dropped
            ids[::3, 0] = -1
            ids[1::5, -1] = e + 2
        self.ids = jnp.asarray(ids)
        w = rng.uniform(0.1, 1.0, (t, k)).astype(np.float32)
        self.weights = jnp.asarray(w / w.sum(1, keepdims=True))
        self.xd = _dequantized_x(self.x, quant, arch)

    def run(self, activation="silu", **kw):
        kw.setdefault("dispatch", ASM[self.arch])
        body = functools.partial(_body, activation=activation, quant=self.quant, **kw)
        # Blocked on: a failed call's error arrives with its result, not with its launch.
        return jax.block_until_ready(run_poisoned(body, self.x, self.w1, self.w2, self.weights,
                                                  self.ids, self.w1_scale, self.w2_scale))

    def reference(self, activation="silu"):
        return reference(self.xd, self.w1d, self.w2d, np.asarray(self.ids),
                         np.asarray(self.weights, np.float64), activation)


def _body(x, w1, w2, weights, ids, s1, s2, **kw):
    return asm_fused_moe(x, w1, w2, weights, ids, w1_scale=s1, w2_scale=s2, **kw)


def assert_close(what, got, want):
    got = np.asarray(got.astype(jnp.float32), np.float64)
    assert not np.isnan(got).any(), f"{what}: NaN in out (an element never written)"
    top = np.abs(want).max()
    err = np.abs(got - want)
    # f32 sums of dequantized products, the 16-bit out rounded once per (inter tile, slot) add:
    # the C++ twin test's bound.
    ok = err <= 0.02 * np.abs(want) + 0.005 * top
    assert ok.all(), (f"{what}: {np.count_nonzero(~ok)} of {ok.size} off, worst "
                      f"{err.max():.3g} (max |ref| {top:.3g})")
    assert top > 0.05, f"{what}: a degenerate problem (max |ref| {top})"


def _plan(p, activation="silu", **kw):
    """The plan asm_fused_moe's call gets (block_m as given, or 32)."""
    t, h = p.x.shape
    e, two_i, _ = p.w1.shape
    return jax_aiter.plan(*describe(t, e, p.ids.shape[1], h, two_i // 2, p.quant, activation,
                                    p.arch, **kw), arch=p.arch)


# ---- values: every mode and activation of the family, both archs ---------------------------------

# (quant, activation, arch) the family has kernels for; gfx942 has no bf16-x gelu block-scale
# kernels (test_errors). On the CPU (CI's time) each mode runs one activation per arch: silu on
# gfx942, gelu on gfx950 (test_fused_moe_twin forces every row of both through its twin).
_GPU = jax.default_backend() != "cpu"
VALUE_CASES = [(q, a, arch) for q in QUANTS for a in ("silu", "gelu") for arch in ASM
               if not (q == "fp8_block_scale_a16" and a == "gelu" and arch == "gfx942")
               and (_GPU or (a == "silu") == (arch == "gfx942"))]


@pytest.mark.parametrize("quant,activation,arch", VALUE_CASES)
def test_values(quant, activation, arch):
    for seed in range(2):  # two data sets through one compiled function (poison.py)
        p = Problem(seed, 37, 5, 2, 256, 256, quant, arch)
        assert_close(f"{quant} {activation} {arch}", p.run(activation), p.reference(activation))


# On the CPU one case an arch here too (the other mode or activation on the other arch).
@pytest.mark.parametrize("quant,arch", [
    (q, arch) for q in ("fp8_per_token", "int8_per_token") for arch in ASM
    if _GPU or (q == "fp8_per_token") == (arch == "gfx942")])
def test_f16_out_and_dropped_ids(quant, arch):
    p = Problem(7, 45, 6, 3, 128, 384, quant, arch, x_dtype=jnp.float16, drop=True)
    out = p.run("gelu")
    assert out.dtype == jnp.float16
    assert_close(f"f16 {quant} {arch}", out, p.reference("gelu"))


@pytest.mark.parametrize("activation,arch", [
    (a, arch) for a in ("silu", "gelu") for arch in ASM
    if _GPU or (a == "silu") == (arch == "gfx942")])
def test_weight_first(activation, arch):
    """AITER's tkw1 kernels: the weight scales act(gate) * up; the same sum."""
    p = Problem(3, 29, 4, 2, 256, 256, "fp8_per_token", arch)
    assert_close(f"tkw1 {activation} {arch}", p.run(activation, weight_first=True),
                 p.reference(activation))
    symbols = _symbols(_plan(p, activation, weight_first=True))
    assert all("tkw1" in s for s in symbols), symbols


def _symbols(plan):
    return [s["launch"]["symbol"] for s in plan["chosen"]["plan"]["steps"] if "launch" in s]


def _code_objects(plan):
    return [s["launch"]["code_object"] for s in plan["chosen"]["plan"]["steps"] if "launch" in s]


# ---- the block size per list, forced kernels -----------------------------------------------------

@pytest.mark.parametrize("quant,arch,kernel,block_m", [
    # per-token: a persistent row and a plain one (each in both archs' tables)
    ("fp8_per_token", "gfx942", "fmoe_bf16_pertokenFp8_g1u1_vs_silu_1tg_ps_32x128", 32),
    ("int8_per_token", "gfx950", "fmoe_bf16_pertokenInt8_g1u1_vs_silu_1tg_32x256", 32),
    # block scales: the forced kernel's block size is what the sorting uses
    ("fp8_block_scale", "gfx950", "fmoe_bf16_blockscaleFp8_g1u1_vs_silu_1tg_ps_64x256", 64),
    ("fp8_block_scale", "gfx950", "fmoe_bf16_blockscaleFp8_g1u1_vs_silu_1tg_pf2_16x128", 16),
    ("fp8_block_scale", "gfx942", "fmoe_bf16_blockscaleFp8_g1u1_novs_silu_1tg_ps_32x128", 32),
    ("fp8_block_scale_a16", "gfx942", "fmoe_bf16_a16_blockscaleFp8_g1u1_vs_silu_1tg_16x256", 16),
    ("fp8_block_scale_a16", "gfx950", "fmoe_bf16_blockscaleBf16_g1u1_ps_silu_32x256", 32),
])
def test_forced_kernels(quant, arch, kernel, block_m):
    p = Problem(11, 33, 4, 2, 256, 256, quant, arch)
    assert_close(f"{kernel} {arch}", p.run(kernel=kernel), p.reference())
    # (the short name is the code object's; a few symbols differ from it)
    [co] = _code_objects(_plan(p, kernel=kernel, block_m=block_m))
    assert co.endswith(f"/{kernel}.co"), co


def test_block_m_is_picked_per_list():
    # gfx942's bf16-x block-scale kernels read blocks of 16 only; the others 32 unless forced.
    p = Problem(5, 40, 4, 2, 256, 256, "fp8_block_scale_a16", "gfx942")
    assert_close("a16 gfx942", p.run(), p.reference())
    with pytest.raises(Exception, match=r"asm \(fmoe\): no AITER fmoe kernel of the call's list takes "
                                        r"I = 256 in blocks of 32"):
        p.run(block_m=32)
    q = Problem(5, 40, 4, 2, 256, 256, "fp8_block_scale", "gfx950")
    assert_close("block 64 gfx950", q.run(block_m=64), q.reference())
    assert _plan(q, block_m=64)["chosen"]["plan"]["notes"]["sub_m"] == 64
    # The per-token kernels read blocks of 32: another block size is refused, saying so.
    r = Problem(5, 40, 4, 2, 256, 256, "fp8_per_token", "gfx942")
    with pytest.raises(Exception, match=r"per-token fmoe kernels read blocks of 32 sorted rows; "
                                        r"the sorting's block_m is 64"):
        r.run(block_m=64)


def test_jit_vmap_and_empty():
    p = Problem(2, 24, 4, 2, 128, 128, "fp8_per_token", "gfx950")
    f = jax.jit(functools.partial(_body, activation="silu", quant="fp8_per_token",
                                  dispatch=ASM["gfx950"]))
    args = (p.x, p.w1, p.w2, p.weights, p.ids, p.w1_scale, p.w2_scale)
    whole = np.asarray(f(*args).astype(jnp.float32))
    halves = jax.vmap(f, in_axes=(0, None, None, 0, 0, None, None))(
        p.x.reshape(2, 12, 128), p.w1, p.w2, p.weights.reshape(2, 12, 2), p.ids.reshape(2, 12, 2),
        p.w1_scale, p.w2_scale)
    same_up_to_atomics(np.asarray(halves.astype(jnp.float32)).reshape(24, 128), whole)
    empty = f(p.x[:0], p.w1, p.w2, p.weights[:0], p.ids[:0], p.w1_scale, p.w2_scale)
    assert empty.shape == (0, 128) and empty.dtype == jnp.bfloat16
    # An empty call is still validated: a bad scale is an error whatever T is.
    with pytest.raises(ValueError, match=r"aiter.fused_moe: operand w2_scale: expected "
                                         r"f32\[4,128,1\]"):
        f(p.x[:0], p.w1, p.w2, p.weights[:0], p.ids[:0], p.w1_scale, p.w1_scale)


# ---- errors ----------------------------------------------------------------------------------

def test_errors():
    p = Problem(1, 8, 4, 2, 256, 256, "fp8_per_token", "gfx942")
    a = dict(w1_scale=p.w1_scale, w2_scale=p.w2_scale, dispatch=ASM["gfx942"])

    def call(x=p.x, w1=p.w1, w2=p.w2, weights=p.weights, ids=p.ids, **kw):
        args = {**a, "quant": "fp8_per_token", **kw}
        return jax.block_until_ready(asm_fused_moe(x, w1, w2, weights, ids, **args))

    with pytest.raises(TypeError, match=r"aiter.fused_moe: operand w1: expected a "
                                        r"ShuffledWeight"):
        call(w1=p.w1.data)
    with pytest.raises(ValueError, match=r"operand w2: expected a weight shuffled in the layout "
                                         r"\(16, 16\), got one in \(32, 16\)"):
        call(w2=shuffle_weight(p.w2.data, (32, 16)))
    with pytest.raises(ValueError, match=r"attribute activation: expected one of \('silu', "
                                         r"'gelu'\), got 'relu'"):
        call(activation="relu")
    with pytest.raises(ValueError, match=r"attribute quant: expected one of .*got 'fp4'"):
        call(quant="fp4")
    with pytest.raises(ValueError, match=r"operand w1: expected int8 weights for quant "
                                         r"'int8_per_token', got float8_e4m3fnuz"):
        call(quant="int8_per_token")
    with pytest.raises(ValueError, match=r"operand x: expected bf16 or f16 \[T, H\], got "
                                         r"float32\[8, 256\]"):
        call(x=p.x.astype(jnp.float32))
    with pytest.raises(ValueError, match=r"operand topk_ids: expected int32 \[8, k\]"):
        call(ids=p.ids[:4])
    with pytest.raises(ValueError, match=r"operand topk_weights: expected shape \(8, 2\)"):
        call(weights=p.weights[:, :1])
    with pytest.raises(ValueError, match=r"aiter.fused_moe: operand w1_scale: expected "
                                         r"f32\[4,512,1\], got none"):
        call(w1_scale=None)
    with pytest.raises(ValueError, match=r"aiter.fused_moe: operand w2: expected "):
        call(w2=shuffle_weight(p.w2.data[:, :128], LAYOUT))
    with pytest.raises(ValueError, match=r"aiter.fused_moe: attribute kernel: expected .* fmoe "
                                         r"kernels .*got 'bogus'"):
        call(kernel="bogus")
    with pytest.raises(ValueError, match=r"asm_fused_moe runs the ASM tier only"):
        call(dispatch=Dispatch("portable"))
    # A kernel of another list, by name: the tier says why, naming the list.
    with pytest.raises(Exception, match=r"asm \(fmoe\): the forced kernel is in another AITER list"):
        call(kernel="fmoe_bf16_pertokenInt8_g1u1_vs_silu_1tg_32x256")
    # A flat kernel reads unsorted routing.
    b = Problem(1, 8, 4, 2, 256, 256, "fp8_block_scale_a16", "gfx942")
    with pytest.raises(Exception, match=r"asm \(fmoe\): the forced kernel is a flat kernel"):
        b.run(kernel="fmoe_bf16_a16_blockscaleFp8_g1u1_vs_silu_1tg_16x128_flat_pf3")
    # gfx942 ships no gelu kernels with bf16 x and block scales.
    with pytest.raises(Exception, match=r"asm \(fmoe\): AITER ships no fmoe kernels of this "
                                        r"quantization, activation and output dtype"):
        b.run("gelu")
    # The fp8 format is the arch's: gfx950 kernels read e4m3fn.
    with pytest.raises(Exception, match=r"aiter.fused_moe: no tier runs this call \(asm \(fmoe\): .*"
                                        r"e4m3fn"):
        call(dispatch=ASM["gfx950"])
    # Block scales: bf16 out only.
    c = Problem(1, 8, 4, 2, 256, 256, "fp8_block_scale", "gfx950", x_dtype=jnp.float16)
    with pytest.raises(Exception, match=r"block-scale fmoe kernels write bf16 only"):
        c.run()


def test_ffi_attribute_errors_name_the_attribute():
    """The target's own checks (a caller of aiter.fused_moe other than asm_fused_moe)."""
    t, e, k, h, i = 8, 4, 2, 256, 256
    _, operands, attributes = describe(t, e, k, h, i, arch="gfx950")
    inputs = {n: jax.ShapeDtypeStruct(s, d) if v is not None else None
              for n, v in operands.items() if n != "out" for d, s in [v or (None, None)]}
    outputs = {"out": (operands["out"][1], jnp.bfloat16)}

    def validate(**changes):
        return _call.validate(TARGET, inputs=inputs, outputs=outputs,
                              attributes={**attributes, **changes})

    assert validate()
    with pytest.raises(ValueError, match=r"aiter.fused_moe: attribute activation: expected "
                                         r"'silu' or 'gelu', got 'relu'"):
        validate(activation="relu")
    with pytest.raises(ValueError, match=r"aiter.fused_moe: attribute quant: expected 'none', "
                                         r"'fp8_per_token', 'int8_per_token' or "
                                         r"'fp8_block_scale', got 'fp4'"):
        validate(quant="fp4")
    with pytest.raises(ValueError, match=r"aiter.fused_moe: operand w1: expected weights "
                                         r"pre-shuffled in the \(16, 16\) layout .*got w_layout "
                                         r"\"flatmm\""):
        validate(w_layout="flatmm")
    with pytest.raises(ValueError, match=r"attribute topk: expected 1..min\(E, 255\) \(E = 4\), "
                                         r"got 5"):
        validate(topk=5)
    with pytest.raises(ValueError, match=r"operand sorted_expert_ids: expected i32\[\d+\] "
                                         r"\(ceil\(S / block_m\)\)"):
        validate(block_m=16)
    with pytest.raises(ValueError, match=r"attribute splitk: expected 0 or 1"):
        validate(splitk=17)


def test_grad_is_a_clear_error():
    p = Problem(1, 8, 4, 2, 256, 256, "fp8_per_token", "gfx942")

    def loss(x, weights):
        return asm_fused_moe(x, p.w1, p.w2, weights, p.ids, quant="fp8_per_token",
                             w1_scale=p.w1_scale, w2_scale=p.w2_scale,
                             dispatch=ASM["gfx942"]).astype(jnp.float32).sum()

    with pytest.raises(TypeError, match=r"aiter.fused_moe: the ASM fused MoE is an inference "
                                        r"op: it has no gradient"):
        jax.grad(loss)(p.x, p.weights)
    with pytest.raises(TypeError, match=r"inference op"):
        jax.grad(loss, argnums=1)(p.x, p.weights)


# ---- tools: the plan, check-aiter ----------------------------------------------------------------

@pytest.mark.parametrize("quant,arch,cus,list_name,persistent", [
    ("fp8_per_token", "gfx942", 304, "pertokenFp8", 1),
    ("int8_per_token", "gfx950", 256, "pertokenInt8", 1),
    ("fp8_block_scale", "gfx942", 80, "blockscaleFp8", None),
    ("fp8_block_scale_a16", "gfx950", 256, "blockscaleBf16", None),
])
def test_plan(quant, arch, cus, list_name, persistent):
    target, operands, attributes = describe(64, 8, 2, 1024, 512, quant, "silu", arch)
    plan = jax_aiter.plan(target, operands, attributes, arch, cus)
    steps = plan["chosen"]["plan"]["steps"]
    assert steps[0]["memset"] == {"what": "out", "dst": "out", "bytes": 64 * 1024 * 2, "value": 0}
    launch = steps[1]["launch"]
    assert list_name in launch["symbol"] and launch["block"] == [256, 1, 1]
    args = {a["name"]: a["value"] for a in launch["args"]}
    assert args["dim" if "dim" in args else "dim_len"] == 1024
    assert launch["args_bytes"] in (448, 480)
    notes = plan["chosen"]["plan"]["notes"]
    if persistent is not None:
        assert notes["persistent"] == persistent
    if notes["persistent"]:
        assert launch["grid"][1:] == [1, 1]
    else:
        assert launch["grid"][0] == 512 // notes["sub_n"]


def test_plan_commands():
    import argparse
    needs, plan = PLAN_COMMANDS[TARGET]
    assert needs == ("tokens", "experts", "topk", "hidden", "inter")
    args = argparse.Namespace(tokens=16, experts=8, topk=2, hidden=512, inter=256,
                              quant="int8_per_token", activation="gelu", arch="gfx950",
                              asm_arch=None, block_m=32, kernel=None, weight_first=False,
                              out_dtype=None)
    target, operands, attributes = plan(None, args)
    got = jax_aiter.plan(target, operands, attributes, "gfx950")
    assert "pertokenInt8_g1u1_vs_gelu" in got["chosen"]["plan"]["steps"][1]["launch"]["symbol"]


# The fmoe family's code objects at AITER e4048607a535: 386 on gfx942 and 406 on gfx950, each
# catalogued once (a kernel in two lists is one file).
FMOE_CODE_OBJECTS = {"gfx942": 386, "gfx950": 406}


def same_up_to_atomics(got, want):
    """Bit for bit on the CPU; on a GPU the fmoe twins accumulate the output with atomics, as
    AITER's kernels do, so the order of the additions (and a bf16 ulp here and there) varies."""
    got, want = np.asarray(got, np.float32), np.asarray(want, np.float32)
    if jax.default_backend() == "cpu":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=0, atol=0.02 * float(np.abs(want).max()))


@needs_metadata_reader
def test_check_aiter_lists_fmoe(tmp_path):
    (tmp_path / "hsa").mkdir()
    report = jax_aiter.check_aiter(str(tmp_path))
    fmoe = [c for c in report["checked"] if c["family"] == "fmoe"]
    for arch, n in FMOE_CODE_OBJECTS.items():
        mine = [c for c in fmoe if c["arch"] == arch]
        assert len(mine) == n, arch
        assert len({c["code_object"] for c in mine}) == n
    assert all(c["code_object"].startswith("fmoe/") for c in fmoe)


# AITER's real code objects (an AITER checkout's hsa/, or `git archive HEAD hsa` of one): every
# fmoe code object found and matching our structs. Skipped without one.
AITER_ROOT = os.environ.get("JAX_AITER_TEST_AITER_ROOT", "")


@pytest.mark.skipif(not os.path.isdir(os.path.join(AITER_ROOT, "hsa")),
                    reason="JAX_AITER_TEST_AITER_ROOT names no AITER checkout")
def test_check_aiter_on_aiters_code_objects():
    report = jax_aiter.check_aiter(AITER_ROOT)
    fmoe = [c for c in report["checked"] if c["family"] == "fmoe"]
    bad = [c for c in fmoe if c["result"] != "ok"]
    assert len(fmoe) == sum(FMOE_CODE_OBJECTS.values()) and not bad, bad[:3]
    tool = subprocess.run([sys.executable, "-m", "jax_aiter.tools", "check-aiter", AITER_ROOT],
                          capture_output=True, text=True, env={**os.environ,
                                                               "JAX_PLATFORMS": "cpu"})
    assert tool.returncode == 0 and ", 0 mismatch" in tool.stdout, tool.stdout[-2000:]


# ---- the two-stage tier: AITER's fmoe_2stages stage 1, our portable stage 2 ----------------------
# jax_aiter.fused_moe(..., stages=2): stage 1 (aiter.fused_moe_stage1, run by its host twins) then
# the down projection as a grouped GEMM. The reference follows the data through both stages: a =
# act(gate) * up in float64, stored as stage 1 stores it (bf16; block scales: fp8 per 128 columns
# with its scale, as jax_aiter.quant quantizes), quantized again per (token, slot) row for the
# per-token modes as stage 2 does, then the down product and the top-k sum.

def _two_stage_reference(p, activation, weight_first=False):
    t, h = p.xd.shape
    e, two_i, _ = p.w1d.shape
    i = two_i // 2
    ids, wts = np.asarray(p.ids), np.asarray(p.weights, np.float64)
    k = ids.shape[1]
    a = np.zeros((t, k, i))
    for s in range(k):
        valid = (ids[:, s] >= 0) & (ids[:, s] < e)
        ex = np.clip(ids[:, s], 0, e - 1)
        gu = np.einsum("th,tnh->tn", p.xd, p.w1d[ex])
        a[:, s] = np.where(valid[:, None], _act(activation, gu[:, :i]) * gu[:, i:], 0.0)
        if weight_first:
            a[:, s] *= wts[:, s:s + 1]
    a = jnp.asarray(a.reshape(t * k, i), jnp.float32)
    if p.quant == "fp8_block_scale":
        q, sc = quantize_fp8_blocks(a, (1, 128), FP8[p.arch])
        ad = np.asarray(q.astype(jnp.float32), np.float64) * np.repeat(np.asarray(sc), 128, 1)
    else:
        ab = a.astype(jnp.bfloat16)
        if p.quant == "int8_per_token":
            q, sc = quantize_per_token(ab)
        else:
            q, sc = quantize_fp8_blocks(ab, (1, i), jax_aiter.fp8_dtype())  # stage 2's, ours
        ad = np.asarray(q.astype(jnp.float32), np.float64) * np.asarray(sc, np.float64)
    ad = ad.reshape(t, k, i)
    out = np.zeros((t, h))
    for s in range(k):
        valid = (ids[:, s] >= 0) & (ids[:, s] < e)
        ex = np.clip(ids[:, s], 0, e - 1)
        o = np.einsum("ti,thi->th", ad[:, s], p.w2d[ex])
        out += np.where(valid[:, None], o * (1.0 if weight_first else wts[:, s:s + 1]), 0.0)
    return out


def _two_stage(x, w1, w2, weights, ids, s1, s2, **kw):
    quant = kw.pop("quant")
    quant = {"fp8_block_scale": "fp8_blockscale"}.get(quant, quant)  # fused_moe's name
    return jax_aiter.fused_moe(x, w1, w2, weights, ids, w1_scale=s1, w2_scale=s2, quant=quant,
                               **kw)


def _run_two_stage(p, activation, **kw):
    kw.setdefault("dispatch", ASM[p.arch])
    kw.setdefault("stages", 2)
    body = functools.partial(_two_stage, activation=activation, quant=p.quant, **kw)
    return jax.block_until_ready(run_poisoned(body, p.x, p.w1, p.w2, p.weights, p.ids,
                                              p.w1_scale, p.w2_scale))


# Stage 2's two paths (per-token: a quantized again per row; block scales: stage 1's own fp8 a and
# scales), on both archs with the doweight test below; CI's time allows no more here:
# test_fused_moe_twin forces every stage-1 row (int8 included), and stage 2's int8 GEMM is the
# portable tier's (test_fused_moe.py).
@pytest.mark.parametrize("quant,activation,arch", [
    ("fp8_per_token", "silu", "gfx942"), ("fp8_block_scale", "gelu", "gfx950")])
def test_two_stage_values(quant, activation, arch):
    p = Problem(11, 13, 4, 2, 128, 256, quant, arch, drop=True)
    assert_close(f"2 stages {quant} {activation} {arch}", _run_two_stage(p, activation),
                 _two_stage_reference(p, activation))


def test_two_stage_weight_first_and_a_forced_kernel():
    """AITER's doweight stage-1 list, its kernel named (stages follows from the name)."""
    p = Problem(5, 21, 4, 2, 128, 256, "fp8_per_token", "gfx950")
    kernel = "fmoe_stage1_bf16_pertokenFp8_doweight_g1u1_16x128_4tg_pf2"
    out = _run_two_stage(p, "silu", weight_first=True, kernel=kernel, stages=None)
    assert_close("2 stages doweight", out, _two_stage_reference(p, "silu", weight_first=True))
    # The plan tool's command for stage 1: AITER's block_m rule and kernel rule.
    t, h = p.x.shape
    got = jax_aiter.plan(*jax_aiter._fused_moe_asm.describe_stage1(
        t, 4, 2, h, 256, "fp8_per_token", "silu", "gfx950", 16, kernel, True), arch="gfx950")
    step = got["chosen"]["plan"]["steps"][1]["launch"]
    # grid: 256 / 128 inter tiles by ceil((21 * 2 + 4 * 16 - 2) / 16) = 7 sorted blocks
    assert step["symbol"] == f"_ZN5aiter57{kernel}E" and step["grid"] == [2, 7, 1], step
    sw = [a for a in step["args"] if a["name"] == "SW"]
    assert sw and sw[0]["value"] == "sorted_weights", step["args"]


def test_two_stage_errors():
    p = Problem(1, 9, 4, 2, 128, 128, "fp8_per_token", "gfx942")
    call = functools.partial(jax_aiter.fused_moe, p.x, p.w1, p.w2, p.weights, p.ids,
                             w1_scale=p.w1_scale, w2_scale=p.w2_scale, quant="fp8_per_token",
                             dispatch=ASM["gfx942"])
    with pytest.raises(ValueError, match="attribute stages: expected 1 or 2"):
        call(stages=3)
    with pytest.raises(ValueError, match="weight_first: AITER's doweight stage-1 kernels take"):
        jax_aiter.fused_moe(p.x, p.w1, p.w2, p.weights, p.ids, w1_scale=p.w1_scale,
                            w2_scale=p.w2_scale, quant="int8_per_token", stages=2,
                            weight_first=True, dispatch=ASM["gfx942"])
    with pytest.raises(ValueError, match="stages=2 runs AITER's two-stage ASM tier"):
        call(stages=2, dispatch=Dispatch("portable"))
    with pytest.raises(ValueError, match="stages=2 runs AITER's fmoe_2stages stage-1 kernels"):
        call(stages=2, kernel="fmoe_bf16_pertokenFp8_g1u1_vs_silu_1tg_32x128")
    with pytest.raises(ValueError, match="needs stages=2"):
        call(stages=1, kernel="fmoe_stage1_bf16_pertokenFp8_g1u1_32x128_3tg_pf2")
    # A forced kernel whose tile does not divide I: the C++ rule says so, naming the family.
    with pytest.raises(ValueError, match="attribute kernel: .* cannot run this call on gfx942: I = "
                                         "128 is not a multiple of the forced kernel's tile N 256"):
        call(kernel="fmoe_stage1_bf16_pertokenFp8_g1u1_32x256_2tg_pf2")
    def loss(x):
        return jax_aiter.fused_moe(x, p.w1, p.w2, p.weights, p.ids, w1_scale=p.w1_scale,
                                   w2_scale=p.w2_scale, quant="fp8_per_token", stages=2,
                                   dispatch=ASM["gfx942"]).astype(jnp.float32).sum()

    with pytest.raises(TypeError, match="no gradient"):
        jax.grad(loss)(p.x)


@needs_metadata_reader
def test_check_aiter_lists_fmoe_2stages(tmp_path):
    (tmp_path / "hsa").mkdir()
    report = jax_aiter.check_aiter(str(tmp_path))
    rows = [c for c in report["checked"] if c["family"] == "fmoe_2stages"]
    assert {a: sum(c["arch"] == a for c in rows) for a in ASM} == {"gfx942": 186, "gfx950": 182}
    assert all(c["code_object"].startswith("fmoe_2stages/") for c in rows)
