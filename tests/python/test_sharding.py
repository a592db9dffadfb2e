"""Every op under ``jax.jit`` shardings (XLA's SPMD partitioner, with Shardy and with GSPMD): the
compiled program's collectives counted by kind, the output shardings, and the values against the
unsharded call (bit for bit where each shard does the same arithmetic as the whole call: every
local case).

On CPU (CI) the devices are XLA's forced host devices (conftest.py: 4); on a GPU machine, its GPUs
(4, or 2: then the cases of a 2 x 2 mesh are skipped). The inputs are tiny: what is under test is
how a call splits, not the kernels (their own tests cover those).
"""

from __future__ import annotations

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

import jax_aiter

DEVICES = jax.devices()
N = 4 if len(DEVICES) >= 4 else 2  # shards along one mesh axis
pytestmark = pytest.mark.skipif(len(DEVICES) < 2, reason="needs two devices")
BF16 = jnp.bfloat16
KINDS = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute")


@pytest.fixture(params=["shardy", "gspmd"], autouse=True)
def partitioner(request):
    old = jax.config.jax_use_shardy_partitioner
    jax.config.update("jax_use_shardy_partitioner", request.param == "shardy")
    yield request.param
    jax.config.update("jax_use_shardy_partitioner", old)


def mesh1():
    return Mesh(np.asarray(DEVICES[:N]), ("x",))


def mesh2():
    if N < 4:
        pytest.skip("a 2 x 2 mesh needs four devices")
    return Mesh(np.asarray(DEVICES[:4]).reshape(2, 2), ("x", "y"))


def collectives(hlo: str) -> tuple[dict, dict]:
    """What a compiled program moves through collectives, by kind: the elements of their results
    (the arrays each device ends up with), and those arrays' types. Elements, not ops, because
    backends differ in how they package the same traffic: XLA may combine several collectives into
    one op (a tuple, or on GPU one flat buffer) and GPU's async ops return (operand, result)."""
    elements, types = {}, {}
    for kind in KINDS:
        for ty, start in re.findall(r"= (\([^=]*?\)|\S+) " + kind + r"(-start)?\(", hlo):
            arrays = re.findall(r"\w+\[[\d,]*\]", ty)
            if start and kind != "all-reduce":  # (operands..., results...)
                arrays = arrays[len(arrays) // 2:]
            elements[kind] = elements.get(kind, 0) + sum(_elements(a) for a in arrays)
            types.setdefault(kind, []).extend(arrays)
    return elements, types


def _spec(sharding, ndim):
    spec = tuple(sharding.spec) + (None,) * (ndim - len(sharding.spec))
    return tuple(None if e is None else (e,) if isinstance(e, str) else tuple(e) for e in spec)


def run(fn, args, specs, mesh, *, expect, out_specs, exact=(), close=(), out_shardings=None,
        tol=2.0**-7):
    """Runs fn unsharded and with args placed by `specs` on `mesh`; asserts the collectives
    (`expect`: kind -> elements moved, every other kind absent), the outputs' specs, and the
    values: the outputs whose index is in `exact` bit for bit, those in `close` within `tol` of the
    largest reference value. Returns the collectives' array types for further checks."""
    ref = jax.jit(fn)(*args)
    place = lambda a, s: jax.device_put(a, NamedSharding(mesh, s))  # noqa: E731
    is_spec = lambda x: isinstance(x, P)  # noqa: E731
    placed = jax.tree_util.tree_map(  # a spec places every leaf below it (a ShuffledWeight's data)
        lambda s, a: jax.tree_util.tree_map(lambda leaf: place(leaf, s), a), tuple(specs),
        tuple(args), is_leaf=is_spec)
    if out_shardings is not None:
        out_shardings = jax.tree_util.tree_map(lambda s: NamedSharding(mesh, s), out_shardings,
                                               is_leaf=lambda x: isinstance(x, P))
    f = jax.jit(fn, out_shardings=out_shardings)
    moved, types = collectives(f.lower(*placed).compile().as_text())
    assert moved == expect, f"collectives {moved}, expected {expect}; arrays {types}"
    got = f(*placed)
    got_l, ref_l = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(ref)
    for i, (g, want) in enumerate(zip(got_l, out_specs)):
        if want is not None:
            norm = tuple(None if e is None else (e,) if isinstance(e, str) else tuple(e)
                         for e in tuple(want) + (None,) * (g.ndim - len(want)))
            assert _spec(g.sharding, g.ndim) == norm, f"output {i}: {g.sharding.spec}, " \
                                                      f"expected {want}"
    for i in exact:
        np.testing.assert_array_equal(np.asarray(got_l[i]), np.asarray(ref_l[i]),
                                      err_msg=f"output {i}")
    for i in close:
        a, b = np.asarray(got_l[i], np.float32), np.asarray(ref_l[i], np.float32)
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol * float(np.abs(b).max()),
                                   err_msg=f"output {i}")
    return types


