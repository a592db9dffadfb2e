"""MoE routing through JAX on the CPU backend (the real XLA path: our handlers and host twins):
``topk_softmax`` (both tiers: the ASM tier planned for gfx942/gfx950 runs AITER's topksoftmax rows
through their ABI twins) and ``moe_sorting`` against NumPy references written here from AITER's
contract (float64 softmax, ties to the lower expert id, the sorted layout of AITER's
moe_sorting_fwd as its own torch reference builds it), their gradients against jnp, every bad
input named, and the shardings.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

import jax_aiter
from jax_aiter import Dispatch

BF16 = ml_dtypes.bfloat16


# ---- independent references ----------------------------------------------------------------

def ref_topk(logits, k, renormalize):
    """float64 softmax; the k largest logits, equal ones by lower id, NaN last (lexsort's order)."""
    x = np.asarray(logits).astype(np.float64)
    t, e = x.shape
    order = np.lexsort((np.broadcast_to(np.arange(e), x.shape), -x), axis=-1)
    ids = order[:, :k].astype(np.int32)
    p = np.exp(x - x.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    w = np.take_along_axis(p, ids, -1)
    if renormalize:
        w = w / w.sum(-1, keepdims=True)
    return w, ids


def packed(token, slot):
    return np.asarray((np.asarray(slot, np.uint32) << 24) | np.asarray(token, np.uint32),
                      np.uint32).view(np.int32)


def ref_sorting(ids, weights, num_experts, block_m):
    """AITER's layout, built as AITER's run_torch_moe_sorting builds it: experts in order, each
    one's (token, slot) entries in row-major order, padded to block_m; no block for an expert with
    no entry; padding (k << 24) | T, weight 0; expert -1 past the rows used."""
    ids = np.asarray(ids)
    t, k = ids.shape
    rows = t * k + num_experts * block_m - k
    blocks = -(-rows // block_m)
    sorted_ids = np.full(rows, packed(t, k), np.int32)
    sorted_w = np.zeros(rows, np.float32)
    sorted_e = np.full(blocks, -1, np.int32)
    r = 0
    for e in range(num_experts):
        tok, slot = np.nonzero(ids == e)
        if tok.size == 0:
            continue
        sorted_ids[r:r + tok.size] = packed(tok, slot)
        sorted_w[r:r + tok.size] = np.asarray(weights)[tok, slot]
        nb = -(-tok.size // block_m)
        sorted_e[r // block_m:r // block_m + nb] = e
        r += nb * block_m
    return sorted_ids, sorted_w, sorted_e, np.array([r, t], np.int32)


def logits_of(t, e, dtype, seed=0, ties=False):
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 3, (t, e)).astype(np.float32) if ties else \
        rng.standard_normal((t, e)).astype(np.float32) * 2
    return x.astype(dtype)


def check_topk(logits, k, renormalize, **kw):
    fn = functools.partial(jax_aiter.topk_softmax, k=k, renormalize=renormalize, **kw)
    w, ids = jax.jit(fn)(jnp.asarray(logits))
    want_w, want_ids = ref_topk(logits, k, renormalize)
    assert w.dtype == np.float32 and ids.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(ids), want_ids)
    np.testing.assert_allclose(np.asarray(w), want_w, rtol=2e-5, atol=1e-12)
    return np.asarray(w), np.asarray(ids)


def check_sorting(ids, weights, num_experts, block_m):
    got = jax.jit(jax_aiter.moe_sorting, static_argnums=(2, 3))(
        jnp.asarray(ids, jnp.int32), jnp.asarray(weights, jnp.float32), num_experts, block_m)
    want = ref_sorting(ids, weights, num_experts, block_m)
    assert isinstance(got, jax_aiter.MoeSorted)
    for name, g, w in zip(jax_aiter.MoeSorted._fields, got, want):
        assert g.dtype == w.dtype, name
        np.testing.assert_array_equal(np.asarray(g), w, err_msg=name)
    return got


# ---- topk_softmax ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [BF16, np.float16, np.float32])
@pytest.mark.parametrize("t,e,k", [(1, 256, 8), (300, 256, 8), (300, 256, 1), (7, 8, 2),
                                   (33, 60, 5), (5, 257, 8), (3, 4096, 8), (4, 16, 16)])
@pytest.mark.parametrize("renormalize", [True, False])
def test_topk_softmax(dtype, t, e, k, renormalize):
    w, _ = check_topk(logits_of(t, e, dtype, seed=t + e), k, renormalize)
    if renormalize:
        np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-6)


@pytest.mark.parametrize("dtype", [BF16, np.float32])
@pytest.mark.parametrize("e,k", [(256, 8), (64, 1), (8, 8)])
def test_topk_softmax_ties_go_to_the_lower_id(dtype, e, k):
    x = logits_of(64, e, dtype, seed=3, ties=True)  # 6 values over e experts: ties everywhere
    x[0] = 1  # a row of one value: ids 0..k-1
    x[1, :] = -0.0
    x[1, e // 2] = 0.0  # -0 == +0: still the lowest ids
    _, ids = check_topk(x, k, True)
    np.testing.assert_array_equal(ids[0], np.arange(k))
    np.testing.assert_array_equal(ids[1], np.arange(k))


def test_topk_softmax_extremes_and_nan():
    x = np.zeros((4, 32), np.float32)
    x[0, 5] = 1e4  # one expert takes everything: exp underflows to 0 for the rest
    x[1, :] = -np.inf
    x[1, 7] = 0.0  # -inf logits: weight 0, chosen after every finite one, by id
    x[2, 9] = np.nan  # NaN: its row's weights NaN, it ranks last
    x[3, :] = np.linspace(-50, 50, 32)
    w, ids = jax_aiter.topk_softmax(jnp.asarray(x), 4, renormalize=False)
    w, ids = np.asarray(w), np.asarray(ids)
    assert ids[0, 0] == 5 and w[0, 0] == 1.0 and np.all(w[0, 1:] == 0)
    np.testing.assert_array_equal(ids[1], [7, 0, 1, 2])
    np.testing.assert_array_equal(w[1], [1, 0, 0, 0])
    assert np.all(np.isnan(w[2])) and 9 not in ids[2]
    np.testing.assert_array_equal(ids[2], [0, 1, 2, 3])
    np.testing.assert_array_equal(ids[3], [31, 30, 29, 28])
    np.testing.assert_allclose(w[3], ref_topk(x[3:], 4, False)[0][0], rtol=2e-5)


def test_topk_softmax_empty_and_deterministic():
    w, ids = jax_aiter.topk_softmax(jnp.zeros((0, 64), jnp.bfloat16), 8)
    assert w.shape == (0, 8) and ids.shape == (0, 8)
    x = jnp.asarray(logits_of(200, 256, np.float32, seed=9))
    a = jax_aiter.topk_softmax(x, 8)
    b = jax_aiter.topk_softmax(x, 8)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(np.asarray(u), np.asarray(v))


def test_topk_softmax_forced_tier_and_vmap():
    x = logits_of(12, 64, np.float32, seed=4)
    check_topk(x, 4, True, dispatch=Dispatch("portable"))
    xs = np.stack([x, x[::-1]])
    w, ids = jax.vmap(lambda v: jax_aiter.topk_softmax(v, 4))(jnp.asarray(xs))
    for i in range(2):
        want_w, want_ids = ref_topk(xs[i], 4, True)
        np.testing.assert_array_equal(np.asarray(ids[i]), want_ids)
        np.testing.assert_allclose(np.asarray(w[i]), want_w, rtol=2e-5)


@pytest.mark.parametrize("renormalize", [True, False])
def test_topk_softmax_gradient(renormalize):
    """d(weights)/d(logits) against jnp's softmax (of the row, or of the chosen logits)."""
    x = jnp.asarray(logits_of(16, 32, np.float32, seed=5))
    c = jnp.asarray(np.random.default_rng(6).standard_normal((16, 4)), jnp.float32)
    _, ids = jax_aiter.topk_softmax(x, 4, renormalize)

    def ref(x):
        if renormalize:
            return jax.nn.softmax(jnp.take_along_axis(x, ids, -1), -1)
        return jnp.take_along_axis(jax.nn.softmax(x, -1), ids, -1)

    got = jax.grad(lambda x: jnp.sum(jax_aiter.topk_softmax(x, 4, renormalize)[0] * c))(x)
    want = jax.grad(lambda x: jnp.sum(ref(x) * c))(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-7)
    gb = jax.grad(lambda x: jnp.sum(jax_aiter.topk_softmax(x, 4)[0]))(x.astype(jnp.bfloat16))
    assert gb.dtype == jnp.bfloat16 and gb.shape == x.shape


# ---- topk_softmax on AITER's topksoftmax kernels (their ABI twins here) -------------------------

@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
@pytest.mark.parametrize("dtype", [BF16, np.float32])
def test_topk_softmax_asm_tier(arch, dtype):
    """13 tokens (a partial last workgroup), ties everywhere, both renormalizations; the bf16 call
    also on 10001 tokens (12-row kernels from 10000 on) and E = 640."""
    asm = Dispatch("asm", arch)
    x = logits_of(13, 128, dtype, seed=21, ties=True)
    for renormalize in (True, False):
        check_topk(x, 8, renormalize, dispatch=asm)
    if dtype is BF16:
        check_topk(logits_of(10001, 256, dtype, seed=22), 6, False, dispatch=asm)
        check_topk(logits_of(5, 640, dtype, seed=23), 8, True, dispatch=asm)


def test_topk_softmax_asm_tier_plans_and_gradient():
    from jax_aiter import tools
    chosen = lambda plan: (plan["chosen"]["tier"], plan["chosen"]["plan"]["steps"][0]["launch"])
    for tokens, dtype, want in [(9999, "bfloat16", "topksoftmax_4x128x8_bf16.co"),
                                (10000, "float32", "topksoftmax_12x128x8.co")]:
        target, operands, attrs = jax_aiter.moe_routing.describe(tokens, 128, 8, dtype)
        tier, launch = chosen(tools.plan(target, operands, attrs, "gfx942"))
        assert tier == "asm" and launch["code_object"].endswith("/" + want), launch
        assert launch["grid"][0] == -(-tokens // (12 if tokens >= 10000 else 4))
    # Where AITER has no kernel (f16 logits; E = 128, k = 5) the portable tier runs, on ROCm too.
    for dtype, k in [("float16", 8), ("bfloat16", 5)]:
        target, operands, attrs = jax_aiter.moe_routing.describe(64, 128, k, dtype)
        assert chosen(tools.plan(target, operands, attrs, "gfx950"))[0] == "portable"
    # The gradient is the op's, whichever tier ran the forward.
    x = jnp.asarray(logits_of(16, 128, np.float32, seed=24))
    c = jnp.asarray(np.random.default_rng(25).standard_normal((16, 4)), jnp.float32)
    grads = [jax.grad(lambda x: jnp.sum(jax_aiter.topk_softmax(x, 4, False, dispatch=d)[0] * c))(x)
             for d in (Dispatch("asm", "gfx942"), Dispatch("portable"))]
    np.testing.assert_array_equal(np.asarray(grads[0]), np.asarray(grads[1]))
    # A forced kernel by name (a 12-row kernel on 5 tokens: allowed).
    check_topk(logits_of(5, 128, np.float32, seed=26), 4, True, kernel="topksoftmax_12x128x4",
               dispatch=Dispatch(asm_arch="gfx950"))


# ---- moe_sorting -------------------------------------------------------------------------------

@pytest.mark.parametrize("block_m", [32, 64, 128])
@pytest.mark.parametrize("t,e,k", [(1, 256, 8), (300, 256, 8), (300, 256, 1), (257, 8, 2),
                                   (64, 16, 16)])
def test_moe_sorting_after_topk_softmax(t, e, k, block_m):
    w, ids = jax_aiter.topk_softmax(jnp.asarray(logits_of(t, e, BF16, seed=t * k)), k)
    check_sorting(np.asarray(ids), np.asarray(w), e, block_m)


def test_moe_sorting_experts_with_no_tokens():
    """A skewed router: most of 256 experts get no token, and get no block."""
    x = logits_of(300, 256, np.float32, seed=7)
    x[:, 10:20] += 20  # every token picks among experts 10..19
    w, ids = jax_aiter.topk_softmax(jnp.asarray(x), 8)
    got = check_sorting(np.asarray(ids), np.asarray(w), 256, 64)
    used = np.asarray(got.sorted_expert_ids)
    assert set(used[used >= 0]) == set(range(10, 20))
    assert int(got.num_valid_ids[0]) == 10 * 256  # 240 entries each: 4 blocks of 64 an expert


@pytest.mark.parametrize("block_m", [1, 17, 32])
def test_moe_sorting_any_ids(block_m):
    """Ids as a caller may pass them: repeats within a row (both entries kept, slot order), ids
    outside [0, E) dropped (no row), several tiles of 256 entries."""
    rng = np.random.default_rng(8)
    ids = rng.integers(-2, 12, (150, 6)).astype(np.int32)
    w = rng.standard_normal((150, 6)).astype(np.float32)
    got = check_sorting(ids, w, 10, block_m)
    assert int(got.num_valid_ids[1]) == 150


def test_moe_sorting_large_slots_and_one_token():
    """Slots from 128 up set the packed id's sign bit (as AITER's uint32 read as int32)."""
    rng = np.random.default_rng(9)
    ids = np.stack([rng.permutation(300)[:200] for _ in range(3)]).astype(np.int32)
    w = rng.random((3, 200)).astype(np.float32)
    got = check_sorting(ids, w, 300, 32)
    assert np.asarray(got.sorted_token_ids).min() < 0
    check_sorting(np.array([[3]], np.int32), np.array([[0.5]], np.float32), 4, 128)


def test_moe_sorting_empty_and_gradient():
    got = jax_aiter.moe_sorting(jnp.zeros((0, 8), jnp.int32), jnp.zeros((0, 8)), 16, 32)
    want = ref_sorting(np.zeros((0, 8), np.int32), np.zeros((0, 8), np.float32), 16, 32)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), w)
    # sorted_weights' gradient reaches weights through the sort's permutation.
    rng = np.random.default_rng(10)
    ids = jnp.asarray(rng.integers(0, 8, (20, 2)), jnp.int32)
    w = jnp.asarray(rng.random((20, 2)), jnp.float32)
    rows = jax_aiter.moe_sorting_sizes(20, 2, 8, 4)[0]
    c = jnp.asarray(rng.standard_normal(rows), jnp.float32)
    s = jax_aiter.moe_sorting(ids, w, 8, 4)
    got = jax.grad(lambda w: jnp.sum(jax_aiter.moe_sorting(ids, w, 8, 4).sorted_weights * c))(w)
    sid = np.asarray(s.sorted_token_ids)
    want = np.zeros((20, 2), np.float32)
    for r in range(int(s.num_valid_ids[0])):
        tok, slot = sid[r] & 0xFFFFFF, (sid[r] >> 24) & 0xFF
        if tok < 20:
            want[tok, slot] += np.asarray(c)[r]
    np.testing.assert_array_equal(np.asarray(got), want)


def test_moe_sorting_vmap():
    """A batch of routings (one per micro-batch, say): each sorted on its own."""
    rng = np.random.default_rng(12)
    ids = rng.integers(0, 16, (3, 40, 4)).astype(np.int32)
    w = rng.random((3, 40, 4)).astype(np.float32)
    got = jax.jit(jax.vmap(lambda i, w: jax_aiter.moe_sorting(i, w, 16, 32)))(ids, w)
    for b in range(3):
        for g, want in zip(got, ref_sorting(ids[b], w[b], 16, 32)):
            np.testing.assert_array_equal(np.asarray(g[b]), want)


def test_moe_sorting_sizes_are_aiters():
    assert jax_aiter.moe_sorting_sizes(4096, 8, 256, 32) == (4096 * 8 + 256 * 32 - 8,
                                                             -(-(4096 * 8 + 256 * 32 - 8) // 32))
    assert jax_aiter.moe_sorting_sizes(1, 8, 256, 128) == (32768, 256)


# ---- bad inputs, each named --------------------------------------------------------------------

def _raises(fn, exc, message):
    with pytest.raises(exc) as e:
        fn()
    assert message in str(e.value), str(e.value)


@pytest.mark.parametrize("call,exc,message", [
    (lambda: jax_aiter.topk_softmax(jnp.zeros((4, 8), jnp.int32), 2), ValueError,
     "aiter.topk_softmax: operand logits: expected bf16, f16 or f32 [T,E], got i32[4,8]"),
    (lambda: jax_aiter.topk_softmax(jnp.zeros((2, 4, 8)), 2), ValueError,
     "aiter.topk_softmax: operand logits: expected rank 2 ([T, E]), got shape (2, 4, 8)"),
    (lambda: jax_aiter.topk_softmax(jnp.zeros((4, 4097)), 2), ValueError,
     "aiter.topk_softmax: operand logits: expected 1 to 4096 experts (the last dim), "
     "got f32[4,4097]"),
    (lambda: jax_aiter.topk_softmax(jnp.zeros((4, 0)), 1), ValueError,
     "operand logits: expected 1 to 4096 experts"),
    (lambda: jax_aiter.topk_softmax(jnp.zeros((4, 8)), 9), ValueError,
     "aiter.topk_softmax: operand weights: expected f32[4,k] with 1 <= k <= 8 (T and E from "
     "logits), got f32[4,9]"),
    (lambda: jax_aiter.topk_softmax(jnp.zeros((4, 8)), 0), ValueError,
     "aiter.topk_softmax: attribute k: expected an int >= 1, got 0"),
    (lambda: jax_aiter.topk_softmax(jnp.zeros((4, 8)), 2.5), TypeError,
     "aiter.topk_softmax: attribute k: expected a static Python int, got float"),
    (lambda: jax_aiter.topk_softmax(jnp.zeros((4, 8)), 2, dispatch=Dispatch("ck")), ValueError,
     "aiter.topk_softmax: attribute tier: expected one of auto, asm, portable; got 'ck'"),
    (lambda: jax_aiter.topk_softmax(jnp.zeros((4, 128)), 4, kernel="topksoftmax_4x128x5"),
     ValueError, "aiter.topk_softmax: attribute kernel: expected \"\" (the heuristic's choice) or "
                 "one of AITER's "
                 "topksoftmax kernels by symbol or short name (e.g. topksoftmax_4x128x4), got "
                 "'topksoftmax_4x128x5'"),
    (lambda: jax_aiter.topk_softmax(jnp.zeros((4, 128)), 4, kernel=3), TypeError,
     "aiter.topk_softmax: attribute kernel: expected a str (an AITER topksoftmax kernel's name) "
     "or None, got int"),
    (lambda: jax_aiter.moe_sorting(jnp.zeros((4, 2)), jnp.zeros((4, 2)), 8, 32), ValueError,
     "aiter.moe_sorting: operand ids: expected i32[T,topk], got f32[4,2]"),
    (lambda: jax_aiter.moe_sorting(jnp.zeros((4,), jnp.int32), jnp.zeros((4,)), 8, 32),
     ValueError, "aiter.moe_sorting: operand ids: expected rank 2 ([T, k]), got shape (4,)"),
    (lambda: jax_aiter.moe_sorting(jnp.zeros((4, 2), jnp.int32), jnp.zeros((4, 2), jnp.bfloat16),
                                   8, 32), ValueError,
     "aiter.moe_sorting: operand weights: expected f32[4,2] (like ids), got bf16[4,2]"),
    (lambda: jax_aiter.moe_sorting(jnp.zeros((4, 2), jnp.int32), jnp.zeros((4, 3)), 8, 32),
     ValueError, "operand weights: expected f32[4,2] (like ids), got f32[4,3]"),
    (lambda: jax_aiter.moe_sorting(jnp.zeros((4, 2), jnp.int32), jnp.zeros((4, 2)), 0, 32),
     ValueError, "aiter.moe_sorting: attribute num_experts: expected 1 to 4096, got 0"),
    (lambda: jax_aiter.moe_sorting(jnp.zeros((4, 2), jnp.int32), jnp.zeros((4, 2)), 8, 0),
     ValueError, "aiter.moe_sorting: attribute block_m: expected 1 to 1024, got 0"),
    (lambda: jax_aiter.moe_sorting(jnp.zeros((4, 2), jnp.int32), jnp.zeros((4, 2)), 8, 2048),
     ValueError, "attribute block_m: expected 1 to 1024, got 2048"),
    (lambda: jax_aiter.moe_sorting(jnp.zeros((4, 9), jnp.int32), jnp.zeros((4, 9)), 8, 32),
     ValueError, "aiter.moe_sorting: operand ids: expected 1 <= topk <= 8 (at most num_experts "
                 "and 255), got i32[4,9]"),
    (lambda: jax_aiter.moe_sorting(jnp.zeros((4, 256), jnp.int32), jnp.zeros((4, 256)), 4096,
                                   32), ValueError, "expected 1 <= topk <= 255"),
    (lambda: jax_aiter.moe_sorting(jnp.zeros((4, 2), jnp.int32), jnp.zeros((4, 2)), 8.0, 32),
     TypeError, "aiter.moe_sorting: attribute num_experts: expected a static Python int"),
])
def test_bad_inputs_are_named(call, exc, message):
    _raises(call, exc, message)


def test_too_many_tokens_is_named():
    """2^24 tokens: one past the 24 bits of the packed id (checked at trace time, no data)."""
    ids = jax.ShapeDtypeStruct((1 << 24, 1), jnp.int32)
    w = jax.ShapeDtypeStruct((1 << 24, 1), jnp.float32)
    _raises(lambda: jax.eval_shape(lambda i, w: jax_aiter.moe_sorting(i, w, 8, 32), ids, w),
            ValueError, "operand ids: expected at most 16777215 tokens (24 bits of the packed "
                        "id), got i32[16777216,1]")
    x = jax.ShapeDtypeStruct((1 << 24, 8), jnp.bfloat16)
    _raises(lambda: jax.eval_shape(lambda x: jax_aiter.topk_softmax(x, 2), x), ValueError,
            "operand logits: expected at most 16777215 rows")


def test_traced_static_arguments_are_refused():
    _raises(lambda: jax.jit(jax_aiter.topk_softmax)(jnp.zeros((4, 8)), 2), TypeError,
            "attribute k: expected a static Python int, got DynamicJaxprTracer")


# ---- shardings (4 CPU devices: conftest.py) ----------------------------------------------------

def _collectives(fn, *args):
    hlo = jax.jit(fn).lower(*args).compile().as_text()
    return {kind for kind in ("all-gather", "all-reduce", "reduce-scatter", "all-to-all",
                              "collective-permute") if f" {kind}(" in hlo or f" {kind}-start(" in hlo}


@pytest.mark.parametrize("shardy", [True, False])
def test_shardings(shardy):
    devices = jax.devices()
    if len(devices) < 4:
        pytest.skip("needs four devices")
    old = jax.config.jax_use_shardy_partitioner
    jax.config.update("jax_use_shardy_partitioner", shardy)
    try:
        mesh = Mesh(np.asarray(devices[:4]), ("x",))
        x = jnp.asarray(logits_of(64, 32, BF16, seed=11))
        rows = NamedSharding(mesh, P("x", None))
        xs = jax.device_put(x, rows)
        topk = lambda x: jax_aiter.topk_softmax(x, 4)  # noqa: E731
        # Tokens split: each device routes its own tokens, no collective, outputs split likewise.
        assert _collectives(topk, xs) == set()
        w, ids = jax.jit(topk)(xs)
        assert w.sharding.spec[0] == "x" and ids.sharding.spec[0] == "x"
        want_w, want_ids = topk(x)
        np.testing.assert_array_equal(np.asarray(ids), np.asarray(want_ids))
        np.testing.assert_array_equal(np.asarray(w), np.asarray(want_w))
        # The expert dim split: gathered first, the same answer.
        es = jax.device_put(x, NamedSharding(mesh, P(None, "x")))
        np.testing.assert_array_equal(np.asarray(jax.jit(topk)(es)[1]), np.asarray(want_ids))
        # The sort needs every token: its small inputs are gathered, the layout is the whole one.
        sort = lambda i, w: jax_aiter.moe_sorting(i, w, 32, 16)  # noqa: E731
        ids_s, w_s = jax.device_put(want_ids, rows), jax.device_put(want_w, rows)
        assert _collectives(sort, ids_s, w_s) == {"all-gather"}
        for g, r in zip(jax.jit(sort)(ids_s, w_s), sort(want_ids, want_w)):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(r))
    finally:
        jax.config.update("jax_use_shardy_partitioner", old)
