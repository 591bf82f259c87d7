"""The naming rules for sessions and tensors, shared by schemas, routes and the store."""

from __future__ import annotations

import keyword
import re

from .errors import InvalidNameError

SESSION_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
TENSOR_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"
_SESSION_RE = re.compile(SESSION_NAME_PATTERN)
_TENSOR_RE = re.compile(TENSOR_NAME_PATTERN)
MAX_NAME_LENGTH = 64

SESSION_RULE = "1-64 characters: letters, digits, '_', '.', '-', starting with a letter or digit"
TENSOR_RULE = "a Python identifier of at most 64 ASCII characters, not a keyword"


def session_name_error(name: object) -> str | None:
    if isinstance(name, str) and _SESSION_RE.fullmatch(name):
        return None
    return f"invalid session name {_show(name)}: {SESSION_RULE}"


def tensor_name_error(name: object) -> str | None:
    if (
        isinstance(name, str)
        and _TENSOR_RE.fullmatch(name)
        and not keyword.iskeyword(name)
        and not (name.startswith("__") and name.endswith("__"))
    ):
        return None
    return f"invalid tensor name {_show(name)}: {TENSOR_RULE}"


def check_session_name(name: str) -> str:
    if (msg := session_name_error(name)) is not None:
        raise InvalidNameError(msg)
    return name


def check_tensor_name(name: str) -> str:
    if (msg := tensor_name_error(name)) is not None:
        raise InvalidNameError(msg)
    return name


def _show(name: object) -> str:
    text = repr(name)
    return text if len(text) <= 80 else text[:77] + "..."
