"""The committed OpenAPI document is current, and every route is documented."""

from __future__ import annotations

import json

from service import openapi_dump

OPERATION_IDS = {
    "createSession",
    "listSessions",
    "getSession",
    "deleteSession",
    "putTensor",
    "getTensor",
    "patchTensor",
    "deleteTensor",
    "getGrad",
    "deleteGrad",
    "zeroGrad",
    "exportSession",
    "importSession",
    "runOp",
    "runBatch",
    "backward",
    "grad",
    "getGraph",
    "renderGraph",
    "computeGradient",
    "listOps",
    "healthz",
    "readyz",
    "metrics",
    "putProgram",
    "listPrograms",
    "getProgram",
    "deleteProgram",
    "runProgram",
    "programJacobian",
    "programHessian",
    "programVjp",
    "programJvp",
    "programHvp",
    "programPerSampleGrad",
}


def test_committed_openapi_is_current() -> None:
    committed = openapi_dump.DEFAULT_PATH.read_text(encoding="utf-8")
    assert committed == openapi_dump.render(), "openapi/openapi.json is stale: run `make openapi`"


def test_operations_and_problems_are_documented() -> None:
    schema = json.loads(openapi_dump.render())
    ops = {
        op["operationId"]: (path, op)
        for path, item in schema["paths"].items()
        for op in item.values()
    }
    assert set(ops) == OPERATION_IDS
    for op_id, (path, op) in ops.items():
        assert op.get("description") or op.get("summary"), op_id
        if not path.startswith("/v1"):
            continue
        errors = {code: r for code, r in op["responses"].items() if code.startswith(("4", "5"))}
        assert {"401", "422"} <= set(errors), op_id
        for r in errors.values():
            assert list(r["content"]) == ["application/problem+json"], op_id
    names = set(schema["components"]["schemas"])
    assert {
        "TensorValue",
        "TensorDataIn",
        "TensorB64In",
        "LeafIn",
        "TensorOut",
        "SessionOut",
        "StepIn",
        "OpStepIn",
        "ExprStepIn",
        "BatchIn",
        "BackwardIn",
        "GradIn",
        "GradientIn",
        "ZeroGradIn",
        "PatchTensorIn",
        "ProblemOut",
    } <= names
    assert "HTTPValidationError" not in names
    assert schema["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert schema["security"] == [{"bearer": []}, {}]  # a key, or none (see test_spec_auth)
    assert all(op["security"] == [] for path, op in ops.values() if not path.startswith("/v1"))


def test_committed_openapi_is_valid_openapi_3_1() -> None:
    """openapi-spec-validator: the document itself is valid OpenAPI (not just JSON)."""
    from openapi_spec_validator import validate

    validate(json.loads(openapi_dump.DEFAULT_PATH.read_text(encoding="utf-8")))


def test_every_route_with_a_body_declares_413() -> None:
    """The body limit (GRADSERVE_MAX_BODY_BYTES, GRADSERVE_MAX_JSON_VALUES) answers 413
    before any route runs, so a generated client must expect it wherever it sends a body."""
    schema = json.loads(openapi_dump.render())
    lacking = [
        op["operationId"]
        for item in schema["paths"].values()
        for op in item.values()
        if "requestBody" in op and "413" not in op["responses"]
    ]
    assert lacking == []
