"""``GET /v1/ops``: the op catalogue, straight from the engine's registry."""

from functools import cache
from typing import Any

import orjson
from fastapi import Response

from engine import OPS

from ..schemas import OpListOut
from ._base import documented, v1_router

router = v1_router("catalogue")


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    return repr(value)


@cache
def catalogue() -> bytes:
    """Built once: the registry never changes after import."""
    ops = []
    for name in sorted(OPS):
        spec = OPS[name]
        params = spec.signature.parameters.values()
        ops.append(
            {
                "name": name,
                "args": spec.args,
                "kwargs": {
                    p.name: _jsonable(None if p.default is p.empty else p.default)
                    for p in params
                    if p.kind is p.KEYWORD_ONLY
                    or (p.kind is p.POSITIONAL_OR_KEYWORD and p.default is not p.empty)
                },
                "differentiable": spec.differentiable,
                "method": spec.method,
                "doc": spec.doc,
                "forms": {
                    "function": spec.function,
                    "method": spec.method,
                    "inplace": spec.inplace,
                    "operators": list(spec.operators),
                    "reflected": list(spec.reflected),
                },
                "results": spec.results_rule(),
                "writes": list(spec.writes),
            }
        )
    return orjson.dumps({"ops": ops})


@router.get("/ops", operation_id="listOps", response_model=OpListOut, responses=documented())
async def list_ops() -> Response:
    """The op catalogue: arguments, keyword arguments, differentiability, a one-line doc,
    the op's forms (function, method, in-place, operators), its result count rule and
    the arguments it writes in place."""
    return Response(catalogue(), media_type="application/json")
