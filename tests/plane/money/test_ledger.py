"""The ledger on each engine (a real SQLite file, a real PostgreSQL): pending
before the call, settled after, interrupted (at its estimate) when the plane
died between the two."""

import asyncio
import threading
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest

from plane.clock import ManualClock
from plane.errors import AlreadyClosed, LedgerError
from plane.money.ledger import Interrupted, Ledger
from plane.store.migrations import MIGRATIONS
from plane.wire.protocol import Usage
from tests.support.fixtures_postgres import open_db, refuse
from tests.support.old_stores import sqlite_before

pytestmark = pytest.mark.usefixtures("each_store")
sqlite_only = pytest.mark.parametrize("each_store", ["sqlite"], indirect=True)

NOON = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
USAGE = Usage(input_tokens=1200, cache_read_tokens=1000, output_tokens=80)


@pytest.fixture
async def open_ledger(tmp_path):
    opened = []

    async def open_(clock):
        db = await open_db(tmp_path / "plane.db")
        opened.append(db)
        return db, Ledger(db, clock)

    yield open_
    for db in opened:
        await db.close()


async def test_a_pending_call_counts_its_estimate_and_settling_replaces_it(open_ledger):
    _, ledger = await open_ledger(ManualClock(NOON))
    call = await ledger.open_call("demo", "openai", "gpt-4o", Decimal("0.05"), "estimate")
    assert await ledger.spend_today("demo") == Decimal("0.05")
    await ledger.settle(call, USAGE, Decimal("0.0123"), "genai-prices")
    assert await ledger.spend_today("demo") == Decimal("0.0123")
    [entry] = await ledger.entries(date(2026, 11, 29))
    assert (entry.status, entry.usage, entry.price_source) == ("settled", USAGE, "genai-prices")


async def test_a_failed_call_costs_nothing(open_ledger):
    _, ledger = await open_ledger(ManualClock(NOON))
    call = await ledger.open_call("demo", "openai", "gpt-4o", Decimal("0.05"), "estimate")
    await ledger.fail(call)
    assert await ledger.spend_today("demo") == 0
    with pytest.raises(AlreadyClosed, match="already failed"):
        await ledger.settle(call, USAGE, Decimal(1), "x")


async def test_settled_calls_survive_a_restart(open_ledger):
    db, ledger = await open_ledger(ManualClock(NOON))
    for cost in ("0.10", "0.25"):
        call = await ledger.open_call("demo", "p", "m", Decimal("0.01"), "estimate")
        await ledger.settle(call, USAGE, Decimal(cost), "table")
    await db.close()
    _, again = await open_ledger(ManualClock(NOON))
    assert await again.recover() == {}
    assert await again.spend_today("demo") == Decimal("0.35")


async def test_a_call_in_flight_when_the_plane_died_keeps_its_estimate(open_ledger):
    db, ledger = await open_ledger(ManualClock(NOON))
    await ledger.open_call("demo", "p", "m", Decimal("0.07"), "estimate")
    await db.close()  # the process dies: no settle
    _, again = await open_ledger(ManualClock(NOON))
    assert await again.recover() == {"demo": Interrupted(calls=1, estimate_usd=Decimal("0.07"))}
    assert await again.spend_today("demo") == Decimal("0.07")
    [entry] = await again.entries(date(2026, 11, 29))
    assert (entry.status, entry.estimated) == ("interrupted", True)
    assert await again.recover() == {}  # never counted twice


async def test_a_call_is_charged_to_the_day_its_cost_became_known(open_ledger):
    clock = ManualClock(datetime(2026, 11, 29, 23, 59, 59, tzinfo=UTC))
    _, ledger = await open_ledger(clock)
    call = await ledger.open_call("demo", "p", "m", Decimal("0.50"), "estimate")
    await clock.advance(timedelta(seconds=2))
    await ledger.settle(call, USAGE, Decimal("0.20"), "table")
    assert await ledger.spend_by_agent(date(2026, 11, 29)) == {"demo": Decimal(0)}
    assert await ledger.spend_today("demo") == Decimal("0.20")
    assert [e.day for e in await ledger.entries(date(2026, 11, 30))] == [date(2026, 11, 30)]


