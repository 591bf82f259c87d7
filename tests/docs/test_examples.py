"""Every example in examples/ runs against a live server and prints what PyTorch computes:
each Python tutorial prints the same text, numbers to float32 precision, as the same
program run in PyTorch (``--torch``); each curl script's gradients equal PyTorch's."""

from __future__ import annotations

import json
import math
import os
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
TUTORIALS = sorted((ROOT / "examples" / "tutorials").glob("[0-9][0-9]_*.py"))
CURL = sorted((ROOT / "examples" / "curl").glob("[0-9][0-9]_*.sh"))
NUMBER = re.compile(r"-?(?:\d+\.?\d*(?:e[-+]?\d+)?|inf|nan)")


def test_five_tutorials_each_as_python_and_curl() -> None:
    assert len(TUTORIALS) == 5 and len(CURL) == 5
    assert [p.stem for p in TUTORIALS] == [p.stem for p in CURL]


def _run(cmd: list[str], **kwargs: Any) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, **kwargs)
    assert done.returncode == 0, f"{cmd} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _same_text_and_numbers(ours: str, ref: str) -> None:
    assert NUMBER.sub("#", ours) == NUMBER.sub("#", ref), (ours, ref)
    a = [float(n) for n in NUMBER.findall(ours)]
    b = [float(n) for n in NUMBER.findall(ref)]
    assert len(a) == len(b) and len(a) > 0
    for x, y in zip(a, b):
        assert (math.isnan(x) and math.isnan(y)) or math.isclose(x, y, rel_tol=1e-4, abs_tol=1e-6)


@pytest.mark.torch
@pytest.mark.parametrize("script", TUTORIALS, ids=lambda p: p.stem)
def test_python_tutorial_prints_what_torch_prints(script: Path, server: str, torch: Any) -> None:
    ours = _run([sys.executable, str(script), "--url", server])
    ref = _run([sys.executable, str(script), "--torch"])
    assert "tensor(" in ours  # it printed tensors
    _same_text_and_numbers(ours, ref)


# --- the curl scripts: the same programs in PyTorch -------------------------------------------


def _t01(torch: Any) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    torch.manual_seed(0)
    x = torch.randn(1, 1, requires_grad=True)
    z = (2 * x) ** 3
    z.backward(retain_graph=True)
    out.append(("x.grad", x.grad.clone()))
    for scale in (1.0, 0.1, 0.5):
        x.grad.zero_()
        z.backward(torch.tensor([[scale]]), retain_graph=True)
        out.append(("x.grad", x.grad.clone()))
    x = torch.randn(2, 2, requires_grad=True)
    z = (2 * x) ** 3
    for g in ([[1.0, 1.0], [1.0, 1.0]], [[0.0, 1.0], [0.0, 1.0]], [[1.0, 1.0], [0.0, 0.0]]):
        if x.grad is not None:
            x.grad.zero_()
        z.backward(torch.tensor(g), retain_graph=True)
        out.append(("x.grad", x.grad.clone()))
    x = torch.randn(2, 2, requires_grad=True)
    ((2 * x) ** 3).mean().backward()
    out.append(("x.grad", x.grad.clone()))
    return out


def _t02(torch: Any) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    x = torch.tensor(1.0, requires_grad=True)
    (x**3).backward()
    out.append(("x.grad", x.grad))
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    (x**2).backward(x)
    out.append(("x.grad", x.grad))
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    z = (x**2) ** 3
    z.backward(torch.ones(2), retain_graph=True)
    out += [("y.grad", None), ("x.grad", x.grad.clone())]
    z.backward(torch.ones(2), retain_graph=True)
    out.append(("x.grad", x.grad.clone()))
    x = torch.tensor([2.0, 2.0], requires_grad=True)
    z = torch.tensor([4.0, 4.0], requires_grad=True)
    y = x**2 + z**3
    y.backward(torch.ones(2))
    out += [("x.grad", x.grad), ("z.grad", z.grad)]
    with pytest.raises(RuntimeError, match="second time"):
        y.backward(torch.ones(2))
    out.append(("second_backward", 409))
    x = torch.tensor([[1.0, 2.0, 3.0, 4.0]], requires_grad=True)
    z = 2 * x
    for row in ([[1.0, 0, 0, 0]], [[0, 1.0, 0, 0]], [[1.0, 1, 1, 1]]):
        z.backward(torch.tensor(row), retain_graph=True)
        out.append(("x.grad", x.grad.clone()))
        x.grad.zero_()
    return out


