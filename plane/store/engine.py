"""The store's design, shared by both engines: one writer that owns its connection, one reader.

**One writer that owns its connection** (as datasette's write connection):
`await db.write(fn)` hands `fn(conn)`, a synchronous function, to the writer
thread, which runs it inside `BEGIN` … `COMMIT`. A transaction is
one function in one thread hop, so no coroutine can run in the middle of
one, and none can read what it has not committed: reads go to a second
connection (`fetchall`, `fetchone`), which reads the last commit
while the writer writes.

**Group commit.** Writes that arrive while the writer is busy wait in its
queue; the next transaction takes all of them, one after another, and
commits once. Each caller's future is resolved only after that commit, so
nothing written is shown before it is on disk, and a crash loses nothing
that was shown. A function that raises takes only itself out: the batch is
rolled back and each of its functions runs again alone, so the failure is
its caller's and the others commit. That is why a write function must do
nothing but SQL on the connection it is given: it may run twice.

**The operator's writes first.** A write made while the plane serves an
operator's request (`OPERATOR` set: a `/limit`, a pause, a message) does
not queue behind the agents' traffic: the writer takes it, with any other
of the operator's, as a transaction of its own before the next batch of the
agents' writes. With 1,000 agents busy the queue holds hundreds of writes,
and a batch of them takes long while the event loop holds the interpreter
between the writer's statements: so a batch in flight, between two of its
writes, commits what it has run when one of the operator's arrives, lets
that commit next, and goes on in a transaction of its own. An operator's
write waits for one of the agents' writes and a commit, not for a batch.

**Writes hurried after the fact.** A task whose writes the operator may
need behind them (a turn the operator cuts: what it cost is told once all it
queued is written) keeps the writes it puts (`KEPT`), and `Database.expedite`
moves those not yet begun into the operator's lane. Each write runs once, in
whichever lane reaches it first, and every commit is handed back to the loop
in commit order, so what a later write of the operator's sees in memory is
what the store holds.

An engine (plane/store/sqlite.py, plane/store/postgres.py) gives the
connections and says how a transaction begins, how a write's fence is
checked, how a read is made and where a long read goes aside.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import enum
import logging
import operator
import queue
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Generic, Protocol, TypeVar

from plane.errors import StoreError
from plane.store.fence import FENCE, Fence

log = logging.getLogger(__name__)

T = TypeVar("T")

BATCH = 256
"""At most this many writes share one commit: a bound on how long the first
of them waits for the last."""

OPERATOR: contextvars.ContextVar[bool] = contextvars.ContextVar("plane_operator", default=False)
"""Set while the plane serves an operator's request (`Api.handle`): its
writes go ahead of the agents' (see the module's docstring). A context
variable, as `FENCE` is, so every layer the request goes through carries it
without passing it on; a worker's task starts in a context of its own, so an
agent made by a request does not inherit it."""


KEPT: contextvars.ContextVar[list[Write[Any]] | None] = contextvars.ContextVar(
    "plane_kept", default=None
)
"""Set to a list in a task whose writes may have to be hurried
(`Database.expedite`): each write put from it is added (those already begun
are let go as it grows)."""

_OPERATORS = contextvars.Context()
_OPERATORS.run(OPERATOR.set, True)
"""The context the operator's writes are answered in: a loop that serves
the operator first (`plane.daemon.loop`) runs their answer first too."""


class _Nudge(enum.Enum):
    """Put on the writer's queue to wake it for a write of the operator's."""

    NUDGE = enum.auto()


_NUDGE: Final = _Nudge.NUDGE
"""The one nudge: told apart from a write by identity (`is`), not an isinstance call a write."""

_TAKES = range(BATCH - 1)


@dataclass
class Counts:
    """What the database has done, for the benchmark: writes asked for (and
    how many of them were the operator's), batches the writer took (a thread
    hop each, there and back), transactions committed, reads answered (on
    the reader's thread)."""

    writes: int = 0
    operators: int = 0
    batches: int = 0
    commits: int = 0
    reads: int = 0


class Finisher(Protocol):
    """The last part of every transaction (see `Database.finish_with`)."""

    def write(self, conn: sqlite3.Connection) -> None:
        """Write what this transaction's functions left, before COMMIT."""

    def forget(self) -> None:
        """The transaction did not commit: drop what its functions left."""


class Write(Generic[T]):
    """One write on the writer's queue: `run` on the writer, inside its
    transaction (SQL only: it may run twice, see the module's docstring), and
    `then` on the event loop once that transaction committed (see
    `Database.write`). `Database.submit` makes one of a function; a caller on
    the hot path (the ledger, two writes a call) is one itself (`Database.put`):
    one object a write, not its own, the engine's and two bound methods."""

    __slots__ = ("fence", "future", "late", "outcome", "owner")

    future: asyncio.Future[T]
    fence: Fence | None
    """The turn's fence when it was put (`FENCE`), checked in its transaction."""
    late: bool
    """Run at the end of its batch: it takes a lock every plane waits on."""
    outcome: tuple[bool, Any]
    """(True, value) once run, or (False, the exception)."""
    owner: object
    """Who runs it, set on the writer only: None while queued, the pass (its
    batch) that began it, `_HANDED` once its outcome went back to the loop."""

    def run(self, conn: sqlite3.Connection) -> T:
        raise NotImplementedError

    def then(self, value: T) -> object:
        """What the commit changes in memory: nothing, unless overridden."""
        return None


_UNRUN: tuple[bool, Any] = (False, None)

_HANDED = object()
"""A write's `owner` once its outcome is on its way back to the loop."""

_LATE = operator.attrgetter("late")


class _KeptCursor(sqlite3.Cursor):
    """The writer's own cursor (`Database.statements`): kept open when a write
    function hands it back (its `execute`'s value), closed when the writer stops."""


class _Call(Write[T]):
    """A write function, and what runs after its commit (`Database.submit`)."""

    __slots__ = ("after", "fn")

    def __init__(
        self, fn: Callable[[sqlite3.Connection], T], after: Callable[[T], object] | None
    ) -> None:
        self.fn = fn
        self.after = after

    def run(self, conn: sqlite3.Connection) -> T:
        value = self.fn(conn)
        if isinstance(value, sqlite3.Cursor) and not isinstance(value, _KeptCursor):
            # A cursor handed back (a function that is `conn.execute(...)`) is
            # closed here, on the writer: dropped on the loop's thread, it would
            # reset its statement there, a statement SQLite's cache may have
            # handed to the writer's next write meanwhile (sqlite3's
            # "InterfaceError: bad parameter or other API misuse", a write
            # failed that was not at fault). Its rowcount and lastrowid stay.
            value.close()
        return value

    def then(self, value: T) -> object:
        return None if self.after is None else self.after(value)


class Database(ABC):
    """The writer (a thread that owns its connection) and the reader."""

    def __init__(self, writer: Any, reader: Any) -> None:
        # The engine's connections: sqlite3's and aiosqlite's (plane/store/sqlite.py),
        # their PostgreSQL counterparts (plane/store/postgres.py): the same few methods.
        self._writer = writer
        self._reader = reader
        self._loop = asyncio.get_running_loop()
        self._queue: queue.SimpleQueue[Write[Any] | _Nudge | None] = queue.SimpleQueue()
        self._first: collections.deque[Write[Any]] = collections.deque()
        """The operator's writes (`OPERATOR`): taken before the queue's."""
        self._hurried = False
        """Writes were hurried (`expedite`): a batch may hold some another lane ran."""
        self._stopped: asyncio.Future[None] = self._loop.create_future()
        self._closing = False
        self._broken: str | None = None
        """Why the writer thread stopped on a fault of its own (None: it did not)."""
        self._finishers: list[Finisher] = []
        self._cursor: _KeptCursor | None = None
        """The writer's own cursor (`statements`), made and closed on its thread."""
        self.runner: Any = None
        """`statements` of the writer's connection, set on its thread as it
        starts: what a write on the hot path (the ledger's two a call) runs
        its statements on, read as an attribute, not asked for by a call."""
        self.counts = Counts()
        self._thread = threading.Thread(target=self._serve, name="plane-db-writer", daemon=True)
        self._thread.start()

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
        return await self.submit(fn, then, late=late)

    def submit(
        self,
        fn: Callable[[sqlite3.Connection], T],
        then: Callable[[T], object] | None = None,
        *,
        late: bool = False,
    ) -> asyncio.Future[T]:
        """`write`, as the future it awaits: for a caller on the hot path (the
        ledger, two writes a call), one coroutine frame fewer to suspend and
        resume. Cancelling the future leaves the write to commit, as
        cancelling `write` does."""
        return self.put(_Call(fn, then), late=late)

    def put(self, write: Write[T], *, late: bool = False) -> asyncio.Future[T]:
        """`submit`, for a write that is its own `Write` (its function and
        its `then` as methods). A write put again (tried anew once the
        first try failed) gets a new future."""
        if self._closing:
            raise sqlite3.ProgrammingError("the database is closed")
        if self._broken:  # not `is not None`: mypy would then take the check after the put for dead
            raise StoreError(self._broken)
        future: asyncio.Future[T] = asyncio.Future(loop=self._loop)  # create_future's body
        write.future = future
        write.fence = FENCE.get()
        write.late = late
        write.outcome = _UNRUN
        write.owner = None
        self.counts.writes += 1
        kept = KEPT.get()
        if kept is not None:
            if len(kept) >= BATCH:  # those begun are past hurrying
                kept[:] = [w for w in kept if w.owner is None]
            kept.append(write)
        if OPERATOR.get():
            self.counts.operators += 1
            self._first.append(write)  # deque: safe across threads
            self._queue.put(_NUDGE)
        else:
            self._queue.put(write)
        if self._broken is not None:  # the writer stopped while this was put
            self._answer_if_stopped()
        return future

    def expedite(self, writes: list[Write[Any]]) -> None:
        """Have the writes of `writes` not yet begun run next, in the
        operator's lane, before any write put after this call (and before
        the agents' writes queued with them). Each still runs once: a write
        the writer began meanwhile is left where it is, and commits first."""
        waiting = [w for w in writes if w.owner is None]  # read across threads: see `_commit`
        if waiting:
            self._hurried = True
            self._first.extend(waiting)  # deque: safe across threads
            self._queue.put(_NUDGE)

    def _answer_if_stopped(self) -> None:
        """The writer stopped on its thread while a write was being put: what
        it left queued is answered here, not left waiting."""
        self._deliver(self._told_stopped(self._drain()))

    def statements(self, conn: Any) -> Any:
        """What runs a write's one-row statements on `conn`, on the writer's
        thread: on SQLite's writer connection a cursor kept for it (each
        `conn.execute` makes a cursor and registers a weak reference to it,
        ~0.2 us of the two statements a call costs the ledger), closed on this
        thread when the writer stops; any other connection itself."""
        kept = self._cursor
        if kept is not None and conn is self._writer:  # every write but the first
            return kept
        if conn is not self._writer or type(conn) is not sqlite3.Connection:
            return conn
        self._cursor = kept = conn.cursor(_KeptCursor)
        return kept

    def finish_with(self, finisher: Finisher) -> None:
        """Have `finisher` end every transaction: what the write functions of
        a batch left to write once (the ledger's sums) is written last, inside
        the transaction, on the writer."""
        self._finishers.append(finisher)

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

    async def fetchone(self, sql: str, *params: object) -> sqlite3.Row | None:
        rows = await self.fetchall(sql, *params)
        return rows[0] if rows else None

    # The writer thread: everything below runs there, and only there.

    def _serve(self) -> None:
        closing = False
        batch: list[Write[Any]] = []
        try:
            self.runner = self.statements(self._writer)
            while not closing:
                first = self._queue.get()
                if first is None:
                    break
                self._run_first()
                batch = [] if first is _NUDGE else [first]
                take, add = self._queue.get_nowait, batch.append  # once a batch, not a write
                # At most BATCH taken (a nudge counts as one): a count, not
                # the batch's length measured again at every write.
                for _ in _TAKES:
                    try:
                        item = take()
                    except queue.Empty:
                        break
                    if item is None:
                        closing = True
                        break
                    if item is not _NUDGE:
                        add(item)
                self._run_first()  # those that came while the batch was taken
                if batch:
                    running, batch = batch, []
                    self._run(running)
            self._run_first()
        except BaseException as exc:  # logged and told by `_fail`: the thread ends here
            self._fail(exc, batch)
        finally:
            if self._cursor is not None:
                self._cursor.close()  # here: its statement is reset on this thread
            self._writer.close()
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                self._loop.call_soon_threadsafe(_settle_future, self._stopped)

    def _fail(self, exc: BaseException, batch: list[Write[Any]]) -> None:
        """A fault of the writer's own, not a write's (those are each write's
        outcome): `batch`, every write still queued and every later one is
        told so, rather than left waiting for a writer that is gone (a turn
        recording its cost would hang, and its agent with it)."""
        if self._broken is None:
            log.error("the store's writer stopped", exc_info=exc)
            self._broken = f"The store's writer stopped ({exc!r}); restart the plane."
        failed = self._told_stopped([*batch, *self._drain()])
        if failed:
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._deliver, failed)

    def _told_stopped(self, writes: list[Write[Any]]) -> list[Write[Any]]:
        """`writes` not handed back yet (a hurried write may be listed twice),
        each failed with why the writer stopped."""
        left: list[Write[Any]] = []
        for item in writes:
            if item.owner is not _HANDED:
                item.owner = _HANDED
                item.outcome = (False, StoreError(self._broken))
                left.append(item)
        return left

    def _drain(self) -> list[Write[Any]]:
        """Every write still queued, taken off the queues."""
        drained: list[Write[Any]] = []
        while self._first:
            drained.append(self._first.popleft())
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if isinstance(item, Write):
                drained.append(item)
        return drained

    def _run_first(self) -> None:
        """The operator's writes waiting now, as a transaction of their own."""
        batch: list[Write[Any]] = []
        while self._first and len(batch) < BATCH:
            batch.append(self._first.popleft())
        if batch:
            self._run(batch, _OPERATORS.copy())

    def _run(self, batch: list[Write[Any]], context: contextvars.Context | None = None) -> None:
        """Commit `batch` and hand its outcomes back to the loop. The agents'
        batch (no `context`) steps aside for the operator's writes."""
        # To the end; the rest keep their order (`map`: a generator would be a frame a write).
        if any(map(_LATE, batch)):
            batch[:] = [w for w in batch if not w.late] + [w for w in batch if w.late]
        try:
            try:
                self._commit(batch, context, yields=context is None)
            except Exception as exc:  # the connection failed (a refused ROLLBACK)
                left = [w for w in batch if w.owner is None or w.owner is batch]
                for item in left:
                    item.outcome = (False, exc)
                self._hand_back(left, context)
            self.counts.batches += 1
        except BaseException as exc:  # the writer's own: this batch is told it failed
            self._fail(exc, batch)
            raise

    def _commit(
        self, batch: list[Write[Any]], context: contextvars.Context | None, *, yields: bool
    ) -> None:
        """All of `batch` in one transaction; if any of it fails, each alone.
        `yields`: an operator's write that arrives meanwhile ends the
        transaction after the write running now, and commits next. Each part
        is handed back as it commits, before the operator's writes that
        follow it run: the loop learns of commits in their order.

        `batch` is the pass that owns what it runs. A write hurried into the
        operator's lane (`expedite`) is run by whichever pass begins it
        first; the operator's run only between this pass's transactions, so
        what another pass took is left out before each one."""
        rest = batch
        while True:
            if self._hurried:
                rest = [w for w in rest if w.owner is None or w.owner is batch]
            if len(rest) < 2:
                break
            ran = self._transaction(rest, yields, batch)
            if not ran:
                break
            self._hand_back(rest if ran == len(rest) else rest[:ran], context)
            rest = rest[ran:]
            if rest:
                self._run_first()
        for n, item in enumerate(rest, 1):
            if item.owner is not None and item.owner is not batch:
                continue  # hurried, and run by the operator's lane meanwhile
            self._transaction([item], False, batch)
            self._hand_back([item], context)
            # Those a failed transaction began run again first, as one:
            # hurried meanwhile, they were left to commit where they began.
            if yields and (n == len(rest) or rest[n].owner is not batch):
                self._run_first()

    def _hand_back(self, writes: list[Write[Any]], context: contextvars.Context | None) -> None:
        """`writes`' outcomes to the loop (committed, or each failed)."""
        for item in writes:
            item.owner = _HANDED
        self._loop.call_soon_threadsafe(self._deliver, writes, context=context)

    def _transaction(self, batch: list[Write[Any]], yields: bool, owner: object) -> int:
        """Run `batch` in one transaction, or its head if `yields` and an
        operator's write arrived meanwhile: how many of it committed (0: a
        batch failed, each of it is to run alone; a lone write's failure is
        its outcome). Each write is `owner`'s once begun, and stays so when
        the batch fails: `expedite` leaves it to commit where it began."""
        conn, first = self._writer, self._first
        ran = 0
        try:
            self._begin(conn)
            for item in batch:
                if yields and ran and first:
                    break
                item.owner = owner
                if item.fence is not None:
                    self._guard(conn, item.fence)
                item.outcome = (True, item.run(conn))
                ran += 1
            for finish in self._finishers:
                finish.write(conn)
            conn.execute("COMMIT")
        except Exception as exc:
            for finish in self._finishers:
                finish.forget()
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if len(batch) > 1:
                return 0
            batch[0].outcome = (False, exc)
            return 1
        self.counts.commits += 1
        return ran

    # The engine's own part.

    @abstractmethod
    async def fetchall(self, sql: str, *params: object) -> list[sqlite3.Row]:
        """One read, on the reader: its own snapshot, the last commit."""

    @abstractmethod
    def _open_aside(self) -> sqlite3.Connection:
        """A read-only connection of its own, for `read_aside`."""

    @abstractmethod
    def _begin(self, conn: Any) -> None:
        """Begin the writer's transaction."""

    @abstractmethod
    def _guard(self, conn: Any, fence: Fence) -> None:
        """Refuse a write whose fence is stale (`LeaseLost`)."""

    # Back on the event loop.

    def _deliver(self, batch: list[Write[Any]]) -> None:
        for item in batch:
            ok, value = item.outcome
            future = item.future
            if ok:
                try:
                    item.then(value)
                except Exception as exc:  # a bug of the caller's: its own error
                    log.exception("after a commit")
                    ok, value = False, exc
                else:
                    if not future.done():  # done: the caller was cancelled; the commit stands
                        future.set_result(value)
                    continue
            if not future.done():
                future.set_exception(value)


def _settle_future(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
