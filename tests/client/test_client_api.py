"""The client's own behaviour against a live server: sessions, handles, typed errors,
batching, caches, wire encodings, retries; and a training loop that learns."""

from __future__ import annotations

import os
import uuid
import warnings
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from client import LocalServer, Session, Tensor, errors
from client.transport import Transport

ROOT = Path(__file__).resolve().parents[2]


def _name() -> str:
    return f"c-{uuid.uuid4().hex[:12]}"


# --- sessions ------------------------------------------------------------------------------------


def test_create_then_attach_by_name(server: str) -> None:
    name = _name()
    with Session(server, name=name) as a:
        x = a.tensor([1.0, 2.0], requires_grad=True, name="x")
        (x * 3).sum().backward()
        with Session(server, name=name) as b:  # the name is taken: attach
            assert b.name == name
            np.testing.assert_array_equal(b["x"].numpy(), [1.0, 2.0])
            np.testing.assert_array_equal(b["x"].grad.numpy(), [3.0, 3.0])
        a.delete()


def test_generated_session_name(server: str) -> None:
    with Session(server) as s:
        assert s.name
        assert s.info()["name"] == s.name
        s.delete()


def test_attach_missing_session_raises_typed(server: str) -> None:
    with pytest.raises(errors.SessionNotFoundError) as info:
        Session(server, name=_name(), create=False)
    assert info.value.status == 404
    assert info.value.code == "session_not_found"
    assert isinstance(info.value, LookupError)


# --- typed errors ---------------------------------------------------------------------------------


def test_errors_carry_code_status_detail_hint(session: Session) -> None:
    x = session.tensor([1.0, 2.0], requires_grad=True, name="x")
    y = x**2
    y.backward(np.ones(2))
    with pytest.raises(errors.GraphFreedError) as info:
        y.backward(np.ones(2))
    exc = info.value
    assert isinstance(exc, RuntimeError) and isinstance(exc, errors.GradserveError)
    assert (exc.code, exc.status) == ("graph_freed", 409)
    assert exc.detail.startswith("Trying to backward through the graph a second time")
    assert exc.hint and "retain_graph" in exc.hint
    assert exc.problem["type"] == "urn:gradserve:problem:graph_freed"
    assert "hint:" in str(exc)


@pytest.mark.parametrize(
    ("make", "cls", "code"),
    [
        (lambda s, x: s["nope"], errors.TensorNotFoundError, "tensor_not_found"),
        (lambda s, x: s.tensor([1.0], name="1bad"), errors.InvalidNameError, "invalid_name"),
        (lambda s, x: s.op("no_such_op", x), errors.UnknownOpError, "unknown_op"),
        (lambda s, x: x + s.tensor([1.0, 2.0, 3.0]), errors.ShapeMismatchError, "shape_mismatch"),
        (lambda s, x: x.backward(), errors.NotScalarError, "not_scalar"),
        (lambda s, x: s.tensor([1, 2], requires_grad=True), errors.DtypeNotDifferentiableError,
         "dtype_not_differentiable"),
        (lambda s, x: s.tensor([1.0]).backward(), errors.NoGradFnError, "no_grad_fn"),
    ],
)  # fmt: skip
def test_problem_codes_become_exception_classes(
    session: Session, make: Any, cls: type, code: str
) -> None:
    x = session.tensor([1.0, 2.0], requires_grad=True, name="x")
    with pytest.raises(cls) as info:
        make(session, x)
    assert info.value.code == code
    assert 400 <= info.value.status < 500


def test_unknown_code_falls_back_to_base_class() -> None:
    exc = errors.from_problem(418, {"code": "teapot", "status": 418, "detail": "short and stout"})
    assert type(exc) is errors.GradserveError
    assert (exc.code, exc.status, exc.detail) == ("teapot", 418, "short and stout")
    assert isinstance(errors.from_problem(502, "<html>bad gateway</html>"), errors.ServerError)


def test_leaf_inplace_outside_no_grad_raises_like_torch(session: Session) -> None:
    w = session.tensor([1.0, 2.0], requires_grad=True, name="w")
    with pytest.raises(errors.LeafInplaceError, match="leaf Variable that requires grad"):
        w -= 1.0
    with session.no_grad():
        w -= 1.0
    np.testing.assert_array_equal(w.numpy(), [0.0, 1.0])
    assert w._version == 1


