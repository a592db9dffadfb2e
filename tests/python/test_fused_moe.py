"""jax_aiter.fused_moe against a float64 NumPy model of AITER's torch_moe (an expert loop over the
dequantized math), every quant mode and activation; gradients of the bf16 layer against the
float64 model's (by jax.grad of the same model in jnp float64 would need x64: here a float32 jnp
model, independent of our kernels); routing edge cases; bad inputs named; the layer under jit
with tokens and experts sharded on the forced host devices."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

import jax_aiter
from jax_aiter import fp8_dtype, fused_moe

BF16 = jnp.bfloat16


def _erf(x):
    from math import erf
    return np.vectorize(erf)(x)


def _act(name, g):
    if name == "silu":
        return g / (1.0 + np.exp(-g))
    return 0.5 * g * (1.0 + _erf(g / np.sqrt(2.0)))


def _bf16(a):
    return np.asarray(a, np.float64).astype(ml_dtypes.bfloat16).astype(np.float64)


def _q_rows(a, kind):
    """NumPy twin of the op's on-the-fly quantizers: (dequantized values, f64)."""
    a = np.asarray(a, np.float32)
    amax = np.abs(a).max(axis=-1, keepdims=True)
    if kind == "int8":
        s = np.where(amax > 0, amax / np.float32(127.0), np.float32(1.0)).astype(np.float32)
        q = np.clip(np.round(a / s), -127, 127)
        return q.astype(np.float64) * s
    dt = np.dtype(fp8_dtype())
    fmax = np.float32(float(ml_dtypes.finfo(dt).max))
    s = np.where(amax > 0, amax / fmax, np.float32(1.0)).astype(np.float32)
    q = np.clip(a / s, -fmax, fmax).astype(dt).astype(np.float64)
    return q * s


def _q_blocks(a):
    m, k = a.shape
    blocks = np.asarray(a, np.float32).reshape(m, k // 128, 128)
    return _q_rows(blocks, "fp8").reshape(m, k)


def _model(x, w1, w2, tw, ti, activation, quant=None, w1s=None, w2s=None):
    """torch_moe in float64: per expert, the tokens that chose it, quantized as the op does."""
    x = np.asarray(x, np.float64)
    t, h = x.shape
    e, n2, _ = w1.shape
    inter = n2 // 2
    w1f, w2f = np.asarray(w1.astype(np.float32), np.float64), np.asarray(
        w2.astype(np.float32), np.float64)
    if quant in ("fp8_per_token", "int8_per_token"):
        w1f = w1f * np.asarray(w1s, np.float64)
        w2f = w2f * np.asarray(w2s, np.float64)
    elif quant == "fp8_blockscale":
        w1f = w1f * np.repeat(np.repeat(np.asarray(w1s, np.float64), 128, 1), 128, 2)
        w2f = w2f * np.repeat(np.repeat(np.asarray(w2s, np.float64), 128, 1), 128, 2)
    kind = "int8" if quant == "int8_per_token" else "fp8"
    out = np.zeros((t, h))
    for ex in range(e):
        for tok, j in zip(*np.nonzero(np.asarray(ti) == ex)):
            xr = x[tok:tok + 1]
            if quant == "fp8_blockscale":
                xr = _q_blocks(xr)
            elif quant is not None:
                xr = _q_rows(xr, kind)
            hid = xr @ w1f[ex].T
            a = _bf16(_act(activation, hid[:, :inter]) * hid[:, inter:])
            if quant == "fp8_blockscale":
                a = _q_blocks(a)
            elif quant is not None:
                a = _q_rows(a, kind)
            out[tok] += float(tw[tok, j]) * (a @ w2f[ex].T)[0]
    return out


def _routing(seed, t, e, k, experts=None):
    rng = np.random.default_rng(seed)
    pool = np.arange(e) if experts is None else np.asarray(experts)
    ids = np.stack([rng.choice(pool, k, replace=False) for _ in range(t)]).astype(np.int32)
    w = rng.random((t, k)).astype(np.float32)
    return ids, w / w.sum(1, keepdims=True)


def _weights(seed, e, h, inter, dtype=BF16):
    rng = np.random.default_rng(seed)
    x_scale = 1.0 / np.sqrt(h)
    w1 = jnp.asarray(rng.standard_normal((e, 2 * inter, h)) * x_scale, dtype)
    w2 = jnp.asarray(rng.standard_normal((e, h, inter)) / np.sqrt(inter), dtype)
    return w1, w2


def _close(got, want, rel):
    got = np.asarray(jnp.asarray(got, jnp.float32), np.float64)
    err = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30)
    assert err < rel, f"relative error {err:.3g} >= {rel}"
    assert np.all(np.isfinite(got))


