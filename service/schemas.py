"""Pydantic models of the HTTP contract, in families (``*In`` bodies, ``*Out`` answers).

Field types carry the naming and tensor rules, so a bad name or dtype is a 422
with the service's own ``code`` (``invalid_name``, ``invalid_tensor``) rather
than a generic validation error. Examples come from the autograd tutorials
(``x = [1.0, 2.0]``, ``y = x**2``, ``backward`` with ``grad_tensors [[1.0, 1.0]]``)
so generated clients and the docs page read naturally.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    Tag,
    WithJsonSchema,
    model_validator,
)
from pydantic_core import PydanticCustomError

from . import codec, names
from .errors import InvalidTensorError

# --- field types ------------------------------------------------------------------------------


def _tensor_name(value: Any) -> Any:
    if (msg := names.tensor_name_error(value)) is not None:
        raise PydanticCustomError("invalid_name", msg)
    return value


def _session_name(value: Any) -> Any:
    if (msg := names.session_name_error(value)) is not None:
        raise PydanticCustomError("invalid_name", msg)
    return value


def _dtype(value: Any) -> Any:
    if value is None or (isinstance(value, str) and value in codec.DTYPES):
        return value
    raise PydanticCustomError(
        "invalid_tensor",
        "unknown dtype {dtype}; expected one of " + ", ".join(codec.DTYPES),
        {"dtype": repr(value)[:40]},
    )


def _shape(value: Any) -> Any:
    if value is None:
        return value
    try:
        return list(codec.check_shape(value))
    except InvalidTensorError as exc:
        raise PydanticCustomError("invalid_tensor", exc.detail) from None


TensorName = Annotated[
    str,
    BeforeValidator(_tensor_name),
    Field(
        pattern=names.TENSOR_NAME_PATTERN,
        max_length=names.MAX_NAME_LENGTH,
        description="A tensor name: " + names.TENSOR_RULE,
        examples=["x"],
    ),
]
SessionName = Annotated[
    str,
    BeforeValidator(_session_name),
    Field(
        pattern=names.SESSION_NAME_PATTERN,
        max_length=names.MAX_NAME_LENGTH,
        description="A session name: " + names.SESSION_RULE,
        examples=["notebook-1"],
    ),
]


def _one_or_many(value: Any) -> str:
    return "names" if isinstance(value, list) else "name"


NameOrNames = Annotated[
    Annotated[TensorName, Tag("name")]
    | Annotated[list[TensorName], Tag("names"), Field(min_length=1)],
    Discriminator(_one_or_many),
]
DtypeName = Annotated[
    Literal["float32", "float64", "int64", "bool"] | None,
    BeforeValidator(_dtype),
    Field(description="Element type; float32 when absent, even for integer literals."),
]
Shape = Annotated[
    list[int] | None,
    BeforeValidator(_shape),
    Field(description="Dimensions (required with b64; checked against data otherwise)."),
]
TensorData = Annotated[
    Any,
    WithJsonSchema(
        {
            "description": (
                "A number or a rectangular nested list of numbers; non-finite values are "
                'the strings "NaN", "Infinity", "-Infinity".'
            ),
            "anyOf": [
                {"type": "number"},
                {"type": "boolean"},
                {"type": "string", "enum": ["NaN", "Infinity", "-Infinity"]},
                {"type": "array", "items": {}},
            ],
        }
    ),
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- tensor values ------------------------------------------------------------------------------


class TensorIn(_Model):
    """A tensor value: readable `data`, or raw little-endian bytes in `b64` with a shape."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"data": [1.0, 2.0]},
                {"data": [[1, 2], [3, 4]], "dtype": "int64"},
                {"b64": "AACAPwAAAEA=", "dtype": "float32", "shape": [2]},
            ]
        },
    )

    data: TensorData = None
    b64: str | None = Field(None, description="Raw little-endian bytes, base64-encoded.")
    dtype: DtypeName = None
    shape: Shape = None

    @model_validator(mode="after")
    def _one_source(self) -> TensorIn:
        has_data = "data" in self.model_fields_set and self.data is not None
        if has_data == (self.b64 is not None):
            raise PydanticCustomError(
                "invalid_tensor", "a tensor value needs exactly one of 'data' or 'b64'"
            )
        return self


