"""The store on PostgreSQL: the same `Database` (plane/db.py), another engine.

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
"""

from __future__ import annotations

import asyncio
import functools
import re
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from typing import Any, cast

import psycopg
from psycopg import errors as pg_errors
from psycopg.pq import TransactionStatus

from plane.db import MIGRATIONS, Database, _statements
from plane.errors import StoreError, StoreFault

RETRIES = 20
"""A transaction aborted by a deadlock or serialisation failure is run again
this many times before its failure is its caller's."""

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


def _fault(exc: psycopg.Error) -> StoreFault:
    """The server's message (its first line: the rest is context and a caret)."""
    return StoreFault(_first_line(exc), exc.sqlstate)


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
    statements = []
    for statement in _statements(script):
        statement = re.sub(r"\bWITHOUT ROWID\b", "", statement)
        statement = re.sub(
            r"\bINTEGER PRIMARY KEY\b", "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
            statement,
        )  # fmt: skip
        statement = re.sub(r"\bINTEGER\b", "BIGINT", statement)
        statements.append(statement)
    return statements


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
    `in_transaction`), on a psycopg connection."""

    def __init__(self, pg: psycopg.Connection[Any]) -> None:
        self.pg = pg

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        text, order = translate(sql)
        try:
            cursor = self.pg.execute(text, _params(order, params) if params else None)
            return Cursor(self, _rows(cursor), cursor.rowcount)
        except psycopg.Error as exc:
            raise _fault(exc) from exc

    def executemany(self, sql: str, seq: Sequence[Sequence[Any]]) -> Cursor:
        text, order = translate(sql)
        try:
            with self.pg.cursor() as cursor:
                cursor.executemany(text, [_params(order, p) for p in seq])
                return Cursor(self, [], cursor.rowcount)
        except psycopg.Error as exc:
            raise _fault(exc) from exc

    @property
    def in_transaction(self) -> bool:
        return self.pg.info.transaction_status != TransactionStatus.IDLE

    def close(self) -> None:
        self.pg.close()


class Reader:
    """The reader: its own connection, each statement its own snapshot
    (autocommit), one at a time."""

    def __init__(self, pg: psycopg.AsyncConnection[Any]) -> None:
        self.pg = pg
        self._lock = asyncio.Lock()

    async def fetchall(self, sql: str, params: Sequence[Any]) -> list[Row]:
        text, order = translate(sql)
        async with self._lock:
            try:
                cursor = await self.pg.execute(text, _params(order, params) if params else None)
            except psycopg.Error as exc:
                raise _fault(exc) from exc
            if cursor.description is None:
                return []
            names = {column.name: i for i, column in enumerate(cursor.description)}
            return [Row(names, values) for values in await cursor.fetchall()]

    async def close(self) -> None:
        await self.pg.close()


def _connect(url: str) -> psycopg.Connection[Any]:
    return psycopg.Connection.connect(url, autocommit=True, cursor_factory=psycopg.ClientCursor)


class PostgresDatabase(Database):
    """`Database` on PostgreSQL: the same writer thread and group commit,
    a psycopg connection under it."""

    url: str

    @classmethod
    async def connect(cls, url: str) -> PostgresDatabase:
        """The database at `url`, migrated; `StoreError` saying what is wrong
        (and nothing left open) when it cannot be used."""
        shown = _shown(url)
        try:
            writer = await asyncio.to_thread(_connect, url)
        except psycopg.Error as exc:
            raise StoreError(f"Cannot use the store at {shown}: {_first_line(exc)}.") from None
        try:
            reader = await psycopg.AsyncConnection.connect(
                url, autocommit=True, cursor_factory=psycopg.AsyncClientCursor
            )
        except psycopg.Error as exc:
            writer.close()
            raise StoreError(f"Cannot use the store at {shown}: {_first_line(exc)}.") from None
        db = cls(Connection(writer), Reader(reader))
        db.url = url
        try:
            await db._migrate_pg(shown)
        except BaseException as exc:
            await db.close()
            if isinstance(exc, sqlite3.Error):
                raise StoreError(f"Cannot use the store at {shown}: {exc}.") from None
            raise
        return db

    async def fetchall(self, sql: str, *params: object) -> list[Any]:
        self.counts.reads += 1
        reader: Reader = self._reader
        return await reader.fetchall(sql, params)

    def _open_aside(self) -> sqlite3.Connection:
        # Typed as sqlite3's, as write functions are: the same few methods.
        return cast(sqlite3.Connection, Connection(_connect(self.url)))

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
        done = False
        for _ in range(RETRIES):
            done = super()._transaction(batch)
            failures = [item.outcome[1] for item in batch if not item.outcome[0]]
            if not any(_crossed(exc) for exc in failures):
                return done
            if len(batch) > 1 and not done:
                return False  # each alone, by the caller (each alone retries)
        return done

    def _begin(self, conn: Any) -> None:
        conn.execute("BEGIN")


def _crossed(exc: BaseException | None) -> bool:
    """A deadlock or serialisation failure: the transaction may simply run again."""
    if exc is None:  # not run: its batch failed before it
        return False
    cause = exc.__cause__
    return isinstance(cause, pg_errors.SerializationFailure | pg_errors.DeadlockDetected)


def _migrate(conn: Connection) -> int | None:
    """Every migration not yet applied, under an advisory lock (planes that
    start together migrate one after the other); the newer schema's version
    if the database is from a newer plane."""
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
