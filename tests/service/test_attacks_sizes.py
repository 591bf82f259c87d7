"""Size attacks found by scaling every op's samples (tiny inputs, huge results): each is
refused (413) by the op's estimate before it allocates, and nothing is bound."""

from __future__ import annotations

from typing import Any

import pytest
from svc_helpers import SyncClient, assert_problem, put

ATTACKS: list[tuple[str, dict[str, Any]]] = [
    # 6000 x 6000 rows of two columns: 72M elements, built before the check afterwards
    ("cartesian_prod", {"op": "cartesian_prod", "args": ["v", "v"]}),
    ("cartesian_prod x3", {"op": "cartesian_prod", "args": ["v", "v", "v"]}),
    # 100 rows of 6000: a 100 x 600000 matrix
    ("block_diag", {"op": "block_diag", "args": ["row"] * 100}),
    # bins=2 per coordinate of 40 coordinates: 2**40 bins
    ("histogramdd", {"op": "histogramdd", "args": ["wide", 2]}),
]


@pytest.mark.parametrize("body", [b for _, b in ATTACKS], ids=[n for n, _ in ATTACKS])
def test_tiny_inputs_with_huge_results_are_refused(client: SyncClient, body: dict) -> None:
    assert client.post("/v1/sessions", json={"name": "a"}).status_code == 201
    put(client, "a", "v", [1.0] * 6000)
    put(client, "a", "row", [[1.0] * 6000])
    put(client, "a", "wide", [[0.5] * 40])
    r = client.post("/v1/sessions/a/ops", json={"out": "o", **body})
    problem = assert_problem(r, 413, "limit_exceeded")
    assert "would have" in problem["detail"], problem
    assert client.get("/v1/sessions/a/tensors/o").status_code == 404
