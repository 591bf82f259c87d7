"""HTTP benchmarks of gradserve against anchors measured in the same run (issue 3).

    .venv/bin/python bench/service.py            # full run (about a minute and a half)
    .venv/bin/python bench/service.py --quick    # smoke run (~15 s; small sizes, rough)
    .venv/bin/python bench/service.py --profile  # plus cProfile of gradserve under two loads

Two servers run as their own processes on free 127.0.0.1 ports, with the same
uvicorn settings as ``service/cli.py`` (uvloop, httptools, no access log, no
server header), and are stopped by pid (they also die with this script):

  gradserve  ``python -m service serve``;
  bare       this file with ``--serve-bare``: a plain FastAPI app whose routes do
             the same work without the service around them (a dict lookup and a
             small numpy multiply; raw bytes in and out): the ceiling of the stack.

The load generator is this process: keep-alive connections, each a closed loop of
requests written straight onto an asyncio stream (a minimal HTTP/1.1 client:
httpx costs more per request than the servers do, and the generator would measure
itself; the ``ping`` row shows what generator + loopback + uvicorn manage at all).
Request bodies are encoded before the clock starts; responses are read whole but
not decoded (the client's decoding cost is printed separately).

Rows (req/s counts requests; p50/p99 are per request):

  ping            bare GET /ping
  bare step       bare POST: dict lookup + multiply of a 3-element float32 array
  /ops step       gradserve POST /ops {"out": "y", "op": "mul", "args": ["x", 2.0]}
  /backward       retain_graph=true on a 100-node graph (99 chained muls and a sum)
  /ops chain      100 chained steps h1 = h0 * 1.01, ..., one /ops request each
  /batch 100      the same 100 steps in one /batch request
  /batch 1        the first of those steps alone in a /batch (what a request costs)
  engine chain    the same 100 recorded muls in this process on the engine
  engine train    one SGD iteration of an MLP 784-256-256-10, batch 64, float32, in this
                  process on the engine (bench/engine.py's MLP)
  /batch train    the same iteration as one /batch request: forward steps, backward,
                  an assign per parameter (``p - lr * p.grad``), zero_grad, loss fetched;
                  the data uploaded once, one connection
  up/down raw     bare PUT/GET of N float32 as raw bytes (application/octet-stream)
  up/down b64     gradserve PUT/GET of N float32 as base64
  up/down json    gradserve PUT/GET of N float32 as JSON lists

Small requests run over ``--connections`` connections, transfers over one. The cases
of a group (the anchor with what it anchors) are measured in turn, several rounds,
so that load from elsewhere on a shared machine shifts them alike.

Targets (issues 3 and 10): /ops step >= 60% of the bare step's rate; base64 transfer
within 3x of raw bytes; /batch >= 20x faster than the same steps as single requests;
/batch train within 1.3x of engine train's time. For the record: a step's server cost
inside a batch ((1/rate(/batch 100) - 1/rate(/batch 1)) / 99) against the engine's own
cost per mul (engine chain). ``--only store`` measures the durable stores. The
script prints ratios and met/missed, and never asserts. Compare ratios within one
run, not absolute numbers across runs.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import importlib.util
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

# one thread for numpy everywhere: the servers get one core each, the generator one
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

_HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(_HERE)
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402
import orjson  # noqa: E402
from fastapi import FastAPI, Request, Response  # noqa: E402 - the bare app's annotations

HOST = "127.0.0.1"
HAS_UVLOOP = importlib.util.find_spec("uvloop") is not None
HAS_HTTPTOOLS = importlib.util.find_spec("httptools") is not None


# --- the bare app: the same work without the service ---------------------------------------------


def bare_app() -> Any:
    """A plain FastAPI app: the anchors. Bodies are parsed and rendered with orjson, as
    gradserve does, so the difference to gradserve is the service itself."""
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    store: dict[str, dict[str, np.ndarray]] = {}

    @app.get("/ping")
    async def ping() -> Response:
        return Response(b'{"ok":true}', media_type="application/json")

    @app.post("/bare/{session}/ops")
    async def step(session: str, request: Request) -> Response:
        body = orjson.loads(await request.body())
        tensors = store.setdefault(session, {"x": np.array([1.0, 2.0, 3.0], np.float32)})
        name, factor = body["args"]
        result = tensors[name] * np.float32(factor)
        tensors[body["out"]] = result
        payload = {
            "name": body["out"],
            "shape": list(result.shape),
            "dtype": "float32",
            "data": {"data": result, "dtype": "float32"},
        }
        return Response(
            orjson.dumps(payload, option=orjson.OPT_SERIALIZE_NUMPY),
            media_type="application/json",
        )

    @app.put("/bare/{session}/raw/{name}")
    async def put_raw(session: str, name: str, request: Request) -> Response:
        data = np.frombuffer(await request.body(), dtype="<f4").copy()
        store.setdefault(session, {})[name] = data
        return Response(orjson.dumps({"name": name, "shape": list(data.shape)}), status_code=201)

    @app.get("/bare/{session}/raw/{name}")
    async def get_raw(session: str, name: str) -> Response:
        data = store[session][name]
        return Response(
            data.astype("<f4", copy=False).tobytes(), media_type="application/octet-stream"
        )

    return app


def serve_bare(port: int) -> None:
    """The same uvicorn and garbage-collector settings as ``service/cli.py``."""
    import uvicorn

    from service.cli import tune_gc

    app = bare_app()
    tune_gc()
    uvicorn.run(
        app,
        host=HOST,
        port=port,
        loop="uvloop" if HAS_UVLOOP else "asyncio",
        http="httptools" if HAS_HTTPTOOLS else "h11",
        access_log=False,
        log_level="warning",
        server_header=False,
    )


# --- servers as child processes -----------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:
    """In the child: SIGTERM when this script dies, even by SIGKILL (a test's timeout)."""
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class Server:
    """A child process serving on a free port, stopped by its pid."""

    def __init__(
        self,
        name: str,
        argv: list[str],
        port: int,
        ready_path: str,
        extra_env: dict[str, str] | None = None,
        root: str = ROOT,
    ) -> None:
        self.name, self.port = name, port
        env = {k: v for k, v in os.environ.items() if not k.startswith("GRADSERVE_")}
        env.update(GRADSERVE_LOG_LEVEL="warning", PYTHONPATH=root)
        env.update(extra_env or {})
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 - open while the server runs
        self.proc = subprocess.Popen(
            argv,
            cwd=root,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent,
        )
        self._wait_ready(ready_path)

    def _wait_ready(self, path: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        request = f"GET {path} HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n\r\n".encode()
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited early:\n{self.output()}")
            try:
                with socket.create_connection((HOST, self.port), timeout=1) as s:
                    s.sendall(request)
                    if s.recv(64).startswith(b"HTTP/1.1 200"):
                        return
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"{self.name} not ready after {timeout:.0f} s:\n{self.output()}")

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-4000:]

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGINT)  # uvicorn shuts down cleanly on SIGINT
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()


