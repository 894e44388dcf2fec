"""Ceilings above an agent's: the fleet's, a group's, a tag's — what a call's
admission checks in the transaction that writes it (`Ledger.open_call`).

A group's ceiling sits between its agents' and the fleet's, so an agent is
in one group at most: its ceilings stay a chain (agent ≤ group ≤ fleet),
each call is admitted against one group, and the groups' spend adds up to
the fleet's. **A group spent what its calls spent**: each call is written
with the group its agent was in (`calls.agent_group`), and a group's spend
is summed from those, as `plane ledger --summary --by group` sums it. An
agent moved out of a group (agents.yaml changed, the agent renamed) leaves
what it spent there with the group, and one moved in brings none of what it
spent before: a ceiling counts, all day, what was spent under it. A tag
is carried by gateway calls, whichever agent makes them; one with a
ceiling is a budget of its own.

**One lock for every shared ceiling.** An admission that checks any of
them first locks the fleet's row (an UPDATE: a row lock on PostgreSQL; on
SQLite the write lock `BEGIN IMMEDIATE` already holds), then reads each
budget's spend today with every call in flight at its estimate, and writes
the call only if each is under its ceiling. The fleet's ceiling and a
group's, where the operator set them, are read under that lock too: one
set on another plane binds the next admission on every plane — on one that
remembers no ceiling as well, whose call is written only while none is set
(`UNSET`), and otherwise admitted under the lock as the others are. One
row, not a row a group: a call checks up to three budgets, and two planes
locking two rows each in crossing orders deadlock (PostgreSQL finds it
after a second, and one of them runs again). Each admission holds the row
for the end of one short transaction (it runs last in its batch), so
admissions on all planes together pass each ceiling by at most the one
call admitted last under it, plus what calls in flight cost above their
estimates.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from sqlite3 import Connection

from plane.money.stored import amount_or_none, spent_of, unreadable_within


@dataclass(frozen=True)
class Budget:
    """A group's or a tag's ceiling as admission checks it (its calls are
    found by its name, which each is written with)."""

    name: str
    ceiling: Decimal | None
    """None: no ceiling (the name is still recorded with the call)."""


class Full(Exception):
    """A call refused at admission: a ceiling above the agent's (the fleet's,
    its group's, its tag's) is reached, counting every call in flight at its
    estimate on every plane. Nothing was written."""

    scope = "fleet"

    def __init__(
        self, spent: Decimal, ceiling: Decimal, name: str = "", in_flight: Decimal = Decimal(0)
    ) -> None:
        super().__init__(f"{self.whose(name)} has spent {spent} today, of its {ceiling} ceiling")
        self.spent = spent
        self.ceiling = ceiling
        self.name = name
        self.in_flight = in_flight
        """The part of `spent` the calls in flight count, at their estimates."""

    @property
    def by_calls_in_flight(self) -> bool:
        """Refused only because of the calls in flight: what was spent is
        under the ceiling, so the call may go once some of them settle (a
        call in flight counts the most it may cost, which it seldom does)."""
        return self.spent - self.in_flight < self.ceiling

    @staticmethod
    def whose(name: str) -> str:
        return "the fleet"


class FleetFull(Full):
    """The fleet's ceiling: every agent together, on every plane."""


class GroupFull(Full):
    """The ceiling of the agent's group."""

    scope = "group"

    @staticmethod
    def whose(name: str) -> str:
        return f"its group {name}"


class TagFull(Full):
    """The ceiling of the tag the call carries, reached on the plane's `day`
    (the day its spend was counted on: the day of the tag's alert, which
    the clock's date may not be around 00:00 UTC; None where not said)."""

    scope = "tag"

    def __init__(
        self,
        spent: Decimal,
        ceiling: Decimal,
        name: str = "",
        day: date | None = None,
        in_flight: Decimal = Decimal(0),
    ) -> None:
        super().__init__(spent, ceiling, name, in_flight)
        self.day = day

    @staticmethod
    def whose(name: str) -> str:
        return f"the tag {name}"


def checks(fleet: Decimal | None, group: Budget | None, tag: Budget | None) -> bool:
    """Whether admission has a shared ceiling to check (and so the lock to take)."""
    return fleet is not None or any(b is not None and b.ceiling is not None for b in (group, tag))