async def test_a_clock_that_jumps_back_keeps_the_later_day(open_ledger):
    """The plane's day never goes back: the later day's spend goes on
    counting, and new spend is charged to it, until the clock passes it."""
    clock = ManualClock(NOON)
    _, ledger = await open_ledger(clock)
    call = await ledger.open_call("demo", "p", "m", Decimal("0.01"), "estimate")
    await ledger.settle(call, USAGE, Decimal("0.30"), "table")
    await clock.advance(timedelta(days=1))
    assert await ledger.spend_today("demo") == 0
    await clock.advance(timedelta(days=-1))
    assert await ledger.today() == date(2026, 11, 30)
    assert await ledger.spend_today("demo") == 0, "the 29th is closed, not reopened"
    call = await ledger.open_call("demo", "p", "m", Decimal("0.01"), "estimate")
    await ledger.settle(call, USAGE, Decimal("0.05"), "table")
    assert [e.day for e in await ledger.entries(date(2026, 11, 30))] == [date(2026, 11, 30)]
    assert await ledger.spend_by_agent(date(2026, 11, 29)) == {"demo": Decimal("0.30")}
    assert ledger.days_behind() == (date(2026, 11, 29), date(2026, 11, 30))
    await clock.advance(timedelta(days=1))  # the clock reaches the 30th: nothing new
    assert await ledger.spend_today("demo") == Decimal("0.05")
    assert ledger.days_behind() is None


@pytest.mark.parametrize("charged", [True, False])
async def test_the_later_day_holds_across_a_restart_with_the_clock_back(open_ledger, charged):
    """Whether or not anything was charged on the later day, a plane started
    with the clock a day back stays on it."""
    clock = ManualClock(NOON + timedelta(days=1))
    db, ledger = await open_ledger(clock)
    if charged:
        call = await ledger.open_call("demo", "p", "m", Decimal("0.01"), "estimate")
        await ledger.settle(call, USAGE, Decimal("0.40"), "table")
    else:
        await ledger.spend_today("demo")  # the 30th is seen (the gate asks)
    await db.close()
    _, again = await open_ledger(ManualClock(NOON))
    assert await again.today() == date(2026, 11, 30)
    assert await again.spend_today("demo") == (Decimal("0.40") if charged else 0)


async def test_a_call_swept_while_in_flight_is_not_settled_again(open_ledger):
    """A call another plane counted at its estimate (its plane taken for
    dead): the late settle is refused in the ledger's words, and the
    estimate stays counted, once."""
    db, ledger = await open_ledger(ManualClock(NOON))
    call = await ledger.open_call("demo", "p", "m", Decimal("0.05"), "estimate")
    await ledger.recover()  # the sweep of a plane that took the agent, as at a start
    with pytest.raises(LedgerError, match=f"Call {call} was already counted at its estimate"):
        await ledger.settle(call, Usage(input_tokens=10), Decimal("0.01"), "table")
    [(status, cost)] = await db.fetchall("SELECT status, cost_usd FROM calls")
    assert (status, Decimal(cost)) == ("interrupted", Decimal("0.05"))


async def test_a_call_cut_in_flight_counts_its_estimate_once(open_ledger):
    db, ledger = await open_ledger(ManualClock(NOON))
    call = await ledger.open_call("demo", "p", "m", Decimal("0.05"), "estimate")
    charge = await ledger.cut(call)
    assert charge.cost_usd == Decimal("0.05")
    assert await ledger.recover() == {}, "a cut call is not pending: no sweep counts it again"
    assert await ledger.spend_today("demo") == Decimal("0.05")
    [(status, estimated)] = await db.fetchall("SELECT status, estimated FROM calls")
    assert (status, estimated) == ("interrupted", 1)


