"""Every op of the catalogue called with wrong kinds of arguments answers a problem
below 500: a tensor (a multi-element int one, a float one) where a number or a dtype is
meant, a string, a nested list, NaN, huge ints, negative sizes, in each position and
keyword of each form (function and method). ``make test`` runs a seeded sample of the
calls; ``make fuzz`` (GRADSERVE_WRONG_KINDS=all) runs every one."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator

import pytest
from svc_helpers import PROBLEM, SyncClient, make_settings

from engine import OPS
from service.app import create_app

HOSTILE = {
    "int tensor": "i",  # int64 [2, 2]: x.reshape(i) once answered 500
    "float tensor": "x",
    "string": "'x'",
    "nested list": "[[1, [2]], 3]",
    "nan": "(1e999 - 1e999)",
    "huge int": "10**30",
    "2**62": "2**62",
    "negative size": "-5",
}
SAMPLE = 700  # calls in `make test` (a few seconds)


def _calls() -> list[tuple[str, str]]:
    """(id, expression) for every op, form, position or keyword, and hostile value."""
    out: list[tuple[str, str]] = []
    for name in sorted(OPS):
        spec = OPS[name]
        params = list(spec.signature.parameters.values())
        positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][
            :4
        ]
        keywords = [p.name for p in params if p.kind is p.KEYWORD_ONLY and p.name != "generator"]
        for label, value in HOSTILE.items():
            for pos in range(max(len(positional), 2)):  # an extra argument too
                args = ["x"] + ["1"] * (pos - 1) + [value] if pos else [value]
                if spec.function:
                    out.append((f"{name}-arg{pos}-{label}", f"{name}({', '.join(args)})"))
                if spec.method and pos:
                    method_args = ", ".join(args[1:])
                    out.append((f"x.{name}-arg{pos}-{label}", f"x.{name}({method_args})"))
            for kw in keywords:
                call = f"{name}(x, {kw}={value})" if spec.function else f"x.{name}({kw}={value})"
                out.append((f"{name}-{kw}-{label}", call))
    return out


CALLS = _calls()
if os.environ.get("GRADSERVE_WRONG_KINDS") != "all":
    CALLS = random.Random(16).sample(CALLS, min(SAMPLE, len(CALLS)))


@pytest.fixture(scope="module")
def client() -> Iterator[SyncClient]:
    settings = make_settings(max_tensor_elements=1_000_000, request_seconds=10)
    with SyncClient(create_app(settings)) as c:
        assert c.post("/v1/sessions", json={"name": "wk"}).status_code == 201
        base = "/v1/sessions/wk/tensors"
        c.put(f"{base}/x", json={"data": [[1.0, 2.0], [3.0, 4.0]], "requires_grad": True})
        c.put(f"{base}/i", json={"data": [2, 2], "dtype": "int64"})
        yield c


def test_every_op_gets_wrong_kinds() -> None:
    called = {expr.split("(")[0].removeprefix("x.") for _, expr in _calls()}
    assert called == set(OPS)


@pytest.mark.parametrize(("expr"), [c[1] for c in CALLS], ids=[c[0] for c in CALLS])
def test_wrong_kinds_answer_a_problem_below_500(client: SyncClient, expr: str) -> None:
    r = client.post("/v1/sessions/wk/ops", json={"out": "y", "expr": expr})
    assert r.status_code < 500, (expr, r.text[:300])
    if r.status_code >= 400:
        assert r.headers["content-type"] == PROBLEM
        assert r.json()["code"] and r.json()["status"] == r.status_code
