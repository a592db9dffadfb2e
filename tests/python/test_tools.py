"""The two tools on input they must refuse: jax-aiter-plan (and jax_aiter.plan) on calls no op
can have, jax-aiter-check-aiter (and set_aiter_root) on paths that are not an AITER checkout or
files that are not code objects. Each refusal is a message naming the argument and a non-zero
exit status, never a traceback, a silently wrong plan, a hang or an abort.

The CLI runs in-process (``plan_main`` / ``check_aiter_main``, what the console scripts call);
the reads of things named like code objects run in a subprocess under an address-space cap and a
timeout, so a reader that slurps /dev/zero or waits on a FIFO fails the test instead of the run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import jax_aiter
from jax_aiter import tools


def _plan(capsys, *argv):
    """(exit status, stdout, stderr) of jax-aiter-plan; argparse's own refusals exit 2."""
    try:
        rc = tools.plan_main(list(argv))
    except SystemExit as e:
        rc = e.code
    out, err = capsys.readouterr()
    return rc, out, err


GEMM = ("gemm", "--m", "4", "--n", "64", "--k", "64", "--arch", "gfx942")
ATTN = ("attention", "--sq", "16", "--hq", "2", "--arch", "gfx942")


@pytest.mark.parametrize("argv,message", [
    (GEMM + ("--dtype", "bogus"), "--dtype: unknown dtype 'bogus'"),
    (GEMM + ("--out-dtype", "bogus"), "--out-dtype: unknown dtype 'bogus'"),
    (ATTN + ("--d", "0"), "--d: expected an int >= 1, got 0"),
    (ATTN + ("--d", "64", "--window", "5"), "--window: expected left,right"),
    (ATTN + ("--d", "64", "--window", "1,2,3"), "--window: expected left,right"),
    (ATTN + ("--d", "64", "--window=-3,0"), "--window: expected left,right >= -1"),
    (("aiter.gemm", "--arch", "gfx942", "--call", '{"operands": {"a": {"shape": [4, 64]}}}'),
     "--call: operand a: expected {\"dtype\""),
    (("aiter.gemm", "--arch", "gfx942", "--call", '{"operands": [["bf16", [4, 64]]]}'),
     "--call: expected {\"operands\""),
    (("aiter.gemm", "--arch", "gfx942", "--call", '[1, 2]'), "--call: expected {\"operands\""),
    (("aiter.gemm", "--arch", "gfx942", "--call", '{"operands": {}, "attributes": [1]}'),
     "--call: attributes: expected an object"),
    (GEMM[:-2] + ("--arch", "gfx942", "--cus", "-5"), "--cus: expected 0 (the arch's usual part) "
                                                      "to 4096, got -5"),
    (GEMM + ("--cus", "1000000000000"), "--cus: expected 0 (the arch's usual part) to 4096"),
    (GEMM + ("--asm-cus", "5000"), "--asm-cus: expected 0"),
    (("gemm", "--m", "9223372036854775807", "--n", "64", "--k", "64", "--arch", "gfx942"),
     "aiter.gemm: call description: operand a: dimension 0 is too large"),
    (("gemm", "--m", "4294967296", "--n", "4294967296", "--k", "64", "--arch", "gfx942"),
     "operand out (bf16[4294967296,4294967296]) is too large"),
    (("rms_norm", "--shape", "16,x", "--arch", "gfx942"), "--shape: expected dims"),
    (GEMM[:-2] + ("--arch", "gfx1100"), "unknown arch 'gfx1100'"),
])
def test_plan_refuses_with_a_message(capsys, argv, message):
    rc, out, err = _plan(capsys, *argv)
    assert rc == 2 and out == "", (rc, out, err)
    assert message in err, err
    assert "Traceback" not in err


def test_plan_still_plans(capsys):
    rc, out, err = _plan(capsys, *GEMM, "--cus", "4096")
    assert rc == 0, err
    got = json.loads(out)
    assert got["target"] == {"arch": "gfx942", "compute_units": 4096}
    assert got["chosen"]["tier"] == "asm"
    rc, out, err = _plan(capsys, *ATTN, "--d", "64", "--window", "8,0")
    assert rc == 0, err


def test_plan_library_refuses_with_value_errors():
    a = ("bfloat16", (4, 64))
    ok = {"a": a, "b": ("bfloat16", (64, 64)), "bias": None, "out": ("bfloat16", (4, 64))}
    assert jax_aiter.plan("aiter.gemm", ok, {}, "gfx942")["chosen"] is not None
    assert jax_aiter.plan("aiter.gemm", ok, {}, "gfx942", np.int64(80))["target"] == {
        "arch": "gfx942", "compute_units": 80}
    for operands, attributes, cus, message in [
        (None, {}, 0, "operands: expected a dict"),
        ([a], {}, 0, "operands: expected a dict"),
        ({**ok, "a": None}, {}, 0, "operand a is missing"),
        ({**ok, "a": ("bogus", (4, 64))}, {}, 0, "operand a: expected (dtype, shape)"),
        ({**ok, "a": "bf16"}, {}, 0, "operand a: expected (dtype, shape)"),
        (ok, None, -5, "compute units: expected 0"),
        (ok, {}, 10**12, "compute units: expected 0"),
        (ok, {}, 4097, "compute units: expected 0"),
        (ok, {}, 80.0, "compute units: expected 0"),
        (ok, {}, True, "compute units: expected 0"),
        (ok, [1], 0, "attributes: expected a dict"),
    ]:
        with pytest.raises(ValueError) as e:
            jax_aiter.plan("aiter.gemm", operands, attributes, "gfx942", cus)
        assert message in str(e.value), (message, str(e.value))