@pytest.mark.parametrize("activation", ["silu", "gelu"])
@pytest.mark.parametrize("t,e,k,h,inter", [(1, 4, 1, 64, 32), (37, 8, 2, 128, 96),
                                           (64, 16, 8, 64, 64)])
def test_bf16_matches_the_float64_model(activation, t, e, k, h, inter):
    rng = np.random.default_rng(t + e)
    x = jnp.asarray(rng.standard_normal((t, h)), BF16)
    w1, w2 = _weights(e, e, h, inter)
    ids, tw = _routing(k, t, e, k)
    got = jax.jit(lambda *a: fused_moe(*a, activation=activation))(x, w1, w2, tw, ids)
    assert got.dtype == BF16 and got.shape == (t, h)
    _close(got, _model(x, w1, w2, tw, ids, activation), 1e-2)


def _quantized_weights(quant, w1, w2):
    if quant == "fp8_blockscale":
        def q(w):
            qq, s = jax.vmap(lambda m: jax_aiter.quantize_fp8_per_block(m))(w)
            return qq, s
        (q1, s1), (q2, s2) = q(w1), q(w2)
        return q1, q2, s1, s2

    def per_channel(w, int8):
        wf = np.asarray(w.astype(jnp.float32))
        amax = np.abs(wf).max(-1, keepdims=True)
        if int8:
            s = (amax / 127.0).astype(np.float32)
            return jnp.asarray(np.clip(np.round(wf / s), -127, 127), jnp.int8), jnp.asarray(s)
        dt = fp8_dtype()
        s = (amax / float(jnp.finfo(dt).max)).astype(np.float32)
        return jnp.asarray(wf / s, dt), jnp.asarray(s)

    int8 = quant == "int8_per_token"
    (q1, s1), (q2, s2) = per_channel(w1, int8), per_channel(w2, int8)
    return q1, q2, s1, s2


@pytest.mark.parametrize("quant", ["fp8_per_token", "int8_per_token", "fp8_blockscale"])
@pytest.mark.parametrize("activation", ["silu", "gelu"])
def test_quantized_modes_match_the_dequantized_model(quant, activation):
    t, e, k, h, inter = 24, 8, 2, 256, 128
    rng = np.random.default_rng(7)
    x = jnp.asarray(rng.standard_normal((t, h)), BF16)
    w1, w2 = _weights(3, e, h, inter)
    q1, q2, s1, s2 = _quantized_weights(quant, w1, w2)
    ids, tw = _routing(5, t, e, k)
    got = jax.jit(lambda *a: fused_moe(*a[:5], activation=activation, quant=quant, w1_scale=a[5],
                                       w2_scale=a[6]))(x, q1, q2, tw, ids, s1, s2)
    # The activations are quantized twice (x, then a): a value at an 8-bit rounding boundary may
    # land either way between the device's f32 activation and the model's f64 one. Measured:
    # 0.2-1.5 % on the CPU, 2.3 % on an H200 (its silu/gelu round differently); skipping the
    # activations' quantization moves the result 1.7 % (int8) to 4.5 % (fp8) instead.
    tol = {"int8_per_token": 1e-2, "fp8_per_token": 3e-2, "fp8_blockscale": 3e-2}[quant]
    _close(got, _model(x, q1, q2, tw, ids, activation, quant, s1, s2), tol)


