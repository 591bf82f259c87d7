"""op_db figures: the summary we report and the baseline a run must not fall below."""

from __future__ import annotations

import json
from pathlib import Path

from tests.opdb.harness import EntryResult

BASELINE = Path(__file__).with_name("baseline.json")


def figures(results: list[EntryResult]) -> dict[str, int]:
    return {
        "entries": len(results),
        "entries_fully_passing": sum(r.full_pass for r in results),
        "entries_without_engine_op": sum(not r.mapped for r in results),
        "samples": sum(r.samples for r in results),
        "samples_passing": sum(r.passed for r in results),
        "samples_skipped": sum(r.skipped for r in results),
        "silent_differences": sum(r.silent for r in results),
        "engine_raises": sum(r.loud for r in results),
        "error_inputs": sum(r.errors_total for r in results),
        "error_inputs_matched": sum(len(r.errors_matched) for r in results),
    }


def summary(results: list[EntryResult], verbose: bool = False) -> str:
    f = figures(results)
    lines = [
        f"op_db: {f['entries_fully_passing']}/{f['entries']} entries pass fully "
        f"({f['entries_without_engine_op']} without an engine op); samples "
        f"{f['samples_passing']}/{f['samples']} ({f['samples_skipped']} left out: complex/bfloat16 "
        f"inputs); {f['silent_differences']} silent differences, {f['engine_raises']} engine "
        f"errors; error_inputs {f['error_inputs_matched']}/{f['error_inputs']} matched"
    ]
    for r in results:
        if r.failures and (verbose or r.mapped):
            lines.append(f"  {r.name}: {r.passed}/{r.samples}; {r.failures[0]}")
            if verbose:
                lines.extend(f"      {x}" for x in r.failures[1:6])
    lines.append("without an engine op: " + ", ".join(r.name for r in results if not r.mapped))
    return "\n".join(lines)


def _key(limit: int | None) -> str:
    return "all samples" if limit is None else f"first {limit} per dtype"


def load_baseline(limit: int | None) -> dict[str, list[str]] | None:
    """The floor recorded for runs of this ``limit`` (None: none recorded yet)."""
    if not BASELINE.exists():
        return None
    data: dict[str, dict[str, list[str]]] = json.loads(BASELINE.read_text())
    return data.get(_key(limit))


def write_baseline(results: list[EntryResult], limit: int | None) -> None:
    """Record this run as the floor for runs of its ``limit`` (others kept)."""
    data = json.loads(BASELINE.read_text()) if BASELINE.exists() else {}
    data[_key(limit)] = {
        "figures": figures(results),
        "passing": sorted(r.name for r in results if r.full_pass),
        "error_inputs": sorted(f"{r.name}#{k}" for r in results for k in r.errors_matched),
    }
    BASELINE.write_text(json.dumps(data, indent=1) + "\n")
