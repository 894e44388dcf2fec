"""The ref store: what compression left out, kept at least a while, shared by every agent.

SQLite in WAL mode under the plane's home (`Home.refs_db`). Content-addressed:
a ref is the hash of its content, so the same chunk removed from a thousand
tool outputs by a dozen agents is one row. Each `put` of a ref refreshes its
time, and an entry is only forgotten once it is older than the ttl: a model
can always retrieve what it was shown within the last ttl seconds, across
plane restarts.

Synchronous on purpose: a put or a get is one indexed statement (tens of
microseconds), far below the cost of hopping to a thread; the daemon may
still call it from a worker thread, hence the lock.

Durability: WAL with `synchronous=NORMAL`, so a commit is not synced to disk
(a power cut may lose the last refs, never damage the store; a process that
dies loses nothing committed). `plane compress` from a shell does not open
the store at all: it posts its refs to the store's inbox (see `inbox`), which
the store takes in when it opens and whenever it is asked for a ref it does
not hold.
"""

from __future__ import annotations

import sqlite3
import time
from _thread import allocate_lock  # threading.Lock itself, without importing threading
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from plane.economy.compress import inbox
from plane.errors import ToolError

if TYPE_CHECKING:  # the plane's clock module loads asyncio: too slow for `plane compress`
    from plane.clock import Clock

DEFAULT_TTL_SECONDS = 3600

_SCHEMA = """
CREATE TABLE IF NOT EXISTS refs (
    ref TEXT PRIMARY KEY,
    content BLOB NOT NULL,
    stored_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS refs_stored_at ON refs (stored_at);
CREATE TABLE IF NOT EXISTS kept (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    ttl_seconds INTEGER NOT NULL
);
"""
"""`kept`: the ttl the plane keeps refs for (`compression.ttl_seconds`), so that a
shell command, which reads no agents.yaml, neither refuses nor forgets a ref the
plane still promises."""


class UnknownRef(ToolError, KeyError):
    """A ref that is not in the store: never stored here, or older than the ttl."""

    def __init__(self, ref: str, ttl_seconds: int) -> None:
        minutes = max(1, ttl_seconds // 60)
        super().__init__(
            f"Unknown or expired ref {ref!r}: refs are kept for {minutes} minutes after they "
            "are shown; compress the output again to get a fresh one."
        )
        self.ref = ref

    def __str__(self) -> str:
        return str(self.args[0])


class RefStore:
    """Removed chunks by ref, on disk, expiring no sooner than `ttl_seconds`.

    The plane opens it with its ttl, which the store keeps; a shell command
    (`plane retrieve`, `plane expand`) opens it with none and keeps refs as
    long as the plane last said (`DEFAULT_TTL_SECONDS` before any plane did)."""

    def __init__(
        self, path: Path, ttl_seconds: int | None = None, clock: Clock | None = None
    ) -> None:
        if ttl_seconds is not None and ttl_seconds <= 0:
            raise ValueError("ttl_seconds must be positive")
        self.path = Path(path)
        self._clock = clock
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._lock = allocate_lock()
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA busy_timeout=5000")
            self._db.executescript(_SCHEMA)
            self.ttl_seconds = self._kept(ttl_seconds)
        self.inbox = inbox.of(self.path)
        self.take_in()
        self.expire()

    def _kept(self, ttl_seconds: int | None) -> int:
        """The ttl this store keeps refs for: `ttl_seconds`, written down, or
        the one written down last."""
        if ttl_seconds is not None:
            self._db.execute(
                "INSERT INTO kept (id, ttl_seconds) VALUES (1, ?)"
                " ON CONFLICT (id) DO UPDATE SET ttl_seconds = excluded.ttl_seconds",
                (ttl_seconds,),
            )
            return ttl_seconds
        row = self._db.execute("SELECT ttl_seconds FROM kept WHERE id = 1").fetchone()
        return DEFAULT_TTL_SECONDS if row is None else int(row[0])

    def _now(self) -> float:
        return self._clock.now().timestamp() if self._clock is not None else time.time()

    def put(self, refs: Mapping[str, str]) -> None:
        """Store every chunk (or refresh its time if it is already here), in one transaction."""
        if not refs:
            return
        now = self._now()
        self._insert(
            [(ref, content.encode("utf-8", "surrogatepass"), now) for ref, content in refs.items()]
        )

    def _insert(self, rows: list[tuple[str, bytes, float]]) -> None:
        """Store the rows in one transaction; a ref already here keeps its latest time."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany(
                    "INSERT INTO refs (ref, content, stored_at) VALUES (?, ?, ?) ON CONFLICT (ref) "
                    "DO UPDATE SET stored_at = max(stored_at, excluded.stored_at)",
                    rows,
                )
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def take_in(self) -> bool:
        """Move what shell commands posted to the inbox into the store, then delete those
        files; whether there was anything. Entries already older than the ttl are dropped."""
        oldest = self._now() - self.ttl_seconds
        files = inbox.posted(self.inbox, stale_before=oldest)
        if not files:
            return False
        rows = [row for path in files for row in inbox.entries(path) if row[2] >= oldest]
        if rows:
            self._insert(rows)
        inbox.discard(files)
        return True

    def get(self, ref: str) -> str:
        """The chunk a ref stands for; `UnknownRef` when it is not here or has expired."""
        row = self._row(ref)
        if row is None and self.take_in():  # posted by a shell command since the store opened
            row = self._row(ref)
        if row is None:
            raise UnknownRef(ref, self.ttl_seconds)
        return bytes(row[0]).decode("utf-8", "surrogatepass")

    def _row(self, ref: str) -> tuple[bytes] | None:
        oldest = self._now() - self.ttl_seconds
        with self._lock:
            row: tuple[bytes] | None = self._db.execute(
                "SELECT content FROM refs WHERE ref = ? AND stored_at >= ?", (ref, oldest)
            ).fetchone()
        return row

    def __contains__(self, ref: object) -> bool:
        if not isinstance(ref, str):
            return False
        try:
            self.get(ref)
        except UnknownRef:
            return False
        return True

    def expire(self) -> int:
        """Forget chunks older than the ttl; returns how many went."""
        oldest = self._now() - self.ttl_seconds
        with self._lock:
            cursor = self._db.execute("DELETE FROM refs WHERE stored_at < ?", (oldest,))
        return cursor.rowcount

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> RefStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
