"""``python -m tests.opdb [--limit N] [--only NAME ...] [--write-baseline]``: run op_db
against the engine and print the figures (entries fully passing, samples, error_inputs
matched, silent differences), then each failing entry's first reasons."""

from __future__ import annotations

import argparse
import sys
import time

from tests.opdb.harness import real_entries, run_entry
from tests.opdb.report import summary, write_baseline


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--write-baseline", action="store_true")
    parser.add_argument("--verbose", "-v", action="store_true")
    ns = parser.parse_args()
    entries = real_entries()
    if ns.only:
        entries = [op for op in entries if op.name in ns.only]
    start = time.perf_counter()
    results = [run_entry(op, ns.limit) for op in entries]
    print(summary(results, verbose=ns.verbose or bool(ns.only)))
    print(f"{time.perf_counter() - start:.0f} s")
    if ns.write_baseline:
        write_baseline(results, ns.limit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
