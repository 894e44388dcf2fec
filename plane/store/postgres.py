"""The store on PostgreSQL: the same `Database` (plane/store/engine.py), another engine.

**Why psycopg 3, not asyncpg.** The store's design is a writer thread that
owns its connection and runs synchronous write functions (`fn(conn)`, SQL
only, may run twice) with group commit. psycopg 3 has a synchronous
connection as well as an asynchronous one, so the writer thread, its
batches and every write function of the plane run unchanged on PostgreSQL;
asyncpg is asynchronous only, and would have made every write function a
coroutine (one transaction no longer one function in one hop) and the two
engines two designs. psycopg also gives LISTEN/NOTIFY and client-side
binding (below) on the same connection type.

**Dialect, in one place (this module).** The write functions are written for
SQLite; what they send is translated here, once per statement text:

- `?` and `?N` parameters become psycopg's `%s` (a literal `%` is doubled);
  numbered ones are re-expanded in order, so `?1 … ?1` sends the value twice;
- parameters are bound on the client (psycopg's `ClientCursor`): values
  reach the server as literals, as dynamically typed as SQLite's, so
  `? IS NULL` or an untyped `NULL` need no casts; a bool is sent as 0/1, as
  SQLite stores it;
- `cursor.lastrowid` is `lastval()`, read only when asked for;
- the migrations' DDL: `INTEGER` is `BIGINT`, `INTEGER PRIMARY KEY` an
  identity column, `WITHOUT ROWID` dropped; the schema version lives in
  `plane_schema`, not `PRAGMA user_version`; `decimal_add`/`decimal_sum`
  (exact sums of decimal strings, the SQLite writer's own functions) are SQL
  functions on `numeric`.

A failure of the server is raised as `StoreFault`, a `sqlite3.DatabaseError`,
so what catches a store's failure (the ledger's `LedgerError`) catches either
engine's. A transaction the server aborts for a deadlock or a serialisation
failure (two planes' transactions crossing) is run again, up to `RETRIES`
times: a write function may run twice by contract.

**The server goes away and comes back** (a restart, a crash, a partition).
Every connection (the writer's, the reader's, and the fleet's own) is opened
again when it is found broken, at once the first time and then with backoff
(`Link`); while none can be had the store is *unreachable since* a moment
the plane says (`plane status`, the TUI), and writes fail at once with that
sentence instead of queueing behind a dead link. A transaction whose
connection broke before its COMMIT was sent is run again on a new one (the
server rolled it back); one that broke during its COMMIT is a failure, never
run twice.

**Nothing is held for long** (`SESSION`): each session has a lock, a
statement and an idle-in-transaction timeout, and TCP keepalives and a user
timeout on both ends, so a plane paused or cut off mid-transaction loses
its locks (the fleet's row) within `BOUND_S`, not PostgreSQL's two hours of
default keepalive. A link that stops forwarding without closing (a stalled
proxy, a half-open partition) answers keepalives but never the query: the
`Watchdog` cuts the socket of an operation that has run past `WATCH_S`, so
the plane sees the store as unreachable instead of waiting for ever.

**Fences** (`_guard`): a write made for an agent under a lease carries the
lease's epoch, and its transaction first takes a share lock on that lease
row at that epoch, held to its COMMIT: if another plane has taken the lease
the write is refused (`LeaseLost`), and a takeover waits for the write's
commit, then sweeps what it wrote. The check and the write cannot be split
by a takeover.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import re
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, cast

import psycopg
from psycopg import errors as pg_errors
from psycopg.pq import TransactionStatus

from plane.errors import LeaseLost, StoreError, StoreFault
from plane.store.engine import Database
from plane.store.fence import Fence
from plane.store.migrations import MIGRATIONS, statements

log = logging.getLogger(__name__)

RETRIES = 20
"""A transaction aborted by a deadlock or serialisation failure is run again
this many times before its failure is its caller's."""

LOCK_RETRIES = 3
"""A transaction that waited `BOUND_S` for a lock is run again this many
times: the holder, if it was cut off, has lost its session by then."""

