"""The SQLite backend: one file, stdlib ``sqlite3``, for one process.

WAL with ``synchronous=NORMAL``: a committed transaction is in the WAL file
before ``commit`` returns, so it survives ``kill -9`` of the process (only a
power loss may drop the last transactions; ``GRADSERVE_STORE=sqlite:///p?sync=full``
fsyncs every commit for that). Calls are synchronous: an append is tens of
microseconds, less than a hop to a worker thread.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from .base import Fenced, Full, Meta, Store, StoreError, session_key

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    key TEXT PRIMARY KEY, owner TEXT, name TEXT NOT NULL, created REAL NOT NULL,
    last_used REAL NOT NULL, ttl REAL NOT NULL, seq INTEGER NOT NULL,
    bytes INTEGER NOT NULL, tensor_count INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS sessions_by_owner ON sessions (owner);
-- the sweep's query (``expired``) reads this index, not every session's row
CREATE INDEX IF NOT EXISTS sessions_by_expiry ON sessions (last_used + ttl);
CREATE TABLE IF NOT EXISTS records (
    key TEXT NOT NULL, seq INTEGER NOT NULL, body BLOB NOT NULL,
    PRIMARY KEY (key, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS checkpoints (key TEXT PRIMARY KEY, seq INTEGER NOT NULL, body BLOB);
"""

COLUMNS = "owner, name, created, last_used, ttl, seq, bytes, tensor_count"


def _meta(row: tuple[object, ...]) -> Meta:
    owner, name, created, last_used, ttl, seq, nbytes, count = row
    return Meta(
        owner=owner if isinstance(owner, str) else None,
        name=str(name),
        created=float(created),  # type: ignore[arg-type]
        last_used=float(last_used),  # type: ignore[arg-type]
        ttl=float(ttl),  # type: ignore[arg-type]
        seq=int(seq),  # type: ignore[call-overload]
        bytes=int(nbytes),  # type: ignore[call-overload]
        tensor_count=int(count),  # type: ignore[call-overload]
    )


def _count(db: sqlite3.Connection, owner: str | None, now: float) -> int:
    row = db.execute(
        "SELECT count(*) FROM sessions WHERE owner IS ? AND last_used + ttl > ?", (owner, now)
    ).fetchone()
    return int(row[0])


