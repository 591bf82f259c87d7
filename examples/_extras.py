"""What an example needs beyond the client, imported with a way out: a missing package
names the ``pip install`` that brings it, instead of a ``ModuleNotFoundError`` traceback."""

from __future__ import annotations

import importlib
import sys
from typing import Any

# module -> the PyPI distribution that provides it
DISTRIBUTIONS = {"torch": "torch", "sklearn": "scikit-learn", "attrs": "attrs"}


def require(module: str) -> Any:
    """``import module``, or exit (status 1) with the install command for it."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        top = module.split(".")[0]
        if exc.name is not None and exc.name.split(".")[0] != top:
            raise  # the package is there but broken: show the real error
        dist = DISTRIBUTIONS.get(top, top)
        sys.exit(
            f"this example needs {dist}: pip install 'gradserve[examples]' "
            f"(from a checkout: pip install '.[examples]'), or just pip install {dist}"
        )
