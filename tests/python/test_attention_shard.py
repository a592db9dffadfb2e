"""Flash attention split into shards through JAX (the handlers' "shard" operand, int32[4]
{b0, h0, r0, sq_total}): one call cut along batch, query heads or query rows (k and v whole), each
piece run with its offsets through jax_aiter._call.call, must give the whole call's values on its
slice: bit for bit for out, lse, dq and dbias (row pieces aligned to the kernels' 64-row tiles)
and for dk, dv of batch and head pieces; a row piece's dk, dv are partial sums whose total matches
within rounding. With dropout, causal masks, windows, ALiBi and bias. Then the same with the
offsets computed on the device from jax.lax.axis_index inside shard_map, as a partitioning rule
computes them; the dropout mask of a shard; a wrong-shaped shard is an error naming it.

Small shapes: on CPU the Host backend's C++ twins run the kernels.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jax_aiter
from jax_aiter import Dispatch, _call, attention

BF16, F16, F32, I32 = jnp.bfloat16, jnp.float16, jnp.float32, jnp.int32
PORTABLE = Dispatch("portable")


def _attrs(cfg, backward):
    out = {"softmax_scale": 1.0 / math.sqrt(cfg["d"]), "causal": cfg.get("causal", False),
           "window_left": cfg.get("window", (-1, -1))[0],
           "window_right": cfg.get("window", (-1, -1))[1], "dropout_p": cfg.get("p", 0.0),
           "max_seqlen_q": 0, "max_seqlen_k": 0, "bf16_cvt": 1}
    if backward:
        out.update(deterministic=False, atomic32=True)
    return out


def fwd_bwd(cfg, q, k, v, dout, bias, alibi, key, shard):
    """The forward, then the backward from its out and lse; every output, as NumPy arrays."""
    b, sq, hq, _ = q.shape
    sk, dv = k.shape[1], v.shape[-1]
    got = _call.call("aiter.flash_attn_fwd",
                     inputs={"q": q, "k": k, "v": v, "bias": bias, "alibi_slopes": alibi,
                             "rng_key": key, "shard": shard},
                     outputs={"out": ((b, sq, hq, dv), q.dtype), "lse": ((b, hq, sq), F32)},
                     attributes=_attrs(cfg, False), dispatch=PORTABLE)
    out, lse = got["out"], got["lse"]
    dbias_shape = (b, hq, sq, sk) if bias is not None else (0,)
    grads = _call.call("aiter.flash_attn_bwd",
                       inputs={"dout": dout, "q": q, "k": k, "v": v, "out": out, "lse": lse,
                               "bias": bias, "alibi_slopes": alibi, "rng_key": key,
                               "shard": shard},
                       outputs={"dq": (q.shape, q.dtype), "dk": (k.shape, k.dtype),
                                "dv": (v.shape, v.dtype), "dbias": (dbias_shape, F32)},
                       attributes=_attrs(cfg, True), dispatch=PORTABLE)
    return {"out": out, "lse": lse, **grads}


def make_inputs(cfg, seed=0):
    rng = np.random.default_rng(seed)
    b, sq, sk, hq, hk, d = (cfg[n] for n in ("b", "sq", "sk", "hq", "hk", "d"))
    dt = cfg.get("dtype", BF16)
    u = lambda shape, lo=-1.0, hi=1.0: rng.uniform(lo, hi, shape)  # noqa: E731
    x = {"q": jnp.asarray(u((b, sq, hq, d)), dt), "k": jnp.asarray(u((b, sk, hk, d)), dt),
         "v": jnp.asarray(u((b, sk, hk, d)), dt), "dout": jnp.asarray(u((b, sq, hq, d)), dt),
         "bias": None, "alibi": None, "key": None}
    if cfg.get("bias"):
        x["bias"] = jnp.asarray(u((b, hq, sq, sk), -2, 2), F32)
    if cfg.get("alibi"):
        x["alibi"] = jnp.asarray(u((b, hq), 0.01, 0.3), F32)
    if cfg.get("p", 0.0) > 0:
        x["key"] = jnp.asarray([0x2545F491, -0x7B3A1C05], I32)
    return x


def piece_inputs(cfg, x, b0, nb, h0, nh, r0, nr):
    g = cfg["hq"] // cfg["hk"]
    q_cut = (slice(b0, b0 + nb), slice(r0, r0 + nr), slice(h0, h0 + nh))
    kv_cut = (slice(b0, b0 + nb), slice(None), slice(h0 // g, (h0 + nh) // g))
    y = {"q": x["q"][q_cut], "k": x["k"][kv_cut], "v": x["v"][kv_cut], "dout": x["dout"][q_cut],
         "bias": None, "alibi": None, "key": x["key"]}
    if x["bias"] is not None:
        y["bias"] = x["bias"][b0:b0 + nb, h0:h0 + nh, r0:r0 + nr]
    if x["alibi"] is not None:
        y["alibi"] = x["alibi"][b0:b0 + nb, h0:h0 + nh]
    return y


def run(cfg, x, shard=None):
    return {n: np.asarray(a) for n, a in fwd_bwd(cfg, x["q"], x["k"], x["v"], x["dout"],
                                                   x["bias"], x["alibi"], x["key"],
                                                   shard).items()}


def bits(a):
    a = np.asarray(a)
    return a.view(np.uint16) if a.dtype.itemsize == 2 else a.view(np.uint32)


CONFIGS = {
    "causal dropout alibi": dict(b=2, sq=128, sk=96, hq=4, hk=2, d=32, causal=True, p=0.3,
                                 alibi=True),
    "window bias f16": dict(b=2, sq=128, sk=160, hq=4, hk=2, d=40, dtype=F16, window=(40, 90),
                            bias=True),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_pieces_give_the_whole_calls_values(name):
    cfg = CONFIGS[name]
    b, sq, hq, hk = cfg["b"], cfg["sq"], cfg["hq"], cfg["hk"]
    x = make_inputs(cfg)
    whole = run(cfg, x)
    dk_sum = np.zeros(whole["dk"].shape)
    dv_sum = np.zeros(whole["dv"].shape)
    pieces = [(0, 1, 0, hq, 0, sq), (1, 1, 0, hq, 0, sq),          # batch
              (0, b, 0, hq // 2, 0, sq), (0, b, hq // 2, hq // 2, 0, sq),  # heads
              (0, b, 0, hq, 0, 64), (0, b, 0, hq, 64, sq - 64)]    # rows (k, v whole)
    for b0, nb, h0, nh, r0, nr in pieces:
        where = f"{name}: piece b0={b0} h0={h0} r0={r0}"
        got = run(cfg, piece_inputs(cfg, x, b0, nb, h0, nh, r0, nr),
                  jnp.asarray([b0, h0, r0, sq], I32))
        q_cut = (slice(b0, b0 + nb), slice(r0, r0 + nr), slice(h0, h0 + nh))
        for n, want in (("out", whole["out"][q_cut]), ("dq", whole["dq"][q_cut]),
                        ("lse", whole["lse"][b0:b0 + nb, h0:h0 + nh, r0:r0 + nr])):
            np.testing.assert_array_equal(bits(got[n]), bits(want), err_msg=f"{where} {n}")
        if x["bias"] is not None:
            np.testing.assert_array_equal(
                bits(got["dbias"]), bits(whole["dbias"][b0:b0 + nb, h0:h0 + nh, r0:r0 + nr]),
                err_msg=f"{where} dbias")
        kv_cut = (slice(b0, b0 + nb), slice(None), slice(h0 * hk // hq, (h0 + nh) * hk // hq))
        if nr == sq:
            for n in ("dk", "dv"):
                np.testing.assert_array_equal(bits(got[n]), bits(whole[n][kv_cut]),
                                              err_msg=f"{where} {n}")
        dk_sum[kv_cut] += got["dk"].astype(np.float64)
        dv_sum[kv_cut] += got["dv"].astype(np.float64)
    # Every key gradient appears in two pieces of each kind: batch, heads and rows.
    for n, total in (("dk", dk_sum), ("dv", dv_sum)):
        ref = whole[n].astype(np.float64)
        np.testing.assert_allclose(total / 3, ref, rtol=2**-6, atol=2**-6 * np.abs(ref).max(),
                                   err_msg=f"{name}: {n} summed over the pieces")


def test_offsets_from_axis_index_inside_shard_map():
    """Context parallelism as a partitioning rule runs it: q's rows split over two devices, k and
    v whole, each device computing its shard offsets from its axis index; heads split too."""
    devices = np.array(jax.devices()[:2])
    if devices.size < 2:
        pytest.skip("needs two devices")
    from jax.sharding import Mesh, PartitionSpec as P
    mesh = Mesh(devices, ("x",))
    cfg = CONFIGS["causal dropout alibi"]
    x = make_inputs(cfg, seed=3)
    sq = cfg["sq"]
    whole = run(cfg, x)

    def rows(q, k, v, dout, alibi, key):
        r0 = jax.lax.axis_index("x") * q.shape[1]
        shard = jnp.stack([0, 0, r0, sq]).astype(I32)
        g = fwd_bwd(cfg, q, k, v, dout, None, alibi, key, shard)
        # A row shard's dk, dv are partial sums over its queries.
        return g["out"], g["lse"], g["dq"], jax.lax.psum(g["dk"].astype(F32), "x")

    rspec = P(None, "x", None, None)
    f = jax.jit(jax.shard_map(rows, mesh=mesh,
                              in_specs=(rspec, P(), P(), rspec, P(), P()),
                              out_specs=(rspec, P(None, None, "x"), rspec, P())))
    out, lse, dq, dk = f(x["q"], x["k"], x["v"], x["dout"], x["alibi"], x["key"])
    for n, got in (("out", out), ("lse", lse), ("dq", dq)):
        np.testing.assert_array_equal(bits(got), bits(whole[n]), err_msg=f"rows {n}")
    ref = whole["dk"].astype(np.float64)
    np.testing.assert_allclose(np.asarray(dk), ref, rtol=2**-6, atol=2**-6 * np.abs(ref).max())

    def heads(q, k, v, dout, alibi, key):
        shard = jnp.stack([0, jax.lax.axis_index("x") * q.shape[2], 0, 0]).astype(I32)
        g = fwd_bwd(cfg, q, k, v, dout, None, alibi, key, shard)
        return g["out"], g["dk"]

    hspec = P(None, None, "x", None)
    f = jax.jit(jax.shard_map(heads, mesh=mesh,
                              in_specs=(hspec, hspec, hspec, hspec, P(None, "x"), P()),
                              out_specs=(hspec, hspec)))
    out, dk = f(x["q"], x["k"], x["v"], x["dout"], x["alibi"], x["key"])
    np.testing.assert_array_equal(bits(out), bits(whole["out"]))
    np.testing.assert_array_equal(bits(dk), bits(whole["dk"]))


def mask_of_shard(key, shape, p, shard):
    """aiter.attn_dropout_mask called directly with a shard operand (as the partitioning rule
    does; dropout_mask itself takes none)."""
    got = _call.call("aiter.attn_dropout_mask",
                     inputs={"rng_key": attention._key_words(key), "shard": shard},
                     outputs={"keep": (shape, np.uint8)}, attributes={"dropout_p": p})
    return got["keep"].astype(jnp.bool_)


def test_dropout_mask_of_a_shard():
    key = jax.random.key(7)
    b, h, sq, sk = 2, 4, 24, 40
    whole = np.asarray(jax_aiter.dropout_mask(key, b, h, sq, sk, 0.3))
    for b0, nb, h0, nh, r0, nr in ((1, 1, 0, h, 0, sq), (0, b, 1, 2, 0, sq), (0, b, 0, h, 5, 11),
                                   (1, 1, 2, 2, 8, 16)):
        got = mask_of_shard(key, (nb, nh, nr, sk), 0.3, jnp.asarray([b0, h0, r0, sq], I32))
        np.testing.assert_array_equal(np.asarray(got),
                                      whole[b0:b0 + nb, h0:h0 + nh, r0:r0 + nr])
    same = mask_of_shard(key, (b, h, sq, sk), 0.3, jnp.zeros(4, I32))
    np.testing.assert_array_equal(np.asarray(same), whole)


@pytest.mark.parametrize("bad", [np.zeros(3, np.int32), np.zeros(4, np.float32),
                                 np.zeros((2, 2), np.int32)], ids=["i32[3]", "f32[4]", "i32[2,2]"])
def test_wrong_shard_shape_is_named(bad):
    cfg = dict(b=1, sq=16, sk=16, hq=2, hk=2, d=16)
    x = make_inputs(cfg)
    with pytest.raises(Exception,
                       match=r"aiter.flash_attn_(fwd|bwd): operand shard: expected int32\[4\]"):
        run(cfg, x, jnp.asarray(bad))
    with pytest.raises(Exception,
                       match=r"aiter.attn_dropout_mask: operand shard: expected int32\[4\]"):
        jax.block_until_ready(mask_of_shard(jax.random.key(0), (1, 2, 4, 4), 0.5,
                                            jnp.asarray(bad)))  # a GPU reports it on completion
