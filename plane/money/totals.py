"""The ledger summed over days: by agent, model, day, hour, group, tag,
session — or by tool, what each call's cost is attributed to.

The sums are of the `calls` rows themselves, exact (each cost a Decimal
read from its string, added in Python: SQLite's SUM would add floats). A
cost no plane wrote (a store edited by hand) refuses the sum with one
sentence naming its row (`plane.money.stored`), as `plane ledger` does: left
out, it would understate what was spent (`name_unreadable`). A
pending call counts at its estimate and an interrupted one at what it was
kept at, as the gate counts them: a summary never shows less than the day
was charged. A failed call costs nothing and is still a call.

Pure over rows: the CLI reads them from the database file (so it works with
no plane running), the plane from its reader connection; both use `QUERY`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

from plane.money.stored import added_up, amount, summand
from plane.wire.words import UNPRICED, floor_priced

By = Literal["agent", "model", "day", "hour", "group", "tag", "session", "tool"]
Record = sqlite3.Row | Mapping[str, Any]
"""A `calls` row, as either connection returns it."""

QUERY = (
    "SELECT id, agent, model, day, at, status, input_tokens, cache_read_tokens,"
    ' cache_write_tokens, output_tokens, cost_usd, price_source, agent_group AS "group",'
    " tag, session FROM calls WHERE day BETWEEN ? AND ?"
)
"""Every call charged to a day in [first, last] (ISO days: they sort as text)."""

PARTS_QUERY = (
    "SELECT call_parts.call AS call, part, tool, mcp_server, call_parts.input_tokens AS tokens,"
    " call_parts.cost_usd AS cost FROM call_parts JOIN calls ON calls.id = call_parts.call"
    " WHERE calls.day BETWEEN ? AND ?"
)
"""What the calls of those days' cost is attributed to (`plane.money.attribution`)."""

OLDER = ('agent_group AS "group", tag, session', 'NULL AS "group", NULL AS tag, NULL AS session')
"""`QUERY` on a ledger file from before groups and tags (read by `plane
ledger` with no plane running, which would have brought it up to date)."""

NONE = "(none)"
"""The key of calls with no group, tag or session."""
UNATTRIBUTED = "(unattributed)"
"""By tool: calls whose cost is not split (in flight, cut, unpriced, failed, or older)."""
PART_KEYS = {"prompt": "(prompt)", "messages": "(messages)", "output": "(answers)"}
"""By tool, what is not a tool's: the system prompt and tool schemas, the
messages people and the model wrote, the answers (output, web searches)."""


@dataclass
class Line:
    """One group's sums."""

    key: str
    calls: int = 0
    input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    cost_usd: Decimal = Decimal(0)
    statuses: dict[str, int] = field(default_factory=dict)
    """Calls by ledger status (settled, pending, interrupted, failed)."""
    unpriced: int = 0
    """Calls of a model with no known price: in `calls`, not in `cost_usd`."""
    floor: int = 0
    """Calls priced at a floor (`plane.wire.words.FLOOR`): in `cost_usd` at
    what they cost at least, the rest unknown."""

    def add(self, row: Record) -> None:
        self.calls += 1
        self.input_tokens += int(row["input_tokens"])
        self.cache_read_tokens += int(row["cache_read_tokens"])
        self.cache_write_tokens += int(row["cache_write_tokens"])
        self.output_tokens += int(row["output_tokens"])
        self.cost_usd += summand(row["cost_usd"])
        status = str(row["status"])
        self.statuses[status] = self.statuses.get(status, 0) + 1
        if row["price_source"] == UNPRICED:
            self.unpriced += 1
        elif floor_priced(str(row["price_source"])):
            self.floor += 1


def call_named(row: Record) -> str:
    """A `calls` row as a refusal names it: `call 7 of demo`."""
    return f"call {row['id']} of {row['agent']}"


def cost_of(row: Record) -> Decimal:
    """A call's cost as `plane ledger` reads it: StoreError, naming the
    call, if no plane wrote it."""
    return amount("calls", call_named(row), "cost_usd", row["cost_usd"])


def share_of(part: Record) -> Decimal:
    """A `PARTS_QUERY` row's cost: StoreError, naming the part, if no plane
    wrote it. A share below zero is read (an earlier plane's split gave the
    largest share what rounding left over, which could take it a hair below
    zero; `plane.money.attribution` no longer does)."""
    named = f"the {tool_key(part)} part of call {part['call']}"
    return amount("call_parts", named, "cost_usd", part["cost"], signed=True)


