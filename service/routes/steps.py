"""Running ops on a session: one step, or a batch that is all or nothing."""

from typing import Annotated

from fastapi import Body, Response

from .. import executor, journal, offload, views
from ..deps import OutputDep, SessionDep, SettingsDep
from ..http import JSONBody
from ..schemas import STEP_EXAMPLES, BatchIn, StepIn, TensorListOut, TensorOut
from ._base import BODY, TENSOR, documented, v1_router

router = v1_router("steps", "/v1/sessions/{session}")

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
)


@router.post(
    "/ops",
    operation_id="runOp",
    status_code=201,
    response_model=TensorOut | TensorListOut,
    responses=documented(*STEP_PROBLEMS, limits=(413, 507)),
)
async def run_op(
    session: SessionDep,
    step: Annotated[StepIn, Body(openapi_examples=STEP_EXAMPLES)],
    out: OutputDep,
    settings: SettingsDep,
) -> Response:
    """Run one step and bind its result; returns the tensor (a list for several results)."""
    async with session.lock:
        weight = offload.steps_weight(session, [step])
        names = await offload.run(settings, weight, executor.run_steps, session, [step], settings)
        await journal.record(session, "steps", [step])
        tensors = [views.tensor(n, session.tensors[n], out) for n in names]
    body = tensors[0] if isinstance(step.out, str) else {"tensors": tensors}
    return JSONBody(body, status_code=201)


@router.post(
    "/batch",
    operation_id="runBatch",
    response_model=TensorListOut,
    responses=documented(*STEP_PROBLEMS, limits=(413, 507)),
)
async def run_batch(
    session: SessionDep, batch: BatchIn, out: OutputDep, settings: SettingsDep
) -> Response:
    """Run steps in order, all or nothing; returns every tensor the batch bound."""
    executor.check_steps(len(batch.steps), settings)
    async with session.lock:
        weight = offload.steps_weight(session, batch.steps)
        names = await offload.run(
            settings, weight, executor.run_steps, session, batch.steps, settings
        )
        await journal.record(session, "steps", batch.steps)
        return JSONBody({"tensors": [views.tensor(n, session.tensors[n], out) for n in names]})