def admit_within(
    conn: Connection,
    day: date,
    moved: Callable[[Collection[str] | None], Decimal],
    moved_group: Callable[[str], Decimal],
    moved_tag: Callable[[str], Decimal],
    fleet: Decimal | None,
    group: Budget | None,
    tag: Budget | None,
) -> None:
    """Inside the write function that opens a call: lock, read, refuse
    (`Full`) or return. `moved(None)`, `moved_group(name)` and
    `moved_tag(name)` are what this batch's closed calls moved that `spend`,
    `group_spend` and `tag_spend` do not hold yet. A cost it reads that no
    plane wrote (a row edited while the plane runs) refuses the call with
    the sentence the start says of that row (`StoreError`): never taken for
    no spend, nor for a budget spent ("Infinity")."""
    limit, set_by = conn.execute(ADMITTED).fetchone()
    if set_by:  # the operator's value, wherever it was set a moment ago
        fleet = amount_or_none("fleet", "the fleet", "limit_usd", limit)
    if group is not None:
        group = _as_set(conn, group)
    on = day.isoformat()
    if fleet is not None:
        spent = fleet_spent_within(conn, day) + moved(None)
        if spent >= fleet:
            flying = _in_flight(conn, FLEET_IN_FLIGHT, (on,), "spend", None)
            raise FleetFull(spent, fleet, in_flight=flying)
    if group is not None and group.ceiling is not None:
        spent = group_spent_within(conn, day, group.name) + moved_group(group.name)
        if spent >= group.ceiling:
            flying = _in_flight(conn, GROUP_IN_FLIGHT, (on, group.name), "group_spend", group.name)
            raise GroupFull(spent, group.ceiling, group.name, flying)
    if tag is not None and tag.ceiling is not None:
        spent = tag_spent_within(conn, day, tag.name) + moved_tag(tag.name)
        if spent >= tag.ceiling:
            flying = _in_flight(conn, TAG_IN_FLIGHT, (on, tag.name), "tag_spend", tag.name)
            raise TagFull(spent, tag.ceiling, tag.name, day, flying)


ADMITTED = "UPDATE fleet SET admitted = admitted + 1 WHERE id = 1 RETURNING limit_usd, set_by"
"""The lock every admission takes, and the fleet's ceiling as the operator
set it: read under the lock, so a ceiling set on another plane holds from
the admission after its commit, not from this plane's next reading of it."""


GROUP_SET = "SELECT limit_usd FROM group_limits WHERE name = ?"
"""A group's ceiling as the operator set it (no row: the file's)."""


UNSET = (
    " AND NOT EXISTS (SELECT 1 FROM fleet"
    " WHERE id = 1 AND set_by IS NOT NULL AND limit_usd IS NOT NULL)"
    " AND NOT EXISTS (SELECT 1 FROM group_limits WHERE name = ? AND limit_usd IS NOT NULL)"
)
"""Neither the fleet's ceiling nor the call's group's (its one value: the
group's name, None for none) set by the operator, as a condition of the
statement that writes a call a plane of several admits with no ceiling it
knows of (`plane.money.call_writes`). An operator on another plane may have
set one a moment ago, and this plane not heard of it yet (its notice, or
the next renewal's read, is still on its way): the call is then written
only once admitted under the lock (`set_elsewhere`, `admit_within`). A
condition of the INSERT itself, not a read before it: every call of a plane
of several is written by one statement already, and a set ceiling is rare,
so the calls under none (the most of them) send nothing more and take no
lock; the statement's snapshot holds every ceiling committed before it
(one committed while it runs is concurrent with the call, as one committed
just after its commit would be). A tag's ceiling is only agents.yaml's:
no plane sets one at run time."""

SET_ELSEWHERE = (
    "SELECT EXISTS (SELECT 1 FROM fleet"
    " WHERE id = 1 AND set_by IS NOT NULL AND limit_usd IS NOT NULL)"
    " OR EXISTS (SELECT 1 FROM group_limits WHERE name = ? AND limit_usd IS NOT NULL)"
)
"""Whether `UNSET` kept a call back (one value: the group's name)."""


def set_elsewhere(conn: Connection, group: str | None) -> bool:
    """Whether the operator set the fleet's ceiling or `group`'s, where the
    plane admitting a call remembers none: a call `UNSET` did not write is
    then admitted under the lock (`admit_within`), not refused as its lease's."""
    return bool(conn.execute(SET_ELSEWHERE, (group,)).fetchone()[0])