BOUND_S = max(2.0, float(os.environ.get("PLANE_LEASE_S", "15")) / 5)
"""How long a lock may be waited for, or a transaction left idle, on a
plane's session: well under a lease (a fifth of it, 3 s by default), so a
plane that stalls holding a lock stalls the others for less than that."""

WATCH_S = max(8.0, 4 * BOUND_S)
"""An operation with no answer for this long is given up (its socket cut):
past every bound the server itself enforces, so only a dead link reaches it."""

SESSION: dict[str, Any] = {
    "connect_timeout": max(2, round(2 * BOUND_S)),
    "keepalives": 1,
    "keepalives_idle": max(1, round(BOUND_S)),
    "keepalives_interval": 1,
    "keepalives_count": 3,
    "tcp_user_timeout": int(2 * BOUND_S * 1000),
    "options": " ".join(
        f"-c {name}={value}"
        for name, value in (
            ("lock_timeout", int(BOUND_S * 1000)),
            ("statement_timeout", int(2 * BOUND_S * 1000)),
            ("idle_in_transaction_session_timeout", int(BOUND_S * 1000)),
            ("tcp_keepalives_idle", max(1, round(BOUND_S))),
            ("tcp_keepalives_interval", 1),
            ("tcp_keepalives_count", 3),
            ("tcp_user_timeout", int(2 * BOUND_S * 1000)),
        )
    ),
}
"""Every connection's bounds, on the client (libpq) and on the server (its
settings for this session)."""

FIRST_RETRY_S = 0.2
MOST_RETRY_S = 2.0
"""Backoff between attempts to reach a store that is away: from the first
to the most, doubling. The plane is back within the most of its return."""

NOW_MS = "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)"
"""The database's clock, in ms since the epoch (leases are in it)."""

MIGRATION_LOCK = 0x706C616E65
"""The advisory lock planes starting at once take to migrate one at a time."""

PRELUDE: tuple[str, ...] = (
    "CREATE TABLE IF NOT EXISTS plane_schema (version BIGINT NOT NULL)",
    "CREATE OR REPLACE FUNCTION decimal_add(a text, b text) RETURNS text"
    " LANGUAGE sql IMMUTABLE AS $$ SELECT (a::numeric + b::numeric)::text $$",
    "CREATE OR REPLACE FUNCTION decimal_sum_step(total numeric, v text) RETURNS numeric"
    " LANGUAGE sql IMMUTABLE AS $$ SELECT total + COALESCE(v::numeric, 0) $$",
    "CREATE OR REPLACE FUNCTION decimal_sum_end(total numeric) RETURNS text"
    " LANGUAGE sql IMMUTABLE AS $$ SELECT total::text $$",
    "CREATE OR REPLACE AGGREGATE decimal_sum(text) (SFUNC = decimal_sum_step,"
    " STYPE = numeric, FINALFUNC = decimal_sum_end, INITCOND = '0')",
)


def _fault(exc: psycopg.Error, gone: bool = False) -> StoreFault:
    """The server's message (its first line: the rest is context and a caret);
    `gone`: the connection is lost (the store is unreachable)."""
    return StoreFault(_first_line(exc), exc.sqlstate, unreachable=gone)


# ── dialect ────────────────────────────────────────────────────────────────

