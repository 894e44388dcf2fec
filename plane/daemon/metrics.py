"""`GET /metrics`: the plane in Prometheus' text format (prometheus-client).

A scrape is served a recent reading: the rows as the TUI shows them, and
sums over the ledger's `calls`, `spend` and `savings` tables since the
ledger began, taken together. The sums read the whole ledger (about a second
at a million calls), so they are read and added up aside
(`Database.read_aside`: a thread and a connection of their own): neither the
reads every turn makes nor the event loop wait on a scrape. And a scrape
must not cost the calls it measures, however many scrapers loop: a reading
is served again for `FRESH_S` (longer on a ledger so large that taking it
takes over a tenth of that: `SPARE` times as long as it took); scrapes are
answered one at a time, at most `1 / EVERY_S` a second, so a reading is
taken by one scrape and the scrapes that arrive meanwhile are served it. A
reading is kept in memory only, so nothing drifts from the ledger for longer
than that.

Names follow Prometheus' conventions (`plane_` prefix, the unit last, `_usd`
for dollars, `_total` on counters, which prometheus-client adds). Where
OpenTelemetry's GenAI conventions name the same thing, their attribute is
the label, dots written as underscores as OpenTelemetry's own Prometheus
exporter writes them: `gen_ai_request_model` (gen_ai.request.model) and
`gen_ai_token_type` (gen_ai.token.type: `input`, `output`; and
`cache_read` / `cache_creation`, the parts of the input OpenTelemetry counts
as gen_ai.usage.cache_read.input_tokens and
gen_ai.usage.cache_creation.input_tokens). Each metric's HELP names the
attribute it carries.

Dollars are floats here because Prometheus' samples are: for exact figures,
`plane ledger --summary --json`.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from decimal import Decimal
from sqlite3 import Connection, Row

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from plane.daemon import metrics_purpose
from plane.money import savings
from plane.money.stored import amount
from plane.store.engine import Database
from plane.wire.protocol import Snapshot
from plane.wire.words import FLOOR, UNPRICED

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
FRESH_S = 5.0
"""How long a reading is served before the next one is taken: well under
Prometheus' usual scrape interval (15 s to a minute)."""
SPARE = 10
"""A reading is served for at least this many times as long as it took, so
taking readings fills at most a tenth of the plane's time, whatever the
ledger's size."""
EVERY_S = 0.05
"""Scrapes are answered at most once per this long (20 a second, far more
than Prometheus asks): a scraper that loops waits its turn instead of taking
the plane's time from the calls it measures."""

CALLS = (
    "SELECT agent, model, status, COUNT(*) AS calls, SUM(input_tokens) AS input,"
    " SUM(cache_read_tokens) AS cache_read, SUM(cache_write_tokens) AS cache_write,"
    " SUM(output_tokens) AS output,"
    " SUM(CASE WHEN price_source = ? OR price_source LIKE ? THEN 1 ELSE 0 END) AS unpriced"
    " FROM calls GROUP BY agent, model, status"
)
UNPRICED_SOURCES = (UNPRICED, f"%{FLOOR}")
"""The price sources of calls whose cost is not all known (`unpriced_call`)."""
SPENT = "SELECT agent, cost_usd FROM spend"
MODEL = "gen_ai_request_model"
TOKEN_TYPE = "gen_ai_token_type"


class Metrics:
    """What a scrape is served; `snapshot` is the rows' (`Rows.snapshot`)."""

    def __init__(
        self,
        snapshot: Callable[[], Awaitable[Snapshot]],
        db: Database,
        *,
        tags: Mapping[str, Decimal | None] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        every_s: float = EVERY_S,
    ) -> None:
        self._snapshot = snapshot
        self._db = db
        self._tags = dict(tags or {})
        """The tags of agents.yaml, each with its ceiling: always their own label."""
        self._monotonic = monotonic
        self._every_s = every_s
        self._turn = asyncio.Lock()
        """Scrapes are answered one at a time (which makes one reading serve all
        the scrapes that waited for it)."""
        self._answered = float("-inf")
        self._reading = b""
        self._until = float("-inf")
        """When the reading stops being served (the monotonic clock's time)."""
        self.readings = 0
        """Readings taken since the plane started."""

    async def scrape(self) -> bytes:
        """The latest reading while it is recent, else a new one; in turn."""
        async with self._turn:
            if (wait := self._answered + self._every_s - self._monotonic()) > 0:
                await asyncio.sleep(wait)
            if self._monotonic() >= self._until:
                await self._take()
            self._answered = self._monotonic()
            return self._reading

    async def _take(self) -> None:
        began = self._monotonic()
        snapshot = await self._snapshot()
        by_purpose = functools.partial(metrics_purpose.read, day=snapshot.day, tags=self._tags)
        families = [
            *_rows(snapshot),
            *metrics_purpose.groups_today(snapshot),
            *await self._db.read_aside(_ledger),
            *await self._db.read_aside(by_purpose),
        ]
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Families(families))
        self._reading = generate_latest(registry)
        now = self._monotonic()
        self._until = now + max(FRESH_S, SPARE * (now - began))
        self.readings += 1


