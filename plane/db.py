"""The plane's SQLite database: one long-lived connection, WAL, migrations.

One connection is one thread (aiosqlite), and one writer is what SQLite
wants, so the plane opens exactly one. Every write goes through
`transaction()`, which takes the write lock up front (`BEGIN IMMEDIATE`) and
commits before returning: when a method that wrote returns, it is on disk.

The schema is versioned with `PRAGMA user_version`; each entry of
`MIGRATIONS` moves it one step, inside one transaction, and is never edited
once released — a new step is appended instead.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiosqlite

from plane.errors import StoreError

MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE calls (
        id INTEGER PRIMARY KEY,
        agent TEXT NOT NULL,
        day TEXT NOT NULL,
        at TEXT NOT NULL,
        provider TEXT NOT NULL,
        model TEXT NOT NULL,
        input_tokens INTEGER NOT NULL DEFAULT 0,
        cache_read_tokens INTEGER NOT NULL DEFAULT 0,
        cache_write_tokens INTEGER NOT NULL DEFAULT 0,
        output_tokens INTEGER NOT NULL DEFAULT 0,
        cost_usd TEXT NOT NULL,
        price_source TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('pending', 'settled', 'interrupted', 'failed')),
        estimated INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX calls_by_day ON calls (day, agent);
    CREATE INDEX calls_pending ON calls (status) WHERE status = 'pending';

    CREATE TABLE messages (
        id INTEGER PRIMARY KEY,
        agent TEXT NOT NULL,
        at TEXT NOT NULL,
        kind TEXT NOT NULL,
        text TEXT NOT NULL,
        held INTEGER NOT NULL DEFAULT 0,
        waiting INTEGER NOT NULL DEFAULT 0,
        cost_usd TEXT,
        usage TEXT
    );
    CREATE INDEX messages_by_agent ON messages (agent, id);
    CREATE INDEX messages_waiting ON messages (agent) WHERE waiting = 1;

    CREATE TABLE context (
        id INTEGER PRIMARY KEY,
        agent TEXT NOT NULL,
        role TEXT NOT NULL,
        content TEXT NOT NULL,
        tool_calls TEXT,
        tool_call_id TEXT
    );
    CREATE INDEX context_by_agent ON context (agent, id);

    CREATE TABLE ceilings (
        agent TEXT PRIMARY KEY,
        limit_usd TEXT,
        set_at TEXT NOT NULL,
        set_by TEXT NOT NULL
    );

    CREATE TABLE agents (
        name TEXT PRIMARY KEY,
        model TEXT NOT NULL,
        provider TEXT NOT NULL,
        role TEXT NOT NULL,
        created_at TEXT NOT NULL
    );

    CREATE TABLE bookings (
        id INTEGER PRIMARY KEY,
        agent TEXT NOT NULL,
        due TEXT NOT NULL,
        note TEXT NOT NULL,
        booked_at TEXT NOT NULL,
        done INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX bookings_open ON bookings (due) WHERE done = 0;

    CREATE TABLE notices (
        agent TEXT NOT NULL,
        day TEXT NOT NULL,
        kind TEXT NOT NULL,
        PRIMARY KEY (agent, day, kind)
    );
    """,
    """
    ALTER TABLE bookings ADD COLUMN ambient INTEGER NOT NULL DEFAULT 0;
    """,
    # An agent's own ask is kept apart from the operator's value, so that it
    # only ever tightens (the tighter of the two binds); asks stored as the
    # operator's before move over. And the plane's day, which never goes back.
    """
    CREATE TABLE asks (
        agent TEXT PRIMARY KEY,
        limit_usd TEXT NOT NULL,
        asked_at TEXT NOT NULL
    );
    INSERT INTO asks (agent, limit_usd, asked_at)
        SELECT agent, limit_usd, set_at FROM ceilings
        WHERE set_by = 'agent' AND limit_usd IS NOT NULL;
    DELETE FROM ceilings WHERE set_by = 'agent';

    CREATE TABLE plane_day (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        day TEXT NOT NULL
    );
    """,
)


class Database:
    """The one connection. Reads may run any time; writes go through
    `transaction()`, one at a time."""

    def __init__(self, connection: aiosqlite.Connection) -> None:
        self.connection = connection
        self._write = asyncio.Lock()

    @classmethod
    async def open(cls, path: Path) -> Database:
        """The database at `path`, checked before anything trusts it: a file
        that is not SQLite, has damaged pages, cannot be written, or is from
        a newer plane raises `StoreError` naming the file and what to do. The
        connection (a thread, which would keep the process alive) is closed
        before the error leaves."""
        if path.is_dir():
            raise StoreError(f"Cannot open {path}: it is a directory; the ledger must be a file.")
        try:
            connection = await aiosqlite.connect(path, isolation_level=None)
        except sqlite3.Error as exc:
            raise refusal(path, exc) from None
        db = cls(connection)
        try:
            await db._prepare(path)
        except BaseException as exc:
            await connection.close()
            if isinstance(exc, sqlite3.Error):
                raise refusal(path, exc) from None
            raise
        return db

    async def _prepare(self, path: Path) -> None:
        connection = self.connection
        connection.row_factory = aiosqlite.Row
        await connection.execute("PRAGMA busy_timeout=5000")
        # NORMAL in WAL mode survives a crash of the process (what "nothing is
        # lost" promises); only a power cut can lose the last commits.
        for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "foreign_keys=ON"):
            await connection.execute(f"PRAGMA {pragma}")
        # Every page read once (a fraction of a second for 100 MB): damage is
        # found now, with a sentence, not in the middle of a turn.
        verdict = await self.fetchall("PRAGMA quick_check")
        if [tuple(row) for row in verdict] != [("ok",)]:
            raise refusal(path, sqlite3.DatabaseError(str(verdict[0][0]) if verdict else "?"))
        await self._migrate(path)
        # A file the plane may read but not write (read-only, or on a read-only
        # mount) is found here, not at the first call's ledger entry.
        row = await self.fetchone("PRAGMA user_version")
        await connection.execute("BEGIN IMMEDIATE")
        try:
            await connection.execute(f"PRAGMA user_version = {row[0] if row else 0}")
        finally:
            await connection.execute("ROLLBACK")

    async def close(self) -> None:
        await self.connection.close()

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        async with self._write:
            await self.connection.execute("BEGIN IMMEDIATE")
            try:
                yield self.connection
            except BaseException:
                await self.connection.execute("ROLLBACK")
                raise
            await self.connection.execute("COMMIT")

    async def fetchall(self, sql: str, *params: object) -> list[aiosqlite.Row]:
        async with self.connection.execute(sql, params) as cursor:
            return list(await cursor.fetchall())

    async def fetchone(self, sql: str, *params: object) -> aiosqlite.Row | None:
        async with self.connection.execute(sql, params) as cursor:
            return await cursor.fetchone()

    async def _migrate(self, path: Path) -> None:
        row = await self.fetchone("PRAGMA user_version")
        version = row[0] if row else 0
        if version > len(MIGRATIONS):
            raise StoreError(
                f"{path} is from a newer plane (schema {version}, this one knows "
                f"{len(MIGRATIONS)}); upgrade plane."
            )
        for step, script in enumerate(MIGRATIONS[version:], start=version + 1):
            async with self.transaction() as tx:
                for statement in _statements(script):
                    await tx.execute(statement)
                await tx.execute(f"PRAGMA user_version = {step}")


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


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