class LeafIn(TensorIn):
    """A leaf tensor to bind: a value and whether it requires grad."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"data": [1.0, 2.0], "requires_grad": True},
                {"data": [[1.0, 2.0], [3.0, 4.0]], "dtype": "float64", "requires_grad": True},
            ]
        },
    )

    requires_grad: bool = False


class ValueOut(BaseModel):
    """A tensor value in a response: `data` (json encoding) or `b64` + `shape` (base64)."""

    data: TensorData = None
    b64: str | None = None
    dtype: Literal["float32", "float64", "int64", "bool"]
    shape: list[int] | None = None


def _arg_kind(value: Any) -> str:
    if isinstance(value, dict | TensorIn):
        return "tensor"
    if isinstance(value, str):
        return "name"
    if isinstance(value, list):
        return "list"
    if value is None:
        return "null"
    return "number"


Scalar = StrictBool | StrictInt | StrictFloat
Arg = Annotated[
    Annotated[str, Tag("name")]
    | Annotated[Scalar, Tag("number")]
    | Annotated[list[str | Scalar | None], Tag("list")]
    | Annotated[TensorIn, Tag("tensor")]
    | Annotated[None, Tag("null")],
    Discriminator(_arg_kind),
    Field(
        description=(
            "A string names a session tensor, a number is a scalar, a list of strings is a "
            "list of tensors (cat, stack), an object with data/b64 is a constant tensor."
        )
    ),
]


def _grad_kind(value: Any) -> str:
    if isinstance(value, dict | TensorIn):
        return "tensor"
    if isinstance(value, str):
        return "name"
    if value is None:
        return "null"
    return "data"


GradArg = Annotated[
    Annotated[str, Tag("name")]
    | Annotated[TensorIn, Tag("tensor")]
    | Annotated[TensorData, Tag("data")]
    | Annotated[None, Tag("null")],
    Discriminator(_grad_kind),
    Field(
        description=(
            "A gradient: a tensor value, a bare number or nested list (its data), the name of "
            "a session tensor, or null for the implicit one."
        )
    ),
]


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
    dtype: str
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


# --- sessions -----------------------------------------------------------------------------------


class SessionIn(_Model):
    """A new session; a name is generated when absent."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"name": "nb1"}]})

    name: SessionName | None = None


class SessionSummaryOut(BaseModel):
    name: str
    created: str = Field(description="ISO 8601, UTC")
    last_used: str
    expires: str = Field(description="When the session is evicted if left idle.")
    bytes: int = Field(description="Bytes held by its named tensors and their grads.")
    tensor_count: int


class SessionOut(SessionSummaryOut):
    """A session with its tensors' metadata."""

    tensors: list[TensorOut]


class SessionListOut(BaseModel):
    sessions: list[SessionSummaryOut]


# --- steps --------------------------------------------------------------------------------------


class StepIn(_Model):
    """One step: an `op` with `args`/`kwargs`, or an `expr`; its result is bound to `out`."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"out": "y", "op": "pow", "args": ["x", 2]},
                {"out": "y", "expr": "x ** 2"},
                {"out": "s", "op": "sum", "args": ["y"], "kwargs": {"dim": 0}},
                {"out": "w", "expr": "w - 0.1 * w.grad", "assign": True},
                {"out": ["vals", "idx"], "expr": "x.max(dim=1)"},
            ]
        },
    )

    out: NameOrNames = Field(
        description="Name(s) to bind the result to; a list for ops with several results."
    )
    op: str | None = Field(None, max_length=64, description="A catalogue op (GET /v1/ops).")
    args: list[Arg] = Field(default_factory=list)
    kwargs: dict[str, Any] = Field(
        default_factory=dict,
        description="Keyword arguments (dim, keepdim, ...); an object with data/b64 is a tensor.",
    )
    expr: str | None = Field(None, description="An expression over session tensors.")
    assign: bool = Field(
        False, description="Write the result into the existing leaf `out`, in place, under no_grad."
    )
    no_grad: bool = Field(False, description="Run the step under no_grad.")

    @model_validator(mode="after")
    def _one_kind(self) -> StepIn:
        if (self.op is None) == (self.expr is None):
            raise ValueError("a step needs exactly one of 'op' or 'expr'")
        if self.expr is not None and (self.args or self.kwargs):
            raise ValueError("'args' and 'kwargs' go with 'op', not with 'expr'")
        if self.assign and isinstance(self.out, list):
            raise ValueError("'assign' writes one tensor: 'out' must be a single name")
        if isinstance(self.out, list) and not self.out:
            raise ValueError("'out' must name at least one tensor")
        return self


class BatchIn(_Model):
    """Steps run in order, all or nothing."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "steps": [
                        {"out": "y", "expr": "x ** 2"},
                        {"out": "z", "op": "sum", "args": ["y"]},
                    ]
                }
            ]
        },
    )

    steps: list[StepIn]