def vjp(fn, argnums):
    """(primals..., cotangent) -> the gradients of fn's output w.r.t. the args in argnums."""
    def g(*args):
        *primals, ct = args
        def part(*diff):
            full = list(primals)
            for i, d in zip(argnums, diff):
                full[i] = d
            return fn(*full)
        _, pull = jax.vjp(part, *(primals[i] for i in argnums))
        return pull(ct)
    return g


def _rand(shape, dtype=BF16, seed=0, scale=1.0):
    return jnp.asarray(np.random.default_rng(seed).standard_normal(shape) * scale, dtype)


def _elements(type_text: str) -> int:
    """Elements of an HLO type (summed over a tuple's)."""
    return sum(int(np.prod([int(d) for d in dims.split(",") if d]))
               for dims in re.findall(r"\[([\d,]*)\]", type_text))


# ---- RMSNorm -------------------------------------------------------------------------------------

X, G = _rand((8, 4, 64)), _rand((64,), seed=1, scale=0.2) + 1


def test_rms_norm_rows_are_local():
    run(jax_aiter.rms_norm, (X, G), (P("x"), P()), mesh1(), expect={},
        out_specs=[P("x")], exact=[0])
    run(jax_aiter.rms_norm, (X, G), (P(None, "x"), P()), mesh1(), expect={},
        out_specs=[P(None, "x")], exact=[0])
    run(jax_aiter.rms_norm, (X, G), (P("x", "y"), P()), mesh2(), expect={},
        out_specs=[P("x", "y")], exact=[0])


def test_rms_norm_hidden_split_all_reduces_row_sums():
    run(jax_aiter.rms_norm, (X, G), (P(None, None, "x"), P("x")), mesh1(),
        expect={"all-reduce": 8 * 4}, out_specs=[P(None, None, "x")], close=[0])  # [rows, 1]


