"""``gradserve serve [--host H] [--port P]``: run the app under uvicorn;
``gradserve --version``. Only ``serve`` needs the server extra
(``pip install 'gradserve[server]'``), so the script answers ``--version`` and
explains what is missing on a client-only install."""

from __future__ import annotations

import argparse
import gc
import importlib.util
from collections.abc import Sequence

from engine.version import __version__

GC_THRESHOLD = (10_000, 10, 10)


def tune_gc() -> None:
    """Fewer, cheaper cyclic collections: every step allocates a node and a tensor, so
    CPython's default (a young collection every 700 allocations) runs many times per
    batch, and ``freeze`` keeps the modules and app loaded so far out of every
    collection. Engine graphs are freed by reference counting; the collector only
    finds the rare cycle. Measured: a 100-step batch ~25% faster."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLD)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gradserve", description="gradserve HTTP service")
    parser.add_argument("--version", action="version", version=f"gradserve {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the HTTP API")
    serve.add_argument("--host", help="default: GRADSERVE_HOST, else 127.0.0.1")
    serve.add_argument("--port", type=int, help="default: GRADSERVE_PORT, else 8000")
    serve.add_argument("--log-level", help="default: GRADSERVE_LOG_LEVEL, else info")
    args = parser.parse_args(argv)

    try:
        import uvicorn

        from .app import create_app
        from .observability import configure_logging
        from .protocol import bounded_protocol
        from .settings import get_settings
    except ImportError as exc:
        parser.exit(
            2,
            f"gradserve serve needs the server extra: pip install 'gradserve[server]' "
            f"(missing: {exc.name})\n",
        )
    settings = get_settings()
    host = args.host or settings.host
    port = args.port if args.port is not None else settings.port
    log_level = args.log_level or settings.log_level
    configure_logging(log_level)
    app = create_app(settings)
    tune_gc()
    has_httptools = importlib.util.find_spec("httptools") is not None
    uvicorn.run(
        app,
        host=host,
        port=port,
        loop="uvloop" if importlib.util.find_spec("uvloop") else "asyncio",
        # slow and half-open clients: a bound on reading each request (h11: uvicorn's own)
        http=bounded_protocol(settings.read_seconds) if has_httptools else "h11",
        timeout_keep_alive=max(1, round(settings.keep_alive_seconds)),
        limit_concurrency=settings.max_connections,
        access_log=False,  # our middleware logs requests (GRADSERVE_ACCESS_LOG=true)
        log_config=None,  # configure_logging: JSON lines
        log_level=log_level,
        server_header=False,
    )
    return 0
