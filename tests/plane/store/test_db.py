"""The database on each engine (a real SQLite file, a real PostgreSQL): a
transaction is one function on the writer, reads never see what it has not
committed, and writes that arrive together share one commit without one's
failure costing the others."""

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from plane.clock import ManualClock
from plane.errors import StoreError
from plane.history.conversation import Conversation, CostLine
from plane.money.ledger import Ledger
from plane.store.engine import OPERATOR, Write
from plane.wire.protocol import Usage
from tests.support.fixtures_postgres import open_db, refuse

pytestmark = pytest.mark.usefixtures("each_store")
sqlite_only = pytest.mark.parametrize("each_store", ["sqlite"], indirect=True)

NOON = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


@pytest.fixture
async def db(tmp_path):
    db = await open_db(tmp_path / "plane.db")
    yield db
    await db.close()


def committed(db, path, sql: str) -> list[tuple]:
    """What another connection (another process) reads: only what was committed."""
    url = getattr(db, "url", None)
    if url is None:
        with sqlite3.connect(path) as raw:
            return [tuple(row) for row in raw.execute(sql)]
    import psycopg

    with psycopg.connect(url) as raw:
        return [tuple(row) for row in raw.execute(sql)]


def wal_frames(path) -> int:
    """Frames in the WAL since it was last reset: at least one per commit."""
    with sqlite3.connect(path) as raw:
        return raw.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1]


def reset_wal(path) -> None:
    with sqlite3.connect(path) as raw:
        raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")


LINE = CostLine("  $0.01 · 10 in · 0 out", Decimal("0.01"), Usage(input_tokens=10), False)


async def test_a_read_never_sees_a_write_that_is_rolled_back(tmp_path, db):
    """An answer is written, then its question marked answered, then its
    cost line, in one transaction; the second part is refused, so the
    answer never existed. Someone reading the conversation all the while
    never sees it."""
    conversation = Conversation(db, ManualClock(NOON))
    question = await conversation.append("demo", "operator", "hello?", waiting=True)
    await refuse(db, "UPDATE", "messages", "refused")
    seen: set[str] = set()
    done = asyncio.Event()

    async def read() -> None:
        while not done.is_set():
            seen.update(m.text for m in await conversation.history("demo"))

    async def answer() -> None:
        try:
            for _ in range(20):
                with pytest.raises(sqlite3.DatabaseError, match="refused"):
                    await conversation.end_turn("demo", "never said", [question.id], LINE)
        finally:
            done.set()

    await asyncio.gather(read(), read(), answer())
    assert seen == {"hello?"}
    assert [m.text for m in await conversation.history("demo")] == ["hello?"]


async def test_a_transaction_is_one_function_nothing_interleaves(db):
    """While a write function runs (here: paused inside its transaction),
    the event loop runs on, and reads see the last commit only."""
    inside, release = threading.Event(), threading.Event()

    def slow(conn):
        conn.execute("INSERT INTO notices (agent, day, kind) VALUES ('a', 'd', 'k')")
        inside.set()
        release.wait(5)

    writing = asyncio.ensure_future(db.write(slow))
    await asyncio.to_thread(inside.wait, 5)
    assert await db.fetchall("SELECT * FROM notices") == []
    release.set()
    await writing
    assert len(await db.fetchall("SELECT * FROM notices")) == 1


@sqlite_only
async def test_writes_that_arrive_together_share_a_commit(tmp_path, db):
    """Fifty agents' calls, opened and settled at once: far fewer commits
    than writes (one commit each would write at least a WAL frame each)."""
    ledger = Ledger(db, ManualClock(NOON))
    await ledger.spend_today("agent-0")  # the day is reached and read
    reset_wal(tmp_path / "plane.db")

    async def call(n: int) -> None:
        call = await ledger.open_call(f"agent-{n}", "p", "m", Decimal("0.02"), "estimate")
        await ledger.settle(call, Usage(input_tokens=10), Decimal("0.01"), "table")

    await asyncio.gather(*(call(n) for n in range(50)))
    assert wal_frames(tmp_path / "plane.db") < 100, "100 writes, not a commit each"
    spend = await ledger.spend_by_agent()
    assert spend == {f"agent-{n}": Decimal("0.01") for n in range(50)}