def _as_set(conn: Connection, group: Budget) -> Budget:
    """`group` with the operator's ceiling where one is set (off included),
    read under the lock as the fleet's is."""
    row = conn.execute(GROUP_SET, (group.name,)).fetchone()
    if row is None:
        return group
    return Budget(group.name, amount_or_none("group_limits", group.name, "limit_usd", row[0]))


FLEET_SPENT = (
    "SELECT cost_usd FROM spend WHERE day = ?"
    " UNION ALL SELECT cost_usd FROM calls WHERE status = 'pending' AND day = ?"
)


FLEET_IN_FLIGHT = "SELECT cost_usd FROM calls WHERE status = 'pending' AND day = ?"
"""The fleet's calls in flight on a day, at their estimates."""


def fleet_spent_within(conn: Connection, day: date) -> Decimal:
    """The fleet's spend on `day`, read inside a write function."""
    on = day.isoformat()
    return _spent(conn, conn.execute(FLEET_SPENT, (on, on)).fetchall(), on, "spend", None)


GROUP_IN_FLIGHT = (
    "SELECT cost_usd FROM calls WHERE status = 'pending' AND day = ? AND agent_group = ?"
)
"""A group's calls in flight on a day, at their estimates."""

GROUP_SPENT = (
    "SELECT cost_usd FROM group_spend WHERE day = ? AND agent_group = ? UNION ALL "
    + GROUP_IN_FLIGHT
)
"""A group's spend on a day: the calls written with its name — those closed
(`group_spend`, kept by the ledger as `spend` is), and those in flight at
their estimates."""

GROUPS_SPENT = (
    "SELECT agent_group, cost_usd, 0 FROM group_spend WHERE day = ? UNION ALL"
    " SELECT agent_group, cost_usd, 1 FROM calls"
    " WHERE status = 'pending' AND day = ? AND agent_group IS NOT NULL"
)
"""`GROUP_SPENT` of every group at once (a snapshot's rows), each row marked
1 when it is a call in flight: what was spent and what flies, in one read."""


def group_spent_within(conn: Connection, day: date, group: str) -> Decimal:
    on = day.isoformat()
    rows = conn.execute(GROUP_SPENT, (on, group) * 2).fetchall()
    return _spent(conn, rows, on, "group_spend", group)


TAG_IN_FLIGHT = "SELECT cost_usd FROM calls WHERE status = 'pending' AND day = ? AND tag = ?"
"""A tag's calls in flight on a day, at their estimates."""

TAG_SPENT = "SELECT cost_usd FROM tag_spend WHERE day = ? AND tag = ? UNION ALL " + TAG_IN_FLIGHT
"""A tag's spend on a day: the calls carrying it — those closed (`tag_spend`,
kept by the ledger as `group_spend` is), and those in flight at their
estimates."""

TAGS_SPENT = (
    "SELECT tag, cost_usd FROM tag_spend WHERE day = ? UNION ALL"
    " SELECT tag, cost_usd FROM calls WHERE status = 'pending' AND day = ? AND tag IS NOT NULL"
)
"""`TAG_SPENT` of every tag at once (a scrape's rows)."""


def tag_spent_within(conn: Connection, day: date, tag: str) -> Decimal:
    on = day.isoformat()
    rows = conn.execute(TAG_SPENT, (on, tag) * 2).fetchall()
    return _spent(conn, rows, on, "tag_spend", tag)


def _in_flight(
    conn: Connection, query: str, params: tuple[str, ...], table: str, key: str | None
) -> Decimal:
    """What a budget's calls in flight count (`query`, its day first in
    `params`), read only once the budget refuses a call: whether only they did."""
    return _spent(conn, conn.execute(query, params).fetchall(), params[0], table, key)


def _spent(
    conn: Connection, rows: list[tuple[str]], on: str, table: str, key: str | None
) -> Decimal:
    """`rows` (a budget's sum of day `on` in `table` and its calls in flight)
    added up. A cost no plane wrote (a row edited while the plane runs)
    refuses the call with the sentence the start says of that row
    (`StoreError`, raised out of the write function: nothing is written),
    the rows read again by name only then."""
    spent = spent_of(rows)
    if spent is None:
        raise unreadable_within(conn, on, table, key)
    return spent
