"""The burn-rate forecast against scripted spend curves, and the spike alert.

    .venv/bin/python bench/burn.py

Each curve is one UTC day of an agent's calls (times and costs) under a
$5.00 ceiling. At the call that brings its spend to half the ceiling, the
plane's forecast (`plane.money.burn.Burn.reaches`, fed the calls as the
ledger feeds it) is read and set against the moment the curve really
reaches the ceiling; the error is in minutes and as a share of the time
that was left. The same is done with the plain last hour's spend (a
sliding window, warmed the same way) for comparison.

Curves: steady ($0.50 an hour), jittered (the same on average, with random
gaps and costs), bursty (ten minutes of work every 40, 60 or 90 minutes, the
same average: the last hour's window is exact only when the bursts are hourly),
accelerating (its pace growing linearly), and fast ($6 an hour: the ceiling
in under an hour, where a forecast that waits for an hour of history is no
use). Then the spike: a runaway (an agent at $0.10 an hour since midnight
that goes to $2 an hour at 10:00) should alert well before amber (80%), and
the curves above should alert never.

No time is measured: the figures are the same on any machine.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from plane.clock import day_of, midnight_after
from plane.config import BurnConfig
from plane.money.burn import HOUR_S, Burn

DAY = datetime(2026, 11, 29, tzinfo=UTC)
CEILING = Decimal(5)
Calls = list[tuple[float, Decimal]]
"""(seconds since 00:00 UTC, cost)."""


class Clock:
    def __init__(self) -> None:
        self.at = DAY

    def now(self) -> datetime:
        return self.at

    async def sleep_until(self, when: datetime) -> None:  # the forecast's watch: unused here
        raise NotImplementedError


def steady(start_h: float = 8, per_hour: float = 0.5, every_min: float = 3) -> Calls:
    cost = Decimal(str(round(per_hour * every_min / 60, 6)))
    t = start_h * HOUR_S
    calls = []
    while t < 24 * HOUR_S:
        calls.append((t, cost))
        t += every_min * 60
    return calls


def jittered(seed: int) -> Calls:
    rng = random.Random(seed)
    t, calls = 8 * HOUR_S, []
    while t < 24 * HOUR_S:
        gap = rng.expovariate(1 / 180)  # a call every 3 minutes on average
        t += gap
        calls.append((t, Decimal(str(round(0.5 * gap / HOUR_S * rng.uniform(0.3, 1.7), 6)))))
    return calls


def bursty(period_min: int = 60) -> Calls:
    """From 08:00, ten calls a minute apart every `period_min`: $0.50 an hour on average."""
    cost = Decimal(str(round(0.5 * period_min / 60 / 10, 6)))
    starts = range(8 * 60, 24 * 60, period_min)
    return [((start + minute) * 60.0, cost) for start in starts for minute in range(10)]


def accelerating() -> Calls:
    """From $0.10 an hour at 08:00, growing by $0.078 an hour each hour."""
    calls, t = [], 8 * HOUR_S
    while t < 24 * HOUR_S:
        hours = (t - 8 * HOUR_S) / HOUR_S
        calls.append((t, Decimal(str(round((0.1 + 0.078 * hours) * 3 / 60, 6)))))
        t += 180
    return calls


def runaway() -> Calls:
    """$0.10 an hour from 00:00, then $2.00 an hour from 10:00."""
    slow = [(t, c) for t, c in steady(0, 0.1, 10) if t < 10 * HOUR_S]
    return slow + steady(10, 2.0, 2)


@dataclass
class Forecast:
    at_half_h: float
    """When the spend reached half the ceiling (hours since 00:00)."""
    truth_h: float
    plane_h: float | None
    window_h: float | None


def forecasts(calls: Calls) -> Forecast:
    clock = Clock()
    burn = Burn(clock)
    spent, half, seen = Decimal(0), None, []
    resets = midnight_after(DAY.date())
    plane_at = window_at = None
    for t, cost in calls:
        clock.at = DAY + timedelta(seconds=t)
        burn.charged("a", clock.at, cost)
        seen.append((t, cost))
        spent += cost
        if half is None and spent >= CEILING / 2:
            half = t
            forecast = burn.reaches("a", spent, CEILING, resets)
            plane_at = None if forecast is None else _hours(forecast)
            window_at = last_hour(seen, spent, t)
        if spent >= CEILING:
            assert half is not None
            return Forecast(half / HOUR_S, t / HOUR_S, plane_at, window_at)
    raise ValueError("the curve never reaches the ceiling")


def last_hour(seen: Calls, spent: Decimal, now: float) -> float | None:
    """The plain estimator: the last hour's spend, over the hour (or the spell so far)."""
    recent = sum(float(c) for t, c in seen if t > now - HOUR_S)
    span = min(HOUR_S, max(now - seen[0][0], 600.0))
    per_hour = recent / span * HOUR_S
    return now / HOUR_S + float(CEILING - spent) / per_hour if per_hour else None