def _t03(torch: Any) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    cases = [
        ([1.0, 2.0, 3.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0], [[0.1, 1.0, 0.0001]], 1),
        (0.1, 1.0, 0.1, None, 1),
        ([1.0], [0.0], [0.0], [[0.1]], 1),
        (1.0, 1.0, 1.0, None, 2),
    ]
    for av, bv, cv, g, times in cases:
        a, b, c = (torch.tensor(v, requires_grad=True) for v in (av, bv, cv))
        y = 3 * a + 2 * b * b + torch.log(c)
        for _ in range(times):
            y.backward(None if g is None else torch.tensor(g[0]), retain_graph=True)
        out += [("a.grad", a.grad), ("b.grad", b.grad), ("c.grad", c.grad)]
    return out


def _t04(torch: Any) -> list[tuple[str, Any]]:
    a, w1, w2, w3, w4 = (torch.tensor(v, requires_grad=True) for v in (2.0, 0.5, -1.5, 3.0, 0.25))
    d = w3 * (w1 * a) + w4 * (w2 * a)
    d.retain_grad()
    (10 - d).backward()
    out = [
        (f"{n}.grad", t.grad.clone())
        for n, t in zip(["w1", "w2", "w3", "w4", "a"], [w1, w2, w3, w4, a])
    ]
    out.append(("d.grad", d.grad))
    with torch.no_grad():
        for w in (w1, w2, w3, w4):
            w -= 0.1 * w.grad
    out.append(("w1", w1.detach().clone()))
    L = 10 - (w3 * (w1.detach() * a) + w4 * (w2 * a))
    a.grad.zero_()
    L.backward()
    out.append(("a.grad", a.grad))
    return out


def _t05(torch: Any) -> list[tuple[str, Any]]:
    torch.manual_seed(0)
    x = torch.randn(3, requires_grad=True)
    x.sum().backward()
    out = [("x.grad", x.grad)]
    x = torch.randn(3, requires_grad=True)
    y = x * 2
    while y.data.norm() < 1000:
        y = y * 2
    out.append(("n", y.norm().detach()))
    y.backward(torch.tensor([0.1, 1.0, 0.0001]))
    out.append(("x.grad", x.grad))
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    ((x**2) * 3).backward(torch.tensor([0.2, 0.8]))
    out.append(("x.grad", x.grad))
    return out


TORCH_PROGRAMS = {"01": _t01, "02": _t02, "03": _t03, "04": _t04, "05": _t05}


def _value(label: str, body: Any) -> Any:
    """The printed value: a grad answer's values, a tensor's data, or a status code."""
    if isinstance(body, int):
        return body
    if "grad" in body and "name" not in body:
        return None if body["grad"] is None else np.array(body["grad"]["data"], dtype=np.float64)
    return np.array(body["data"]["data"], dtype=np.float64)


@pytest.mark.torch
@pytest.mark.parametrize("script", CURL, ids=lambda p: p.stem)
def test_curl_script_prints_torch_gradients(script: Path, server: str, torch: Any) -> None:
    text = script.read_text()
    assert text.startswith("#!/usr/bin/env bash") and "set -euo pipefail" in text
    assert re.search(r"^B=\$\{B:-http://127\.0\.0\.1:8000\}$", text, re.M)  # $B, else this
    assert "jq" not in text
    # B= at the top points at the test's server; nothing else changes
    output = _run(["bash", "-c", re.sub(r"^B=.*$", f"B={server}", text, count=1, flags=re.M)])
    printed = []
    for line in output.splitlines():
        label, _, rest = line.partition(" ")
        printed.append((label, _value(label, json.loads(rest))))
    expected = TORCH_PROGRAMS[script.name[:2]](torch)
    assert [label for label, _ in printed] == [label for label, _ in expected]
    for (label, got), (_, ref) in zip(printed, expected):
        if ref is None or isinstance(ref, int):
            assert got == ref, label
        else:
            np.testing.assert_allclose(got, ref.detach().double().numpy(), rtol=1e-5, err_msg=label)


def test_without_a_server_the_examples_say_what_to_do() -> None:
    """A newcomer who forgot ``make serve``: a sentence, not a traceback or silence."""
    with socket.socket() as sock:  # a port nothing listens on (bound, never listening)
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        env = {**os.environ, "PYTHONPATH": str(ROOT), "B": url}
        py = subprocess.run(
            [sys.executable, str(TUTORIALS[0]), "--url", url],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
        sh = subprocess.run(
            ["bash", str(CURL[0])], capture_output=True, text=True, timeout=60, env=env
        )
    assert py.returncode == 1 and "make serve" in py.stderr and "Traceback" not in py.stderr
    assert sh.returncode != 0 and "curl: (7)" in sh.stderr, sh.stderr
