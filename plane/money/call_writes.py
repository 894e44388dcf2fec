"""The writes of a call: opening it (pending, at its estimate) and closing it
(settled, failed, cut), each one object put on the database's writer, with
their SQL; and, when several planes share the store, the call admitted only
under its agent's lease, in the statement that writes it.

A write reaches its ledger only through `Books`, given once when the ledger
is made: no write looks into the ledger's own attributes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from functools import partial
from sqlite3 import Connection

from plane.clock import stamp
from plane.errors import AlreadyClosed, lease_lost
from plane.money.attribution import Part
from plane.money.budgets import UNSET, Budget, admit_within, set_elsewhere
from plane.money.day_sums import DaySums
from plane.money.ledger_rows import Recorded, recorded_call
from plane.store.engine import Database, Write
from plane.store.fence import Fence
from plane.wire.protocol import Usage

OPEN = (
    "INSERT INTO calls (agent, day, at, provider, model, cost_usd, price_source,"
    " status, estimated, plane, agent_group, tag, session)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', 1, ?, ?, ?, ?)"
)


OPEN_BARE = (
    "INSERT INTO calls (agent, day, at, provider, model, cost_usd, price_source,"
    " status, estimated, plane, agent_group, tag, session)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', 1, NULL, NULL, NULL, NULL)"
)
"""`OPEN` for a call with no plane, group, tag or session (the first seven
values): each None bound costs sqlite3 a search for its adapter, ~0.2 us."""


def _closing(status: str, estimated: bool, *, moved: bool = False, answered: bool = False) -> str:
    """The UPDATE that closes a call as `status`, `estimated` or not: both
    written into its text, not bound (each value bound is one more for
    sqlite3 to convert and SQLite to copy, ~0.6k instructions; a settled
    call binds nine). `moved`: the call moves to the day its cost became
    known (its first value); `answered`: another model answered it than the
    one it was sent as (a router's fallback), and the row names that one
    (its first value, before the day), the one it was sent as kept (`asked`)."""
    columns = "asked = model, model = ?, " if answered else ""
    columns += "day = ?, " if moved else ""
    return (
        f"UPDATE calls SET {columns}at = ?, input_tokens = ?, cache_read_tokens = ?,"
        " cache_write_tokens = ?, cache_write_1h_tokens = ?, output_tokens = ?, cost_usd = ?,"
        f" price_source = ?, status = '{status}', estimated = {int(estimated)}"
        " WHERE id = ? AND status = 'pending'"
    )


_CLOSES = {
    (status, estimated, moved, answered): _closing(
        status, estimated, moved=moved, answered=answered
    )
    for status in ("settled", "failed", "interrupted")
    for estimated in (False, True)
    for moved in (False, True)
    for answered in (False, True)
}
"""Every closing UPDATE, by (status, estimated, moved, answered)."""

CLOSE = _CLOSES["settled", False, False, False]
"""A call settled at its cost, on the day it was sent (values: the time,
the five token counts, the cost, the price's source, the call)."""


_PART = (
    "INSERT INTO call_parts (call, part, tool, mcp_server, input_tokens, cost_usd)"
    " VALUES (?, ?, ?, ?, ?, ?)"
)


def _part_row(call: int, part: Part) -> tuple[object, ...]:
    return (call, part.part, part.tool, part.mcp_server, part.input_tokens, str(part.cost_usd))


_NOW_MS = "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)"

_ADMIT = (
    "INSERT INTO calls (agent, day, at, provider, model, cost_usd, price_source,"
    " status, estimated, plane, agent_group, tag, session)"
    " SELECT ?, ?, ?, ?, ?, ?, ?, 'pending', 1, ?, ?, ?, ? WHERE "
)

_FENCED = (
    "EXISTS (SELECT 1 FROM leases WHERE agent = ? AND plane = ? AND epoch = ?"
    f" AND expires_ms > {_NOW_MS} + ? FOR SHARE)"
)
"""The turn's lease, at its epoch, with `margin` ms left: locked to the
commit, so no takeover falls between this check and the call written."""

_UNFENCED = (
    "NOT EXISTS (SELECT 1 FROM leases WHERE agent = ? AND expires_ms > 0"
    f" AND (plane <> ? OR expires_ms <= {_NOW_MS} + ?))"
)
"""No turn's fence (a gateway agent's call): refused only when the agent is
under a lease another plane holds, or this one's ran low."""


def _admit_under_lease(
    conn: Connection,
    row: tuple[object, ...],
    plane: str,
    fence: Fence | None,
    margin: int,
    *,
    unless_set: bool = False,
    group: str | None = None,
) -> int | None:
    """Write the call only if its agent's lease allows it, in the same
    statement (several planes, so PostgreSQL's SQL): a plane that lost an
    agent, or whose lease runs low, opens no call for it, so no two planes
    ever spend for one agent at once. `unless_set`: nor while the operator
    has set the fleet's ceiling or the call's `group`'s (`budgets.UNSET`),
    which this plane does not know of: None then, for the call to be
    admitted under it first."""
    agent = str(row[0])
    params: tuple[object, ...]
    if fence is not None and fence.agent == agent:
        check, params = _FENCED, (agent, fence.plane, fence.epoch, margin)
    else:
        check, params = _UNFENCED, (agent, plane, margin)
    if unless_set:
        check, params = check + UNSET, (*params, group)
    written = conn.execute(_ADMIT + check + " RETURNING id", (*row, *params)).fetchone()
    if written is not None:
        return int(written[0])
    if unless_set and set_elsewhere(conn, group):
        return None
    holder = conn.execute(
        f"SELECT plane, expires_ms > {_NOW_MS} FROM leases WHERE agent = ?", (agent,)
    ).fetchone()
    raise lease_lost(agent, plane, holder[0] if holder is not None and holder[1] else None)


@dataclass(frozen=True, slots=True)
class Books:
    """What a ledger's call writes reach of it, given once when the ledger is
    made and shared by all of them (one field a write, as the ledger itself
    was): the database, the day's sums its transactions move, the calls in
    flight, and what a commit tells it."""

    db: Database
    sums: DaySums
    open: dict[int, Recorded]
    """The calls this plane opened and has not closed, as written."""
    count: Callable[[date, str, Decimal], None]
    """Moves a day's sum in memory (`Ledger`'s own, bound once)."""
    closed: Callable[[], None]
    """Told a call closed (`Ledger.after_close`'s waiters)."""
    charged: Callable[[str, datetime, Decimal], None] | None
    """Told (agent, when, cost) of each call closed with a cost, once
    committed: the burn rate's feed (`plane.money.burn`)."""


@dataclass(slots=True)
class Opening(Write[int]):
    """A call being opened: its write (`run`, on the writer) and what its
    commit changes in memory (`then`, on the event loop), as one object, put
    on the writer's queue itself: closures would make a cell for each name
    they share, a dozen objects a call more for the cyclic collector to count
    and walk. The turn's fence is the write's (`Write.fence`)."""

    books: Books
    row: tuple[object, ...]
    recorded: Recorded
    sql: str
    """`OPEN`, or `OPEN_BARE` for a `row` of its first seven values."""

    def run(self, conn: Connection) -> int:
        # lastrowid, as Conversation.append: on SQLite a third cheaper than
        # RETURNING; plane/store/postgres_dialect.py reads it as lastval().
        call = self.books.db.runner.execute(self.sql, self.row).lastrowid
        assert call is not None
        return int(call)

    def then(self, call: int) -> None:
        recorded, books = self.recorded, self.books
        books.open[call] = recorded
        # A callable field read as a field: `books.count(...)` would first look
        # it up on the class as a method, unspecialized (~150 instructions).
        count = books.count
        count(recorded.day, recorded.agent, recorded.cost_usd)


@dataclass(slots=True)
class Admitted(Opening):
    """A call opened only once admitted, in the same transaction: under the
    fleet's, its group's or its tag's ceiling (`admits`), and, when several
    planes share the store, under its agent's lease. Its own kind of write,
    so a call with neither (the most of them) is built and run without them."""

    admits: bool = False
    budgets: tuple[Decimal | None, Budget | None, Budget | None] = (None, None, None)
    """The fleet's ceiling, the group's budget, the tag's: checked if `admits`."""
    margin: int = 0
    plane: str | None = None
    """The ledger's plane, when several share the store: the call is then
    admitted under its agent's lease (`_admit_under_lease`)."""

    def run(self, conn: Connection) -> int:
        plane = self.plane
        if self.admits:
            self._admit(conn)
        elif plane is not None:  # no ceiling known here: maybe one set on another plane
            group = self.recorded.group
            call = _admit_under_lease(
                conn, self.row, plane, self.fence, self.margin, unless_set=True, group=group
            )
            if call is not None:
                return call
            self._admit(conn)  # the operator's ceiling, read under the lock
        if plane is not None:
            call = _admit_under_lease(conn, self.row, plane, self.fence, self.margin)
            assert call is not None  # written, or refused (`LeaseLost`)
            return call
        return Opening.run(self, conn)

    def _admit(self, conn: Connection) -> None:
        """The call admitted under the ceilings above its agent (`admit_within`)."""
        books, day = self.books, self.recorded.day
        # What this batch's settles moved is not in `spend` until its end.
        sums = books.sums
        moved, moved_group = partial(sums.on, day), partial(sums.on_group, day)
        admit_within(conn, day, moved, moved_group, partial(sums.on_tag, day), *self.budgets)


@dataclass(slots=True)
class Closing(Write[Recorded]):
    """A call being closed (`Ledger.settle`, `fail`, `cut`), as `Opening`: one object."""

    books: Books
    call: int
    opened: Recorded | None
    """As this plane opened it (None: read from its row)."""
    now: datetime
    known_day: date
    known_text: str
    """`known_day` as rows hold it."""
    status: str
    usage: Usage
    cost: Decimal
    source: str | None
    estimated: bool
    parts: Sequence[Part]
    counted: Callable[[Decimal], object] | None
    """Told the cost once committed (`Ledger.settle`)."""
    model: str | None
    """The model that answered, where it is not the one the call was opened with."""
    again: bool = False
    """Put again after a try whose outcome is not known (the store away)."""

    def run(self, conn: Connection) -> Recorded:
        call, cost, known_day, usage = self.call, self.cost, self.known_day, self.usage
        recorded = self.opened or recorded_call(conn, call)
        known_iso = self.known_text
        values: tuple[object, ...] = (
            stamp(self.now),
            usage.input_tokens,
            usage.cache_read_tokens,
            usage.cache_write_tokens,
            usage.cache_write_1h_tokens,
            usage.output_tokens,
            str(cost),
            recorded.price_source if self.source is None else self.source,
            call,
        )
        # The day is set only when it moves: an unchanged day would still
        # rewrite the row's entry in the index by day.
        moved = recorded.day != known_day
        if moved:
            values = (known_iso, *values)
        if self.model is not None:
            values = (self.model, *values)
        sql = _CLOSES[self.status, self.estimated, moved, self.model is not None]
        changed = self.books.db.runner.execute(sql, values).rowcount
        if not changed:
            now_recorded = recorded_call(conn, call)
            if self.again and (now_recorded.status, now_recorded.cost_usd) == (self.status, cost):
                # This close, put again: a try before landed, and its answer
                # was lost with the link. Written and counted once.
                return recorded
            if now_recorded.status == "interrupted":  # swept while its plane was taken for dead
                raise AlreadyClosed(
                    f"Call {call} was already counted at its estimate by another plane,"
                    " while this one could not reach the store."
                )
            raise AlreadyClosed(f"Call {call} is already {now_recorded.status}: counted once.")
        if self.parts:
            conn.executemany(_PART, [_part_row(call, part) for part in self.parts])
        if cost:
            self.books.sums.add_on(known_iso, recorded.agent, cost, recorded.group, recorded.tag)
        return recorded

    def then(self, recorded: Recorded) -> None:
        books, cost = self.books, self.cost
        count, closed = books.count, books.closed  # fields, read as such (`Opening.then`)
        books.open.pop(self.call, None)
        closed()
        if recorded.day == self.known_day:  # the call's estimate and its cost on one day
            count(recorded.day, recorded.agent, cost - recorded.cost_usd)
        else:
            count(recorded.day, recorded.agent, -recorded.cost_usd)
            count(self.known_day, recorded.agent, cost)
        if cost and books.charged is not None:
            books.charged(recorded.agent, self.now, cost)
        if self.counted is not None:
            self.counted(cost)