def test_rms_norm_with_add_rows_and_hidden():
    fn = jax_aiter.rms_norm_with_add
    run(fn, (X, X * 0.5, G), (P("x"), P("x"), P()), mesh1(), expect={},
        out_specs=[P("x"), P("x")], exact=[0, 1])
    run(fn, (X, X * 0.5, G), (P(None, None, "x"),) * 2 + (P(),), mesh1(),
        expect={"all-reduce": 8 * 4}, out_specs=[P(None, None, "x")] * 2, close=[0], exact=[1])
    run(fn, (X, X * 0.5, G), (P("x", None, "y"), P("x", None, "y"), P()), mesh2(),
        expect={"all-reduce": 8 * 4 // 2}, out_specs=[P("x", None, "y")] * 2, close=[0],
        exact=[1])


@pytest.mark.parametrize("fused", [False, True])
def test_rms_norm_backward_rows(fused):
    if fused:
        fn = vjp(lambda x, r, g: jax_aiter.rms_norm_with_add(x, r, g), (0, 1, 2))
        args, specs = (X, X * 0.5, G, (X, X)), (P("x"), P("x"), P(), (P("x"), P("x")))
        outs = [P("x"), P("x"), P()]
    else:
        fn = vjp(jax_aiter.rms_norm, (0, 1))
        args, specs, outs = (X, G, X), (P("x"), P(), P("x")), [P("x"), P()]
    # dgamma: each row shard's partial sum, one all-reduce of [n].
    run(fn, args, specs, mesh1(), expect={"all-reduce": 64}, out_specs=outs, exact=[0],
        close=[len(outs) - 1])


@pytest.mark.parametrize("fused", [False, True])
def test_rms_norm_backward_hidden(fused):
    if fused:
        fn = vjp(lambda x, r, g: jax_aiter.rms_norm_with_add(x, r, g), (0, 1, 2))
        args = (X, X * 0.5, G, (X, X))
        specs = (P(None, None, "x"),) * 2 + (P("x"), (P(None, None, "x"),) * 2)
        outs = [P(None, None, "x")] * 2 + [P("x")]
    else:
        fn = vjp(jax_aiter.rms_norm, (0, 1))
        args, specs = (X, G, X), (P(None, None, "x"), P("x"), P(None, None, "x"))
        outs = [P(None, None, "x"), P("x")]
    # One all-reduce of [rows, 2] per backward (sum x^2 and sum g dy x); never x itself.
    run(fn, args, specs, mesh1(), expect={"all-reduce": 8 * 4 * 2}, out_specs=outs,
        close=range(len(outs)))


# ---- BF16 GEMM ---------------------------------------------------------------------------------

A, B, BIAS = _rand((4, 8, 64)), _rand((32, 64), seed=1, scale=0.1), _rand((32,), seed=2)


def _gemm(a, b, bias):
    return jax_aiter.gemm(a, b, bias)


def test_gemm_rows_and_columns_are_local():
    run(_gemm, (A, B, BIAS), (P("x"), P(), P()), mesh1(), expect={}, out_specs=[P("x")],
        exact=[0])
    run(_gemm, (A, B, BIAS), (P(), P("x"), P("x")), mesh1(), expect={},
        out_specs=[P(None, None, "x")], exact=[0])
    run(_gemm, (A, B, BIAS), (P(None, "x"), P(), P()), mesh1(), expect={},
        out_specs=[P(None, "x")], exact=[0])
    run(_gemm, (A, B, BIAS), (P("x"), P("y"), P("y")), mesh2(), expect={},
        out_specs=[P("x", None, "y")], exact=[0])


def test_gemm_k_split_sums_partials():
    # float32 partials (bias from the first K shard), one all-reduce, rounded once.
    types = run(_gemm, (A, B, BIAS), (P(None, None, "x"), P(None, "x"), P()), mesh1(),
                expect={"all-reduce": 4 * 8 * 32}, out_specs=[P()], close=[0], tol=2.0**-8)
    assert all(t.startswith("f32") for t in types["all-reduce"]), types
    # Wanted split over the K axis: a reduce-scatter onto M or N instead.
    for out in (P("x"), P(None, None, "x")):
        run(_gemm, (A, B, BIAS), (P(None, None, "x"), P(None, "x"), P()), mesh1(),
            expect={"reduce-scatter": 4 * 8 * 32 // N}, out_specs=[out], out_shardings=out,
            close=[0],
            tol=2.0**-8)


def test_gemm_backward():
    fn = vjp(_gemm, (0, 1, 2))
    ct = _rand((4, 8, 32), seed=3)
    # Rows split: da local; db and dbias sum over the row shards (XLA's dot and reduce).
    run(fn, (A, B, BIAS, ct), (P("x"), P(), P(), P("x")), mesh1(),
        expect={"all-reduce": B.size + BIAS.size},
        out_specs=[P("x"), P(), P()], close=[0, 1, 2])
    # Columns split: db, dbias local; da sums over the N shards.
    run(fn, (A, B, BIAS, ct), (P(), P("x"), P("x"), P(None, None, "x")), mesh1(),
        expect={"all-reduce": A.size}, out_specs=[P(), P("x"), P("x")], close=[0, 1, 2])


# ---- quantized GEMMs ---------------------------------------------------------------------------

@functools.cache  # once per process: each partitioner mode would quantize (and compile) again
def _quantized_cases():
    x = _rand((64, 256), jnp.float32)
    w = _rand((512, 256), jnp.float32, seed=1, scale=0.1)
    xq, xs = jax_aiter.quantize_per_token(x)
    wq, ws = jax_aiter.quantize_per_channel(w)
    fx, fxs = jax_aiter.quantize_fp8_per_token_block(x)
    fw, fws = jax_aiter.quantize_fp8_per_block(w)
    q4x, s4x = jax_aiter.quantize_mxfp4(x)
    q4w, s4w = jax_aiter.quantize_mxfp4(w)
    # name: (op, args, M spec of each arg, N spec of each arg)
    m2, n2 = P("x", None), P(None, "x")
    return {
        "gemm_i8": (jax_aiter.gemm_i8, (xq, jax_aiter.shuffle_weight(wq), xs, ws),
                    (m2, P(), m2, P()), (P(), m2, P(), n2)),
        "gemm_fp8_blockscale": (jax_aiter.gemm_fp8_blockscale,
                                (fx, jax_aiter.shuffle_weight(fw, jax_aiter.FP8BS_LAYOUT), fxs,
                                 fws), (m2, P(), m2, P()), (P(), m2, P(), m2)),
        "gemm_fp8_mi350": (jax_aiter.gemm_fp8_mi350,
                           (fx, jax_aiter.shuffle_weight(fw), fxs.T, fws),
                           (m2, P(), n2, P()), (P(), m2, P(), m2)),
        "flatmm_fp8": (jax_aiter.flatmm_fp8,
                       (fx, jax_aiter.shuffle_weight(fw, "flatmm"), fxs.T, fws.T),
                       (m2, P(), n2, P()), (P(), m2, P(), n2)),
        "gemm_fp4": (jax_aiter.gemm_fp4, (q4x, jax_aiter.shuffle_fp4_weight(q4w), s4x, s4w),
                     (m2, P(), m2, P()), (P(), m2, P(), m2)),
    }


@pytest.mark.parametrize("name", ["gemm_i8", "gemm_fp8_blockscale", "gemm_fp8_mi350",
                                  "flatmm_fp8", "gemm_fp4"])
def test_quantized_gemm_rows_and_columns_are_local(name):
    op, args, m_specs, n_specs = _quantized_cases()[name]
    run(op, args, m_specs, mesh1(), expect={}, out_specs=[P("x")], exact=[0])
    run(op, args, n_specs, mesh1(), expect={}, out_specs=[P(None, "x")], exact=[0])


def test_quantized_gemm_splits_off_the_blocks_are_gathered():
    """Stated fallbacks: K split (the shuffled layouts interleave K), and an N split that cuts a
    scale block (128 rows of an fp8 block scale; 256 of a shuffled e8m0 scale) gather the weight
    first, and the values stay right."""
    op, args, _, _ = _quantized_cases()["gemm_i8"]
    run(op, args, (P(None, "x"), P(None, "x"), P(), P()), mesh1(),
        expect={"all-gather": args[0].size + args[1].data.size}, out_specs=[None], exact=[0])
    # N = 64 per shard: half an fp8 scale block, a quarter of a shuffled e8m0 scale block.
    x, w = _rand((16, 256), jnp.float32), _rand((64 * N, 256), jnp.float32, seed=1, scale=0.1)
    fx, fxs = jax_aiter.quantize_fp8_per_token_block(x)
    fw, fws = jax_aiter.quantize_fp8_per_block(w)
    args = (fx, jax_aiter.shuffle_weight(fw, jax_aiter.FP8BS_LAYOUT), fxs, fws)
    run(jax_aiter.gemm_fp8_blockscale, args, (P(), P("x"), P(), P()), mesh1(),
        expect={"all-gather": args[1].data.size}, out_specs=[None], exact=[0])
    q4x, s4x = jax_aiter.quantize_mxfp4(x)
    q4w, s4w = jax_aiter.quantize_mxfp4(w)
    args = (q4x, jax_aiter.shuffle_fp4_weight(q4w), s4x,
            jax_aiter.shuffle_weight(s4w, "e8m0_shuffle"))
    run(jax_aiter.gemm_fp4, args, (P(), P("x"), P(), P()), mesh1(),
        expect={"all-gather": args[1].data.size},
        out_specs=[None], exact=[0])


# ---- attention ---------------------------------------------------------------------------------

def _qkv(b=4, s=16, hq=8, hk=4, d=32, sk=None, seed=0):
    sk = s if sk is None else sk
    return (_rand((b, s, hq, d), seed=seed), _rand((b, sk, hk, d), seed=seed + 1),
            _rand((b, sk, hk, d), seed=seed + 2))


def _attn(**kw):
    def f(q, k, v, *extra):
        out, lse = jax_aiter.flash_attn_func(q, k, v, return_lse=True, **kw)
        return out, lse
    return f


BATCH, HEADS = P("x"), P(None, None, "x")


@pytest.mark.parametrize("causal", [False, True])
def test_attention_batch_and_heads_are_local(causal):
    f = _attn(causal=causal)
    run(f, _qkv(), (BATCH,) * 3, mesh1(), expect={}, out_specs=[BATCH, P("x")], exact=[0, 1])
    run(f, _qkv(), (HEADS,) * 3, mesh1(), expect={}, out_specs=[HEADS, P(None, "x")],
        exact=[0, 1])
    # GQA over a 2 x 2 mesh: batch on x, kv heads on y (their query heads with them).
    run(f, _qkv(hk=2), (P("x", None, "y"),) * 3, mesh2(), expect={},
        out_specs=[P("x", None, "y"), P("x", "y")], exact=[0, 1])


def test_attention_mqa_head_split_and_a_split_that_cuts_groups():
    f = _attn(causal=True)
    # MQA: the one kv head stays whole on every shard; the query heads split.
    run(f, _qkv(hk=1), (HEADS, P(), P()), mesh1(), expect={}, out_specs=[HEADS, P(None, "x")],
        exact=[0, 1])
    # hk = 3 over 2 or 4 shards would cut a kv head's group of query heads: q gathered (stated).
    q, k, v = _qkv(hq=12, hk=3)
    run(f, (q, k, v), (HEADS, P(), P()), mesh1(), expect={"all-gather": q.size},
        out_specs=[None, None], exact=[0, 1])


def test_attention_backward_batch_heads_mqa():
    f = lambda q, k, v: _attn(causal=True)(q, k, v)[0]  # noqa: E731
    g = vjp(f, (0, 1, 2))
    q, k, v = _qkv()
    ct = _rand(q.shape[:-1] + (v.shape[-1],), seed=9)
    run(g, (q, k, v, ct), (BATCH,) * 4, mesh1(), expect={}, out_specs=[BATCH] * 3,
        exact=[0, 1, 2])
    run(g, (q, k, v, ct), (HEADS,) * 4, mesh1(), expect={}, out_specs=[HEADS] * 3,
        exact=[0, 1, 2])
    # MQA: each shard's dk, dv sum over its query heads only: added up over the shards.
    q, k, v = _qkv(hk=1)
    run(g, (q, k, v, ct), (HEADS, P(), P(), HEADS), mesh1(),
        expect={"all-reduce": k.size + v.size}, out_specs=[HEADS, P(), P()], exact=[0],
        close=[1, 2], tol=2.0**-6)


def test_attention_bias_alibi_heads_split():
    q, k, v = _qkv()
    bias = _rand((1, 8, 16, 16), seed=5)
    slopes = jnp.asarray(np.linspace(0.1, 0.8, 8), jnp.float32)
    f = lambda q, k, v, bias, slopes: jax_aiter.flash_attn_func(  # noqa: E731
        q, k, v, causal=True, bias=bias, alibi_slopes=slopes, return_lse=True)
    run(f, (q, k, v, bias, slopes), (HEADS,) * 3 + (P(None, "x"), P("x")), mesh1(), expect={},
        out_specs=[HEADS, P(None, "x")], exact=[0, 1])
    g = vjp(lambda q, k, v, bias: jax_aiter.flash_attn_func(q, k, v, causal=True, bias=bias),
            (0, 1, 2, 3))
    ct = _rand(q.shape, seed=9)
    run(g, (q, k, v, bias, ct), (HEADS,) * 3 + (P(None, "x"), HEADS), mesh1(), expect={},
        out_specs=[HEADS] * 3 + [P(None, "x")], exact=[0, 1, 2, 3])


def test_varlen_heads_are_local():
    q, k, v = (t.reshape(64, t.shape[2], t.shape[3]) for t in _qkv())
    cu = jnp.asarray([0, 10, 30, 64], jnp.int32)
    f = lambda q, k, v, cu: jax_aiter.flash_attn_varlen(  # noqa: E731
        q, k, v, cu, cu, 34, 34, causal=True, return_lse=True)
    run(f, (q, k, v, cu), (P(None, "x"),) * 3 + (P(),), mesh1(), expect={},
        out_specs=[P(None, "x"), P("x")], exact=[0, 1])
    g = vjp(lambda q, k, v: jax_aiter.flash_attn_varlen(q, k, v, cu, cu, 34, 34, causal=True),
            (0, 1, 2))
    run(g, (q, k, v, q), (P(None, "x"),) * 4, mesh1(), expect={},
        out_specs=[P(None, "x")] * 3, exact=[0, 1, 2])


# ---- attention: query rows split (context parallelism) and dropout -----------------------------

ROWS = P(None, "x")


@pytest.mark.parametrize("window, alibi", [((-1, 0), False), ((5, 2), True)])
def test_attention_query_rows_split(window, alibi):
    """q split along the sequence: K and V gathered whole, each shard's rows aligned as in the whole
    call (causal / a window / ALiBi), out and lse the unsharded bits; dk, dv summed over shards."""
    # 64 rows a shard: the GPU kernels' row blocks, so each shard's arithmetic is the whole call's.
    q, k, v = _qkv(b=1, s=64 * N, sk=64 * N + 8, hq=4, hk=2)
    slopes = jnp.asarray(np.linspace(0.1, 0.8, 4), jnp.float32) if alibi else None
    f = _attn(window_size=window, alibi_slopes=slopes)
    run(f, (q, k, v), (ROWS,) * 3, mesh1(), expect={"all-gather": k.size + v.size},
        out_specs=[ROWS, P(None, None, "x")], exact=[0, 1])
    g = vjp(lambda q, k, v: f(q, k, v)[0], (0, 1, 2))
    ct = _rand(q.shape, seed=9)
    # K and V gathered for the backward (and, unless XLA reuses the forward's, for the forward
    # whose out and lse it saves), dk and dv reduce-scattered back to the keys' split.
    moved, _ = collectives(jax.jit(g, out_shardings=(NamedSharding(mesh1(), ROWS),) * 3).lower(
        *(jax.device_put(a, NamedSharding(mesh1(), ROWS)) for a in (q, k, v, ct))).compile()
        .as_text())
    assert moved.get("all-gather") in ((k.size + v.size), 2 * (k.size + v.size)), moved
    run(g, (q, k, v, ct), (ROWS,) * 4, mesh1(),
        expect={"all-gather": moved["all-gather"], "reduce-scatter": (k.size + v.size) // N},
        out_specs=[ROWS] * 3, out_shardings=(ROWS,) * 3, exact=[0], close=[1, 2], tol=2.0**-6)


@pytest.mark.parametrize("split", ["batch", "heads", "rows"])
def test_dropout_is_the_unsharded_mask(split):
    key = jax.random.key(7)
    spec = {"batch": BATCH, "heads": HEADS, "rows": ROWS}[split]
    f = lambda q, k, v: jax_aiter.flash_attn_func(  # noqa: E731
        q, k, v, dropout_p=0.25, causal=True, dropout_key=key, return_lse=True)
    q, k, v = _qkv(b=2, s=64 * N, hq=4, hk=2) if split == "rows" else _qkv()
    gathered = {"all-gather": k.size + v.size} if split == "rows" else {}
    run(f, (q, k, v), (spec,) * 3, mesh1(), expect=gathered, out_specs=[spec, None],
        exact=[0, 1])
    g = vjp(lambda q, k, v: f(q, k, v)[0], (0, 1, 2))
    if split != "rows":
        run(g, (q, k, v, _rand(q.shape, seed=9)), (spec,) * 4, mesh1(), expect={},
            out_specs=[spec] * 3, exact=[0, 1, 2])
    m = {"batch": P("x"), "heads": P(None, "x"), "rows": P(None, None, "x")}[split]
    mask = lambda: jax_aiter.dropout_mask(key, 4, 8, 16, 16, 0.25)  # noqa: E731
    run(mask, (), (), mesh1(), expect={}, out_specs=[m], out_shardings=m, exact=[0])
