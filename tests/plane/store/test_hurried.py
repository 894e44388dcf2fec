"""Writes hurried after the fact (`Database.expedite`), on each engine: a
write already queued behind the agents' traffic is moved into the operator's
lane, runs there once, and every commit reaches the loop in commit order.
Counted and ordered, never timed: the writer is held inside a write (a slow
disk) while the queue fills."""

import asyncio
import contextvars
import threading
from collections.abc import Callable
from typing import Any

import pytest

from plane.store.engine import KEPT, OPERATOR, Write
from tests.support.fixtures_postgres import open_db

pytestmark = pytest.mark.usefixtures("each_store")

QUEUED = 500


@pytest.fixture
async def db(tmp_path):
    db = await open_db(tmp_path / "plane.db")
    yield db
    await db.close()


class Held:
    """The writer held inside a write until `release`."""

    def __init__(self) -> None:
        self.entered, self.release = threading.Event(), threading.Event()

    def __call__(self, conn: object) -> None:
        self.entered.set()
        self.release.wait(30)


def noted(order: list[object], what: object) -> Callable[[object], object]:
    """A write that notes, on the writer, that it ran."""

    def write(conn: object) -> object:
        order.append(what)
        return what

    return write


def kept_write(db, fn: Callable[[object], object], then: Callable[[object], object]):
    """`fn` written from a task whose writes are kept (`KEPT`), as a turn's
    are: the future, and the list the write was added to."""
    kept: list[Write[Any]] = []
    context = contextvars.copy_context()
    context.run(KEPT.set, kept)
    future = context.run(db.submit, fn, then)
    return future, kept


def as_operator(db, fn: Callable[[object], object], then=None) -> asyncio.Future[object]:
    token = OPERATOR.set(True)
    try:
        return db.submit(fn, then)
    finally:
        OPERATOR.reset(token)


async def test_a_hurried_write_runs_ahead_of_the_agents_queue_and_once(db):
    order: list[object] = []
    told: list[object] = []
    held = Held()
    stalled = db.submit(held)
    assert await asyncio.to_thread(held.entered.wait, 10)
    ahead = [db.submit(noted(order, n)) for n in range(QUEUED)]
    kept, writes = kept_write(db, noted(order, "kept"), told.append)
    behind = [db.submit(noted(order, n)) for n in range(QUEUED, 2 * QUEUED)]
    assert len(writes) == 1

    db.expedite(writes)
    operator = as_operator(db, noted(order, "operator"), told.append)
    held.release.set()
    await asyncio.gather(stalled, *ahead, *behind)

    assert await kept == "kept" and await operator == "operator"
    assert order == ["kept", "operator", *range(2 * QUEUED)]
    assert told == ["kept", "operator"], "each told once, in commit order"


async def test_a_hurried_write_the_writer_began_commits_where_it_began(db):
    """Hurried while the writer is inside it: it runs once, and commits
    before the operator's write that came after it."""
    order: list[object] = []
    told: list[object] = []
    held = Held()

    def slow(conn: object) -> str:
        held(conn)
        order.append("kept")
        return "kept"

    kept, writes = kept_write(db, slow, told.append)
    assert await asyncio.to_thread(held.entered.wait, 10)
    queued = [db.submit(noted(order, n)) for n in range(QUEUED)]
    db.expedite(writes)
    operator = as_operator(db, noted(order, "operator"), told.append)
    held.release.set()
    await asyncio.gather(*queued)

    assert await kept == "kept" and await operator == "operator"
    assert order[:2] == ["kept", "operator"] and order.count("kept") == 1
    assert told == ["kept", "operator"]


async def test_a_batch_that_commits_in_parts_is_told_in_commit_order(db):
    """The agents' batch is in flight when the operator's write comes: its
    head commits, the operator's next, then its rest. What each commit
    changes in memory (`then`) follows that order: an operator's write sees
    what the store holds, never a commit it has not been told of."""
    told: list[object] = []
    running, release = threading.Event(), threading.Event()
    held = Held()
    stalled = db.submit(held)
    assert await asyncio.to_thread(held.entered.wait, 10)

    def first(conn: object) -> str:
        running.set()
        release.wait(30)
        return "head"

    batch = [db.submit(first, told.append)]
    batch += [db.submit(noted([], n), told.append) for n in range(50)]
    held.release.set()
    assert await asyncio.to_thread(running.wait, 10)
    operator = as_operator(db, noted([], "operator"), told.append)
    release.set()
    await asyncio.gather(stalled, operator, *batch)

    assert told == ["head", "operator", *range(50)]


async def test_a_hurried_write_begun_by_a_batch_that_fails_still_commits_before_the_operator(db):
    """The agents' batch has begun the kept write when it is hurried, and a
    later write of that batch fails: the batch runs again a write at a time.
    The kept write still commits before the operator's write put after the
    hurry (a cut told before a write of the turn it cut); the operator's
    write came between the first write and the kept one."""
    told: list[object] = []
    held = Held()
    stalled = db.submit(held)
    assert await asyncio.to_thread(held.entered.wait, 10)
    first = db.submit(noted([], "first"), told.append)
    kept, writes = kept_write(db, noted([], "kept"), told.append)
    running, release = threading.Event(), threading.Event()

    def failing(conn: object) -> None:
        running.set()
        release.wait(30)
        raise ValueError("a write that fails")

    failed = db.submit(failing, told.append)
    held.release.set()
    assert await asyncio.to_thread(running.wait, 10)  # the batch has begun the kept write
    db.expedite(writes)
    operator = as_operator(db, noted([], "operator"), told.append)
    release.set()
    await asyncio.gather(stalled, first, kept, operator)
    with pytest.raises(ValueError, match="a write that fails"):
        await failed

    assert told == ["first", "kept", "operator"]
