"""Swagger UI at ``/docs`` and ReDoc at ``/redoc``, served from local assets.

The JavaScript and CSS come from the ``fastapi-offline`` package (which ships
``swagger-ui-bundle.js``, ``swagger-ui.css`` and ``redoc.standalone.js``), so
the pages work with no CDN and no network. The app must be built with
``docs_url=None, redoc_url=None`` and call ``mount_docs(app)`` once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import fastapi_offline
from fastapi import FastAPI, Request
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.staticfiles import StaticFiles
from starlette.responses import HTMLResponse, Response

ASSETS = Path(fastapi_offline.__file__).parent / "static"
ASSET_FILES = ("swagger-ui-bundle.js", "swagger-ui.css", "redoc.standalone.js", "favicon.png")
# ReDoc's side menu shows a "Redocly" logo fetched from a CDN (it hides itself when the fetch
# fails, but the failed request is still made): served with an empty inline image instead
REDOC_CDN_LOGO = b"https://cdn.redoc.ly/redoc/logo-mini.svg"
EMPTY_IMAGE = b"data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg'/%3E"

# Swagger UI options: no call-out to the online validator badge, request durations shown,
# schemas folded so the operations come first.
SWAGGER_PARAMETERS: dict[str, Any] = {
    "validatorUrl": None,
    "displayRequestDuration": True,
    "defaultModelsExpandDepth": 0,
}


def mount_docs(
    app: FastAPI,
    *,
    docs_url: str = "/docs",
    redoc_url: str = "/redoc",
    static_url: str = "/static/docs",
) -> None:
    """Serve the assets under ``static_url`` and add the two HTML pages (not in the schema)."""
    missing = [name for name in ASSET_FILES if not (ASSETS / name).is_file()]
    if missing:  # a broken install should fail at start-up, not as a blank page
        raise RuntimeError(f"fastapi-offline is missing its assets: {', '.join(missing)}")
    if app.docs_url or app.redoc_url:
        raise RuntimeError("create the app with docs_url=None, redoc_url=None to use mount_docs")
    openapi_url = app.openapi_url or "/openapi.json"
    oauth2_url = app.swagger_ui_oauth2_redirect_url or "/docs/oauth2-redirect"
    parameters = {**SWAGGER_PARAMETERS, **(app.swagger_ui_parameters or {})}

    redoc_js = (ASSETS / "redoc.standalone.js").read_bytes().replace(REDOC_CDN_LOGO, EMPTY_IMAGE)
    redoc_js_url = f"{static_url}/redoc.offline.js"

    @app.get(redoc_js_url, include_in_schema=False)
    async def get_redoc_js() -> Response:
        return Response(
            redoc_js,
            media_type="text/javascript",
            headers={"Cache-Control": "public, max-age=86400"},
        )

    favicon = (ASSETS / "favicon.png").read_bytes()

    @app.get("/favicon.ico", include_in_schema=False)
    async def get_favicon() -> Response:  # browsers ask for it on every page
        return Response(
            favicon, media_type="image/png", headers={"Cache-Control": "public, max-age=86400"}
        )

    app.mount(static_url, StaticFiles(directory=ASSETS), name="docs-assets")  # after the routes

    @app.get(docs_url, include_in_schema=False)
    async def get_docs(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(
            openapi_url=root + openapi_url,
            title=f"{app.title} - Swagger UI",
            oauth2_redirect_url=root + oauth2_url,
            swagger_js_url=f"{root}{static_url}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{static_url}/swagger-ui.css",
            swagger_favicon_url=f"{root}{static_url}/favicon.png",
            swagger_ui_parameters=parameters,
        )

    @app.get(oauth2_url, include_in_schema=False)
    async def get_docs_oauth2_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get(redoc_url, include_in_schema=False)
    async def get_redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_redoc_html(
            openapi_url=root + openapi_url,
            title=f"{app.title} - ReDoc",
            redoc_js_url=root + redoc_js_url,
            redoc_favicon_url=f"{root}{static_url}/favicon.png",
            with_google_fonts=False,
        )
