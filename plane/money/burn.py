"""Burn rate: how fast each agent spends, when it reaches its ceiling at that
pace, and a spike (spend per hour far above its own trailing rate).

**The estimator.** Each agent's settled calls feed two exponentially
weighted rates: a call's cost is added to a sum that decays with a time
constant τ, and the rate is that sum over τ (for spend at a steady λ an
hour, the sum settles at λτ). One number a rate, updated in O(1) per call,
no window of calls kept: a plane of 10,000 agents holds 20,000 floats.

- *The hour* (τ = 1 h) is the pace a forecast extrapolates. A spell of spend
  that began less than τ ago has not filled the sum yet, so the sum is
  divided by what it would hold after a steady spell of that length
  (τ·(1 − e^(−t/τ)), t at least `WARM_FLOOR_S`): an agent that began ten
  minutes ago at $6 an hour reads $6, not $0.94. A spell begins with the
  first call after a pause of `RESTART_TAUS`·τ (the sum has decayed to an
  eighth by then); shorter pauses are part of the pace, so an agent that
  works in bursts is read at its average, not at its bursts.
- *The day* (τ = 24 h) is the trailing rate a spike is measured against,
  warmed the same way: a new agent's baseline is its own pace so far, so its
  first hour is never "far above" a baseline of nothing.

`bench/burn.py` checks the forecast against scripted spend curves (steady,
accelerating, bursty) and compares it with the plain last hour's spend.

**The forecast**: the ceiling minus the spend, at the hour's rate; said only
when it falls before the day resets (after it, the day's end comes first
and there is nothing to say), and only after `MIN_CALLS` calls in the spell.

**A spike**: the hour's rate, not warmed (what the last hour really spent),
at least `spike_ratio` times the day's and at least `spike_floor` dollars
an hour. The caller says it once a day, before amber (`plane.agents.burning`).

Rates are floats: they are estimates, shown rounded; money stays Decimal.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

from plane.clock import Clock
from plane.config import BurnConfig
from plane.errors import StoreError, StoreFault
from plane.money.stored import amount
from plane.store.engine import Database

log = logging.getLogger(__name__)

HOUR_S = 3600.0
DAY_S = 24 * HOUR_S
WARM_FLOOR_S = 600.0
"""A spell younger than this is read as this old: one call a second ago is
not a rate of its cost a second."""
RESTART_TAUS = 2.0
"""A pause this many time constants long ends a spell."""
MIN_CALLS = 3
"""Calls in the spell before a forecast is said: one call is not a pace."""
REFRESH_S = 60.0
"""How often a forecast on show is checked against the clock (an agent that
stopped spending has its forecast move later, then go)."""
MOVED = timedelta(minutes=5)
"""A forecast on show is shown again when it moved this much (or went): an
agent that is spending has its row shown at each call anyway, so this is for
the idle, and a fleet of them is not shown again every minute for a minute's drift."""


_MINUTES = (
    "SELECT agent, substr(at, 1, 16) AS minute,"
    " SUM(CAST(cost_usd AS DOUBLE PRECISION)) AS usd, COUNT(*) AS calls FROM calls"
    " WHERE day >= ? AND status IN ('settled', 'interrupted')"
    " GROUP BY agent, substr(at, 1, 16) ORDER BY minute"
)
_CALLS = (
    "SELECT id, agent, substr(at, 1, 16) AS minute, cost_usd FROM calls"
    " WHERE day >= ? AND status IN ('settled', 'interrupted')"
)


