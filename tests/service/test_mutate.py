"""The one mutation path: a request past its deadline answers 503 and changes nothing;
inline work that outgrows the event loop is rolled back and run again in a worker
thread exactly once in effect; every verb of the table is what the journal replays."""

from __future__ import annotations

import pytest
from svc_helpers import SyncClient, assert_problem, make_settings, put

from service.app import create_app
from service.session import changes, offload

NB = "/v1/sessions/nb"


def _client(**settings: object) -> SyncClient:
    c = SyncClient(create_app(make_settings(**settings)))
    assert c.post("/v1/sessions", json={"name": "nb"}).status_code == 201
    put(c, "nb", "x", [1.0, 2.0], requires_grad=True)
    return c


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", f"{NB}/ops", {"out": "y", "expr": "x * 2"}),
        ("POST", f"{NB}/batch", {"steps": [{"out": "x", "expr": "x * 3", "assign": True,
                                            "no_grad": True}, {"out": "y", "expr": "x.sum()"}]}),
        ("POST", f"{NB}/backward", {"tensors": "s"}),
        ("PUT", f"{NB}/tensors/z", {"data": [1.0]}),
        ("DELETE", f"{NB}/tensors/x", None),
    ],
)  # fmt: skip
def test_past_the_deadline_nothing_changes(method: str, path: str, body: object) -> None:
    with _client() as c:
        assert c.post(f"{NB}/ops", json={"out": "s", "expr": "(x * x).sum()"}).status_code == 201
        before = c.get(NB).json()["tensors"]
        c.app.state.settings.request_seconds = 1e-9  # every request starts past it
        r = c.request(method, path, json=body)
        assert_problem(r, 503, "deadline_exceeded")
        assert r.headers["retry-after"]
        c.app.state.settings.request_seconds = 60.0
        assert c.get(NB).json()["tensors"] == before
        assert c.get(f"{NB}/tensors/x").json()["data"]["data"] == [1.0, 2.0]


def test_inline_work_that_runs_long_is_rerun_off_the_loop_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(offload, "INLINE_SECONDS", -1.0)  # every inline op "runs long"
    with _client() as c:
        steps = [{"out": "x", "expr": "x * 3", "assign": True, "no_grad": True},
                 {"out": "y", "expr": "(x * x).sum()"}, {"backward": {"tensors": "y"}}]  # fmt: skip
        r = c.post(f"{NB}/batch", json={"steps": steps, "fetch": ["x", "x.grad"]})
        assert r.status_code == 200, r.text
        values = r.json()["values"]
        assert values["x"]["data"] == [3.0, 6.0]  # assigned once, not once per attempt
        assert values["x.grad"]["data"] == [6.0, 12.0]  # accumulated once


def test_every_journal_kind_is_a_verb() -> None:
    assert set(changes.VERBS) == {"put", "steps", "backward", "grad", "zero_grad", "patch",
                                  "del_tensor", "del_grad", "import",
                                  "program", "program_del", "run"}  # fmt: skip
    assert all(v.kind == k for k, v in changes.VERBS.items())


def test_a_run_measured_short_stays_on_the_loop_and_a_long_one_is_weighed() -> None:
    """A program's first run is weighed by what its steps read; once its iterations were
    measured, a run that fits well in one chunk on the event loop weighs nothing (no
    thread hop), and a longer one is weighed as before."""
    with _client(offload_elements=0) as c:  # any weight at all goes to a thread
        program = {"steps": [{"out": "y", "expr": "(x * x).sum()"}]}
        assert c.put(f"{NB}/programs/p", json=program).status_code == 201
        session = c.app.state.sessions.held("nb", None)
        found = session.programs["p"]
        assert found.pace.seconds is None
        assert changes.RUN.weight(session, changes.Iterations("p", 1)) > 0
        r = c.post(f"{NB}/programs/p/run", json={"repeat": 3})
        assert r.status_code == 200, r.text
        each = found.pace.seconds
        assert each is not None and 0 < each < changes.CHUNK_SECONDS
        fits = int(changes.CHUNK_SECONDS / 2 / each)
        assert changes.RUN.weight(session, changes.Iterations("p", fits)) == 0
        assert changes.RUN.weight(session, changes.Iterations("p", fits + 1)) > 0
        assert changes.RUN.weight(session, changes.Iterations("p", 1, heavy=True)) > 0
