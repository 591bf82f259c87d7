"""Every op that calls LAPACK registers its ``work`` (multiply-adds, ``engine.estimates``):
one LAPACK call cannot be interrupted by a deadline (an SVD of a 4000 x 4000 matrix runs
for half an hour), so the service refuses one past the deadline's budget before it runs,
and only an op with a ``work`` fact can be refused. Found by running every op's samples
with numpy's and SciPy's LAPACK entry points recording their calls, so a new op (or a new
LAPACK call in an old one) that skips the fact fails here, whichever branch added it."""

from __future__ import annotations

import contextlib
import sys
import types
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import numpy.linalg._linalg as np_linalg
import pytest

import engine  # noqa: F401  (registers every op)
from engine import OPS
from engine.registry import OpSpec
from tests.engine.torch_oracle import engine_inputs

CALLED: list[str] = []


def _recording(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        CALLED.append(name)
        return fn(*args, **kwargs)

    return call


class _Recorder(types.ModuleType):
    """A module whose callables record each call (``_umath_linalg``, ``scipy.linalg``)."""

    def __init__(self, inner: types.ModuleType) -> None:
        super().__init__(inner.__name__)
        self._inner = inner

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self._inner, attr)
        if isinstance(value, types.ModuleType) and value.__name__.startswith("scipy"):
            return _Recorder(value)
        if callable(value) and not isinstance(value, type):
            return _recording(value, f"{self._inner.__name__}.{attr}")
        return value


def _lapack_module(v: Any) -> bool:
    return (
        isinstance(v, types.ModuleType)
        and v.__name__ in ("scipy", "scipy.linalg")
        or (isinstance(v, types.ModuleType) and v.__name__.startswith("scipy.linalg"))
    )


def _lapack_function(v: Any) -> bool:
    return callable(v) and str(getattr(v, "__module__", "")).startswith("scipy.linalg")


@pytest.fixture(scope="module")
def recorded() -> Iterator[None]:
    """numpy's LAPACK gufuncs and every SciPy linalg name an engine module holds, recording."""
    patched: list[tuple[Any, str, Any]] = [(np_linalg, "_umath_linalg", np_linalg._umath_linalg)]
    for name, module in list(sys.modules.items()):
        if not name.startswith("engine") or module is None:
            continue
        for attr, v in list(vars(module).items()):
            if _lapack_module(v) or _lapack_function(v):
                patched.append((module, attr, v))
    for owner, attr, v in patched:
        if isinstance(v, types.ModuleType):
            setattr(owner, attr, _Recorder(v))
        else:
            setattr(owner, attr, _recording(v, f"{owner.__name__}.{attr}"))
    try:
        yield
    finally:
        for owner, attr, v in patched:
            setattr(owner, attr, v)


def _calls_lapack(spec: OpSpec) -> list[str]:
    """The LAPACK entry points the op's samples reach (any depth), in float64."""
    assert spec.samples is not None
    calls = [engine_inputs(s, np.float64)[:2] for s in spec.samples(np.random.default_rng(0))]
    CALLED.clear()  # (building a sample may factor a matrix: lu_unpack's takes lu_factor's)
    for args, kwargs in calls:
        # (a sample of an error: what it reached before raising counts)
        with warnings.catch_warnings(), contextlib.suppress(Exception):
            warnings.simplefilter("ignore")
            spec.fn(*args, **kwargs)
    return sorted(set(CALLED))


def test_the_recorder_sees_numpy_and_scipy_lapack(recorded: None) -> None:
    for op in ("linalg_svd", "svd", "linalg_ldl_factor", "linalg_lu_factor", "matrix_exp"):
        if op in OPS:
            assert _calls_lapack(OPS[op]), op


def test_every_op_that_calls_lapack_registers_its_work(recorded: None) -> None:
    missing = {}
    for name, spec in sorted(OPS.items()):
        if spec.samples is None or spec.work is not None:
            continue
        reached = _calls_lapack(spec)
        if reached:
            missing[name] = reached
    assert not missing, f"ops calling LAPACK without a registered work=: {missing}"
