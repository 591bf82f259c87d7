"""The graph as people see it: shapes on nodes, the computation's ends as default
roots, a client's temporaries hidden unless asked for, and an HTML 404 page."""

from __future__ import annotations

from svc_helpers import SyncClient, put, step

NB = "/v1/sessions/nb"


def test_nodes_carry_shapes_and_default_roots_are_the_ends(
    client: SyncClient, session: str
) -> None:
    put(client, "nb", "w", [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    step(client, "nb", out="h", expr="w * 2")
    step(client, "nb", out="loss", expr="h.sum()")
    g = client.get(f"{NB}/graph").json()
    assert g["roots"] == ["loss"]  # h is inside loss's graph: not a root of its own
    shapes = {n["name"]: n["shape"] for n in g["nodes"]}
    assert shapes == {"SumBackward0": [], "MulBackward0": [2, 3], "AccumulateGrad": [2, 3]}
    dot = client.get(f"{NB}/graph.dot").text
    assert "w\\n(2, 3)" in dot and "(loss) ()" in dot


def test_temporaries_are_hidden_unless_asked_for(client: SyncClient, session: str) -> None:
    step(client, "nb", out="_t0001_1", expr="x * 2")
    step(client, "nb", out="y", expr="_t0001_1 + 1")
    g = client.get(f"{NB}/graph").json()
    assert g["roots"] == ["y"]
    assert all(not name.startswith("_") for n in g["nodes"] for name in n["tensors"])
    svg = client.get(f"{NB}/graph.svg").text
    assert "_t0001_1" not in svg
    shown = client.get(f"{NB}/graph", params={"temporaries": "true"}).json()
    assert any("_t0001_1" in n["tensors"] for n in shown["nodes"])


def test_an_unknown_session_page_is_an_html_404(client: SyncClient) -> None:
    r = client.get("/ui/sessions/nobody-here")
    assert r.status_code == 404
    assert r.headers["content-type"].startswith("text/html")
    assert "No session" in r.text and "nobody-here" in r.text
    r = client.get("/ui/sessions/bad%20name")
    assert r.status_code == 422 and r.headers["content-type"].startswith("text/html")


def test_saved_tensors_and_accumulate_grad_as_torchviz_draws_them(
    client: SyncClient, session: str
) -> None:
    """Both ways: off (the default picture), on (saved shapes; AccumulateGrad apart)."""
    put(client, "nb", "w", [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    step(client, "nb", out="h", expr="w * w")  # MulBackward0 saves both operands
    plain = client.get(f"{NB}/graph", params={"roots": "h"}).json()
    assert all(n.get("saved") is None and not n.get("accumulator") for n in plain["nodes"])
    g = client.get(
        f"{NB}/graph", params={"roots": "h", "saved": "true", "accumulate_grad": "true"}
    ).json()
    by_name = {n["name"]: n for n in g["nodes"]}
    assert by_name["MulBackward0"]["saved"] == [[2, 3], [2, 3]]
    acc = [n for n in g["nodes"] if n.get("accumulator")]
    (leaf,) = [n for n in g["nodes"] if n["tensors"] == ["w"]]
    assert (
        len(acc) == 1 and {"source": acc[0]["id"], "target": leaf["id"], "input": 0} in g["edges"]
    )
    dot = client.get(
        f"{NB}/graph.dot", params={"roots": "h", "saved": "true", "accumulate_grad": "true"}
    ).text
    assert "saved (2, 3) (2, 3)" in dot and '"AccumulateGrad"' in dot
    client.post(f"{NB}/backward", json={"tensors": ["h"], "grad_tensors": [[[1.0] * 3] * 2]})
    freed = client.get(f"{NB}/graph", params={"roots": "h", "saved": "true"}).json()
    assert {n["name"]: n for n in freed["nodes"]}["MulBackward0"]["saved"] == []
