"""Pydantic models of the HTTP contract, in families (``*In`` bodies, ``*Out`` answers).

Field types carry the naming and tensor rules, so a bad name or dtype is a 422
with the service's own ``code`` (``invalid_name``, ``invalid_tensor``) rather
than a generic validation error. Examples come from the autograd tutorials
(``x = [1.0, 2.0]``, ``y = x**2``, ``backward`` with ``grad_tensors [[1.0, 1.0]]``)
so generated clients and the docs page read naturally.

The OpenAPI document is written for client generators, so:

- a body with several forms is a ``oneOf`` of one model per form (``TensorDataIn`` or
  ``TensorB64In``; ``OpStepIn`` or ``ExprStepIn``), picked by a callable discriminator
  on the fields present; the tensor forms subclass ``TensorIn``, and each step form has
  the other's attributes as empty class attributes (``OpStepIn.expr is None``), so the
  executor reads any step the same way;
- shared types are named components (``Dtype``, ``TensorName``, ``TensorData``, ...)
  through ``TypeAliasType``, so generated code has one ``Dtype``, not one per field;
- request models declare no ``default`` (openapi-typescript would make such fields
  required); the default is stated in the field's description instead.
"""

from __future__ import annotations

import json
import keyword
import re
from collections.abc import Mapping
from functools import cached_property
from types import MappingProxyType
from typing import Annotated, Any, ClassVar, Literal, NamedTuple

from fastapi.openapi.models import Example
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    StrictBool,
    StrictFloat,
    StrictInt,
    Tag,
    WithJsonSchema,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, PydanticCustomError, core_schema
from typing_extensions import TypeAliasType

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


# Names the naming rule refuses although they fit the identifier pattern: Python's keywords
# (an expression could not name them) and dunders (``x.__class__`` is never a tensor).
RESERVED_NAME = "(?:" + "|".join(keyword.kwlist) + "|__(?:_?|.*__))"
B64_PATTERN = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"

TENSOR_NAME_RULE: dict[str, Any] = {
    "type": "string",
    "pattern": names.TENSOR_NAME_PATTERN,
    "maxLength": names.MAX_NAME_LENGTH,
    "not": {"pattern": f"^{RESERVED_NAME}$"},
}
TensorName = TypeAliasType(
    "TensorName",
    Annotated[
        str,
        BeforeValidator(_tensor_name),
        WithJsonSchema(
            {
                **TENSOR_NAME_RULE,
                "description": "A tensor name: " + names.TENSOR_RULE + " (nor a dunder).",
                "examples": ["x"],
            }
        ),
    ],
)
SessionName = TypeAliasType(
    "SessionName",
    Annotated[
        str,
        BeforeValidator(_session_name),
        WithJsonSchema(
            {
                "type": "string",
                "pattern": names.SESSION_NAME_PATTERN,
                "description": "A session name: " + names.SESSION_RULE + ".",
                "examples": ["nb1"],
            }
        ),
    ],
)
FetchKey = TypeAliasType(
    "FetchKey",
    Annotated[
        str,
        WithJsonSchema(
            {
                "type": "string",
                "pattern": names.TENSOR_NAME_PATTERN.removesuffix("$") + r"(?:\.grad)?$",
                "not": {"pattern": rf"^{RESERVED_NAME}(?:\.grad)?$"},
                "description": 'A tensor to return: "name" for its value, "name.grad" for its grad.',
                "examples": ["x.grad"],
            }
        ),
    ],
)


def _one_or_many(value: Any) -> str:
    return "names" if isinstance(value, list) else "name"


NameOrNames = Annotated[
    Annotated[TensorName, Tag("name")]
    | Annotated[list[TensorName], Tag("names"), Field(min_length=1)],
    Discriminator(_one_or_many),
]

Dtype = TypeAliasType(
    "Dtype",
    Annotated[
        Literal["float32", "float64", "int64", "bool"],
        Field(description="Element type. Only float32 and float64 can require grad."),
    ],
)
Encoding = TypeAliasType(
    "Encoding",
    Annotated[
        Literal["json", "base64"],
        Field(description="How values are written: nested lists, or raw little-endian bytes."),
    ],
)
GraphFormat = TypeAliasType(
    "GraphFormat",
    Annotated[
        Literal["dot", "mermaid", "svg"],
        Field(description="A drawing of the graph: Graphviz DOT, Mermaid, or SVG."),
    ],
)
NonFinite = TypeAliasType(
    "NonFinite",
    Annotated[
        Literal["NaN", "Infinity", "-Infinity"],
        Field(description="A non-finite float, written as a string (JSON has no literal)."),
    ],
)


