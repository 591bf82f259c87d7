"""Clients generated from openapi/openapi.json run the tutorial end to end.

Nothing generated is committed or edited: each test generates its client into a temporary
directory with the generator's documented options only, then runs the example from
issue 2 against a live server (with an API key): put a leaf, two steps in a batch,
backward with grad_tensors and retain_graph (twice: [6, 192] then [12, 384]), read the
grads, zero them, and read the second backward without retain_graph as a typed
``graph_freed`` problem.

Tools: ``openapi-python-client`` (PyPI, in the venv) and ``openapi-typescript``,
``openapi-fetch`` and ``typescript`` (npm, pinned in tests/generated/ts/package-lock.json,
installed by ``npm ci`` into .cache/generated-ts on first use).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gen_support import API_KEY, ROOT, need
from generated_package import imported

pytestmark = pytest.mark.integration

TS_DIR = Path(__file__).parent / "ts"
NPM_CACHE = ROOT / ".cache" / "generated-ts"
PACKAGE = "gradserve_api"


def _run(cmd: list[str], cwd: Path, timeout: float = 300) -> str:
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
    }
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise AssertionError(
            f"{' '.join(cmd)} exited {done.returncode}\n--- stdout\n{done.stdout[-4000:]}"
            f"\n--- stderr\n{done.stderr[-4000:]}"
        )
    return done.stdout


# --- Python: openapi-python-client ---------------------------------------------------------------


@pytest.fixture(scope="module")
def api(spec: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    tool = need("openapi-python-client", "pip install openapi-python-client (a test extra)")
    out = tmp_path_factory.mktemp("generated-python")
    log = _run(
        [
            tool,
            "generate",
            "--path",
            str(spec),
            "--output-path",
            str(out / PACKAGE),
            "--meta",
            "none",
        ],
        cwd=out,
    )
    assert "Warning" not in log, f"the generator warned about the spec:\n{log}"
    with imported(out, PACKAGE) as package:
        yield package


def test_generated_python_client_runs_the_tutorial(api: Any, server: str) -> None:
    def endpoint(path: str) -> Any:
        return importlib.import_module(f"{PACKAGE}.api.{path}")

    create_session = endpoint("sessions.create_session")
    delete_session = endpoint("sessions.delete_session")
    put_tensor = endpoint("tensors.put_tensor")
    get_tensor = endpoint("tensors.get_tensor")
    get_grad = endpoint("tensors.get_grad")
    zero_grad = endpoint("tensors.zero_grad")
    run_batch = endpoint("steps.run_batch")
    backward = endpoint("autograd.backward")
    m = importlib.import_module(f"{PACKAGE}.models")

    client = api.AuthenticatedClient(
        base_url=server, token=API_KEY, raise_on_unexpected_status=True
    )
    name = f"gen-py-{uuid.uuid4().hex[:8]}"

    created = create_session.sync(client=client, body=m.SessionIn(name=name))
    assert isinstance(created, m.SessionOut) and created.name == name

    x = put_tensor.sync(
        session=name,
        tensor="x",
        client=client,
        body=m.LeafDataIn(data=[1.0, 2.0], requires_grad=True),
    )
    assert isinstance(x, m.TensorOut) and x.requires_grad and x.is_leaf

    batch = run_batch.sync(
        session=name,
        client=client,
        body=m.BatchIn(
            steps=[
                m.OpStepIn(out="y", op="pow", args=["x", 2]),
                m.ExprStepIn(out="z", expr="y ** 3"),
            ]
        ),
    )
    assert isinstance(batch, m.BatchOut)
    assert [(t.name, t.grad_fn) for t in batch.tensors] == [
        ("y", "PowBackward0"),
        ("z", "PowBackward0"),
    ]

    for expected in ([6.0, 192.0], [12.0, 384.0]):
        out = backward.sync(
            session=name,
            client=client,
            body=m.BackwardIn(tensors="z", grad_tensors=[[1.0, 1.0]], retain_graph=True),
        )
        assert isinstance(out, m.BackwardOut)
        assert out.grads["x"].data == expected
        grad = get_grad.sync(session=name, tensor="x", client=client)
        assert isinstance(grad, m.GradOut) and grad.grad.data == expected

    y_grad = get_grad.sync(session=name, tensor="y", client=client)
    assert y_grad.grad is None and "not a leaf Tensor" in y_grad.warning

    zeroed = zero_grad.sync(session=name, client=client, body=m.ZeroGradIn(tensors=["x"]))
    assert isinstance(zeroed, m.ZeroGradOut) and zeroed.tensors == ["x"]
    x = get_tensor.sync(session=name, tensor="x", client=client)
    assert x.grad.data == [0.0, 0.0] and x.data.data == [1.0, 2.0]

    body = m.BackwardIn(tensors=["z"], grad_tensors=[m.TensorDataIn(data=[1.0, 1.0])])
    first = backward.sync_detailed(session=name, client=client, body=body)
    assert first.status_code == 200
    second = backward.sync_detailed(session=name, client=client, body=body)
    assert second.status_code == 409
    assert second.headers["content-type"] == "application/problem+json"
    problem = second.parsed
    assert isinstance(problem, m.ProblemOut)
    assert problem.code == "graph_freed" and problem.status == 409
    assert problem.detail.startswith("Trying to backward through the graph a second time")
    assert "retain_graph" in problem.hint

    missing = get_tensor.sync_detailed(session=name, tensor="nope", client=client)
    assert missing.status_code == 404 and missing.parsed.code == "tensor_not_found"

    assert delete_session.sync_detailed(session=name, client=client).status_code == 204


# --- TypeScript: openapi-typescript + openapi-fetch ----------------------------------------------


def _npm_tools() -> Path:
    """``npm ci`` the pinned tools into .cache/generated-ts, once per lock file."""
    need("node", "apt-get install nodejs (node 20 or later)")
    npm = need("npm", "apt-get install npm")
    lock = (TS_DIR / "package-lock.json").read_bytes()
    stamp = NPM_CACHE / ".lock-sha256"
    digest = hashlib.sha256(lock).hexdigest()
    if not (
        stamp.is_file() and stamp.read_text() == digest and (NPM_CACHE / "node_modules").is_dir()
    ):
        shutil.rmtree(NPM_CACHE, ignore_errors=True)
        NPM_CACHE.mkdir(parents=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copy(TS_DIR / name, NPM_CACHE / name)
        _run([npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"], cwd=NPM_CACHE)
        stamp.write_text(digest)
    return NPM_CACHE / "node_modules"


def test_generated_typescript_client_runs_the_tutorial(
    spec: Path, server: str, tmp_path: Path
) -> None:
    modules = _npm_tools()
    node = need("node", "apt-get install nodejs")
    (tmp_path / "node_modules").symlink_to(modules, target_is_directory=True)
    (tmp_path / "package.json").write_text('{"type": "module"}\n')
    shutil.copy(TS_DIR / "e2e.ts", tmp_path / "e2e.ts")
    _run(
        [
            str(modules / ".bin" / "openapi-typescript"),
            str(spec),
            "--output",
            str(tmp_path / "schema.d.ts"),
            "--default-non-nullable",
            "false",  # defaulted request fields stay optional (see the spec notes)
        ],
        cwd=tmp_path,
    )
    _run(
        [
            str(modules / ".bin" / "tsc"),
            "--strict",
            "--noEmitOnError",
            "--module",
            "nodenext",
            "--moduleResolution",
            "nodenext",
            "--target",
            "es2022",
            "--lib",
            "es2022,dom",
            "e2e.ts",
        ],
        cwd=tmp_path,
    )
    name = f"gen-ts-{uuid.uuid4().hex[:8]}"
    seen = json.loads(_run([node, "e2e.js", server, name, API_KEY], cwd=tmp_path, timeout=60))
    assert seen["session"] == name
    assert seen["x"] == {"requires_grad": True, "is_leaf": True}
    assert seen["grad_fns"] == [["y", "PowBackward0"], ["z", "PowBackward0"]]
    assert seen["backward_1"] == seen["x_grad_1"] == [6, 192]
    assert seen["backward_2"] == seen["x_grad_2"] == [12, 384]
    assert seen["y_grad"] is None and "not a leaf Tensor" in seen["y_warning"]
    assert seen["x_grad_zeroed"] == [0, 0]
    problem = seen["problem"]
    assert problem["status"] == 409 and problem["contentType"] == "application/problem+json"
    assert problem["code"] == "graph_freed"
    assert problem["detail"].startswith("Trying to backward through the graph a second time")
    assert "retain_graph" in problem["hint"]
    assert seen["program"] == {"pure": True, "reads": ["x"], "binds": ["q"]}
    assert seen["jacobian"] == [[2.0, 0.0], [0.0, 4.0]]  # x = [1, 2]
    assert seen["deleted"] == 204
