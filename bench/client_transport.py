"""The Python client's tensor transfers: JSON (data lists / base64) against raw bytes.

    .venv/bin/python bench/client_transport.py            # about half a minute
    .venv/bin/python bench/client_transport.py --quick    # a few seconds, rough
    .venv/bin/python bench/client_transport.py --sizes 4096,16384 --rounds 60

One server (``LocalServer``: ``python -m service serve`` on a free 127.0.0.1 port,
stopped by pid). For each size, through ``client.Session`` end to end (encoding,
HTTP, server work, decoding), the median time of

  put    ``s.tensor(values, name="x")``       (PUT of a leaf, JSON or binary body)
  get    ``x.numpy()`` on a fresh handle       (GET of the values)
  grad   ``x.grad.numpy()`` after ``invalidate()`` (GET of the grad)

with ``binary=False`` (the JSON path: lists below 256 elements, base64 from there on)
and ``binary=True`` (raw ``application/octet-stream`` bytes), measured in alternation
round after round so that load from elsewhere on a shared machine shifts both alike.
Times are the best of the rounds (what the path costs when nothing else interferes;
medians on a shared machine mostly measure the neighbours) and the median beside it.
The ratio column is JSON time / binary time, best of rounds (> 1: raw bytes are faster). The client
uses raw bytes from ``client.wire.BINARY_MIN_ELEMENTS`` elements on (printed last).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from client import LocalServer, Session, wire  # noqa: E402


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def cases(s: Session, values: np.ndarray) -> dict[str, Callable[[], object]]:
    x = s.tensor(values, name="x", requires_grad=True)
    (x * x).sum().backward()  # x.grad = 2x

    def put() -> object:
        return s.tensor(values, name="p")

    def get() -> object:
        s.invalidate()
        return s["x"].numpy()

    def grad() -> object:
        s.invalidate()
        return s["x"].grad.numpy()

    return {"put": put, "get": get, "grad": grad}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer sizes and rounds")
    ap.add_argument("--sizes", help="comma-separated element counts (instead of the default)")
    ap.add_argument("--rounds", type=int, help="rounds per size (default 25, 5 with --quick)")
    opts = ap.parse_args()
    sizes = [1, 4096, 65536] if opts.quick else [1, 256, 1024, 4096, 16384, 65536, 2**18, 2**20]
    if opts.sizes:
        sizes = [int(n) for n in opts.sizes.split(",")]
    rounds = opts.rounds or (5 if opts.quick else 25)
    rng = np.random.default_rng(0)
    env = {"GRADSERVE_LOG_LEVEL": "warning", "PYTHONPATH": str(ROOT)}
    with LocalServer(cwd=ROOT, env=env) as url:
        json_s = Session(url, binary=False)
        bin_s = Session(url, name=json_s.name, create=False, binary=True)
        # the grad reads go through a metadata GET first in both (a fresh handle): the
        # same fixed cost on both sides, as a user reading x.grad of s["x"] pays it
        print(
            f"{'elements':>9} {'case':>5} {'json ms':>9} {'binary ms':>10} {'ratio':>6}"
            f"   {'(medians: json':>14} {'binary)':>8}"
        )
        for n in sizes:
            values = rng.standard_normal(n).astype(np.float32)
            runs = {"json": cases(json_s, values), "binary": cases(bin_s, values)}
            times: dict[tuple[str, str], list[float]] = {}
            for _ in range(rounds):
                for case in ("put", "get", "grad"):
                    for way in ("json", "binary"):  # alternated: shared-machine noise hits both
                        times.setdefault((case, way), []).append(timed(runs[way][case]))
            for case in ("put", "get", "grad"):
                j, b = min(times[(case, "json")]) * 1e3, min(times[(case, "binary")]) * 1e3
                jm = statistics.median(times[(case, "json")]) * 1e3
                bm = statistics.median(times[(case, "binary")]) * 1e3
                print(
                    f"{n:>9} {case:>5} {j:>9.3f} {b:>10.3f} {j / b:>6.2f}   {jm:>14.3f} {bm:>8.3f}"
                )
        json_s.delete()
        json_s.close()
        bin_s.close()
    print(f"client.wire.BINARY_MIN_ELEMENTS = {wire.BINARY_MIN_ELEMENTS}")


if __name__ == "__main__":
    main()
