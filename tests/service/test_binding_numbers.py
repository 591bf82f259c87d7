"""A JSON number where PyTorch's signature demands a Tensor is ``torch.tensor(number)``:
REST users write ``atan2(x, 2.0)`` and get what torch gives for ``atan2(x, tensor(2.))``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from svc_helpers import SyncClient

S = "/v1/sessions/nb"


@pytest.mark.parametrize(
    ("text", "torch_text"),
    [
        ("atan2(x, 2.0)", "torch.atan2(x, torch.tensor(2.0))"),
        ("maximum(x, 1.5)", "torch.maximum(x, torch.tensor(1.5))"),
        ("x.fmin(1)", "x.fmin(torch.tensor(1))"),
        ("heaviside(x, 0.5)", "torch.heaviside(x, torch.tensor(0.5))"),
        ("pow(2, x)", "torch.pow(2, x)"),
    ],
)
def test_expression_numbers_become_tensors(
    client: SyncClient, session: str, text: str, torch_text: str, torch: Any
) -> None:
    r = client.post(f"{S}/ops", json={"out": "r", "expr": text})
    assert r.status_code == 201, r.text
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    want = eval(torch_text, {"torch": torch, "x": x})
    got = r.json()
    assert got["dtype"] == str(want.dtype).removeprefix("torch.")
    np.testing.assert_allclose(np.array(got["data"]["data"]), want.detach().numpy(), rtol=1e-6)


def test_step_numbers_become_tensors(client: SyncClient, session: str, torch: Any) -> None:
    r = client.post(f"{S}/ops", json={"out": "r", "op": "atan2", "args": ["x", 2.0]})
    assert r.status_code == 201, r.text
    want = torch.atan2(torch.tensor([1.0, 2.0]), torch.tensor(2.0))
    np.testing.assert_allclose(np.array(r.json()["data"]["data"]), want.numpy(), rtol=1e-6)
