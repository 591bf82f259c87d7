"""Quotas checked before work: steps per batch, bytes per session (507)."""

from __future__ import annotations

from collections.abc import Iterable

from engine import Tensor

from ..errors import LimitExceededError
from ..settings import Settings
from .state import Session, Transaction, bindings_bytes, grad_of


def check_steps(count: int, settings: Settings) -> None:
    """Refuse (413) a batch over ``max_batch_steps`` before running any of it."""
    if count > settings.max_batch_steps:
        raise LimitExceededError(
            f"the batch has {count} steps; the limit is {settings.max_batch_steps}",
            status=413,
            hint="split it into several batches",
        )


def bytes_after_steps(
    session: Session, settings: Settings, txn: Transaction, bound: Iterable[str]
) -> int:
    """An upper bound of the session's bytes after the steps, refusing (507) past the limit.

    Steps only add what they bind (in-place writes keep sizes), so the bound before plus
    the newly bound tensors, counted whole, bounds the total without walking every tensor
    of the session; only near the limit is the exact total computed."""
    before = session.bytes_bound if session.bytes_bound is not None else session.nbytes()
    upper = before + bindings_bytes(txn.bindings[n] for n in bound)
    if upper <= settings.max_session_bytes and _within_total(session, settings, upper):
        return upper
    exact = bindings_bytes(txn.bindings.values())
    refuse_bytes(session, settings, exact)
    return exact


def check_bytes(session: Session, settings: Settings, tensors: Iterable[Tensor]) -> int:
    """Refuse (507) bindings that would exceed the session memory limit; returns their bytes."""
    total = bindings_bytes(tensors)
    refuse_bytes(session, settings, total)
    return total


def refuse_bytes(session: Session, settings: Settings, total: int) -> None:
    """507 when the session would hold more than its limit, or all sessions together more
    than ``max_total_bytes``."""
    if total > settings.max_session_bytes:
        raise LimitExceededError(
            f"session {session.name!r} would hold {total} bytes; the limit is "
            f"{settings.max_session_bytes}",
            status=507,
            hint="delete tensors or grads you no longer need",
        )
    if not _within_total(session, settings, total):
        raise LimitExceededError(
            f"the server's sessions would hold more than {settings.max_total_bytes} bytes "
            f"together (session {session.name!r} would hold {total})",
            status=507,
            hint="delete tensors, grads or sessions you no longer need, or retry later",
        )


def _within_total(session: Session, settings: Settings, total: int) -> bool:
    held = session.held_elsewhere
    if held is None or total > settings.max_total_bytes:
        return total <= settings.max_total_bytes
    return held() + total <= settings.max_total_bytes


def bytes_ahead(bindings: dict[str, Tensor]) -> int:
    """Bytes the first grads of the session's leaves could add: checked before backward."""
    extra = 0
    for t in bindings.values():
        if t.requires_grad and (t.is_leaf or t.retains_grad) and grad_of(t) is None:
            extra += t._data.nbytes
    return extra