def test_gradients_match_a_jnp_model():
    t, e, k, h, inter = 20, 6, 2, 64, 32
    rng = np.random.default_rng(11)
    x = jnp.asarray(rng.standard_normal((t, h)), jnp.float32)
    w1, w2 = _weights(2, e, h, inter, jnp.float32)
    ids, tw = _routing(3, t, e, k)
    tw = jnp.asarray(tw)

    def dense(x, w1, w2, tw):  # every expert on every token, masked: independent of our ops
        hid = jnp.einsum("th,enh->ten", x, w1)
        a = jax.nn.silu(hid[..., :inter]) * hid[..., inter:]
        o = jnp.einsum("tei,ehi->teh", a, w2)
        sel = jax.nn.one_hot(ids, e) * tw[..., None]  # [t, k, e]
        return jnp.einsum("tke,teh->th", sel, o)

    def ours(x, w1, w2, tw):
        return fused_moe(x.astype(BF16), w1.astype(BF16), w2.astype(BF16), tw, ids).astype(
            jnp.float32)

    cot = jnp.asarray(rng.standard_normal((t, h)), jnp.float32)
    loss = lambda f: (lambda *a: jnp.sum(f(*a) * cot))  # noqa: E731
    got = jax.jit(jax.grad(loss(ours), argnums=(0, 1, 2, 3)))(x, w1, w2, tw)
    want = jax.grad(loss(dense), argnums=(0, 1, 2, 3))(x, w1, w2, tw)
    for name, g, r in zip(("x", "w1", "w2", "topk_weights"), got, want):
        err = float(jnp.linalg.norm(g - r) / jnp.linalg.norm(r))
        assert err < 3e-2, f"d{name}: relative error {err:.3g}"


@pytest.mark.parametrize("case", ["expert_without_tokens", "ids_out_of_range", "one_expert"])
def test_routing_edge_cases(case):
    t, e, k, h, inter = 16, 8, 2, 64, 32
    rng = np.random.default_rng(1)
    x = jnp.asarray(rng.standard_normal((t, h)), BF16)
    w1, w2 = _weights(4, e, h, inter)
    if case == "expert_without_tokens":
        ids, tw = _routing(2, t, e, k, experts=[0, 1, 2, 5, 6])
    elif case == "one_expert":
        ids, tw = _routing(2, t, e, 1, experts=[3])
    else:
        ids, tw = _routing(2, t, e, k)
        ids[::3, 0] = e + 4  # another device's expert: contributes nothing
        ids[1::5, 1] = -1
    got = jax.jit(fused_moe)(x, w1, w2, tw, ids)
    keep = (ids >= 0) & (ids < e)
    _close(got, _model(x, w1, w2, np.where(keep, tw, 0), np.where(keep, ids, 0), "silu"), 1e-2)


def test_sharded_tokens_and_experts():
    devs = jax.devices()
    if len(devs) < 4:
        pytest.skip("needs 4 devices")
    t, e, k, h, inter = 32, 8, 2, 64, 32
    rng = np.random.default_rng(9)
    x = jnp.asarray(rng.standard_normal((t, h)), BF16)
    w1, w2 = _weights(6, e, h, inter)
    ids, tw = _routing(8, t, e, k)
    want = _model(x, w1, w2, tw, ids, "silu")
    mesh = Mesh(np.array(devs[:4]).reshape(2, 2), ("data", "expert"))
    put = lambda a, spec: jax.device_put(a, NamedSharding(mesh, spec))  # noqa: E731
    args = (put(x, P("data")), put(w1, P("expert")), put(w2, P("expert")), put(tw, P("data")),
            put(ids, P("data")))
    got = jax.jit(fused_moe)(*args)
    _close(got, want, 1e-2)
    hlo = jax.jit(fused_moe).lower(*args).compile().as_text()
    assert "all-gather" not in hlo, "tokens and experts split: nothing is gathered"
    assert "all-reduce" in hlo, "the experts' shares are summed"


