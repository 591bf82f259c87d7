"""Runs a tutorial against gradserve (``--url``) or, with ``--torch``, in PyTorch itself.

Each tutorial is a function of ``T``: the ``torch`` module, or a gradserve
``Session``, which reads the same (``T.tensor``, ``T.no_grad()``, ``T.log``...);
so the same program runs in both and their printed outputs can be compared.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def grad_fn(t: Any) -> str | None:
    """The name of ``t``'s grad_fn (``MulBackward0``), or None, for both worlds."""
    fn = t.grad_fn
    return fn if fn is None or isinstance(fn, str) else type(fn).__name__


def run(tutorial: Callable[[Any], None], doc: str | None) -> None:
    parser = argparse.ArgumentParser(description=(doc or "").strip().splitlines()[0])
    parser.add_argument(
        "--url",
        default=os.environ.get("GRADSERVE_URL", "http://127.0.0.1:8000"),
        help="the gradserve server (default: $GRADSERVE_URL or http://127.0.0.1:8000)",
    )
    parser.add_argument("--torch", action="store_true", help="run the same program in PyTorch")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))  # the repository's client package
    sys.path.insert(0, str(ROOT / "examples"))
    if args.torch:
        from _extras import require

        tutorial(require("torch"))
        return
    from client import Session, errors

    try:
        session = Session(args.url)
    except errors.TransportError as exc:  # no server there: say what to do, not a traceback
        sys.exit(
            f"no gradserve server answers at {args.url} ({exc}): start one with "
            "`make serve`, or pass --url (or set GRADSERVE_URL)"
        )
    with session as s:  # a fresh session, dropped at the end
        try:
            tutorial(s)
        finally:
            s.delete()