# --- handles --------------------------------------------------------------------------------------


def test_repr_like_torch(session: Session) -> None:
    x = session.tensor([1.0, 2.0], requires_grad=True, name="x")
    assert repr(x) == "tensor([1., 2.], requires_grad=True)"
    assert repr(x**2) == "tensor([1., 4.], grad_fn=<PowBackward0>)"
    assert repr(x.mean()) == "tensor(1.5000, grad_fn=<MeanBackward0>)"
    d = session.tensor(np.array([0.5, 0.25]))  # numpy float64 keeps its dtype
    assert repr(d) == "tensor([0.5000, 0.2500], dtype=torch.float64)"
    assert repr(session.tensor([[1, 2], [3, 4]])) == "tensor([[1, 2],\n        [3, 4]])"


def test_metadata_and_numpy_interop(session: Session) -> None:
    x = session.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), requires_grad=True)
    assert x.shape == (2, 3) and x.ndim == 2 and x.numel() == 6 and len(x) == 2
    assert x.dtype == np.float32 and x.is_leaf and x.requires_grad and x.grad_fn is None
    y = np.ones(3, dtype=np.float32) * x  # numpy defers to the handle
    assert isinstance(y, Tensor) and y.grad_fn == "MulBackward0"
    np.testing.assert_array_equal(np.asarray(y), x.numpy())
    assert float(x.sum()) == 15.0 and x[1, 2].item() == 5.0
    vals, idx = x.max(dim=1)
    np.testing.assert_array_equal(vals.numpy(), [2.0, 5.0])
    assert idx.dtype == np.int64
    assert [t.shape for t in x.split(2, dim=1)] == [(2, 2), (2, 1)]
    assert x.T.shape == (3, 2) and x.reshape(3, 2).shape == (3, 2)
    assert x[:, 1:].shape == (2, 2) and x[..., ::2].shape == (2, 2) and x[None].shape == (1, 2, 3)
    assert x[[1, 0]].shape == (2, 3)
    assert session.cat([x, x], dim=0).shape == (4, 3)


def test_nonleaf_grad_is_none_with_torch_warning(session: Session) -> None:
    x = session.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.sum().backward()
    with pytest.warns(UserWarning, match="is not a leaf Tensor is being accessed"):
        assert y.grad is None
    z = x * 3
    z.retain_grad()
    z.sum().backward()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(z.grad.numpy(), [1.0, 1.0])
        assert session.tensor([1.0], requires_grad=True).grad is None  # unreached: no warning


def test_backward_inputs_and_grad_tensor_forms(session: Session) -> None:
    a = session.tensor([1.0, 2.0], requires_grad=True, name="a")
    b = session.tensor([3.0, 4.0], requires_grad=True, name="b")
    y = a * b
    y.backward([1.0, 1.0], retain_graph=True, inputs=[a])
    np.testing.assert_array_equal(a.grad.numpy(), [3.0, 4.0])
    assert b.grad is None
    y.backward(np.array([2.0, 2.0]), retain_graph=True)  # float64 array: cast to float32
    assert a.grad.dtype == np.float32
    np.testing.assert_array_equal(a.grad.numpy(), [9.0, 12.0])
    y.backward(session.tensor([1.0, 0.0]))  # a handle, sent by name
    np.testing.assert_array_equal(b.grad.numpy(), [2.0 + 1.0, 4.0 + 0.0])


def test_zero_grad_and_grad_none(session: Session) -> None:
    w = session.tensor([1.0, 2.0], requires_grad=True, name="w")
    v = session.tensor([1.0], requires_grad=True, name="v")
    ((w * w).sum() + v.sum()).backward()
    w.grad.zero_()
    np.testing.assert_array_equal(w.grad.numpy(), [0.0, 0.0])
    np.testing.assert_array_equal(v.grad.numpy(), [1.0])
    session.zero_grad()
    np.testing.assert_array_equal(v.grad.numpy(), [0.0])
    session.zero_grad(set_to_none=True)
    assert w.grad is None and v.grad is None


def test_data_reads_numpy_and_writes_back(session: Session) -> None:
    w = session.tensor([1.0, 2.0], requires_grad=True, name="w")
    (w * w).sum().backward()
    assert isinstance(w.data, np.ndarray)
    w.data -= 0.5 * w.grad.data  # torch's pre-0.4 update idiom, no graph recorded
    np.testing.assert_allclose(w.numpy(), [0.0, 0.0])
    assert w.grad_fn is None and w.requires_grad
    w.grad.data.zero_()
    np.testing.assert_array_equal(w.grad.numpy(), [0.0, 0.0])


