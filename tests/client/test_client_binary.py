"""The client's binary transport against a real server: leaves uploaded and values and
grads downloaded as raw bytes (``application/octet-stream``), for every engine dtype,
0-d and empty tensors, None grads; the same values, warnings and errors as JSON."""

from __future__ import annotations

import asyncio
import math
import uuid
import warnings
from collections.abc import Iterator

import httpx
import numpy as np
import pytest

from client import AsyncSession, Session, errors, wire

DTYPES = list(wire.DTYPES)  # every engine dtype (checked below)
SHAPES = [(), (0,), (2, 0, 3), (5,), (2, 3)]


class Recorder(httpx.HTTPTransport):
    """An HTTP transport that notes each request's method, path, Content-Type and Accept."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, str, str, str]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        h = request.headers
        self.seen.append(
            (request.method, request.url.path, h.get("content-type", ""), h.get("accept", ""))
        )
        return super().handle_request(request)

    def binary(self) -> list[tuple[str, str]]:
        """The requests that sent or asked for raw bytes."""
        return [(m, p) for m, p, ct, acc in self.seen if wire.BINARY in (ct, acc)]


def values_of(dtype: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    n = math.prod(shape)
    if dtype == "bool":
        return rng.random(n).reshape(shape) < 0.5
    dt = np.dtype(dtype)
    if dt.kind == "f":
        vals = rng.standard_normal(n).astype(dt)
        if n > 2:  # the non-finite values too
            vals[:3] = [np.nan, np.inf, -np.inf]
        return vals.reshape(shape)
    info = np.iinfo(dt)
    extremes = np.array([info.min, info.max, 0, 1], dtype=dt)
    return np.resize(extremes, n).reshape(shape)


def same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)


@pytest.fixture
def name(server: str) -> Iterator[str]:
    n = f"bin-{uuid.uuid4().hex[:12]}"
    yield n
    with Session(server, name=n) as s:
        s.delete()


def open_session(server: str, name: str, binary: bool | None) -> tuple[Session, Recorder]:
    rec = Recorder()
    return Session(server, name=name, binary=binary, transport=rec), rec


@pytest.fixture(scope="module")
def sessions(server: str) -> Iterator[dict[bool, tuple[Session, Recorder]]]:
    """A binary and a JSON client of one session."""
    n = f"bin-{uuid.uuid4().hex[:12]}"
    both = {b: open_session(server, n, b) for b in (True, False)}
    yield both
    both[True][0].delete()
    for s, _ in both.values():
        s.close()


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_round_trips_both_ways(
    sessions: dict[bool, tuple[Session, Recorder]],
    dtype: str,
    shape: tuple[int, ...],
    rng: np.random.Generator,
) -> None:
    arr = values_of(dtype, shape, rng)
    for up, down in [(True, True), (True, False), (False, True)]:
        (writer, wrec), (reader, rrec) = sessions[up], sessions[down]
        wrec.seen.clear()
        rrec.seen.clear()
        writer.tensor(arr, name="x")
        reader.invalidate()
        got = reader["x"].numpy()
        assert same(got, arr), (up, down, got, arr)
        assert reader["x"].dtype == np.dtype(dtype) and reader["x"].shape == shape
        path = f"/v1/sessions/{writer.name}/tensors/x"
        assert (("PUT", path) in wrec.binary()) == up
        assert (("GET", path) in rrec.binary()) == down


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("shape", [(), (0,), (2, 3)], ids=str)
def test_grads_as_raw_bytes_match_pytorch(
    server: str, name: str, dtype: str, shape: tuple[int, ...], torch, rng
) -> None:
    arr = rng.standard_normal(shape).astype(dtype)
    t = torch.tensor(arr, requires_grad=True)
    (t * t * 3).sum().backward()
    s, rec = open_session(server, name, True)
    with s:
        x = s.tensor(arr, name="x", requires_grad=True)
        (x * x * 3).sum().backward()
        s.invalidate()
        got = s["x"].grad.numpy()
    assert same(got, t.grad.numpy())
    assert ("GET", f"/v1/sessions/{name}/tensors/x/grad") in rec.binary()


def test_none_grads_and_the_non_leaf_warning_are_as_with_json(server: str, name: str) -> None:
    seen = {}
    for binary in (False, True):
        s, rec = open_session(server, name, binary)
        with s:
            x = s.tensor(np.ones(5, dtype=np.float32), name="x", requires_grad=True)
            y = x * 2
            s.invalidate()
            assert s["x"].grad is None  # a leaf before any backward: 204, no warning
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                assert y.grad is None
            seen[binary] = [str(w.message) for w in caught]
        if binary:
            assert ("GET", f"/v1/sessions/{name}/tensors/x/grad") in rec.binary()
    assert seen[True] == seen[False] and seen[True], seen


def test_errors_are_the_same_as_with_json(server: str, name: str) -> None:
    got = {}
    for binary in (False, True):
        s, _ = open_session(server, name, binary)
        other, _ = open_session(server, name, binary)
        with s, other:
            # an integer leaf cannot require grad
            with pytest.raises(errors.GradserveError) as refused:
                s.tensor(np.arange(4), name="i", requires_grad=True)
            # a tensor unbound by another client since this one learnt of its size
            s.tensor(np.zeros(5, dtype=np.float32), name="x")
            x = other["x"]
            s._t.request("DELETE", f"/v1/sessions/{name}/tensors/x")
            with pytest.raises(errors.GradserveError) as missing:
                x.numpy()
        got[binary] = [(type(e.value), str(e.value)) for e in (refused, missing)]
    assert got[True] == got[False]
    assert got[True][0][0] is errors.DtypeNotDifferentiableError
    assert got[True][1][0] is errors.TensorNotFoundError


def test_by_size_small_tensors_go_as_json_large_as_raw_bytes(server: str, name: str) -> None:
    s, rec = open_session(server, name, None)
    n = wire.BINARY_MIN_ELEMENTS
    with s:
        small = s.tensor(np.arange(n - 1, dtype=np.float32), name="small")
        large = s.tensor(np.arange(n, dtype=np.float32), name="large")
        s.invalidate()
        s["small"].numpy(), s["large"].numpy()
        assert same(s["large"].numpy(), np.arange(n, dtype=np.float32)) and small.shape
        assert large.shape == (n,)
    paths = {p.rsplit("/", 1)[-1] for _, p in rec.binary()}
    assert paths == {"large"}, rec.seen


def test_async_session_binary_round_trip(server: str, name: str, rng) -> None:
    arr = rng.standard_normal((3, 4)).astype(np.float64)
    ints = np.array([[-128, 127]], dtype=np.int8)

    async def run() -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
        async with AsyncSession(server, name=name, binary=True) as s:
            x = s.tensor(arr, name="x", requires_grad=True)
            s.tensor(ints, name="i")
            unused = s.tensor(np.float32(1.0), name="u", requires_grad=True)
            await s.backward((x * x).sum())
            other = AsyncSession(server, name=name, create=False, binary=True)
            async with other:
                xs, i = other["x"], other["i"]
                return (
                    await xs.numpy(),
                    await i.numpy(),
                    await x.grad.numpy(),
                    await unused.grad.numpy(),
                )

    x, i, g, none = asyncio.run(run())
    assert same(x, arr) and same(i, ints) and same(g, 2 * arr) and none is None


def test_a_binary_answer_without_its_headers_is_a_transport_error() -> None:
    with pytest.raises(errors.TransportError, match="Gradserve-Dtype"):
        wire.from_raw(b"\0\0\0\0", None, "1")
    with pytest.raises(errors.TransportError, match="Gradserve-Shape"):
        wire.from_raw(b"\0\0\0\0", "float32", None)
    assert wire.from_raw(b"\0\0\x80\x3f", "float32", "").tolist() == 1.0  # 0-d


def test_the_client_knows_every_wire_dtype() -> None:
    """Every dtype the service sends (the engine's real ones: JSON has no complex)."""
    from service import codec

    assert list(wire.DTYPES) == list(codec.DTYPES)
    for name, dt in wire.DTYPES.items():
        assert wire.dtype_name(dt.newbyteorder("=")) == name
