"""Spend over time for the TUI's charts (`spend_history`): an agent's day by
hour, its last 30 days, the day's top spenders, and its day by model and by
tool, each beside what compression saved; and the fleet's last 30 days
stacked by agent, by model or by group (`spend_stack`). Sums exact
(Decimal); a call's cost, a saving or a call's part no plane wrote refuses
the request in one sentence naming its row (`plane.money.stored`), as
`plane ledger` does. Thirty days of a busy fleet's calls are read and added
up aside (`Database.read_aside`), so opening a chart holds up neither the
turns' reads nor the event loop.

A call counts in the hour its cost became known (`at`, the time its row
was last written), as it counts on that day; a call in flight counts at its
estimate, as the gate counts it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import date, timedelta
from decimal import Decimal, InvalidOperation
from functools import partial
from sqlite3 import Connection
from typing import Any

from plane.money import savings
from plane.money.ledger import Ledger
from plane.money.stored import added_up, summand
from plane.money.totals import (
    NONE,
    PARTS_QUERY,
    QUERY,
    Line,
    Record,
    cost_sum,
    name_unreadable,
    per_day,
    per_hour,
    summarise,
    summarise_tools,
    window,
)
from plane.store.engine import Database
from plane.wire.protocol import (
    SpendHistoryReply,
    SpendPoint,
    SpendSeries,
    SpendStackReply,
    StackBy,
)
from plane.wire.words import FLOOR, UNPRICED, unpriced_call

DAYS = 30
UNPRICED_TODAY = (
    "SELECT agent, price_source FROM calls WHERE day = ? AND (price_source = ? OR price_source"
    " LIKE ?)"
)
"""The fleet's calls of a day whose cost is not all known (`unpriced_call`),
for the top spenders' figures: the agent's own chart reads only its calls."""


async def spend_history(
    db: Database, ledger: Ledger, agent: str | None, id: int
) -> SpendHistoryReply:
    today = await ledger.today()
    by_agent = await ledger.spend_by_agent(today)
    return await db.read_aside(partial(_history, today, by_agent, agent, id))


def _history(
    today: date, by_agent: dict[str, Decimal], agent: str | None, id: int, conn: Connection
) -> SpendHistoryReply:
    first, last = window(today, DAYS)
    span = (first.isoformat(), last.isoformat())
    if agent is None:
        calls = conn.execute(QUERY, span).fetchall()
    else:
        calls = conn.execute(QUERY + " AND agent = ?", (*span, agent)).fetchall()
    saved = savings.between(conn, first, last, agent)
    todays = [row for row in calls if row["day"] == today.isoformat()]
    ids = {int(row["id"]) for row in todays}
    parts = [
        part
        for part in conn.execute(PARTS_QUERY, (today.isoformat(), today.isoformat())).fetchall()
        if int(part["call"]) in ids
    ]
    saved_today = [row for row in saved if row["day"] == today.isoformat()]
    hours = [f"{hour:02d}" for hour in range(24)]
    days = [(first + timedelta(days=n)).isoformat() for n in range(DAYS)]
    return SpendHistoryReply(
        id=id,
        day=today,
        agent=agent,
        hours=_points(
            hours, per_hour(todays), _saved_by(saved_today, _hour), _unpriced_by(todays, _hour)
        ),
        days=_points(
            days, per_day(calls, first, last), _saved_by(saved, _day), _unpriced_by(calls, _day)
        ),
        top=_top(conn, today, by_agent),
        models=[
            _line_point(line)
            for line in summarise(todays, "model")[0]
            if line.cost_usd or line.unpriced  # an unpriced model spent what is not known
        ],
        tools=_folded(
            [
                _line_point(line)
                for line in summarise_tools(todays, parts)[0]
                if line.cost_usd or line.unpriced
            ]
        ),
    )


def _top(conn: Connection, today: date, by_agent: dict[str, Decimal]) -> list[SpendPoint]:
    """The day's spenders, the most first, each with what compression saved
    it and its calls whose cost is not all known (a floor is in what it
    spent, as in its other bars). One whose calls are all unpriced spent
    what is not known, not nothing: it is listed, after those that spent
    a figure."""
    saved = _saved_by(savings.between(conn, today, today), _agent)
    not_known = conn.execute(UNPRICED_TODAY, (today.isoformat(), UNPRICED, f"%{FLOOR}")).fetchall()
    unpriced = _unpriced_by(not_known, _agent)
    spenders = {name: spent for name, spent in by_agent.items() if spent}
    for name in unpriced:
        spenders.setdefault(name, Decimal(0))
    top = sorted(spenders.items(), key=lambda pair: (-pair[1], pair[0]))
    return _points([name for name, _ in top], [spent for _, spent in top], saved, unpriced)


def _line_point(line: Line) -> SpendPoint:
    """A model's or a tool's bar: a call priced at a floor is unpriced as
    its line says (`$0.0002 + unpriced`), its floor in what was spent."""
    unpriced = line.unpriced + line.floor
    return SpendPoint(label=line.key, spent_usd=line.cost_usd, unpriced_calls=unpriced)


TOOLS_SHOWN = 10
"""The day by tool's bars: a gateway client names its own tools, so the
most costly stand apart and the rest are one bar."""


def _folded(points: list[SpendPoint]) -> list[SpendPoint]:
    """The first `TOOLS_SHOWN` (the most spent first), and the rest summed."""
    if len(points) <= TOOLS_SHOWN:
        return points
    kept, rest = points[: TOOLS_SHOWN - 1], points[TOOLS_SHOWN - 1 :]
    return [
        *kept,
        SpendPoint(
            label=f"others ({len(rest)})",
            spent_usd=sum((p.spent_usd for p in rest), Decimal(0)),
            unpriced_calls=sum(p.unpriced_calls for p in rest),
        ),
    ]


async def spend_stack(
    db: Database, ledger: Ledger, by: StackBy, top: int, id: int
) -> SpendStackReply:
    """The fleet's last 30 days, a series each for the `top` agents (or
    models, or groups) that spent the most over them and one for the rest."""
    today = await ledger.today()
    first, last = window(today, DAYS)

    def read(conn: Connection) -> list[SpendSeries]:
        calls = conn.execute(QUERY, (first.isoformat(), last.isoformat())).fetchall()
        return stacked(calls, savings.between(conn, first, last), by, first, top)

    return SpendStackReply(id=id, day=today, by=by, series=await db.read_aside(read))


def stacked(
    calls: Iterable[Record],
    saved: Iterable[Record],
    by: StackBy,
    first: date,
    top: int,
) -> list[SpendSeries]:
    """Per day from `first` (DAYS of them), spent and saved of each agent or
    model, with its unpriced calls; the `top` most spent apart (ties by what
    was saved, then by unpriced calls, then by name), the rest summed into
    one series (`folded`: how many). A day with nothing is zero; an agent or
    model that neither spent, saved nor made an unpriced call is left out."""
    last = first + timedelta(days=DAYS - 1)
    days = [(first + timedelta(days=n)).isoformat() for n in range(DAYS)]
    calls_of = _grouped(calls, by)
    saved_of = _grouped(saved, by) if by != "group" else _by_group(saved, calls)

    def spent(key: str) -> Decimal:
        return cost_sum(calls_of.get(key, []))

    def kept(key: str) -> Decimal:
        return sum(_saved_by(saved_of.get(key, []), _day).values(), Decimal(0))

    def unpriced(key: str) -> int:
        return sum(_unpriced_by(calls_of.get(key, []), _day).values())

    keys = sorted(
        (
            key
            for key in calls_of.keys() | saved_of.keys()
            if spent(key) or kept(key) or unpriced(key)  # unknown is not nothing
        ),
        key=lambda key: (-spent(key), -kept(key), -unpriced(key), key),
    )
    apart, rest = keys[:top], keys[top:]

    def series(label: str, members: list[str], folded: int = 0) -> SpendSeries:
        rows = [row for key in members for row in calls_of.get(key, [])]
        saved_rows = [row for key in members for row in saved_of.get(key, [])]
        return SpendSeries(
            label=label,
            folded=folded,
            days=_points(
                days,
                per_day(rows, first, last),
                _saved_by(saved_rows, _day),
                _unpriced_by(rows, _day),
            ),
        )

    layers = [series(key, [key]) for key in apart]
    if rest:
        layers.append(series("others", rest, folded=len(rest)))
    return layers


def _grouped(rows: Iterable[Record], by: str) -> dict[str, list[Record]]:
    groups: dict[str, list[Record]] = {}
    for row in rows:
        groups.setdefault(NONE if row[by] is None else str(row[by]), []).append(row)
    return groups


def _by_group(saved: Iterable[Record], calls: Iterable[Record]) -> dict[str, list[Record]]:
    """What compression saved, by group: a saving has its agent, and the
    agent's calls of that day say the group it was in."""
    group_of = {(row["agent"], row["day"]): row["group"] for row in calls}
    groups: dict[str, list[Record]] = {}
    for row in saved:
        group = group_of.get((row["agent"], row["day"]))
        groups.setdefault(NONE if group is None else str(group), []).append(row)
    return groups


