"""The store on PostgreSQL: the same `Database` (plane/store/engine.py), another engine.

**Why psycopg 3, not asyncpg.** The store's design is a writer thread that
owns its connection and runs synchronous write functions (`fn(conn)`, SQL
only, may run twice) with group commit. psycopg 3 has a synchronous
connection as well as an asynchronous one, so the writer thread, its
batches and every write function of the plane run unchanged on PostgreSQL;
asyncpg is asynchronous only, and would have made every write function a
coroutine (one transaction no longer one function in one hop) and the two
engines two designs. psycopg also gives LISTEN/NOTIFY and client-side
binding (plane/store/postgres_dialect.py) on the same connection type.

The SQL the write functions send is translated in postgres_dialect.py; the
connections, their bounds, their return after the server went away and the
watchdog are postgres_links.py's. The schema's version lives in
`plane_schema`, not `PRAGMA user_version`; `decimal_add`/`decimal_sum`
(exact sums of decimal strings, the SQLite writer's own functions) are SQL
functions on `numeric` (`PRELUDE`).

A transaction the server aborts for a deadlock or a serialisation
failure (two planes' transactions crossing) is run again, up to `RETRIES`
times: a write function may run twice by contract.

**Fences** (`_guard`): a write made for an agent under a lease carries the
lease's epoch, and its transaction first takes a share lock on that lease
row at that epoch, held to its COMMIT: if another plane has taken the lease
the write is refused (`LeaseLost`), and a takeover passes over the row
until the write's commit (plane/daemon/fleet.py), then sweeps what it
wrote. The check and the write cannot be split by a takeover.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
from collections.abc import Callable
from datetime import datetime
from typing import Any, cast

import psycopg
from psycopg import errors as pg_errors

from plane.errors import LeaseLost, StoreError, StoreFault
from plane.store.engine import OPERATOR, Database
from plane.store.fence import Fence
from plane.store.migrations import MIGRATIONS
from plane.store.postgres_dialect import Connection, ddl, first_line
from plane.store.postgres_links import (
    BOUND_S,
    CLOSE_WAIT_S,
    MIGRATION_WATCH_S,
    WATCH_S,
    Changed,
    Link,
    Reader,
    Watchdog,
    connect,
    connect_async,
)

CLOSE_GRACE_S = BOUND_S + CLOSE_WAIT_S
"""How long closing the store lets the writes asked for finish: a lock
waited for as long as the server lets it, and a moment. Past it the link
is taken for dead (`close`)."""

RETRIES = 20
"""A transaction aborted by a deadlock or serialisation failure is run again
this many times before its failure is its caller's."""

LOCK_RETRIES = 3
"""A transaction that waited `BOUND_S` for a lock is run again this many
times: the holder, if it was cut off, has lost its session by then."""

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