async def _minutes(db: Database, since: str) -> list[tuple[str, str, float, int]]:
    """Each agent's spend a minute from day `since` on (agent, minute, dollars,
    calls), by minute. Summed by the store; but a cost no plane writes, which
    PostgreSQL refuses to read as a number ("abc") or reads as none finite
    ("Infinity"; SQLite reads "1e999" so, and the others as 0), would fail the
    start or every reading of the pace after it: then summed here call by
    call, that call left out of its agent's pace and said in the log."""
    try:
        rows = await db.fetchall(_MINUTES, since)
    except StoreFault as fault:
        if not str(fault.sqlstate).startswith("22"):  # a value the cast refused (a data exception)
            raise
    else:
        if all(row["usd"] is None or math.isfinite(row["usd"]) for row in rows):
            return [(row["agent"], row["minute"], row["usd"] or 0.0, row["calls"]) for row in rows]
    sums: dict[tuple[str, str], float] = {}
    counts: dict[tuple[str, str], int] = {}
    for call, agent, minute, cost in await db.fetchall(_CALLS, since):
        try:
            usd = float(amount("calls", f"call {call} of {agent}", "cost_usd", cost))
        except StoreError:
            usd = math.inf
        if not math.isfinite(usd):
            log.error(
                "calls row %s of %s has cost_usd %r, not an amount; left out of its pace",
                call, agent, cost,
            )  # fmt: skip
            continue
        sums[agent, minute] = sums.get((agent, minute), 0.0) + usd
        counts[agent, minute] = counts.get((agent, minute), 0) + 1
    return sorted(
        ((a, m, usd, counts[a, m]) for (a, m), usd in sums.items()), key=lambda row: row[1]
    )


class Rate:
    """Spend decayed with time constant `tau_s`, and since when it runs."""

    __slots__ = ("at", "calls", "decayed", "since", "tau_s")

    def __init__(self, tau_s: float) -> None:
        self.tau_s = tau_s
        self.decayed = 0.0
        self.at = -math.inf
        """The last call's time (seconds since the epoch)."""
        self.since = -math.inf
        """When the current spell began."""
        self.calls = 0
        """Calls in the current spell."""

    def add(self, at: float, usd: float, calls: int = 1) -> None:
        """`calls` of `usd` together at `at` (a restart reads a minute's back as one)."""
        if at - self.at >= RESTART_TAUS * self.tau_s:
            self.since, self.calls = at, 0
        if at >= self.at:
            self.decayed = self.decayed * math.exp((self.at - at) / self.tau_s) + usd
            self.at = at
        else:  # settled out of order (a restart's replay is sorted; live calls rarely are)
            self.decayed += usd * math.exp((at - self.at) / self.tau_s)
        self.calls += calls

    def per_hour(self, now: float, *, warm: bool = True) -> float:
        """Dollars an hour at `now`; `warm`: as if the spell had always run."""
        if self.calls == 0:
            return 0.0
        held = self.decayed * math.exp(min(0.0, self.at - now) / self.tau_s)
        span = self.tau_s
        if warm:
            observed = max(now - self.since, WARM_FLOOR_S)
            span *= 1 - math.exp(-observed / self.tau_s)
        return held / span * HOUR_S


@dataclass(frozen=True)
class Spike:
    """The figures a spike is told with."""

    hour_usd: Decimal
    """What the last hour spent, per hour."""
    day_usd: Decimal
    """The trailing day's rate, per hour."""
    times: float
    """The one over the other, before either was rounded to cents."""


@dataclass(frozen=True)
class _Shown:
    """A forecast as last given, with what it was worked out from."""

    at: datetime
    spent: Decimal
    ceiling: Decimal
    resets_at: datetime


