"""Quotas checked before work: steps per batch (413), and the bytes a session, the
sessions of one API key, and all sessions hold (507), counted by ``bindings_bytes``
(tensors, grads, saved graphs). A refusal names its ``budget`` and the bytes ``used``,
``requested`` and its ``limit`` in the problem body."""

from __future__ import annotations

from collections.abc import Iterable

from engine import Tensor

from ..errors import LimitExceededError
from ..settings import Settings
from .state import Session, Transaction, accumulates, bindings_bytes, grad_of

_HINTS = {
    "session": "delete tensors, grads or graphs (backward frees them) you no longer need",
    "key": "delete sessions or tensors of this API key you no longer need "
    "(GRADSERVE_KEY_MAX_BYTES)",
    "server": "delete tensors, grads or sessions you no longer need, or retry later",
}


def check_steps(count: int, settings: Settings) -> None:
    """Refuse (413) a batch over ``max_batch_steps`` before running any of it."""
    if count > settings.max_batch_steps:
        raise LimitExceededError(
            f"the batch has {count} steps; the limit is {settings.max_batch_steps}",
            status=413,
            hint="split it into several batches",
        )


def bytes_after_steps(
    session: Session, settings: Settings, txn: Transaction, bound: Iterable[str], since: int = 0
) -> int:
    """An upper bound of the session's bytes after the steps, refusing (507) past a budget.

    The bound before plus what the newly bound tensors and the graph nodes made since
    ``since`` hold bounds the total without walking every tensor or node of the session;
    only near a limit is the exact total computed."""
    before = session.bytes_bound if session.bytes_bound is not None else session.nbytes()
    upper = before + bindings_bytes((txn.bindings[n] for n in bound), since)
    if over_budget(session, settings, upper) is None:
        return upper
    exact = bindings_bytes(txn.bindings.values())
    refuse_bytes(session, settings, exact, max(exact - before, 0))
    return exact


def check_bytes(session: Session, settings: Settings, tensors: Iterable[Tensor]) -> int:
    """Refuse (507) bindings that would exceed a budget; returns their bytes."""
    total = bindings_bytes(tensors)
    refuse_bytes(session, settings, total)
    return total


def over_budget(session: Session, settings: Settings, total: int) -> tuple[str, int, int] | None:
    """The first budget ``total`` bytes in ``session`` would exceed: (name, bytes held by
    what it covers besides this session, its limit); None within all three."""
    total += session.program_bytes()  # the stored programs count too
    if total > settings.max_session_bytes:
        return "session", 0, settings.max_session_bytes
    held = session.held_elsewhere
    others, same_key = held() if held is not None else (0, 0)
    if session.owner is not None and same_key + total > settings.key_max_bytes:
        return "key", same_key, settings.key_max_bytes
    if others + total > settings.max_total_bytes:
        return "server", others, settings.max_total_bytes
    return None


def refuse_bytes(session: Session, settings: Settings, total: int, requested: int = 0) -> None:
    """507 when the session would hold more than its limit, its key's sessions more than
    ``key_max_bytes``, or all sessions more than ``max_total_bytes``; ``total`` includes
    the ``requested`` bytes of the work about to run."""
    over = over_budget(session, settings, total)
    if over is None:
        return
    budget, others, limit = over
    used = others + total - requested
    what = {
        "session": f"session {session.name!r}",
        "key": "the sessions of this API key",
        "server": "the server's sessions",
    }[budget]
    ask = f" and this request needs about {requested} more" if requested else ""
    raise LimitExceededError(
        f"{what} hold {used} bytes{ask}; the {budget} budget is {limit} bytes",
        status=507,
        hint=_HINTS[budget],
        budget=budget,
        used=used,
        requested=requested,
        limit=limit,
    )


def bytes_ahead(bindings: dict[str, Tensor]) -> int:
    """Bytes the first grads of the session's leaves could add: checked before backward."""
    extra = 0
    for t in bindings.values():
        if accumulates(t) and grad_of(t) is None:
            extra += t._data.nbytes
    return extra