@pytest.mark.parametrize("kw,match", [
    (dict(activation="relu"), "attribute activation"),
    (dict(quant="fp4"), "attribute quant"),
    (dict(x=np.zeros((4, 64), np.float32)), "operand x: expected bf16 or f16"),
    (dict(w2=np.zeros((4, 64, 16), np.float32)), "operand w2: expected"),
    (dict(ids=np.zeros((3, 2), np.int32)), "operand topk_ids"),
    (dict(tw=np.zeros((4, 3), np.float32)), "operand topk_weights"),
    (dict(quant="fp8_per_token"), "operand w1: expected float8"),
    (dict(w1_scale=np.ones((4, 64, 1), np.float32)), "operand w1_scale: expected None"),
])
def test_bad_inputs_are_named(kw, match):
    e, h, inter, t = 4, 64, 32, 4
    args = dict(x=jnp.zeros((t, h), BF16), w1=jnp.zeros((e, 2 * inter, h), BF16),
                w2=jnp.zeros((e, h, inter), BF16), tw=np.zeros((t, 2), np.float32),
                ids=np.zeros((t, 2), np.int32))
    attrs = {}
    for key, v in kw.items():
        if key in args:
            args[key] = v
        else:
            attrs[key] = v
    with pytest.raises(ValueError, match=match):
        fused_moe(args["x"], args["w1"], args["w2"], args["tw"], args["ids"], **attrs)


def test_quantized_modes_refuse_gradients():
    t, e, k, h, inter = 8, 4, 2, 128, 128
    x = jnp.ones((t, h), BF16)
    w1, w2 = _weights(1, e, h, inter)
    q1, q2, s1, s2 = _quantized_weights("fp8_per_token", w1, w2)
    ids, tw = _routing(1, t, e, k)
    f = lambda x: fused_moe(x, q1, q2, tw, ids, quant="fp8_per_token", w1_scale=s1,  # noqa
                            w2_scale=s2).astype(jnp.float32).sum()
    with pytest.raises(TypeError, match="inference only"):
        jax.grad(f)(x)


def test_asm_dispatch_runs_aiters_tier():
    """fused_moe(dispatch=Dispatch("asm", arch)) is the fmoe family's call (its twins here)."""
    t, e, k, h, inter = 16, 4, 2, 256, 256
    rng = np.random.default_rng(3)
    x = jnp.asarray(rng.standard_normal((t, h)), BF16)
    w1, w2 = _weights(5, e, h, inter)
    ids, tw = _routing(6, t, e, k)
    arch = "gfx942"
    dt = fp8_dtype(arch)

    def q(w):
        wf = np.asarray(w.astype(jnp.float32))
        s = (np.abs(wf).max(-1, keepdims=True) / float(jnp.finfo(dt).max)).astype(np.float32)
        return jnp.asarray(wf / s, dt), jnp.asarray(s)

    (q1, s1), (q2, s2) = q(w1), q(w2)
    sh1, sh2 = (jax.vmap(lambda m: jax_aiter.shuffle_weight(m, (16, 16)).data)(w)
                for w in (q1, q2))
    sw1, sw2 = jax_aiter.ShuffledWeight(sh1, (16, 16)), jax_aiter.ShuffledWeight(sh2, (16, 16))
    d = jax_aiter.Dispatch("asm", arch)
    got = fused_moe(x, sw1, sw2, tw, ids, quant="fp8_per_token", w1_scale=s1, w2_scale=s2,
                    dispatch=d)
    from jax_aiter._fused_moe_asm import asm_fused_moe
    want = asm_fused_moe(x, sw1, sw2, tw, ids, quant="fp8_per_token", w1_scale=s1, w2_scale=s2,
                         dispatch=d)
    from test_fused_moe_asm import same_up_to_atomics
    same_up_to_atomics(got, want)
    # The twin keeps act(gate)*up in f32 (AITER's kernel re-quantizes it): within the 8-bit error.
    _close(got, _model(x, q1, q2, tw, ids, "silu", "fp8_per_token", s1, s2), 6e-2)
    with pytest.raises(TypeError, match="expected a ShuffledWeight"):
        fused_moe(x, q1, q2, tw, ids, quant="fp8_per_token", w1_scale=s1, w2_scale=s2, dispatch=d)
    with pytest.raises(ValueError, match="take quantized"):
        fused_moe(x, w1, w2, tw, ids, dispatch=d)
