"""Hypothesis throws arbitrary JSON and expressions at the API: every answer is a
success or a problem+json below 500, and a failed request leaves the session as it was."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from svc_helpers import SyncClient, put, snapshot

NB = "/v1/sessions/nb"

names = st.sampled_from(["x", "y", "nope", "1x", "x.grad", "", "a" * 65])
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["NaN", "Infinity", "float16", "sum"]),
    names,
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(
            st.sampled_from(["data", "b64", "dtype", "shape", "out", "op", "args", "expr"]),
            inner,
            max_size=4,
        ),
    ),
    max_leaves=12,
)
steps = st.fixed_dictionaries(
    {"out": names},
    optional={
        "op": st.sampled_from(["add", "mul", "sum", "reshape", "getitem", "cat", "nope"]),
        "args": st.lists(json_values, max_size=3),
        "kwargs": st.dictionaries(st.sampled_from(["dim", "keepdim", "shape"]), json_values),
        "expr": st.text(alphabet="xy()[]:.,+-*/@ 0123456789sumgrad_=", max_size=30),
        "assign": st.booleans(),
        "no_grad": st.booleans(),
    },
)
bodies = st.one_of(
    st.tuples(st.just("/ops"), st.one_of(steps, json_values)),
    st.tuples(st.just("/batch"), st.fixed_dictionaries({"steps": st.lists(steps, max_size=3)})),
    st.tuples(
        st.just("/backward"),
        st.fixed_dictionaries(
            {"tensors": st.one_of(names, st.lists(names, max_size=2))},
            optional={"grad_tensors": st.lists(json_values, max_size=2)},
        ),
    ),
    st.tuples(st.just("/tensors/x"), json_values),
)


def check(client: SyncClient, path: str, body: Any) -> None:
    before = snapshot(client, "nb")
    method = "PUT" if path.startswith("/tensors") else "POST"
    r = client.request(method, NB + path, json=body)
    assert r.status_code < 500, (path, body, r.text)
    if r.status_code >= 400:
        assert r.headers["content-type"].startswith("application/problem+json")
        assert snapshot(client, "nb") == before, (path, body, r.text)


# each example starts by rebuilding the session, so sharing the client is safe
reuse_client = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])


@reuse_client
@given(case=bodies)
def test_arbitrary_bodies(client: SyncClient, case: tuple[str, Any]) -> None:
    client.delete(NB)
    client.post("/v1/sessions", json={"name": "nb"})
    put(client, "nb", "x", [[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    put(client, "nb", "y", [1.0, -1.0])
    check(client, *case)


@reuse_client
@given(text=st.text(max_size=60))
def test_arbitrary_expressions(client: SyncClient, text: str) -> None:
    client.delete(NB)
    client.post("/v1/sessions", json={"name": "nb"})
    put(client, "nb", "x", [1.0, 2.0], requires_grad=True)
    check(client, "/ops", {"out": "z", "expr": text})
