"""The Redis backend: sessions shared by replicas (redis-py's asyncio client).

Every write is one Lua script, so it is atomic and fenced on the server: an
append lands only if the journal's last ``seq`` is the one the writer expects.
Keys (``gs:`` prefix): ``m:<key>`` metadata hash (with ``base``, the seq of the
checkpoint the record list starts after), ``r:<key>`` record list, ``c:<key>``
checkpoint hash, ``l:<key>`` lease (holder id, with a TTL), ``o:<owner>`` the
owner's session names, and ``e`` a sorted set of keys by expiry time.
Durability is Redis's: run it with ``appendonly yes`` and ``appendfsync always``.
"""

from __future__ import annotations

from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from .base import Fenced, Full, Meta, Store, StoreError, session_key

P = "gs:"
EXPIRY = P + "e"

COUNT = """
local held = 0
for _, name in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local expires = redis.call('ZSCORE', KEYS[2], ARGV[1] .. name)
  if expires and tonumber(expires) > tonumber(ARGV[2]) then held = held + 1 end
end
return held
"""
# the count and the insert in one script: no other replica adds a session in between
CREATE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return {0, 0} end
if ARGV[9] ~= '' then
  local held = 0
  for _, name in ipairs(redis.call('SMEMBERS', KEYS[2])) do
    local expires = redis.call('ZSCORE', KEYS[3], ARGV[10] .. name)
    if expires and tonumber(expires) > tonumber(ARGV[4]) then held = held + 1 end
  end
  if held >= tonumber(ARGV[9]) then return {-1, held} end
end
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'name', ARGV[2], 'created', ARGV[3],
  'last_used', ARGV[4], 'ttl', ARGV[5], 'seq', 0, 'base', 0, 'bytes', ARGV[6],
  'tensor_count', ARGV[7])
redis.call('SADD', KEYS[2], ARGV[2])
redis.call('ZADD', KEYS[3], tonumber(ARGV[4]) + tonumber(ARGV[5]), ARGV[8])
return {1, 0}
"""
APPEND = """
local seq = redis.call('HGET', KEYS[1], 'seq')
if (not seq) or tonumber(seq) ~= tonumber(ARGV[1]) - 1 then return 0 end
redis.call('RPUSH', KEYS[2], ARGV[2])
redis.call('HSET', KEYS[1], 'seq', ARGV[1], 'last_used', ARGV[3], 'bytes', ARGV[4],
  'tensor_count', ARGV[5])
local ttl = redis.call('HGET', KEYS[1], 'ttl')
redis.call('ZADD', KEYS[3], tonumber(ARGV[3]) + tonumber(ttl), ARGV[6])
return 1
"""
RECORDS = """
local base = tonumber(redis.call('HGET', KEYS[1], 'base') or '0')
local start = tonumber(ARGV[1]) - base
if start < 0 then start = 0 end
return {base, redis.call('LRANGE', KEYS[2], start, -1)}
"""
CHECKPOINT = """
local seq = redis.call('HGET', KEYS[1], 'seq')
if (not seq) or tonumber(seq) ~= tonumber(ARGV[1]) then return 0 end
local base = tonumber(redis.call('HGET', KEYS[1], 'base'))
redis.call('LTRIM', KEYS[2], tonumber(ARGV[1]) - base, -1)
redis.call('HSET', KEYS[1], 'base', ARGV[1])
redis.call('HSET', KEYS[3], 'seq', ARGV[1], 'body', ARGV[2])
return 1
"""
DELETE = """
local n = redis.call('DEL', KEYS[1])
redis.call('DEL', KEYS[2], KEYS[3], KEYS[4])
redis.call('SREM', KEYS[5], ARGV[1])
redis.call('ZREM', KEYS[6], ARGV[2])
return n
"""
TOUCH = """
local lu = redis.call('HGET', KEYS[1], 'last_used')
if not lu then return 0 end
if tonumber(ARGV[1]) > tonumber(lu) then
  redis.call('HSET', KEYS[1], 'last_used', ARGV[1])
  local ttl = redis.call('HGET', KEYS[1], 'ttl')
  redis.call('ZADD', KEYS[2], tonumber(ARGV[1]) + tonumber(ttl), ARGV[2])
end
return 1
"""
LEASE = """
local h = redis.call('GET', KEYS[1])
local seq = redis.call('HGET', KEYS[2], 'seq')
if h == ARGV[1] and ARGV[3] ~= '1' and redis.call('PTTL', KEYS[1]) * 2 > tonumber(ARGV[2]) then
  return {0, seq or -1}  -- held, more than half its time left: no write (no AOF fsync)
