"""The smaller guards of a server shared with strangers: JSON bodies bounded before they
are parsed, every allowed method in Allow, strict booleans, the download headers
honoured on upload, exports that do not change with a restart."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from svc_helpers import SyncClient, assert_problem, make_settings

from service.app import create_app

NB = "/v1/sessions/nb"
RAW = {"Content-Type": "application/octet-stream"}


def test_a_json_body_of_too_many_values_is_refused_before_parsing(
    client: SyncClient, session: str
) -> None:
    limit = client.app.state.settings.max_json_values
    body = b'{"data": [' + b"1," * limit + b"1]}"  # parsed, about 70 MB of Python floats
    r = client.put(f"{NB}/tensors/big", content=body, headers={"Content-Type": "application/json"})
    assert_problem(r, 413, "limit_exceeded")
    assert "GRADSERVE_MAX_JSON_VALUES" in r.json()["hint"]
    step = b'{"out": "y", "op": "add", "args": ["x", {"data": [' + b"1," * limit + b"1]}]}"
    r = client.post(f"{NB}/ops", content=step, headers={"Content-Type": "application/json"})
    assert_problem(r, 413, "limit_exceeded")
    assert [t["name"] for t in client.get(NB).json()["tensors"]] == ["x"]


def test_405_allows_every_method_of_the_path(client: SyncClient, session: str) -> None:
    r = client.post(f"{NB}/tensors/x")
    assert_problem(r, 405, "method_not_allowed")
    assert {m.strip() for m in r.headers["allow"].split(",")} >= {"GET", "PUT", "PATCH", "DELETE"}
    r = client.put(NB)
    assert_problem(r, 405, "method_not_allowed")
    assert {m.strip() for m in r.headers["allow"].split(",")} >= {"GET", "DELETE"}


def test_booleans_are_strict(client: SyncClient, session: str) -> None:
    for flag in (0, 1, "true", "yes", None):
        r = client.put(f"{NB}/tensors/y", json={"data": [1.0], "requires_grad": flag})
        assert_problem(r, 422, "validation_error")
        r = client.post(f"{NB}/backward", json={"tensors": "x", "retain_graph": flag})
        assert r.status_code == 422 or flag is None, r.text
    assert "y" not in [t["name"] for t in client.get(NB).json()["tensors"]]


def test_the_download_headers_describe_an_upload(client: SyncClient, session: str) -> None:
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    headers = {**RAW, "Gradserve-Shape": "2,3", "Gradserve-Dtype": "float64"}
    r = client.put(f"{NB}/tensors/a", content=a.tobytes(), headers=headers)
    assert r.status_code == 201, r.text
    assert r.json()["shape"] == [2, 3] and r.json()["dtype"] == "float64"
    down = client.get(f"{NB}/tensors/a", headers={"Accept": "application/octet-stream"})
    again = {**RAW, "Gradserve-Shape": down.headers["gradserve-shape"],
             "Gradserve-Dtype": down.headers["gradserve-dtype"]}  # fmt: skip
    assert client.put(f"{NB}/tensors/b", content=down.content, headers=again).status_code == 201
    assert client.get(f"{NB}/tensors/b").json()["data"]["data"] == a.tolist()
    r = client.put(f"{NB}/tensors/c?shape=6", content=a.tobytes(), headers=headers)
    assert_problem(r, 422, "invalid_tensor")  # the query and the header disagree


def test_an_export_is_the_same_after_a_restart(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'g.db'}"
    exports = []
    for run in range(2):
        with SyncClient(create_app(make_settings(store=url))) as c:
            if run == 0:
                assert c.post("/v1/sessions", json={"name": "nb"}).status_code == 201
                for name in ("zeta", "alpha", "mid", "zeta"):
                    body = {"data": [1.0, 2.0], "requires_grad": True}
                    assert c.put(f"{NB}/tensors/{name}", json=body).status_code in (200, 201)
                c.post(f"{NB}/ops", json={"out": "s", "expr": "(alpha * mid).sum()"})
                c.post(f"{NB}/backward", json={"tensors": "s"})
            exports.append(c.get(f"{NB}/export").content)
    assert exports[0] == exports[1]


def test_a_0d_leaf_keeps_its_shape_through_a_restart_and_an_export(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'g.db'}"
    for run in range(2):
        with SyncClient(create_app(make_settings(store=url))) as c:
            if run == 0:
                assert c.post("/v1/sessions", json={"name": "nb"}).status_code == 201
                body = {"data": 0.5, "requires_grad": True}
                assert c.put(f"{NB}/tensors/z", json=body).json()["shape"] == []
            assert c.get(f"{NB}/tensors/z").json()["shape"] == []
            raw = c.get(f"{NB}/export").content
            (length,) = np.frombuffer(raw[:8], "<u8")
            assert b'"z":{"dtype":"F32","shape":[]' in raw[8 : 8 + int(length)]