async def test_a_write_that_fails_in_a_batch_costs_the_others_nothing(tmp_path, db):
    """Writes queued behind a busy writer run as one batch; the one that
    raises gets its own error, with nothing of it written, and each of the
    others its own result, committed."""
    inside, release = threading.Event(), threading.Event()

    def hold(conn):
        inside.set()
        release.wait(5)

    def add(kind):
        def fn(conn):
            conn.execute("INSERT INTO notices (agent, day, kind) VALUES ('a', 'd', ?)", (kind,))
            if kind == "bad":
                raise ValueError("this one is wrong")
            return kind

        return fn

    held = asyncio.ensure_future(db.write(hold))
    await asyncio.to_thread(inside.wait, 5)
    kinds = ["one", "two", "bad", "three"]
    writes = [asyncio.ensure_future(db.write(add(kind))) for kind in kinds]
    await asyncio.sleep(0)
    commits = db.counts.commits
    release.set()
    await held
    results = await asyncio.gather(*writes, return_exceptions=True)
    assert results[:2] == ["one", "two"] and results[3] == "three"
    assert isinstance(results[2], ValueError)
    stored = {k for (k,) in committed(db, tmp_path / "plane.db", "SELECT kind FROM notices")}
    assert stored == {"one", "two", "three"}
    assert db.counts.commits - commits <= 4


async def test_what_a_write_returns_is_already_on_disk(tmp_path, db):
    ledger = Ledger(db, ManualClock(NOON))
    call = await ledger.open_call("demo", "p", "m", Decimal("0.05"), "estimate")
    [(status,)] = committed(
        db, tmp_path / "plane.db", f"SELECT status FROM calls WHERE id = {call}"
    )
    assert status == "pending"


async def test_after_a_commit_runs_even_when_the_caller_is_cancelled(db):
    """The ledger's sums in memory follow every commit, even one whose
    caller stopped waiting for it."""
    inside, release = threading.Event(), threading.Event()
    moved: list[int] = []

    def hold(conn):
        inside.set()
        release.wait(5)

    def add(conn):
        conn.execute("INSERT INTO notices (agent, day, kind) VALUES ('a', 'd', 'k')")
        return 7

    held = asyncio.ensure_future(db.write(hold))
    await asyncio.to_thread(inside.wait, 5)
    waiting = asyncio.ensure_future(db.write(add, then=moved.append))
    await asyncio.sleep(0)
    waiting.cancel()
    release.set()
    await held
    await db.write(lambda conn: None)
    assert moved == [7]
    assert len(await db.fetchall("SELECT * FROM notices")) == 1


class _Notice(Write[int]):
    """A write that is its own queue entry (as the ledger's are): fails its
    first try, commits its second."""

    __slots__ = ("after", "tries")

    def __init__(self) -> None:
        self.tries: list[int] = []
        self.after: list[int] = []

    def run(self, conn):
        self.tries.append(len(self.tries) + 1)
        conn.execute("INSERT INTO notices (agent, day, kind) VALUES ('a', 'd', 'k')")
        if len(self.tries) == 1:
            raise sqlite3.OperationalError("the store is away")
        return len(self.tries)

    def then(self, value):
        self.after.append(value)


async def test_a_write_put_again_after_it_failed_commits_once_with_a_new_future(db):
    """The ledger puts a settle again while the store is away: the try that
    failed wrote nothing and moved nothing in memory; the next is answered on
    a future of its own, committed once, and its after-commit step runs once."""
    notice = _Notice()
    first = db.put(notice)
    with pytest.raises(sqlite3.OperationalError, match="away"):
        await first
    second = db.put(notice)
    assert second is not first
    assert await second == 2
    assert (notice.tries, notice.after) == ([1, 2], [2])
    assert len(await db.fetchall("SELECT * FROM notices")) == 1


