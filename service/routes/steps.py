"""Running ops on a session: one step, or a batch that is all or nothing."""

from typing import Any

from fastapi import Request, Response

from .. import views
from ..bodies import Payload
from ..compute import programs
from ..deps import CallDep, Output
from ..http import JSONBody
from ..schemas import STEP_EXAMPLES, BatchIn, BatchOut, StepIn, TensorListOut, TensorOut
from ..session import changes, quotas
from ..session.mutate import mutate
from ._base import BODY, TENSOR, documented, v1_router

STEP = Payload[StepIn](StepIn, "StepIn", examples=STEP_EXAMPLES)
BATCH = Payload[BatchIn](BatchIn, "BatchIn")

router = v1_router("steps", "/v1/sessions/{session}", session_routes=True, declared_bodies=False)

STEP_PROBLEMS = (
    *BODY,
    *TENSOR,
    "invalid_tensor",
    "expr_invalid",
    "unknown_op",
    "bad_arguments",
    "shape_mismatch",
    "dtype_mismatch",
    "index_out_of_range",
    "not_leaf",
    "leaf_inplace",
    "inplace_view",
)
BATCH_PROBLEMS = (
    *STEP_PROBLEMS,
    "not_scalar",
    "no_grad_fn",
    "unused_input",
    "graph_freed",
    "version_mismatch",
)


@router.post(
    "/ops",
    operation_id="runOp",
    openapi_extra=STEP.openapi(),
    status_code=201,
    response_model=TensorOut | TensorListOut,
    responses=documented(*STEP_PROBLEMS, limits=(413, 507)),
)
async def run_op(call: CallDep) -> Response:
    """Run one step and bind its result; returns the tensor (a list for several results)."""
    step = await STEP.read(call.request)
    assert step is not None
    session, out = call.session, call.out

    def view(result: programs.ProgramResult) -> Response:
        tensors = [views.tensor(n, session.tensors[n], out) for n in result.bound]
        body = tensors[0] if isinstance(step.out, str) else {"tensors": tensors}
        return JSONBody(body, status_code=201)

    return await mutate(session, changes.STEPS, changes.Program([step]), call.settings, view)


@router.post(
    "/batch",
    operation_id="runBatch",
    openapi_extra=BATCH.openapi(),
    response_model=BatchOut,
    responses=documented(*BATCH_PROBLEMS, limits=(413, 507)),
)
async def run_batch(call: CallDep) -> Response:
    """Run steps and `backward`/`grad`/`zero_grad` items in order, all or nothing; returns
    the tensors bound and, with `fetch`, the values read after the last item."""
    batch = await BATCH.read(call.request)
    assert batch is not None
    session, out, settings = call.session, call.out, call.settings
    quotas.check_steps(len(batch.steps), settings)

    def view(result: programs.ProgramResult) -> Response:
        return JSONBody(batch_body(session, result, out, call.request))

    program = changes.Program(batch.steps, batch.fetch)
    return await mutate(session, changes.STEPS, program, settings, view)


def batch_body(
    session: Any, result: programs.ProgramResult, out: Output, request: Request
) -> dict[str, Any]:
    """The steps' tensors and the fetched values. What is fetched comes back with its data
    whatever ``?values=`` says (it was asked for by name); with ``fetch`` present the
    steps' tensors are metadata only unless ``?values=true`` is given, so a training loop
    that fetches its loss moves only the loss."""
    fetched = out
    if result.values is not None:
        fetched = Output(out.encoding, True)
        if "values" not in request.query_params:
            out = Output(out.encoding, False)
    body: dict[str, Any] = {
        "tensors": [views.tensor(n, session.tensors[n], out) for n in result.bound]
    }
    if result.values is not None:
        body["values"] = {k: views.value(v, fetched) for k, v in result.values.items()}
    return body
