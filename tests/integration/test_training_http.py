"""A 200-step training loop over HTTP: an MLP on a small synthetic data set,
forward and loss as steps, SGD as ``assign`` steps under no_grad."""

from __future__ import annotations

import numpy as np
import pytest

from .api import Api, decode

pytestmark = pytest.mark.integration


def test_mlp_training_loop_loss_falls(http) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(0)
    n, d, h, c = 64, 4, 16, 3
    centers = rng.normal(0, 2.0, size=(c, d))
    labels = rng.integers(0, c, size=n)
    inputs = centers[labels] + rng.normal(0, 0.5, size=(n, d))
    api = Api(http)
    api.put("X", inputs)
    api.put("Y", labels, dtype="int64")
    api.put("W1", rng.normal(0, 0.5, size=(h, d)), requires_grad=True)
    api.put("b1", np.zeros(h), requires_grad=True)
    api.put("W2", rng.normal(0, 0.5, size=(c, h)), requires_grad=True)
    api.put("b2", np.zeros(c), requires_grad=True)
    step = [
        {"out": "hidden", "expr": "relu(linear(X, W1, b1))"},
        {"out": "logits", "expr": "linear(hidden, W2, b2)"},
        {"out": "loss", "expr": "cross_entropy(logits, Y)"},
    ]
    update = [
        {"out": p, "expr": f"{p} - 0.2 * {p}.grad", "assign": True}
        for p in ("W1", "b1", "W2", "b2")
    ]
    losses = []
    for _ in range(200):
        r = http.post(f"{api.base}/batch", json={"steps": step})
        assert r.status_code in (200, 201), r.text
        r = http.post(f"{api.base}/backward", json={"tensors": "loss"})
        assert r.status_code == 200, r.text
        r = http.post(f"{api.base}/batch", json={"steps": update})
        assert r.status_code in (200, 201), r.text
        r = http.post(f"{api.base}/zero_grad", json={})
        assert r.status_code == 200, r.text
        losses.append(float(api.value("loss")))
    assert losses[-1] < 0.5 * losses[0], losses[::20]
    assert np.mean(losses[-10:]) < np.mean(losses[:10])
    r = http.get(f"{api.base}/tensors/W1")
    assert r.json()["version"] == 200  # every assign bumped the leaf's version
    assert decode(r.json()["grad"]) is not None
    api.delete()
