"""The tools on input they must refuse: jax-aiter-check-aiter (and set_aiter_root) on paths that
are not an AITER checkout or files that are not code objects. Each refusal is a message naming the
argument and a non-zero exit status, never a traceback, a hang or an abort.

The CLI runs in-process (``check_aiter_main``, what the console script calls); the reads of
things named like code objects run in a subprocess under an address-space cap and a timeout, so a
reader that slurps /dev/zero or waits on a FIFO fails the test instead of the run.
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


# ---- jax-aiter-check-aiter, set_aiter_root ----------------------------------------------------

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
