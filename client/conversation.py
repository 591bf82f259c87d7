"""Conversations: a call written once as a generator that yields effects (a ``Request``,
a ``Stream``, or for a transport an httpx call) and receives their answers; ``drive`` runs
one, awaiting each effect through ``send``. A synchronous caller runs ``drive`` with
``run_now`` (its ``send`` never suspends), an asynchronous one awaits it: one body of code
for both, as ``httpx`` runs one client over a sync and an async transport."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Generator
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Request:
    """An effect: one HTTP request; the driver sends back the decoded answer."""

    method: str
    path: str
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass
class Stream:
    """An effect: a POST answered with Server-Sent Events; each progress event goes to
    ``on_progress``, the driver sends back the result event's body."""

    path: str
    body: dict[str, Any]
    on_progress: Callable[[int, dict[str, Any]], Any]


# a conversation with the server: yields effects, receives their results, returns a value
Conversation = Generator["Request | Stream", Any, Any]


async def drive(
    conversation: Generator[Any, Any, Any], send: Callable[[Any], Awaitable[Any]]
) -> Any:
    """The one driver: each effect to ``send``, its answer (or error) back to the
    conversation; the conversation's value. ``AsyncSession`` (``AsyncTransport``) awaits
    it; ``Session`` (``Transport``) runs it with ``run_now``, its ``send`` never suspending."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            effect = conversation.throw(error) if error is not None else conversation.send(value)
        except StopIteration as stop:
            return stop.value
        value, error = None, None
        try:
            value = await send(effect)
        except Exception as exc:  # handed to the conversation: it may catch it
            error = exc


def run_now(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine that never suspends (a sync session's ``drive``) to its value."""
    try:
        coroutine.send(None)
    except StopIteration as stop:
        return stop.value
    coroutine.close()
    raise RuntimeError("a synchronous session's request suspended")
