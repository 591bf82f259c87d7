"""A session's leaves and grads as a safetensors file: export, and import all or nothing."""

from fastapi import Response

from .. import views
from ..compute import transfers
from ..deps import CallDep
from ..errors import UnsupportedMediaTypeError
from ..http import JSONBody
from ..schemas import TensorListOut
from ..session import changes, offload
from ..session.mutate import mutate
from ._base import SESSION, documented, v1_router

router = v1_router("tensors", "/v1/sessions/{session}", session_routes=True, declared_bodies=False)

_SAFETENSORS = {
    transfers.BINARY: {
        "schema": {  # (a media type object has no description in OpenAPI 3.1)
            "type": "string",
            "format": "binary",
            "description": "A safetensors file: leaves by name, grads as `name.grad`, the "
            "leaves that require grad in the metadata (`requires_grad`, a JSON list).",
        },
    }
}


@router.get(
    "/export",
    operation_id="exportSession",
    response_class=Response,
    responses={
        200: {"description": "The session as a safetensors file.", "content": _SAFETENSORS},
        **documented(*SESSION),
    },
)
async def export_session(call: CallDep) -> Response:
    """The session's leaves and grads as a safetensors file (`safetensors.torch.load_file`
    reads it)."""
    session = call.session
    async with session.lock:
        weight = sum(t._data.size for t in session.tensors.values())
        raw = await offload.run(call.settings, weight, transfers.export_session, session)
    return Response(
        raw,
        media_type=transfers.BINARY,
        headers={"Content-Disposition": f'attachment; filename="{session.name}.safetensors"'},
    )


@router.post(
    "/import",
    operation_id="importSession",
    response_model=TensorListOut,
    openapi_extra={"requestBody": {"required": True, "content": _SAFETENSORS}},
    responses=documented(
        *SESSION,
        "unsupported_media_type",
        "invalid_tensor",
        "dtype_not_differentiable",
        limits=(413, 507),
    ),
)
async def import_session(call: CallDep) -> Response:
    """Create or rebind the leaves (and grads) of a safetensors file, all or nothing;
    returns them."""
    session, request = call.session, call.request
    content_type = request.headers.get("content-type")
    if not transfers.is_binary(content_type):
        raise UnsupportedMediaTypeError(
            f"the body must be application/octet-stream, not {content_type or 'untyped'}",
            hint="send the safetensors file with 'Content-Type: application/octet-stream'",
        )
    raw = await request.body()

    def view(names: list[str]) -> Response:
        return JSONBody({"tensors": [views.tensor(n, session.tensors[n], call.out) for n in names]})

    return await mutate(session, changes.IMPORT, raw, call.settings, view)