class Burn:
    """Every agent's rates, fed by the ledger's settled calls (`charged`)."""

    def __init__(self, clock: Clock, config: BurnConfig | None = None) -> None:
        self._clock = clock
        self._config = config or BurnConfig()
        self._hour: dict[str, Rate] = {}
        self._day: dict[str, Rate] = {}
        self._shown: dict[str, _Shown] = {}
        self._told: dict[str, date] = {}
        """The day each agent's spike was last said (the store keeps it too)."""

    def charged(self, agent: str, at: datetime, usd: Decimal, calls: int = 1) -> None:
        """A call of `agent`'s closed at `at`, costing `usd` (the ledger's
        hook); or, read back at a start, `calls` that closed in that minute."""
        if usd <= 0:
            return
        moment, cost = at.timestamp(), float(usd)
        self._hour.setdefault(agent, Rate(HOUR_S)).add(moment, cost, calls)
        self._day.setdefault(agent, Rate(DAY_S)).add(moment, cost, calls)

    async def load(self, db: Database) -> None:
        """The last day's closed calls, a sum per agent and minute: a restart
        keeps every agent's pace (one query, whatever the fleet), and its
        count of calls, so calls made within a minute or two still make a
        pace the forecast is said from."""
        now = self._clock.now()
        since = now - timedelta(seconds=DAY_S)
        for agent, at, usd, calls in await _minutes(db, since.date().isoformat()):
            try:
                minute = datetime.fromisoformat(at).replace(tzinfo=UTC)
            except (TypeError, ValueError):
                # A call's time no plane writes (a store edited by hand): its
                # cost stays in the ledger; only the pace leaves it aside.
                log.error(
                    "calls of %s at %r cannot be read as a time; left out of its pace", agent, at
                )
                continue
            if since <= minute <= now and usd:
                self.charged(agent, minute, Decimal(repr(usd)), calls)

    def per_hour(self, agent: str) -> Decimal | None:
        """The agent's pace now, in cents an hour (None: nothing lately)."""
        rate = self._hour.get(agent)
        if rate is None:
            return None
        cents = round(Decimal(repr(rate.per_hour(self._clock.now().timestamp()))), 2)
        return cents or None

    def reaches(
        self, agent: str, spent: Decimal, ceiling: Decimal | None, resets_at: datetime
    ) -> datetime | None:
        """When `agent` reaches `ceiling` at its pace, if before `resets_at`."""
        at = None
        if ceiling is not None and 0 < ceiling and spent < ceiling and self._paced(agent):
            at = self._forecast(agent, spent, ceiling, resets_at, self._clock.now())
        if at is None:
            self._shown.pop(agent, None)
        else:
            assert ceiling is not None
            self._shown[agent] = _Shown(at, spent, ceiling, resets_at)
        return at

    def _paced(self, agent: str) -> bool:
        """Calls enough lately for a pace. Asked before the clock is read: a
        snapshot asks every agent, most of which have none."""
        rate = self._hour.get(agent)
        return rate is not None and rate.calls >= MIN_CALLS

    def _forecast(
        self, agent: str, spent: Decimal, ceiling: Decimal, resets_at: datetime, now: datetime
    ) -> datetime | None:
        rate = self._hour.get(agent)
        if rate is None or rate.calls < MIN_CALLS:
            return None
        per_hour = rate.per_hour(now.timestamp())
        if per_hour <= 0:
            return None
        hours = float(ceiling - spent) / per_hour
        if hours * HOUR_S >= (resets_at - now).total_seconds():
            return None
        return (now + timedelta(hours=hours)).replace(second=0, microsecond=0)

    def spike(self, agent: str, today: date) -> Spike | None:
        """The figures, when the last hour's spend is far above the trailing
        day's and no spike of the agent's was said `today`."""
        hour, day = self._hour.get(agent), self._day.get(agent)
        if hour is None or day is None or self._told.get(agent) == today:
            return None
        now = self._clock.now().timestamp()
        last_hour, trailing = hour.per_hour(now, warm=False), day.per_hour(now)
        config = self._config
        if last_hour < config.spike_floor_usd_per_hour or last_hour < (
            config.spike_ratio * trailing
        ):
            return None
        return Spike(_cents(last_hour), _cents(trailing), last_hour / max(trailing, 1e-9))

    def told(self, agent: str, today: date) -> None:
        """A spike of `agent`'s was said (or found said) `today`."""
        self._told[agent] = today

    def renamed(self, old: str, new: str) -> None:
        for rates in (self._hour, self._day):
            if old in rates:
                rates[new] = rates.pop(old)
        self._shown.pop(old, None)

    def forget(self, agent: str) -> None:
        for rates in (self._hour, self._day):
            rates.pop(agent, None)
        self._shown.pop(agent, None)

    async def watch(self, publish: Callable[[str], Awaitable[object]]) -> None:
        """Show again, each `REFRESH_S`, a row whose forecast the clock moved:
        no call arrives to do it when an agent stops spending."""
        while True:
            await self._clock.sleep_until(self._clock.now() + timedelta(seconds=REFRESH_S))
            now = self._clock.now()
            for agent, shown in list(self._shown.items()):
                again = self._forecast(agent, shown.spent, shown.ceiling, shown.resets_at, now)
                if again is None or abs(again - shown.at) >= MOVED:
                    await self._show(publish, agent)

    async def _show(self, publish: Callable[[str], Awaitable[object]], agent: str) -> None:
        try:
            await publish(agent)
        except KeyError:  # deleted meanwhile
            self._shown.pop(agent, None)
        except Exception:  # the store away, say: the next round tries again
            log.exception("the forecast of %s could not be shown again", agent)


def _cents(per_hour: float) -> Decimal:
    return round(Decimal(repr(per_hour)), 2)
