"""``import client`` against ``import numpy, httpx`` (the floor it builds on), each in a
fresh interpreter, best of N: the client should cost at most 1.5x its floor.

    python bench/client_import.py [runs]
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _best(statement: str, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", statement], cwd=ROOT, check=True)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    empty = _best("pass", runs)
    floor = _best("import numpy, httpx", runs) - empty
    client = _best("import client", runs) - empty
    engine = _best("import engine", runs) - empty
    print(f"interpreter start      {empty * 1e3:7.1f} ms (subtracted below)")
    print(f"import numpy, httpx    {floor * 1e3:7.1f} ms")
    print(f"import client          {client * 1e3:7.1f} ms  ({client / floor:.2f}x numpy+httpx)")
    print(f"import engine          {engine * 1e3:7.1f} ms  (for comparison)")


if __name__ == "__main__":
    main()
