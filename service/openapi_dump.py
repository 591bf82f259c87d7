"""Write the app's OpenAPI document: ``python -m service.openapi_dump [PATH]``.

The committed ``openapi/openapi.json`` is compared with a fresh dump by the
tests, so it cannot go stale. Output is stable (sorted keys, 2-space indent).
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
    path = Path(args[0]) if args else DEFAULT_PATH
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(), encoding="utf-8")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
