"""`/metrics` by what the work is for: groups, tags, and cost by tool
(plane/daemon/metrics.py serves them with the rest).

**Bounded labels.** A label value is a time series Prometheus keeps, so no
client may mint them at will. Groups come from agents.yaml, and so do the
tags with a ceiling; any other tag a call carried, and any tool a gateway
client named, is free-form: only the `TOP` that cost the most stand as
their own label, the rest summed as `(other)`. The series are then at most
the file's groups and tags and `TOP` + 1 more, whatever the clients send.

**Amounts no plane wrote** (a store edited by hand) answer the scrape with
the charts' one sentence naming the row (`plane.money.stored`): each sum
reads its amounts with `Decimal` alone, and reads its rows again by name
only when that failed, so a scrape's every sum costs no more.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import date
from decimal import Decimal, InvalidOperation
from sqlite3 import Connection

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from plane.errors import StoreError
from plane.money.budgets import TAGS_SPENT
from plane.money.stored import added_up, amount, sums_of
from plane.money.totals import PART_KEYS, cost_of, name_unreadable, share_of
from plane.wire.protocol import Snapshot

TOP = 20
"""Free-form label values kept apart (tags, gateway clients' tool names)."""
OTHER = "(other)"

GROUPS = (
    "SELECT agent_group, cost_usd FROM calls"
    " WHERE agent_group IS NOT NULL AND status NOT IN ('pending', 'failed')"
)
PARTS = "SELECT part, tool, mcp_server, cost_usd FROM call_parts"

GROUPS_NAMED = GROUPS.replace("agent_group, cost_usd", "id, agent, cost_usd")
PARTS_NAMED = "SELECT call, part, tool, cost_usd AS cost FROM call_parts"
TAGS_NAMED = "SELECT tag, cost_usd FROM tag_spend WHERE day = ?"
GROUPS_TODAY_NAMED = "SELECT agent_group, cost_usd FROM group_spend WHERE day = ?"
TAGS_IN_FLIGHT_NAMED = (
    "SELECT id, agent, cost_usd FROM calls WHERE status = 'pending' AND day = ? AND tag IS NOT NULL"
)
"""`GROUPS`, `PARTS` and `TAGS_SPENT` again with what names each row: read
only when a sum of theirs failed."""

Named = Callable[[], object]
"""Raises the StoreError naming the first row a sum could not read."""


def groups_today(snapshot: Snapshot) -> list[Metric]:
    spend = GaugeMetricFamily(
        "plane_group_spend_today_usd",
        "What a group's agents have spent together on the plane's UTC day, in US dollars "
        "(calls in flight at their estimates).",
        labels=["group"],
    )
    ceiling = GaugeMetricFamily(
        "plane_group_ceiling_usd",
        "A group's daily ceiling in US dollars (absent: no ceiling).",
        labels=["group"],
    )
    for group in snapshot.groups:
        spend.add_metric([group.name], float(group.spend_today_usd + group.in_flight_usd))
        if group.limit_usd is not None:
            ceiling.add_metric([group.name], float(group.limit_usd))
    return [spend, ceiling]


def read(conn: Connection, day: date, tags: Mapping[str, Decimal | None]) -> list[Metric]:
    """The ledger's sums by group, tag and tool, on the scrape's connection."""
    on = day.isoformat()
    _groups_read(conn, on)
    return [
        *_tags(conn.execute(TAGS_SPENT, (on, on)).fetchall(), tags, lambda: _tag_named(conn, on)),
        _groups(
            conn.execute(GROUPS).fetchall(),
            lambda: name_unreadable(conn.execute(GROUPS_NAMED).fetchall(), cost_of),
        ),
        _tools(
            conn.execute(PARTS).fetchall(),
            lambda: name_unreadable(conn.execute(PARTS_NAMED).fetchall(), share_of),
        ),
    ]


def _groups_read(conn: Connection, on: str) -> None:
    """The day's group sums, each read by name: the snapshot's group figures
    leave out one that does not read (its agents' rows say they are held),
    and the scrape serves no figure short of a row it could not read."""
    for group, cost in conn.execute(GROUPS_TODAY_NAMED, (on,)).fetchall():
        amount("group_spend", f"{group} on {on}", "cost_usd", cost)


def _tag_named(conn: Connection, on: str) -> None:
    """The day's tag sums and tagged calls in flight, each read by name."""
    for tag, cost in conn.execute(TAGS_NAMED, (on,)).fetchall():
        amount("tag_spend", f"{tag} on {on}", "cost_usd", cost)
    name_unreadable(conn.execute(TAGS_IN_FLIGHT_NAMED, (on,)).fetchall(), cost_of)


def _tags(
    rows: Iterable[tuple[str, str]], tags: Mapping[str, Decimal | None], named: Named
) -> list[Metric]:
    spend = GaugeMetricFamily(
        "plane_tag_spend_today_usd",
        f"What gateway calls carrying a tag spent on the plane's UTC day, in US dollars (calls "
        f"in flight at their estimates): the tags of agents.yaml's `tags:`, and the {TOP} "
        f'others that spent the most; the rest as tag="{OTHER}".',
        labels=["tag"],
    )
    ceiling = GaugeMetricFamily(
        "plane_tag_ceiling_usd",
        "A tag's daily ceiling in US dollars (agents.yaml's `tags:`).",
        labels=["tag"],
    )
    sums = summed(((tag, cost) for tag, cost in rows), named)
    for tag in tags:
        sums.setdefault(tag, Decimal(0))
    for tag, spent in _bounded(sums, kept=set(tags)).items():
        spend.add_metric([tag], float(spent))
    for tag, limit in tags.items():
        if limit is not None:
            ceiling.add_metric([tag], float(limit))
    return [spend, ceiling]


def _groups(rows: Iterable[tuple[str, str]], named: Named) -> Metric:
    cost = CounterMetricFamily(
        "plane_group_cost_usd",
        "What the closed LLM calls of a group's agents cost since the ledger began, in US "
        "dollars (the group each call's agent was in when it was made).",
        labels=["group"],
    )
    for group, spent in sorted(summed(rows, named).items()):
        cost.add_metric([group], float(spent))
    return cost


def _tools(rows: Iterable[tuple[str, str | None, str | None, str]], named: Named) -> Metric:
    cost = CounterMetricFamily(
        "plane_tool_cost_usd",
        "What settled LLM calls cost since the ledger began, in US dollars, by what it is "
        "attributed to (the README's cost by tool): each tool's results in the calls' input "
        "(an MCP tool's with its mcp_server), and (prompt), (messages), (answers); the "
        f'{TOP} tools that cost the most apart, the rest as tool="{OTHER}". Calls not '
        "split (in flight, cut, unpriced) are not in it.",
        labels=["tool", "mcp_server"],
    )
    sums: dict[str, Decimal] = {}
    servers: dict[str, str] = {}
    try:
        for part, tool, server, cost_usd in rows:
            key = PART_KEYS.get(part) or tool or "(a tool)"
            sums[key] = sums.get(key, Decimal(0)) + Decimal(cost_usd)
            servers[key] = server or ""
    except InvalidOperation:
        named()
        raise
    if not added_up(sums.values(), signed=True):  # an earlier plane's share could be below zero
        named()
    for key, total in _bounded(sums, kept=set(PART_KEYS.values())).items():
        cost.add_metric([key, servers.get(key, "")], float(total))
    return cost


def summed(rows: Iterable[tuple[str, str]], named: Named) -> dict[str, Decimal]:
    """`rows`, each a key and a stored amount, added up by key (`sums_of`);
    `named()` (which reads the rows again by name and raises the StoreError
    of one it cannot read) only if an amount is no number, or a sum no sum
    of amounts."""
    sums = sums_of(rows)
    if sums is None:
        named()
        raise StoreError("The ledger could not be read (its rows changed as they were added up).")
    return sums


def _bounded(sums: dict[str, Decimal], kept: set[str]) -> dict[str, Decimal]:
    """`kept` and the `TOP` others that cost the most; the rest as one, `OTHER`."""
    others = sorted((k for k in sums if k not in kept), key=lambda k: (-sums[k], k))
    shown = {k: v for k, v in sums.items() if k in kept or k in others[:TOP]}
    if rest := others[TOP:]:
        shown[OTHER] = sum((sums[k] for k in rest), Decimal(0))
    return shown
