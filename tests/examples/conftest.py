"""The examples import their neighbour ``_extras`` as scripts do (their folder is on
``sys.path`` when run); the tests load them by path, so the folder goes on it here."""

from __future__ import annotations

import sys
from pathlib import Path

EXAMPLES = str(Path(__file__).resolve().parents[2] / "examples")
if EXAMPLES not in sys.path:
    sys.path.insert(0, EXAMPLES)
