"""Running an op with its outputs written into NaN-filled memory, for the value tests.

An output element the handler never writes must not pass. We cannot hand the custom call a
pre-filled output directly (input_output_aliases would need an extra operand the handlers do not
take), but we can one level up: the op runs inside a jit whose first argument is a tuple of
NaN-filled arrays shaped like the results, donated (donate_argnums, keep_unused), so XLA aliases
each entry output to a donated buffer and the custom calls write their results straight into
NaN-filled memory. run_poisoned asserts that each output really occupies its donated buffer (same
device pointer), so the poisoning is known to have happened, not hoped for. Then
  1. every element of every output is compared against the reference, and NaN fails;
  2. each function runs on two different inputs with fresh poison, so an output that kept
     values of an earlier run fails too.
(Checked by breaking the host twin to skip one element of y: the element reads NaN and the
reference tests fail.)
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp


@functools.cache
def _poisoned_jit(body):
    return jax.jit(lambda poison, *args: body(*args), donate_argnums=0, keep_unused=True)


def run_poisoned(body, *args):
    """body(*args) under jit, its outputs written into donated NaN-filled buffers."""
    shapes, tree = jax.tree_util.tree_flatten(jax.eval_shape(body, *args))
    poison = [jnp.full(s.shape, jnp.nan, s.dtype) for s in shapes]
    pointers = [p.unsafe_buffer_pointer() for p in poison]
    outs = _poisoned_jit(body)(poison, *args)
    got = [o.unsafe_buffer_pointer() for o in jax.tree_util.tree_leaves(outs)]
    assert got == pointers, "XLA did not write the outputs into the poisoned (donated) buffers"
    return jax.tree_util.tree_unflatten(tree, jax.tree_util.tree_leaves(outs))