async def test_a_cut_that_meets_a_call_its_answer_settled_counts_it_once(open_ledger):
    """The race of a call's answer and its cut (the lease running low, the
    operator's interrupt): the answer settles the call first, and the cut
    then finds it closed. That is `AlreadyClosed`, which the cut's caller
    takes as nothing left to cut: the call counts its cost once, and the
    operator's cut of the agent's calls still in flight counts each at its
    estimate. Before, a bare `ValueError` escaped the cut (a traceback, the
    turn failed as a bug in plane)."""
    db, ledger = await open_ledger(ManualClock(NOON))
    answered = await ledger.open_call("demo", "p", "m", Decimal("0.05"), "estimate")
    flying = await ledger.open_call("demo", "p", "m", Decimal("0.07"), "estimate")
    await ledger.settle(answered, USAGE, Decimal("0.01"), "table")
    with pytest.raises(AlreadyClosed, match=f"Call {answered} is already settled"):
        await ledger.cut(answered)
    assert await ledger.interrupt_open("demo") == Interrupted(1, Decimal("0.07"))
    assert await ledger.spend_today("demo") == Decimal("0.08")
    assert await spend_table(db) == await sums_of_calls(db)
    statuses = await db.fetchall("SELECT id, status, cost_usd FROM calls ORDER BY id")
    assert [tuple(row) for row in statuses] == [
        (answered, "settled", "0.01"),
        (flying, "interrupted", "0.07"),
    ]


async def test_a_database_that_refuses_a_write_raises_ledger_error(open_ledger):
    db, ledger = await open_ledger(ManualClock(NOON))
    await refuse(db, "INSERT", "calls", "disk says no")
    with pytest.raises(LedgerError, match=r"could not be recorded in the ledger \(disk says no\)"):
        await ledger.open_call("demo", "p", "m", Decimal("0.05"), "estimate")
    assert await ledger.spend_today("demo") == 0


async def test_a_settle_the_database_refuses_keeps_the_estimate(open_ledger):
    db, ledger = await open_ledger(ManualClock(NOON))
    call = await ledger.open_call("demo", "p", "m", Decimal("0.05"), "estimate")
    await refuse(db, "UPDATE", "calls", "no")
    with pytest.raises(LedgerError):
        await ledger.settle(call, USAGE, Decimal("0.01"), "table")
    assert await ledger.spend_today("demo") == Decimal("0.05"), "unknown is never free"


@sqlite_only
async def test_the_schema_is_versioned(open_ledger):
    db, _ = await open_ledger(ManualClock(NOON))
    row = await db.fetchone("PRAGMA user_version")
    assert row[0] == len(MIGRATIONS)
    mode = await db.fetchone("PRAGMA journal_mode")
    assert mode[0] == "wal"


async def sums_of_calls(db) -> dict[tuple[str, str], Decimal]:
    """Each (day, agent)'s spend on closed calls, summed from the calls
    themselves, exactly (calls in flight are counted from their rows)."""
    sums: dict[tuple[str, str], Decimal] = {}
    closed = "SELECT day, agent, cost_usd FROM calls WHERE status != 'pending'"
    for day, agent, cost in await db.fetchall(closed):
        sums[(day, agent)] = sums.get((day, agent), Decimal(0)) + Decimal(cost)
    return {key: total for key, total in sums.items() if total}


async def spend_table(db) -> dict[tuple[str, str], Decimal]:
    """The sums the ledger keeps (a sum moved back to zero may stay a row)."""
    rows = await db.fetchall("SELECT day, agent, cost_usd FROM spend")
    return {(day, agent): Decimal(cost) for day, agent, cost in rows if Decimal(cost)}


async def test_the_schema_is_versioned_on_postgresql(open_ledger, each_store):
    db, _ = await open_ledger(ManualClock(NOON))
    if each_store != "postgresql":
        pytest.skip("the SQLite file's version is PRAGMA user_version (the test above)")
    row = await db.fetchone("SELECT version FROM plane_schema")
    assert row[0] == len(MIGRATIONS)


