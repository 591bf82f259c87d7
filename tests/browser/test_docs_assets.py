"""service.docs in-process: the pages reference only local assets, and the assets are there."""

from __future__ import annotations

import asyncio
import re

import httpx
import pytest
from fastapi import FastAPI

from service.docs import mount_docs


class Client:
    """A minimal synchronous client over httpx's ASGI transport (no server, no thread)."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app

    def get(self, path: str) -> httpx.Response:
        async def fetch() -> httpx.Response:
            transport = httpx.ASGITransport(app=self.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
                return await http.get(path)

        return asyncio.run(fetch())


@pytest.fixture
def http() -> Client:
    app = FastAPI(title="gradserve", docs_url=None, redoc_url=None)

    @app.get("/v1/ping", operation_id="ping")
    async def ping() -> dict[str, str]:
        return {"pong": "yes"}

    mount_docs(app)
    return Client(app)


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_pages_use_only_local_assets(http: Client, page: str) -> None:
    html = http.get(page).text
    urls = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert urls and all(u.startswith("/") for u in urls), urls
    for url in urls:
        asset = http.get(url)
        assert asset.status_code == 200, url
        assert len(asset.content) > 1000, url
        assert b"cdn.redoc.ly" not in asset.content, url
    assert "fonts.googleapis" not in html


def test_refuses_an_app_with_its_own_docs() -> None:
    with pytest.raises(RuntimeError, match="docs_url=None"):
        mount_docs(FastAPI())


def test_favicon_and_openapi_still_served(http: Client) -> None:
    assert http.get("/favicon.ico").headers["content-type"] == "image/png"
    spec = http.get("/openapi.json").json()
    assert "/docs" not in spec["paths"] and "/v1/ping" in spec["paths"]
