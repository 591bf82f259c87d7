"""Scripted sessions for the durability tests (a uniquely named module: tests/ is not a
package): requests whose answers must not change when the server dies between them."""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import FastAPI
from svc_helpers import SyncClient

from service.app import create_app
from service.settings import Settings

Request = tuple[str, str, dict[str, Any] | None]

S = "/v1/sessions/nb"


def script() -> list[Request]:
    """A notebook's worth of autograd: leaves, graphs kept and freed, create_graph, in-place
    training steps, grads zeroed and dropped, flags flipped, names unbound, and errors."""
    return [
        ("POST", "/v1/sessions", {"name": "nb"}),
        ("PUT", f"{S}/tensors/x", {"data": [1.0, 2.0, 3.0], "requires_grad": True}),
        ("PUT", f"{S}/tensors/w", {"data": [[0.5, -1.0], [2.0, 0.25], [1.5, 1.0]],
                                  "dtype": "float64", "requires_grad": True}),
        ("PUT", f"{S}/tensors/k", {"data": [1, 2, 3], "dtype": "int64"}),
        ("POST", f"{S}/ops", {"out": "y", "expr": "x ** 2 * 3"}),
        ("POST", f"{S}/ops", {"out": "z", "op": "sum", "args": ["y"]}),
        ("POST", f"{S}/backward", {"tensors": "z", "retain_graph": True}),
        ("GET", f"{S}/tensors/x/grad", None),
        ("POST", f"{S}/backward", {"tensors": "z"}),
        ("GET", f"{S}/tensors/x", None),
        ("POST", f"{S}/backward", {"tensors": "z"}),  # graph_freed
        ("POST", f"{S}/ops", {"out": "s", "expr": "(x + x).sum()"}),
        ("POST", f"{S}/backward", {"tensors": "s"}),
        ("POST", f"{S}/backward", {"tensors": "s"}),  # add/sum only: runs again
        ("POST", f"{S}/zero_grad", {"tensors": ["x"]}),
        ("POST", f"{S}/ops", {"out": "c", "expr": "x ** 3"}),
        ("POST", f"{S}/grad", {"outputs": "c", "inputs": "x", "grad_outputs": [{"data": [1, 1, 1]}],
                               "create_graph": True, "out": ["gx"]}),
        ("POST", f"{S}/ops", {"out": "g2", "expr": "gx.sum()"}),
        ("POST", f"{S}/backward", {"tensors": "g2"}),
        ("GET", f"{S}/tensors/x/grad", None),
        ("POST", f"{S}/batch", {"steps": [
            {"out": "loss", "expr": "((w.t() @ x.double()) ** 2).mean()"},
            {"out": "h", "op": "mul", "args": ["loss", 2]}]}),
        ("POST", f"{S}/backward", {"tensors": "loss", "retain_graph": True}),
        ("POST", f"{S}/ops", {"out": "w", "expr": "w - 0.1 * w.grad", "assign": True}),
        ("GET", f"{S}/tensors/w", None),
        ("POST", f"{S}/backward", {"tensors": "h"}),  # w saved by the graph, changed: version
        ("POST", f"{S}/ops", {"out": "w", "expr": "w + 1", "assign": False}),  # rebind
        ("PATCH", f"{S}/tensors/y", {"retain_grad": True}),
        ("POST", f"{S}/ops", {"out": "q", "expr": "(y * k).sum()"}),
        ("POST", f"{S}/backward", {"tensors": "q"}),
        ("GET", f"{S}/tensors/y/grad", None),
        ("DELETE", f"{S}/tensors/y/grad", None),
        ("GET", f"{S}/tensors/y", None),
        ("DELETE", f"{S}/tensors/c", None),
        ("GET", f"{S}/tensors/c", None),  # 404
        ("POST", f"{S}/ops", {"out": "bad", "expr": "x @ w"}),  # shape_mismatch, no change
        ("PATCH", f"{S}/tensors/x", {"requires_grad": False}),
        ("POST", f"{S}/zero_grad", {"set_to_none": True}),
        ("POST", f"{S}/ops", {"out": ["vals", "idx"], "expr": "w.max(dim=1)"}),
        ("POST", f"{S}/ops", {"out": "m", "expr": "vals.sum() * 2"}),
        ("POST", f"{S}/backward", {"tensors": "m", "retain_graph": True}),
        ("GET", f"{S}/tensors/w", None),
        ("GET", f"{S}/graph", None),
        ("POST", f"{S}/backward", {"tensors": "m"}),
        ("GET", f"{S}/tensors/w", None),
        ("POST", f"{S}/backward", {"tensors": "m"}),  # graph_freed
        ("GET", f"{S}/tensors/x", None),
    ]  # fmt: skip


def answer(status: int, body: Any) -> tuple[int, Any]:
    """What must match between runs: the status and the body without wall-clock times."""
    if isinstance(body, dict):
        body = {k: v for k, v in body.items() if k not in ("created", "last_used", "expires")}
    return status, body


def memory_run(requests: list[Any]) -> list[tuple[int, Any]]:
    app: FastAPI = create_app(Settings(_env_file=None))  # type: ignore[call-arg]
    with SyncClient(app) as client:
        return [ask(client, r) for r in requests]


def ask(client: Any, request: Any) -> tuple[int, Any]:
    method, path, body = request
    r = client.request(method, path, json=body)
    return answer(r.status_code, r.json() if r.content else None)


def http_run(url: str, requests: list[Any]) -> list[tuple[int, Any]]:
    with httpx.Client(base_url=url, timeout=30) as client:
        return [ask(client, r) for r in requests]


def same(got: list[Any], want: list[Any], offset: int = 0) -> None:
    steps = script()
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, (offset + i, steps[offset + i])