@sqlite_only
async def test_a_ledger_from_before_the_spend_table_is_summed_exactly(tmp_path, open_ledger):
    path = tmp_path / "plane.db"
    old = sqlite_before(path, 3)
    costs = ["0.1", "0.2", "0.000000123456789"] * 10  # 0.1 + 0.2 is not 0.3 in floats
    old.executemany(
        "INSERT INTO calls (agent, day, at, provider, model, cost_usd, price_source, status)"
        " VALUES ('demo', '2026-11-29', '', 'p', 'm', ?, 'table', 'settled')",
        [(c,) for c in costs],
    )
    old.commit()
    old.close()
    db, ledger = await open_ledger(ManualClock(NOON))
    assert await ledger.spend_today("demo") == Decimal("3.00000123456789")
    assert await spend_table(db) == await sums_of_calls(db)


async def test_the_spend_table_is_the_calls_summed_through_every_change(tmp_path, open_ledger):
    """Calls opened, settled across midnight, failed, and cut by a stop:
    after each, the day sums kept beside the calls are the calls summed,
    and a plane started again reads the same sums. Every call still in
    flight at midnight is the next day's (its cost becomes known then)."""
    clock = ManualClock(NOON)
    db, ledger = await open_ledger(clock)
    first = await ledger.open_call("demo", "p", "m", Decimal("0.05"), "estimate")
    second = await ledger.open_call("scout", "p", "m", Decimal("0.30"), "estimate")
    await ledger.open_call("demo", "p", "m", Decimal("0.07"), "estimate")  # cut by the stop
    assert await spend_table(db) == await sums_of_calls(db)
    await clock.advance(timedelta(hours=12))  # the response arrives on the next day
    await ledger.settle(first, USAGE, Decimal("0.0123"), "table")
    await ledger.fail(second)
    assert await spend_table(db) == await sums_of_calls(db)
    await db.close()
    db, again = await open_ledger(clock)
    assert (await again.recover())["demo"].estimate_usd == Decimal("0.07")
    assert await spend_table(db) == await sums_of_calls(db)
    assert await again.spend_by_agent(date(2026, 11, 29)) == {}
    assert await again.spend_today("demo") == Decimal("0.0823")


async def test_a_settle_refused_in_a_batch_moves_no_sum_twice(tmp_path, open_ledger):
    """Two settles queued behind a busy writer share a transaction; one is of
    a call already settled. It alone is refused; the other's cost is counted
    once, in memory and in the table."""
    db, ledger = await open_ledger(ManualClock(NOON))
    first = await ledger.open_call("demo", "p", "m", Decimal("0.05"), "estimate")
    second = await ledger.open_call("demo", "p", "m", Decimal("0.05"), "estimate")
    await ledger.settle(first, USAGE, Decimal("0.01"), "table")
    inside, release = threading.Event(), threading.Event()

    def hold(conn):
        inside.set()
        release.wait(5)

    held = asyncio.ensure_future(db.write(hold))
    await asyncio.to_thread(inside.wait, 5)
    other = asyncio.ensure_future(ledger.settle(second, USAGE, Decimal("0.02"), "table"))
    again = asyncio.ensure_future(ledger.settle(first, USAGE, Decimal("0.01"), "table"))
    await asyncio.sleep(0.05)
    release.set()
    await held
    with pytest.raises(AlreadyClosed, match="already settled"):
        await again
    assert (await other).cost_usd == Decimal("0.02")
    assert await ledger.spend_today("demo") == Decimal("0.03")
    assert await spend_table(db) == await sums_of_calls(db)


async def test_a_day_sum_moved_behind_the_ledger_is_still_added_to_exactly(open_ledger):
    """The ledger's writer keeps each agent's day sum as it last wrote it, to
    write the next without SQLite calling back into Python for the addition;
    a row another writer moved meanwhile (another plane, a sweep, a rename)
    is added to as the row holds it, not as the writer last knew it."""
    db, ledger = await open_ledger(ManualClock(NOON))
    for cost, behind in (
        (Decimal("0.01"), "1.00"),
        (Decimal("0.02"), "2.5"),
        (Decimal("0.03"), ""),
    ):
        call = await ledger.open_call("demo", "p", "m", Decimal("0.05"), "estimate")
        await ledger.settle(call, USAGE, cost, "table")
        if behind:
            await db.write(lambda conn, behind=behind: move_behind(conn, behind))
    [(spent,)] = await db.fetchall("SELECT cost_usd FROM spend WHERE agent = 'demo'")
    assert Decimal(spent) == Decimal("2.53")