def test_requires_grad_and_detach(session: Session) -> None:
    x = session.tensor([1.0, 2.0])
    assert x.requires_grad_() is x and x.requires_grad
    d = (x * 2).detach()
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    with session.no_grad():
        assert not (x * 2).requires_grad
        with session.enable_grad():
            assert (x * 2).requires_grad


def test_higher_order_grad_handles(session: Session) -> None:
    x = session.tensor([2.0], requires_grad=True)
    (g,) = session.grad(x**3, [x], create_graph=True)
    np.testing.assert_allclose(g.numpy(), [12.0])
    (h,) = session.grad(g, [x], create_graph=True)
    (k,) = session.grad(h, [x])
    np.testing.assert_allclose([h.item(), k.item()], [12.0, 6.0])
    unused = session.tensor([1.0], requires_grad=True)
    assert session.grad((x * 2).sum(), [x, unused], allow_unused=True)[1] is None


def test_graph_formats(session: Session) -> None:
    x = session.tensor([1.0, 2.0], requires_grad=True, name="x")
    z = (x**2).bind("z")
    g = session.graph([z])
    assert {n["name"] for n in g["nodes"]} == {"PowBackward0", "AccumulateGrad"}
    assert g["leaves"] == ["x"]
    assert session.graph(["z"], format="dot").startswith("digraph")


# --- names, caches, batching ----------------------------------------------------------------------


def test_generated_names_are_recycled(session: Session) -> None:
    x = session.tensor([1.0, 2.0], requires_grad=True, name="x")
    y = x
    for _ in range(60):  # the tutorial's y = y * 2 loop
        y = y * 1.5
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.5**60] * 2, rtol=1e-5)
    assert session.info()["tensor_count"] <= 5  # not 60: names of dropped handles are reused


def test_values_are_cached_until_written(session: Session) -> None:
    x = session.tensor([1.0, 2.0], requires_grad=True, name="x")
    y = x * 2
    before = session.requests
    y.numpy()
    y.numpy()
    repr(y)
    assert session.requests - before == 1
    y.backward(np.ones(2))
    before = session.requests
    x.grad.numpy()  # from the backward's answer
    assert session.requests == before


def test_batch_queues_until_read(server: str) -> None:
    with Session(server, name=_name(), batch=True) as s:
        x = s.tensor([1.0, 2.0], requires_grad=True, name="x")
        before = s.requests
        y = x
        for _ in range(20):
            y = y * 2 + 1
        z = y.sum()
        assert s.requests == before  # nothing sent yet
        assert z.grad_fn == "SumBackward0"  # metadata read: one /batch
        assert s.requests == before + 1
        z.backward()
        assert s.requests == before + 2
        np.testing.assert_array_equal(x.grad.numpy(), [2.0**20] * 2)
        s.delete()


def test_batch_is_all_or_nothing(server: str) -> None:
    with Session(server, name=_name(), batch=True) as s:
        x = s.tensor([1.0, 2.0], requires_grad=True, name="x")
        three = s.tensor([1.0, 2.0, 3.0])
        count = s.info()["tensor_count"]
        ok = x * 2
        bad = ok + three
        bad2 = bad * 3
        with pytest.raises(errors.ShapeMismatchError) as info:
            s.flush()
        assert info.value.problem.get("step") is not None
        assert s.info()["tensor_count"] == count  # no step of the batch was bound
        for handle in (ok, bad, bad2):
            with pytest.raises(errors.ShapeMismatchError):
                handle.numpy()
        np.testing.assert_array_equal((x * 3).numpy(), [3.0, 6.0])  # the session still works
        s.delete()


def test_large_tensors_travel_as_base64_exactly(session: Session) -> None:
    rng = np.random.default_rng(0)
    big = rng.normal(size=(300, 200))  # float64, 60,000 elements
    t = session.tensor(big, requires_grad=True)
    np.testing.assert_array_equal(t.numpy(), big)  # bit for bit
    (t * t).sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), 2 * big)