def start_gradserve(profile_to: str | None = None, root: str = ROOT) -> Server:
    port = free_port()
    if profile_to:
        argv = [
            sys.executable,
            os.path.abspath(__file__),
            "--serve-profiled",
            str(port),
            profile_to,
        ]
    else:
        argv = [sys.executable, "-m", "service", "serve", "--host", HOST, "--port", str(port)]
    # profiled: all work on the event loop's thread, where cProfile sees it (a worker
    # thread's calls would be missing from the profile)
    env = {"GRADSERVE_OFFLOAD_ELEMENTS": str(2**62)} if profile_to else None
    return Server("gradserve", argv, port, "/healthz", env, root=root)


def serve_profiled(port: int, out: str) -> None:
    """``gradserve serve`` with cProfile switched on by SIGUSR1 and written out by SIGUSR2,
    so the profile holds the measured load only (not start-up, not idle time)."""
    import cProfile

    from service import cli

    profiler = cProfile.Profile()
    signal.signal(signal.SIGUSR1, lambda *_: profiler.enable())

    def dump(*_: Any) -> None:
        profiler.disable()
        profiler.dump_stats(out)

    signal.signal(signal.SIGUSR2, dump)
    cli.main(["serve", "--host", HOST, "--port", str(port), "--log-level", "warning"])


def start_bare() -> Server:
    port = free_port()
    argv = [sys.executable, os.path.abspath(__file__), "--serve-bare", str(port)]
    return Server("bare", argv, port, "/ping")


# --- a minimal HTTP/1.1 keep-alive client -------------------------------------------------------


def request_bytes(
    method: str,
    port: int,
    path: str,
    body: bytes | None = None,
    content_type: str = "application/json",
) -> bytes:
    head = f"{method} {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\n"
    if body is None:
        return (head + "\r\n").encode()
    head += f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


class HTTPError(Exception):
    pass


class Conn:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int) -> Conn:
        reader, writer = await asyncio.open_connection(HOST, port, limit=1 << 20)
        return cls(reader, writer)

    async def send(self, raw: bytes, expect: int | tuple[int, ...] = (200, 201)) -> bytes:
        """Write one request, read its whole response; the body, undecoded."""
        self.writer.write(raw)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length = -1
        chunked = False
        for line in head.split(b"\r\n")[1:]:
            key, _, val = line.partition(b":")
            key = key.strip().lower()
            if key == b"content-length":
                length = int(val)
            elif key == b"transfer-encoding" and b"chunked" in val.lower():
                chunked = True
        if chunked:
            parts = []
            while True:
                size = int((await self.reader.readline()).split(b";")[0], 16)
                if size == 0:
                    await self.reader.readline()
                    break
                parts.append(await self.reader.readexactly(size))
                await self.reader.readline()
            body = b"".join(parts)
        else:
            body = await self.reader.readexactly(max(length, 0))
        if status not in ((expect,) if isinstance(expect, int) else expect):
            raise HTTPError(f"HTTP {status}: {body[:300]!r}")
        return body

    def close(self) -> None:
        self.writer.close()


# --- load: closed loops over keep-alive connections ---------------------------------------------

Unit = Callable[[Conn, int], Awaitable[None]]  # one unit of work on a connection (its index)


@dataclass
class Result:
    label: str
    units: int = 0
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    note: str = ""
    per_unit: int = 1  # steps per unit (a batch)
    cpu: float = 0.0  # CPU seconds of the process doing the work (see Case.cpu)

    @property
    def cpu_per_unit(self) -> float:
        return self.cpu / self.units if self.units else 0.0

    @property
    def rate(self) -> float:
        return self.units / self.seconds if self.seconds else 0.0

    def pct(self, q: float) -> float:
        return float(np.percentile(self.latencies, q)) if self.latencies else float("nan")