async def test_a_batch_puts_its_late_writes_last_the_rest_in_order(db):
    """A write that locks what every plane waits on runs at the end of its
    batch; the others keep the order they were put in."""
    inside, release = threading.Event(), threading.Event()
    ran: list[str] = []

    def hold(conn):
        inside.set()
        release.wait(5)

    def mark(name):
        return lambda conn: ran.append(name)

    held = asyncio.ensure_future(db.write(hold))
    await asyncio.to_thread(inside.wait, 5)
    names = ["late-1", "a", "b", "late-2", "c"]
    writes = [db.submit(mark(n), late=n.startswith("late")) for n in names]
    release.set()
    await asyncio.gather(held, *writes)
    assert ran == ["a", "b", "c", "late-1", "late-2"]


async def test_a_closed_database_refuses_writes(tmp_path):
    db = await open_db(tmp_path / "plane.db")
    await db.close()
    with pytest.raises(sqlite3.ProgrammingError):
        await db.write(lambda conn: None)


@sqlite_only  # sqlite3's cursors share the connection's cached statements
async def test_a_cursor_a_write_hands_back_is_closed_on_the_writer(db):
    """A cursor dropped on the loop's thread resets its statement there,
    while SQLite's statement cache may have handed that statement to the
    writer's next write: one such write in thousands failed ("bad parameter
    or other API misuse"). What a write hands back is closed on the writer;
    what it says (rowcount, lastrowid) stays readable."""
    await db.write(lambda conn: conn.execute("CREATE TABLE t (a INTEGER)"))
    cursor = await db.write(lambda conn: conn.executemany("INSERT INTO t VALUES (?)", [(1,), (2,)]))
    assert cursor.rowcount == 2
    with pytest.raises(sqlite3.ProgrammingError, match="closed cursor"):
        cursor.fetchall()


def number(n: int) -> Callable[[sqlite3.Connection], int]:
    return lambda conn: n


async def test_a_writer_that_dies_fails_every_write_waiting_and_refuses_the_next(tmp_path):
    """A fault of the writer thread's own (here a finisher that raises what
    no transaction catches) used to leave every write already queued, and
    every later one, waiting forever: a turn recording its cost hung, and
    with it the agent. Each now gets the store's error; a failure to record
    money stops the turn."""

    class Fatal:
        def write(self, conn):
            raise SystemExit("the writer's own fault")

        def forget(self):
            pass

    db = await open_db(tmp_path / "plane.db")
    try:
        db.finish_with(Fatal())
        waiting = [db.submit(number(n)) for n in range(20)]
        for write in waiting:
            with pytest.raises(StoreError, match="stopped"):
                await asyncio.wait_for(write, 5)
        with pytest.raises(StoreError, match="stopped"):
            await asyncio.wait_for(db.write(lambda conn: 42), 5)
    finally:
        await asyncio.wait_for(db.close(), 5)


@sqlite_only  # PostgreSQL answers a COMMIT outside a transaction with a warning only
async def test_a_write_the_connection_cannot_undo_is_answered_not_left_waiting(db):
    """A function that ends its own transaction leaves nothing to roll back
    or commit: its caller gets the error, and the writer goes on."""

    def breaks(conn):
        conn.execute("COMMIT")
        conn.execute("BEGIN")
        conn.execute("ROLLBACK")

    with pytest.raises(sqlite3.Error):
        await asyncio.wait_for(db.write(breaks), 5)
    assert await db.write(lambda conn: 42) == 42


async def test_the_operators_write_goes_before_a_thousand_queued(db):
    """A write made while the plane serves an operator's request (`OPERATOR`)
    is taken before the agents' writes already queued, in a transaction of
    its own; theirs keep their order."""
    entered, release = threading.Event(), threading.Event()
    order: list[object] = []

    def stall(conn):
        entered.set()
        release.wait(30)

    def noted(what: object):
        return lambda conn: order.append(what)

    stalled = asyncio.ensure_future(db.write(stall))
    assert await asyncio.to_thread(entered.wait, 10)
    agents = [asyncio.ensure_future(db.write(noted(n))) for n in range(1000)]
    await asyncio.sleep(0)
    token = OPERATOR.set(True)
    try:
        operator = asyncio.ensure_future(db.write(noted("operator")))
    finally:
        OPERATOR.reset(token)
    await asyncio.sleep(0)
    release.set()
    await asyncio.gather(stalled, operator, *agents)
    assert order == ["operator", *range(1000)]


