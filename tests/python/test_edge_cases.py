"""Edges of the ops' contracts, each a defect an audit found (issue 23), one section each, against
independent references (float64, ml_dtypes' bf16 rounding, the quantizers' rules restated).

Small shapes only: the whole file runs in seconds on the CPU (the Host backend's C++ twins).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import jax_aiter
from jax_aiter import Dispatch, shuffle_weight
from jax_aiter.flatmm import FLATMM_LAYOUT

U = 2.0**-8  # bf16 unit roundoff
ASM_942 = Dispatch("asm", "gfx942", 304)
ASM_950 = Dispatch("asm", "gfx950", 256)
FP8 = jnp.float8_e4m3fn


def bf16(x):
    """float64 -> the nearest bf16, as float64 (an independent rounding: ml_dtypes)."""
    return np.asarray(x, np.float64).astype(ml_dtypes.bfloat16).astype(np.float64)


# ---- INT8 GEMM: exact int32 sums up to its documented K limit --------------------------------

def test_gemm_i8_k_limit_keeps_int32_sums_exact():
    """|a . b| <= 128 * 128 * K must stay below 2^31: at K = 2^17 the -128 x -128 rows sum to 2^31,
    which the int32 sums wrapped to -2^31 (split-K portable). K = 2^17 is refused now; the largest
    K allowed gives the exact value on every path."""
    def run(k, n=128, **kw):
        a = jnp.full((1, k), -128, jnp.int8)
        b = shuffle_weight(jnp.full((n, k), -128, jnp.int8))
        return jax_aiter.gemm_i8(a, b, jnp.ones((1, 1)), jnp.ones((1, n)), **kw)

    with pytest.raises(ValueError, match=r"aiter.gemm_i8: operand a: .*K=131072.*K <= 131071"):
        run(131072)
    with pytest.raises(ValueError, match=r"K <= 131071"):
        run(131072, splitk=1)
    for k, kw in [(131040, {}), (131040, {"splitk": 1}), (131040, {"splitk": 8}),
                  (131040, {"dispatch": Dispatch("portable")}),
                  (130944, {"dispatch": ASM_942}), (130944, {"dispatch": ASM_950})]:
        want = bf16(128.0 * 128.0 * k)  # exact in float64, one bf16 rounding
        got = np.asarray(run(k, **kw)).astype(np.float64)
        np.testing.assert_array_equal(got, np.full((1, 128), want), err_msg=f"K={k} {kw}")
