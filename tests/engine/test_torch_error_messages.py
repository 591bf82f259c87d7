"""Errors op_db's error_inputs name, with PyTorch's class and message: each call raises
in torch and the engine alike, and the engine's message is torch's (its first line)."""

from __future__ import annotations

from typing import Any

import pytest

import engine

CASES: list[tuple[str, Any]] = [
    ("reshape of 0 elements with -1", lambda t: t.zeros(0, 3).reshape(0, -1)),
    ("cat of a None", lambda t: t.cat([t.ones(2), None])),
    ("cat of a tensor", lambda t: t.cat(t.ones(2, 3))),
    ("hstack of nothing", lambda t: t.hstack([])),
    ("vstack of nothing", lambda t: t.vstack([])),
    ("linspace float steps", lambda t: t.linspace(0, 1, 2.0)),
    ("logspace float steps", lambda t: t.logspace(0, 1, 2.0)),
    ("linspace 1-d start", lambda t: t.linspace(t.ones(2), 2, 3)),
    ("roll without shifts", lambda t: t.roll(t.ones(3), ())),
    ("roll of 0-d", lambda t: t.roll(t.tensor(1.0), 0, 0)),
    ("narrow start bool", lambda t: t.narrow(t.ones(3, 4), 1, t.tensor(True), 2)),
    ("narrow start 1-d", lambda t: t.narrow(t.ones(3, 4), 1, t.tensor([0, 1]), 2)),
    (
        "index_add source shape",
        lambda t: t.ones(3, 2).index_add(0, t.tensor([0]), t.ones(1, 3)),
    ),
]


@pytest.mark.parametrize(("what", "call"), CASES, ids=[c[0] for c in CASES])
def test_engine_raises_torchs_error(what: str, call: Any, torch: Any) -> None:
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(Exception) as mine:
        call(engine)
    assert isinstance(mine.value, type(theirs.value)), what
    assert str(mine.value).splitlines()[0] == str(theirs.value).splitlines()[0], what
