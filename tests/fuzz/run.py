"""``make fuzz``: many random programs through PyTorch and the engine; prints each
difference with its program (ready to minimise into a regular test).

    python -m tests.fuzz.run --seeds 0:2000 [--features views,inplace,...] [--length 14]
"""

from __future__ import annotations

import argparse
import json
import sys

import torch

import engine
from tests.fuzz.interpreter import Backend, compare, run
from tests.fuzz.programs import ALL_FEATURES, generate


def check(seed: int, features: frozenset[str], length: int) -> str | None:
    program = generate(seed, features, length)
    theirs = run(program, Backend(torch, "torch"))
    ours = run(program, Backend(engine, "engine"))
    return compare(ours, theirs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", default="0:500", help="start:stop")
    parser.add_argument("--features", default=",".join(sorted(ALL_FEATURES)))
    parser.add_argument("--length", type=int, default=14)
    parser.add_argument("--show", type=int, default=5, help="programs to print in full")
    args = parser.parse_args(argv)
    start, stop = (int(x) for x in args.seeds.split(":"))
    features = frozenset(f for f in args.features.split(",") if f)
    failures = 0
    for seed in range(start, stop):
        diff = check(seed, features, args.length)
        if diff is not None:
            failures += 1
            print(f"seed {seed}: {diff}")
            if failures <= args.show:
                print(json.dumps(generate(seed, features, args.length)))
    print(f"{stop - start - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
