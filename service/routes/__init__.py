"""One router per resource; ``ROUTERS`` is what the app includes, in order."""

from . import autograd, catalogue, health, playground, sessions, stateless, steps, tensors, ui

ROUTERS = [
    sessions.router,
    tensors.router,
    steps.router,
    autograd.router,
    stateless.router,
    catalogue.router,
    health.router,
    ui.router,
    playground.router,
]
