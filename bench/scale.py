"""What one client's request costs while other clients hold a lot: a single /ops step
with 1, 1,000 and 10,000 idle sessions held, printed as ratios against the 1-session
case (a shared service must not slow down for everyone when some users hold much).

    .venv/bin/python bench/scale.py            # 1, 1,000, 10,000 sessions (~1 min)
    .venv/bin/python bench/scale.py --quick    # 1, 100, 1,000 (smoke run)

One gradserve process (``python -m service serve``, as bench/service.py starts it) on a
free 127.0.0.1 port, stopped by pid. The idle sessions are added in steps to the same
server: empty, but every tenth holds a leaf ``x`` (8 floats) and a retained graph of
100 nodes (99 chained muls and a sum, ``backward(retain_graph=True)`` run once), the
pattern that made every other client's budget check walk graphs. At each size, rows:

  /ops step      POST /v1/sessions/m/ops {"out": "y", "op": "mul", "args": ["x", 2.0]}
                 on the measuring session: its rate, and the server's CPU per request
  create+delete  POST /v1/sessions then DELETE it (what the expiry sweep and the count
                 of a key's sessions cost)
  list           GET /v1/sessions of a key holding 2 sessions, beside the others' (an
                 API key per 100 idle sessions)

and the server's RSS. The ratios (CPU per request at N sessions / at 1) should stay
near 1.0; the script prints them and never asserts.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import sys
import time
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("bench_service", os.path.join(_HERE, "service.py"))
assert _spec is not None and _spec.loader is not None
bs: Any = importlib.util.module_from_spec(_spec)
sys.modules["bench_service"] = bs
_spec.loader.exec_module(bs)

KEYS = [f"bench-key-{i}" for i in range(100)]  # the idle sessions' owners, and the lister's


def _req(method: str, port: int, path: str, body: Any = None, key: str = KEYS[0]) -> bytes:
    raw = bs.request_bytes(method, port, path, None if body is None else bs._json(body))
    head, sep, rest = raw.partition(b"\r\n")
    return head + sep + f"Authorization: Bearer {key}\r\n".encode() + rest


GRAPH = {
    "steps": [{"out": "h0", "expr": "x * 1.0"}]
    + [{"out": f"h{i}", "expr": f"h{i - 1} * 1.01"} for i in range(1, 99)]
    + [
        {"out": "loss", "expr": "h98.sum()"},
        {"backward": {"tensors": "loss", "retain_graph": True}},
    ]
}
LEAF = {"data": [1.0] * 8, "requires_grad": True}


async def populate(port: int, start: int, stop: int, connections: int = 8) -> None:
    """Idle sessions ``i0000..`` from ``start`` to ``stop``, spread over the keys."""

    async def worker(c: Any, ids: range) -> None:
        for i in ids:
            key = KEYS[i % len(KEYS)]
            name = f"i{i:05d}"
            await c.send(_req("POST", port, "/v1/sessions", {"name": name}, key), 201)
            if i % 10 == 0:
                await c.send(_req("PUT", port, f"/v1/sessions/{name}/tensors/x", LEAF, key))
                await c.send(_req("POST", port, f"/v1/sessions/{name}/batch", GRAPH, key))

    conns = [await bs.Conn.open(port) for _ in range(connections)]
    try:
        await asyncio.gather(
            *(worker(c, range(start + k, stop, connections)) for k, c in enumerate(conns))
        )
    finally:
        for c in conns:
            c.close()


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


async def measure(port: int, pid: int, seconds: float, rounds: int) -> dict[str, float]:
    """CPU seconds per request of the server for each row (best of ``rounds``)."""
    step = _req("POST", port, "/v1/sessions/m/ops", {"out": "y", "op": "mul", "args": ["x", 2.0]})
    counter = [0]

    async def ops(c: Any, i: int) -> None:
        await c.send(step, 201)

    async def churn(c: Any, i: int) -> None:
        counter[0] += 1
        name = f"t{i}-{counter[0]}"
        await c.send(_req("POST", port, "/v1/sessions", {"name": name}), 201)
        await c.send(_req("DELETE", port, f"/v1/sessions/{name}"), 204)

    listing = _req("GET", port, "/v1/sessions", key="bench-lister")

    async def lister(c: Any, i: int) -> None:
        await c.send(listing, 200)

    out: dict[str, float] = {}
    for label, unit, per in (
        ("/ops step", ops, 1),
        ("create+delete", churn, 2),
        ("list", lister, 1),
    ):
        best_cpu, best_rate = float("inf"), 0.0
        for _ in range(rounds):
            units, elapsed, _lat, cpu = await bs.load(
                port, unit, connections=4, seconds=seconds, warmup=0.3, cpu_pid=pid
            )
            best_cpu = min(best_cpu, cpu / max(units * per, 1))
            best_rate = max(best_rate, units * per / elapsed)
        out[label] = best_cpu
        out[label + " rate"] = best_rate
    return out


async def main_async(sizes: list[int], seconds: float, rounds: int) -> None:
    port = bs.free_port()
    env = {
        "GRADSERVE_MAX_SESSIONS": str(max(sizes) + 100),
        "GRADSERVE_KEY_MAX_SESSIONS": str(max(sizes)),
        "GRADSERVE_API_KEYS": ",".join([*KEYS, "bench-lister"]),
        "GRADSERVE_MAX_TOTAL_BYTES": str(2**40),
        "GRADSERVE_KEY_MAX_BYTES": str(2**40),
    }
    argv = [sys.executable, "-m", "service", "serve", "--host", bs.HOST, "--port", str(port)]
    server = bs.Server("gradserve", argv, port, "/healthz", env, root=bs.ROOT)
    pid = server.proc.pid
    try:
        c = await bs.Conn.open(port)
        await c.send(_req("POST", port, "/v1/sessions", {"name": "m"}), 201)
        await c.send(_req("PUT", port, "/v1/sessions/m/tensors/x", LEAF))
        for name in ("l1", "l2"):
            await c.send(_req("POST", port, "/v1/sessions", {"name": name}, "bench-lister"), 201)
        c.close()
        held = 1
        table: list[tuple[int, dict[str, float], float]] = []
        for n in sizes:
            t0 = time.perf_counter()
            await populate(port, held - 1, n - 1)
            held = n
            print(f"  {n} sessions held (added in {time.perf_counter() - t0:.1f} s)", flush=True)
            table.append((n, await measure(port, pid, seconds, rounds), rss_mb(pid)))
        base = table[0][1]
        rows = ("/ops step", "create+delete", "list")
        print(
            f"\n{'sessions':>9} " + "".join(f"{r + ' us/req':>22}" for r in rows) + f"{'RSS MB':>9}"
        )
        for n, m, rss in table:
            cells = "".join(f"{m[r] * 1e6:>11.0f} ({m[r] / base[r]:4.2f}x)   " for r in rows)
            print(f"{n:>9} {cells}{rss:>9.0f}")
        print(
            "\nrates (req/s): "
            + json.dumps({n: {r: round(m[r + " rate"]) for r in rows} for n, m, _ in table})
        )
        print("server CPU per request against the 1-session case; near 1.0x is the target")
    finally:
        server.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="1, 100, 1,000 sessions, short rounds")
    ap.add_argument("--seconds", type=float, default=None)
    ap.add_argument("--sizes", default=None, help="comma-separated session counts")
    args = ap.parse_args()
    sizes = [1, 100, 1000] if args.quick else [1, 1000, 10000]
    if args.sizes:
        sizes = [int(n) for n in args.sizes.split(",")]
    seconds = args.seconds or (0.5 if args.quick else 1.5)
    asyncio.run(main_async(sizes, seconds, rounds=1 if args.quick else 3))


if __name__ == "__main__":
    main()
