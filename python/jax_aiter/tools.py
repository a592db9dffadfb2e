"""The two command-line tools, installed with the package (also callable as functions):

  jax-aiter-plan        how a call is dispatched on a given device, with no GPU: every tier's
                        verdict (taken, or why not), the chosen kernels and code objects, grids,
                        blocks, split, workspace pieces, memsets, and each packed argument struct
                        field by field (name, offset, value), as JSON.
  jax-aiter-check-aiter for every AITER code object our tables name: found or missing in an AITER
                        checkout, and whether its metadata matches the struct we launch it with;
                        exit status 1 on any mismatch.

  jax-aiter-plan gemm --m 4096 --n 4096 --k 4096 --arch gfx942 --cus 304
  jax-aiter-plan rms_norm --shape 16384,4096 --arch sm_90 [--backward] [--fused]
  jax-aiter-plan attention --b 4 --sq 4096 --hq 32 --hk 8 --d 128 --causal --arch gfx942
                 [--sk N] [--dv N] [--varlen] [--backward] [--bias] [--dropout P] [--window L,R]
  jax-aiter-plan gemm_i8|gemm_fp8_blockscale|gemm_fp8_mi350|gemm_fp4|flatmm_fp8 --m M --n N --k K
                 --arch gfx950 [--kernel NAME] [--splitk S] [--bias] [--plain-b]
                 [--out-dtype float16]
  jax-aiter-plan aiter.gemm --call '{"operands": {...}, "attributes": {...}}' --arch gfx950
  jax-aiter-check-aiter /path/to/aiter
"""

from __future__ import annotations

import argparse
import collections
import json
import sys

import jax_aiter
from jax_aiter import _ffi


def _commands() -> dict:
    """jax-aiter-plan's commands: the PLAN_COMMANDS of every op module (jax_aiter/__init__.py
    finds them), name -> (options the call needs, plan(parser, args) -> (target, operands,
    attributes))."""
    out = {}
    for module in jax_aiter._op_modules():
        out.update(getattr(module, "PLAN_COMMANDS", {}))
    return out


def plan(target: str, operands: dict, attributes: dict, arch: str, cus: int = 0) -> dict:
    """Library form of jax-aiter-plan (see _ffi.plan)."""
    return _ffi.plan(target, operands, attributes, arch, cus)


def check_aiter(root: str) -> dict:
    """Library form of jax-aiter-check-aiter (see _ffi.check_aiter)."""
    return _ffi.check_aiter(root)


def _dispatch(args) -> dict:
    out = {"tier": args.tier}
    if args.asm_arch:
        out["asm_arch"] = args.asm_arch
    if args.asm_cus:
        out["asm_cus"] = args.asm_cus
    return out


def _call_operands(call) -> tuple[dict, dict]:
    """The operands and attributes of a --call description, or a ValueError saying what is
    wrong with it."""
    form = '{"operands": {"a": {"dtype": "bf16", "shape": [M, K]}, "bias": null, ...}, ' \
           '"attributes": {...}}'
    if not isinstance(call, dict) or not isinstance(call.get("operands", {}), dict):
        raise ValueError(f"--call: expected {form}, got {json.dumps(call)[:200]}")
    operands = {}
    for name, v in call.get("operands", {}).items():
        if v is None:
            operands[name] = None
            continue
        if not isinstance(v, dict) or not isinstance(v.get("dtype"), str) or \
                not isinstance(v.get("shape"), list):
            raise ValueError(f"--call: operand {name}: expected {{\"dtype\": \"bf16\", "
                             f"\"shape\": [...]}} or null, got {json.dumps(v)[:200]}")
        operands[name] = (_numpy_name(v["dtype"]), v["shape"])
    attributes = call.get("attributes", {})
    if not isinstance(attributes, dict):
        raise ValueError(f"--call: attributes: expected an object, got {json.dumps(attributes)}")
    return operands, attributes


def _check_sizes(p, args) -> None:
    """Refuses what no call can have, before any description is built: a dtype numpy does not
    know, a head dim below 1, a CU count outside 0..4096 (the asm_cus attribute's range)."""
    import numpy as np
    for flag, value in (("--dtype", args.dtype), ("--out-dtype", args.out_dtype)):
        if value is None:
            continue
        try:
            np.dtype(value)
        except TypeError:
            p.error(f"{flag}: unknown dtype {value!r} (e.g. bfloat16, float16, float32)")
    for flag, value in (("--cus", args.cus), ("--asm-cus", args.asm_cus)):
        if not 0 <= value <= 4096:
            p.error(f"{flag}: expected 0 (the arch's usual part) to 4096, got {value}")
    for flag, value in (("--b", args.b), ("--sq", args.sq), ("--sk", args.sk),
                        ("--hq", args.hq), ("--hk", args.hk), ("--d", args.d), ("--dv", args.dv)):
        if value is not None and value < 1:
            p.error(f"{flag}: expected an int >= 1, got {value}")


