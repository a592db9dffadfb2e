#!/usr/bin/env python3
"""Compares the kernel-argument metadata of our AITER twins with AITER's own.

For every row of a family's row tables (the CSVs beside its header, e.g.
include/jax_aiter/kernels/shared/aiter_bf16gemm.csv for aiter_bf16gemm.h; cmake/JaxAiterRows.cmake)
the twin code object (kernels_co/<family>.twin.cpp, built with -fhip-kernel-arg-name) must hold a
kernel of the row's symbol whose named arguments (pad and pad<digits> left out) and .kernarg_segment_size
equal the lines kernel-arguments.txt records for AITER's code object of that row on that arch.
Rows AITER ships only for the other arch are compared with that arch's line. A code object whose
arguments are all anonymous (AITER's compiler-made gfx942 INT8 112x256) is compared by its segment
size alone. A family may have several lists (aiter_fmha_v3: forward, odo, dqdkdv, dq post-passes);
its rows each name one arch's code object (exactly one of on_gfx942, on_gfx950 set) and are
checked in that arch's twin only.

In place of kernel-arguments.txt, an AITER checkout (a directory holding hsa/<arch>/...) may be
given: each row's code object is then read there, with the same llvm-readelf (the families that
file does not list, e.g. aiter_topksoftmax).

Usage: check_twin_kernargs.py FAMILY_HEADER KERNEL_ARGUMENTS_TXT|AITER_ROOT ARCH=CODE_OBJECT [...]
       (llvm-readelf-22 on PATH, or LLVM_READELF=...). Exit status 1 on any difference.
"""
import csv
import glob
import os
import re
import subprocess
import sys


def rows(header):
    """[(symbol, code_object, only_arch or None)] of every row of the family whose header is
    `header` (<family>.h: its rows are <family>.csv or <family>.<list>.csv beside it)."""
    family = os.path.splitext(header)[0]
    files = sorted(glob.glob(family + ".csv") + glob.glob(family + ".*.csv"))
    if not files:
        sys.exit(f"check_twin_kernargs: no row CSV for {header}")
    out = []
    for path in files:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                only = None
                if row["code_object"].startswith("fmha_") and \
                        (row["on_gfx942"], row["on_gfx950"]) in (("1", "0"), ("0", "1")):
                    only = "gfx942" if row["on_gfx942"] == "1" else "gfx950"
                out.append((row["symbol"], row["code_object"], only))
    return out


def aiter_lines(path):
    """{(arch, code_object): (symbol, segment_size, [(name, offset, size)])}"""
    out = {}
    lines = open(path).read().splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"## hsa/(\w+)/(\S+)$", line)
        if not m:
            continue
        sym = re.match(r"symbol (\S+)\.kd kernarg_segment_size (\d+)", lines[i + 1])
        args = [(n, int(o), int(s)) for n, o, s in re.findall(r"(\w+)@(\d+):(\d+)", lines[i + 2])]
        out[(m.group(1), m.group(2))] = (sym.group(1), int(sym.group(2)), args)
    return out


def checkout_lines(root, table):
    """aiter_lines' answer read from an AITER checkout's own code objects (the rows' files that
    exist under root/hsa/<arch>/)."""
    out = {}
    for arch in ("gfx942", "gfx950"):
        for _, code_object, _ in table:
            path = os.path.join(root, "hsa", arch, code_object)
            if (arch, code_object) in out or not os.path.isfile(path):
                continue
            for symbol, (size, args) in our_kernels(path).items():
                out[(arch, code_object)] = (symbol, size, args)
    return out


def our_kernels(code_object):
    """{symbol: (segment_size, [(name, offset, size)])} from llvm-readelf --notes."""
    readelf = os.environ.get("LLVM_READELF", "llvm-readelf-22")
    notes = subprocess.run([readelf, "--notes", code_object], check=True, capture_output=True,
                           text=True).stdout
    out = {}
    for block in re.split(r"\n  - \.", notes)[1:]:
        name = re.search(r"\n    \.name:\s+(\S+)", block)
        size = re.search(r"\n    \.kernarg_segment_size:\s+(\d+)", block)
        if not name or not size:
            continue
        args = []
        for arg in re.split(r"\n      - ", block)[1:]:
            n = re.search(r"\.name:\s+(\S+)", arg)
            o = re.search(r"\.offset:\s+(\d+)", arg)
            s = re.search(r"\.size:\s+(\d+)", arg)
            if n and not re.fullmatch(r"pad\d*", n.group(1)):
                args.append((n.group(1), int(o.group(1)), int(s.group(1))))
        out[name.group(1)] = (int(size.group(1)), args)
    return out


def main(argv):
    if len(argv) < 4:
        print(__doc__)
        return 2
    table = rows(argv[1])
    aiter = checkout_lines(argv[2], table) if os.path.isdir(argv[2]) else aiter_lines(argv[2])
    failures = 0
    for spec in argv[3:]:
        arch, co = spec.split("=", 1)
        ours = our_kernels(co)
        for symbol, code_object, only in table:
            if only is not None and only != arch:
                continue
            ref = aiter.get((arch, code_object))
            where = arch
            if ref is None:  # AITER ships this row on the other arch only
                other = [k for k in aiter if k[1] == code_object]
                if not other:
                    print(f"FAIL {arch} {symbol}: no AITER line for {code_object}")
                    failures += 1
                    continue
                where = other[0][0]
                ref = aiter[other[0]]
            ref_symbol, ref_size, ref_args = ref
            if ref_symbol != symbol:
                print(f"FAIL {arch} {symbol}: AITER's symbol is {ref_symbol}")
                failures += 1
                continue
            if symbol not in ours:
                print(f"FAIL {arch} {symbol}: not in {co}")
                failures += 1
                continue
            size, args = ours[symbol]
            # kernel-arguments.txt files the metadata's kernel .name after anonymous arguments.
            ref_args = [a for a in ref_args if a[0] != ref_symbol]
            if not ref_args:  # anonymous arguments: only the segment can be compared
                if size != ref_size:
                    print(f"FAIL {arch} {symbol}: ours {size} bytes, AITER ({where}) {ref_size}")
                    failures += 1
                else:
                    print(f"PASS {arch} {symbol}: anonymous arguments in AITER's code object, "
                          f"segment {size}")
                continue
            if size != ref_size or args != ref_args:
                print(f"FAIL {arch} {symbol}: ours {size} {args}\n  AITER ({where}) {ref_size} {ref_args}")
                failures += 1
            else:
                note = "" if where == arch else f" (AITER ships it for {where} only)"
                print(f"PASS {arch} {symbol}: {len(args)} arguments, segment {size}{note}")
    print(f"{failures} difference(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