def name_unreadable(rows: Iterable[Record], read: Callable[[Record], object]) -> None:
    """The StoreError of the first of `rows` that `read` (`cost_of`,
    `share_of`, `plane.money.savings.usd_of`) refuses, naming it.

    A sum reads its amounts with `summand` alone and calls this only when
    that failed (a text that is no number, an amount below zero) or what it
    came to is no sum of amounts (`added_up`): naming each row on the way
    would cost the charts' every sum more than its reads."""
    for row in rows:
        read(row)


def cost_sum(rows: Sequence[Record]) -> Decimal:
    """The calls' costs added up (`summarise`'s total alone)."""
    try:
        found = sum((summand(row["cost_usd"]) for row in rows), Decimal(0))
    except InvalidOperation:
        name_unreadable(rows, cost_of)
        raise
    if not added_up([found]):
        name_unreadable(rows, cost_of)
    return found


def window(last: date, days: int) -> tuple[date, date]:
    """The `days` days ending on `last`, both ends included."""
    return last - timedelta(days=days - 1), last


def key_of(row: Record, by: By) -> str:
    if by == "hour":
        return str(row["at"])[11:13]  # ISO time, `…T14:02:…`: the UTC hour
    value = row[by]
    return NONE if value is None else str(value)


def summarise(rows: Sequence[Record], by: By) -> tuple[list[Line], Line]:
    """The groups (the most spent first; days and hours in order) and the total."""
    groups: dict[str, Line] = {}
    total = Line("total")
    try:
        for row in rows:
            key = key_of(row, by)
            groups.setdefault(key, Line(key)).add(row)
            total.add(row)
    except InvalidOperation:
        name_unreadable(rows, cost_of)
        raise
    lines = list(groups.values())
    if not added_up(line.cost_usd for line in (*lines, total)):
        name_unreadable(rows, cost_of)
    if by in ("day", "hour"):
        lines.sort(key=lambda line: line.key)
    else:
        lines.sort(key=lambda line: (-line.cost_usd, line.key))
    return lines, total


def summarise_tools(calls: Sequence[Record], parts: Sequence[Record]) -> tuple[list[Line], Line]:
    """By tool: each call's cost as it is attributed (the shares of its
    input by tool, its prompt, its messages, and its answers, with the
    output tokens they were), a call with no attribution whole under
    `(unattributed)`. The lines add up to the total of the calls, exactly."""
    total = summarise(calls, "agent")[1]  # first: it reads every call's cost
    lines: dict[str, Line] = {}
    seen: dict[str, set[int]] = {}
    attributed: set[int] = set()
    floors = {int(row["id"]) for row in calls if floor_priced(str(row["price_source"]))}
    answers = {int(row["id"]): int(row["output_tokens"]) for row in calls}
    try:
        for part in parts:
            attributed.add(int(part["call"]))
            key = tool_key(part)
            line = lines.setdefault(key, Line(key))
            line.input_tokens += int(part["tokens"])
            if part["part"] == "output":  # the answer is the call's output, all of it
                line.output_tokens += answers.get(int(part["call"]), 0)
            line.cost_usd += Decimal(part["cost"])
            if int(part["call"]) not in seen.setdefault(key, set()):
                seen[key].add(int(part["call"]))
                line.calls += 1
                line.floor += int(part["call"]) in floors  # each share of it is a floor too
    except InvalidOperation:
        name_unreadable(parts, share_of)
        raise
    if not added_up((line.cost_usd for line in lines.values()), signed=True):
        name_unreadable(parts, share_of)
    for row in calls:
        if int(row["id"]) not in attributed:
            lines.setdefault(UNATTRIBUTED, Line(UNATTRIBUTED)).add(row)
    return sorted(lines.values(), key=lambda line: (-line.cost_usd, line.key)), total


def tool_key(part: Record) -> str:
    """A part's line: its tool (an MCP tool is `server.tool`), or what is not a tool's."""
    if part["part"] != "tool":
        return PART_KEYS[str(part["part"])]
    return str(part["tool"]) if part["tool"] else "(a tool)"


def per_day(rows: Sequence[Record], first: date, last: date) -> list[Decimal]:
    """Spend on each day from `first` to `last`, a day with no call as zero
    (a chart's bars, one a day)."""
    sums = {line.key: line.cost_usd for line in summarise(rows, "day")[0]}
    days = (last - first).days + 1
    return [sums.get((first + timedelta(days=n)).isoformat(), Decimal(0)) for n in range(days)]


def per_hour(rows: Sequence[Record]) -> list[Decimal]:
    """Spend in each of a day's 24 UTC hours, by when each call was recorded."""
    sums = {line.key: line.cost_usd for line in summarise(rows, "hour")[0]}
    return [sums.get(f"{hour:02d}", Decimal(0)) for hour in range(24)]