class _Families(Collector):
    """Families already read (prometheus-client's collectors are synchronous;
    the reading is not)."""

    def __init__(self, families: list[Metric]) -> None:
        self._families = families

    def collect(self) -> Iterator[Metric]:
        yield from self._families


def _ledger(conn: Connection) -> list[Metric]:
    """The sums since the ledger began, on the scrape's own connection."""
    return [
        *_calls(conn.execute(CALLS, UNPRICED_SOURCES).fetchall()),
        _spent(conn.execute(SPENT).fetchall(), lambda: _spend_named(conn)),
        *(
            metric
            for lever in _REMOVED
            for metric in _saved(lever, savings.totals_within(conn, lever))
        ),
    ]


def _rows(snapshot: Snapshot) -> list[Metric]:
    spend = GaugeMetricFamily(
        "plane_agent_spend_today_usd",
        "What the agent has spent on the plane's UTC day, in US dollars.",
        labels=["agent"],
    )
    ceiling = GaugeMetricFamily(
        "plane_agent_ceiling_usd",
        "The agent's daily ceiling in US dollars (absent: no ceiling; 0 is a pause).",
        labels=["agent"],
    )
    held = GaugeMetricFamily(
        "plane_agent_held",
        "1 while the agent is held: no new turn; reason is why (ceiling, loop: the loop "
        "guard's, until the operator resumes it; unpriced, fleet, group, ...), empty while "
        "it is not held.",
        labels=["agent", "reason"],
    )
    stepped = GaugeMetricFamily(
        "plane_agent_stepped_down",
        "1 while the agent runs on its cheaper fallback model near its ceiling (fallback:).",
        labels=["agent"],
    )
    waiting = GaugeMetricFamily(
        "plane_agent_waiting_messages",
        "Messages stored while the agent was held, not yet answered.",
        labels=["agent"],
    )
    priced = GaugeMetricFamily(
        "plane_agent_price_known",
        "1 while the agent's model has a known price; 0: its calls count $0 in the spend "
        "figures, which is not what they cost.",
        labels=["agent"],
    )
    burn = GaugeMetricFamily(
        "plane_agent_burn_usd_per_hour",
        "The agent's pace: spend per hour over its recent settled calls, an exponentially "
        "weighted rate (absent: nothing spent lately).",
        labels=["agent"],
    )
    reaches = GaugeMetricFamily(
        "plane_agent_reaches_ceiling_in_seconds",
        "Seconds until the agent reaches its ceiling at its pace; present only when that is "
        "before the day resets.",
        labels=["agent"],
    )
    for agent in snapshot.agents:
        spend.add_metric([agent.name], float(agent.spend_today_usd))
        if agent.burn_usd_per_hour is not None:
            burn.add_metric([agent.name], float(agent.burn_usd_per_hour))
        if agent.reaches_ceiling_at is not None:
            left = (agent.reaches_ceiling_at - snapshot.now).total_seconds()
            reaches.add_metric([agent.name], max(0.0, left))
        priced.add_metric([agent.name], 1.0 if agent.price_known else 0.0)
        if agent.limit_usd is not None:
            ceiling.add_metric([agent.name], float(agent.limit_usd))
        is_held = agent.status == "held"
        held.add_metric([agent.name, agent.hold_reason or ""], 1.0 if is_held else 0.0)
        stepped.add_metric([agent.name], 1.0 if agent.stepped_down_from else 0.0)
        waiting.add_metric([agent.name], float(agent.waiting))
    reset = GaugeMetricFamily(
        "plane_day_resets_in_seconds",
        "Seconds until 00:00 UTC ends the plane's day and every agent's spend starts again.",
        value=max(0.0, (snapshot.resets_at - snapshot.now).total_seconds()),
    )
    return [spend, ceiling, held, stepped, waiting, priced, burn, reaches, reset]