def plan_main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="jax-aiter-plan", description=__doc__.split("\n\n")[0])
    p.add_argument("op", help="gemm, rms_norm, or a custom-call target (with --call)")
    p.add_argument("--arch", required=True, help="gfx942, gfx950, sm_90 or host")
    p.add_argument("--cus", type=int, default=0, help="compute units (0: the arch's usual part)")
    p.add_argument("--call", help="a call description in JSON (any target)")
    p.add_argument("--tier", default="auto")
    p.add_argument("--asm-arch", help="plan AITER's kernels for this AMD arch (their twins run)")
    p.add_argument("--asm-cus", type=int, default=0)
    g = p.add_argument_group("gemm")
    g.add_argument("--m", type=int)
    g.add_argument("--n", type=int)
    g.add_argument("--k", type=int)
    g.add_argument("--dtype", default="bfloat16")
    g.add_argument("--out-dtype")
    g.add_argument("--bias", action="store_true")
    g.add_argument("--kernel")
    g.add_argument("--splitk", type=int)
    r = p.add_argument_group("rms_norm")
    r.add_argument("--shape", help="x's shape, e.g. 16384,4096")
    r.add_argument("--epsilon", type=float, default=1e-6)
    r.add_argument("--fused", action="store_true", help="rms_norm_with_add")
    r.add_argument("--backward", action="store_true")
    t = p.add_argument_group("attention")
    t.add_argument("--b", type=int, default=1, help="batch (varlen: sequences)")
    t.add_argument("--sq", type=int)
    t.add_argument("--sk", type=int, help="default: sq")
    t.add_argument("--hq", type=int)
    t.add_argument("--hk", type=int, help="default: hq")
    t.add_argument("--d", type=int)
    t.add_argument("--dv", type=int, help="default: d")
    t.add_argument("--causal", action="store_true")
    t.add_argument("--window", default="-1,-1", help="left,right (-1: unbounded)")
    t.add_argument("--varlen", action="store_true", help="b sequences of sq (sk) rows, packed")
    t.add_argument("--dropout", type=float, default=0.0)
    t.add_argument("--deterministic", action="store_true")
    for module in jax_aiter._op_modules():  # options an op alone has
        if hasattr(module, "add_plan_arguments"):
            module.add_plan_arguments(p.add_argument_group(module.__name__.split(".")[-1]))
    commands = _commands()
    args = p.parse_args(argv)
    if not args.call:
        _check_sizes(p, args)
    try:
        if args.call:
            target = args.op
            operands, attributes = _call_operands(json.loads(args.call))
        elif args.op in commands:
            needs, plan_command = commands[args.op]
            if any(getattr(args, option) is None for option in needs):
                options = [f"--{option}" for option in needs]
                p.error(f"{args.op} needs {', '.join(options[:-1])}"
                        f"{' and ' if len(options) > 1 else ''}{options[-1]}")
            target, operands, attributes = plan_command(p, args)
        else:
            p.error(f"unknown op {args.op!r}: {', '.join(sorted(commands))}, or a target with "
                    "--call")
        attributes = {**attributes, **_dispatch(args)}
        result = plan(target, operands, attributes, args.arch, args.cus)
    except ValueError as e:
        print(f"jax-aiter-plan: {e}", file=sys.stderr)
        return 2
    json.dump(result, sys.stdout, indent=1)
    print()
    return 0


def _numpy_name(dtype: str) -> str:
    """Our dtype names (bf16, f32, ...) as numpy spells them, for describe_call."""
    return {"bf16": "bfloat16", "f16": "float16", "f32": "float32", "i8": "int8",
            "i32": "int32", "u8": "uint8"}.get(dtype, dtype)


def check_aiter_main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="jax-aiter-check-aiter",
                                description="Checks an AITER checkout's code objects against the "
                                            "argument structs jax_aiter launches them with.")
    p.add_argument("root", help="the AITER checkout (the folder holding hsa/)")
    p.add_argument("--json", action="store_true", help="print the whole report as JSON")
    p.add_argument("--require-all", action="store_true", help="a missing code object fails too")
    args = p.parse_args(argv)
    try:
        report = check_aiter(args.root)
    except ValueError as e:  # not an AITER checkout, or no metadata reader in this build
        print(f"jax-aiter-check-aiter: {e}", file=sys.stderr)
        return 2
    if args.json:
        json.dump(report, sys.stdout, indent=1)
        print()
    else:
        for c in report["checked"]:
            if c["result"] != "ok":
                print(f"{c['result']:8} {c['arch']} {c['code_object']}: {c['detail']}")
        # Which argument layout each family's code objects declare (AITER's structs change
        # between versions): one line per (family, arch, layout, declared kernarg bytes).
        layouts = collections.Counter(
            (c["family"], c["arch"], c.get("abi", ""), c.get("declared", 0))
            for c in report["checked"] if c["result"] == "ok")
        for (family, arch, abi, declared), n in sorted(layouts.items()):
            print(f"layout   {arch} {family}: {n} x {abi} (declares {declared} bytes)")
        print(f"{report['ok']} ok, {report['missing']} missing, {report['mismatch']} mismatch "
              f"({len(report['checked'])} code objects named by jax_aiter's tables, under "
              f"{report['root']}/hsa)")
    failed = report["mismatch"] > 0 or (args.require_all and report["missing"] > 0)
    return 1 if failed else 0


if __name__ == "__main__":  # python -m jax_aiter.tools plan|check-aiter ...
    tool = sys.argv[1] if len(sys.argv) > 1 else ""
    mains = {"plan": plan_main, "check-aiter": check_aiter_main}
    if tool not in mains:
        sys.exit("usage: python -m jax_aiter.tools plan|check-aiter ...")
    sys.exit(mains[tool](sys.argv[2:]))