class _Unchecked:
    """The annotated type's JSON schema, but validated and serialized as ``Any``.

    For tensor elements, which the codec checks with numpy: pydantic would walk a
    100,000-float list ~50x slower. (``SkipValidation`` still serializes through the type,
    warning on every int.)"""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        typed = handler(source)
        return core_schema.any_schema(
            metadata={"pydantic_js_annotation_functions": [lambda _c, h: h(typed)]},
            # ``typed`` must be in the tree for its definitions (NonFinite) to be collected;
            # the serializer leaves the value as it is
            serialization=core_schema.wrap_serializer_function_ser_schema(
                lambda value, _next: value, schema=typed
            ),
        )


# Two levels are typed, deeper ones are any arrays: openapi-python-client cannot generate a
# recursive union.
_Element = float | bool | NonFinite
TensorData = TypeAliasType(
    "TensorData",
    Annotated[
        _Element | list[_Element | list[Any]],
        _Unchecked(),
        Field(
            description="A number, or a rectangular nested list of numbers (not ragged); "
            "deeper lists hold the same elements."
        ),
    ],
)
DtypeIn = Annotated[
    Dtype | None,
    BeforeValidator(_dtype),
    Field(description="float32 when absent, even for integer literals."),
]
Shape = Annotated[
    Annotated[list[Annotated[int, Field(ge=0)]], Field(max_length=codec.MAX_NDIM)] | None,
    BeforeValidator(_shape),
    Field(description="Dimensions; with `data` they must match it, with `b64` absent is flat."),
]
B64 = Annotated[
    str,
    WithJsonSchema(
        {
            "type": "string",
            "pattern": B64_PATTERN,
            "contentEncoding": "base64",
            "description": "Raw little-endian bytes, base64-encoded (standard alphabet, padded); "
            "their length must fit `shape` and `dtype`.",
        }
    ),
]


class _Model(BaseModel):
    """A request body: unknown fields are refused; defaults are described, not declared.

    Frozen: derived facts of a step (``plain``, ``reads``) are computed once per body."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        schema = handler(core_schema)
        for prop in handler.resolve_ref_schema(schema).get("properties", {}).values():
            default = prop.pop("default", None)
            if default is not None:
                text = prop.get("description", "")
                prop["description"] = f"{text} Default: {json.dumps(default)}.".lstrip()
        return schema


class _Form(_Model):
    """One form of a body that has several: the other forms' fields, when empty, are absent.

    ``{"b64": ..., "data": null}`` or ``{"expr": ..., "args": []}`` were always accepted."""

    other_fields: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _drop_empty_other_fields(cls, value: Any) -> Any:
        if isinstance(value, dict) and not cls.other_fields.isdisjoint(value):
            return {
                k: v
                for k, v in value.items()
                if k not in cls.other_fields or v not in (None, [], {})
            }
        return value


# --- tensor values ------------------------------------------------------------------------------


class TensorIn(_Form):
    """What both wire forms of a tensor value have (``TensorDataIn``, ``TensorB64In``)."""

    dtype: DtypeIn = None
    shape: Shape = None


class TensorDataIn(TensorIn):
    """A tensor value as readable `data`."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"data": [1.0, 2.0]},
                {"data": [[1, 2], [3, 4]], "dtype": "int64"},
                {"data": [0.0, "Infinity"], "dtype": "float64"},
            ]
        }
    )
    other_fields: ClassVar[frozenset[str]] = frozenset({"b64"})

    data: TensorData


class TensorB64In(TensorIn):
    """A tensor value as raw little-endian bytes, base64-encoded, for large tensors."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"b64": "AACAPwAAAEA=", "dtype": "float32", "shape": [2]}]}
    )
    other_fields: ClassVar[frozenset[str]] = frozenset({"data"})

    b64: B64


class LeafDataIn(TensorDataIn):
    """A leaf tensor to bind, as readable `data`, and whether it requires grad."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"data": [1.0, 2.0], "requires_grad": True},
                {"data": [[1.0, 2.0], [3.0, 4.0]], "dtype": "float64", "requires_grad": True},
            ]
        }
    )

    requires_grad: bool = False


