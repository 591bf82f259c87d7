"""The serve command and the JSON logs (the server itself runs in tests/integration)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from svc_helpers import SyncClient, make_settings

from service import cli
from service.app import create_app
from service.observability import JSONFormatter


def test_serve_runs_uvicorn_with_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr("uvicorn.run", lambda app, **kw: calls.append({"app": app, **kw}))
    monkeypatch.setattr("service.observability.configure_logging", lambda level: None)
    assert cli.main(["serve", "--host", "0.0.0.0", "--port", "9001"]) == 0
    (call,) = calls
    assert (call["host"], call["port"], call["access_log"]) == ("0.0.0.0", 9001, False)
    assert call["log_config"] is None
    assert call["loop"] in ("uvloop", "asyncio")
    # httptools with a bound on reading a request (service/protocol.py), else h11
    assert call["http"] == "h11" or call["http"].read_seconds == 30.0
    assert (call["timeout_keep_alive"], call["limit_concurrency"]) == (5, 1000)
    assert call["app"].title == "gradserve"


def test_serve_needs_a_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main([])


def test_version_is_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    from engine import __version__

    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"gradserve {__version__}"


def test_json_formatter() -> None:
    record = logging.LogRecord("gradserve", logging.INFO, __file__, 1, "hello %s", ("you",), None)
    record.fields = {"status": 200}
    entry = json.loads(JSONFormatter().format(record))
    assert entry["msg"] == "hello you" and entry["status"] == 200 and entry["level"] == "info"


def test_access_log_carries_the_request_id(caplog: pytest.LogCaptureFixture) -> None:
    with (
        SyncClient(create_app(make_settings(access_log=True))) as c,
        caplog.at_level(logging.INFO, logger="gradserve.access"),
    ):
        c.get("/healthz", headers={"X-Request-ID": "req-42"})
    (record,) = [r for r in caplog.records if r.name == "gradserve.access"]
    assert record.fields["status"] == 200 and record.fields["route"] == "/healthz"
    assert json.loads(JSONFormatter().format(record))["request_id"] == "req-42"


def test_no_access_log_by_default(client: SyncClient, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="gradserve.access"):
        client.get("/healthz")
    assert not [r for r in caplog.records if r.name == "gradserve.access"]