def test_json_encoding_and_non_finite_values(server: str) -> None:
    with Session(server, name=_name(), encoding="json") as s:
        c = s.tensor([0.0, 1.0, np.inf, -np.inf, np.nan], requires_grad=True, name="c")
        y = s.log(c)
        y.backward(np.ones(5))
        got = c.grad.numpy()
        np.testing.assert_array_equal(got[:2], [np.inf, 1.0])
        assert got[2] == 0.0 and np.isnan(got[4])
        np.testing.assert_array_equal(s.tensor([True, False]).numpy(), [True, False])
        assert s.tensor([[1, 2]], dtype="int64").dtype == np.int64
        s.delete()


# --- transport ------------------------------------------------------------------------------------


def _flaky(fail: int) -> tuple[httpx.MockTransport, list[str]]:
    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.method)
        if len(calls) <= fail:
            raise httpx.ConnectError("connection refused", request=request)
        return httpx.Response(200, json={"ok": True})

    return httpx.MockTransport(handler), calls


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "POST", "PATCH"])
def test_requests_that_never_left_are_retried(method: str) -> None:
    inner, calls = _flaky(fail=2)
    t = Transport("http://127.0.0.1:9", transport=inner, retries=3, backoff=0.0)
    assert t.request(method, "/x", json={} if method in ("POST", "PATCH") else None) == {"ok": True}
    assert calls == [method] * 3
    assert t.requests == 1  # one logical request


@pytest.mark.parametrize("method", ["POST", "PATCH"])
def test_posts_that_may_have_run_are_never_retried(method: str) -> None:
    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.method)
        if len(calls) == 1:
            raise httpx.ReadError("connection reset after the request was sent", request=request)
        return httpx.Response(200, json={"ok": True})

    t = Transport("http://127.0.0.1:9", transport=httpx.MockTransport(handler), backoff=0.0)
    with pytest.raises(errors.TransportError, match="ReadError"):
        t.request(method, "/x", json={})
    assert calls == [method]


def test_retries_give_up() -> None:
    inner, calls = _flaky(fail=10)
    t = Transport("http://127.0.0.1:9", transport=inner, retries=2, backoff=0.0)
    with pytest.raises(errors.TransportError, match="ConnectError"):
        t.request("GET", "/x")
    assert len(calls) == 3


def test_one_connection_is_reused(session: Session) -> None:
    x = session.tensor([1.0], requires_grad=True)
    for _ in range(20):
        (x * 2).numpy()
    pool = session._t.http._transport._sync_transport._pool  # httpcore's pool, behind the retries
    assert len(pool.connections) == 1


def test_api_key_is_sent() -> None:
    env = {
        "PYTHONPATH": str(ROOT),
        "GRADSERVE_API_KEYS": "k-one,k-two",
        "GRADSERVE_LOG_LEVEL": "warning",
    }
    with LocalServer(cwd=ROOT, env={**os.environ, **env}) as url:
        with pytest.raises(errors.UnauthorizedError):
            Session(url, name="locked")
        with Session(url, name="mine", api_key="k-one") as s:
            s.tensor([1.0], name="x")
        with pytest.raises(errors.SessionNotFoundError):  # another key's session is a 404
            Session(url, name="mine", api_key="k-two", create=False)


# --- a training loop -------------------------------------------------------------------------------


def _regression_data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(42)
    X = rng.normal(size=(64, 3)).astype(np.float32)
    y = (X @ np.float32([2.0, -3.0, 0.5]) + 1.0 + 0.01 * rng.normal(size=64)).astype(np.float32)
    return X, y


def _train(T: Any, X: Any, Y: Any, steps: int, lr: float = 0.1) -> tuple[list[float], Any, Any]:
    """The same SGD loop for torch and the client (``T`` is the module or a Session)."""
    w = T.tensor([0.0, 0.0, 0.0], requires_grad=True)
    b = T.tensor(0.0, requires_grad=True)
    losses = []
    for step in range(steps):
        loss = ((X @ w + b - Y) ** 2).mean()
        loss.backward()
        with T.no_grad():
            w -= lr * w.grad
            b -= lr * b.grad
        w.grad.zero_()
        b.grad.zero_()
        if step % 50 == 0 or step == steps - 1:
            losses.append(loss.item())
    return losses, w, b


