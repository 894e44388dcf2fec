"""A `calls` row read: as closing a call needs it (`Recorded`), and as the
protocol carries it (`entry_of`)."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from sqlite3 import Connection, Row
from typing import NamedTuple

from plane.clock import read_stamp
from plane.money.stored import amount, day, moment
from plane.money.totals import call_named
from plane.wire.protocol import LedgerEntry, Usage


class Recorded(NamedTuple):
    """A call as its row holds it, parsed: what closing it needs to know (a
    tuple, as the ledger's `Charge`, and made as it is on a call's path)."""

    agent: str
    day: date
    cost_usd: Decimal
    status: str
    price_source: str
    tag: str | None = None
    group: str | None = None


def recorded_call(conn: Connection, call: int) -> Recorded:
    """`call` as its row holds it now (its plane may not have opened it)."""
    row = conn.execute(
        "SELECT agent, day, cost_usd, status, price_source, agent_group, tag FROM calls"
        " WHERE id = ?",
        (call,),
    ).fetchone()
    if row is None:
        raise KeyError(f"no call {call} in the ledger")
    named = f"call {call} of {row['agent']}"  # a close of a call not opened here: seldom
    return Recorded(
        agent=row["agent"],
        day=day("calls", named, "day", row["day"]),
        cost_usd=amount("calls", named, "cost_usd", row["cost_usd"]),
        status=row["status"],
        price_source=row["price_source"],
        tag=row["tag"],
        group=row["agent_group"],
    )


def entry_of(row: Row) -> LedgerEntry:
    """A `calls` row as the protocol carries it (also read by `plane ledger`
    with no plane running, on a file an older plane may have written: a count
    it had no column for is 0). Read with no name; a row that does not read
    is read again naming its call (`_named`): one a row shown, many a day."""
    on, at, cost = _unnamed(row) or _named(row)
    return LedgerEntry(
        id=row["id"],
        agent=row["agent"],
        day=on,
        at=at,
        provider=row["provider"],
        model=row["model"],
        usage=Usage(
            input_tokens=row["input_tokens"],
            cache_read_tokens=row["cache_read_tokens"],
            cache_write_tokens=row["cache_write_tokens"],
            cache_write_1h_tokens=(
                row["cache_write_1h_tokens"] if "cache_write_1h_tokens" in row.keys() else 0
            ),
            output_tokens=row["output_tokens"],
        ),
        cost_usd=cost,
        price_source=row["price_source"],
        status=row["status"],
        estimated=bool(row["estimated"]),
    )


def _unnamed(row: Row) -> tuple[date, datetime, Decimal] | None:
    """`entry_of`'s day, time and cost; None if one does not read."""
    try:
        cost = Decimal(row["cost_usd"])
        if not (isinstance(row["cost_usd"], str) and cost.is_finite() and cost >= 0):
            return None
        return date.fromisoformat(row["day"]), read_stamp(row["at"]), cost
    except (TypeError, ValueError, ArithmeticError):
        return None


def _named(row: Row) -> tuple[date, datetime, Decimal]:
    """`entry_of`'s day, time and cost, each refused (StoreError) by the
    start's sentence naming the call if no plane wrote it."""
    call = call_named(row)
    return (
        day("calls", call, "day", row["day"]),
        moment("calls", call, "at", row["at"]),
        amount("calls", call, "cost_usd", row["cost_usd"]),
    )
