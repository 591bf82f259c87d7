"""Programs: store a list of batch items once, run it by name, differentiate it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any, TypeVar

import orjson
from fastapi import Path, Response
from starlette.responses import StreamingResponse

from engine import Tensor

from .. import runner
from ..bodies import Payload
from ..compute import compiled, derivatives, verbs
from ..deps import CallDep, Output
from ..errors import LimitExceededError, known_error_response
from ..http import JSONBody
from ..names import TENSOR_NAME_PATTERN, check_tensor_name
from ..schemas.programs import (
    HessianIn,
    HessianOut,
    HvpIn,
    HvpOut,
    JacobianIn,
    JacobianOut,
    JvpIn,
    JvpOut,
    PerSampleGradIn,
    PerSampleGradOut,
    ProgramDetailOut,
    ProgramIn,
    ProgramListOut,
    RunIn,
    RunOut,
    VjpIn,
    VjpOut,
)
from ..schemas.responses import ProgramOut
from ..session import changes, offload
from ..session.mutate import hold, mutate
from ..session.state import Session
from ..views import value
from ._base import BODY, TENSOR, documented, v1_router
from .steps import BATCH_PROBLEMS

PROGRAM = Payload[ProgramIn](ProgramIn, "ProgramIn", remember=False)
RUN = Payload[RunIn](RunIn, "RunIn", required=False, remember=False)

router = v1_router(
    "programs", "/v1/sessions/{session}/programs", session_routes=True, declared_bodies=False
)

ProgramPath = Annotated[
    str,
    Path(
        description="Program name: a Python identifier of at most 64 characters.",
        examples=["train"],
        json_schema_extra={"pattern": TENSOR_NAME_PATTERN},
    ),
]
PROGRAM_PROBLEMS = (*TENSOR[:-1], "program_not_found")
EVENT_STREAM = "text/event-stream"
T = TypeVar("T")


@router.put(
    "/{program}",
    operation_id="putProgram",
    openapi_extra=PROGRAM.openapi(),
    response_model=ProgramOut,
    responses={
        201: {"description": "Stored", "model": ProgramOut},
        **documented(*BODY, *BATCH_PROBLEMS, limits=(413, 429, 507)),
    },
)
async def put_program(call: CallDep, program: ProgramPath) -> Response:
    """Store (201) or replace (200) a program: every item checked and compiled now (422
    with the item's index in `step`); answers what it reads and binds and whether pure."""
    body = await PROGRAM.read(call.request)
    assert body is not None
    session, settings = call.session, call.settings
    name = check_tensor_name(program)
    if len(body.steps) > settings.max_batch_steps:
        raise LimitExceededError(
            f"the program has {len(body.steps)} steps; the limit is {settings.max_batch_steps}",
            status=413,
        )

    def view(result: tuple[compiled.Program, bool]) -> Response:
        return JSONBody(result[0].summary(), status_code=201 if result[1] else 200)

    return await mutate(session, changes.PROGRAM, changes.StoreProgram(name, body), settings, view)


@router.get(
    "", operation_id="listPrograms", response_model=ProgramListOut, responses=documented(*TENSOR)
)
async def list_programs(call: CallDep) -> Response:
    """The session's programs."""
    async with call.session.lock:
        return JSONBody({"programs": [p.summary() for p in call.session.programs.values()]})


@router.get(
    "/{program}",
    operation_id="getProgram",
    response_model=ProgramDetailOut,
    responses=documented(*PROGRAM_PROBLEMS),
)
async def get_program(call: CallDep, program: ProgramPath) -> Response:
    """One program: its facts and its items as stored."""
    async with call.session.lock:
        found = compiled.lookup(call.session, program)
        return JSONBody({**found.summary(), "items": found.stored["steps"]})


@router.delete(
    "/{program}",
    operation_id="deleteProgram",
    status_code=204,
    responses=documented(*PROGRAM_PROBLEMS),
)
async def delete_program(call: CallDep, program: ProgramPath) -> Response:
    """Drop a program (the tensors it bound stay)."""
    name = check_tensor_name(program)
    view: Callable[[None], Response] = lambda _: Response(status_code=204)  # noqa: E731
    return await mutate(call.session, changes.PROGRAM_DEL, name, call.settings, view)


@router.post(
    "/{program}/run",
    operation_id="runProgram",
    openapi_extra=RUN.openapi(),
    response_model=RunOut,
    responses={
        200: {
            "description": "The run's result; with `Accept: text/event-stream`, a stream of "
            "`progress` events then one `result` (or `error`) event.",
            "content": {EVENT_STREAM: {"schema": {"type": "string"}}},
        },
        **documented(*BODY, *BATCH_PROBLEMS, "program_not_found", limits=(413, 507)),
    },
)
async def run_program(call: CallDep, program: ProgramPath) -> Response:
    """Run a program `repeat` times, each iteration all or nothing; a failing iteration
    stops the run (the ones before it kept; the problem carries `iteration` and `step`)."""
    body = await RUN.read(call.request) or RunIn()
    session, settings, out = call.session, call.settings, call.out
    if body.repeat > settings.max_repeat:
        raise LimitExceededError(
            f"repeat is {body.repeat}; the limit is {settings.max_repeat}",
            status=413,
            hint="run it in several requests",
        )
    check_tensor_name(program)
    if EVENT_STREAM in call.request.headers.get("accept", ""):
        async with hold(session, settings, offload.deadline(settings)):
            compiled.lookup(session, program)  # a missing program is a plain 404, not a stream
        return StreamingResponse(
            _stream(call, program, body),
            media_type=EVENT_STREAM,
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )
    async with hold(session, settings, offload.deadline(settings)):
        run = _start(session, compiled.lookup(session, program), settings, body)
        while run.done < run.repeat:
            await run.chunk()
            if run.done < run.repeat and await call.request.is_disconnected():
                break  # no one to answer: stop, as the stream does (what ran is kept)
        return JSONBody(run.result(out))


def _start(session: Session, found: compiled.Program, settings: Any, body: RunIn) -> runner.Run:
    """A run, its fetch keys checked first: each names a tensor the session holds or the
    program binds, so a fetch cannot fail after the iterations ran."""
    fetch = found.fetch if body.fetch is None else tuple(body.fetch)
    for key in fetch:
        tensor, _ = verbs.check_fetch(key)
        if tensor not in found.binds:
            session.lookup(tensor)
    return runner.Run(session, found, settings, body.repeat, fetch, body.every)


async def _stream(call: Any, name: str, body: RunIn) -> AsyncIterator[bytes]:
    """Server-Sent Events: ``progress`` ..., then ``result`` or ``error``. A client that
    goes away cancels this generator between chunks: what completed is journaled."""
    session, settings, out = call.session, call.settings, call.out
    try:
        async with hold(session, settings, offload.deadline(settings)):
            run = _start(session, compiled.lookup(session, name), settings, body)
            async for kind, data in run.events(out):
                yield _event(kind, data)
                if await call.request.is_disconnected():
                    return
            result = run.result(out)
    except Exception as exc:
        problem = known_error_response(exc)
        if problem is None:
            raise
        yield _event("error", orjson.loads(bytes(problem.body)))
        return
    yield _event("result", result)


def _event(kind: str, data: dict[str, Any]) -> bytes:
    data_line = orjson.dumps(data, option=orjson.OPT_SERIALIZE_NUMPY)
    return b"event: " + kind.encode() + b"\ndata: " + data_line + b"\n\n"


# --- derivatives of a pure program ------------------------------------------------------------

JACOBIAN = Payload[JacobianIn](JacobianIn, "JacobianIn", remember=False)
HESSIAN = Payload[HessianIn](HessianIn, "HessianIn", remember=False)
VJP = Payload[VjpIn](VjpIn, "VjpIn", remember=False)
JVP = Payload[JvpIn](JvpIn, "JvpIn", remember=False)
HVP = Payload[HvpIn](HvpIn, "HvpIn", remember=False)
PER_SAMPLE = Payload[PerSampleGradIn](PerSampleGradIn, "PerSampleGradIn", remember=False)

DERIVATIVE_PROBLEMS = (
    *BATCH_PROBLEMS,
    "program_not_found",
    "program_not_pure",
    "dtype_not_differentiable",
)


async def _derive(
    call: Any, program: str, wrt: list[str], of: list[str], fn: Callable[..., T], *args: Any
) -> T:
    """``fn(Function, *args)`` under the session's lock, in a worker thread when heavy.
    Nothing is journaled: a derivative changes nothing in the session."""
    session, settings = call.session, call.settings
    until = offload.deadline(settings)
    async with hold(session, settings, until):
        found = compiled.lookup(session, program)
        f = derivatives.Function(session, found, settings, wrt, of)
        weight = offload.steps_weight(session, found.items) * max(1, len(wrt))
        return await offload.run(settings, weight, fn, f, *args, until=until)


def _grid(grid: derivatives.Grid, out: Output) -> dict[str, dict[str, Any]]:
    return {a: {b: value(t, out) for b, t in row.items()} for a, row in grid.items()}


def _flat(values: dict[str, Tensor], out: Output) -> dict[str, Any]:
    return {k: value(t, out) for k, t in values.items()}


@router.post(
    "/{program}/jacobian",
    operation_id="programJacobian",
    openapi_extra=JACOBIAN.openapi(),
    response_model=JacobianOut,
    responses=documented(*BODY, *DERIVATIVE_PROBLEMS, limits=(413, 507)),
)
async def program_jacobian(call: CallDep, program: ProgramPath) -> Response:
    """`torch.func.jacrev` (mode rev) or `jacfwd` (mode fwd) of a pure program at the
    session's values: `{of: {wrt: value of shape of.shape + wrt.shape}}`."""
    body = await JACOBIAN.read(call.request)
    assert body is not None
    grid = await _derive(call, program, body.wrt, body.of, derivatives.jacobian, body.mode)
    return JSONBody({"jacobian": _grid(grid, call.out)})


@router.post(
    "/{program}/hessian",
    operation_id="programHessian",
    openapi_extra=HESSIAN.openapi(),
    response_model=HessianOut,
    responses=documented(*BODY, *DERIVATIVE_PROBLEMS, "not_scalar", limits=(413, 507)),
)
async def program_hessian(call: CallDep, program: ProgramPath) -> Response:
    """`torch.func.hessian` of one scalar a pure program binds: `{wrt_i: {wrt_j: value}}`."""
    body = await HESSIAN.read(call.request)
    assert body is not None
    grid = await _derive(call, program, body.wrt, [body.of], derivatives.hessian)
    return JSONBody({"hessian": _grid(grid, call.out)})


@router.post(
    "/{program}/vjp",
    operation_id="programVjp",
    openapi_extra=VJP.openapi(),
    response_model=VjpOut,
    responses=documented(*BODY, *DERIVATIVE_PROBLEMS, "invalid_tensor", limits=(413, 507)),
)
async def program_vjp(call: CallDep, program: ProgramPath) -> Response:
    """`torch.func.vjp`: the cotangents of `of` pulled back to `wrt`."""
    body = await VJP.read(call.request)
    assert body is not None
    grads = await _derive(call, program, body.wrt, body.of, derivatives.vjp, body.cotangents)
    return JSONBody({"vjp": _flat(grads, call.out)})


@router.post(
    "/{program}/jvp",
    operation_id="programJvp",
    openapi_extra=JVP.openapi(),
    response_model=JvpOut,
    responses=documented(*BODY, *DERIVATIVE_PROBLEMS, "invalid_tensor", limits=(413, 507)),
)
async def program_jvp(call: CallDep, program: ProgramPath) -> Response:
    """`torch.func.jvp`: the values of `of` and the tangents pushed forward to them."""
    body = await JVP.read(call.request)
    assert body is not None
    wrt = list(body.tangents)
    outs, jv = await _derive(call, program, wrt, body.of, derivatives.jvp, body.tangents)
    return JSONBody({"values": _flat(outs, call.out), "jvp": _flat(jv, call.out)})


@router.post(
    "/{program}/hvp",
    operation_id="programHvp",
    openapi_extra=HVP.openapi(),
    response_model=HvpOut,
    responses=documented(*BODY, *DERIVATIVE_PROBLEMS, "invalid_tensor", limits=(413, 507)),
)
async def program_hvp(call: CallDep, program: ProgramPath) -> Response:
    """A Hessian-vector product of one scalar a pure program binds."""
    body = await HVP.read(call.request)
    assert body is not None
    product = await _derive(call, program, body.wrt, [body.of], derivatives.hvp, body.v)
    return JSONBody({"hvp": _flat(product, call.out)})


@router.post(
    "/{program}/per_sample_grad",
    operation_id="programPerSampleGrad",
    openapi_extra=PER_SAMPLE.openapi(),
    response_model=PerSampleGradOut,
    responses=documented(*BODY, *DERIVATIVE_PROBLEMS, limits=(413, 507)),
)
async def program_per_sample_grad(call: CallDep, program: ProgramPath) -> Response:
    """`torch.func.vmap(torch.func.grad(f), in_dims)`: the gradient of `of` for each sample
    along the `batch` dims, stacked along a new first dim."""
    body = await PER_SAMPLE.read(call.request)
    assert body is not None
    grads = await _derive(
        call, program, body.wrt, [body.of], derivatives.per_sample_grad, body.batch
    )
    return JSONBody({"grads": _flat(grads, call.out)})
