"""A thin test-side wrapper over the HTTP contract (not the product's client)."""

from __future__ import annotations

import itertools
from typing import Any

import httpx
import numpy as np

_names = itertools.count()


def decode(value: dict[str, Any] | None) -> np.ndarray | None:
    """A wire tensor (JSON form) as an ndarray; "NaN"/"Infinity" strings become floats."""
    if value is None:
        return None
    data = value["data"]

    def conv(v: Any) -> Any:
        if isinstance(v, list):
            return [conv(x) for x in v]
        if isinstance(v, str):
            return float(v.replace("Infinity", "inf"))
        return v

    return np.asarray(conv(data), dtype=value.get("dtype", "float32"))


def encode(array: Any) -> dict[str, Any]:
    arr = np.asarray(array, dtype=np.float32)
    return {"data": arr.tolist(), "dtype": "float32"}


class Api:
    """One session on a live server, with helpers that assert success."""

    def __init__(self, http: httpx.Client, name: str | None = None) -> None:
        self.http = http
        self.name = name or f"it-{next(_names)}-{id(self) % 10_000}"
        r = http.post("/v1/sessions", json={"name": self.name})
        assert r.status_code == 201, r.text
        self.base = f"/v1/sessions/{self.name}"

    def put(
        self, name: str, data: Any, requires_grad: bool = False, dtype: str = "float32"
    ) -> None:
        r = self.http.put(
            f"{self.base}/tensors/{name}",
            json={
                "data": np.asarray(data).tolist(),
                "dtype": dtype,
                "requires_grad": requires_grad,
            },
        )
        assert r.status_code in (200, 201), r.text

    def op(self, out: str, op: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        r = self.http.post(
            f"{self.base}/ops", json={"out": out, "op": op, "args": list(args), "kwargs": kwargs}
        )
        assert r.status_code == 201, r.text
        return r.json()

    def expr(self, out: str, expr: str, **extra: Any) -> dict[str, Any]:
        r = self.http.post(f"{self.base}/ops", json={"out": out, "expr": expr, **extra})
        assert r.status_code == 201, r.text
        return r.json()

    def backward(
        self, tensors: Any, grad_tensors: list[Any] | None = None, **kw: Any
    ) -> httpx.Response:
        body: dict[str, Any] = {"tensors": tensors, **kw}
        if grad_tensors is not None:
            body["grad_tensors"] = [None if g is None else encode(g) for g in grad_tensors]
        return self.http.post(f"{self.base}/backward", json=body)

    def grad(self, name: str) -> np.ndarray | None:
        r = self.http.get(f"{self.base}/tensors/{name}/grad")
        assert r.status_code == 200, r.text
        return decode(r.json()["grad"])

    def value(self, name: str) -> np.ndarray:
        r = self.http.get(f"{self.base}/tensors/{name}")
        assert r.status_code == 200, r.text
        out = decode(r.json()["data"])
        assert out is not None
        return out

    def zero_grad(self, *names: str) -> None:
        body = {"tensors": list(names)} if names else {}
        r = self.http.post(f"{self.base}/zero_grad", json=body)
        assert r.status_code == 200, r.text

    def delete(self) -> None:
        self.http.delete(self.base)