async def load(
    port: int,
    unit: Unit,
    *,
    connections: int,
    seconds: float,
    warmup: float,
    min_units: int = 1,
    setup: Callable[[Conn, int], Awaitable[None]] | None = None,
    profile_pid: int | None = None,
    cpu_pid: int | None = None,
) -> tuple[int, float, list[float], float]:
    """Run ``unit`` in a closed loop on each connection: ``warmup`` seconds unmeasured, then
    ``seconds`` measured (longer until ``min_units`` units, for slow units).

    Returns (units, seconds, latencies, CPU seconds of process ``cpu_pid`` in the window;
    0 is this process, None measures none). Several connections: the units completed in the
    window (unbiased in the steady state). One connection (slow transfers): the units
    started in the window, timed to the end of the last, so no unit is cut in two."""
    conns = [await Conn.open(port) for _ in range(connections)]
    latencies: list[float] = []
    state = {"measuring": False, "stop": False}
    single = connections == 1

    async def worker(i: int, c: Conn) -> None:
        while not state["stop"]:
            counted = state["measuring"]
            t0 = time.perf_counter()
            await unit(c, i)
            if counted if single else state["measuring"] and not state["stop"]:
                latencies.append(time.perf_counter() - t0)

    try:
        if setup is not None:
            for i, c in enumerate(conns):
                await setup(c, i)
        tasks = [asyncio.create_task(worker(i, c)) for i, c in enumerate(conns)]
        try:
            await _sleep_or_fail(warmup, tasks)
            if single:  # start the window on a unit boundary
                n = len(latencies)
                state["measuring"] = True
                while len(latencies) == n and not tasks[0].done():
                    await _sleep_or_fail(0.0005, tasks)
                latencies.clear()
            if profile_pid is not None:
                os.kill(profile_pid, signal.SIGUSR1)
            state["measuring"] = True
            cpu0 = cpu_seconds(cpu_pid)
            start = time.perf_counter()
            await _sleep_or_fail(seconds, tasks)
            while len(latencies) < min_units and time.perf_counter() - start < 10 * seconds + 30:
                await _sleep_or_fail(0.005, tasks)
            state["stop"] = True
            if single:
                await asyncio.gather(*tasks)  # the unit in flight counts
            elapsed = time.perf_counter() - start
            cpu = cpu_seconds(cpu_pid) - cpu0
            if profile_pid is not None:
                os.kill(profile_pid, signal.SIGUSR2)
            # the units still in flight finish (keep-alive stays in sync)
            await asyncio.gather(*tasks)
        finally:
            for t in tasks:
                t.cancel()
        return len(latencies), elapsed, latencies, cpu
    finally:
        for c in conns:
            c.close()


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU seconds of process ``pid`` (0: this one; None: 0.0). On a shared
    machine CPU time moves much less with other load than wall time does."""
    if pid is None:
        return 0.0
    if pid == 0:
        return time.process_time()
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _sleep_or_fail(seconds: float, tasks: list[asyncio.Task[None]]) -> None:
    done, _ = await asyncio.wait(tasks, timeout=seconds, return_when=asyncio.FIRST_EXCEPTION)
    for t in done:
        t.result()  # re-raise a worker's error (an unexpected status, a closed connection)


# --- the cases ----------------------------------------------------------------------------------


@dataclass
class Config:
    connections: int
    rounds: int  # each group of cases is measured in turn this many times
    seconds: float  # per case and round
    warmup: float
    transfer_elements: int
    transfer_seconds: float
    chain: int  # steps in a batch and nodes in the backward graph


FULL = Config(
    connections=8,
    rounds=3,
    seconds=1.0,
    warmup=0.3,
    transfer_elements=1_000_000,
    transfer_seconds=1.5,
    chain=100,
)
QUICK = Config(
    connections=4,
    rounds=1,
    seconds=0.5,
    warmup=0.2,
    transfer_elements=50_000,
    transfer_seconds=0.5,
    chain=100,
)


@dataclass
class Case:
    label: str
    port: int
    unit: Unit
    note: str = ""
    setup: Callable[[Conn, int], Awaitable[None]] | None = None
    connections: int | None = None  # default: Config.connections
    seconds: float | None = None  # default: Config.seconds
    min_units: int = 1
    per_unit: int = 1  # steps per unit, for the batch comparison
    cpu: str | None = None  # whose CPU time to measure: "server" (gradserve) or "self"


def _json(obj: Any) -> bytes:
    return orjson.dumps(obj, option=orjson.OPT_SERIALIZE_NUMPY)


async def run_cases(
    cfg: Config,
    gs: Server,
    bare: Server,
    rows: list[Result],
    only: set[str] | None = None,
    profile: bool = False,
    server_cpu: bool = False,
) -> None:
    """Every group of cases (or the cases in ``only``), appending to ``rows``. The cases
    of a group are measured in turn, ``cfg.rounds`` times, so that load from elsewhere on
    a shared machine shifts them alike. With ``profile`` the gradserve process's profiler
    runs during each measured window."""
    G, B = gs.port, bare.port
    for group in groups(cfg, G, B):
        cases = [c for c in group if only is None or c.label in only]
        results = {c.label: Result(c.label, note=c.note) for c in cases}
        for _ in range(cfg.rounds):
            for c in cases:
                units, seconds, latencies, cpu = await load(
                    c.port,
                    c.unit,
                    connections=c.connections or cfg.connections,
                    seconds=c.seconds or cfg.seconds,
                    warmup=cfg.warmup,
                    min_units=c.min_units,
                    setup=c.setup,
                    profile_pid=gs.proc.pid if profile and c.port == G else None,
                    cpu_pid=gs.proc.pid
                    if server_cpu and c.port == G
                    else {"server": gs.proc.pid, "self": 0}.get(c.cpu or ""),
                )
                r = results[c.label]
                r.units += units
                r.seconds += seconds
                r.latencies += latencies
                r.cpu += cpu
                r.per_unit = c.per_unit
        for c in cases:
            r = results[c.label]
            rows.append(r)
            print(
                f"  {r.label:<14} {r.rate:10.1f}/s  ({r.units} in {r.seconds:.1f} s)",
                file=sys.stderr,
            )


def groups(cfg: Config, G: int, B: int) -> list[list[Case]]:
    """The cases, in groups measured together: the anchors with what they anchor."""

    def session(i: int, tag: str) -> str:
        return f"bench-{tag}-{i}"

    async def new_session(c: Conn, name: str) -> None:
        await c.send(request_bytes("DELETE", G, f"/v1/sessions/{name}"), expect=(204, 404))
        await c.send(request_bytes("POST", G, "/v1/sessions", _json({"name": name})), expect=201)

    def sender(raws: Sequence[bytes], expect: int | tuple[int, ...] = (200, 201)) -> Unit:
        """A unit that sends connection i's request."""

        async def unit(c: Conn, i: int) -> None:
            await c.send(raws[i % len(raws)], expect=expect)

        return unit

    conns = range(cfg.connections)
    leaf = _json({"data": [1.0, 2.0, 3.0], "requires_grad": True})

    # --- small requests: ping, bare step, /ops step, /backward on a 100-node graph
    step = _json({"out": "y", "op": "mul", "args": ["x", 2.0]})

    async def setup_step(c: Conn, i: int) -> None:
        await new_session(c, session(i, "step"))
        await c.send(request_bytes("PUT", G, f"/v1/sessions/{session(i, 'step')}/tensors/x", leaf))

    n = cfg.chain
    graph = [{"out": f"g{k + 1}", "op": "mul", "args": [f"g{k}", 1.01]} for k in range(n - 1)]
    graph.append({"out": "loss", "op": "sum", "args": [f"g{n - 1}"]})

    async def setup_graph(c: Conn, i: int) -> None:
        s = session(i, "graph")
        await new_session(c, s)
        await c.send(request_bytes("PUT", G, f"/v1/sessions/{s}/tensors/g0", leaf))
        body = _json({"steps": graph})
        await c.send(request_bytes("POST", G, f"/v1/sessions/{s}/batch?values=false", body))

    backward = _json({"tensors": "loss", "retain_graph": True})
    small = [
        Case(
            "ping",
            B,
            sender([request_bytes("GET", B, "/ping")]),
            note="bare GET /ping: generator + uvicorn ceiling",
        ),
        Case(
            "bare step",
            B,
            sender(
                [request_bytes("POST", B, f"/bare/{session(i, 'step')}/ops", step) for i in conns]
            ),
            note="anchor: dict lookup + numpy multiply",
        ),
        Case(
            "/ops step",
            G,
            sender(
                [
                    request_bytes("POST", G, f"/v1/sessions/{session(i, 'step')}/ops", step)
                    for i in conns
                ],
                expect=201,
            ),
            setup=setup_step,
            note="target >= 0.60x bare step",
        ),
        Case(
            "/backward",
            G,
            sender(
                [
                    request_bytes(
                        "POST", G, f"/v1/sessions/{session(i, 'graph')}/backward", backward
                    )
                    for i in conns
                ]
            ),
            setup=setup_graph,
            note=f"{n}-node graph, retain_graph=true",
        ),
    ]

    # --- 100 chained steps: one request each, or all in one /batch
    chain = [{"out": f"h{k + 1}", "op": "mul", "args": [f"h{k}", 1.01]} for k in range(n)]

    position = [0] * cfg.connections  # where connection i is in its chain

    async def setup_chain(c: Conn, i: int) -> None:
        position[i] = 0
        await new_session(c, session(i, "chain"))
        await c.send(
            request_bytes("PUT", G, f"/v1/sessions/{session(i, 'chain')}/tensors/h0", leaf)
        )

    singles = [
        [
            request_bytes(
                "POST", G, f"/v1/sessions/{session(i, 'chain')}/ops?values=false", _json(s)
            )
            for s in chain
        ]
        for i in conns
    ]

    async def chain_step(c: Conn, i: int) -> None:  # connection i walks its chain, step by step
        await c.send(singles[i][position[i]], expect=201)
        position[i] = (position[i] + 1) % n

    batches = [
        request_bytes(
            "POST",
            G,
            f"/v1/sessions/{session(i, 'chain')}/batch?values=false",
            _json({"steps": chain}),
        )
        for i in conns
    ]
    steps = [
        Case(
            "/ops chain",
            G,
            chain_step,
            setup=setup_chain,
            note=f"the {n} steps, one request each",
        ),
        Case(
            f"/batch {n}",
            G,
            sender(batches),
            setup=setup_chain,
            per_unit=n,
            note=f"the same {n} steps in one request",
        ),
        Case(
            "/batch 1",
            G,
            sender(
                [
                    request_bytes(
                        "POST",
                        G,
                        f"/v1/sessions/{session(i, 'chain')}/batch?values=false",
                        _json({"steps": chain[:1]}),
                    )
                    for i in conns
                ]
            ),
            setup=setup_chain,
            note="the first step alone: what a request costs around its steps",
        ),
        Case(
            "engine chain",
            B,
            in_process(engine_chain(n)),
            connections=1,
            per_unit=n,
            note=f"the {n} recorded muls in-process on the engine",
        ),
    ]

    # --- transfers of N float32 over one connection: raw bytes (bare), base64 and JSON
    N = cfg.transfer_elements
    arr = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    raw = arr.astype("<f4").tobytes()
    b64 = _json({"b64": base64.b64encode(raw).decode(), "shape": [N], "dtype": "float32"})
    big = "/v1/sessions/bench-xfer/tensors/big"

    async def setup_xfer(c: Conn, i: int) -> None:
        await new_session(c, "bench-xfer")
        await c.send(request_bytes("PUT", G, big + "?values=false", b64))

    async def setup_raw(c: Conn, i: int) -> None:
        await c.send(request_bytes("PUT", B, "/bare/xfer/raw/big", raw, "application/octet-stream"))

    def xfer(label: str, port: int, req: bytes, note: str = "") -> Case:
        setup = setup_raw if port == B else setup_xfer
        return Case(
            label,
            port,
            sender([req]),
            note=note,
            setup=setup,
            connections=1,
            min_units=2,
            seconds=cfg.transfer_seconds,
        )

    up_json = request_bytes(
        "PUT", G, big + "?values=false", _json({"data": arr, "dtype": "float32"})
    )
    up_raw = request_bytes("PUT", B, "/bare/xfer/raw/big", raw, "application/octet-stream")
    size = f"{N:,} float32"
    uploads = [
        xfer("upload raw", B, up_raw, f"anchor: {size}, {len(raw) / 1e6:.1f} MB raw bytes"),
        xfer(
            "upload b64",
            G,
            request_bytes("PUT", G, big + "?values=false", b64),
            f"{len(b64) / 1e6:.1f} MB body; target <= 3x raw",
        ),
        xfer("upload json", G, up_json, f"{len(up_json) / 1e6:.1f} MB body"),
    ]
    downloads = [
        xfer("download raw", B, request_bytes("GET", B, "/bare/xfer/raw/big"), f"anchor: {size}"),
        xfer(
            "download b64", G, request_bytes("GET", G, big + "?encoding=base64"), "target <= 3x raw"
        ),
        xfer("download json", G, request_bytes("GET", G, big + "?encoding=json")),
    ]
    return [small, steps, train_group(cfg, G, B, new_session), jacobian_group(G, B, new_session),
            uploads, downloads]  # fmt: skip


