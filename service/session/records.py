"""Journal records and checkpoints on the wire: ``<u32 header length><JSON header><raw
bytes><u32 CRC-32 of all before>``, never a pickle; and the JSON of a validated request,
as replay reads it back. The checksum makes a torn or altered record an error, never a
different change (records written before it, without ``"sum"`` in the header, still read)."""

from __future__ import annotations

import math
import struct
import zlib
from typing import Any

import orjson
from pydantic import BaseModel


class TornRecordError(ValueError):
    """A record or checkpoint whose bytes are not the ones written."""


def pack(header: dict[str, Any], payload: bytes = b"") -> bytes:
    """``<u32 header length><JSON header><raw bytes><u32 CRC-32>``."""
    head = orjson.dumps({**header, "sum": 1})
    body = struct.pack("<I", len(head)) + head + payload
    return body + struct.pack("<I", zlib.crc32(body))


def unpack(blob: bytes) -> tuple[dict[str, Any], memoryview]:
    """The header and the raw bytes (``TornRecordError`` if the checksum disagrees)."""
    (n,) = struct.unpack_from("<I", blob)
    view = memoryview(blob)
    head = orjson.loads(view[4 : 4 + n])
    if not head.get("sum"):  # written before records had a checksum
        return head, view[4 + n :]
    if (
        len(blob) < 8 + n
        or zlib.crc32(view[:-4]) != struct.unpack_from("<I", blob, len(blob) - 4)[0]
    ):
        raise TornRecordError(f"a record of {len(blob)} bytes fails its checksum")
    return head, view[4 + n : -4]


def dump(model: BaseModel) -> Any:
    """A validated model as the JSON it would accept again."""
    return model.model_dump(mode="json", exclude_unset=True, by_alias=True)


def _plain(value: Any) -> bool:
    """JSON-native all the way down (finite floats: orjson writes NaN as null)."""
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return True
    if t is float:
        return math.isfinite(value)
    if t is list or t is tuple:
        return all(_plain(v) for v in value)
    if t is dict:
        return all(type(k) is str and _plain(v) for k, v in value.items())
    return False


def dump_step(step: Any) -> Any:
    """``dump`` of a step; the fields as they are when they hold no model (the common
    case, a fifth of pydantic's serializing cost)."""
    fields = {name: getattr(step, name) for name in step.model_fields_set}
    return fields if _plain(fields) else dump(step)