def _calls(rows: list[Row]) -> list[Metric]:
    calls = CounterMetricFamily(
        "plane_llm_calls",
        f"LLM calls in the ledger, by status (settled, pending, interrupted, failed); "
        f"{MODEL} is OpenTelemetry's gen_ai.request.model.",
        labels=["agent", MODEL, "status"],
    )
    tokens = CounterMetricFamily(
        "plane_llm_tokens",
        f"Tokens of the ledger's LLM calls; {TOKEN_TYPE} is OpenTelemetry's gen_ai.token.type "
        "(input: gen_ai.usage.input_tokens, every prompt token, cached or not; output: "
        "gen_ai.usage.output_tokens; cache_read: gen_ai.usage.cache_read.input_tokens; "
        "cache_creation: gen_ai.usage.cache_creation.input_tokens).",
        labels=["agent", MODEL, TOKEN_TYPE],
    )
    unpriced = CounterMetricFamily(
        "plane_llm_unpriced_calls",
        "LLM calls in the ledger whose cost is not all known: no price for their model "
        "($0 in the cost figures, which is not what they cost), or a floor (the model that "
        "answered has no known price: counted at the one asked for, at least what it cost).",
        labels=["agent", MODEL],
    )
    used: dict[tuple[str, str, str], int] = {}
    not_priced: dict[tuple[str, str], int] = {}
    for row in rows:
        calls.add_metric([row["agent"], row["model"], row["status"]], row["calls"])
        if row["unpriced"]:
            named = (row["agent"], row["model"])
            not_priced[named] = not_priced.get(named, 0) + int(row["unpriced"])
        for kind, column in (
            ("input", "input"),
            ("output", "output"),
            ("cache_read", "cache_read"),
            ("cache_creation", "cache_write"),
        ):
            key = (row["agent"], row["model"], kind)
            used[key] = used.get(key, 0) + int(row[column] or 0)
    for key, count in used.items():
        tokens.add_metric(list(key), count)
    for (agent, model), count in not_priced.items():
        unpriced.add_metric([agent, model], count)
    return [calls, tokens, unpriced]


def _spend_named(conn: Connection) -> None:
    """Each day's sum of `SPENT` read by name: only when their sum failed."""
    for on, agent, cost in conn.execute("SELECT day, agent, cost_usd FROM spend").fetchall():
        amount("spend", f"{agent} on {on}", "cost_usd", cost)


def _spent(rows: Iterable[tuple[str, str]], named: metrics_purpose.Named) -> Metric:
    spent = CounterMetricFamily(
        "plane_llm_cost_usd",
        "What the agent's closed LLM calls cost since the ledger began, in US dollars "
        "(a call in flight counts in plane_agent_spend_today_usd at its estimate).",
        labels=["agent"],
    )
    sums = metrics_purpose.summed(rows, named)
    for agent, total in sorted(sums.items()):
        spent.add_metric([agent], float(total))
    return spent


_REMOVED = {
    savings.COMPRESSION: "Characters of tool output compression kept out of the model's input.",
    savings.COMPACTION: (
        "Characters of old tool results compaction took out of the model's history."
    ),
}
"""What each lever's characters are, by lever (its metrics' names say which)."""


def _saved(lever: str, totals: dict[str, tuple[int, Decimal]]) -> list[Metric]:
    """`lever`'s characters and their worth, by agent: `plane_{lever}_removed_characters`
    and `plane_{lever}_saved_usd`."""
    chars = CounterMetricFamily(
        f"plane_{lever}_removed_characters", _REMOVED[lever], labels=["agent"]
    )
    usd = CounterMetricFamily(
        f"plane_{lever}_saved_usd",
        "What those characters would have cost as input tokens of the agent's model "
        "(4 characters a token), in US dollars; unpriced models add nothing.",
        labels=["agent"],
    )
    for agent, (removed, saved) in sorted(totals.items()):
        chars.add_metric([agent], removed)
        usd.add_metric([agent], float(saved))
    return [chars, usd]