# --- a training iteration in one /batch, against the same iteration in-process ----------------

MLP_SIZES = (784, 256, 256, 10)
MLP_BATCH = 64
MLP_LR = 0.01
MLP_PARAMS = ("W1", "b1", "W2", "b2", "W3", "b3")


def mlp_data() -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """bench/engine.py's MLP: inputs, int64 labels, weights and biases (float32)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((MLP_BATCH, MLP_SIZES[0])).astype(np.float32)
    y = rng.integers(0, MLP_SIZES[-1], MLP_BATCH).astype(np.int64)
    params: list[np.ndarray] = []
    for fan_in, fan_out in zip(MLP_SIZES[:-1], MLP_SIZES[1:]):
        bound = 1.0 / np.sqrt(fan_in)
        params.append(rng.uniform(-bound, bound, (fan_in, fan_out)).astype(np.float32))
        params.append(rng.uniform(-bound, bound, fan_out).astype(np.float32))
    return x, y, params


def mlp_program() -> dict[str, Any]:
    """One SGD iteration as a batch program: forward as steps, backward, an in-place
    update of each parameter, zero_grad (set_to_none, as the engine loop's ``p.grad =
    None``), and the loss fetched."""
    steps: list[dict[str, Any]] = [
        {"out": "a1", "op": "matmul", "args": ["X", "W1"]},
        {"out": "z1", "op": "add", "args": ["a1", "b1"]},
        {"out": "h1", "op": "relu", "args": ["z1"]},
        {"out": "a2", "op": "matmul", "args": ["h1", "W2"]},
        {"out": "z2", "op": "add", "args": ["a2", "b2"]},
        {"out": "h2", "op": "relu", "args": ["z2"]},
        {"out": "a3", "op": "matmul", "args": ["h2", "W3"]},
        {"out": "z3", "op": "add", "args": ["a3", "b3"]},
        {"out": "loss", "op": "cross_entropy", "args": ["z3", "Y"]},
        {"backward": {"tensors": "loss"}},
    ]
    steps += [{"out": p, "expr": f"{p} - {MLP_LR} * {p}.grad", "assign": True} for p in MLP_PARAMS]
    steps.append({"zero_grad": {"tensors": list(MLP_PARAMS), "set_to_none": True}})
    return {"steps": steps, "fetch": ["loss"]}


def engine_mlp_iteration() -> Callable[[], float]:
    """The same iteration in this process on the engine (the loss read, as fetched)."""
    import engine as E

    x0, y0, p0 = mlp_data()
    x, y = E.tensor(x0), E.tensor(y0)
    params = [E.tensor(p, requires_grad=True) for p in p0]
    W1, b1, W2, b2, W3, b3 = params

    def step() -> float:
        h1 = E.relu(x @ W1 + b1)
        h2 = E.relu(h1 @ W2 + b2)
        loss = E.cross_entropy(h2 @ W3 + b3, y)
        loss.backward()
        with E.no_grad():
            for p in params:
                p -= MLP_LR * p.grad
                p.grad = None
        return float(loss.item())

    return step


def engine_chain(n: int) -> Callable[[], Any]:
    """``n`` recorded muls of a 3-element leaf in this process: the engine's own cost of
    what a ``/batch`` of ``n`` mul steps records."""
    import engine as E

    h0 = E.tensor([1.0, 2.0, 3.0], requires_grad=True)

    def chain() -> Any:
        h = h0
        for _ in range(n):
            h = h * 1.01
        return h

    return chain


def in_process(fn: Callable[[], Any]) -> Unit:
    """A unit that runs ``fn`` here (its connection stays idle)."""

    async def unit(c: Conn, i: int) -> None:
        fn()
        await asyncio.sleep(0)  # the loop's timers run between units

    return unit


def train_group(
    cfg: Config, G: int, B: int, new_session: Callable[[Conn, str], Awaitable[None]]
) -> list[Case]:
    """The MLP iteration as one /batch (data uploaded once) and in-process; one at a time."""
    x, y, params = mlp_data()
    name = "bench-train"

    def b64(arr: np.ndarray, requires_grad: bool = False) -> bytes:
        return _json({"b64": base64.b64encode(arr.astype(arr.dtype.newbyteorder("<")).tobytes())
                      .decode(), "dtype": str(arr.dtype), "shape": list(arr.shape),
                      "requires_grad": requires_grad})  # fmt: skip

    uploads = [("X", b64(x)), ("Y", b64(y))]
    uploads += [(p, b64(a, True)) for p, a in zip(MLP_PARAMS, params)]

    async def setup(c: Conn, i: int) -> None:
        await new_session(c, name)
        for tensor, body in uploads:
            path = f"/v1/sessions/{name}/tensors/{tensor}?values=false"
            await c.send(request_bytes("PUT", G, path, body))

    program = request_bytes(
        "POST", G, f"/v1/sessions/{name}/batch?values=false", _json(mlp_program())
    )

    async def iteration(c: Conn, i: int) -> None:
        await c.send(program)

    stored = request_bytes("PUT", G, f"/v1/sessions/{name}/programs/it", _json(mlp_program()))

    async def setup_program(c: Conn, i: int) -> None:
        await setup(c, i)
        await c.send(stored)

    run_once = request_bytes("POST", G, f"/v1/sessions/{name}/programs/it/run", b"{}")
    run_many = request_bytes(
        "POST", G, f"/v1/sessions/{name}/programs/it/run", _json({"repeat": PROGRAM_REPEAT})
    )
    bare_step = request_bytes("POST", B, "/bare/bench-bare/ops", _json({"out": "y", "op": "mul",
                              "args": ["x", 2.0]}))  # fmt: skip

    seconds = max(cfg.seconds, 1.0)
    cases = [
        Case("engine train", B, in_process(engine_mlp_iteration()), connections=1,
             seconds=seconds, cpu="self", note="anchor: the iteration in-process on the engine"),
        Case("/batch train", G, iteration, setup=setup, connections=1, seconds=seconds,
             cpu="server", note="MLP 784-256-256-10, batch 64: forward, backward, 6 updates, "
             "zero_grad"),
        Case("program run", G, lambda c, i: c.send(run_once), setup=setup_program,
             connections=1, seconds=seconds, cpu="server",
             note="the iteration stored once as a program; one run per iteration"),
        Case("program x50", G, lambda c, i: c.send(run_many), setup=setup_program,
             connections=1, seconds=seconds, per_unit=PROGRAM_REPEAT, cpu="server",
             note=f"repeat={PROGRAM_REPEAT} in one request (rate per request)"),
        Case("bare 1 conn", B, lambda c, i: c.send(bare_step), connections=1,
             seconds=seconds, note="the bare route's round trip on one connection (the floor)"),
    ]  # fmt: skip
    torch_step = torch_mlp_iteration()
    if torch_step is not None:
        cases.insert(1, Case("torch train", B, in_process(torch_step), connections=1,
                             seconds=seconds, cpu="self", note="the iteration in-process on "
                             "PyTorch (one thread)"))  # fmt: skip
    return cases


PROGRAM_REPEAT = 50
JAC_N = 64


def torch_mlp_iteration() -> Callable[[], float] | None:
    """The same iteration in this process on PyTorch (one thread), or None without it."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    x0, y0, p0 = mlp_data()
    x, y = torch.from_numpy(x0), torch.from_numpy(y0)
    params = [torch.tensor(p, requires_grad=True) for p in p0]
    W1, b1, W2, b2, W3, b3 = params

    def step() -> float:
        h1 = torch.relu(x @ W1 + b1)
        h2 = torch.relu(h1 @ W2 + b2)
        loss = torch.nn.functional.cross_entropy(h2 @ W3 + b3, y)
        loss.backward()
        with torch.no_grad():
            for p in params:
                p -= MLP_LR * p.grad
                p.grad = None
        return float(loss.item())

    return step


