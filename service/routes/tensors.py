"""Tensors of a session: bind leaves, read values and grads, flip flags, zero grads."""

from typing import Annotated, Any

from fastapi import Body, Response

from engine import NONLEAF_GRAD_WARNING, Tensor

from .. import views
from ..bodies import Payload
from ..compute import transfers
from ..deps import CallDep, SessionDep, SettingsDep, TensorNameDep
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
from ..session import changes
from ..session.mutate import mutate
from ..session.state import grad_of
from ._base import BODY, SESSION, TENSOR, documented, v1_router

router = v1_router("tensors", "/v1/sessions/{session}", session_routes=True)

LEAF = Payload[LeafIn](LeafIn, "LeafIn", examples=LEAF_EXAMPLES)
_BYTES = {"schema": {"type": "string", "format": "binary"}}
PUT_OPENAPI = {
    "requestBody": {
        "required": True,
        "content": {
            **LEAF.openapi()["requestBody"]["content"],
            transfers.BINARY: {  # (a media type object has no description in OpenAPI 3.1)
                "schema": {
                    **_BYTES["schema"],
                    "description": "Raw little-endian bytes of `shape` and `dtype` (query).",
                },
            },
        },
    },
    "parameters": [
        {
            "in": "query",
            "name": "dtype",
            "required": False,
            "description": "With a binary body: the element type (float32 when absent).",
            "schema": {"$ref": "#/components/schemas/Dtype"},
        },
        {
            "in": "query",
            "name": "shape",
            "required": False,
            "description": "With a binary body: comma-separated dimensions, empty for a 0-d "
            "tensor (flat when absent).",
            "schema": {"type": "string", "pattern": r"^(\d+(,\d+){0,31})?$"},
        },
        {
            "in": "query",
            "name": "requires_grad",
            "required": False,
            "description": "With a binary body: whether the leaf requires grad.",
            "schema": {"type": "boolean", "default": False},
        },
    ],
}
BINARY_200: dict[str, Any] = {
    "description": "The tensor; with `Accept: application/octet-stream`, its raw "
    "little-endian bytes.",
    "content": {transfers.BINARY: _BYTES},
    "headers": {
        transfers.DTYPE_HEADER: {
            "description": "With raw bytes: the dtype.",
            "schema": {"type": "string"},
        },
        transfers.SHAPE_HEADER: {
            "description": "With raw bytes: comma-separated dimensions (empty for 0-d).",
            "schema": {"type": "string"},
        },
    },
}


@router.put(
    "/tensors/{tensor}",
    operation_id="putTensor",
    response_model=TensorOut,
    openapi_extra=PUT_OPENAPI,
    responses={
        201: {"description": "Created", "model": TensorOut},
        **documented(
            *BODY, *SESSION, "invalid_tensor", "dtype_not_differentiable", limits=(413, 507)
        ),
    },
)
async def put_tensor(call: CallDep, name: TensorNameDep) -> Response:
    """Create or rebind a leaf tensor (201 when the name is new, 200 when rebound): JSON,
    or raw bytes with `Content-Type: application/octet-stream` and `dtype`, `shape`,
    `requires_grad` as query parameters."""
    out, request = call.out, call.request
    size = int(request.headers.get("content-length") or 0)
    if transfers.is_binary(request.headers.get("content-type")):
        query = transfers.binary_params(request.query_params, request.headers)
        put = changes.PutLeaf(name, raw=await request.body(), query=query)
    else:
        leaf = await LEAF.read(request)
        assert leaf is not None  # a required body
        put = changes.PutLeaf(name, leaf=leaf)
    put.size = size

    def view(result: tuple[Tensor, bool]) -> Response:
        t, created = result
        return JSONBody(views.tensor(name, t, out), status_code=201 if created else 200)

    return await mutate(call.session, changes.PUT, put, call.settings, view)


@router.get(
    "/tensors/{tensor}",
    operation_id="getTensor",
    response_model=TensorOut,
    responses={200: BINARY_200, **documented(*TENSOR)},
)
async def get_tensor(call: CallDep, name: TensorNameDep) -> Response:
    """The tensor with its metadata, `data` and `grad`; with `Accept:
    application/octet-stream`, its raw bytes (dtype and shape in headers)."""
    session, out = call.session, call.out
    async with session.lock:
        t = session.lookup(name)
        if transfers.wants_binary(call.request.headers.get("accept")):
            return transfers.binary_response(t)
        return JSONBody(views.tensor(name, t, out))


@router.patch(
    "/tensors/{tensor}",
    operation_id="patchTensor",
    response_model=TensorOut,
    responses=documented(
        *BODY, *TENSOR, "dtype_not_differentiable", "not_leaf", "no_grad_fn", limits=(413,)
    ),
)
async def patch_tensor(call: CallDep, name: TensorNameDep, body: PatchTensorIn) -> Response:
    """`requires_grad_(flag)` and/or `retain_grad()`."""
    patch = changes.Patch(name, body)
    return await mutate(
        call.session,
        changes.PATCH,
        patch,
        call.settings,
        lambda t: JSONBody(views.tensor(name, t, call.out)),
    )


@router.delete(
    "/tensors/{tensor}",
    operation_id="deleteTensor",
    status_code=204,
    responses=documented(*TENSOR),
)
async def delete_tensor(
    session: SessionDep, settings: SettingsDep, name: TensorNameDep
) -> Response:
    """Unbind the name (nodes that saved the tensor keep it alive)."""
    return await mutate(session, changes.DEL_TENSOR, name, settings, _no_content)


@router.get(
    "/tensors/{tensor}/grad",
    operation_id="getGrad",
    response_model=GradOut,
    responses={
        200: BINARY_200,
        204: {"description": "With `Accept: application/octet-stream`: the grad is None."},
        **documented(*TENSOR),
    },
)
async def get_grad(call: CallDep, name: TensorNameDep) -> Response:
    """The tensor's `.grad` (null, with PyTorch's warning, for a non-leaf without retain_grad);
    with `Accept: application/octet-stream`, its raw bytes, or 204 when it is None."""
    session, out = call.session, call.out
    async with session.lock:
        t = session.lookup(name)
        g = grad_of(t)
        if transfers.wants_binary(call.request.headers.get("accept")):
            return Response(status_code=204) if g is None else transfers.binary_response(g)
        body: dict[str, object] = {"grad": views.value(g, out)}
        if not (t.is_leaf or t.retains_grad):
            body["warning"] = NONLEAF_GRAD_WARNING
        return JSONBody(body)


@router.delete(
    "/tensors/{tensor}/grad",
    operation_id="deleteGrad",
    status_code=204,
    responses=documented(*TENSOR),
)
async def delete_grad(session: SessionDep, settings: SettingsDep, name: TensorNameDep) -> Response:
    """Set `.grad` to None."""
    return await mutate(session, changes.DEL_GRAD, name, settings, _no_content)


def _no_content(_: object) -> Response:
    return Response(status_code=204)


@router.post(
    "/zero_grad",
    operation_id="zeroGrad",
    response_model=ZeroGradOut,
    responses=documented(*BODY, *TENSOR, limits=(413,)),
)
async def zero_grad(
    session: SessionDep, settings: SettingsDep, body: Annotated[ZeroGradIn | None, Body()] = None
) -> Response:
    """Zero in place (or set to None) the grads of the named tensors, or of every leaf."""
    return await mutate(
        session,
        changes.ZERO_GRAD,
        body or ZeroGradIn(),
        settings,
        lambda done: JSONBody({"tensors": done}),
    )