class PostgresDatabase(Database):
    """`Database` on PostgreSQL: the same writer thread and group commit,
    a psycopg connection under it."""

    url: str
    link: Link
    _watchdog: Watchdog
    _watch_s: float | None = None
    """How long the writer's transaction may go unanswered (None: the
    watchdog's own bound); the migration's is longer."""
    _abandoned = False
    """Closing, the store did not answer in time: its link is not opened again."""
    _operators: Reader | None = None
    """The operator's reads' own reader (`OPERATOR`), opened at the first of
    them: a status or a `/limit` does not queue behind the agents' reads,
    as on SQLite. At 10,000 agents on two planes, thousands of rows shown
    again at once (agents moved between planes) held the one reader for
    tens of seconds."""
    _opening: asyncio.Lock

    @classmethod
    async def connect(
        cls, url: str, *, migrate: bool = True, changed: Changed | None = None
    ) -> PostgresDatabase:
        """The database at `url`, migrated; `StoreError` saying what is wrong
        (and nothing left open) when it cannot be used. `migrate` False: a
        second store of the same plane's (the fleet's own), already migrated.
        `changed` is told when it goes away and comes back."""
        shown = _shown(url)
        try:
            writer = await asyncio.to_thread(connect, url)
        except psycopg.Error as exc:
            raise StoreError(f"Cannot use the store at {shown}: {first_line(exc)}.") from None
        try:
            reader = await connect_async(url)
        except psycopg.Error as exc:
            writer.close()
            raise StoreError(f"Cannot use the store at {shown}: {first_line(exc)}.") from None
        link, watchdog = Link(changed), Watchdog(WATCH_S)
        db = cls(Connection(writer), Reader(reader, url, link, watchdog))
        db.url, db.link, db._watchdog = url, link, watchdog
        db._opening = asyncio.Lock()
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

    async def close(self, grace_s: float = CLOSE_GRACE_S) -> None:
        """The writes asked for finish within `grace_s`; past it the link is
        taken for dead (a stalled one answers nothing, and the watchdog
        would wait `WATCH_S`, a reconnect its timeout more): what waits on it
        is cut, nothing is opened again, and what is left fails as the store
        being away. Then the reader closes likewise."""
        closing = asyncio.ensure_future(self._close_readers())
        try:
            if not (await asyncio.wait({closing}, timeout=grace_s))[0]:
                self._abandoned = True
                self._watchdog.hurry()
            await closing
        finally:
            self._watchdog.close()

    async def _close_readers(self) -> None:
        try:
            await super().close()
        finally:
            if self._operators is not None:
                await self._operators.close()

    async def fetchall(self, sql: str, *params: object) -> list[Any]:
        self.counts.reads += 1
        reader: Reader = await self._operators_reader() if OPERATOR.get() else self._reader
        return await reader.fetchall(sql, params)

    async def _operators_reader(self) -> Reader:
        """`_operators`, opened now if it is not yet (the store away: its
        fault, as a read's)."""
        async with self._opening:  # one opened, however many reads ask at once
            if self._operators is None:
                try:
                    pg = await connect_async(self.url)
                except psycopg.Error as exc:
                    self.link.failed(exc)
                    raise self.link.fault() from exc
                self._operators = Reader(pg, self.url, self.link, self._watchdog)
        return self._operators

    def _open_aside(self) -> sqlite3.Connection:
        # Typed as sqlite3's, as write functions are: the same few methods.
        conn = Connection(connect(self.url))
        # A long read (a scrape summing the whole ledger) holds no lock
        # anyone waits on: it is not cut at the plane's statement bound.
        conn.execute("SET statement_timeout = 0")
        return cast(sqlite3.Connection, conn)

    async def _migrate_pg(self, shown: str) -> None:
        # Write functions are typed for sqlite3's connection; this one is
        # PostgreSQL's own, and gets the writer's Connection above.
        self._watch_s = MIGRATION_WATCH_S
        try:
            newer = await self.write(cast(Callable[[sqlite3.Connection], int | None], _migrate))
        finally:
            self._watch_s = None
        if newer is not None:
            raise StoreError(
                f"The store at {shown} is from a newer plane (schema {newer}, this one knows "
                f"{len(MIGRATIONS)}); upgrade plane."
            )

    def _transaction(self, batch: list[Any], yields: bool, owner: object) -> int:
        done, crossed, waited, reopened = 0, 0, 0, False
        while True:
            if not self._writer_ready(first=not reopened):
                fault = self.link.fault()
                for item in batch:
                    item.outcome = (False, fault)
                return len(batch)
            conn: Connection = self._writer
            conn.committing = False
            self._watchdog.arm(self, conn.pg.fileno(), self._watch_s)
            try:
                done = super()._transaction(batch, yields, owner)
            finally:
                self._watchdog.disarm(self)
            if conn.broken:
                if not conn.committing and not reopened:
                    reopened = True  # the server rolled it back: once more, on a new link
                    continue
                return self._lost(batch, conn.committing)
            self.link.ok()
            failures = [item.outcome[1] for item in batch[: done or None] if not item.outcome[0]]
            if any(_crossed(exc) for exc in failures) and crossed < RETRIES:
                crossed += 1
            elif any(_waited(exc) for exc in failures) and waited < LOCK_RETRIES:
                waited += 1
            else:
                return done
            if len(batch) > 1 and not done:
                return 0  # each alone, by the caller (each alone retries)

    def _writer_ready(self, *, first: bool) -> bool:
        """The writer's link, opened again if it broke (at once the first
        time, else when the backoff allows). False: the store is away."""
        conn: Connection = self._writer
        if not conn.broken:
            return True
        if self._abandoned or (not first and not self.link.may_try()):
            return False
        try:
            conn.pg = connect(self.url)
        except psycopg.Error as exc:
            self.link.failed(exc)
            return False
        return True

    def _lost(self, batch: list[Any], committing: bool) -> int:
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
                since=fault.since,
                kept_unknown=True,
            )
        for item in batch:
            item.outcome = (False, fault)
        return len(batch)

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
