"""The plane's SQLite database: one writer connection, one reader, WAL, migrations.

**One writer that owns its connection** (as datasette's write connection):
`await db.write(fn)` hands `fn(conn)`, a synchronous function, to the writer
thread, which runs it inside `BEGIN IMMEDIATE` … `COMMIT`. A transaction is
one function in one thread hop, so no coroutine can run in the middle of
one, and none can read what it has not committed: reads go to a second
connection (`fetchall`, `fetchone`), which WAL lets read the last commit
while the writer writes.

**Group commit.** Writes that arrive while the writer is busy wait in its
queue; the next transaction takes all of them, one after another, and
commits once. Each caller's future is resolved only after that commit, so
nothing written is shown before it is on disk, and a crash loses nothing
that was shown. A function that raises takes only itself out: the batch is
rolled back and each of its functions runs again alone, so the failure is
its caller's and the others commit. That is why a write function must do
nothing but SQL on the connection it is given: it may run twice.

The schema is versioned with `PRAGMA user_version`; each entry of
`MIGRATIONS` moves it one step, inside one transaction, and is never edited
once released — a new step is appended instead.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import queue
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import aiosqlite

from plane.errors import StoreError

log = logging.getLogger(__name__)

T = TypeVar("T")

BATCH = 256
"""At most this many writes share one commit: a bound on how long the first
of them waits for the last."""

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
    # Each agent's spend per day on the calls no longer pending, kept by the
    # ledger in the transaction that closes them, so the first gate check of
    # a day reads one row per agent instead of summing the day's calls.
    # Summed exactly (decimal_sum, the writer's own function), never as floats.
    """
    CREATE TABLE spend (
        day TEXT NOT NULL,
        agent TEXT NOT NULL,
        cost_usd TEXT NOT NULL,
        PRIMARY KEY (day, agent)
    ) WITHOUT ROWID;
    INSERT INTO spend (day, agent, cost_usd)
        SELECT day, agent, decimal_sum(cost_usd) FROM calls WHERE status != 'pending'
        GROUP BY day, agent;
    """,
    # Anthropic's 1-hour cache writes, a part of cache_write_tokens priced higher.
    """
    ALTER TABLE calls ADD COLUMN cache_write_1h_tokens INTEGER NOT NULL DEFAULT 0;
    """,
    # The tools of an agent made from the keyboard, as a JSON list of names;
    # NULL (every agent made before) is every tool, as it was.
    """
    ALTER TABLE agents ADD COLUMN tools TEXT;
    """,
    # What the operator changed of an agent after it was made (from the TUI or
    # `plane edit` / `pause`), for agents.yaml's as for those made at run time:
    # a NULL column is "as the file or its creation said". `tools` is JSON
    # (a list of names, or "all").
    """
    CREATE TABLE agent_settings (
        name TEXT PRIMARY KEY,
        model TEXT,
        provider TEXT,
        role TEXT,
        tools TEXT,
        paused INTEGER NOT NULL DEFAULT 0,
        set_at TEXT NOT NULL
    );
    """,
    # What compression kept out of the model's input, a row a turn, with its
    # price at the model's input rate (NULL when the model has no known price:
    # a saving nobody can price is not claimed as $0 either).
    """
    CREATE TABLE savings (
        id INTEGER PRIMARY KEY,
        agent TEXT NOT NULL,
        day TEXT NOT NULL,
        at TEXT NOT NULL,
        model TEXT NOT NULL,
        chars INTEGER NOT NULL,
        usd TEXT
    );
    CREATE INDEX savings_by_day ON savings (day, agent);
    """,
    # Several planes on one store (README, "Several machines"; on SQLite one
    # plane has them all): the fleet's ceiling as the operator set it, in the
    # one row every admission of a call locks; each agent's lease (times in
    # the database's clock, ms since the epoch); the planes seen, for a fair
    # share; and the plane that opened each call, for the sweep of a dead one.
    """
    CREATE TABLE fleet (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        limit_usd TEXT,
        set_at TEXT,
        set_by TEXT,
        admitted INTEGER NOT NULL DEFAULT 0
    );
    INSERT INTO fleet (id) VALUES (1);

    CREATE TABLE leases (
        agent TEXT PRIMARY KEY,
        plane TEXT NOT NULL,
        expires_ms INTEGER NOT NULL
    );
    CREATE INDEX leases_by_plane ON leases (plane);

    CREATE TABLE planes (
        name TEXT PRIMARY KEY,
        seen_ms INTEGER NOT NULL
    );

    ALTER TABLE calls ADD COLUMN plane TEXT;
    """,
    # Why each held agent was last told it is quiet (the hold's reason), so a
    # restart does not say it again; the row goes when the hold ends.
    """
    CREATE TABLE holds_told (
        agent TEXT PRIMARY KEY,
        reason TEXT NOT NULL
    );
    """,
    # Fencing (several planes): each lease's epoch, moved on every take of
    # it, so a write made under an older one (a plane that was paused or cut
    # off while another took the agent) is refused. A lease let go keeps its
    # row (expires_ms 0), so its epoch never starts again from 0.
    """
    ALTER TABLE leases ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
    """,
    # What each settled gateway call's estimated prompt and real answers cost
    # (`base_usd`), so an agent's estimates learn from its calls again after a restart
    # (plane/gateway/learned.py); the response's id, for a later call that
    # continues it, and the stored prompt or conversation it used.
    """
    CREATE TABLE gateway_calls (
        call INTEGER NOT NULL PRIMARY KEY,
        base_usd TEXT NOT NULL,
        unseen INTEGER NOT NULL,
        choices INTEGER NOT NULL,
        response_id TEXT,
        context_key TEXT
    );
    CREATE INDEX gateway_calls_by_response ON gateway_calls (response_id)
        WHERE response_id IS NOT NULL;
    CREATE INDEX gateway_calls_by_context ON gateway_calls (context_key)
        WHERE context_key IS NOT NULL;
    """,
    # The tool that gave each tool result of the model's history, and the MCP
    # server for an MCP server's tool (NULL: one of the plane's own, or a
    # result kept from before): what a result's tokens are attributed to.
    """
    ALTER TABLE context ADD COLUMN tool TEXT;
    ALTER TABLE context ADD COLUMN mcp_server TEXT;
    """,
    # One-tap approval (README, "Guard rails"): a raise from an alert's link is
    # the agent's ceiling until `ends_at` (00:00 UTC after the day it was
    # given), when the ceiling it had comes back by itself; and the offers the
    # alerts made (a raise and its Deny share one), so each is answered once,
    # kept until they expire.
    """
    CREATE TABLE raises (
        agent TEXT PRIMARY KEY,
        limit_usd TEXT NOT NULL,
        ends_at TEXT NOT NULL,
        set_at TEXT NOT NULL
    );

    CREATE TABLE offers (
        nonce TEXT PRIMARY KEY,
        agent TEXT NOT NULL,
        from_usd TEXT NOT NULL,
        to_usd TEXT NOT NULL,
        day TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        made_at TEXT NOT NULL,
        answer TEXT,
        answered_at TEXT
    );
    """,
)


@dataclass(frozen=True)
class Fence:
    """The lease a write is made under (several planes on one store): the
    write is refused (`LeaseLost`) unless `plane` still holds `agent`'s lease
    at `epoch` when it runs, in its own transaction."""

    agent: str
    plane: str
    epoch: int


FENCE: contextvars.ContextVar[Fence | None] = contextvars.ContextVar("plane_fence", default=None)
"""The fence of the turn being run. A context variable, as `decimal`'s
context is: a worker sets it once for its turn, and every write made on the
turn's behalf (the ledger's, the conversation's, the notices', however deep
and in whatever task the turn starts) carries it without each layer passing
it on. Unset (None) for the operator's requests and on a store of one plane."""


