"""Complex values over HTTP: the wire carries real dtypes only (JSON has no complex
numbers), so every way a request could make a complex tensor, an op of real inputs
that returns one, a complex dtype named in an argument or an upload, a Python complex
in an expression, a program, a stateless call, is refused with a problem+json
(``bad_arguments``/``invalid_tensor``), never a 500, and changes nothing."""

from __future__ import annotations

from typing import Any

import pytest
from svc_helpers import SyncClient, put

STEPS: list[dict[str, Any]] = [
    {"op": "fft_fft", "args": ["A"]},
    {"op": "fft_rfft", "args": ["v"]},
    {"op": "view_as_complex", "args": ["A"]},
    {"op": "complex", "args": ["v", "v"]},
    {"op": "polar", "args": ["v", "v"]},
    {"op": "cfloat", "args": ["v"]},
    {"op": "cdouble", "args": ["v"]},
    {"op": "linalg_eigvals", "args": ["A"]},
    {"op": "to", "args": ["v"], "kwargs": {"dtype": "complex64"}},
    {"op": "zeros", "args": [2], "kwargs": {"dtype": "complex128"}},
    {"op": "full", "args": [[2], 1.0], "kwargs": {"dtype": "complex64"}},
    {"expr": "v * 1j"},
    {"expr": "(v + 2j).abs()"},
    {"expr": "fft_fft(v).abs().sum()"},
    {"expr": "view_as_complex(A).real"},
    {"expr": "angle(complex(v, v))"},
    {"expr": "v.cdouble().conj().abs()"},
]


def _refused(r: Any) -> dict[str, Any]:
    assert r.status_code != 500, r.text
    assert r.status_code == 422, r.text
    assert r.headers["content-type"].startswith("application/problem+json"), r.headers
    body = r.json()
    assert body["code"] in ("bad_arguments", "expr_invalid", "invalid_tensor"), body
    if body["code"] == "bad_arguments":  # the op ran into a complex result: it says so
        assert "complex" in body["detail"], body
    return body


@pytest.mark.parametrize("step", STEPS, ids=[str(s.get("op") or s["expr"]) for s in STEPS])
def test_a_complex_result_is_refused_and_changes_nothing(
    client: SyncClient, session: str, step: dict[str, Any]
) -> None:
    put(client, "nb", "A", [[0.0, 1.0], [-2.0, 0.5]], requires_grad=True)
    put(client, "nb", "v", [1.0, -2.0], requires_grad=True)
    before = client.get("/v1/sessions/nb/tensors").json()
    _refused(client.post("/v1/sessions/nb/ops", json={"out": "L", **step}))
    _refused(client.post("/v1/sessions/nb/batch", json={"steps": [{"out": "L", **step}]}))
    assert client.get("/v1/sessions/nb/tensors").json() == before


@pytest.mark.parametrize("step", STEPS[:4] + STEPS[11:13], ids=lambda s: str(s))
def test_a_stateless_call_with_a_complex_result_is_refused(
    client: SyncClient, step: dict[str, Any]
) -> None:
    body = {
        "tensors": {
            "A": {"data": [[0.0, 1.0], [-2.0, 0.5]], "requires_grad": True},
            "v": {"data": [1.0, -2.0], "requires_grad": True},
        },
        "steps": [{"out": "L", **step}],
        "fetch": ["L"],
    }
    _refused(client.post("/v1/gradient", json=body))


@pytest.mark.parametrize("dtype", ["complex64", "complex128", "cfloat"])
def test_a_complex_upload_is_refused(client: SyncClient, session: str, dtype: str) -> None:
    before = client.get("/v1/sessions/nb/tensors").json()
    _refused(client.put("/v1/sessions/nb/tensors/z", json={"data": [1.0, 2.0], "dtype": dtype}))
    assert client.get("/v1/sessions/nb/tensors").json() == before
