"""``make fuzz``: many random programs through PyTorch and the engine; prints each
difference with its program (ready to minimise into a regular test).

    python -m tests.fuzz.run --seeds 0:2000 [--features views,inplace,...] [--length 14]
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import torch

import engine
from tests.fuzz.interpreter import Backend, compare, run
from tests.fuzz.programs import ALL_FEATURES, generate


def check(seed: int, features: frozenset[str], length: int, deep: bool = False) -> str | None:
    program = generate(seed, features, length)
    theirs = run(program, Backend(torch, "torch"))
    ours = run(program, Backend(engine, "engine"))
    return compare(ours, theirs, deep)


def _differs(program: list[dict[str, Any]], deep: bool = False) -> str | None:
    return compare(
        run(program, Backend(engine, "engine")), run(program, Backend(torch, "torch")), deep
    )


def minimise(program: list[dict[str, Any]], deep: bool = False) -> list[dict[str, Any]]:
    """Drop instructions one at a time while the programs still differ (the first
    difference may change: any difference is a finding)."""
    i = len(program) - 1
    while i >= 0:
        shorter = program[:i] + program[i + 1 :]
        if _differs(shorter, deep) is not None:
            program = shorter
        i -= 1
    return program


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", default="0:500", help="start:stop")
    parser.add_argument("--features", default=",".join(sorted(ALL_FEATURES)))
    parser.add_argument("--length", type=int, default=14)
    parser.add_argument("--show", type=int, default=5, help="programs to print in full")
    parser.add_argument("--minimise", action="store_true", help="print shown programs minimised")
    parser.add_argument(
        "--deep", action="store_true", help="also compare the nodes one level below each grad_fn"
    )
    args = parser.parse_args(argv)
    start, stop = (int(x) for x in args.seeds.split(":"))
    features = frozenset(f for f in args.features.split(",") if f)
    failures = 0
    for seed in range(start, stop):
        diff = check(seed, features, args.length, args.deep)
        if diff is not None:
            failures += 1
            print(f"seed {seed}: {diff}")
            if failures <= args.show:
                program = generate(seed, features, args.length)
                if args.minimise:
                    program = minimise(program, args.deep)
                    print(f"  minimised: {_differs(program, args.deep)}")
                print(json.dumps(program))
    print(f"{stop - start - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
