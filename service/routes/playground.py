"""The playground at ``/ui/``: a page for people learning ``backward()``.

Three static files shipped inside the package (``service/playground``), served from
memory with no external URL, so the page works offline. It calls the same /v1 API as
any client, with the API key typed into the page when the server has keys.
"""

from importlib import resources

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from ..errors import ServiceError

router = APIRouter(prefix="/ui", include_in_schema=False)

_MEDIA_TYPES = {
    "index.html": "text/html; charset=utf-8",
    "playground.js": "text/javascript; charset=utf-8",
    "playground.css": "text/css; charset=utf-8",
}
_ASSETS = {
    name: (resources.files("service") / "playground" / name).read_bytes() for name in _MEDIA_TYPES
}


class AssetNotFoundError(ServiceError):
    code = "not_found"


@router.get("", response_class=RedirectResponse)
async def redirect_playground() -> RedirectResponse:
    """``/ui`` → ``/ui/``, so the page's relative links resolve."""
    return RedirectResponse("/ui/")


@router.get("/", response_class=HTMLResponse)
async def get_playground() -> HTMLResponse:
    """The playground page."""
    return HTMLResponse(_ASSETS["index.html"])


@router.get("/assets/{name}")
async def get_playground_asset(name: str) -> Response:
    """The page's script and style sheet (only these names: no file system access)."""
    if name not in _ASSETS or name == "index.html":
        raise AssetNotFoundError(f"no playground asset named {name!r}")
    return Response(
        _ASSETS[name],
        media_type=_MEDIA_TYPES[name],
        headers={"Cache-Control": "no-cache"},
    )
