"""Programs: a named list of batch items stored once, run by name, differentiated as a
function (``ProgramIn`` to store, ``RunIn`` to run, one body per derivative kind)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypeAliasType

from .. import codec
from .fields import TENSOR_NAME_RULE, FetchKey, TensorName, _Model
from .requests import BackwardIn, BatchItem, LeafIn, StepIn, TensorValue
from .responses import ProgramOut, ValueOut

_ITERATION: list[Any] = [
    {"out": "loss", "expr": "((X @ w - Y) ** 2).mean()"},
    {"backward": {"tensors": "loss"}},
    {"out": "w", "expr": "w - 0.1 * w.grad", "assign": True},
    {"zero_grad": {"tensors": ["w"]}},
]


class ProgramIn(_Model):
    """A program: batch items checked and compiled once, then run by name."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"steps": _ITERATION, "fetch": ["loss"]},
                {"steps": [{"out": "y", "expr": "tanh(W @ x)"}]},
            ]
        },
    )

    steps: list[BatchItem] = Field(min_length=1)
    fetch: list[FetchKey] = Field(
        default_factory=list,
        description="Tensors a run returns after its last iteration, unless the run names "
        "its own: 'name' or 'name.grad'.",
    )


class ProgramDetailOut(ProgramOut):
    """A stored program with its items as stored."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "f",
                    "steps": 1,
                    "reads": ["W", "x"],
                    "binds": ["y"],
                    "pure": True,
                    "fetch": [],
                    "items": [{"out": "y", "expr": "tanh(W @ x)"}],
                }  # fmt: skip
            ]
        }
    )

    items: list[BatchItem]


class ProgramListOut(BaseModel):
    programs: list[ProgramOut]


class RunIn(_Model):
    """How often to run a program, what to return, and how often to report."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"repeat": 50, "fetch": ["loss"], "every": 10}, {}]},
    )

    repeat: int = Field(
        default=1, ge=1, description="Iterations (at most GRADSERVE_MAX_REPEAT). Default 1."
    )
    fetch: list[FetchKey] | None = Field(
        default=None, description="Tensors to return after the last iteration (default: the "
        "program's own `fetch`).",
    )  # fmt: skip
    every: int | None = Field(
        default=None,
        ge=1,
        description="Record the fetched values every `every` iterations (`history`), and send "
        "a progress event as often when streaming.",
    )


class RunOut(BaseModel):
    """The iterations run and the fetched values after the last one."""

    iterations: int
    values: dict[str, ValueOut | None]
    history: dict[str, list[ValueOut | None]] = Field(
        default_factory=dict,
        description="With `every`: the fetched values every `every` iterations.",
    )


JacobianMode = TypeAliasType(
    "JacobianMode",
    Annotated[
        Literal["rev", "fwd"],
        Field(description="rev: jacrev (a backward per output element); fwd: jacfwd."),
    ],
)


class JacobianIn(_Model):
    """`torch.func.jacrev` (mode rev) or `jacfwd` (mode fwd) of the program."""

    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"of": ["y"], "wrt": ["x"]}]}
    )

    of: list[TensorName] = Field(min_length=1, description="Tensors the program binds.")
    wrt: list[TensorName] = Field(min_length=1, description="Tensors the program reads.")
    mode: JacobianMode = Field(default="rev", description="Default rev.")


class HessianIn(_Model):
    """The Hessian of one scalar the program binds."""

    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"of": "loss", "wrt": ["w"]}]}
    )

    of: TensorName
    wrt: list[TensorName] = Field(min_length=1)


class VjpIn(_Model):
    """A vector-Jacobian product: cotangents of the outputs, pulled back to `wrt`."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"of": ["y"], "wrt": ["x"], "cotangents": {"y": {"data": [1.0, 1.0]}}}]
        },
    )

    of: list[TensorName] = Field(min_length=1)
    wrt: list[TensorName] = Field(min_length=1)
    cotangents: dict[TensorName, TensorValue] = Field(
        description="One value per `of`, of its shape (cast to its dtype unless given)."
    )


class JvpIn(_Model):
    """A Jacobian-vector product (forward mode): tangents of the inputs pushed forward."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"of": ["y"], "tangents": {"x": {"data": [1.0, 0.0]}}}]},
    )

    of: list[TensorName] = Field(min_length=1)
    tangents: dict[TensorName, TensorValue] = Field(
        min_length=1, description="One value per input to differentiate, of its shape."
    )


class HvpIn(_Model):
    """A Hessian-vector product of one scalar the program binds."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"of": "loss", "wrt": ["w"], "v": {"w": {"data": [[1.0], [0.0]]}}}]
        },
    )

    of: TensorName
    wrt: list[TensorName] = Field(min_length=1)
    v: dict[TensorName, TensorValue] = Field(description="One value per `wrt`, of its shape.")


class PerSampleGradIn(_Model):
    """`vmap(grad(f), in_dims)`: the gradient of `of` for each sample of the batch."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"of": "loss", "wrt": ["w"], "batch": {"X": 0, "Y": 0}}]},
    )

    of: TensorName
    wrt: list[TensorName] = Field(min_length=1)
    batch: dict[TensorName, Annotated[int, Field(ge=-codec.MAX_NDIM, lt=codec.MAX_NDIM)]] = Field(
        min_length=1, description="Tensors the program reads, and the dim of each that holds "
        "the samples.",
    )  # fmt: skip


class JacobianOut(BaseModel):
    jacobian: dict[str, dict[str, ValueOut]]


class HessianOut(BaseModel):
    hessian: dict[str, dict[str, ValueOut]]


class VjpOut(BaseModel):
    vjp: dict[str, ValueOut]


class JvpOut(BaseModel):
    values: dict[str, ValueOut]
    jvp: dict[str, ValueOut]


class HvpOut(BaseModel):
    hvp: dict[str, ValueOut]


class PerSampleGradOut(BaseModel):
    grads: dict[str, ValueOut]


class GradientOut(BaseModel):
    """The fetched values, and each derivative asked for."""

    values: dict[str, ValueOut | None]
    jacobian: dict[str, dict[str, ValueOut]] = Field(
        default_factory=dict, description="When asked."
    )
    hessian: dict[str, dict[str, ValueOut]] = Field(default_factory=dict, description="When asked.")
    vjp: dict[str, ValueOut] = Field(default_factory=dict, description="When asked.")
    jvp: dict[str, ValueOut] = Field(default_factory=dict, description="When asked.")
    hvp: dict[str, ValueOut] = Field(default_factory=dict, description="When asked.")
    per_sample_grad: dict[str, ValueOut] = Field(default_factory=dict, description="When asked.")


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
    # the steps as a function of the leaves: the derivatives a stored pure program offers
    jacobian: JacobianIn | None = None
    hessian: HessianIn | None = None
    vjp: VjpIn | None = None
    jvp: JvpIn | None = None
    hvp: HvpIn | None = None
    per_sample_grad: PerSampleGradIn | None = None
