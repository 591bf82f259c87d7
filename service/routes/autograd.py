"""Autograd on a session: backward, grad, and the backward graph."""

from typing import Annotated, Literal

from fastapi import Query, Response

from .. import executor, graph, graph_svg, offload, views
from ..deps import OutputDep, SessionDep, SettingsDep
from ..http import JSONBody
from ..names import check_tensor_name
from ..schemas import BackwardIn, BackwardOut, GradIn, GradResultOut, GraphOut
from ._base import BODY, TENSOR, documented, v1_router

router = v1_router("autograd", "/v1/sessions/{session}")

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
)


@router.post(
    "/backward",
    operation_id="backward",
    response_model=BackwardOut,
    responses=documented(*AUTOGRAD_PROBLEMS, limits=(413, 507)),
)
async def run_backward(
    session: SessionDep, body: BackwardIn, out: OutputDep, settings: SettingsDep
) -> Response:
    """`torch.autograd.backward`: accumulate into `.grad`; returns the grads it changed."""
    names = [body.tensors] if isinstance(body.tensors, str) else body.tensors
    async with session.lock:
        weight = offload.graph_weight(session, names)
        grads = await offload.run(settings, weight, executor.run_backward, session, body, settings)
        return JSONBody({"grads": {n: views.value(g, out) for n, g in grads.items()}})


@router.post(
    "/grad",
    operation_id="grad",
    response_model=GradResultOut,
    responses=documented(*AUTOGRAD_PROBLEMS, "unused_input", limits=(413, 507)),
)
async def run_grad(
    session: SessionDep, body: GradIn, out: OutputDep, settings: SettingsDep
) -> Response:
    """`torch.autograd.grad`: gradients of outputs w.r.t. inputs, `.grad` untouched."""
    names = [body.outputs] if isinstance(body.outputs, str) else body.outputs
    async with session.lock:
        weight = offload.graph_weight(session, names)
        grads = await offload.run(settings, weight, executor.run_grad, session, body, settings)
        return JSONBody({"grads": [views.value(g, out) for g in grads]})


GRAPH_MEDIA = {"dot": "text/vnd.graphviz", "mermaid": "text/vnd.mermaid", "svg": "image/svg+xml"}


@router.get(
    "/graph",
    operation_id="getGraph",
    response_model=GraphOut,
    responses={
        200: {
            "description": "The graph as JSON, Graphviz DOT, Mermaid or SVG (see `format`).",
            "content": {m: {"schema": {"type": "string"}} for m in GRAPH_MEDIA.values()},
        },
        **documented(*TENSOR),
    },
)
async def get_graph(
    session: SessionDep,
    roots: Annotated[
        list[str] | None,
        Query(description="Root tensor names (repeat or comma-separate); default: every non-leaf."),
    ] = None,
    format: Annotated[  # noqa: A002 - the query parameter's public name
        Literal["json", "dot", "mermaid", "svg"], Query(description="json, dot, mermaid or svg.")
    ] = "json",
) -> Response:
    """The backward graph from the roots: grad_fn nodes (freed or not), edges, leaves."""
    names = None
    if roots is not None:
        names = [check_tensor_name(n.strip()) for r in roots for n in r.split(",") if n.strip()]
    async with session.lock:
        result = graph.build(session, names)
    if format == "json":
        return JSONBody(result)
    if format == "svg":
        text = graph_svg.render_svg(result, title=f"backward graph of session {session.name!r}")
    else:
        text = graph.to_dot(result) if format == "dot" else graph.to_mermaid(result)
    return Response(text, media_type=GRAPH_MEDIA[format])
