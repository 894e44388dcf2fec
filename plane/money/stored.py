"""Amounts read back from the store, refused when they are none.

A row no plane writes (a store edited by hand, or by a buggy older tool)
holding a ceiling or a cost that is not an amount stops the plane with one
sentence naming the row: a ceiling it cannot read is never taken for no
ceiling, nor a cost for nothing. "Infinity", "NaN" and a negative amount are
refused too: each would read as a number and mean no ceiling, or a ceiling
nothing ever reaches.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from sqlite3 import Connection, Row
from typing import TypeVar

from plane.clock import read_stamp
from plane.errors import StoreError
from plane.wire.words import FLOOR

_ZERO = Decimal(0)
K = TypeVar("K")


def amount(table: str, row: str, column: str, value: object, *, signed: bool = False) -> Decimal:
    """`value`, a stored amount in dollars, as a Decimal; StoreError if it is
    none. `signed`: an amount below zero is one too (a call's share of its
    cost, as an earlier plane's rounding could leave the largest one)."""
    try:
        found = Decimal(value) if isinstance(value, str) else None
    except InvalidOperation:
        found = None
    if found is None or not found.is_finite() or (found < 0 and not signed):
        raise _unreadable(table, row, column, value, "an amount in dollars")
    return found


def summand(value: str) -> Decimal:
    """A stored amount as a sum reads it: `Decimal(value)` alone, the row
    read by name (`amount`) only if a sum fails. InvalidOperation, which
    fails it, for a text that is no number and for an amount below zero: no
    plane writes one, and among others whose sum stays at or above zero it
    would lower what was spent unseen."""
    found = Decimal(value)
    if found < 0:
        raise InvalidOperation
    return found


def amount_or_none(table: str, row: str, column: str, value: object) -> Decimal | None:
    """`amount`, with NULL read as None ("off", as the plane writes it)."""
    return None if value is None else amount(table, row, column, value)


def day(table: str, row: str, column: str, value: object) -> date:
    """`value`, a stored day; StoreError if it is none."""
    try:
        if isinstance(value, str):
            return date.fromisoformat(value)
    except ValueError:
        pass
    raise _unreadable(table, row, column, value, "a day")


def moment(table: str, row: str, column: str, value: object) -> datetime:
    """`value`, a stored time with its zone; StoreError if it is none."""
    try:
        return read_stamp(value)
    except ValueError:
        raise _unreadable(table, row, column, value, "a time with its zone") from None


FLOOR_PRICED = f"price_source LIKE '%{FLOOR}'"
"""A call priced at a floor (`FLOOR`), as the index of such calls
(`calls_floor_priced`) states it: a query that says it so finds them there."""

SUMS = {"spend": "agent", "group_spend": "agent_group", "tag_spend": "tag"}
"""The tables of a day's sums, and the column each is kept by (`calls`
names its agent, group and tag alike)."""


def check_days(conn: Connection, since: date) -> None:
    """Refuse (StoreError) a store whose plane's day, latest call's day, or a
    day's spend from `since` on cannot be read, as part of the start's
    write function. Read only at a day's first gate check, any of them
    otherwise failed every agent's every turn that day; a day no plane writes
    ("yesterday") sorts after every real day, so it is among those looked at."""
    for (found,) in conn.execute("SELECT day FROM plane_day").fetchall():
        day("plane_day", "the plane", "day", found)
    latest = conn.execute(
        "SELECT id, agent, day FROM calls WHERE day = (SELECT MAX(day) FROM calls)"
    ).fetchone()
    if latest is not None:
        day("calls", f"call {latest[0]} of {latest[1]}", "day", latest[2])
    for table, name in SUMS.items():
        rows = conn.execute(
            f"SELECT day, {name}, cost_usd FROM {table} WHERE day >= ?", (since.isoformat(),)
        ).fetchall()
        for on, who, cost in rows:
            day(table, who, "day", on)
            amount(table, f"{who} on {on}", "cost_usd", cost)


def added_up(sums: Iterable[Decimal], *, signed: bool = False) -> bool:
    """Whether each of `sums` can be a sum of amounts: finite, and not below
    zero unless `signed` (a call's parts)."""
    return all(sum_.is_finite() and (signed or sum_ >= 0) for sum_ in sums)


def sums_of(rows: Iterable[tuple[K, str]]) -> dict[K, Decimal] | None:
    """`rows` (a key, a stored amount) added up by key; None if an amount is
    no number or a sum no sum of amounts (a row edited while the plane
    runs): its caller names the row then (`unreadable_day`,
    `unreadable_within`, a `named` read), so a sum that reads costs no more
    than adding it up."""
    sums: dict[K, Decimal] = {}
    try:
        for key, cost in rows:
            sums[key] = sums.get(key, _ZERO) + summand(cost)
    except InvalidOperation:
        return None
    return sums if added_up(sums.values()) else None


def sums_apart(rows: Iterable[tuple[K, str]]) -> tuple[dict[K, Decimal], list[K]]:
    """`sums_of`, key by key, for rows that did not add up together: the
    sums of the keys whose rows do, and the keys whose rows do not (one
    agent's, one group's row edited while the plane runs holds that key
    alone)."""
    by_key: dict[K, list[tuple[K, str]]] = {}
    for key, cost in rows:
        by_key.setdefault(key, []).append((key, cost))
    sums: dict[K, Decimal] = {}
    apart: list[K] = []
    for key, own in by_key.items():
        one = sums_of(own)
        if one is None:
            apart.append(key)
        else:
            sums.update(one)
    return sums, apart


def spent_of(rows: Iterable[Row | tuple[str]]) -> Decimal | None:
    """`sums_of` of one budget's costs (a sum's and its calls' in flight)."""
    sums = sums_of(("", cost) for (cost,) in rows)
    return None if sums is None else sums.get("", _ZERO)


async def unreadable_sum(
    read: Callable[..., Awaitable[list[Row]]], on: str, keys: Mapping[str, str | None]
) -> StoreError | None:
    """The refusal `check_days` makes at start of a day's sum that is not an
    amount, for the rows of day `on` a call's close writes (`keys`: by table,
    its agent, group or tag; None: none), read with `read` (the ledger's):
    None if each reads. For a row edited while the plane runs, which the
    start never saw."""
    for table, key in keys.items():
        if key is not None:
            (sums, by), _ = _day_reads(on, table, "", key)
            if (error := _first_unreadable(on, table, await read(sums, *by), ())) is not None:
                return error
    return None


def _day_reads(
    on: str, table: str, in_flight: str, key: str | None
) -> tuple[tuple[str, tuple[str, ...]], tuple[str, tuple[str, ...]]]:
    """The reads of day `on`'s sums in `table` and of its calls in flight
    (`in_flight`: which, a condition on `calls` after an AND, or "" for all),
    each with its values; of `key` alone if given (an agent, a group, a tag)."""
    sums = f"SELECT {SUMS[table]}, cost_usd FROM {table} WHERE day = ?"
    calls = "SELECT id, agent, cost_usd FROM calls WHERE status = 'pending' AND day = ?"
    if key is not None:
        return (
            (f"{sums} AND {SUMS[table]} = ?", (on, key)),
            (f"{calls} AND {SUMS[table]} = ?", (on, key)),
        )
    return (sums, (on,)), (f"{calls} AND {in_flight}" if in_flight else calls, (on,))


def _first_unreadable(
    on: str, table: str, sums: Iterable[Sequence[object]], calls: Iterable[Sequence[object]]
) -> StoreError | None:
    try:
        for who, cost in sums:
            amount(table, f"{who} on {on}", "cost_usd", cost)
        for call, agent, cost in calls:
            amount("calls", f"call {call} of {agent}", "cost_usd", cost)
    except StoreError as error:
        return error
    return None


async def unreadable_day(
    read: Callable[..., Awaitable[list[Row]]],
    on: str,
    table: str,
    in_flight: str,
    key: str | None = None,
) -> StoreError | None:
    """The refusal `check_days` makes at start, of the first of day `on`'s
    sums in `table` (`spend`, `group_spend`, `tag_spend`) or of its calls in
    flight (`in_flight`: which, a condition on `calls` after an AND, or ""
    for all; `key`: those of one agent, group or tag alone) that is not an
    amount, read with `read` (the ledger's); None if each reads. For a sum
    of them that failed, read again row by row only then."""
    (sums, by), (calls, of) = _day_reads(on, table, in_flight, key)
    return _first_unreadable(on, table, await read(sums, *by), await read(calls, *of))


def unreadable_within(conn: Connection, on: str, table: str, key: str | None) -> StoreError:
    """`unreadable_day`, inside a write function (an admission's): the
    refusal to raise for a sum that failed, naming its row."""
    (sums, by), (calls, of) = _day_reads(on, table, "", key)
    found = _first_unreadable(
        on, table, conn.execute(sums, by).fetchall(), conn.execute(calls, of).fetchall()
    )
    return found or StoreError(changed(table, on))


def changed(table: str, on: str) -> str:
    """What a sum that failed says when each of its rows reads when read
    again: another plane wrote them in between."""
    return f"The ledger could not be read ({table} of {on} changed as it was added up)."


def _unreadable(table: str, row: str, column: str, value: object, what: str) -> StoreError:
    return StoreError(
        f"The store's {table} row for {row} has {column} {value!r}, which is not {what}:"
        " correct or delete that row (what the plane cannot read of its money is never taken"
        " for no ceiling or no cost)."
    )
