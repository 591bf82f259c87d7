"""The app's OpenAPI document, stable (sorted keys, 2-space indent, final newline).

    python -m service.openapi_dump > openapi/openapi.json    # what `make openapi` runs
    python -m service.openapi_dump -o openapi/openapi.json   # the same, written directly

The committed ``openapi/openapi.json`` is compared with a fresh dump by the
tests, so it cannot go stale.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

DEFAULT_PATH = Path(__file__).resolve().parent.parent / "openapi" / "openapi.json"


def render() -> str:
    from .app import create_app
    from .settings import Settings

    schema: dict[str, Any] = create_app(Settings(_env_file=None)).openapi()  # type: ignore[call-arg]
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    text = render()
    if args[:1] in (["-o"], ["--output"]) and len(args) == 2:
        path = Path(args[1])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}", file=sys.stderr)
    elif not args:
        sys.stdout.write(text)
    else:
        print("usage: python -m service.openapi_dump [-o PATH]", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