def jacobian_data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    w = (rng.standard_normal((JAC_N, JAC_N)) / np.sqrt(JAC_N)).astype(np.float32)
    return w, rng.standard_normal(JAC_N).astype(np.float32)


def engine_jacrev() -> Callable[[], Any]:
    """``jacrev`` of a 64 -> 64 function (tanh(W @ x)) in this process on the engine."""
    import engine as E
    from engine import func

    w0, x0 = jacobian_data()
    w, x = E.tensor(w0), E.tensor(x0)
    jac = func.jacrev(lambda x: E.tanh(w @ x))
    return lambda: jac(x)


def jacobian_group(
    G: int, B: int, new_session: Callable[[Conn, str], Awaitable[None]]
) -> list[Case]:
    """The Jacobian of a 64 -> 64 program over HTTP against the engine's jacrev."""
    name = "bench-jac"
    w, x = jacobian_data()

    async def setup(c: Conn, i: int) -> None:
        await new_session(c, name)
        for tensor, arr in (("W", w), ("x", x)):
            body = _json({"b64": base64.b64encode(arr.tobytes()).decode(), "dtype": "float32",
                          "shape": list(arr.shape)})  # fmt: skip
            await c.send(
                request_bytes("PUT", G, f"/v1/sessions/{name}/tensors/{tensor}?values=false", body)
            )
        program = {"steps": [{"out": "y", "expr": "tanh(W @ x)"}]}
        await c.send(request_bytes("PUT", G, f"/v1/sessions/{name}/programs/f", _json(program)))

    ask = request_bytes("POST", G, f"/v1/sessions/{name}/programs/f/jacobian?encoding=base64",
                        _json({"of": ["y"], "wrt": ["x"]}))  # fmt: skip
    return [
        Case("engine jacrev", B, in_process(engine_jacrev()), connections=1, cpu="self",
             note=f"anchor: jacrev of tanh(W @ x), {JAC_N} -> {JAC_N}, in-process"),
        Case("/jacobian", G, lambda c, i: c.send(ask), setup=setup, connections=1, cpu="server",
             note="the same as a stored program's jacobian (base64 answer)"),
    ]  # fmt: skip


