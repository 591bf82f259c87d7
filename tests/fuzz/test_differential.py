"""The differential fuzzer in ``make test``: a fixed set of random programs run in
PyTorch, in the engine and (fewer, without Python hooks) through the client over
HTTP, compared event by event (see ``interpreter``). ``make fuzz`` runs thousands
more (``python -m tests.fuzz.run``); what it finds is minimised into regular tests.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import engine
from tests.fuzz.interpreter import Backend, compare, run
from tests.fuzz.programs import ALL_FEATURES, SERVER_FEATURES, generate

ROOT = Path(__file__).resolve().parents[2]
ENGINE_SEEDS = range(0, 400)
HTTP_SEEDS = range(1000, 1030)
# what the programs may use: everything the generator knows
ENGINE_FEATURES = ALL_FEATURES
# a server cannot run a client's Python hook
HTTP_FEATURES = SERVER_FEATURES


def _check(program: list[dict[str, Any]], ours: list[Any], theirs: list[Any]) -> None:
    diff = compare(ours, theirs)
    assert diff is None, f"{diff}\nprogram: {json.dumps(program)}"


def _engine_seed(torch: Any, seed: int) -> None:
    program = generate(seed, ENGINE_FEATURES)
    _check(program, run(program, Backend(engine, "engine")), run(program, Backend(torch, "torch")))


@pytest.mark.parametrize("block", range(0, len(ENGINE_SEEDS), 50))
def test_engine_matches_torch(torch: Any, block: int) -> None:
    for seed in ENGINE_SEEDS[block : block + 50]:
        _engine_seed(torch, seed)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    from client import LocalServer

    srv = LocalServer(cwd=ROOT, env={"GRADSERVE_LOG_LEVEL": "warning"})
    url = srv.start()
    try:
        yield url
    finally:
        srv.stop()


def _client_seed(torch: Any, server: str, seed: int) -> None:
    from client import Session

    program = generate(seed, HTTP_FEATURES, length=10)
    s = Session(server, name=f"fuzz-{seed}-{uuid.uuid4().hex[:6]}")
    try:
        ours = run(program, Backend(s, "client"))
    finally:
        s.delete()
        s.close()
    _check(program, ours, run(program, Backend(torch, "torch")))


@pytest.mark.integration
def test_client_over_http_matches_torch(torch: Any, server: str) -> None:
    for seed in HTTP_SEEDS:
        _client_seed(torch, server, seed)