@pytest.mark.torch
def test_training_loop_in_batch_mode_learns_like_torch(server: str, torch: Any) -> None:
    X, Y = _regression_data()
    ref_losses, ref_w, ref_b = _train(torch, torch.tensor(X), torch.tensor(Y), 200)
    with Session(server, name=_name(), batch=True) as s:
        Xs, Ys = s.tensor(X, name="X"), s.tensor(Y, name="Y")
        before = s.requests
        losses, w, b = _train(s, Xs, Ys, 200)
        per_step = (s.requests - before - len(losses)) / 200  # loss.item() reads aside
        np.testing.assert_allclose(losses, ref_losses, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(w.numpy(), ref_w.detach().numpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(b.item(), ref_b.item(), rtol=1e-4, atol=1e-5)
        assert losses[-1] < 1e-3 * losses[0]
        # forward + update steps in one /batch, the deferred zero_grad, and the backward
        assert per_step <= 3.05, per_step
        assert s.info()["tensor_count"] < 20  # generated names recycled across iterations
        s.delete()


def _const(like: Any, values: list[float]) -> Any:
    """A constant operand: a numpy array for the client, a plain tensor for torch."""
    arr = np.array(values, dtype=np.float32)
    return arr if isinstance(like, Tensor) else type(like)(arr)


@pytest.mark.torch
@pytest.mark.parametrize(
    "fn",
    [
        lambda x: 2 - x,
        lambda x: 2 / x,
        lambda x: 2**x,
        lambda x: 2 * x,
        lambda x: 2 + x,
        lambda x: x - 2,
        lambda x: x / 2,
        lambda x: -x,
        lambda x: np.float32(0.5) * x,
        lambda x: x * _const(x, [1.0, -1.0]),
        lambda x: _const(x, [1.0, -1.0]) - x,
        lambda x: x[1:] * x[:1],
    ],
    ids=[
        "rsub",
        "rdiv",
        "rpow",
        "rmul",
        "radd",
        "sub",
        "div",
        "neg",
        "npscalar",
        "const",
        "rconst",
        "slices",
    ],
)
def test_operators_record_torch_grad_fns(session: Session, torch: Any, fn: Any) -> None:
    x = session.tensor([1.5, 2.5], requires_grad=True)
    t = torch.tensor([1.5, 2.5], requires_grad=True)
    ours, ref = fn(x), fn(t)
    assert ours.grad_fn == type(ref.grad_fn).__name__
    ours.sum().backward()
    ref.sum().backward()
    np.testing.assert_allclose(ours.numpy(), ref.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-6)


def test_repr_of_a_large_tensor_fetches_nothing(session: Session) -> None:
    x = session.tensor(np.zeros((100, 50), dtype=np.float32), requires_grad=True)
    y = x * 2
    before = session.requests
    assert repr(y) == "tensor([...], size=(100, 50), grad_fn=<MulBackward0>)"
    assert session.requests == before


def test_close_unbinds_the_clients_temporaries(server: str) -> None:
    name = _name()
    with Session(server, name=name) as s:
        x = s.tensor([1.0, 2.0], requires_grad=True, name="x")
        y = x * 2
        for _ in range(5):
            y = y + 1
        y.bind("y")
        (g,) = s.grad(y.sum(), [x])
        assert len(s.info()["tensors"]) > 2
    with Session(server, name=name, create=False) as again:
        assert sorted(t["name"] for t in again.info()["tensors"]) == ["x", "y"]
        again.delete()


def test_old_tutorial_data_idioms(session: Session) -> None:
    x = session.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    while y.data.norm() < 1000:  # the doubling tutorial, as written before PyTorch 0.4
        y = y * 2
    y.backward(np.float32([1.0, 1.0]))
    assert float(np.linalg.norm(y.numpy())) >= 1000
    np.testing.assert_array_equal(x.grad.numpy(), [512.0, 512.0])
    x.grad.data.zero_()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])


def test_a_typo_names_the_closest_op_or_attribute(session: Session) -> None:
    x = session.tensor([1.0, 2.0], requires_grad=True, name="x")
    with pytest.raises(AttributeError, match="no method 'sigmoud'; did you mean 'sigmoid'"):
        x.sigmoud()
    with pytest.raises(AttributeError, match="did you mean 'requires_grad'"):
        x.requires_gard  # noqa: B018
    with pytest.raises(AttributeError, match="no in-place method 'expp_'; did you mean 'exp_'"):
        x.expp_()
    with pytest.raises(AttributeError, match="no op 'sigmoud'; did you mean 'sigmoid'"):
        session.sigmoud(x)
