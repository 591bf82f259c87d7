"""Fixtures for in-process service tests: an app per test, a client, helpers."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # the package may not be installed (pip install -e .)
    sys.path.insert(0, str(ROOT))

from svc_helpers import SyncClient, make_settings, put  # noqa: E402

from service.app import create_app  # noqa: E402
from service.settings import Settings  # noqa: E402


@pytest.fixture
def settings() -> Settings:
    return make_settings()


@pytest.fixture
def client(settings: Settings) -> Iterator[SyncClient]:
    with SyncClient(create_app(settings)) as c:
        yield c


@pytest.fixture
def session(client: SyncClient) -> str:
    """A session 'nb' holding x = [1.0, 2.0] with requires_grad."""
    assert client.post("/v1/sessions", json={"name": "nb"}).status_code == 201
    put(client, "nb", "x", [1.0, 2.0], requires_grad=True)
    return "nb"
