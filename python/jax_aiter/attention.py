"""Flash attention (forward and backward, batch and varlen) with a custom VJP, backed by the
aiter.flash_attn_fwd / aiter.flash_attn_bwd FFI targets, and the dropout mask its kernels use.

Names and argument order follow ROCm/jax-aiter and flash-attn:

  flash_attn_func(q, k, v, dropout_p, softmax_scale, causal, window_size, bias, alibi_slopes,
                  deterministic, return_lse, *, dropout_key)        q [b, sq, hq, d]  (BSHD)
  flash_attn_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, ...)
                                                                    q [total_q, hq, d] (THD)
  dropout_mask(key, b, hq, sq, sk, p)                               the keep-mask, [b, hq, sq, sk]

Semantics (every tier and backend):
  * MHA, MQA, GQA: hq % hk == 0; query head h reads key head h // (hq // hk).
  * bf16 or f16; head dims up to 256, d and dv may differ (192/128); any d: q, k and v are padded
    with zeros to a multiple of 8 internally, and the default scale is 1/sqrt(d) of the unpadded d.
  * fp8 forward: q, k, v of one e4m3 format (``jax_aiter.fp8_dtype()``: float8_e4m3fnuz on
    gfx942, float8_e4m3fn elsewhere) with ``q_descale``, ``k_descale``, ``v_descale`` (float32
    scalars, AITER's per-tensor descales): attention of descale * x, out bf16. Forward only: its
    gradient raises (AITER has no fp8 backward). docs/ops/flash_attention.md, "FP8 forward".
  * causal is aligned to the bottom-right corner (the last query sees the last key), as in
    flash-attn >= 2.1 and AITER; window_size = (left, right), -1 unbounded; causal means right = 0.
  * bias: broadcastable to [b, hq, sq, sk] (batch mode only), q's dtype or f32; its gradient is
    computed (through a float32 [b, hq, sq, sk] buffer, then summed down to the bias's shape).
  * alibi_slopes: f32 [hq] or [b, hq]: adds -slope * |i + sk - sq - j| to score (i, j).
  * dropout: a JAX PRNG key (``dropout_key``); the mask is a pure function of (key, batch, head,
    row, col) (Philox4x32-10), the same in forward and backward, on every backend and tier;
    ``dropout_mask`` returns it. Kept probabilities are scaled by 1 / (1 - p).
  * A query that sees no key gets out = 0 and lse = +inf (as flash-attn). NaN in gives NaN out: a
    row with a NaN score (NaN in q, k, bias or its ALiBi slope) gets NaN out, lse and gradients.
  * lse: float32 [b, hq, sq] (varlen: [hq, total_q]), natural log; returned with
    return_lse=True, as a non-differentiable value (its cotangent is not propagated, as in
    flash-attn).
  * deterministic=True gives bit-identical gradients run to run (our kernels always do; it keeps
    AITER's atomic backward out).
  * varlen: cu_seqlens_* are int32 [nseq + 1] arrays (traced is fine: usable under jit);
    max_seqlen_* are required Python ints bounding every sequence. When cu_seqlens are concrete
    they are checked here (non-decreasing, from 0 to the total, no sequence longer than its
    max_seqlen); traced offsets cannot be checked without a device sync. The kernels treat
    max_seqlen_* as a launch size only: a longer sequence is still computed whole, forward and
    backward, on every tier. They clamp offsets into [0, total] and never read or write out of
    bounds, but decreasing or overlapping offsets give unspecified values.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from jax_aiter import _call, _partition
from jax_aiter._call import Dispatch, Static, like_primal, varying

# What the package exports from this module (jax_aiter/__init__.py).
__all__ = ["flash_attn_func", "flash_attn_varlen", "dropout_mask"]

_F32 = np.dtype(np.float32)
_BF16 = np.dtype(jnp.bfloat16)
_FP8 = (np.dtype(jnp.float8_e4m3fn), np.dtype(jnp.float8_e4m3fnuz))
_DESCALES = ("q_descale", "k_descale", "v_descale")


def _round8(n: int) -> int:
    return -(-n // 8) * 8


def _pad_last(x, to: int):
    pad = to - x.shape[-1]
    return x if pad == 0 else jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, pad)])


def _key_words(key):
    """A dropout key as the kernels take it: its first two u32 words, bitcast to int32[2]."""
    key = jnp.asarray(key) if not isinstance(key, jax.Array) else key
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.key_data(key)
    words = jnp.ravel(key)
    if words.dtype != jnp.uint32 or words.shape[0] < 2:
        raise ValueError(f"dropout_key: expected a JAX PRNG key (or its uint32 key data), got "
                         f"{key.dtype}{list(key.shape)}")
    return jax.lax.bitcast_convert_type(words[:2], jnp.int32)


def _check_window(window_size, op: str = "flash_attn"):
    try:
        left, right = (int(w) for w in window_size)
    except (TypeError, ValueError):
        left = right = -2  # not two integers: refused below
    if left < -1 or right < -1:
        raise ValueError(f"{op}: window_size: expected (left, right), two ints with -1 for "
                         f"unbounded, got {window_size!r}")
    return left, right


# ---- the two passes ------------------------------------------------------------------------------

# config: the call's static options (see _prepare), carried through custom_vjp as Static(items).
def _attributes(c, backward: bool):
    out = {"softmax_scale": c["scale"], "causal": c["causal"], "window_left": c["left"],
           "window_right": c["right"], "dropout_p": c["dropout_p"],
           "max_seqlen_q": c["max_seqlen_q"], "max_seqlen_k": c["max_seqlen_k"],
           "bf16_cvt": c["bf16_cvt"]}
    if backward:
        out.update(deterministic=c["deterministic"], atomic32=c["atomic32"])
    return out


def _lse_shape(q, varlen: bool):
    return (q.shape[1], q.shape[0]) if varlen else (q.shape[0], q.shape[2], q.shape[1])


# out's dtype: q's, or bf16 for fp8 q (AITER's fp8bf16 kernels).
def _out_dtype(q):
    return _BF16 if q.dtype in _FP8 else q.dtype


# shard: None, or int32[4] {b0, h0, r0, sq_total}: this call is a shard of a larger one (device
# data; see aiter.flash_attn_fwd's "shard" in include/jax_aiter/ffi/attention.hpp).
# qd, kd, vd: fp8 q, k, v's float32[1] descales, or None.
def _kernel_fwd(q, k, v, bias, alibi, cu_q, cu_k, key, qd, kd, vd, shard, c):
    varlen = cu_q is not None
    out_shape = (*q.shape[:-1], v.shape[-1])
    got = _call.call("aiter.flash_attn_fwd",
                     inputs={"q": q, "k": k, "v": v, "bias": bias, "alibi_slopes": alibi,
                             "cu_seqlens_q": cu_q, "cu_seqlens_k": cu_k, "rng_key": key,
                             "shard": shard, "q_descale": qd, "k_descale": kd, "v_descale": vd},
                     outputs={"out": (out_shape, _out_dtype(q)),
                              "lse": (_lse_shape(q, varlen), _F32)},
                     attributes=_attributes(c, False), dispatch=c["dispatch"])
    return got["out"], got["lse"]


def _kernel_bwd(dout, q, k, v, out, lse, bias, alibi, cu_q, cu_k, key, shard, c):
    if bias is not None:
        dbias_shape = (q.shape[0], q.shape[2], q.shape[1], k.shape[1])
    else:
        dbias_shape = (0,)
    got = _call.call("aiter.flash_attn_bwd",
                     inputs={"dout": dout, "q": q, "k": k, "v": v, "out": out, "lse": lse,
                             "bias": bias, "alibi_slopes": alibi, "cu_seqlens_q": cu_q,
                             "cu_seqlens_k": cu_k, "rng_key": key, "shard": shard},
                     outputs={"dq": (q.shape, q.dtype), "dk": (k.shape, k.dtype),
                              "dv": (v.shape, v.dtype), "dbias": (dbias_shape, _F32)},
                     attributes=_attributes(c, True), dispatch=c["dispatch"])
    return got["dq"], got["dk"], got["dv"], got["dbias"]


# ---- partitioning (jax_aiter._partition) ---------------------------------------------------------
#
# Factors: b (batch), sq (query rows), h (kv heads), g (query heads per kv head: a query head is
# h * g + its index in the group, so q's head dim is the compound (h g) and a head split keeps
# every query head with its kv head), sk (keys), d / dv (head dims). Batch and heads split ->
# local. Query rows split (context parallelism) -> local, K and V gathered whole along the
# sequence (sk is never split), each shard passing its row offset so causal, windows and ALiBi
# align as in the whole call; dk / dv of a row shard are partial sums over its queries, added up
# over the shards. A head split that would cut a kv head's group (hk not divisible by the split,
# hk > 1) is gathered. Varlen: heads split -> local; the packed token dim is never split.
# Dropout: each shard passes its batch, head and row offsets, so its keep mask is the whole
# call's (the same bits as unsharded).

def _dims(kind, shapes, c):
    """Factor names of each present operand and of the results, and the factors."""
    F, R = _partition.Factor, _partition.REPLICATE
    varlen = c["varlen"]
    q, k, v = shapes["q"], shapes["k"], shapes["v"]
    hq, hk = q[-2], k[-2]
    heads = ("h", "g")
    factors = {"h": F(hk), "g": F(hq // hk), "d": F(q[-1], R), "dv": F(v[-1], R),
               "key": F(2, R)}
    if varlen:
        rows_q, rows_k = ("tq",), ("tk",)
        factors.update(tq=F(q[0], R), tk=F(k[0], R), cq=F(shapes["cu_seqlens_q"][0], R),
                       ck=F(shapes["cu_seqlens_k"][0], R))
        qd, kd, vd = (rows_q, heads, ("d",)), (rows_k, ("h",), ("d",)), (rows_k, ("h",), ("dv",))
        od, lsed = (rows_q, heads, ("dv",)), (heads, rows_q)
    else:
        factors.update(b=F(q[0]), sq=F(q[1]), sk=F(k[1], R))
        qd = (("b",), ("sq",), heads, ("d",))
        kd, vd = (("b",), ("sk",), ("h",), ("d",)), (("b",), ("sk",), ("h",), ("dv",))
        od, lsed = (("b",), ("sq",), heads, ("dv",)), (("b",), heads, ("sq",))
    full = (("b",), heads, ("sq",), ("sk",))
    factors["one"] = F(1, R)  # a per-tensor descale's one element
    dims = {"q": qd, "k": kd, "v": vd, "out": od, "dout": od, "lse": lsed,
            "cu_seqlens_q": (("cq",),), "cu_seqlens_k": (("ck",),), "rng_key": (("key",),),
            "q_descale": (("one",),), "k_descale": (("one",),), "v_descale": (("one",),)}
    if shapes.get("bias") is not None:  # broadcast dims (size 1) get factors of their own
        bias = []
        for i, (n, d) in enumerate(zip(shapes["bias"], full)):
            if n == 1 and math.prod(factors[f].size for f in d) != 1:
                factors[f"one{i}"] = F(1)
                d = (f"one{i}",)
            bias.append(d)
        dims["bias"] = tuple(bias)
    if shapes.get("alibi_slopes") is not None:
        dims["alibi_slopes"] = (heads,) if len(shapes["alibi_slopes"]) == 1 else (("b",), heads)
    if kind == "fwd":
        names, results = _FWD_INPUTS, (od, lsed)
    else:
        factors["nobias"] = F(0, R)
        dbias = full if shapes.get("bias") is not None else (("nobias",),)
        names, results = _BWD_INPUTS, (qd, kd, vd, dbias)
    operands = tuple(dims[n] for n in names if shapes.get(n) is not None)
    return _partition.Rule(operands, results, factors)


_FWD_INPUTS = ("q", "k", "v", "bias", "alibi_slopes", "cu_seqlens_q", "cu_seqlens_k", "rng_key",
               *_DESCALES)
_BWD_INPUTS = ("dout", "q", "k", "v", "out", "lse", "bias", "alibi_slopes", "cu_seqlens_q",
               "cu_seqlens_k", "rng_key")


def _fwd_rule(config, shapes):
    return _dims("fwd", dict(zip(_FWD_INPUTS, shapes)), dict(config))


def _bwd_rule(config, shapes):
    return _dims("bwd", dict(zip(_BWD_INPUTS, shapes)), dict(config))


def _shard_offsets(shards, c):
    """The shard operand (batch, query head, query row offsets and the whole call's query rows)
    when the kernels need it: dropout, or a query-row split. None otherwise, so AITER's ASM tier,
    which takes no offsets, stays eligible for the other splits."""
    rows_split = not c["varlen"] and shards.split("sq")
    moved = rows_split or any(shards.split(f) for f in ("b", "h", "g"))
    if not moved or (c["dropout_p"] == 0.0 and not rows_split):
        return None
    zero = jnp.int32(0)
    b0 = zero if c["varlen"] else shards.offset("b")
    h0 = shards.offset("h") * jnp.int32(shards.size("g")) + shards.offset("g")
    r0 = shards.offset("sq") if rows_split else zero
    total = jnp.int32(shards.size("sq") if rows_split else 0)
    return jnp.stack([b0, h0, r0, total]).astype(jnp.int32)


@_partition.op("aiter.flash_attn_fwd", rule=_fwd_rule)
def _part_fwd(config, shards, q, k, v, bias, alibi, cu_q, cu_k, key, qd, kd, vd):
    c = dict(config)
    return _kernel_fwd(q, k, v, bias, alibi, cu_q, cu_k, key, qd, kd, vd,
                       _shard_offsets(shards, c), c)


@_partition.op("aiter.flash_attn_bwd", rule=_bwd_rule)
def _part_bwd(config, shards, dout, q, k, v, out, lse, bias, alibi, cu_q, cu_k, key):
    c = dict(config)
    dq, dk, dv, dbias = _kernel_bwd(dout, q, k, v, out, lse, bias, alibi, cu_q, cu_k, key,
                                    _shard_offsets(shards, c), c)
    return dq, shards.sum(dk, 1), shards.sum(dv, 2), dbias


def _fwd_call(q, k, v, bias, alibi, cu_q, cu_k, key, c, descales=(None, None, None)):
    config = tuple(sorted({**c, "varlen": cu_q is not None}.items()))
    return _part_fwd(config, q, k, v, bias, alibi, cu_q, cu_k, key, *descales)


def _bwd_call(dout, q, k, v, out, lse, bias, alibi, cu_q, cu_k, key, c):
    config = tuple(sorted({**c, "varlen": cu_q is not None}.items()))
    return _part_bwd(config, dout, q, k, v, out, lse, bias, alibi, cu_q, cu_k, key)


@functools.partial(jax.custom_vjp, nondiff_argnums=(8,))
def _attn(q, k, v, bias, alibi, cu_q, cu_k, key, config):
    return _fwd_call(q, k, v, bias, alibi, cu_q, cu_k, key, dict(config.value))


def _attn_vjp_fwd(q, k, v, bias, alibi, cu_q, cu_k, key, config):
    out, lse = _fwd_call(q, k, v, bias, alibi, cu_q, cu_k, key, dict(config.value))
    vma = Static(tuple(None if x is None else varying(x) for x in (q, k, v, bias)))
    return (out, lse), (q, k, v, out, lse, bias, alibi, cu_q, cu_k, key, vma)


def _attn_vjp_bwd(config, res, cts):
    q, k, v, out, lse, bias, alibi, cu_q, cu_k, key, vma = res
    dout, _ = cts  # lse is returned as a non-differentiable value (see the module doc)
    dq, dk, dv, dbias = _bwd_call(dout.astype(q.dtype), q, k, v, out, lse, bias, alibi, cu_q, cu_k,
                                  key, dict(config.value))
    q_vma, k_vma, v_vma, bias_vma = vma.value
    if bias is not None:
        # The scores' gradient, summed down to the bias's broadcast shape.
        axes = tuple(i for i in range(4) if bias.shape[i] == 1 and dbias.shape[i] != 1)
        dbias = jnp.sum(dbias, axis=axes, keepdims=True).astype(bias.dtype)
        dbias = like_primal(dbias, bias_vma)
    return (like_primal(dq, q_vma), like_primal(dk, k_vma), like_primal(dv, v_vma), dbias, None,
            None, None, None)


_attn.defvjp(_attn_vjp_fwd, _attn_vjp_bwd)


# fp8 q, k, v: forward only, as AITER's v3 fp8 kernels (there is no fp8 backward to call).
@functools.partial(jax.custom_vjp, nondiff_argnums=(11,))
def _attn_fp8(q, k, v, bias, alibi, cu_q, cu_k, key, qd, kd, vd, config):
    return _fwd_call(q, k, v, bias, alibi, cu_q, cu_k, key, dict(config.value), (qd, kd, vd))


def _attn_fp8_vjp_fwd(q, k, v, bias, alibi, cu_q, cu_k, key, qd, kd, vd, config):
    return _attn_fp8(q, k, v, bias, alibi, cu_q, cu_k, key, qd, kd, vd, config), None


def _attn_fp8_vjp_bwd(config, res, cts):
    raise NotImplementedError(
        "flash_attn: fp8 q, k, v are forward-only (AITER's v3 fp8 attention has no backward, and "
        "neither has aiter.flash_attn_bwd): no gradient flows through an fp8 call; differentiate "
        "a bf16 or f16 call instead")


_attn_fp8.defvjp(_attn_fp8_vjp_fwd, _attn_fp8_vjp_bwd)


# ---- the public functions ------------------------------------------------------------------------

def _descales(q, k, v, given: dict, op: str):
    """fp8 q, k, v (one e4m3 format): their three descales as float32[1]; 16-bit ones: None (and
    no descale may be given)."""
    if any(x.dtype in _FP8 for x in (q, k, v)) and not q.dtype == k.dtype == v.dtype:
        bad, x = ("k", k) if k.dtype != q.dtype else ("v", v)
        raise ValueError(f"{op}: operand {bad}: expected {q.dtype} (like q: fp8 q, k and v share "
                         f"one e4m3 format), got {x.dtype}")
    if q.dtype not in _FP8:
        for name in _DESCALES:
            if given[name] is not None:
                raise ValueError(f"{op}: {name}: expected None with {q.dtype} q (descales go with "
                                 f"fp8 q, k, v), got {given[name]!r}")
        return None
    out = []
    for name in _DESCALES:
        x = given[name]
        if x is None:
            raise ValueError(f"{op}: {name}: expected a float32 scalar (the per-tensor descale of "
                             f"fp8 {q.dtype} q, k, v), got None")
        if isinstance(x, (float, int)) and not isinstance(x, bool):
            x = np.float32(x)
        x = jnp.asarray(x)
        if x.dtype != _F32 or x.size != 1 or x.ndim > 1:
            raise ValueError(f"{op}: {name}: expected a float32 scalar or float32[1] (a per-tensor "
                             f"descale), got {x.dtype}{list(x.shape)}")
        out.append(x.reshape((1,)))
    return tuple(out)


def _prepare(q, k, v, dropout_p, softmax_scale, causal, window_size, alibi_slopes, deterministic,
             dropout_key, dispatch, bf16_cvt, atomic32, max_seqlen_q, max_seqlen_k, lead: int,
             op: str):
    q, k, v = (jnp.asarray(x) for x in (q, k, v))
    if q.ndim != lead + 2 or k.ndim != lead + 2 or v.ndim != lead + 2:
        form = "[b, s, h, d]" if lead == 2 else "[total, h, d]"
        raise ValueError(f"{op}: expected q, k, v of the form {form}, got shapes {q.shape}, "
                         f"{k.shape}, {v.shape}")
    d, dv = q.shape[-1], v.shape[-1]
    if k.shape[-1] != d:
        raise ValueError(f"{op}: operand k: expected head dim {d} (from q), got {k.shape}")
    if not (1 <= d <= 256 and 1 <= dv <= 256):
        raise ValueError(f"{op}: operand {'q' if not 1 <= d <= 256 else 'v'}: expected head dims "
                         f"up to 256 (and at least 1), got d={d} (q, k), dv={dv} (v)")
    left, right = _check_window(window_size, op)
    dropout_p = float(dropout_p)
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"{op}: dropout_p: expected 0 <= p < 1, got {dropout_p}")
    key = None
    if dropout_p > 0.0:
        if dropout_key is None:
            raise ValueError(f"{op}: dropout_p > 0 needs dropout_key (a JAX PRNG key)")
        key = _key_words(dropout_key)
    alibi = None if alibi_slopes is None else jnp.asarray(alibi_slopes, _F32)
    scale = float(softmax_scale) if softmax_scale is not None else 1.0 / math.sqrt(d)
    config = {"scale": scale, "causal": bool(causal), "left": left, "right": right,
              "dropout_p": dropout_p, "max_seqlen_q": int(max_seqlen_q),
              "max_seqlen_k": int(max_seqlen_k), "deterministic": bool(deterministic),
              "dispatch": dispatch or _default_dispatch(), "bf16_cvt": int(bf16_cvt),
              "atomic32": bool(atomic32)}
    return q, k, v, alibi, key, config


def _default_dispatch() -> Dispatch:
    """Off AMD only the portable tier can run a call unforced: saying so up front sizes the
    backward's workspace for it alone (AITER's pieces would be hundreds of MiB at s = 4096)."""
    return Dispatch() if jax.default_backend() == "rocm" else Dispatch(tier="portable")


def _validate_empty(q, k, v, bias, alibi, cu_q, cu_k, key, config, descales=None):
    """An empty problem is answered in Python, but first checked by the handler's rules on the
    call it would have made (head dims padded as _padded_call pads them), so bad input is an error
    whatever its size. fp8 calls are checked so every time (the handler's messages then come at
    trace time, not from the running kernel)."""
    pad = lambda x, to: jax.ShapeDtypeStruct((*x.shape[:-1], to), x.dtype)  # noqa: E731
    dp, dvp = _round8(q.shape[-1]), _round8(v.shape[-1])
    out_dtype = _out_dtype(q)
    q, k, v = pad(q, dp), pad(k, dp), pad(v, dvp)
    out_shape = (*q.shape[:-1], dvp)
    ds = dict(zip(_DESCALES, descales or (None, None, None)))
    _call.validate("aiter.flash_attn_fwd",
                   inputs={"q": q, "k": k, "v": v, "bias": bias, "alibi_slopes": alibi,
                           "cu_seqlens_q": cu_q, "cu_seqlens_k": cu_k, "rng_key": key, **ds},
                   outputs={"out": (out_shape, out_dtype),
                            "lse": (_lse_shape(q, cu_q is not None), _F32)},
                   attributes=_attributes(config, False), dispatch=config["dispatch"])


def _padded_call(q, k, v, bias, alibi, cu_q, cu_k, key, config, descales=None):
    d, dv = q.shape[-1], v.shape[-1]
    dp, dvp = _round8(d), _round8(dv)
    qp, kp, vp = _pad_last(q, dp), _pad_last(k, dp), _pad_last(v, dvp)
    static = Static(tuple(sorted(config.items(), key=lambda kv: kv[0])))
    if descales is not None:
        out, lse = _attn_fp8(qp, kp, vp, bias, alibi, cu_q, cu_k, key, *descales, static)
    else:
        out, lse = _attn(qp, kp, vp, bias, alibi, cu_q, cu_k, key, static)
    return out[..., :dv], jax.lax.stop_gradient(lse)


def flash_attn_func(q, k, v, dropout_p: float = 0.0, softmax_scale: float | None = None,
                    causal: bool = False, window_size=(-1, -1), bias=None, alibi_slopes=None,
                    deterministic: bool = False, return_lse: bool = False, *, dropout_key=None,
                    dispatch: Dispatch | None = None, bf16_cvt: int = 1, atomic32: bool = True,
                    q_descale=None, k_descale=None, v_descale=None):
    """Attention over q [b, sq, hq, d], k [b, sk, hk, d], v [b, sk, hk, dv] (BSHD).

    Returns out [b, sq, hq, dv] in q's dtype, or (out, lse) with lse float32 [b, hq, sq].
    ``bf16_cvt`` / ``atomic32`` are AITER's knobs for its ASM kernels (how_v3_bf16_cvt and
    is_v3_atomic_fp32); ``dispatch`` picks a tier (``jax_aiter.Dispatch``).
    fp8 q, k, v (one e4m3 format, ``jax_aiter.fp8_dtype()``) take ``q_descale``, ``k_descale``,
    ``v_descale`` (float32 scalars): out = attention of the dequantised inputs, in bf16; forward
    only (its gradient raises).
    """
    op = "flash_attn_func"
    q, k, v, alibi, key, config = _prepare(q, k, v, dropout_p, softmax_scale, causal, window_size,
                                           alibi_slopes, deterministic, dropout_key, dispatch,
                                           bf16_cvt, atomic32, 0, 0, 2, op)
    descales = _descales(q, k, v, {"q_descale": q_descale, "k_descale": k_descale,
                                   "v_descale": v_descale}, op)
    b, sq, hq, _ = q.shape
    sk = k.shape[1]
    if bias is not None:
        bias = jnp.asarray(bias)
        if bias.dtype != _out_dtype(q):
            bias = bias.astype(_F32)
        if bias.ndim > 4:
            raise ValueError(f"{op}: bias: expected at most 4 dims, got {bias.shape}")
        bias4 = bias.reshape((1,) * (4 - bias.ndim) + bias.shape)
        full = (b, hq, sq, sk)
        if any(n not in (1, f) for n, f in zip(bias4.shape, full)):
            raise ValueError(f"{op}: bias: expected a shape broadcastable to [b, hq, sq, sk] = "
                             f"{list(full)}, got {bias.shape}")
    out_shape = (b, sq, hq, v.shape[-1])
    if 0 in (b, sq, hq, sk) or descales is not None:
        _validate_empty(q, k, v, None if bias is None else bias4, alibi, None, None, key, config,
                        descales)
    if 0 in (b, sq, hq):
        out, lse = jnp.zeros(out_shape, _out_dtype(q)), jnp.zeros((b, hq, sq), _F32)
    elif sk == 0:
        out, lse = jnp.zeros(out_shape, _out_dtype(q)), jnp.full((b, hq, sq), jnp.inf, _F32)
    else:
        bias_in = None if bias is None else bias4
        out, lse = _padded_call(q, k, v, bias_in, alibi, None, None, key, config, descales)
    return (out, lse) if return_lse else out


def _check_cu_seqlens(cu, total: int, max_seqlen: int, name: str, op: str):
    try:
        host = np.asarray(cu)
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        return  # traced: checked by nobody (see the module doc)
    if host.ndim != 1 or host.shape[0] < 2:
        raise ValueError(f"{op}: {name}: expected int32[nseq + 1], got shape {host.shape}")
    lengths = np.diff(host.astype(np.int64))
    if host[0] != 0 or np.any(lengths < 0) or host[-1] != total:
        raise ValueError(f"{op}: {name}: expected non-decreasing offsets from 0 to {total}, got "
                         f"{host.tolist()}")
    if lengths.max(initial=0) > max_seqlen:
        raise ValueError(f"{op}: {name}: a sequence of {int(lengths.max())} exceeds max_seqlen "
                         f"{max_seqlen}")


def flash_attn_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q: int, max_seqlen_k: int,
                      dropout_p: float = 0.0, softmax_scale: float | None = None,
                      causal: bool = False, window_size=(-1, -1), alibi_slopes=None,
                      deterministic: bool = False, return_lse: bool = False, *, dropout_key=None,
                      dispatch: Dispatch | None = None, bf16_cvt: int = 1, atomic32: bool = True,
                      q_descale=None, k_descale=None, v_descale=None):
    """Attention over packed sequences: q [total_q, hq, d], k [total_k, hk, d], v [total_k, hk, dv];
    sequence s is rows cu_seqlens[s]:cu_seqlens[s + 1]. fp8 q, k, v with descales as in
    ``flash_attn_func``.

    Returns out [total_q, hq, dv], or (out, lse) with lse float32 [hq, total_q].
    ``max_seqlen_q`` / ``max_seqlen_k`` (>= 1) should bound every sequence: concrete cu_seqlens
    longer than them are an error; traced ones cannot be checked, and a longer sequence is then
    computed whole all the same (the maxima only size the kernels' launches).
    """
    op = "flash_attn_varlen"
    for name, value in (("max_seqlen_q", max_seqlen_q), ("max_seqlen_k", max_seqlen_k)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{op}: {name}: expected the longest sequence as a Python int >= 1, "
                             f"got {value!r}")
    q, k, v, alibi, key, config = _prepare(q, k, v, dropout_p, softmax_scale, causal, window_size,
                                           alibi_slopes, deterministic, dropout_key, dispatch,
                                           bf16_cvt, atomic32, max_seqlen_q, max_seqlen_k, 1, op)
    descales = _descales(q, k, v, {"q_descale": q_descale, "k_descale": k_descale,
                                   "v_descale": v_descale}, op)
    cu_q = jnp.asarray(cu_seqlens_q)
    cu_k = jnp.asarray(cu_seqlens_k)
    for name, cu in (("cu_seqlens_q", cu_q), ("cu_seqlens_k", cu_k)):
        if cu.dtype != jnp.int32 or cu.ndim != 1 or cu.shape[0] < 2:
            raise ValueError(f"{op}: {name}: expected int32[nseq + 1], got {cu.dtype}{list(cu.shape)}")
    if cu_k.shape != cu_q.shape:
        raise ValueError(f"{op}: cu_seqlens_k: expected {list(cu_q.shape)} like cu_seqlens_q, got "
                         f"{list(cu_k.shape)}")
    _check_cu_seqlens(cu_q, q.shape[0], int(max_seqlen_q), "cu_seqlens_q", op)
    _check_cu_seqlens(cu_k, k.shape[0], int(max_seqlen_k), "cu_seqlens_k", op)
    total_q, hq = q.shape[0], q.shape[1]
    out_shape = (total_q, hq, v.shape[-1])
    if total_q == 0 or hq == 0 or k.shape[0] == 0 or descales is not None:
        empty = dict(config, max_seqlen_q=max(1, min(int(max_seqlen_q), total_q)),
                     max_seqlen_k=max(1, min(int(max_seqlen_k), k.shape[0])))
        _validate_empty(q, k, v, None, alibi, cu_q, cu_k, key, empty, descales)
    if total_q == 0 or hq == 0:
        out, lse = jnp.zeros(out_shape, _out_dtype(q)), jnp.zeros((hq, total_q), _F32)
    elif k.shape[0] == 0:
        out, lse = jnp.zeros(out_shape, _out_dtype(q)), jnp.full((hq, total_q), jnp.inf, _F32)
    else:
        config["max_seqlen_q"] = min(int(max_seqlen_q), total_q)
        config["max_seqlen_k"] = min(int(max_seqlen_k), k.shape[0])
        out, lse = _padded_call(q, k, v, None, alibi, cu_q, cu_k, key, config, descales)
    return (out, lse) if return_lse else out


def dropout_mask(key, b: int, hq: int, sq: int, sk: int, p: float, *,
                 dispatch: Dispatch | None = None):
    """The keep-mask bool[b, hq, sq, sk] the attention kernels apply for dropout key ``key`` and
    rate ``p`` (in varlen mode b indexes sequences and (i, j) count from each sequence's start)."""
    p = float(p)
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout_mask: expected 0 <= p < 1, got {p}")
    for name, n in (("b", b), ("hq", hq), ("sq", sq), ("sk", sk)):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"dropout_mask: {name}: expected an int >= 0, got {n!r}")
    shape = (int(b), int(hq), int(sq), int(sk))
    words = _key_words(key)  # checked whatever the shape
    if 0 in shape:
        return jnp.ones(shape, jnp.bool_)
    return _part_mask((shape, p, dispatch), words)[0].astype(jnp.bool_)


def _mask_rule(config, shapes):
    F = _partition.Factor
    b, hq, sq, sk = config[0]
    factors = {"b": F(b), "hq": F(hq), "sq": F(sq), "sk": F(sk, _partition.REPLICATE),
               "key": F(2, _partition.REPLICATE)}
    return _partition.Rule(((("key",),),), ((("b",), ("hq",), ("sq",), ("sk",)),), factors)


@_partition.op("aiter.attn_dropout_mask", rule=_mask_rule)
def _part_mask(config, shards, key):
    """The mask of one shard (batch, heads, rows split as the result is wanted; columns whole)."""
    shape, p, dispatch = config
    local = tuple(shards.local(f) for f in ("b", "hq", "sq")) + (shape[3],)
    shard = None
    if any(shards.split(f) for f in ("b", "hq", "sq")):
        shard = jnp.stack([shards.offset("b"), shards.offset("hq"), shards.offset("sq"),
                           jnp.int32(0)]).astype(jnp.int32)
    got = _call.call("aiter.attn_dropout_mask", inputs={"rng_key": key, "shard": shard},
                     outputs={"keep": (local, np.uint8)}, attributes={"dropout_p": p},
                     dispatch=dispatch)
    return (got["keep"],)


def describe(b: int, sq: int, sk: int, hq: int, hk: int, d: int, dv: int | None = None,
             dtype="bfloat16", causal: bool = False, window=(-1, -1), varlen: bool = False,
             backward: bool = False, bias: bool = False, dropout_p: float = 0.0,
             deterministic: bool = False, fp8: str | None = None) -> tuple[str, dict, dict]:
    """The call jax-aiter-plan describes for attention: (target, operands, attributes). fp8: an
    e4m3 format name (q, k, v of it, with float32[1] descales, bf16 out; forward only)."""
    dv = dv or d
    if fp8 is not None and backward:
        raise ValueError("attention: fp8 is forward-only (no backward takes fp8 q, k, v)")
    in_dtype, out_dtype = (fp8, "bfloat16") if fp8 is not None else (dtype, dtype)
    if varlen:  # b sequences of sq / sk rows each
        q, k, v = (b * sq, hq, d), (b * sk, hk, d), (b * sk, hk, dv)
        out, lse = (b * sq, hq, dv), (hq, b * sq)
        cu = ("int32", (b + 1,))
    else:
        q, k, v = (b, sq, hq, d), (b, sk, hk, d), (b, sk, hk, dv)
        out, lse = (b, sq, hq, dv), (b, hq, sq)
        cu = None
    operands = {"q": (in_dtype, q), "k": (in_dtype, k), "v": (in_dtype, v),
                "bias": ("float32", (1, hq, sq, sk)) if bias else None, "alibi_slopes": None,
                "cu_seqlens_q": cu, "cu_seqlens_k": cu,
                "rng_key": ("int32", (2,)) if dropout_p > 0 else None}
    attributes = {"softmax_scale": 1.0 / math.sqrt(d), "causal": causal,
                  "window_left": window[0], "window_right": window[1], "dropout_p": dropout_p,
                  "max_seqlen_q": sq if varlen else 0, "max_seqlen_k": sk if varlen else 0,
                  "bf16_cvt": 1}
    if not backward:
        descale = ("float32", (1,)) if fp8 is not None else None
        operands.update(out=(out_dtype, out), lse=("float32", lse), q_descale=descale,
                        k_descale=descale, v_descale=descale)
        return "aiter.flash_attn_fwd", operands, attributes
    operands.update(dout=(dtype, out), out=(dtype, out), lse=("float32", lse),
                    dq=(dtype, q), dk=(dtype, k), dv=(dtype, v),
                    dbias=("float32", (b, hq, sq, sk) if bias else (0,)))
    attributes.update(deterministic=deterministic, atomic32=True)
    return "aiter.flash_attn_bwd", operands, attributes


def _plan(p, args):
    try:
        left, right = (int(w) for w in args.window.split(","))
    except ValueError:
        p.error(f"--window: expected left,right (two ints, -1 unbounded), got {args.window!r}")
    if left < -1 or right < -1:
        p.error(f"--window: expected left,right >= -1 (-1 unbounded), got {args.window!r}")
    fp8 = None
    if args.fp8:  # the format a plan for the arch reads (AITER's kernels': --asm-arch's)
        arch = (getattr(args, "asm_arch", None) or args.arch).split(":")[0]
        fp8 = "float8_e4m3fnuz" if arch == "gfx942" else "float8_e4m3fn"
    try:
        return describe(args.b, args.sq, args.sk or args.sq, args.hq, args.hk or args.hq, args.d,
                        args.dv, args.dtype, args.causal, (left, right), args.varlen,
                        args.backward, args.bias, args.dropout, args.deterministic, fp8)
    except ValueError as e:
        p.error(f"--fp8: {e}")


def add_plan_arguments(p) -> None:
    """jax-aiter-plan's options of this op alone (tools.py calls it)."""
    p.add_argument("--fp8", action="store_true",
                   help="attention: fp8 q, k, v (the arch's e4m3) with descales, bf16 out")


# jax-aiter-plan's commands for this op (tools.py finds them): name -> (the options a call needs,
# plan(parser, args) -> (target, operands, attributes)).
PLAN_COMMANDS = {"attention": (("sq", "hq", "d"), _plan), "flash_attn": (("sq", "hq", "d"), _plan)}
