"""Request bodies (``*In``): tensor values, leaves, steps, batch items, autograd verbs."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cached_property
from types import MappingProxyType
from typing import Annotated, Any, ClassVar, Literal, NamedTuple

from pydantic import (
    ConfigDict,
    Discriminator,
    Field,
    GetJsonSchemaHandler,
    StrictBool,
    StrictFloat,
    StrictInt,
    Tag,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema
from typing_extensions import TypeAliasType

from .fields import (
    B64,
    DtypeIn,
    FetchKey,
    NameOrNames,
    SessionName,
    Shape,
    TensorData,
    TensorName,
    _Form,
    _Model,
    _Unchecked,
)


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

    requires_grad: StrictBool = False


class LeafB64In(TensorB64In):
    """A leaf tensor to bind, as base64 bytes, and whether it requires grad."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"b64": "AACAPwAAAEA=", "dtype": "float32", "shape": [2], "requires_grad": True}
            ]
        }
    )

    requires_grad: StrictBool = False


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


class SessionIn(_Model):
    """A new session; a name is generated when absent."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"name": "nb1"}]})

    name: SessionName | None = None


class _StepBase(_Form):
    """What both step forms have: where the result goes, and how it is written."""

    out: NameOrNames = Field(
        description="Name(s) to bind the result to; a list for ops with several results."
    )
    assign: StrictBool = Field(
        False,
        description="Write the result into the existing leaf `out`, in place, under no_grad "
        "(`out` must then be a single name).",
    )
    no_grad: StrictBool = Field(False, description="Run the step under no_grad.")

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

    op: str = Field(
        max_length=64,
        description="A catalogue op (GET /v1/ops); `manual_seed` is a step of its own "
        "(`SeedStepIn`).",
        json_schema_extra={"not": {"const": "manual_seed"}},
    )
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
    retain_graph: StrictBool | None = Field(None, description="Defaults to create_graph.")
    create_graph: StrictBool = False
    inputs: Annotated[list[TensorName], Field(min_length=1)] | None = Field(
        None, description="Accumulate only into these (at least one)."
    )


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
    retain_graph: StrictBool | None = None
    create_graph: StrictBool = False
    allow_unused: StrictBool = False
    out: list[TensorName] | None = Field(
        None, description="Bind each gradient to a name, one per input (for higher order)."
    )


class ZeroGradIn(_Model):
    """Zero the grads of the named tensors, or of every leaf."""

    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{}, {"tensors": ["w"]}]}
    )

    tensors: list[TensorName] | None = None
    set_to_none: StrictBool = False


class PatchTensorIn(_Model):
    """`requires_grad_()` and `retain_grad()`."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"requires_grad": True}, {"retain_grad": True}]},
    )

    requires_grad: StrictBool | None = None
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