# --- autograd -----------------------------------------------------------------------------------


class BackwardIn(_Model):
    """`torch.autograd.backward(tensors, grad_tensors, retain_graph, create_graph, inputs)`."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"tensors": "z"},
                {"tensors": ["y"], "grad_tensors": [[1.0, 1.0]]},
                {"tensors": "z", "retain_graph": True},
            ]
        },
    )

    tensors: NameOrNames
    grad_tensors: list[GradArg] | None = Field(
        None, description="One gradient per tensor (null: implicit, for one-element outputs)."
    )
    retain_graph: bool | None = Field(None, description="Defaults to create_graph.")
    create_graph: bool = False
    inputs: list[TensorName] | None = Field(None, description="Accumulate only into these.")


class BackwardOut(BaseModel):
    """The new `.grad` of every tensor whose grad this backward changed."""

    grads: dict[str, ValueOut]


class GradIn(_Model):
    """`torch.autograd.grad(outputs, inputs, grad_outputs, ...)`; `.grad` is not touched."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"outputs": "y", "inputs": ["x"], "create_graph": True, "out": ["dx"]},
                {"outputs": ["y"], "inputs": ["x"], "grad_outputs": [[1.0, 1.0]]},
            ]
        },
    )

    outputs: NameOrNames
    inputs: NameOrNames
    grad_outputs: list[GradArg] | None = None
    retain_graph: bool | None = None
    create_graph: bool = False
    allow_unused: bool = False
    out: list[TensorName] | None = Field(
        None, description="Bind each gradient to a name (for higher-order derivatives)."
    )


class GradResultOut(BaseModel):
    grads: list[ValueOut | None]


class GradOut(BaseModel):
    """A tensor's `.grad`, with PyTorch's warning for a non-leaf without retain_grad."""

    grad: ValueOut | None
    warning: str | None = None


class ZeroGradIn(_Model):
    """Zero the grads of the named tensors, or of every leaf."""

    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{}, {"tensors": ["w"]}]}
    )

    tensors: list[TensorName] | None = None
    set_to_none: bool = False


class ZeroGradOut(BaseModel):
    tensors: list[str] = Field(description="Names whose grad was zeroed (or set to none).")


class PatchTensorIn(_Model):
    """`requires_grad_()` and `retain_grad()`."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"requires_grad": True}, {"retain_grad": True}]},
    )

    requires_grad: bool | None = None
    retain_grad: Literal[True] | None = None


class GradientIn(_Model):
    """A whole computation in one stateless call: leaves, steps, a backward, what to fetch."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "tensors": {"x": {"data": [1.0, 2.0], "requires_grad": True}},
                    "steps": [{"out": "y", "expr": "x ** 2"}],
                    "backward": {"tensors": "y", "grad_tensors": [[1.0, 1.0]]},
                    "fetch": ["x.grad", "y"],
                }
            ]
        },
    )

    tensors: dict[TensorName, LeafIn] = Field(default_factory=dict)
    steps: list[StepIn] = Field(default_factory=list)
    backward: BackwardIn | None = None
    fetch: list[str] = Field(
        default_factory=list, description='Tensors to return: "name" or "name.grad".'
    )


class GradientOut(BaseModel):
    values: dict[str, ValueOut | None]


# --- graph, catalogue, health -------------------------------------------------------------------


class GraphNodeOut(BaseModel):
    id: str
    name: str = Field(description="grad_fn name (PowBackward0), or AccumulateGrad for a leaf.")
    freed: bool = False
    tensors: list[str] = Field(description="Session tensors produced by this node (or the leaf).")


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


class OpOut(BaseModel):
    name: str
    args: list[str]
    kwargs: dict[str, Any]
    differentiable: bool
    method: bool = Field(description="Also callable as a method in expressions: x.sum().")
    doc: str


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
