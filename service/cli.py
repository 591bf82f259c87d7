"""``gradserve serve [--host H] [--port P]``: run the app under uvicorn."""

from __future__ import annotations

import argparse
import importlib.util
from collections.abc import Sequence

from .observability import configure_logging
from .settings import get_settings


def main(argv: Sequence[str] | None = None) -> int:
    settings = get_settings()
    parser = argparse.ArgumentParser(prog="gradserve", description="gradserve HTTP service")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the HTTP API")
    serve.add_argument("--host", default=settings.host, help=f"default {settings.host}")
    serve.add_argument("--port", type=int, default=settings.port, help=f"default {settings.port}")
    serve.add_argument("--log-level", default=settings.log_level)
    args = parser.parse_args(argv)

    import uvicorn

    from .app import create_app

    configure_logging(args.log_level)
    uvicorn.run(
        create_app(settings),
        host=args.host,
        port=args.port,
        loop="uvloop" if importlib.util.find_spec("uvloop") else "asyncio",
        http="httptools" if importlib.util.find_spec("httptools") else "h11",
        access_log=False,  # our middleware logs requests (GRADSERVE_ACCESS_LOG=true)
        log_config=None,  # configure_logging: JSON lines
        log_level=args.log_level,
        server_header=False,
    )
    return 0