LONG_READ = (
    "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 2000000)"
    " SELECT count(*) AS n FROM n"
)
"""A read that keeps a reader busy most of a second (two million rows counted)."""


async def test_the_operators_write_commits_inside_a_batch_in_flight(tmp_path, db):
    """The agents' batch is being run (its first write holds the writer) when
    a write of the operator's is made: the batch commits what it ran, the
    operator's commits next, the rest of the batch after. Another connection,
    reading from inside the batch's last write, already sees the operator's.
    Counted, not timed."""
    stalled, go = threading.Event(), threading.Event()
    running, release = threading.Event(), threading.Event()
    seen: list[tuple] = []

    def add(kind):
        return lambda conn: conn.execute(
            "INSERT INTO notices (agent, day, kind) VALUES ('a', 'd', ?)", (kind,)
        )

    def stall(conn):
        stalled.set()
        go.wait(30)

    def first(conn):
        add("agents-first")(conn)
        running.set()
        release.wait(30)

    def last(conn):
        seen.extend(committed(db, tmp_path / "plane.db", "SELECT kind FROM notices"))

    held = db.submit(stall)
    assert await asyncio.to_thread(stalled.wait, 10)
    batch = [db.submit(first), *(db.submit(add(f"agent-{n}")) for n in range(50)), db.submit(last)]
    commits = db.counts.commits
    go.set()
    assert await asyncio.to_thread(running.wait, 10)
    token = OPERATOR.set(True)
    try:
        operator = db.submit(add("operator"))
    finally:
        OPERATOR.reset(token)
    release.set()
    await asyncio.gather(held, operator, *batch)
    assert ("operator",) in seen, "committed before the batch's last write ran"
    assert ("agent-49",) not in seen, "the rest of the batch is its own transaction"
    assert db.counts.commits - commits == 4  # stall, the batch's head, the operator's, its rest
    rows = committed(db, tmp_path / "plane.db", "SELECT kind FROM notices")
    assert len(rows) == 52


@sqlite_only
async def test_the_operators_read_does_not_queue_behind_the_agents(db):
    """While the agents' reader is held (a read that takes long), a read
    made for the operator's request is answered on a reader of its own."""
    held = asyncio.ensure_future(db.fetchall(LONG_READ))
    await asyncio.sleep(0.05)
    token = OPERATOR.set(True)
    try:
        rows = await asyncio.wait_for(db.fetchall("SELECT 1 AS one"), 10)
    finally:
        OPERATOR.reset(token)
    assert not held.done(), "answered while the agents' read still runs"
    assert [row["one"] for row in rows] == [1]
    assert [row["n"] for row in await held] == [2_000_000]


@sqlite_only
async def test_a_write_waits_out_another_processs_write_a_moment(tmp_path, db):
    """Another process writing to the file a moment (its write lock held: the
    sqlite3 shell, a script) delays the plane's writes; none fails for it,
    and the plane reads meanwhile."""
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        other = sqlite3.connect(tmp_path / "plane.db", isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")
            holding.set()
            release.wait(10)
            other.execute("COMMIT")
        finally:
            other.close()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        await asyncio.to_thread(holding.wait, 10)
        write = asyncio.ensure_future(db.write(lambda conn: conn.execute("DELETE FROM calls")))
        read = await db.fetchall("SELECT COUNT(*) AS n FROM calls")
        await asyncio.sleep(0.3)  # the write has met the lock by now
        release.set()
        await write
    finally:
        release.set()
        await asyncio.to_thread(holder.join, 10)
    assert [row["n"] for row in read] == [0]