def ratio_table(rows: list[Result]) -> list[tuple[str, float, str, str]]:
    """(label, ratio, what it compares, verdict) for the targets and context lines."""
    by = {r.label: r for r in rows}
    out: list[tuple[str, float, str, str]] = []

    def add(label: str, num: str, den: str, how: str, target: float | None, higher: bool) -> None:
        if num not in by or den not in by or not by[den].rate or not by[num].rate:
            return
        a, b = by[num].rate * by[num].per_unit, by[den].rate * by[den].per_unit
        ratio = a / b if higher else b / a
        verdict = ""
        if target is not None:
            ok = ratio >= target if higher else ratio <= target
            verdict = ("met" if ok else "MISSED") + (
                f" (>= {target:g})" if higher else f" (<= {target:g})"
            )
        out.append((label, ratio, how, verdict))

    add("/ops step vs bare step", "/ops step", "bare step", "rate / rate", 0.60, True)
    add("bare step vs ping", "bare step", "ping", "rate / rate", None, True)
    batch = next((r.label for r in rows if r.label.startswith("/batch ") and r.per_unit > 1), None)
    if batch:
        add("/batch vs single requests", batch, "/ops chain", "steps/steps", 20.0, True)
    add("/batch train vs engine", "/batch train", "engine train", "time / time", 1.3, False)
    train, anchor = by.get("/batch train"), by.get("engine train")
    if train and anchor and train.cpu_per_unit and anchor.cpu_per_unit:
        # CPU seconds per iteration: the server process against this one running the engine
        cpu = train.cpu_per_unit / anchor.cpu_per_unit
        out.append(("/batch train vs engine, CPU", cpu, "cpu / cpu",
                    f"{'met' if cpu <= 1.3 else 'MISSED'} (<= 1.3; server "
                    f"{train.cpu_per_unit * 1e3:.2f} vs {anchor.cpu_per_unit * 1e3:.2f} ms)"))  # fmt: skip
    for label in ("program run", "program x50"):
        run = by.get(label)
        if run and anchor and run.cpu_per_unit and anchor.cpu_per_unit:
            cpu = run.cpu_per_unit / run.per_unit / anchor.cpu_per_unit
            out.append((f"{label} vs engine, CPU", cpu, "cpu / cpu",
                        f"server {run.cpu_per_unit / run.per_unit * 1e3:.2f} vs "
                        f"{anchor.cpu_per_unit * 1e3:.2f} ms per iteration"))  # fmt: skip
    if batch and "/batch 1" in by and "engine chain" in by and by["engine chain"].rate:
        # per step inside a batch: the request's own cost (a one-step batch) taken out
        n = by[batch].per_unit
        rates = (by[batch].rate, by["/batch 1"].rate)
        if all(rates):
            server = (1 / rates[0] - 1 / rates[1]) / (n - 1)
            own = 1 / (by["engine chain"].rate * n)
            out.append(("batch step vs engine op", server / own, "time / time",
                        f"{server * 1e6:.1f} vs {own * 1e6:.1f} us (for the record)"))  # fmt: skip
    add("program run vs engine", "program run", "engine train", "time / time", 1.35, False)
    add("program run vs torch", "program run", "torch train", "time / time", None, False)
    add("program x50 vs engine", "program x50", "engine train", "time / time", 1.10, False)
    add("program x50 vs torch", "program x50", "torch train", "time / time", None, False)
    add("/batch train vs torch", "/batch train", "torch train", "time / time", None, False)
    add("engine train vs torch", "engine train", "torch train", "time / time", None, False)
    add("bare 1 conn vs engine train", "bare 1 conn", "engine train", "time / time", None, False)
    add("/jacobian vs engine jacrev", "/jacobian", "engine jacrev", "time / time", 1.5, False)
    add("/backward vs bare step", "/backward", "bare step", "rate / rate", None, True)
    add("upload b64 vs raw", "upload b64", "upload raw", "time / time", 3.0, False)
    add("download b64 vs raw", "download b64", "download raw", "time / time", 3.0, False)
    add("upload json vs raw", "upload json", "upload raw", "time / time", None, False)
    add("download json vs raw", "download json", "download raw", "time / time", None, False)
    return out


def print_report(cfg: Config, rows: list[Result], extra: Sequence[str]) -> None:
    print()
    print(
        f"gradserve HTTP benchmark: {cfg.connections} connections for small requests, 1 for "
        f"transfers; {cfg.rounds} interleaved round(s) per group; {os.cpu_count()} cores; "
        f"loop={'uvloop' if HAS_UVLOOP else 'asyncio'}, "
        f"http={'httptools' if HAS_HTTPTOOLS else 'h11'}; python {sys.version.split()[0]}"
    )
    print()
    print(f"| {'case':<14} | {'req/s':>9} | {'p50 ms':>8} | {'p99 ms':>8} | {'n':>6} | note |")
    print(f"|{'-' * 16}|{'-' * 11}:|{'-' * 9}:|{'-' * 9}:|{'-' * 7}:|------|")
    for r in rows:
        if r.per_unit > 1 and r.rate:
            r.note += f" = {r.rate * r.per_unit:,.0f} steps/s"
        print(
            f"| {r.label:<14} | {r.rate:9.1f} | {r.pct(50) * 1e3:8.2f} | {r.pct(99) * 1e3:8.2f} "
            f"| {r.units:6d} | {r.note} |"
        )
    print()
    print(f"| {'ratio':<27} | {'value':>7} | {'as':<11} | target |")
    print(f"|{'-' * 29}|{'-' * 8}:|{'-' * 13}|--------|")
    for label, ratio, how, verdict in ratio_table(rows):
        print(f"| {label:<27} | {ratio:6.2f}x | {how:<11} | {verdict} |")
    for line in extra:
        print(line)