def move_behind(conn, cost: str) -> None:
    conn.execute("UPDATE spend SET cost_usd = ? WHERE agent = 'demo'", (cost,))


async def test_sums_forgotten_while_the_day_is_read_are_read_again(open_ledger):
    """The fleet's tick forgets the day's sums (another plane's spend may be
    in the store) whenever it runs: landing between the read's commit and the
    reader's return, it must not lose the answer (it raised KeyError)."""
    db, ledger = await open_ledger(ManualClock(NOON))
    call = await ledger.open_call("demo", "p", "m", Decimal("0.01"), "estimate")
    await ledger.settle(call, USAGE, Decimal("0.25"), "table")
    ledger.forget_sums()
    submit = db.submit
    ticks: list[int] = []

    def tick(_):
        if not ticks:
            ticks.append(1)
            ledger.forget_sums()

    def a_tick_lands(fn, then=None, **options):
        future = submit(fn, then, **options)
        future.add_done_callback(tick)  # before the reader's coroutine resumes
        return future

    db.submit = a_tick_lands
    assert await ledger.spend_today("demo") == Decimal("0.25")
    assert ticks


class _Ticking(ManualClock):
    """A clock that moves a millisecond each time it is read."""

    def now(self) -> datetime:
        moment = super().now()
        self._now = moment + timedelta(milliseconds=1)
        return moment


async def test_a_pending_call_is_charged_to_the_day_of_its_own_time_across_midnight(
    open_ledger,
):
    """A call opened as the clock crosses midnight: its row's day is the day
    of the time it carries, and so is its settled row's (the clock read once
    per change: read twice, a pending `at` of 23:59:59.999 was charged to the
    next day)."""
    start = datetime(2026, 11, 29, 23, 59, 59, 999000, tzinfo=UTC)
    db, ledger = await open_ledger(_Ticking(start))
    call = await ledger.open_call("demo", "p", "m", Decimal("0.05"), "estimate")
    rows = await db.fetchall("SELECT day, at FROM calls")
    assert [(row["day"], row["at"][:10]) for row in rows] == [("2026-11-29", "2026-11-29")]
    await ledger.settle(call, USAGE, Decimal("0.01"), "table")
    rows = await db.fetchall("SELECT day, at FROM calls")
    assert [(row["day"], row["at"][:10]) for row in rows] == [("2026-11-30", "2026-11-30")]


async def test_a_call_with_nothing_else_to_say_is_written_as_one_stating_each_none(open_ledger):
    """An open with no plane, group, tag or session writes its NULLs in the
    statement itself: the row is the one the full statement writes."""
    db, ledger = await open_ledger(ManualClock(NOON))
    bare = await ledger.open_call("demo", "openai", "gpt-4o", Decimal("0.05"), "estimate")
    stated = NOON.isoformat()
    full = (
        "demo", "2026-11-29", stated, "openai", "gpt-4o", "0.05", "estimate", None, None, None, None
    )  # fmt: skip
    await db.write(
        lambda conn: conn.execute(
            "INSERT INTO calls (agent, day, at, provider, model, cost_usd, price_source,"
            " status, estimated, plane, agent_group, tag, session)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', 1, ?, ?, ?, ?)",
            full,
        )
    )
    rows = await db.fetchall("SELECT * FROM calls ORDER BY id")
    opened, written = ({k: row[k] for k in row.keys() if k != "id"} for row in rows)
    assert rows[0]["id"] == bare
    assert opened == written
    assert (opened["status"], opened["estimated"], opened["tag"]) == ("pending", 1, None)
