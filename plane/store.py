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
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiosqlite

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
        connection = await aiosqlite.connect(path, isolation_level=None)
        connection.row_factory = aiosqlite.Row
        # NORMAL in WAL mode survives a crash of the process (what "nothing is
        # lost" promises); only a power cut can lose the last commits.
        for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "foreign_keys=ON"):
            await connection.execute(f"PRAGMA {pragma}")
        await connection.execute("PRAGMA busy_timeout=5000")
        db = cls(connection)
        await db._migrate()
        return db

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

    async def _migrate(self) -> None:
        row = await self.fetchone("PRAGMA user_version")
        version = row[0] if row else 0
        if version > len(MIGRATIONS):
            raise RuntimeError(
                f"The database is from a newer plane (schema {version}); upgrade plane."
            )
        for step, script in enumerate(MIGRATIONS[version:], start=version + 1):
            async with self.transaction() as tx:
                for statement in _statements(script):
                    await tx.execute(statement)
                await tx.execute(f"PRAGMA user_version = {step}")


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]
