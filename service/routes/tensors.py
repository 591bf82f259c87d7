"""Tensors of a session: bind leaves, read values and grads, flip flags, zero grads."""

from typing import Annotated

from fastapi import Body, Request, Response

from engine import NONLEAF_GRAD_WARNING

from .. import offload, verbs, views
from ..deps import CallDep, SessionDep, TensorNameDep
from ..http import JSONBody
from ..schemas import (
    LEAF_EXAMPLES,
    GradOut,
    LeafIn,
    PatchTensorIn,
    TensorOut,
    ZeroGradIn,
    ZeroGradOut,
)
from ..sessions import grad_of
from ._base import BODY, SESSION, TENSOR, documented, v1_router

router = v1_router("tensors", "/v1/sessions/{session}")


@router.put(
    "/tensors/{tensor}",
    operation_id="putTensor",
    response_model=TensorOut,
    responses={
        201: {"description": "Created", "model": TensorOut},
        **documented(
            *BODY, *SESSION, "invalid_tensor", "dtype_not_differentiable", limits=(413, 507)
        ),
    },
)
async def put_tensor(
    call: CallDep,
    name: TensorNameDep,
    leaf: Annotated[LeafIn, Body(openapi_examples=LEAF_EXAMPLES)],
    request: Request,
) -> Response:
    """Create or rebind a leaf tensor (201 when the name is new, 200 when rebound)."""
    session, out, settings = call.session, call.out, call.settings
    weight = int(request.headers.get("content-length") or 0) // 4
    async with session.lock:
        t, created = await offload.run(
            settings, weight, verbs.put_tensor, session, name, leaf, settings
        )
        return JSONBody(views.tensor(name, t, out), status_code=201 if created else 200)


@router.get(
    "/tensors/{tensor}",
    operation_id="getTensor",
    response_model=TensorOut,
    responses=documented(*TENSOR),
)
async def get_tensor(call: CallDep, name: TensorNameDep) -> Response:
    """The tensor with its metadata, `data` and `grad`."""
    session, out = call.session, call.out
    async with session.lock:
        return JSONBody(views.tensor(name, session.lookup(name), out))


@router.patch(
    "/tensors/{tensor}",
    operation_id="patchTensor",
    response_model=TensorOut,
    responses=documented(*BODY, *TENSOR, "dtype_not_differentiable", "not_leaf", "no_grad_fn"),
)
async def patch_tensor(call: CallDep, name: TensorNameDep, body: PatchTensorIn) -> Response:
    """`requires_grad_(flag)` and/or `retain_grad()`."""
    session, out = call.session, call.out
    async with session.lock:
        return JSONBody(views.tensor(name, verbs.patch_tensor(session, name, body), out))


@router.delete(
    "/tensors/{tensor}",
    operation_id="deleteTensor",
    status_code=204,
    responses=documented(*TENSOR),
)
async def delete_tensor(session: SessionDep, name: TensorNameDep) -> Response:
    """Unbind the name (nodes that saved the tensor keep it alive)."""
    async with session.lock:
        session.lookup(name)
        del session.tensors[name]
    return Response(status_code=204)


@router.get(
    "/tensors/{tensor}/grad",
    operation_id="getGrad",
    response_model=GradOut,
    responses=documented(*TENSOR),
)
async def get_grad(call: CallDep, name: TensorNameDep) -> Response:
    """The tensor's `.grad` (null, with PyTorch's warning, for a non-leaf without retain_grad)."""
    session, out = call.session, call.out
    async with session.lock:
        t = session.lookup(name)
        body: dict[str, object] = {"grad": views.value(grad_of(t), out)}
        if not (t.is_leaf or t.retains_grad):
            body["warning"] = NONLEAF_GRAD_WARNING
        return JSONBody(body)


@router.delete(
    "/tensors/{tensor}/grad",
    operation_id="deleteGrad",
    status_code=204,
    responses=documented(*TENSOR),
)
async def delete_grad(session: SessionDep, name: TensorNameDep) -> Response:
    """Set `.grad` to None."""
    async with session.lock:
        t = session.lookup(name)
        if t.is_leaf or t.retains_grad:
            t.grad = None
    return Response(status_code=204)


@router.post(
    "/zero_grad",
    operation_id="zeroGrad",
    response_model=ZeroGradOut,
    responses=documented(*BODY, *TENSOR),
)
async def zero_grad(
    session: SessionDep, body: Annotated[ZeroGradIn | None, Body()] = None
) -> Response:
    """Zero in place (or set to None) the grads of the named tensors, or of every leaf."""
    async with session.lock:
        done = verbs.zero_grad(session, body or ZeroGradIn())
    return JSONBody({"tensors": done})
