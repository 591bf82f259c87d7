"""The OpenAPI document and the server agree: what the server refuses at validation the
schema refuses too, what the schema allows gets past validation, and the document is
shaped for client generators (named types, one form per model, optional auth, no
declared defaults on request fields, one media type family per operation)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import jsonschema_rs
import pytest
from svc_helpers import SyncClient, assert_problem, make_settings, put

from service import openapi_dump
from service.app import create_app

SPEC: dict[str, Any] = json.loads(openapi_dump.render())
COMPONENTS: dict[str, Any] = SPEC["components"]["schemas"]
NB = "/v1/sessions/nb"
B64_2 = "AACAPwAAAEA="  # float32 [1.0, 2.0]


def fits(component: str, instance: Any) -> bool:
    """Whether ``instance`` is valid for the named component (validated as schemathesis does)."""
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$ref": f"#/components/schemas/{component}",
        "components": SPEC["components"],
    }
    return jsonschema_rs.validator_for(schema).is_valid(instance)


def walk(node: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from walk(value, (*path, str(key)))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from walk(value, (*path, str(i)))


def operations() -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in SPEC["paths"].items():
        for method, operation in item.items():
            yield path, method, operation


# --- requests the server refuses at validation are invalid for the schema -----------------------

REFUSED = [
    # (component, method, route, body, code)
    ("LeafIn", "PUT", "/tensors/x", {}, "invalid_tensor"),
    ("LeafIn", "PUT", "/tensors/x", {"data": [1.0, 2.0], "b64": B64_2}, "invalid_tensor"),
    ("LeafIn", "PUT", "/tensors/x", {"data": None}, "invalid_tensor"),
    ("LeafIn", "PUT", "/tensors/x", {"b64": B64_2, "shape": [-2]}, "invalid_tensor"),
    ("LeafIn", "PUT", "/tensors/x", {"data": 1.0, "shape": [1] * 33}, "invalid_tensor"),
    ("LeafIn", "PUT", "/tensors/x", {"b64": "AACAPw"}, "invalid_tensor"),  # unpadded
    ("LeafIn", "PUT", "/tensors/x", {"b64": "AACA PwAA"}, "invalid_tensor"),
    ("LeafIn", "PUT", "/tensors/x", {"data": [1.0], "dtype": "complex64"}, "invalid_tensor"),
    ("LeafIn", "PUT", "/tensors/x", {"data": [1.0, "nan"]}, "invalid_tensor"),
    ("StepIn", "POST", "/ops", {"out": "y"}, "validation_error"),
    ("StepIn", "POST", "/ops", {"out": "y", "op": "exp", "expr": "x"}, "validation_error"),
    ("StepIn", "POST", "/ops", {"out": "y", "expr": "x", "args": ["x"]}, "validation_error"),
    ("StepIn", "POST", "/ops", {"out": "y", "expr": "x", "kwargs": {"dim": 0}}, "validation_error"),
    ("StepIn", "POST", "/ops", {"out": [], "expr": "x"}, "validation_error"),
    (
        "StepIn",
        "POST",
        "/ops",
        {"out": ["a", "b"], "expr": "x", "assign": True},
        "validation_error",
    ),
    ("StepIn", "POST", "/ops", {"out": "class", "expr": "x"}, "invalid_name"),
    ("StepIn", "POST", "/ops", {"out": "__x__", "expr": "x"}, "invalid_name"),
    ("StepIn", "POST", "/ops", {"out": "y", "op": "exp", "args": ["1x"]}, "invalid_name"),
    (
        "StepIn",
        "POST",
        "/ops",
        {"out": "y", "op": "exp", "args": [{"b64": B64_2, "data": [1]}]},
        "invalid_tensor",
    ),
    ("BackwardIn", "POST", "/backward", {"tensors": "for"}, "invalid_name"),
    ("BackwardIn", "POST", "/backward", {"tensors": []}, "validation_error"),
    ("BackwardIn", "POST", "/backward", {"tensors": "x", "inputs": []}, "validation_error"),
    ("BackwardIn", "POST", "/backward", {"tensors": "x", "grad_tensors": ["1x"]}, "invalid_name"),
    ("GradIn", "POST", "/grad", {"outputs": "x", "inputs": "x", "out": ["None"]}, "invalid_name"),
    ("SessionIn", "POST", "", {"name": "-nb"}, "invalid_name"),
]


@pytest.mark.parametrize(
    ("component", "method", "route", "body", "code"),
    REFUSED,
    ids=[f"{c}-{i}" for i, (c, *_) in enumerate(REFUSED)],
)
def test_what_the_server_refuses_the_schema_refuses(
    client: SyncClient, session: str, component: str, method: str, route: str, body: Any, code: str
) -> None:
    assert not fits(component, body), f"{component} allows {body!r}"
    url = "/v1/sessions" if component == "SessionIn" else NB + route
    assert_problem(client.request(method, url, json=body), 422, code)


def test_stateless_names_and_fetch_keys(client: SyncClient) -> None:
    for body in (
        {"tensors": {"lambda": {"data": 1.0}}},
        {"tensors": {"__x__": {"data": 1.0}}},
        {"fetch": ["x.data"]},
        {"fetch": ["if.grad"]},
    ):
        assert not fits("GradientIn", body), body
        assert_problem(client.post("/v1/gradient", json=body), 422, "invalid_name")
    ok = {"tensors": {"x": {"data": [1.0, 2.0], "requires_grad": True}}, "fetch": ["x", "x.grad"]}
    assert fits("GradientIn", ok)
    assert client.post("/v1/gradient", json=ok).json() == {
        "values": {"x": {"data": [1.0, 2.0], "dtype": "float32"}, "x.grad": None}
    }


# --- what the schema allows, the server takes ---------------------------------------------------


def test_examples_fit_their_schemas() -> None:
    seen = 0
    for name, component in COMPONENTS.items():
        for example in component.get("examples", []):
            assert fits(name, example), (name, example)
            seen += 1
    for _, _, op in operations():
        media = op.get("requestBody", {}).get("content", {}).get("application/json", {})
        for example in media.get("examples", {}).values():
            assert fits(media["schema"]["$ref"].rsplit("/", 1)[1], example["value"]), example
            seen += 1
    assert seen > 30


ACCEPTED = [
    # (component, method, route, body, status): the tutorials' bodies, and corner cases
    ("LeafIn", "PUT", "/tensors/w", {"data": [1.0, 2.0], "requires_grad": True}, 201),
    ("LeafIn", "PUT", "/tensors/w", {"b64": B64_2, "dtype": "float32", "shape": [2]}, 201),
    ("LeafIn", "PUT", "/tensors/w", {"b64": B64_2}, 201),  # a flat vector
    ("LeafIn", "PUT", "/tensors/w", {"data": [0.0, "-Infinity", "NaN"], "dtype": "float64"}, 201),
    ("LeafIn", "PUT", "/tensors/w", {"data": [[True, False]], "dtype": "bool"}, 201),
    ("StepIn", "POST", "/ops", {"out": "y", "op": "pow", "args": ["x", 2]}, 201),
    ("StepIn", "POST", "/ops", {"out": "y", "expr": "x ** 2", "no_grad": True}, 201),
    ("StepIn", "POST", "/ops", {"out": "c", "op": "cat", "args": [["x", "x"]]}, 201),
    ("StepIn", "POST", "/ops", {"out": "y", "op": "mul", "args": ["x", {"data": [2.0, 3.0]}]}, 201),
    ("StepIn", "POST", "/ops", {"out": ["a", "b"], "op": "chunk", "args": ["x", 2]}, 201),
    ("StepIn", "POST", "/ops", {"out": "x", "expr": "x * 2", "assign": True, "no_grad": True}, 201),
    ("BackwardIn", "POST", "/backward", {"tensors": "s", "retain_graph": True}, 200),
    ("BackwardIn", "POST", "/backward", {"tensors": ["y2"], "grad_tensors": [[1.0, "NaN"]]}, 200),
    ("BackwardIn", "POST", "/backward", {"tensors": "y2", "grad_tensors": [{"b64": B64_2}]}, 200),
    ("GradIn", "POST", "/grad", {"outputs": "s", "inputs": ["x"], "out": ["dx"]}, 200),
]


@pytest.mark.parametrize(
    ("component", "method", "route", "body", "status"),
    ACCEPTED,
    ids=[f"{c}-{i}" for i, (c, *_) in enumerate(ACCEPTED)],
)
def test_what_the_schema_allows_the_server_takes(
    client: SyncClient,
    session: str,
    component: str,
    method: str,
    route: str,
    body: Any,
    status: int,
) -> None:
    assert fits(component, body), f"{component} refuses {body!r}"
    with_graph = {"steps": [{"out": "y2", "expr": "x * x"}, {"out": "s", "expr": "y2.sum()"}]}
    assert client.post(f"{NB}/batch", json=with_graph).status_code == 200
    r = client.request(method, NB + route, json=body)
    assert r.status_code == status, r.text


def test_a_bare_string_gradient_is_a_name(client: SyncClient, session: str) -> None:
    """A bare "NaN" gradient names a tensor ("NaN" is an identifier): the branches are disjoint."""
    body = {"tensors": "y", "grad_tensors": ["NaN"]}
    assert fits("BackwardIn", body)
    client.post(f"{NB}/ops", json={"out": "y", "expr": "x * 3"})
    assert_problem(client.post(f"{NB}/backward", json=body), 404, "tensor_not_found")
    put(client, "nb", "NaN", [1.0, 1.0])
    grads = client.post(f"{NB}/backward", json=body).json()["grads"]
    assert grads["x"]["data"] == [3.0, 3.0]


LEGACY = [
    # schema-invalid (an empty field of the other form) but always accepted, so still accepted
    ("/tensors/w", "PUT", {"b64": B64_2, "data": None}),
    ("/tensors/w", "PUT", {"data": [1.0], "b64": None}),
    ("/ops", "POST", {"out": "y", "expr": "x * 2", "args": [], "kwargs": {}}),
    ("/ops", "POST", {"out": "y", "expr": "x * 2", "op": None}),
    ("/ops", "POST", {"out": "y", "op": "exp", "args": ["x"], "expr": None}),
]


@pytest.mark.parametrize(("route", "method", "body"), LEGACY)
def test_old_bodies_still_work(
    client: SyncClient, session: str, route: str, method: str, body: Any
) -> None:
    assert client.request(method, NB + route, json=body).status_code == 201


# --- shaped for generators ----------------------------------------------------------------------


def test_enums_are_named_components() -> None:
    assert {"Dtype", "Encoding", "GraphFormat", "NonFinite"} <= set(COMPONENTS)
    for path, node in walk(SPEC):
        if isinstance(node, dict) and "enum" in node:
            assert len(path) == 3 and path[:2] == ("components", "schemas"), path
    encoding = [
        p["schema"]
        for _, _, op in operations()
        for p in op.get("parameters", [])
        if p["name"] == "encoding"
    ]
    assert encoding and all(s["$ref"] == "#/components/schemas/Encoding" for s in encoding)


def test_bodies_with_several_forms_are_one_of_their_forms() -> None:
    for union, forms in {
        "TensorValue": ["TensorDataIn", "TensorB64In"],
        "LeafIn": ["LeafDataIn", "LeafB64In"],
        "StepIn": ["OpStepIn", "ExprStepIn", "SeedStepIn"],
        "BatchItem": [
            "OpStepIn",
            "ExprStepIn",
            "SeedStepIn",
            "BackwardStepIn",
            "GradStepIn",
            "ZeroGradStepIn",
        ],
    }.items():
        assert COMPONENTS[union]["oneOf"] == [{"$ref": f"#/components/schemas/{f}"} for f in forms]
        for form in forms:
            assert COMPONENTS[form]["additionalProperties"] is False
    bodies = {
        op["operationId"]: op["requestBody"]["content"]["application/json"]["schema"]
        for _, _, op in operations()
        if "application/json" in op.get("requestBody", {}).get("content", {})
    }
    assert bodies["putTensor"]["$ref"] == "#/components/schemas/LeafIn"
    assert bodies["runOp"]["$ref"] == "#/components/schemas/StepIn"
    assert bodies["runBatch"]["$ref"] == "#/components/schemas/BatchIn"


def test_request_fields_declare_no_defaults() -> None:
    """openapi-typescript makes a property with a default required, even in a request."""
    requests = [c for name, c in COMPONENTS.items() if name.endswith("In")]
    assert len(requests) > 10
    for component in requests:
        for name, prop in component.get("properties", {}).items():
            assert "default" not in prop, name
    assert COMPONENTS["OpStepIn"]["required"] == ["out", "op"]
    assert "Default: false." in COMPONENTS["OpStepIn"]["properties"]["assign"]["description"]


def test_auth_is_optional_in_the_spec() -> None:
    """One top-level requirement, "a bearer key or none": generators then take a plain client."""
    assert SPEC["security"] == [{"bearer": []}, {}]
    for path, _, op in operations():
        if path.startswith("/v1/"):
            assert "security" not in op, path
        else:
            assert op["security"] == [], path


def test_the_server_still_enforces_keys() -> None:
    with SyncClient(create_app(make_settings(api_keys="k1"))) as c:
        assert_problem(c.get("/v1/sessions"), 401, "unauthorized")
        assert c.get("/v1/sessions", headers={"Authorization": "Bearer k1"}).status_code == 200
        assert c.get("/healthz").status_code == 200


# --- the graph: JSON from getGraph, drawings from renderGraph ----------------------------------


def test_graph_operations_declare_one_kind_of_answer() -> None:
    paths = SPEC["paths"]
    get = paths["/v1/sessions/{session}/graph"]["get"]
    assert list(get["responses"]["200"]["content"]) == ["application/json"]
    assert "format" not in {p["name"] for p in get["parameters"]}
    render = paths["/v1/sessions/{session}/graph.{format}"]["get"]
    assert render["operationId"] == "renderGraph"
    assert set(render["responses"]["200"]["content"]) == {
        "text/vnd.graphviz",
        "text/vnd.mermaid",
        "image/svg+xml",
    }
    fmt = next(p for p in render["parameters"] if p["name"] == "format")
    assert fmt["schema"]["$ref"] == "#/components/schemas/GraphFormat"


@pytest.mark.parametrize(
    ("fmt", "media", "start"),
    [
        ("dot", "text/vnd.graphviz", "digraph"),
        ("mermaid", "text/vnd.mermaid", "flowchart"),
        ("svg", "image/svg+xml", "<"),
    ],
)
def test_render_graph(client: SyncClient, session: str, fmt: str, media: str, start: str) -> None:
    client.post(f"{NB}/ops", json={"out": "y", "expr": "x ** 2"})
    r = client.get(f"{NB}/graph.{fmt}", params={"roots": "y"})
    assert r.status_code == 200 and r.headers["content-type"].startswith(media)
    assert r.text.startswith(start) and "PowBackward0" in r.text
    old = client.get(f"{NB}/graph", params={"roots": "y", "format": fmt})  # undocumented, kept
    assert old.status_code == 200 and old.text == r.text
    assert_problem(client.get(f"{NB}/graph.png"), 422, "validation_error")


def test_graph_roots_repeat_or_comma_separate(client: SyncClient, session: str) -> None:
    client.post(f"{NB}/ops", json={"out": "y", "expr": "x ** 2"})
    client.post(f"{NB}/ops", json={"out": "z", "expr": "x * 3"})
    repeated = client.get(f"{NB}/graph?roots=y&roots=z").json()
    assert repeated == client.get(f"{NB}/graph?roots=y,z").json()
    assert repeated["roots"] == ["y", "z"]
    assert client.get(f"{NB}/graph").json()["roots"] == ["y", "z"]  # every non-leaf


def test_graph_page_links_the_svg_route(client: SyncClient, session: str) -> None:
    page = client.get("/ui/sessions/nb")
    assert page.status_code == 200 and 'href="/v1/sessions/nb/graph.svg"' in page.text
    assert client.get(f"{NB}/graph.svg").headers["content-type"].startswith("image/svg+xml")