def spikes(calls: Calls, config: BurnConfig) -> Iterator[tuple[float, Decimal, float, float]]:
    """(hours since 00:00, spent, last hour's $/h, trailing day's $/h) at each call a spike
    would be said (once a day, under amber)."""
    clock = Clock()
    burn = Burn(clock, config)
    spent = Decimal(0)
    for t, cost in calls:
        clock.at = DAY + timedelta(seconds=t)
        burn.charged("a", clock.at, cost)
        spent += cost
        if spent >= CEILING * Decimal("0.8"):
            return
        if (spike := burn.spike("a", day_of(clock.at))) is not None:
            burn.told("a", day_of(clock.at))
            yield t / HOUR_S, spent, float(spike.hour_usd), float(spike.day_usd)


def _hours(moment: datetime) -> float:
    return (moment - DAY).total_seconds() / HOUR_S


def _clock(hours: float) -> str:
    minutes = round(hours * 60)
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _error(forecast: float | None, f: Forecast) -> str:
    if forecast is None:
        return "   none said"
    minutes = (forecast - f.truth_h) * 60
    share = (forecast - f.truth_h) / (f.truth_h - f.at_half_h) * 100
    return f"{minutes:+6.0f} min {share:+5.0f}%"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20, help="jittered curves to average")
    args = parser.parse_args()
    curves: dict[str, Callable[[], Calls]] = {
        "steady $0.50/h": steady,
        "jittered (seed 1)": lambda: jittered(1),
        "bursty, hourly": bursty,
        "bursty, every 40 min": lambda: bursty(40),
        "bursty, every 90 min": lambda: bursty(90),
        "accelerating": accelerating,
        "fast $6/h": lambda: steady(8, 6.0, 1),
    }
    print(f"forecast at 50% of a {CEILING:.2f} ceiling: error against when it is reached")
    print(f"  {'curve':<22} {'50% at':>6} {'reached':>7}  {'plane (EW 1 h)':>17}  last hour")
    for name, make in curves.items():
        f = forecasts(make())
        print(
            f"  {name:<22} {_clock(f.at_half_h):>6} {_clock(f.truth_h):>7}  "
            f"{_error(f.plane_h, f):>17}  {_error(f.window_h, f)}"
        )
    plane_errors: list[float] = []
    window_errors: list[float] = []
    for seed in range(1, args.seeds + 1):
        f = forecasts(jittered(seed))
        for errors, forecast in ((plane_errors, f.plane_h), (window_errors, f.window_h)):
            if forecast is not None:
                errors.append(abs(forecast - f.truth_h) / (f.truth_h - f.at_half_h) * 100)
    for name, errors in (("plane", plane_errors), ("last hour", window_errors)):
        print(
            f"  jittered, {args.seeds} seeds, {name}: mean |error| "
            f"{sum(errors) / len(errors):.0f}% of the time left, worst {max(errors):.0f}%"
        )
    config = BurnConfig()
    print(
        f"spike (last hour >= {config.spike_ratio:g}x the past day's, "
        f">= ${config.spike_floor_usd_per_hour}/h):"
    )
    fired = list(spikes(runaway(), config))
    if fired:
        at, spent, hour, day = fired[0]
        amber = next(t for t, s in _cumulative(runaway()) if s >= CEILING * Decimal("0.8")) / HOUR_S
        print(
            f"  runaway ($0.10/h, then $2/h from 10:00): alerted at {_clock(at)}, "
            f"{(at - 10) * 60:.0f} min in, ${spent:.2f} spent (${hour:.2f}/h against "
            f"${day:.2f}/h); amber at {_clock(amber)}"
        )
    else:
        print("  runaway: no spike alert before amber")
    for name, make in curves.items():
        print(f"  {name:<22} false spikes: {len(list(spikes(make(), config)))}")


def _cumulative(calls: Calls) -> Iterator[tuple[float, Decimal]]:
    spent = Decimal(0)
    for t, cost in calls:
        spent += cost
        yield t, spent


if __name__ == "__main__":
    main()
