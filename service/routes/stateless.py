"""``POST /v1/gradient``: a whole computation in one call; no session is kept, so any
replica can answer."""

import time

from fastapi import Request, Response

from engine import Tensor

from .. import programs, verbs, views
from ..deps import OutputDep, SettingsDep
from ..http import JSONBody
from ..schemas import GradientIn, GradientOut
from ..session import offload, quotas
from ..session.state import Session, grad_of
from ..settings import Settings
from ._base import documented, v1_router
from .autograd import AUTOGRAD_PROBLEMS
from .steps import STEP_PROBLEMS

router = v1_router("stateless")


def compute(body: GradientIn, settings: Settings) -> dict[str, Tensor | None]:
    """Leaves, steps, backward, then the fetched tensors: all or nothing by construction."""
    now = time.time()
    session = Session("stateless", None, settings.session_ttl_seconds, now, now)
    fetch = [verbs.check_fetch(key) for key in body.fetch]
    for name, leaf in body.tensors.items():
        verbs.put_tensor(session, name, leaf, settings)
    programs.run_steps(session, body.steps, settings)
    if body.backward is not None:
        verbs.run_backward(session, body.backward, settings)
    values: dict[str, Tensor | None] = {}
    for key, (name, want_grad) in zip(body.fetch, fetch):
        t = session.lookup(name)
        values[key] = grad_of(t) if want_grad else t
    return values


@router.post(
    "/gradient",
    operation_id="computeGradient",
    response_model=GradientOut,
    responses=documented(*dict.fromkeys(STEP_PROBLEMS + AUTOGRAD_PROBLEMS), limits=(413, 507)),
)
async def compute_gradient(
    body: GradientIn, out: OutputDep, settings: SettingsDep, request: Request
) -> Response:
    """Leaves, steps and a backward in one stateless call; returns the `fetch`ed values."""
    quotas.check_steps(len(body.steps), settings)
    weight = int(request.headers.get("content-length") or 0) // 4 + 64 * len(body.steps)
    values = await offload.run(settings, weight, compute, body, settings)
    return JSONBody({"values": {k: views.value(v, out) for k, v in values.items()}})
