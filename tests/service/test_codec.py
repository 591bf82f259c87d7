from __future__ import annotations

import base64
import math

import numpy as np
import orjson
import pytest

from service import codec
from service.errors import InvalidTensorError, LimitExceededError

LIMIT = 1000


def decode(value: object) -> np.ndarray:
    return codec.decode(value, max_elements=LIMIT)


def render(value: object) -> object:
    return orjson.loads(orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY))


def test_integer_literals_default_to_float32() -> None:
    arr = decode({"data": [[1, 2], [3, 4]]})
    assert arr.dtype == np.float32 and arr.shape == (2, 2)


ALL_DTYPES = ["float16", "float32", "float64", "uint8", "int8", "int16", "int32", "int64", "bool"]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_explicit_dtypes(dtype: str) -> None:
    assert decode({"data": [1, 0, 1], "dtype": dtype}).dtype == codec.DTYPES[dtype]


def test_the_wire_has_every_engine_dtype() -> None:
    """Every real one: complex tensors stay inside the engine (JSON has no complex)."""
    from engine import dtypes

    real = [name for name, dt in dtypes.DTYPES.items() if dt.kind != "c"]
    assert list(codec.DTYPES) == real and sorted(ALL_DTYPES) == sorted(codec.DTYPES)
    assert "complex64" in dtypes.DTYPES and "complex64" not in codec.DTYPES


def _sample(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    dt = codec.DTYPES[dtype]
    if dt.kind == "b":
        return (np.arange(math.prod(shape)) % 3 == 0).reshape(shape)
    if dt.kind == "f":
        return (np.arange(math.prod(shape)) / 7 - 1).astype(dt).reshape(shape)
    info = np.iinfo(dt)  # the extremes as well as small values
    vals = np.array([info.min, info.max, 0, 1, -1 if info.min < 0 else 2], dtype=dt)
    return np.resize(vals, shape)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (5,), (2, 3), (2, 0, 3)], ids=str)
@pytest.mark.parametrize("encoding", ["json", "base64", "raw"])
def test_every_dtype_round_trips(dtype: str, shape: tuple[int, ...], encoding: str) -> None:
    arr = _sample(dtype, shape)
    if encoding == "raw":
        back = codec.decode_raw(codec.raw_bytes(arr), dtype, shape, max_elements=LIMIT)
    else:
        wire = render(codec.encode(arr, encoding))  # type: ignore[arg-type]
        assert isinstance(wire, dict) and wire["dtype"] == dtype
        back = decode(wire)
    assert back.dtype == arr.dtype and back.shape == arr.shape
    assert np.array_equal(back, arr)


@pytest.mark.parametrize(
    ("data", "dtype"),
    [
        ([256], "uint8"),
        ([-1], "uint8"),
        ([128], "int8"),
        ([-129.0], "int8"),
        ([2**31], "int32"),
        ([40000], "int16"),
        ([1e10], "int32"),
        (["Infinity"], "int8"),
    ],
)
def test_integers_must_fit(data: list, dtype: str) -> None:
    with pytest.raises(InvalidTensorError, match=f"stored as {dtype}|do not fit {dtype}"):
        decode({"data": data, "dtype": dtype})


def test_float16_overflow_is_infinity_as_in_pytorch() -> None:
    assert decode({"data": [70000.0, -1e6], "dtype": "float16"}).tolist() == [np.inf, -np.inf]


def test_scalar_and_empty() -> None:
    assert decode({"data": 3.5}).shape == ()
    assert decode({"data": []}).shape == (0,)
    assert decode({"data": [[], []]}).shape == (2, 0)
    assert decode(2.0).shape == ()  # a bare value is shorthand for {"data": ...}


def test_non_finite_strings_round_trip() -> None:
    arr = decode({"data": [1.0, "NaN", "Infinity", "-Infinity"]})
    assert math.isnan(arr[1]) and arr[2] == np.inf and arr[3] == -np.inf
    assert render(codec.encode(arr)) == {
        "data": [1.0, "NaN", "Infinity", "-Infinity"],
        "dtype": "float32",
    }


def test_float32_written_with_shortest_repr() -> None:
    assert render(codec.encode(np.array([0.1, 1 / 3], dtype=np.float32)))["data"] == [
        0.1,
        0.33333334,
    ]
    assert render(codec.encode(np.array(0.1, dtype=np.float32)))["data"] == 0.1
    inf = np.array([0.1, np.inf], dtype=np.float32)
    assert render(codec.encode(inf))["data"] == [0.1, "Infinity"]


@pytest.mark.parametrize(
    "value",
    [
        {"data": [[1.0], [1.0, 2.0]]},  # ragged
        {"data": [1.0, "nan"]},  # only the three exact spellings
        {"data": [1.0, None]},
        {"data": [{"a": 1}]},
        {"data": "hello"},
        {"data": [1.0], "dtype": "complex64"},
        {"data": [1.0], "dtype": "float"},  # the wire spells dtypes one way
        {"data": ["NaN"], "dtype": "int64"},
        {"data": [1e300], "dtype": "int64"},
        {"data": [2**70], "dtype": "int64"},
        {"data": [1.0, 2.0], "shape": [3]},
        {"b64": "AACAPw==", "dtype": "float32", "shape": [2]},  # 4 bytes for 2 floats
        {"b64": "!!!!", "dtype": "float32", "shape": [1]},
        {"b64": "AACAPw==", "shape": ["NaN"]},
        {"b64": "AACAPw==", "shape": [-1]},
        {"b64": "AACAPw==", "shape": [True]},
        {"b64": "AAA=", "dtype": "float32"},  # 2 bytes: not a whole float
        {},
        {"data": [1.0], "b64": "AACAPw=="},
    ],
)
def test_invalid_values(value: object) -> None:
    with pytest.raises(InvalidTensorError):
        decode(value)


def test_deep_nesting_is_invalid_not_a_crash() -> None:
    data: object = 1.0
    for _ in range(200):
        data = [data]
    with pytest.raises(InvalidTensorError):
        decode({"data": data})


def test_b64_round_trip_little_endian() -> None:
    arr = np.arange(6, dtype=np.float64).reshape(2, 3)
    wire = render(codec.encode(arr, "base64"))
    assert isinstance(wire, dict) and wire["shape"] == [2, 3] and wire["dtype"] == "float64"
    assert base64.b64decode(wire["b64"]) == arr.astype("<f8").tobytes()
    back = decode(wire)
    assert back.dtype == np.float64 and np.array_equal(back, arr)
    assert back.flags.writeable


def test_b64_without_shape_is_a_vector() -> None:
    raw = base64.b64encode(np.array([1, 2, 3], dtype="<i8").tobytes()).decode()
    assert decode({"b64": raw, "dtype": "int64"}).tolist() == [1, 2, 3]


def test_bool_b64() -> None:
    raw = base64.b64encode(bytes([0, 1, 7])).decode()
    assert decode({"b64": raw, "dtype": "bool", "shape": [3]}).tolist() == [False, True, True]


def test_huge_shape_refused_before_allocation() -> None:
    with pytest.raises(LimitExceededError) as info:
        decode({"b64": "AAAA", "shape": [10**6, 10**6]})
    assert info.value.status == 413


def test_data_over_the_element_limit() -> None:
    with pytest.raises(LimitExceededError):
        decode({"data": [0.0] * (LIMIT + 1)})
