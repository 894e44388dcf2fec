"""The store in a SQLite file (the default): the engine's connections, WAL, the schema's version.

The writer is a sqlite3 connection its thread owns, the reader an aiosqlite
one; WAL lets the reader read the last commit while the writer writes. The
operator's reads (`OPERATOR`) have a reader of their own, so a status or a
`/limit` does not queue behind the agents' reads, and its answers come back
ahead of the agents' callbacks. A
transaction begins `IMMEDIATE`, so it never fails half-way for another
process's lock. The schema is versioned with `PRAGMA user_version`, one step
of `MIGRATIONS` (plane/store/migrations.py) at a time. A file that cannot be
used is said in one sentence (`refusal`).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sqlite3
from decimal import Decimal
from pathlib import Path
from typing import Any

import aiosqlite

from plane.errors import StoreError
from plane.store.engine import OPERATOR, Database
from plane.store.fence import Fence
from plane.store.migrations import MIGRATIONS, postgres_own, sqlite_own, statements

log = logging.getLogger(__name__)

BUSY_S = 5.0
"""How long a statement waits for another process's lock before it fails
(SQLite's busy timeout), set as each connection opens: a `PRAGMA
busy_timeout` after it would cost the reader's thread a hop each."""


class SqliteDatabase(Database):
    """`Database` on a SQLite file in WAL mode."""

    path: Path
    _operator_reader: aiosqlite.Connection | None
    """The operator's reads' own reader (None until the file is checked)."""

    @classmethod
    async def open(cls, path: Path) -> SqliteDatabase:
        """The database at `path`, checked before anything trusts it: a file
        that is not SQLite, has damaged pages, cannot be written, or is from
        a newer plane raises `StoreError` naming the file and what to do. The
        connections (threads, which would keep the process alive) are closed
        before the error leaves."""
        if path.is_dir():
            raise StoreError(f"Cannot open {path}: it is a directory; the ledger must be a file.")
        try:
            writer = await asyncio.to_thread(_connect_writer, path)
        except sqlite3.Error as exc:
            raise refusal(path, exc) from None
        try:
            reader = await aiosqlite.connect(path, isolation_level=None, timeout=BUSY_S)
        except sqlite3.Error as exc:
            writer.close()
            raise refusal(path, exc) from None
        db = cls(writer, reader)
        db.path = path
        db._operator_reader = None
        try:
            await db._prepare(path)
        except BaseException as exc:
            await db.close()
            if isinstance(exc, sqlite3.Error):
                raise refusal(path, exc) from None
            raise
        return db

    async def _prepare(self, path: Path) -> None:
        reader = self._reader
        reader.row_factory = sqlite3.Row
        # Every page read once (a fraction of a second for 100 MB): damage is
        # found now, with a sentence, not in the middle of a turn.
        verdict = await self.fetchall("PRAGMA quick_check")
        if [tuple(row) for row in verdict] != [("ok",)]:
            raise refusal(path, sqlite3.DatabaseError(str(verdict[0][0]) if verdict else "?"))
        await self._migrate(path)
        # The reader only reads: a write sent to it by mistake fails loudly.
        await reader.execute("PRAGMA query_only=ON")
        self._operator_reader = await aiosqlite.connect(path, isolation_level=None, timeout=BUSY_S)
        self._operator_reader.row_factory = sqlite3.Row
        await self._operator_reader.execute("PRAGMA query_only=ON")
        # Its thread answers in the operator's context: a loop that serves the
        # operator first (`plane.daemon.loop`) takes each answer ahead of the
        # agents' callbacks, not a whole pass of the busy loop later. Set once,
        # on that thread, by a function SQLite calls there.
        await self._operator_reader.create_function("plane_as_operator", 0, _as_operator)
        await self._operator_reader.execute_fetchall("SELECT plane_as_operator()")
        # A file the plane may read but not write (read-only, or on a read-only
        # mount) is found here, not at the first call's ledger entry.
        await self.write(_touch_version)

    async def fetchall(self, sql: str, *params: object) -> list[sqlite3.Row]:
        """One read, in one hop to the reader's thread: a statement left open
        across hops would hold its read snapshot, and another coroutine's read
        in between would see that older snapshot, not the last commit."""
        self.counts.reads += 1
        reader = self._operator_reader if OPERATOR.get() else None
        return list(await (reader or self._reader).execute_fetchall(sql, params))

    async def close(self) -> None:
        await super().close()
        if self._operator_reader is not None:
            await self._operator_reader.close()

    def _open_aside(self) -> sqlite3.Connection:
        conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_S)
        conn.row_factory = sqlite3.Row
        return conn

    async def _migrate(self, path: Path) -> None:
        row = await self.fetchone("PRAGMA user_version")
        version = row[0] if row else 0
        if version > len(MIGRATIONS):
            raise StoreError(
                f"{path} is from a newer plane (schema {version}, this one knows "
                f"{len(MIGRATIONS)}); upgrade plane."
            )
        for step, script in enumerate(MIGRATIONS[version:], start=version + 1):
            await self.write(functools.partial(_migration, script=script, step=step))

    def _begin(self, conn: Any) -> None:
        # IMMEDIATE: the write lock now, not at the first write, so a
        # transaction never fails half-way for another process's lock.
        conn.execute("BEGIN IMMEDIATE")

    def _guard(self, conn: Any, fence: Fence) -> None:
        """A store of one plane has no leases: nothing to check (PostgreSQL's
        checks, plane/store/postgres.py)."""


def _connect_writer(path: Path) -> sqlite3.Connection:
    """The writer's connection: opened here, used only by the writer thread."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=BUSY_S)
    try:
        conn.row_factory = sqlite3.Row
        # NORMAL in WAL mode survives a crash of the process (what "nothing is
        # lost" promises); only a power cut can lose the last commits.
        for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "foreign_keys=ON"):
            conn.execute(f"PRAGMA {pragma}")
        conn.create_aggregate("decimal_sum", 1, _DecimalSum)  # type: ignore[arg-type]
        conn.create_function("decimal_add", 2, _decimal_add, deterministic=True)
    except BaseException:
        conn.close()
        raise
    return conn


class _DecimalSum:
    """SUM over decimal strings, exactly (SQLite's SUM would use floats)."""

    def __init__(self) -> None:
        self.total = Decimal(0)

    def step(self, value: str | None) -> None:
        if value is not None:
            self.total += Decimal(value)

    def finalize(self) -> str:
        return str(self.total)


def _decimal_add(a: str, b: str) -> str:
    """a + b, decimal strings added exactly (SQLite's + would use floats)."""
    return str(Decimal(a) + Decimal(b))


def _migration(conn: sqlite3.Connection, script: str, step: int) -> None:
    try:
        for statement in [] if postgres_own(script) else statements(script):
            conn.execute(statement)
    except sqlite3.OperationalError as exc:
        if not sqlite_own(script):
            raise
        # A SQLite built "defensive" refuses to edit its schema: the step's
        # rows and rules are the same without it.
        conn.execute("PRAGMA writable_schema = RESET")
        log.info("schema step %d left as it was (%s): same rows, same rules", step, exc)
    conn.execute(f"PRAGMA user_version = {step}")


def _touch_version(conn: sqlite3.Connection) -> None:
    """Rewrite the schema version as it is: a write that changes nothing,
    which a file the plane cannot write refuses."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    conn.execute(f"PRAGMA user_version = {version}")


LEDGER_ASIDE = "start a new ledger (today's spend then starts again from $0)"


def refusal(path: Path, exc: sqlite3.Error, *, aside: str = LEDGER_ASIDE) -> StoreError:
    """What a database that cannot be used means to the person who runs the
    plane: the file, what is wrong, and what to do, in one sentence. `aside`
    is what moving a damaged file aside costs."""
    detail = str(exc) or type(exc).__name__
    name = getattr(exc, "sqlite_errorname", "")
    if (
        name in ("SQLITE_NOTADB", "SQLITE_CORRUPT")
        or "malformed" in detail
        or (type(exc) is sqlite3.DatabaseError)
    ):
        return StoreError(
            f"{path} is damaged ({detail}); restore it from a backup, or move it aside to {aside}."
        )
    if name.startswith(("SQLITE_READONLY", "SQLITE_PERM")):
        return StoreError(
            f"Cannot write {path} ({detail}); make it and its directory writable for this user."
        )
    if name.startswith("SQLITE_CANTOPEN"):
        return StoreError(
            f"Cannot open {path} ({detail}); it and its directory must be readable and writable."
        )
    if name == "SQLITE_FULL":
        return StoreError(f"Cannot write {path}: the disk is full; free some space.")
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return StoreError(f"{path} is locked by another process ({detail}); stop it first.")
    return StoreError(f"Cannot use {path}: {detail}.")


def _as_operator() -> int:
    """Run by SQLite on the operator's reader's thread: what that thread hands
    the loop from then on is the operator's (`OPERATOR`)."""
    OPERATOR.set(True)
    return 1
