"""jax-aiter-check-aiter against a directory laid out like an AITER checkout's hsa/, holding our
own ABI twins of AITER's code objects (compiled for gfx942 and gfx950 by the build, one code object
per twin source; JAX_AITER_TWIN_CO_GFX942 / _GFX950 list "aiter_<family>=<path>" entries joined by
"|"): every code object our tables name is found and matches; then one argument of one file is
moved and the tool must say so and fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

import jax_aiter

TWINS = {arch: dict(e.split("=", 1) for e in os.environ.get(f"JAX_AITER_TWIN_CO_{arch.upper()}",
                                                          "").split("|") if e)
         for arch in ("gfx942", "gfx950")}


def _twin_of(family: str) -> str:
    """The twin source of a catalog family: fmha_v3_fwd and fmha_v3_bwd share aiter_fmha_v3."""
    return "aiter_" + family.removesuffix("_fwd").removesuffix("_bwd")


def _tool(root):
    return subprocess.run([sys.executable, "-m", "jax_aiter.tools", "check-aiter", str(root),
                           "--require-all"], capture_output=True, text=True,
                          env={**os.environ, "JAX_PLATFORMS": "cpu"})


def _move_argument(path, name: bytes, old: int, new: int):
    """Moves argument `name` from offset `old` to `new` (uint16 in msgpack: 0xcd hi lo) in every
    kernel's metadata of the code object, as a compiler would have if the struct had changed. (One
    file of the layout: the other paths hold unchanged copies.)"""
    data = bytearray(open(path, "rb").read())
    key = b"\xa7.offset\xcd" + old.to_bytes(2, "big")
    moved = 0
    at = data.find(b"\xa4" + name)  # the argument's name, a fixstr
    while at >= 0:
        # The argument's map holds its offset within a few dozen bytes either side of its name.
        lo = max(0, at - 64)
        i = data.find(key, lo, at + 64)
        assert i >= 0, "offset entry not found near the argument's name"
        data[i + len(key) - 2:i + len(key)] = new.to_bytes(2, "big")
        moved += 1
        at = data.find(b"\xa4" + name, at + 1)
    assert moved > 0
    os.unlink(path)  # a new file: the other paths may be links to the same one
    open(path, "wb").write(bytes(data))


def _place(src, dst):
    """A regular file at dst with src's bytes: a hard link where the filesystem allows (the fmoe
    twin stands in for some 800 code objects of a few MiB each), else a copy."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


@pytest.mark.skipif(not all(TWINS.values()), reason="the build did not compile the gfx twins "
                                                    "(no clang-22)")
def test_check_aiter_on_a_twin_layout_and_a_moved_argument(tmp_path):
    (tmp_path / "hsa").mkdir()
    wanted = jax_aiter.check_aiter(str(tmp_path))["checked"]  # every code object, all missing
    n = len(wanted)
    assert n >= 19 + 217  # BF16 GEMM's rows and the v3 attention kernels at least
    for c in wanted:
        dst = tmp_path / "hsa" / c["arch"] / c["code_object"]
        dst.parent.mkdir(parents=True, exist_ok=True)
        _place(TWINS[c["arch"]][_twin_of(c["family"])], dst)
    ok = _tool(tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert f"{n} ok, 0 missing, 0 mismatch" in ok.stdout, ok.stdout

    # One run sees both faults (each run reads every code object: CI's time): a moved argument and
    # a missing code object.
    moved = tmp_path / "hsa/gfx942/bf16gemm/bf16gemm_fp32bf16_tn_32x64_splitk_clean.co"
    _move_argument(moved, b"Kdim", 256, 272)
    (tmp_path / "hsa/gfx950/bf16gemm/bf16gemm_bf16_tn_256x256.co").unlink()
    bad = _tool(tmp_path)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert f"{n - 2} ok, 1 missing, 1 mismatch" in bad.stdout, bad.stdout
    assert "mismatch gfx942 bf16gemm/bf16gemm_fp32bf16_tn_32x64_splitk_clean.co" in bad.stdout
    assert "argument 'Kdim': expected offset 272 size 4 (code object), got offset 256" in bad.stdout