class SQLiteStore(Store):
    def __init__(self, spec: str) -> None:
        path, _, query = spec.partition("?")
        self.path = path
        self.sync = "FULL" if "sync=full" in query.lower() else "NORMAL"
        self._db: sqlite3.Connection | None = None

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            raise StoreError("the SQLite store is not open")
        return self._db

    async def open(self) -> None:
        try:
            if self.path not in ("", ":memory:"):
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(f"PRAGMA synchronous={self.sync}")
            db.execute("PRAGMA busy_timeout=5000")
            db.executescript(SCHEMA)
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"cannot open the SQLite store {self.path!r}: {exc}") from exc
        self._db = db

    async def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def _write(self, fn: object) -> None:
        """Run ``fn(db)`` in one IMMEDIATE transaction; store errors become ``StoreError``."""
        db = self.db
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                fn(db)  # type: ignore[operator]
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise StoreError(f"SQLite store: {exc}") from exc

    def _read(self, sql: str, args: tuple[object, ...]) -> list[tuple[object, ...]]:
        try:
            return self.db.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"SQLite store: {exc}") from exc

    async def create(self, meta: Meta, limit: int | None = None) -> bool:
        key = session_key(meta.owner, meta.name)
        created = [False]

        def run(db: sqlite3.Connection) -> None:
            # inside BEGIN IMMEDIATE: no other process adds a session between count and insert
            if (
                limit is not None
                and db.execute("SELECT 1 FROM sessions WHERE key = ?", (key,)).fetchone() is None
            ):
                held = _count(db, meta.owner, meta.last_used)
                if held >= limit:
                    raise Full(held)
            cur = db.execute(
                f"INSERT OR IGNORE INTO sessions (key, {COLUMNS}) VALUES (?,?,?,?,?,?,0,?,?)",
                (key, meta.owner, meta.name, meta.created, meta.last_used, meta.ttl,
                 meta.bytes, meta.tensor_count),
            )  # fmt: skip
            created[0] = cur.rowcount == 1

        self._write(run)
        return created[0]

    async def count(self, owner: str | None, now: float) -> int:
        try:
            return _count(self.db, owner, now)
        except sqlite3.Error as exc:
            raise StoreError(f"SQLite store: {exc}") from exc

    async def meta(self, owner: str | None, name: str) -> Meta | None:
        rows = self._read(
            f"SELECT {COLUMNS} FROM sessions WHERE key = ?", (session_key(owner, name),)
        )
        return _meta(rows[0]) if rows else None

    async def listing(self, owner: str | None) -> list[Meta]:
        rows = self._read(
            f"SELECT {COLUMNS} FROM sessions WHERE owner IS ? ORDER BY created, name", (owner,)
        )
        return [_meta(r) for r in rows]

    async def delete(self, owner: str | None, name: str) -> bool:
        key = session_key(owner, name)
        found = [False]

        def run(db: sqlite3.Connection) -> None:
            found[0] = db.execute("DELETE FROM sessions WHERE key = ?", (key,)).rowcount == 1
            db.execute("DELETE FROM records WHERE key = ?", (key,))
            db.execute("DELETE FROM checkpoints WHERE key = ?", (key,))

        self._write(run)
        return found[0]

    async def append(self, meta: Meta, record: bytes) -> None:
        key = session_key(meta.owner, meta.name)

        def run(db: sqlite3.Connection) -> None:
            cur = db.execute(
                "UPDATE sessions SET seq = ?, last_used = ?, bytes = ?, tensor_count = ? "
                "WHERE key = ? AND seq = ?",
                (meta.seq, meta.last_used, meta.bytes, meta.tensor_count, key, meta.seq - 1),
            )
            if cur.rowcount != 1:
                raise Fenced(key)
            db.execute(
                "INSERT INTO records (key, seq, body) VALUES (?, ?, ?)", (key, meta.seq, record)
            )

        self._write(run)

    async def records(self, owner: str | None, name: str, after: int) -> list[tuple[int, bytes]]:
        rows = self._read(
            "SELECT seq, body FROM records WHERE key = ? AND seq > ? ORDER BY seq",
            (session_key(owner, name), after),
        )
        return [(int(s), bytes(b)) for s, b in rows]  # type: ignore[call-overload,arg-type]

    async def put_checkpoint(self, owner: str | None, name: str, seq: int, blob: bytes) -> None:
        key = session_key(owner, name)

        def run(db: sqlite3.Connection) -> None:
            row = db.execute("SELECT seq FROM sessions WHERE key = ?", (key,)).fetchone()
            if row is None or row[0] != seq:
                raise Fenced(key)
            db.execute("INSERT OR REPLACE INTO checkpoints (key, seq, body) VALUES (?, ?, ?)",
                       (key, seq, blob))  # fmt: skip
            db.execute("DELETE FROM records WHERE key = ? AND seq <= ?", (key, seq))

        self._write(run)

    async def checkpoint(self, owner: str | None, name: str) -> tuple[int, bytes] | None:
        rows = self._read(
            "SELECT seq, body FROM checkpoints WHERE key = ?", (session_key(owner, name),)
        )
        return (int(rows[0][0]), bytes(rows[0][1])) if rows else None  # type: ignore[call-overload,arg-type]

    async def touch(self, owner: str | None, name: str, last_used: float) -> None:
        key = session_key(owner, name)
        self._write(
            lambda db: db.execute(
                "UPDATE sessions SET last_used = max(last_used, ?) WHERE key = ?", (last_used, key)
            )
        )

    async def expired(self, now: float) -> list[tuple[str | None, str]]:
        rows = self._read("SELECT owner, name FROM sessions WHERE last_used + ttl <= ?", (now,))
        return [(o if isinstance(o, str) else None, str(n)) for o, n in rows]
