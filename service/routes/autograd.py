"""Autograd on a session: backward, grad, and the backward graph."""

from typing import Annotated, Any, Literal

from fastapi import Query, Response
from starlette.concurrency import run_in_threadpool

from .. import graph_svg, views
from ..bodies import Payload
from ..compute import graph
from ..deps import CallDep, SessionDep
from ..http import JSONBody
from ..names import check_tensor_name
from ..schemas import BackwardIn, BackwardOut, GradIn, GradResultOut, GraphFormat, GraphOut
from ..session import changes
from ..session.mutate import mutate
from ..session.state import Session
from ._base import BODY, TENSOR, documented, v1_router

BACKWARD = Payload[BackwardIn](BackwardIn, "BackwardIn")
GRAD = Payload[GradIn](GradIn, "GradIn")

router = v1_router("autograd", "/v1/sessions/{session}", session_routes=True, declared_bodies=False)

AUTOGRAD_PROBLEMS = (
    *BODY,
    *TENSOR,
    "invalid_tensor",
    "bad_arguments",
    "shape_mismatch",
    "not_scalar",
    "no_grad_fn",
    "graph_freed",
    "version_mismatch",
    "graph_lost",
)


@router.post(
    "/backward",
    operation_id="backward",
    openapi_extra=BACKWARD.openapi(),
    response_model=BackwardOut,
    responses=documented(*AUTOGRAD_PROBLEMS, limits=(413, 507)),
)
async def run_backward(call: CallDep) -> Response:
    """`torch.autograd.backward`: accumulate into `.grad`; returns the grads it changed."""
    body = await BACKWARD.read(call.request)
    assert body is not None
    out = call.out
    return await mutate(
        call.session,
        changes.BACKWARD,
        body,
        call.settings,
        lambda grads: JSONBody({"grads": {n: views.value(g, out) for n, g in grads.items()}}),
    )


@router.post(
    "/grad",
    operation_id="grad",
    openapi_extra=GRAD.openapi(),
    response_model=GradResultOut,
    responses=documented(*AUTOGRAD_PROBLEMS, "unused_input", limits=(413, 507)),
)
async def run_grad(call: CallDep) -> Response:
    """`torch.autograd.grad`: gradients of outputs w.r.t. inputs, `.grad` untouched."""
    body = await GRAD.read(call.request)
    assert body is not None
    out = call.out
    return await mutate(
        call.session,
        changes.GRAD,
        body,
        call.settings,
        lambda grads: JSONBody({"grads": [views.value(g, out) for g in grads]}),
    )


GRAPH_MEDIA = {"dot": "text/vnd.graphviz", "mermaid": "text/vnd.mermaid", "svg": "image/svg+xml"}
RootsQuery = Annotated[
    list[str],
    Query(
        description="Root tensors, one name per parameter (`roots=y&roots=z`; `roots=y,z` is "
        "read too); default: the bound tensors at the end of a computation.",
        json_schema_extra={"items": {"$ref": "#/components/schemas/TensorName"}},
    ),
]


TemporariesQuery = Annotated[
    bool,
    Query(description="Show a client's temporaries (names starting with `_`); hidden by default."),
]


SavedQuery = Annotated[
    bool,
    Query(description="Annotate each grad_fn with the shapes of the tensors it saved."),
]
AccumulateGradQuery = Annotated[
    bool,
    Query(description="Draw each leaf's AccumulateGrad node apart from the leaf (torchviz)."),
]


async def _graph(
    session: Session,
    roots: list[str],
    temporaries: bool,
    saved: bool = False,
    accumulate_grad: bool = False,
) -> dict[str, Any]:
    names = None
    if roots:
        names = [check_tensor_name(n.strip()) for r in roots for n in r.split(",") if n.strip()]
    async with session.lock:
        return graph.build(
            session,
            names,
            temporaries=temporaries,
            saved=saved,
            accumulate_grad=accumulate_grad,
        )


async def _drawing(session: Session, result: dict[str, Any], format: str) -> Response:  # noqa: A002
    if format == "svg":  # graphviz runs as a subprocess: off the event loop
        title = f"backward graph of session {session.name!r}"
        text = await run_in_threadpool(graph_svg.render, result, title=title)
    else:
        text = graph.to_dot(result) if format == "dot" else graph.to_mermaid(result)
    return Response(text, media_type=GRAPH_MEDIA[format])


@router.get(
    "/graph",
    operation_id="getGraph",
    response_model=GraphOut,
    responses=documented(*TENSOR),
)
async def get_graph(
    session: SessionDep,
    roots: RootsQuery = [],  # noqa: B006 - FastAPI copies defaults
    format: Annotated[  # noqa: A002 - kept for old clients; renderGraph documents the drawings
        Literal["json", "dot", "mermaid", "svg"], Query(include_in_schema=False)
    ] = "json",
    temporaries: TemporariesQuery = False,
    saved: SavedQuery = False,
    accumulate_grad: AccumulateGradQuery = False,
) -> Response:
    """The backward graph from the roots: grad_fn nodes (freed or not, with shapes), edges,
    leaves. Default roots: the bound tensors no other bound tensor's graph reaches."""
    result = await _graph(session, roots, temporaries, saved, accumulate_grad)
    return JSONBody(result) if format == "json" else await _drawing(session, result, format)


@router.get(
    "/graph.{format}",
    operation_id="renderGraph",
    response_class=Response,
    responses={
        200: {
            "description": "The drawing: text for dot (text/vnd.graphviz) and mermaid "
            "(text/vnd.mermaid), an image for svg (image/svg+xml).",
            "content": {media: {"schema": {"type": "string"}} for media in GRAPH_MEDIA.values()},
        },
        **documented(*TENSOR),
    },
)
async def render_graph(
    session: SessionDep,
    format: GraphFormat,  # noqa: A002 - the path parameter's public name
    roots: RootsQuery = [],  # noqa: B006 - FastAPI copies defaults
    temporaries: TemporariesQuery = False,
    saved: SavedQuery = False,
    accumulate_grad: AccumulateGradQuery = False,
) -> Response:
    """The backward graph drawn as Graphviz DOT, Mermaid or SVG (`<img src=".../graph.svg">`);
    arrows point from an input to its consumer in all three."""
    result = await _graph(session, roots, temporaries, saved, accumulate_grad)
    return await _drawing(session, result, format)
