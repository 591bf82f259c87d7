"""Response bodies (``*Out``): tensors, sessions, grads, the graph, the catalogue, problems."""

from __future__ import annotations

from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
)

from .fields import Dtype, TensorData


class ValueOut(BaseModel):
    """A tensor value in a response: `data` (json encoding) or `b64` + `shape` (base64)."""

    data: TensorData | None = None
    b64: str | None = None
    dtype: Dtype
    shape: list[int] | None = None


class TensorOut(BaseModel):
    """A named tensor: metadata, and `data`/`grad` unless `?values=false`."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "y",
                    "shape": [2],
                    "dtype": "float32",
                    "requires_grad": True,
                    "is_leaf": False,
                    "grad_fn": "PowBackward0",
                    "retains_grad": False,
                    "version": 0,
                    "has_grad": False,
                    "data": {"data": [1.0, 4.0], "dtype": "float32"},
                    "grad": None,
                }
            ]
        }
    )

    name: str
    shape: list[int]
    dtype: Dtype
    requires_grad: bool
    is_leaf: bool
    grad_fn: str | None
    retains_grad: bool
    version: int
    has_grad: bool = Field(description="Whether `.grad` is set (readable without values).")
    data: ValueOut | None = None
    grad: ValueOut | None = None


class TensorListOut(BaseModel):
    """Several named tensors (an op with several results, or a batch)."""

    tensors: list[TensorOut]


class SessionSummaryOut(BaseModel):
    name: str
    created: str = Field(description="ISO 8601, UTC")
    last_used: str
    expires: str = Field(description="When the session is evicted if left idle.")
    bytes: int = Field(description="Bytes held by its named tensors, their grads and its programs.")
    tensor_count: int


class ProgramOut(BaseModel):
    """A stored program, as a function from the tensors it reads to those it binds."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "train",
                    "steps": 4,
                    "reads": ["X", "Y", "w"],
                    "binds": ["loss", "w"],
                    "pure": False,
                    "fetch": ["loss"],
                }  # fmt: skip
            ]
        }
    )

    name: str
    steps: int = Field(description="How many items it has.")
    reads: list[str] = Field(description="Session tensors it reads that no earlier item binds.")
    binds: list[str] = Field(description="Names its items bind, first-bound first.")
    pure: bool = Field(
        description="No assign, backward, grad, zero_grad, in-place or random step: a "
        "function the derivative routes can differentiate."
    )
    fetch: list[str]


class SessionOut(SessionSummaryOut):
    """A session with its tensors' metadata and its programs."""

    tensors: list[TensorOut]
    programs: list[ProgramOut] = Field(default_factory=list)


class SessionListOut(BaseModel):
    sessions: list[SessionSummaryOut]


class BackwardOut(BaseModel):
    """The new `.grad` of every tensor whose grad this backward changed."""

    grads: dict[str, ValueOut]


class GradResultOut(BaseModel):
    grads: list[ValueOut | None]


class GradOut(BaseModel):
    """A tensor's `.grad`, with PyTorch's warning for a non-leaf without retain_grad."""

    grad: ValueOut | None
    warning: str | None = None


class ZeroGradOut(BaseModel):
    tensors: list[str] = Field(description="Names whose grad was zeroed (or set to none).")


class BatchOut(BaseModel):
    """The tensors the batch bound; with `fetch`, the values read after the last item."""

    tensors: list[TensorOut]
    values: dict[str, ValueOut | None] = Field(
        default_factory=dict,
        description="Only with `fetch`: each fetched value (null for a grad that is None).",
    )


class GraphNodeOut(BaseModel):
    id: str
    name: str = Field(description="grad_fn name (PowBackward0), or AccumulateGrad for a leaf.")
    freed: bool = False
    tensors: list[str] = Field(description="Session tensors produced by this node (or the leaf).")
    shape: list[int] = Field(default=[], description="Shape of the node's (first) output.")
    saved: list[list[int]] | None = Field(
        default=None,
        description="With `saved=true`: shapes of the tensors the node saved for backward "
        "(empty once freed), as torchviz's show_saved annotates them.",
    )
    accumulator: bool = Field(
        default=False,
        description="With `accumulate_grad=true`: an AccumulateGrad node drawn apart from "
        "its leaf (the leaf is the node it points to), as torchviz draws it.",
    )


