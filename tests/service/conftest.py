"""Fixtures for in-process service tests: a shared app, a client, a session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from svc_helpers import SyncClient, make_settings, put

from service.app import create_app
from service.session.manager import SessionManager


@pytest.fixture(scope="session")
def shared_app() -> FastAPI:
    """One app with default settings: FastAPI analyzes each route's dependencies on its
    first request, so building an app per test would cost more than the tests."""
    return create_app(make_settings())


@pytest.fixture
def client(shared_app: FastAPI) -> Iterator[SyncClient]:
    """A client on the shared app, with an empty session store."""
    shared_app.state.sessions = SessionManager(shared_app.state.settings)
    with SyncClient(shared_app) as c:
        yield c


@pytest.fixture
def session(client: SyncClient) -> str:
    """A session 'nb' holding x = [1.0, 2.0] with requires_grad."""
    assert client.post("/v1/sessions", json={"name": "nb"}).status_code == 201
    put(client, "nb", "x", [1.0, 2.0], requires_grad=True)
    return "nb"
