"""Calls that will get no response counted at their estimates, as
**interrupted**: those a plane that died left pending (swept at start-up, or
by the plane that takes its agents over), and those of a turn the operator
cut. A call that may have been billed never counts $0."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from decimal import Decimal
from sqlite3 import Connection

from plane.money.day_sums import DaySums
from plane.money.stored import amount
from plane.money.stored import day as day_of_row
from plane.wire.words import UNPRICED


@dataclass(frozen=True)
class Interrupted:
    """One agent's calls a plane that died left in flight."""

    calls: int
    estimate_usd: Decimal
    """What they count: their estimates, summed."""
    unpriced: int = 0
    """How many of them no price is known for: their $0 is not their cost."""

    def __add__(self, other: Interrupted) -> Interrupted:
        return Interrupted(
            self.calls + other.calls,
            self.estimate_usd + other.estimate_usd,
            self.unpriced + other.unpriced,
        )


Tell = Callable[[Connection, dict[str, Interrupted]], None]
"""Says what recovery found, inside recovery's own transaction (a write
function's part: SQL only)."""


def sweep(
    conn: Connection,
    agents: Collection[str] | None,
    tell: Tell | None = None,
    *,
    planes: Collection[str] | None = None,
) -> dict[str, Interrupted]:
    """Mark the calls left pending by a plane that died interrupted, at their
    estimates, as part of a write function: of `agents` only (None: all), or
    the calls opened by `planes`. Returns, per agent, how many there were and
    what they count; `tell` is told so in the same transaction
    (`Ledger.recover`, `Ledger.sweep_within`)."""
    where = "status = 'pending'"
    params: list[str] = []
    for column, only in (("agent", agents), ("plane", planes)):
        if only is not None:
            if not only:
                return {}
            params += sorted(only)
            where += f" AND {column} IN ({','.join('?' * len(only))})"
    cut: dict[str, Interrupted] = {}
    # Marked and read in one statement: a call its plane settles meanwhile
    # (stalled, not dead) is either settled first, and not here, or marked
    # here, and its settle finds it closed. Read first, it was counted by
    # both. A row no plane wrote undoes the whole transaction, marks and all.
    rows = conn.execute(
        f"UPDATE calls SET status = 'interrupted', estimated = 1 WHERE {where}"
        " RETURNING id, agent, day, cost_usd, price_source, agent_group, tag",
        params,
    ).fetchall()
    # Its own sums, written here: the fleet sweeps on a connection of its
    # own, whose transactions the ledger's finisher does not end.
    sums = DaySums()
    for call, agent, day, stored, source, group, tag in sorted(rows, key=lambda row: row[0]):
        named = f"call {call} of {agent}"
        cost = amount("calls", named, "cost_usd", stored)
        one = Interrupted(1, cost, int(source == UNPRICED))
        cut[agent] = cut.get(agent, Interrupted(0, Decimal(0))) + one
        sums.add(day_of_row("calls", named, "day", day), agent, cost, group, tag)
    if cut:
        sums.write(conn)
    if tell is not None and cut:
        tell(conn, cut)
    return cut


def interrupt_pending(conn: Connection, agent: str, sums: DaySums) -> tuple[list[int], Interrupted]:
    """`agent`'s calls in flight marked interrupted, as part of a write
    function, their estimates added to the transaction's `sums`: which calls,
    and what they count (`Ledger.interrupt_open`)."""
    # Marked and read in one statement, as `sweep`'s: a call settled meanwhile
    # is not counted again at its estimate.
    rows = conn.execute(
        "UPDATE calls SET status = 'interrupted' WHERE status = 'pending' AND agent = ?"
        " RETURNING id, day, cost_usd, price_source, agent_group, tag",
        (agent,),
    ).fetchall()
    rows.sort(key=lambda row: row[0])
    # Each estimate and day read before any is counted: one no plane wrote (a row
    # edited while the plane runs) refuses the cut in the start's sentence,
    # and the transaction, rolled back, has marked no call and moved no sum.
    costs = [amount("calls", f"call {row[0]} of {agent}", "cost_usd", row[2]) for row in rows]
    days = [day_of_row("calls", f"call {row[0]} of {agent}", "day", row[1]) for row in rows]
    total = Decimal(0)
    for (_, _, _, _, group, tag), cost, on in zip(rows, costs, days, strict=True):
        sums.add(on, agent, cost, group, tag)
        total += cost
    unpriced = sum(row[3] == UNPRICED for row in rows)
    return [row[0] for row in rows], Interrupted(len(rows), total, unpriced)