end
if ARGV[3] == '1' or (not h) or h == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return {0, seq or -1}
end
local left = redis.call('PTTL', KEYS[1])
if left < 1 then left = 1 end
return {left, seq or -1}
"""


def _keys(owner: str | None, name: str) -> tuple[str, str, str, str, str]:
    key = session_key(owner, name)
    return key, P + "m:" + key, P + "r:" + key, P + "c:" + key, P + "l:" + key


def _owner_set(owner: str | None) -> str:
    return P + "o:" + (owner or "-")


def _meta(h: Any) -> Meta:
    owner = h[b"owner"].decode()
    return Meta(
        owner=owner or None,
        name=h[b"name"].decode(),
        created=float(h[b"created"]),
        last_used=float(h[b"last_used"]),
        ttl=float(h[b"ttl"]),
        seq=int(h[b"seq"]),
        bytes=int(h[b"bytes"]),
        tensor_count=int(h[b"tensor_count"]),
    )


class RedisStore(Store):
    shared = True

    def __init__(self, url: str, timeout: float = 2.0) -> None:
        self.url = url
        self.r = aioredis.Redis.from_url(
            url, socket_timeout=timeout, socket_connect_timeout=timeout
        )
        self._scripts = {
            name: self.r.register_script(src)
            for name, src in (
                ("create", CREATE),
                ("count", COUNT),
                ("append", APPEND),
                ("records", RECORDS),
                ("checkpoint", CHECKPOINT),
                ("delete", DELETE),
                ("touch", TOUCH),
                ("lease", LEASE),
            )
        }

    async def _run(self, script: str, keys: list[str], args: list[Any]) -> Any:
        try:
            return await self._scripts[script](keys=keys, args=args)
        except RedisError as exc:
            raise StoreError(f"Redis store {self.url}: {exc}") from exc

    async def open(self) -> None:
        try:
            await self.r.ping()
        except RedisError as exc:
            raise StoreError(f"cannot reach the Redis store {self.url}: {exc}") from exc

    async def close(self) -> None:
        await self.r.aclose()

    async def create(self, meta: Meta, limit: int | None = None) -> bool:
        key, m, *_ = _keys(meta.owner, meta.name)
        args = [meta.owner or "", meta.name, repr(meta.created), repr(meta.last_used),
                repr(meta.ttl), meta.bytes, meta.tensor_count, key,
                "" if limit is None else limit, session_key(meta.owner, "")]  # fmt: skip
        status, held = await self._run("create", [m, _owner_set(meta.owner), EXPIRY], args)
        if int(status) < 0:
            raise Full(int(held))
        return bool(status)

    async def count(self, owner: str | None, now: float) -> int:
        args = [session_key(owner, ""), repr(now)]
        return int(await self._run("count", [_owner_set(owner), EXPIRY], args))

    async def meta(self, owner: str | None, name: str) -> Meta | None:
        try:
            h: Any = await self.r.hgetall(_keys(owner, name)[1])
        except RedisError as exc:
            raise StoreError(f"Redis store {self.url}: {exc}") from exc
        return _meta(h) if h else None

    async def listing(self, owner: str | None) -> list[Meta]:
        try:
            names: list[Any] = sorted(await self.r.smembers(_owner_set(owner)))
            async with self.r.pipeline(transaction=False) as pipe:
                for n in names:
                    pipe.hgetall(_keys(owner, n.decode())[1])
                rows = await pipe.execute()
        except RedisError as exc:
            raise StoreError(f"Redis store {self.url}: {exc}") from exc
        metas = [_meta(h) for h in rows if h]
        return sorted(metas, key=lambda m: (m.created, m.name))

    async def delete(self, owner: str | None, name: str) -> bool:
        key, m, r, c, lease = _keys(owner, name)
        keys = [m, r, c, lease, _owner_set(owner), EXPIRY]
        return bool(await self._run("delete", keys, [name, key]))

    async def append(self, meta: Meta, record: bytes) -> None:
        key, m, r, *_ = _keys(meta.owner, meta.name)
        args = [meta.seq, record, repr(meta.last_used), meta.bytes, meta.tensor_count, key]
        if not await self._run("append", [m, r, EXPIRY], args):
            raise Fenced(key)

    async def records(self, owner: str | None, name: str, after: int) -> list[tuple[int, bytes]]:
        _, m, r, *_ = _keys(owner, name)
        base, items = await self._run("records", [m, r], [after])
        first = max(int(base), after) + 1
        return [(first + i, bytes(body)) for i, body in enumerate(items)]

    async def put_checkpoint(self, owner: str | None, name: str, seq: int, blob: bytes) -> None:
        key, m, r, c, _ = _keys(owner, name)
        if not await self._run("checkpoint", [m, r, c], [seq, blob]):
            raise Fenced(key)

    async def checkpoint(self, owner: str | None, name: str) -> tuple[int, bytes] | None:
        try:
            h: Any = await self.r.hgetall(_keys(owner, name)[3])
        except RedisError as exc:
            raise StoreError(f"Redis store {self.url}: {exc}") from exc
        return (int(h[b"seq"]), bytes(h[b"body"])) if h else None

    async def touch(self, owner: str | None, name: str, last_used: float) -> None:
        key, m, *_ = _keys(owner, name)
        await self._run("touch", [m, EXPIRY], [repr(last_used), key])

    async def expired(self, now: float) -> list[tuple[str | None, str]]:
        try:
            keys: list[Any] = await self.r.zrangebyscore(EXPIRY, "-inf", repr(now))
        except RedisError as exc:
            raise StoreError(f"Redis store {self.url}: {exc}") from exc
        out: list[tuple[str | None, str]] = []
        for k in keys:
            owner, _, name = k.decode().partition("/")
            out.append((None if owner == "-" else owner, name))
        return out

    async def lease(
        self, owner: str | None, name: str, holder: str, seconds: float, force: bool = False
    ) -> tuple[float, int | None]:
        _, m, _, _, lease = _keys(owner, name)
        args = [holder, max(1, int(seconds * 1000)), "1" if force else "0"]
        left, seq = await self._run("lease", [lease, m], args)
        seq = int(seq)
        return int(left) / 1000.0, None if seq < 0 else seq
