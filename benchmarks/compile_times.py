#!/usr/bin/env python3
"""Compile time of each op's handler translation unit, per backend (benchmarks/BUILD_TIMES.md).

Runs, one at a time, the exact compile commands the build uses for the generated per-op
translation units of the handler libraries (python/CMakeLists.txt: python/handlers/<backend>/
<op>.cc, what a consumer instantiating one op for one backend compiles) and for the C entry points
(csrc/jax_aiter_ops.cc, row "(entry points)"), and prints a Markdown table: CPU seconds (user +
system of the compiler: what an idle core would take) and wall seconds (which a loaded machine
inflates), with the 1-minute load average before each row.

  benchmarks/compile_times.py BUILD_DIR [--repeat N] [--ops rmsnorm,gemm] [--backends cpu]

BUILD_DIR must be configured with Ninja; the commands come from `ninja -t commands`. The objects
are written to /dev/null: the build tree is left as it was.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import time

_BACKENDS = {"cpu": "_jax_aiter_cpu", "cuda": "_jax_aiter_cuda", "rocm": "_jax_aiter_rocm"}
_ENTRY = "(entry points)"
_UNIT = re.compile(r"-c (\S*/(?:handlers/\w+/([\w.]+)|csrc/jax_aiter_ops)\.cc)$")


def _commands(build: str, target: str) -> dict[str, str]:
    """op -> the compile command of python/handlers/<backend>/<op>.cc in `target`."""
    out = subprocess.run(["ninja", "-C", build, "-t", "commands", target], capture_output=True,
                         text=True)
    if out.returncode != 0:
        return {}
    found = {}
    for line in out.stdout.splitlines():
        m = _UNIT.search(line)
        if m:
            found[m.group(2) or _ENTRY] = line
    return found


def _run(command: str, build: str) -> tuple[float, float]:
    """(cpu seconds, wall seconds) of one compile, its object and dependency file thrown away."""
    command = re.sub(r" -o \S+", " -o /dev/null", command)
    command = re.sub(r" -MD -MT \S+ -MF \S+", "", command)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    subprocess.run(command, shell=True, cwd=build, check=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("build")
    p.add_argument("--repeat", type=int, default=1, help="runs per unit (the least CPU is kept)")
    p.add_argument("--ops", help="only these ops (comma-separated)")
    p.add_argument("--backends", default=",".join(_BACKENDS),
                   help="only these backends (comma-separated; default: every one built)")
    args = p.parse_args(argv)
    build = os.path.abspath(args.build)
    wanted = set(args.ops.split(",")) if args.ops else None
    chosen = [b for b in args.backends.split(",") if b in _BACKENDS]
    table = {backend: _commands(build, _BACKENDS[backend]) for backend in chosen}
    ops = sorted({op for commands in table.values() for op in commands if op != _ENTRY})
    ops += [_ENTRY]
    if wanted:
        ops = [op for op in ops if op in wanted]
    backends = [b for b in chosen if table[b]]
    if not ops or not backends:
        print(f"compile_times: no per-op handler units in {build}", file=sys.stderr)
        return 1
    print("| op | " + " | ".join(f"{b} CPU s | {b} wall s" for b in backends) + " | load |")
    print("| --- |" + " ---: | ---: |" * len(backends) + " ---: |")
    totals = {b: [0.0, 0.0] for b in backends}
    for op in ops:
        cells = []
        load = os.getloadavg()[0]
        for backend in backends:
            command = table[backend].get(op)
            if command is None:
                cells += ["", ""]
                continue
            cpu, wall = min(_run(command, build) for _ in range(args.repeat))
            totals[backend][0] += cpu
            totals[backend][1] += wall
            cells += [f"{cpu:.1f}", f"{wall:.1f}"]
        print(f"| {op} | " + " | ".join(cells) + f" | {load:.1f} |", flush=True)
    cells = [f"{totals[b][i]:.1f}" for b in backends for i in (0, 1)]
    print("| total | " + " | ".join(cells) + " | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