def client_decode_costs(n: int) -> list[str]:
    """What the Python client pays to decode each download (not part of the rows above)."""
    from client import wire

    arr = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    raw = arr.tobytes()
    b64 = _json({"data": {"b64": base64.b64encode(raw).decode(), "dtype": "float32", "shape": [n]}})
    js = _json({"data": {"data": arr, "dtype": "float32"}})

    def best(fn: Callable[[], Any], k: int = 3) -> float:
        times = []
        for _ in range(k):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return min(times) * 1e3

    t_raw = best(lambda: np.frombuffer(raw, "<f4"))
    t_b64 = best(lambda: wire.decode(orjson.loads(b64)["data"]))
    t_json = best(lambda: wire.decode(orjson.loads(js)["data"]))
    return [
        "",
        f"client-side decode of one download ({n:,} float32, orjson + client.wire, in this "
        "process): "
        f"raw {t_raw:.2f} ms, base64 {t_b64:.2f} ms, json {t_json:.2f} ms",
    ]


PROFILED = (
    "/ops step",
    "/batch 100",
    "/batch train",
    "program run",
    "program x50",
    "upload b64",
)  # the cases --profile looks into


def profile_report(label: str, path: str, top: int) -> list[str]:
    import io
    import pstats

    if not os.path.exists(path):
        return ["", f"(no profile written for {label})"]
    lines = ["", f"cProfile of the gradserve process during the measured '{label}' load:"]
    for key in ("tottime", "cumulative"):
        buf = io.StringIO()
        pstats.Stats(path, stream=buf).strip_dirs().sort_stats(key).print_stats(top)
        text = buf.getvalue()
        lines.append(text[text.index("   ncalls") :].rstrip() if "   ncalls" in text else text)
    os.unlink(path)
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: small sizes, short")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also profile the gradserve process under the " + " and ".join(PROFILED) + " loads",
    )
    parser.add_argument("--connections", type=int, help="concurrent connections (small requests)")
    parser.add_argument(
        "--only",
        metavar="LABELS",
        help="comma-separated case labels to measure (e.g. 'bare step,/ops step'); "
        "'store' runs only the durable-store section",
    )
    parser.add_argument(
        "--baseline",
        metavar="DIR",
        help="also serve gradserve from DIR (an older checkout) and compare the single "
        "step and the training iteration, before (DIR) against after (this tree)",
    )
    parser.add_argument("--serve-bare", type=int, metavar="PORT", help=argparse.SUPPRESS)
    parser.add_argument(
        "--serve-profiled", nargs=2, metavar=("PORT", "OUT"), help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.serve_bare is not None:
        serve_bare(args.serve_bare)
        return 0
    if args.serve_profiled is not None:
        serve_profiled(int(args.serve_profiled[0]), args.serve_profiled[1])
        return 0

    if args.only == "store":
        return store_bench(args.quick)
    if args.baseline:
        return baseline_bench(args.baseline, QUICK if args.quick else FULL)
    cfg = QUICK if args.quick else FULL
    if args.connections:
        cfg.connections = args.connections
    rows: list[Result] = []
    runner = asyncio.Runner(loop_factory=_loop_factory())
    t0 = time.perf_counter()
    print("starting servers ...", file=sys.stderr)
    bare = start_bare()
    servers = [bare]
    try:
        gs = start_gradserve()
        servers.append(gs)
        only = {label.strip() for label in args.only.split(",")} if args.only else None
        runner.run(run_cases(cfg, gs, bare, rows, only=only))
        extra = client_decode_costs(cfg.transfer_elements)
        if args.profile:  # a fresh server per case: its profile holds that case only
            gs.stop()
            servers.remove(gs)
            for label in [p for p in PROFILED if only is None or p in only]:
                prof = os.path.join(tempfile.gettempdir(), f"gradserve-{os.getpid()}.prof")
                pgs = start_gradserve(profile_to=prof)
                servers.append(pgs)
                runner.run(run_cases(cfg, pgs, bare, [], only={label}, profile=True))
                pgs.stop()
                servers.remove(pgs)
                extra += profile_report(label, prof, top=25)
    finally:
        for s in servers:
            s.stop()
        runner.close()
    print_report(cfg, rows, extra)
    print(f"\n(run took {time.perf_counter() - t0:.0f} s)")
    return 0


# --- before and after (--baseline DIR) -----------------------------------------------------------

BASELINE_CASES = ("/ops step", "/batch train")


def baseline_bench(before_root: str, cfg: Config) -> int:
    """The single step and the training iteration on two servers, an older checkout's
    (``before_root``) and this tree's, measured in turn round after round (so load from
    elsewhere shifts both alike); prints after/before ratios of the rates and of the
    server's CPU time per request (steadier than rates on a loaded machine)."""
    runner = asyncio.Runner(loop_factory=_loop_factory())
    bare = start_bare()
    servers = [bare]
    totals: dict[tuple[str, str], Result] = {}
    try:
        pair = {"before": start_gradserve(root=os.path.abspath(before_root))}
        servers.append(pair["before"])
        pair["after"] = start_gradserve()
        servers.append(pair["after"])
        one = Config(**{**cfg.__dict__, "rounds": 1})
        for _ in range(max(cfg.rounds * 2, 6)):
            for tag, server in pair.items():
                rows: list[Result] = []
                cases = set(BASELINE_CASES)
                runner.run(run_cases(one, server, bare, rows, only=cases, server_cpu=True))
                for r in rows:
                    t = totals.setdefault((tag, r.label), Result(r.label))
                    t.units += r.units
                    t.seconds += r.seconds
                    t.cpu += r.cpu
    finally:
        for srv in servers:
            srv.stop()
        runner.close()
    print()
    for label in BASELINE_CASES:
        before, after = totals.get(("before", label)), totals.get(("after", label))
        if before is None or after is None or not before.rate:
            continue
        ratio = after.rate / before.rate
        print(f"{label:<14} rate    before {before.rate:9.1f}/s  after {after.rate:9.1f}/s  "
              f"after/before {ratio:.3f}")  # fmt: skip
        if before.cpu_per_unit and after.cpu_per_unit:
            cpu = after.cpu_per_unit / before.cpu_per_unit
            print(f"{label:<14} server CPU per request  before {before.cpu_per_unit * 1e6:8.1f} us"
                  f"  after {after.cpu_per_unit * 1e6:8.1f} us  after/before {cpu:.3f}  "
                  f"({'met' if cpu <= 1.05 else 'MISSED'} <= 1.05)")  # fmt: skip
    return 0


# --- durable stores (--only store) ---------------------------------------------------------------

STORE_STEP = orjson.dumps({"out": "y", "op": "mul", "args": ["x", 2.0]})


def _start_redis(tmp: str, fsync: str) -> subprocess.Popen[bytes] | None:
    """Debian's redis-server with an AOF (``appendfsync`` ``fsync``), or None if not
    installed."""
    import shutil

    exe = shutil.which("redis-server")
    if exe is None:
        return None
    port = free_port()
    os.makedirs(f"{tmp}/{fsync}")
    argv = [exe, "--port", str(port), "--bind", HOST, "--dir", f"{tmp}/{fsync}",
            "--appendonly", "yes", "--appendfsync", fsync, "--save", ""]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, preexec_fn=_die_with_parent)
    proc.port = port  # type: ignore[attr-defined]
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((HOST, port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    return None


async def _step_rate(port: int, connections: int, seconds: float) -> float:
    """Single /ops steps per second over ``connections`` closed loops, one session each."""
    conns = [await Conn.open(port) for _ in range(connections)]
    tag = os.urandom(4).hex()
    for i, c in enumerate(conns):
        name = f"rate{i}-{tag}"
        await c.send(request_bytes("POST", port, "/v1/sessions", orjson.dumps({"name": name})))
        leaf = orjson.dumps({"data": [1.0, 2.0, 3.0], "requires_grad": True})
        await c.send(request_bytes("PUT", port, f"/v1/sessions/{name}/tensors/x", leaf))
    raws = [request_bytes("POST", port, f"/v1/sessions/rate{i}-{tag}/ops", STORE_STEP)
            for i in range(connections)]  # fmt: skip
    count = 0
    stop_at = 0.0

    async def loop(c: Conn, raw: bytes) -> None:
        nonlocal count
        while time.perf_counter() < stop_at:
            await c.send(raw)
            count += 1

    for warm in (True, False):
        count = 0
        stop_at = time.perf_counter() + (0.5 if warm else seconds)
        t0 = time.perf_counter()
        await asyncio.gather(*(loop(c, r) for c, r in zip(conns, raws)))
        elapsed = time.perf_counter() - t0
    for c in conns:
        c.close()
    return count / elapsed


async def _journal_of(port: int, records: int) -> None:
    """A session of ``records`` journal records that always holds a graph (no checkpoint)."""
    c = await Conn.open(port)
    await c.send(request_bytes("POST", port, "/v1/sessions", orjson.dumps({"name": "long"})))
    leaf = orjson.dumps({"data": [1.0, 2.0, 3.0], "requires_grad": True})
    await c.send(request_bytes("PUT", port, "/v1/sessions/long/tensors/x", leaf))
    await c.send(request_bytes("POST", port, "/v1/sessions/long/ops",
                               orjson.dumps({"out": "y", "expr": "x * 1.0"})))  # fmt: skip
    step = request_bytes("POST", port, "/v1/sessions/long/ops",
                         orjson.dumps({"out": "y", "expr": "y * 1.0001 + x"}))  # fmt: skip
    for _ in range(records - 3):
        await c.send(step)
    c.close()


def store_bench(quick: bool) -> int:
    """Single-step rates with each store against memory, and the time a session of
    10,000 journal records takes to come back after ``kill -9``. Prints, never asserts."""
    tmp = tempfile.mkdtemp(prefix="gradserve-bench-")
    seconds, records, connections = (1.0, 1000, 2) if quick else (4.0, 10_000, 4)
    redises = [r for r in (_start_redis(tmp, "always"), _start_redis(tmp, "everysec")) if r]
    stores = {"memory": "memory", "sqlite": f"sqlite:///{tmp}/bench.db"}
    for label, r in zip(("redis", "redis/1s"), redises):
        stores[label] = f"redis://{HOST}:{r.port}/0"  # type: ignore[attr-defined]
    runner = asyncio.Runner(loop_factory=_loop_factory())
    rates: dict[str, list[float]] = {k: [] for k in stores}
    recovery: dict[str, tuple[float, float]] = {}
    argv = [sys.executable, "-m", "service", "serve", "--host", HOST, "--port"]
    try:
        servers = {}
        for label, url in stores.items():
            port = free_port()
            env = {"GRADSERVE_STORE": url, "GRADSERVE_LEASE_SECONDS": "1"}
            servers[label] = Server(label, [*argv, str(port)], port, "/healthz", env)
        for _ in range(2 if quick else 3):  # rounds: load from elsewhere shifts them alike
            for label, server in servers.items():
                rates[label].append(runner.run(_step_rate(server.port, connections, seconds)))
        for label, server in servers.items():
            if label.startswith("memory"):
                continue
            runner.run(_journal_of(server.port, records))
            os.kill(server.proc.pid, signal.SIGKILL)
            server.proc.wait()
            port = free_port()
            env = {"GRADSERVE_STORE": stores[label], "GRADSERVE_LOG_LEVEL": "info"}
            servers[label] = server = Server(label, [*argv, str(port)], port, "/healthz", env)
            raw = request_bytes("GET", port, "/v1/sessions/long/tensors/y?values=false")

            async def first_read(raw: bytes = raw, port: int = port) -> float:
                c = await Conn.open(port)
                t0 = time.perf_counter()
                await c.send(raw)
                elapsed = time.perf_counter() - t0
                c.close()
                return elapsed

            first = runner.run(first_read())
            found = re.search(
                r"rebuilt from the store: (\d+) records in ([0-9.]+) s", server.output()
            )
            recovery[label] = (first, float(found.group(2)) if found else float("nan"))
        for server in servers.values():
            server.stop()
    finally:
        runner.close()
        for r in redises:
            r.kill()
            r.wait()
    best = {k: max(v) for k, v in rates.items()}
    print(f"\ndurable stores ({connections} connections, one session each; best of rounds)")
    print(f"{'store':<10} {'steps/s':>9} {'x memory':>9}  target")
    targets = {"sqlite": 0.7, "redis": 0.5, "redis/1s": 0.5}
    for label, rate in best.items():
        ratio = rate / best["memory"]
        target = targets.get(label)
        verdict = "" if target is None else f">= {target} {'met' if ratio >= target else 'MISSED'}"
        print(f"{label:<10} {rate:>9.0f} {ratio:>9.2f}  {verdict}")
    for label, (first, replay) in recovery.items():
        verdict = "met" if first <= 2.0 else "MISSED"
        print(f"recovery {label}: {records} records; first answer after restart {first:.2f} s "
              f"(replay {replay:.2f} s; target <= 2 s: {verdict})")  # fmt: skip
    print("redis: appendfsync always (each acknowledged change on disk); redis/1s: everysec")
    if not redises:
        print("redis: redis-server not installed (make redis-deps), not measured")
    return 0


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    if HAS_UVLOOP:
        import uvloop

        return uvloop.new_event_loop
    return None


if __name__ == "__main__":
    sys.exit(main())