class LeafB64In(TensorB64In):
    """A leaf tensor to bind, as base64 bytes, and whether it requires grad."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"b64": "AACAPwAAAEA=", "dtype": "float32", "shape": [2], "requires_grad": True}
            ]
        }
    )

    requires_grad: bool = False


def _tensor_form(value: Any) -> str | None:
    """``data`` or ``b64``, whichever the value holds (a null counts as absent)."""
    if isinstance(value, TensorIn):
        return "b64" if isinstance(value, TensorB64In) else "data"
    if not isinstance(value, dict):
        return None
    has_data, has_b64 = value.get("data") is not None, value.get("b64") is not None
    return None if has_data == has_b64 else ("data" if has_data else "b64")


_ONE_SOURCE = Discriminator(
    _tensor_form,
    custom_error_type="invalid_tensor",
    custom_error_message="a tensor value needs exactly one of 'data' or 'b64'",
)
TensorValue = TypeAliasType(
    "TensorValue",
    Annotated[
        Annotated[TensorDataIn, Tag("data")] | Annotated[TensorB64In, Tag("b64")],
        _ONE_SOURCE,
        Field(description="A tensor value: readable `data`, or `b64` bytes (exactly one)."),
    ],
)
LeafIn = TypeAliasType(
    "LeafIn",
    Annotated[
        Annotated[LeafDataIn, Tag("data")] | Annotated[LeafB64In, Tag("b64")],
        _ONE_SOURCE,
        Field(description="A leaf tensor: readable `data`, or `b64` bytes (exactly one)."),
    ],
)


class ValueOut(BaseModel):
    """A tensor value in a response: `data` (json encoding) or `b64` + `shape` (base64)."""

    data: TensorData | None = None
    b64: str | None = None
    dtype: Dtype
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
    Annotated[TensorName, Tag("name")]
    | Annotated[Scalar, Tag("number")]
    | Annotated[list[TensorName | Scalar | None], Tag("list")]
    | Annotated[TensorValue, Tag("tensor")]
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
    Annotated[TensorName, Tag("name")]
    | Annotated[TensorValue, Tag("tensor")]
    | Annotated[float | bool | list[TensorData], _Unchecked(), Tag("data")]
    | Annotated[None, Tag("null")],
    Discriminator(_grad_kind),
    Field(
        description=(
            "A gradient: a tensor value, a bare number or nested list (its data), the name of "
            "a session tensor, or null for the implicit one. A bare string is always a name."
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


class _StepBase(_Form):
    """What both step forms have: where the result goes, and how it is written."""

    out: NameOrNames = Field(
        description="Name(s) to bind the result to; a list for ops with several results."
    )
    assign: bool = Field(
        False,
        description="Write the result into the existing leaf `out`, in place, under no_grad "
        "(`out` must then be a single name).",
    )
    no_grad: bool = Field(False, description="Run the step under no_grad.")

    @model_validator(mode="after")
    def _assign_one(self) -> _StepBase:
        if self.assign and isinstance(self.out, list):
            raise ValueError("'assign' writes one tensor: 'out' must be a single name")
        return self

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        schema = super().__get_pydantic_json_schema__(core_schema, handler)
        handler.resolve_ref_schema(schema).update(
            {
                "if": {"properties": {"assign": {"const": True}}, "required": ["assign"]},
                "then": {"properties": {"out": {"type": "string"}}},
            }
        )
        return schema


class PlainCall(NamedTuple):
    """An op step of names and numbers only, one result name, no keywords: the
    commonest step, which the executor runs without re-deriving what the step
    itself already says."""

    args: tuple[str | int | float | bool, ...]
    names: tuple[int, ...]  # positions of the args that are names


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class OpStepIn(_StepBase):
    """A catalogue op on arguments; its result is bound to `out`."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"out": "y", "op": "pow", "args": ["x", 2]},
                {"out": "s", "op": "sum", "args": ["y"], "kwargs": {"dim": 0}},
                {"out": "c", "op": "cat", "args": [["x", "y"]]},
            ]
        }
    )
    other_fields: ClassVar[frozenset[str]] = frozenset({"expr"})
    expr: ClassVar[None] = None

    op: str = Field(max_length=64, description="A catalogue op (GET /v1/ops).")
    args: list[Arg] = Field(default_factory=list)
    kwargs: dict[str, Any] = Field(
        default_factory=dict,
        description="Keyword arguments (dim, keepdim, ...); an object with data/b64 is a tensor.",
    )

    # Derived once per body (bodies are frozen).
    @cached_property
    def plain(self) -> PlainCall | None:
        """The step as a ``PlainCall``, or None when it needs the general path."""
        if self.kwargs or self.assign or self.no_grad or type(self.out) is not str:
            return None
        args = tuple(a for a in self.args if isinstance(a, str | float | int))
        if len(args) != len(self.args):
            return None  # a list, a constant tensor or a null
        return PlainCall(args, tuple(i for i, a in enumerate(args) if type(a) is str))

    @cached_property
    def reads(self) -> frozenset[str]:
        """Names of session tensors the step reads (for the weight of its work)."""
        names: set[str] = set()
        for arg in self.args:
            if type(arg) is str:
                names.add(arg)
            elif type(arg) is list:
                names.update(a for a in arg if type(a) is str)
        return frozenset(names)


