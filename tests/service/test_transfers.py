"""Binary tensors (raw bytes in and out) and safetensors export/import."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import safetensors.numpy
from svc_helpers import SyncClient, assert_problem, make_settings, put, snapshot

from service.app import create_app

S = "/v1/sessions/nb"
RAW = {"content-type": "application/octet-stream"}
BYTES = {"accept": "application/octet-stream"}


def _put_raw(c: SyncClient, name: str, arr: np.ndarray, **query: Any) -> Any:
    return c.put(f"{S}/tensors/{name}", content=arr.tobytes(), headers=RAW, params=query)


def test_binary_upload_and_download(client: SyncClient, session: str) -> None:
    w = np.arange(6, dtype="<f4").reshape(2, 3) / 4
    r = _put_raw(client, "w", w, dtype="float32", shape="2,3", requires_grad="true")
    assert r.status_code == 201, r.text
    assert r.json()["shape"] == [2, 3] and r.json()["requires_grad"] is True
    assert r.json()["data"]["data"] == w.tolist()
    assert _put_raw(client, "w", w, shape="3,2").status_code == 200  # rebound
    r = client.get(f"{S}/tensors/w", headers=BYTES)
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/octet-stream"
    assert r.headers["gradserve-dtype"] == "float32"
    assert r.headers["gradserve-shape"] == "3,2"
    assert r.content == w.tobytes()


@pytest.mark.parametrize(
    ("arr", "query", "shape"),
    [
        (np.array(2.5, "<f8"), {"dtype": "float64", "shape": ""}, []),
        (np.arange(5, dtype="<i8"), {"dtype": "int64"}, [5]),
        (np.array([True, False]), {"dtype": "bool", "shape": "2"}, [2]),
        (np.zeros((0, 3), "<f4"), {"shape": "0,3"}, [0, 3]),
    ],
)
def test_binary_shapes_and_dtypes(
    client: SyncClient, session: str, arr: np.ndarray, query: dict[str, str], shape: list[int]
) -> None:
    r = _put_raw(client, "t", arr, **query)
    assert r.status_code == 201, r.text
    assert r.json()["shape"] == shape
    r = client.get(f"{S}/tensors/t", headers=BYTES)
    assert r.headers["gradserve-shape"] == ",".join(map(str, shape))
    assert r.content == arr.astype(arr.dtype.newbyteorder("<")).tobytes()


def test_grad_as_bytes(client: SyncClient, session: str) -> None:
    r = client.get(f"{S}/tensors/x/grad", headers=BYTES)
    assert r.status_code == 204 and r.content == b""
    client.post(f"{S}/ops", json={"out": "y", "expr": "(x ** 2).sum()"})
    client.post(f"{S}/backward", json={"tensors": "y"})
    r = client.get(f"{S}/tensors/x/grad", headers=BYTES)
    assert r.status_code == 200
    assert np.frombuffer(r.content, "<f4").tolist() == [2.0, 4.0]
    assert r.headers["gradserve-shape"] == "2"
    json_answer = client.get(f"{S}/tensors/x/grad", headers={"accept": "application/json"})
    assert json_answer.json()["grad"]["data"] == [2.0, 4.0]


@pytest.mark.parametrize(
    ("body", "query", "headers", "status", "code"),
    [
        (b"\x00" * 8, {"dtype": "complex64"}, RAW, 422, "invalid_tensor"),
        (b"\x00" * 7, {}, RAW, 422, "invalid_tensor"),
        (b"\x00" * 8, {"shape": "3"}, RAW, 422, "invalid_tensor"),
        (b"\x00" * 8, {"shape": "a,b"}, RAW, 422, "invalid_tensor"),
        (b"\x00" * 8, {"shape": "-1"}, RAW, 422, "invalid_tensor"),
        (b"\x00" * 8, {"requires_grad": "maybe"}, RAW, 422, "invalid_tensor"),
        (b"\x00" * 8, {"dtype": "int64", "requires_grad": "true"}, RAW, 422,
         "dtype_not_differentiable"),
        (b"\x00" * 8, {}, {"content-type": "text/plain"}, 415, "unsupported_media_type"),
        (b"\x00" * 4, {"shape": "100000,100000"}, RAW, 413, "limit_exceeded"),
    ],
)  # fmt: skip
def test_binary_upload_errors(
    client: SyncClient,
    session: str,
    body: bytes,
    query: dict[str, str],
    headers: dict[str, str],
    status: int,
    code: str,
) -> None:
    before = snapshot(client, session)
    r = client.put(f"{S}/tensors/t", content=body, params=query, headers=headers)
    assert_problem(r, status, code)
    assert snapshot(client, session) == before


def test_binary_upload_over_the_session_bytes() -> None:
    with SyncClient(create_app(make_settings(max_session_bytes=64))) as c:
        c.post("/v1/sessions", json={"name": "nb"})
        r = _put_raw(c, "t", np.zeros(32, "<f4"))
        assert_problem(r, 507, "limit_exceeded")


def _trained(client: SyncClient, session: str) -> None:
    put(client, session, "n", [1, 2, 3], dtype="int64")
    client.post(f"{S}/ops", json={"out": "y", "expr": "(x ** 2).sum()"})  # not a leaf
    client.post(f"{S}/backward", json={"tensors": "y"})


def test_export_reads_in_pytorch(
    client: SyncClient, session: str, torch: Any, tmp_path: Path
) -> None:
    _trained(client, session)
    r = client.get(f"{S}/export")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "application/octet-stream"
    path = tmp_path / "nb.safetensors"
    path.write_bytes(r.content)
    from safetensors import safe_open
    from safetensors.torch import load_file

    loaded = load_file(str(path))
    assert set(loaded) == {"x", "x.grad", "n"}  # leaves and grads; y is not a leaf
    assert torch.equal(loaded["x"], torch.tensor([1.0, 2.0]))
    assert torch.equal(loaded["x.grad"], torch.tensor([2.0, 4.0]))
    assert loaded["n"].dtype == torch.int64
    with safe_open(str(path), framework="pt") as f:
        assert json.loads(f.metadata()["requires_grad"]) == ["x"]


def test_import_round_trip(client: SyncClient, session: str) -> None:
    _trained(client, session)
    exported = client.get(f"{S}/export").content
    assert client.post("/v1/sessions", json={"name": "copy"}).status_code == 201
    r = client.post("/v1/sessions/copy/import", content=exported, headers=RAW)
    assert r.status_code == 200, r.text
    assert sorted(t["name"] for t in r.json()["tensors"]) == ["n", "x"]
    mine, theirs = snapshot(client, session), snapshot(client, "copy")
    for name in ("x", "n"):
        for key in ("data", "grad", "requires_grad", "dtype", "shape"):
            assert theirs[name][key] == mine[name][key], (name, key)


def test_import_a_file_written_by_pytorch(client: SyncClient, session: str, torch: Any) -> None:
    from safetensors.torch import save

    raw = save(
        {"w": torch.ones(2, 2, dtype=torch.float64), "w.grad": torch.full((2, 2), 0.5).double()},
        metadata={"requires_grad": json.dumps(["w"])},
    )
    r = client.post(f"{S}/import?values=false", content=raw, headers=RAW)
    assert r.status_code == 200, r.text
    w = client.get(f"{S}/tensors/w").json()
    assert w["dtype"] == "float64" and w["requires_grad"] and w["grad"]["data"] == [[0.5] * 2] * 2
    # the imported leaf trains like any other
    client.post(f"{S}/ops", json={"out": "l", "expr": "(w * 3).sum()"})
    client.post(f"{S}/backward", json={"tensors": "l"})
    assert client.get(f"{S}/tensors/w/grad").json()["grad"]["data"] == [[3.5] * 2] * 2


def _file(arrays: dict[str, np.ndarray], requires: Any = ()) -> bytes:
    meta = {"requires_grad": requires if isinstance(requires, str) else json.dumps(requires)}
    return bytes(safetensors.numpy.save(arrays, metadata=meta))


F4 = np.ones(2, np.float32)


@pytest.mark.parametrize(
    ("raw", "headers", "status", "code"),
    [
        (b"not a file", RAW, 422, "invalid_tensor"),
        (b"", RAW, 422, "invalid_tensor"),
        (_file({"x": F4}), {"content-type": "application/json"}, 415, "unsupported_media_type"),
        (_file({"x.grad": F4}), RAW, 422, "invalid_tensor"),
        (_file({"x": F4, "x.grad": np.ones(3, np.float32)}), RAW, 422, "invalid_tensor"),
        (_file({"x.data": F4}), RAW, 422, "invalid_tensor"),
        (_file({"__x__": F4}), RAW, 422, "invalid_tensor"),
        (_file({"x": np.ones(2, np.complex64)}), RAW, 422, "invalid_tensor"),
        (_file({"x": F4}, ["y"]), RAW, 422, "invalid_tensor"),
        (_file({"x": F4}, "not json"), RAW, 422, "invalid_tensor"),
        (_file({"a": F4, "n": np.ones(2, np.int64)}, ["a", "n"]), RAW, 422,
         "dtype_not_differentiable"),
        (_file({"a": F4, "big": np.zeros(200, np.float32)}), RAW, 413, "limit_exceeded"),
    ],
)  # fmt: skip
def test_import_errors_change_nothing(
    raw: bytes, headers: dict[str, str], status: int, code: str
) -> None:
    with SyncClient(create_app(make_settings(max_tensor_elements=100))) as c:
        c.post("/v1/sessions", json={"name": "nb"})
        put(c, "nb", "a", [7.0])
        before = snapshot(c, "nb")
        assert_problem(c.post(f"{S}/import", content=raw, headers=headers), status, code)
        assert snapshot(c, "nb") == before


def test_import_over_the_session_bytes() -> None:
    with SyncClient(create_app(make_settings(max_session_bytes=64))) as c:
        c.post("/v1/sessions", json={"name": "nb"})
        raw = _file({"a": np.zeros(8, np.float32), "b": np.zeros(12, np.float32)})
        assert_problem(c.post(f"{S}/import", content=raw, headers=RAW), 507, "limit_exceeded")
        assert c.get("/v1/sessions/nb").json()["tensors"] == []


def test_export_and_import_of_an_unknown_session(client: SyncClient) -> None:
    assert_problem(client.get("/v1/sessions/nope/export"), 404, "session_not_found")
    r = client.post("/v1/sessions/nope/import", content=_file({"x": F4}), headers=RAW)
    assert_problem(r, 404, "session_not_found")