_TOKEN = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|\?(\d*)|%|[^'\"?%]+", re.S)


@functools.lru_cache(maxsize=512)
def translate(sql: str) -> tuple[str, tuple[int, ...] | None]:
    """SQLite's statement as psycopg's, and for `?N` parameters the order in
    which to send the given values (None: as given)."""
    out: list[str] = []
    order: list[int] = []
    numbered = False
    position = 0
    for match in _TOKEN.finditer(sql):
        token = match.group(0)
        if token.startswith("?"):
            if match.group(1):
                numbered = True
                order.append(int(match.group(1)) - 1)
            else:
                order.append(position)
            position += 1
            out.append("%s")
        elif token == "%" or token.startswith(("'", '"')):
            out.append(token.replace("%", "%%"))  # psycopg reads % even inside quotes
        else:
            out.append(token)
    return "".join(out), (tuple(order) if numbered else None)


def _params(order: tuple[int, ...] | None, params: Sequence[Any]) -> list[Any]:
    values = [int(v) if isinstance(v, bool) else v for v in params]
    return values if order is None else [values[i] for i in order]


def ddl(script: str) -> list[str]:
    """A migration written for SQLite, as PostgreSQL statements."""
    translated = []
    for statement in statements(script):
        statement = re.sub(r"\bWITHOUT ROWID\b", "", statement)
        statement = re.sub(
            r"\bINTEGER PRIMARY KEY\b", "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
            statement,
        )  # fmt: skip
        statement = re.sub(r"\bINTEGER\b", "BIGINT", statement)
        translated.append(statement)
    return translated


class Row:
    """A result row as sqlite3.Row reads: by index, by column name, unpacked."""

    __slots__ = ("_names", "_values")

    def __init__(self, names: dict[str, int], values: Sequence[Any]) -> None:
        self._names = names
        self._values = tuple(values)

    def __getitem__(self, key: int | str) -> Any:
        if isinstance(key, str):
            return self._values[self._names[key]]
        return self._values[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __eq__(self, other: object) -> bool:
        return tuple(self) == (tuple(other) if isinstance(other, Row | tuple) else other)

    def __hash__(self) -> int:
        return hash(self._values)

    def keys(self) -> list[str]:
        return list(self._names)

    def __repr__(self) -> str:
        return f"Row{self._values!r}"


def _rows(cursor: Any) -> list[Row]:
    if cursor.description is None:
        return []
    names = {column.name: i for i, column in enumerate(cursor.description)}
    return [Row(names, values) for values in cursor.fetchall()]


class Cursor:
    """What `Connection.execute` returns: the rows already fetched."""

    def __init__(self, conn: Connection, rows: list[Row], rowcount: int) -> None:
        self._conn = conn
        self._rows = rows
        self.rowcount = rowcount

    @functools.cached_property
    def lastrowid(self) -> int | None:
        """Read when first asked for (a round trip), then kept."""
        row = self._conn.execute("SELECT lastval()").fetchone()
        return None if row is None else int(row[0])

    def fetchone(self) -> Row | None:
        return self._rows.pop(0) if self._rows else None

    def fetchall(self) -> list[Row]:
        rows, self._rows = self._rows, []
        return rows

    def __iter__(self) -> Iterator[Row]:
        return iter(self.fetchall())


class Connection:
    """The writer's connection as a write function sees it: the part of
    sqlite3.Connection the plane uses (`execute`, `executemany`,
    `in_transaction`), on a psycopg connection (replaced when it breaks)."""

    def __init__(self, pg: psycopg.Connection[Any]) -> None:
        self.pg = pg
        self.committing = False
        """A COMMIT was sent in this transaction: if the link breaks now,
        whether it committed is not known."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        text, order = translate(sql)
        if sql == "COMMIT":
            self.committing = True
        try:
            cursor = self.pg.execute(text, _params(order, params) if params else None)
            return Cursor(self, _rows(cursor), cursor.rowcount)
        except psycopg.Error as exc:
            raise _fault(exc, self.broken) from exc

    def executemany(self, sql: str, seq: Sequence[Sequence[Any]]) -> Cursor:
        text, order = translate(sql)
        try:
            with self.pg.cursor() as cursor:
                cursor.executemany(text, [_params(order, p) for p in seq])
                return Cursor(self, [], cursor.rowcount)
        except psycopg.Error as exc:
            raise _fault(exc, self.broken) from exc

    @property
    def broken(self) -> bool:
        return self.pg.closed

    @property
    def in_transaction(self) -> bool:
        # A broken link has no transaction left to roll back (the server
        # ended it); asking would only fail again.
        return not self.broken and self.pg.info.transaction_status != TransactionStatus.IDLE

    def close(self) -> None:
        self.pg.close()


class Link:
    """Whether the store can be reached, since when not, and when to try
    again (backoff); `changed` is told each time that flips. Shared by the
    writer's thread and the event loop: plain attributes, each set whole."""

    def __init__(self) -> None:
        self.since: datetime | None = None
        self.why = ""
        self._retry_at = 0.0
        self._delay = FIRST_RETRY_S
        self.changed: Callable[[datetime | None], None] = lambda since: None

    def may_try(self) -> bool:
        return time.monotonic() >= self._retry_at

    def failed(self, exc: BaseException) -> None:
        self._retry_at = time.monotonic() + self._delay
        self._delay = min(self._delay * 2, MOST_RETRY_S)
        self.why = _first_line(exc)
        if self.since is None:
            self.since = datetime.now(UTC)
            log.warning("the store is unreachable: %s", self.why)
            self.changed(self.since)

    def ok(self) -> None:
        self._retry_at, self._delay = 0.0, FIRST_RETRY_S
        if self.since is not None:
            log.warning("the store is back (unreachable since %s)", f"{self.since:%H:%M:%S}")
            self.since = None
            self.changed(None)

    def fault(self) -> StoreFault:
        """What a write or read fails with while the store is away."""
        since = self.since or datetime.now(UTC)
        return StoreFault(
            f"the store is unreachable since {since:%H:%M:%S} UTC: {self.why or 'no connection'}",
            unreachable=True,
        )


class Watchdog:
    """Cuts the socket of an operation that has had no answer for `WATCH_S`:
    the waiting call then fails at once with the connection lost, as it
    would if the link had closed. One thread, looking five times a second;
    cutting under the same lock as `disarm`, so a socket closed meanwhile
    (and its number reused) is never touched."""

    def __init__(self, bound_s: float) -> None:
        self._bound_s = bound_s
        self._armed: dict[object, tuple[float, int]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="plane-db-watchdog", daemon=True)
        self._thread.start()

    def arm(self, key: object, fileno: int) -> None:
        with self._lock:
            self._armed[key] = (time.monotonic() + self._bound_s, fileno)

    def disarm(self, key: object) -> None:
        with self._lock:
            self._armed.pop(key, None)

    def close(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            now = time.monotonic()
            with self._lock:
                for key, (deadline, fileno) in list(self._armed.items()):
                    if now > deadline:
                        del self._armed[key]
                        _cut(fileno)


def _cut(fileno: int) -> None:
    """Shut the socket down (not close it: its owner does), so whoever
    waits on it is woken with the connection lost."""
    try:
        with socket.socket(fileno=os.dup(fileno)) as sock:
            sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    log.warning("the store did not answer within %.0f s: its connection is cut", WATCH_S)


class Reader:
    """The reader: its own connection, each statement its own snapshot
    (autocommit), one at a time; opened again when found broken."""

    def __init__(
        self, pg: psycopg.AsyncConnection[Any], url: str, link: Link, watchdog: Watchdog
    ) -> None:
        self.pg = pg
        self._url = url
        self._link = link
        self._watchdog = watchdog
        self._lock = asyncio.Lock()

    async def fetchall(self, sql: str, params: Sequence[Any]) -> list[Row]:
        text, order = translate(sql)
        values = _params(order, params) if params else None
        async with self._lock:
            for attempt in range(2):  # a link found broken: once more, on a new one
                if self.pg.closed:
                    await self._reopen(first=attempt == 1)
                try:
                    return await self._fetch(text, values)
                except psycopg.Error as exc:
                    if not self.pg.closed:
                        raise _fault(exc) from exc
                    if attempt == 1:
                        self._link.failed(exc)
                        raise self._link.fault() from exc
            raise AssertionError("unreachable")

    async def _fetch(self, text: str, values: list[Any] | None) -> list[Row]:
        self._watchdog.arm(self, self.pg.fileno())
        try:
            cursor = await self.pg.execute(text, values)
            if cursor.description is None:
                return []
            names = {column.name: i for i, column in enumerate(cursor.description)}
            return [Row(names, values) for values in await cursor.fetchall()]
        finally:
            self._watchdog.disarm(self)

    async def _reopen(self, *, first: bool) -> None:
        """A new connection (at once the first time a link is found broken,
        else when the backoff allows); the store's fault if none."""
        if not first and not self._link.may_try():
            raise self._link.fault()
        try:
            self.pg = await _connect_async(self._url)
        except psycopg.Error as exc:
            self._link.failed(exc)
            raise self._link.fault() from exc
        self._link.ok()

    async def close(self) -> None:
        await self.pg.close()


def _connect(url: str) -> psycopg.Connection[Any]:
    return psycopg.Connection.connect(
        url, autocommit=True, cursor_factory=psycopg.ClientCursor, **SESSION
    )


async def _connect_async(url: str) -> psycopg.AsyncConnection[Any]:
    return await psycopg.AsyncConnection.connect(
        url, autocommit=True, cursor_factory=psycopg.AsyncClientCursor, **SESSION
    )


async def listener(url: str) -> psycopg.AsyncConnection[Any]:
    """A connection for LISTEN, with the plane's bounds (the fleet's wake)."""
    return await psycopg.AsyncConnection.connect(url, autocommit=True, **SESSION)


class PostgresDatabase(Database):
    """`Database` on PostgreSQL: the same writer thread and group commit,
    a psycopg connection under it."""

    url: str
    link: Link
    _watchdog: Watchdog

    @classmethod
    async def connect(cls, url: str, *, migrate: bool = True) -> PostgresDatabase:
        """The database at `url`, migrated; `StoreError` saying what is wrong
        (and nothing left open) when it cannot be used. `migrate` False: a
        second store of the same plane's (the fleet's own), already migrated."""
        shown = _shown(url)
        try:
            writer = await asyncio.to_thread(_connect, url)
        except psycopg.Error as exc:
            raise StoreError(f"Cannot use the store at {shown}: {_first_line(exc)}.") from None
        try:
            reader = await _connect_async(url)
        except psycopg.Error as exc:
            writer.close()
            raise StoreError(f"Cannot use the store at {shown}: {_first_line(exc)}.") from None
        link, watchdog = Link(), Watchdog(WATCH_S)
        db = cls(Connection(writer), Reader(reader, url, link, watchdog))
        db.url, db.link, db._watchdog = url, link, watchdog
        try:
            if migrate:
                await db._migrate_pg(shown)
        except BaseException as exc:
            await db.close()
            if isinstance(exc, sqlite3.Error):
                raise StoreError(f"Cannot use the store at {shown}: {exc}.") from None
            raise
        return db

    @property
    def unreachable_since(self) -> datetime | None:
        return self.link.since

    async def ping(self) -> None:
        """An empty transaction: reconnects the writer if the store is back."""
        await self.write(_nothing)

    async def close(self) -> None:
        await super().close()
        self._watchdog.close()

    async def fetchall(self, sql: str, *params: object) -> list[Any]:
        self.counts.reads += 1
        reader: Reader = self._reader
        return await reader.fetchall(sql, params)

    def _open_aside(self) -> sqlite3.Connection:
        # Typed as sqlite3's, as write functions are: the same few methods.
        conn = Connection(_connect(self.url))
        # A long read (a scrape summing the whole ledger) holds no lock
        # anyone waits on: it is not cut at the plane's statement bound.
        conn.execute("SET statement_timeout = 0")
        return cast(sqlite3.Connection, conn)

    async def _migrate_pg(self, shown: str) -> None:
        # Write functions are typed for sqlite3's connection; this one is
        # PostgreSQL's own, and gets the writer's Connection above.
        newer = await self.write(cast(Callable[[sqlite3.Connection], int | None], _migrate))
        if newer is not None:
            raise StoreError(
                f"The store at {shown} is from a newer plane (schema {newer}, this one knows "
                f"{len(MIGRATIONS)}); upgrade plane."
            )

    def _transaction(self, batch: list[Any]) -> bool:
        done, crossed, waited, reopened = False, 0, 0, False
        while True:
            if not self._writer_ready(first=not reopened):
                fault = self.link.fault()
                for item in batch:
                    item.outcome = (False, fault)
                return True
            conn: Connection = self._writer
            conn.committing = False
            self._watchdog.arm(self, conn.pg.fileno())
            try:
                done = super()._transaction(batch)
            finally:
                self._watchdog.disarm(self)
            if conn.broken:
                if not conn.committing and not reopened:
                    reopened = True  # the server rolled it back: once more, on a new link
                    continue
                return self._lost(batch, conn.committing)
            self.link.ok()
            failures = [item.outcome[1] for item in batch if not item.outcome[0]]
            if any(_crossed(exc) for exc in failures) and crossed < RETRIES:
                crossed += 1
            elif any(_waited(exc) for exc in failures) and waited < LOCK_RETRIES:
                waited += 1
            else:
                return done
            if len(batch) > 1 and not done:
                return False  # each alone, by the caller (each alone retries)

    def _writer_ready(self, *, first: bool) -> bool:
        """The writer's link, opened again if it broke (at once the first
        time, else when the backoff allows). False: the store is away."""
        conn: Connection = self._writer
        if not conn.broken:
            return True
        if not first and not self.link.may_try():
            return False
        try:
            conn.pg = _connect(self.url)
        except psycopg.Error as exc:
            self.link.failed(exc)
            return False
        return True

    def _lost(self, batch: list[Any], committing: bool) -> bool:
        """The link broke and the batch cannot simply run again: each write
        fails as the store being away (a COMMIT sent and not answered may
        have committed: never run twice)."""
        broken = next((item.outcome[1] for item in batch if not item.outcome[0]), None)
        self.link.failed(broken or StoreFault("connection lost"))
        fault = self.link.fault()
        if committing:
            fault = StoreFault(
                f"{fault} (the link broke during COMMIT: whether it was kept is not known)",
                unreachable=True,
            )
        for item in batch:
            item.outcome = (False, fault)
        return True

    def _begin(self, conn: Any) -> None:
        conn.execute("BEGIN")

    def _guard(self, conn: Any, fence: Fence) -> None:
        row = conn.execute(
            "SELECT plane FROM leases WHERE agent = ? AND plane = ? AND epoch = ? FOR SHARE",
            (fence.agent, fence.plane, fence.epoch),
        ).fetchone()
        if row is None:
            raise LeaseLost(f"{fence.plane} no longer holds {fence.agent}'s lease")


def _crossed(exc: BaseException | None) -> bool:
    """A deadlock or serialisation failure: the transaction may simply run again."""
    if exc is None:  # not run: its batch failed before it
        return False
    cause = exc.__cause__
    return isinstance(cause, pg_errors.SerializationFailure | pg_errors.DeadlockDetected)


def _waited(exc: BaseException | None) -> bool:
    """A lock waited for past `lock_timeout`: its holder was paused or cut
    off, and loses its session within `BOUND_S`; worth one more try."""
    return exc is not None and isinstance(exc.__cause__, pg_errors.LockNotAvailable)


def _nothing(conn: Any) -> None:
    """A write that writes nothing (`ping`)."""


def _migrate(conn: Connection) -> int | None:
    """Every migration not yet applied, under an advisory lock (planes that
    start together migrate one after the other); the newer schema's version
    if the database is from a newer plane."""
    conn.execute("SET LOCAL lock_timeout = 0")  # planes starting together wait for each other
    conn.execute("SET LOCAL statement_timeout = 0")
    conn.execute("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))
    for statement in PRELUDE:
        conn.execute(statement)
    row = conn.execute("SELECT version FROM plane_schema").fetchone()
    if row is None:
        conn.execute("INSERT INTO plane_schema (version) VALUES (0)")
        version = 0
    else:
        version = int(row[0])
    if version > len(MIGRATIONS):
        return version
    for step, script in enumerate(MIGRATIONS[version:], start=version + 1):
        for statement in ddl(script):
            conn.execute(statement)
        conn.execute("UPDATE plane_schema SET version = ?", (step,))
    return None


def _shown(url: str) -> str:
    """The URL without its password, to be said."""
    return re.sub(r"//([^:/@]+):[^@]*@", r"//\1:…@", url)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