class ExprStepIn(_StepBase):
    """An expression over session tensors; its result is bound to `out`."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"out": "y", "expr": "x ** 2"},
                {"out": "z", "expr": "3*a + 2*b*b + log(c)"},
                {"out": "w", "expr": "w - 0.1 * w.grad", "assign": True},
                {"out": ["vals", "idx"], "expr": "x.max(dim=1)"},
            ]
        }
    )
    other_fields: ClassVar[frozenset[str]] = frozenset({"op", "args", "kwargs"})
    op: ClassVar[None] = None
    args: ClassVar[tuple[()]] = ()
    kwargs: ClassVar[Mapping[str, Any]] = MappingProxyType({})

    expr: str = Field(
        description="Numbers, tensor names, `name.grad`, `+ - * / ** @`, catalogue ops as "
        "calls or methods with keyword arguments, indexing and slicing."
    )

    plain: ClassVar[None] = None

    @cached_property
    def reads(self) -> frozenset[str]:
        """Every identifier in the text: the names it may read (and some op names)."""
        return frozenset(_IDENT.findall(self.expr[:10_000]))


class SeedStepIn(_Form):
    """`torch.manual_seed(seed)` for the session's generator: the random ops after it
    (randn, rand, randn_like, rand_like, ...) draw what PyTorch draws after the same seed."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"op": "manual_seed", "args": [0]}]})
    other_fields: ClassVar[frozenset[str]] = frozenset({"expr", "kwargs", "out"})
    expr: ClassVar[None] = None
    out: ClassVar[None] = None
    assign: ClassVar[bool] = False
    no_grad: ClassVar[bool] = False
    kwargs: ClassVar[Mapping[str, Any]] = MappingProxyType({})
    plain: ClassVar[None] = None
    reads: ClassVar[frozenset[str]] = frozenset()

    op: Literal["manual_seed"]
    args: Annotated[list[StrictInt], Field(min_length=1, max_length=1)] = Field(
        description="The seed: one integer."
    )


def _step_form(value: Any) -> str | None:
    """``op`` or ``expr``, whichever the step holds (a null counts as absent)."""
    if isinstance(value, _StepBase | SeedStepIn):
        return (
            "seed"
            if isinstance(value, SeedStepIn)
            else "op"
            if isinstance(value, OpStepIn)
            else "expr"
        )
    if not isinstance(value, dict):
        return None
    if value.get("op") == "manual_seed":
        return "seed"
    has_op, has_expr = value.get("op") is not None, value.get("expr") is not None
    return None if has_op == has_expr else ("op" if has_op else "expr")


StepIn = TypeAliasType(
    "StepIn",
    Annotated[
        Annotated[OpStepIn, Tag("op")]
        | Annotated[ExprStepIn, Tag("expr")]
        | Annotated[SeedStepIn, Tag("seed")],
        Discriminator(
            _step_form,
            custom_error_type="step_form",
            custom_error_message="a step needs exactly one of 'op' or 'expr'",
        ),
        Field(
            description="One step: an `op` with `args`/`kwargs`, or an `expr` (exactly one); "
            '`{"op": "manual_seed", "args": [seed]}` seeds the session\'s generator.'
        ),
    ],
)


# Named examples of the bodies with several forms: the docs page offers one per form.
STEP_EXAMPLES: dict[str, Example] = {
    "op": {"summary": "y = x ** 2, as an op", "value": {"out": "y", "op": "pow", "args": ["x", 2]}},
    "expr": {"summary": "y = x ** 2, as an expression", "value": {"out": "y", "expr": "x ** 2"}},
    "kwargs": {
        "summary": "s = y.sum(dim=0)",
        "value": {"out": "s", "op": "sum", "args": ["y"], "kwargs": {"dim": 0}},
    },
    "assign": {
        "summary": "with no_grad: w -= 0.1 * w.grad",
        "value": {"out": "w", "expr": "w - 0.1 * w.grad", "assign": True},
    },
    "several": {
        "summary": "vals, idx = x.max(dim=1)",
        "value": {"out": ["vals", "idx"], "expr": "x.max(dim=1)"},
    },
}
LEAF_EXAMPLES: dict[str, Example] = {
    "data": {
        "summary": "x = torch.tensor([1.0, 2.0], requires_grad=True)",
        "value": {"data": [1.0, 2.0], "requires_grad": True},
    },
    "float64": {
        "summary": "a float64 matrix",
        "value": {"data": [[1.0, 2.0], [3.0, 4.0]], "dtype": "float64", "requires_grad": True},
    },
    "b64": {
        "summary": "the same x as base64 bytes",
        "value": {"b64": "AACAPwAAAEA=", "dtype": "float32", "shape": [2], "requires_grad": True},
    },
}


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
    inputs: Annotated[list[TensorName], Field(min_length=1)] | None = Field(
        None, description="Accumulate only into these (at least one)."
    )


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
        None, description="Bind each gradient to a name, one per input (for higher order)."
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