@dataclass
class Counts:
    """What the database has done, for the benchmark: writes asked for,
    batches the writer took (a thread hop each, there and back),
    transactions committed, reads answered (on the reader's thread)."""

    writes: int = 0
    batches: int = 0
    commits: int = 0
    reads: int = 0


class Finisher(Protocol):
    """The last part of every transaction (see `Database.finish_with`)."""

    def write(self, conn: sqlite3.Connection) -> None:
        """Write what this transaction's functions left, before COMMIT."""

    def forget(self) -> None:
        """The transaction did not commit: drop what its functions left."""


@dataclass
class _Write(Generic[T]):
    fn: Callable[[sqlite3.Connection], T]
    future: asyncio.Future[T]
    then: Callable[[T], object] | None
    fence: Fence | None = None
    late: bool = False
    """Run at the end of its batch: it takes a lock every plane waits on."""
    outcome: tuple[bool, Any] = field(default=(False, None))
    """(True, value) once run, or (False, the exception)."""


class Database:
    """The writer (a thread that owns its connection) and the reader."""

    path: Path

    def __init__(self, writer: Any, reader: Any) -> None:
        # The engine's connections: sqlite3's and aiosqlite's here, their
        # PostgreSQL counterparts in plane/postgres.py (the same few methods).
        self._writer = writer
        self._reader = reader
        self._loop = asyncio.get_running_loop()
        self._queue: queue.SimpleQueue[_Write[Any] | None] = queue.SimpleQueue()
        self._stopped: asyncio.Future[None] = self._loop.create_future()
        self._closing = False
        self._finishers: list[Finisher] = []
        self.counts = Counts()
        self._thread = threading.Thread(target=self._serve, name="plane-db-writer", daemon=True)
        self._thread.start()

    @classmethod
    async def open(cls, path: Path) -> Database:
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
            reader = await aiosqlite.connect(path, isolation_level=None)
        except sqlite3.Error as exc:
            writer.close()
            raise refusal(path, exc) from None
        db = cls(writer, reader)
        db.path = path
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
        await reader.execute("PRAGMA busy_timeout=5000")
        # Every page read once (a fraction of a second for 100 MB): damage is
        # found now, with a sentence, not in the middle of a turn.
        verdict = await self.fetchall("PRAGMA quick_check")
        if [tuple(row) for row in verdict] != [("ok",)]:
            raise refusal(path, sqlite3.DatabaseError(str(verdict[0][0]) if verdict else "?"))
        await self._migrate(path)
        # The reader only reads: a write sent to it by mistake fails loudly.
        await reader.execute("PRAGMA query_only=ON")
        # A file the plane may read but not write (read-only, or on a read-only
        # mount) is found here, not at the first call's ledger entry.
        await self.write(_touch_version)

    async def close(self) -> None:
        """Finish the writes already asked for, then close both connections."""
        if not self._closing and self._thread.is_alive():
            self._closing = True
            self._queue.put(None)
            await asyncio.shield(self._stopped)
        await self._reader.close()

    @property
    def unreachable_since(self) -> datetime | None:
        """Since when the store cannot be reached (None: it can). A file in
        the plane's home is always there; PostgreSQL's says."""
        return None

    async def write(
        self,
        fn: Callable[[sqlite3.Connection], T],
        then: Callable[[T], object] | None = None,
        *,
        late: bool = False,
    ) -> T:
        """Run `fn(conn)` in a transaction of the writer's, and return what it
        returned once that transaction has committed (or raise what it
        raised, with nothing of it written). `fn` is synchronous, does only
        SQL, and may run twice (see the module's docstring).

        `then(value)` runs on the event loop as soon as the commit is known,
        in commit order, even if the caller was cancelled meanwhile: what a
        commit changes in memory (the ledger's day sums) follows every
        commit, and nothing reads it in between.

        The write carries the turn's fence (`FENCE`), checked in its own
        transaction. `late` runs it after the rest of its batch: a write that
        locks what every plane's writes wait on (the fleet's row) holds it
        only for the end of the transaction."""
        if self._closing:
            raise sqlite3.ProgrammingError("the database is closed")
        future: asyncio.Future[T] = self._loop.create_future()
        self.counts.writes += 1
        self._queue.put(_Write(fn, future, then, FENCE.get(), late))
        return await future

    def finish_with(self, finisher: Finisher) -> None:
        """Have `finisher` end every transaction: what the write functions of
        a batch left to write once (the ledger's sums) is written last, inside
        the transaction, on the writer."""
        self._finishers.append(finisher)

    async def fetchall(self, sql: str, *params: object) -> list[sqlite3.Row]:
        """One read, in one hop to the reader's thread: a statement left open
        across hops would hold its read snapshot, and another coroutine's read
        in between would see that older snapshot, not the last commit."""
        self.counts.reads += 1
        return list(await self._reader.execute_fetchall(sql, params))

    async def read_aside(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """`fn` run in a thread of its own on a read-only connection of its
        own: for a long read (a scrape summing the whole ledger) that would
        otherwise hold the reader every other read queues on, or the event
        loop while it adds up what it read. WAL lets it read beside the writer."""
        return await asyncio.to_thread(self._aside, fn)

    def _aside(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        conn = self._open_aside()
        try:
            return fn(conn)
        finally:
            conn.close()

    def _open_aside(self) -> sqlite3.Connection:
        conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA busy_timeout=5000")
        return conn

    async def fetchone(self, sql: str, *params: object) -> sqlite3.Row | None:
        rows = await self.fetchall(sql, *params)
        return rows[0] if rows else None

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

    # The writer thread: everything below runs there, and only there.

    def _serve(self) -> None:
        closing = False
        try:
            while not closing:
                first = self._queue.get()
                if first is None:
                    break
                batch = [first]
                while len(batch) < BATCH:
                    try:
                        item = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if item is None:
                        closing = True
                        break
                    batch.append(item)
                batch.sort(key=_is_late)  # stable: the rest keep their order
                try:
                    self._commit(batch)
                except Exception as exc:  # the connection failed (a refused ROLLBACK)
                    for item in batch:
                        item.outcome = (False, exc)
                self.counts.batches += 1
                self._loop.call_soon_threadsafe(self._deliver, batch)
        finally:
            self._writer.close()
            self._loop.call_soon_threadsafe(_settle_future, self._stopped)

    def _commit(self, batch: list[_Write[Any]]) -> None:
        """All of `batch` in one transaction; if any of it fails, each alone."""
        if len(batch) > 1 and self._transaction(batch):
            return
        for item in batch:
            self._transaction([item])

    def _transaction(self, batch: list[_Write[Any]]) -> bool:
        """Run `batch` in one transaction; True if it committed. A lone
        write's failure is its outcome; a batch's sends each to run alone."""
        conn = self._writer
        try:
            self._begin(conn)
            for item in batch:
                if item.fence is not None:
                    self._guard(conn, item.fence)
                item.outcome = (True, item.fn(conn))
            for finish in self._finishers:
                finish.write(conn)
            conn.execute("COMMIT")
        except Exception as exc:
            for finish in self._finishers:
                finish.forget()
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if len(batch) > 1:
                return False
            batch[0].outcome = (False, exc)
            return True
        self.counts.commits += 1
        return True

    def _begin(self, conn: Any) -> None:
        # IMMEDIATE: the write lock now, not at the first write, so a
        # transaction never fails half-way for another process's lock.
        conn.execute("BEGIN IMMEDIATE")

    def _guard(self, conn: Any, fence: Fence) -> None:
        """Refuse a write whose fence is stale. A store of one plane has no
        leases: nothing to check (PostgreSQL's checks, plane/postgres.py)."""

    # Back on the event loop.

    def _deliver(self, batch: list[_Write[Any]]) -> None:
        for item in batch:
            ok, value = item.outcome
            if ok and item.then is not None:
                try:
                    item.then(value)
                except Exception as exc:  # a bug of the caller's: its own error
                    log.exception("after a commit")
                    ok, value = False, exc
            if item.future.done():  # the caller was cancelled; the commit stands
                continue
            if ok:
                item.future.set_result(value)
            else:
                item.future.set_exception(value)


def _is_late(item: _Write[Any]) -> bool:
    return item.late


def _settle_future(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _connect_writer(path: Path) -> sqlite3.Connection:
    """The writer's connection: opened here, used only by the writer thread."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA busy_timeout=5000")
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
    for statement in _statements(script):
        conn.execute(statement)
    conn.execute(f"PRAGMA user_version = {step}")


def _touch_version(conn: sqlite3.Connection) -> None:
    """Rewrite the schema version as it is: a write that changes nothing,
    which a file the plane cannot write refuses."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    conn.execute(f"PRAGMA user_version = {version}")


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
