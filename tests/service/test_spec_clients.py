"""A Python client generated from the committed spec needs no hand edits: it generates
without warnings, its types carry the spec's names (``Dtype``, ``OpStepIn``, not
``LeafInDtypeType0``), and a plain ``Client`` without a key runs the tutorial, in-process;
against a server with keys the same calls need an ``AuthenticatedClient``.

The live-server end-to-end runs (Python and TypeScript) are in tests/generated."""

from __future__ import annotations

import asyncio
import importlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from enum import EnumMeta
from pathlib import Path
from typing import Any

import httpx
import pytest
from generated_package import imported
from svc_helpers import make_settings

from service import openapi_dump
from service.app import create_app

PACKAGE = "gradserve_spec_client"
NAMED = [
    "Dtype",
    "Encoding",
    "GraphFormat",
    "NonFinite",
    "TensorDataIn",
    "TensorB64In",
    "LeafDataIn",
    "LeafB64In",
    "OpStepIn",
    "ExprStepIn",
    "BackwardIn",
    "ProblemOut",
]


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    tool = shutil.which(
        "openapi-python-client",
        path=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
    )
    if tool is None:
        pytest.skip("openapi-python-client is not installed (a test extra)")
    out = tmp_path_factory.mktemp("spec-client")
    config = out / "config.yml"
    config.write_text("post_hooks: []\n")  # no formatting pass: the same code, sooner
    done = subprocess.run(
        [tool, "generate", "--path", str(openapi_dump.DEFAULT_PATH), "--meta", "none"]
        + ["--output-path", str(out / PACKAGE), "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0 and "Warning" not in log, log
    with imported(out, PACKAGE) as package:
        yield package


def endpoint(name: str) -> Any:
    return importlib.import_module(f"{PACKAGE}.api.{name}")


def test_types_have_the_spec_names(api: Any) -> None:
    models = importlib.import_module(f"{PACKAGE}.models")
    assert all(hasattr(models, name) for name in NAMED)
    enums = {n for n in models.__all__ if isinstance(getattr(models, n), EnumMeta)}
    # one per enum
    assert enums == {"Dtype", "Encoding", "GraphFormat", "JacobianMode", "NonFinite"}
    assert not [n for n in models.__all__ if re.search(r"Type\d|Item", n)]  # no inline unions
    for source in (Path(api.__file__).parent / "api").rglob("*.py"):
        assert "client: AuthenticatedClient," not in source.read_text(), source


def in_process(app: Any) -> dict[str, Any]:
    """Keyword arguments for a generated client that calls ``app`` in-process (async only)."""
    return {"base_url": "http://test", "httpx_args": {"transport": httpx.ASGITransport(app=app)}}


def test_a_plain_client_runs_the_tutorial(api: Any) -> None:
    m = importlib.import_module(f"{PACKAGE}.models")
    client = api.Client(**in_process(create_app(make_settings())))

    async def tutorial() -> None:
        kw = {"session": "nb", "client": client}
        session = await endpoint("sessions.create_session").asyncio(
            client=client, body=m.SessionIn(name="nb")
        )
        assert isinstance(session, m.SessionOut)
        put = endpoint("tensors.put_tensor")
        x = await put.asyncio(
            tensor="x", body=m.LeafDataIn(data=[1.0, 2.0], requires_grad=True), **kw
        )
        assert isinstance(x, m.TensorOut) and x.dtype == m.Dtype.FLOAT32
        w = await put.asyncio(tensor="w", body=m.LeafB64In(b64="AACAPwAAAEA=", shape=[2]), **kw)
        assert w.shape == [2]
        batch = await endpoint("steps.run_batch").asyncio(
            body=m.BatchIn(
                steps=[
                    m.OpStepIn(out="y", op="pow", args=["x", 2]),
                    m.ExprStepIn(out="z", expr="(y * w).sum()"),
                ]
            ),
            **kw,
        )
        assert [t.grad_fn for t in batch.tensors] == ["PowBackward0", "SumBackward0"]
        svg = await endpoint("autograd.render_graph").asyncio(format_=m.GraphFormat.SVG, **kw)
        assert isinstance(svg, str) and "PowBackward0" in svg
        grads = await endpoint("autograd.backward").asyncio(
            body=m.BackwardIn(tensors="z", grad_tensors=[m.TensorDataIn(data="NaN")]), **kw
        )
        assert grads.grads["x"].data == ["NaN", "NaN"]
        raw = await endpoint("tensors.get_grad").asyncio(
            tensor="x", encoding=m.Encoding.BASE64, **kw
        )
        assert raw.grad.b64 and raw.grad.shape == [2]

    asyncio.run(tutorial())


def test_keys_are_still_needed_where_the_server_sets_them(api: Any) -> None:
    m = importlib.import_module(f"{PACKAGE}.models")
    app = create_app(make_settings(api_keys="k1"))
    create = endpoint("sessions.create_session")

    async def calls() -> None:
        plain = api.Client(**in_process(app))
        refused = await create.asyncio_detailed(client=plain, body=m.SessionIn(name="nb"))
        assert refused.status_code == 401 and refused.parsed.code == "unauthorized"
        keyed = api.AuthenticatedClient(token="k1", **in_process(app))
        created = await create.asyncio_detailed(client=keyed, body=m.SessionIn(name="nb"))
        assert created.status_code == 201 and created.parsed.name == "nb"

    asyncio.run(calls())
