"""``POST /v1/gradient``: a whole computation in one call; no session is kept, so any
replica can answer."""

import time
from typing import Any

from fastapi import Request, Response

from engine import Tensor

from .. import views
from ..compute import compiled, derivatives, programs, verbs
from ..deps import OutputDep, SettingsDep
from ..http import JSONBody
from ..schemas import GradientIn, GradientOut
from ..schemas.programs import ProgramIn
from ..session import offload, quotas
from ..session.records import dump_step
from ..session.state import Session, grad_of
from ..settings import Settings
from ._base import documented, v1_router
from .autograd import AUTOGRAD_PROBLEMS
from .steps import STEP_PROBLEMS

router = v1_router("stateless")


def compute(body: GradientIn, settings: Settings) -> tuple[dict[str, Tensor | None], Any]:
    """Leaves, steps, backward, then the fetched tensors and the derivatives asked for (of
    the steps as a function of the leaves): all or nothing by construction."""
    now = time.time()
    session = Session("stateless", None, settings.session_ttl_seconds, now, now)
    fetch = [verbs.check_fetch(key) for key in body.fetch]
    for name, leaf in body.tensors.items():
        verbs.put_tensor(session, name, leaf, settings)
    asked = {k: getattr(body, k) for k in DERIVATIVES if getattr(body, k) is not None}
    if asked:  # the steps as a program, checked and compiled before anything runs
        stored = {"steps": [dump_step(s) for s in body.steps]}
        function = compiled.compile_program("gradient", ProgramIn.model_construct(steps=list(body.steps), fetch=[]),
                                            settings, stored)  # fmt: skip
    derived = {kind: _derive(session, function, settings, kind, b) for kind, b in asked.items()}
    programs.run_steps(session, body.steps, settings)
    if body.backward is not None:
        verbs.run_backward(session, body.backward, settings)
    values: dict[str, Tensor | None] = {}
    for key, (name, want_grad) in zip(body.fetch, fetch):
        t = session.lookup(name)
        values[key] = grad_of(t) if want_grad else t
    return values, derived


DERIVATIVES = ("jacobian", "hessian", "vjp", "jvp", "hvp", "per_sample_grad")


def _derive(session: Session, program: compiled.Program, settings: Settings, kind: str,
            b: Any) -> Any:  # fmt: skip
    """One derivative kind at the leaves' values (before the steps ran or a backward)."""
    if kind == "jacobian":
        return derivatives.jacobian(
            derivatives.Function(session, program, settings, b.wrt, b.of), b.mode
        )
    if kind == "hessian":
        return derivatives.hessian(derivatives.Function(session, program, settings, b.wrt, [b.of]))
    if kind == "vjp":
        f = derivatives.Function(session, program, settings, b.wrt, b.of)
        return derivatives.vjp(f, b.cotangents)
    if kind == "jvp":
        f = derivatives.Function(session, program, settings, list(b.tangents), b.of)
        return derivatives.jvp(f, b.tangents)[1]
    f = derivatives.Function(session, program, settings, b.wrt, [b.of])
    if kind == "hvp":
        return derivatives.hvp(f, b.v)
    return derivatives.per_sample_grad(f, b.batch)


def _encoded(value: Any, out: Any) -> Any:
    """A derivative's tensors, nested one or two levels, written as values."""
    return {k: _encoded(v, out) if isinstance(v, dict) else views.value(v, out)
            for k, v in value.items()}  # fmt: skip


@router.post(
    "/gradient",
    operation_id="computeGradient",
    response_model=GradientOut,
    responses=documented(
        *dict.fromkeys(STEP_PROBLEMS + AUTOGRAD_PROBLEMS), "program_not_pure", limits=(413, 507)
    ),
)
async def compute_gradient(
    body: GradientIn, out: OutputDep, settings: SettingsDep, request: Request
) -> Response:
    """Leaves, steps and a backward in one stateless call; returns the `fetch`ed values, and
    the derivatives asked for (`jacobian`, `hessian`, `vjp`, `jvp`, `hvp`,
    `per_sample_grad`, with the bodies of the program routes) of the steps as a function
    of the leaves."""
    quotas.check_steps(len(body.steps), settings)
    weight = int(request.headers.get("content-length") or 0) // 4 + 64 * len(body.steps)
    values, derived = await offload.run(settings, weight, compute, body, settings)
    answer = {"values": {k: views.value(v, out) for k, v in values.items()}}
    answer.update((kind, _encoded(d, out)) for kind, d in derived.items())
    return JSONBody(answer)