class GraphEdgeOut(BaseModel):
    source: str = Field(description="Node id the gradient flows from.")
    target: str = Field(description="Node id it flows to.")
    input: int = Field(description="Which input of `source` the edge feeds.")


class GraphOut(BaseModel):
    roots: list[str]
    nodes: list[GraphNodeOut]
    edges: list[GraphEdgeOut]
    leaves: list[str] = Field(description="Names of the leaf tensors reached.")
    truncated: bool = Field(description="Whether the walk stopped at the node limit.")


class OpFormsOut(BaseModel):
    """How the op is spelled, as PyTorch's native_functions.yaml lists its forms."""

    function: bool = Field(description="Callable as a function: torch.name(x, ...).")
    method: bool = Field(description="Callable as a method: x.name(...).")
    inplace: bool = Field(description="Has an in-place method x.name_(...).")
    operators: list[str] = Field(
        description="Python operators bound to it with the tensor first (__add__, __iadd__)."
    )
    reflected: list[str] = Field(
        description="Reflected operators bound with the tensor second (2 ** x: __rpow__)."
    )


class OpOut(BaseModel):
    name: str
    args: list[str]
    kwargs: dict[str, Any]
    differentiable: bool
    method: bool = Field(description="Also callable as a method in expressions: x.sum().")
    doc: str
    forms: OpFormsOut
    results: dict[str, Any] = Field(
        description=(
            "How many results a call makes: {'count': n} (a tuple when n != 1), or a rule "
            "on the call's arguments, read by parameter name: {'rule': 'given', 'arg', "
            "'count'} (count results when arg is given and not a tensor, else one); "
            "{'rule': 'dim_size', 'dim'} (input.shape[dim]); {'rule': 'split', 'arg', "
            "'dim'} (ceil(size / arg), or len(arg) for a list); {'rule': 'chunk', 'arg', "
            "'dim'} (torch.chunk's count); {'rule': 'flag', 'arg', 'count'} (count results when "
            "arg is true, else one); {'rule': 'flag_ndim', 'arg'} (input.ndim results, at "
            "least one, when arg is true, else one); {'rule': 'sections', 'arg'} (arg results "
            "for a number, len(arg) + 1 for a list of indices: tensor_split); {'rule': 'dims', "
            "'arg'} (one per dim listed in arg, input.ndim when it is None); {'rule': 'flags', "
            "'arg'} (one more than the true flags among arg's comma-separated names). Rules "
            "always "
            "return a tuple except "
            "'given' and the flags with one result."
        )
    )

    writes: list[str] = Field(
        description=(
            "Arguments the call writes in place besides its result (batch_norm's running "
            "stats, normal_'s self); a failing batch restores them."
        )
    )


class OpListOut(BaseModel):
    ops: list[OpOut]


class HealthOut(BaseModel):
    status: str
    sessions: int | None = None


class FieldErrorOut(BaseModel):
    loc: list[str | int]
    msg: str
    type: str


class PositionOut(BaseModel):
    line: int
    col: int


class ProblemOut(BaseModel):
    """An RFC 9457 problem; `code` is stable (see the README's table)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "type": "urn:gradserve:problem:graph_freed",
                    "title": "Graph already freed",
                    "status": 409,
                    "code": "graph_freed",
                    "detail": "Trying to backward through the graph a second time ...",
                    "hint": "pass retain_graph=true to the first backward on 'z'",
                }
            ]
        }
    )

    type: str
    title: str
    status: int
    code: str
    detail: str
    hint: str | None = None
    errors: list[FieldErrorOut] | None = None
    position: PositionOut | None = None
    step: int | None = Field(None, description="In a batch: the index of the failing step.")
