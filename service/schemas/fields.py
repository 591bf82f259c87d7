"""Field types of the HTTP contract: names, dtypes, shapes, tensor data, and the bases
of request models (unknown fields refused, defaults described rather than declared)."""

from __future__ import annotations

import json
import keyword
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    Tag,
    WithJsonSchema,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, PydanticCustomError, core_schema
from typing_extensions import TypeAliasType

from .. import codec, names
from ..errors import InvalidTensorError


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
        Literal[
            "float16", "float32", "float64", "uint8", "int8", "int16", "int32", "int64", "bool"
        ],
        Field(description="Element type. Only floating types (float16/32/64) can require grad."),
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