def _agent(row: Record) -> str:
    return str(row["agent"])


def _hour(row: Record) -> str:
    return str(row["at"])[11:13]


def _day(row: Record) -> str:
    return str(row["day"])


def _saved_by(rows: Sequence[Record], key: Any) -> dict[str, Decimal]:
    """Priced savings summed by `key(row)` (an unpriced saving adds no
    dollars); each read by name only if a sum fails (`name_unreadable`)."""
    sums: dict[str, Decimal] = {}
    try:
        for row in rows:
            if row["usd"] is not None:
                k = key(row)
                sums[k] = sums.get(k, Decimal(0)) + summand(row["usd"])
    except InvalidOperation:
        name_unreadable(rows, savings.usd_of)
        raise
    if not added_up(sums.values()):
        name_unreadable(rows, savings.usd_of)
    return sums


def _points(
    labels: list[str],
    spent: list[Decimal],
    saved: dict[str, Decimal],
    unpriced: dict[str, int] | None = None,
) -> list[SpendPoint]:
    unpriced = unpriced or {}
    return [
        SpendPoint(
            label=label,
            spent_usd=amount,
            saved_usd=saved.get(label, Decimal(0)),
            unpriced_calls=unpriced.get(label, 0),
        )
        for label, amount in zip(labels, spent, strict=True)
    ]


def _unpriced_by(rows: Iterable[Record], key: Any) -> dict[str, int]:
    """Calls no price is known for, counted by `key(row)`: their $0 (or
    their floor) is not their cost."""
    counts: dict[str, int] = {}
    for row in rows:
        if unpriced_call(str(row["price_source"])):
            counts[key(row)] = counts.get(key(row), 0) + 1
    return counts
