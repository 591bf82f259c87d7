"""One router per resource; ``ROUTERS`` is what the app includes, in order: the hot
routes of a training loop (steps, backward) first, so the router matches them early."""

from . import (
    autograd,
    catalogue,
    health,
    playground,
    programs,
    sessions,
    stateless,
    steps,
    tensors,
    transfers,
    ui,
)

ROUTERS = [
    steps.router,
    autograd.router,
    programs.router,
    tensors.router,
    transfers.router,
    sessions.router,
    stateless.router,
    catalogue.router,
    health.router,
    ui.router,
    playground.router,
]