# ---- jax-aiter-check-aiter, set_aiter_root ----------------------------------------------------

def _metadata_reader_built() -> bool:
    """False where the library was built without msgpack-cxx (the GPU machine has none): the
    check then answers every root with that one error, which test_check_aiter.py also skips on."""
    try:
        jax_aiter.check_aiter("/nonexistent/jax-aiter-root")
    except Exception as e:  # noqa: BLE001 (any other answer means the reader is there)
        return "built without msgpack-cxx" not in str(e)
    return True


needs_metadata_reader = pytest.mark.skipif(
    not _metadata_reader_built(), reason="this jax_aiter library was built without msgpack-cxx")


@needs_metadata_reader
def test_check_aiter_on_a_path_that_is_not_a_checkout(tmp_path, capsys):
    for root, why in [(tmp_path / "nonexistent", "No such file or directory"),
                      (tmp_path, "an AITER checkout holds hsa/")]:
        assert tools.check_aiter_main([str(root)]) == 2
        out, err = capsys.readouterr()
        assert "jax-aiter-check-aiter: jax_aiter: check_aiter:" in err and why in err, err
        assert out == ""
        with pytest.raises(ValueError, match=why):
            jax_aiter.check_aiter(str(root))
        with pytest.raises(ValueError, match=rf"set_aiter_root: .*{why}"):
            jax_aiter.set_aiter_root(str(root))
    (tmp_path / "hsa").mkdir()
    assert tools.check_aiter_main([str(tmp_path)]) == 0  # an empty checkout: all missing
    assert "0 ok, " in capsys.readouterr().out
    jax_aiter.set_aiter_root(str(tmp_path))  # a checkout: accepted


def test_aiter_root_from_the_environment_is_warned_about(tmp_path):
    """JAX_AITER_AITER_ROOT naming no checkout: a warning at registration, and the ops still run
    (the CPU library needs no AITER code object)."""
    run = subprocess.run(
        [sys.executable, "-c", "import jax_aiter, jax.numpy as jnp; jax_aiter.register(); "
                               "print(jax_aiter.rms_norm(jnp.ones((2, 8)), jnp.ones(8)).sum())"],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "JAX_PLATFORMS": "cpu",
             "JAX_AITER_AITER_ROOT": str(tmp_path / "nonexistent")})
    assert run.returncode == 0, run.stderr[-2000:]
    assert "RuntimeWarning: JAX_AITER_AITER_ROOT ignored: jax_aiter: set_aiter_root: AITER root" \
        in run.stderr and "No such file or directory" in run.stderr, run.stderr[-2000:]
    np.testing.assert_allclose(float(run.stdout), 16 / np.sqrt(1 + 1e-6), rtol=1e-6)


_READ_UNDER_A_CAP = """
import json, resource, sys
cap = 1536 << 20  # far below the 3 GiB sparse file, far above the tool's own ~0.5 GiB
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
from jax_aiter import tools
sys.exit(tools.check_aiter_main([sys.argv[1], "--json"]))
"""


@needs_metadata_reader
def test_check_aiter_reads_only_regular_files_of_bounded_size(tmp_path):
    """Things named like the code objects check-aiter reads: a directory, a FIFO, a symlink to
    /dev/zero, a 3 GiB sparse file. Each is a mismatch saying what it is, at once, in a process
    whose address space is capped at 1.5 GiB (reading any of them whole would not fit)."""
    (tmp_path / "hsa").mkdir()
    wanted = [c for c in jax_aiter.check_aiter(str(tmp_path))["checked"]
              if c["arch"] == "gfx942" and c["family"] == "bf16gemm"][:4]
    kinds = ["a directory", "a FIFO", "a character device", "expected at most"]
    for c, kind in zip(wanted, kinds):
        path = tmp_path / "hsa" / c["arch"] / c["code_object"]
        path.parent.mkdir(parents=True, exist_ok=True)
        if kind == "a directory":
            path.mkdir()
        elif kind == "a FIFO":
            os.mkfifo(path)
        elif kind == "a character device":
            path.symlink_to("/dev/zero")
        else:
            with open(path, "wb") as f:
                f.truncate(3 << 30)
    run = subprocess.run([sys.executable, "-c", _READ_UNDER_A_CAP, str(tmp_path)],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]  # mismatches found
    report = json.loads(run.stdout)
    assert report["mismatch"] == 4 and report["ok"] == 0
    rows = {(c["arch"], c["code_object"]): c for c in report["checked"]}
    for c, kind in zip(wanted, kinds):
        row = rows[c["arch"], c["code_object"]]
        assert row["result"] == "mismatch" and kind in row["detail"], row
        assert c["code_object"] in row["detail"], row