class BackwardStepIn(_Model):
    """A batch item: `backward`, with the body of `POST /backward`."""

    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"backward": {"tensors": "loss"}}]}
    )

    backward: BackwardIn


class GradStepIn(_Model):
    """A batch item: `grad`, with the body of `POST /grad`."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"grad": {"outputs": ["y"], "inputs": ["x"], "create_graph": True, "out": ["gx"]}}
            ]
        },
    )

    grad: GradIn


class ZeroGradStepIn(_Model):
    """A batch item: `zero_grad`, with the body of `POST /zero_grad`."""

    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"zero_grad": {"tensors": ["w"]}}]}
    )

    zero_grad: ZeroGradIn


_VERBS = ("backward", "grad", "zero_grad")
_VERB_ITEMS: dict[type[_Model], str] = {
    BackwardStepIn: "backward",
    GradStepIn: "grad",
    ZeroGradStepIn: "zero_grad",
}


def _item_form(value: Any) -> str | None:
    """A verb (``backward``, ``grad``, ``zero_grad``) when the item names one, else a step."""
    if isinstance(value, _Model) and type(value) in _VERB_ITEMS:
        return _VERB_ITEMS[type(value)]
    if isinstance(value, dict):
        verbs = [v for v in _VERBS if v in value]
        if len(verbs) == 1:
            return verbs[0]
        if verbs:
            return None
    return _step_form(value)


BatchItem = TypeAliasType(
    "BatchItem",
    Annotated[
        Annotated[OpStepIn, Tag("op")]
        | Annotated[ExprStepIn, Tag("expr")]
        | Annotated[SeedStepIn, Tag("seed")]
        | Annotated[BackwardStepIn, Tag("backward")]
        | Annotated[GradStepIn, Tag("grad")]
        | Annotated[ZeroGradStepIn, Tag("zero_grad")],
        Discriminator(
            _item_form,
            custom_error_type="step_form",
            custom_error_message="a batch item is a step (exactly one of 'op' or 'expr') or "
            "one of 'backward', 'grad', 'zero_grad'",
        ),
        Field(description="A step, or `backward`/`grad`/`zero_grad` with its route's body."),
    ],
)


class BatchIn(_Model):
    """Items (steps and autograd verbs) run in order, all or nothing; `fetch` reads values
    after the last item."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "steps": [
                        {"out": "y", "expr": "x ** 2"},
                        {"out": "z", "op": "sum", "args": ["y"]},
                    ]
                },
                {
                    "steps": [
                        {"out": "loss", "expr": "((X @ w - Y) ** 2).mean()"},
                        {"backward": {"tensors": "loss"}},
                        {"out": "w", "expr": "w - 0.1 * w.grad", "assign": True},
                        {"zero_grad": {"tensors": ["w"]}},
                    ],
                    "fetch": ["loss"],
                },
            ]
        },
    )

    steps: list[BatchItem]
    fetch: list[FetchKey] = Field(
        default_factory=list,
        description='Tensors to return after the last item: "name" or "name.grad".',
    )


class BatchOut(BaseModel):
    """The tensors the batch bound; with `fetch`, the values read after the last item."""

    tensors: list[TensorOut]
    values: dict[str, ValueOut | None] = Field(
        default_factory=dict,
        description="Only with `fetch`: each fetched value (null for a grad that is None).",
    )


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

    tensors: dict[TensorName, LeafIn] = Field(
        default_factory=dict,
        description="Leaves by name.",
        # the rule inline, not a $ref: schemathesis 4.32 fails to negate a $ref'd propertyNames
        json_schema_extra={"propertyNames": TENSOR_NAME_RULE},
    )
    steps: list[StepIn] = Field(default_factory=list)
    backward: BackwardIn | None = None
    fetch: list[FetchKey] = Field(
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
