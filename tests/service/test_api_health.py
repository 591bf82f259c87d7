from __future__ import annotations

import re

from svc_helpers import SyncClient, make_settings

from service.app import create_app


def test_health_and_readiness(client: SyncClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/readyz").json() == {"status": "ready", "sessions": 0}


def test_metrics() -> None:
    with SyncClient(create_app(make_settings())) as client:
        client.post("/v1/sessions", json={"name": "nb"})
        client.get("/v1/sessions/nb/tensors/nope")
        text = client.get("/metrics").text
    assert "gradserve_sessions 1.0" in text
    assert re.search(
        r'gradserve_requests_total\{method="GET",route="/v1/sessions/\{session\}/tensors/\{tensor\}",status="404"\} 1\.0',
        text,
    )
    assert "gradserve_request_duration_seconds_bucket" in text


def test_request_id_is_echoed_or_made(client: SyncClient) -> None:
    r = client.get("/healthz", headers={"X-Request-ID": "abc-123"})
    assert r.headers["x-request-id"] == "abc-123"
    made = client.get("/healthz").headers["x-request-id"]
    assert re.fullmatch(r"[0-9a-f]{32}", made)
    odd = client.get("/healthz", headers={"X-Request-ID": "bad id\twith spaces"})
    assert odd.headers["x-request-id"] != "bad id\twith spaces"
    assert client.get("/nope").headers["x-request-id"]


def test_catalogue(client: SyncClient) -> None:
    ops = {op["name"]: op for op in client.get("/v1/ops").json()["ops"]}
    assert {"add", "mul", "pow", "sum", "exp", "log"} <= set(ops)
    assert ops["sum"]["args"][0] == "input" and ops["sum"]["differentiable"] is True
    assert "dim" in ops["sum"]["kwargs"] and ops["sum"]["doc"]
    # what a call writes in place besides its result, read from the registration
    assert ops["batch_norm"]["writes"] == ["running_mean", "running_var"]
    assert ops["normal_"]["writes"] == ["self"] and ops["sum"]["writes"] == []
