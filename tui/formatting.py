"""How figures read on screen: dollars, token counts, time to reset.

The plane sends exact `Decimal`s; these only decide how many digits a person
needs to see. A figure is never rounded down to `$0.00` when something was
spent: a row that shows nothing must mean nothing was spent.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal

from plane.protocol import AgentState, Usage

CENT = Decimal("0.01")


def dollars(amount: Decimal) -> str:
    """`$4.10`; `<$0.01` for a spend too small to show in cents."""
    if Decimal(0) < amount < Decimal("0.005"):
        return "<$0.01"
    return f"${amount.quantize(CENT, rounding=ROUND_HALF_UP):,}"


def turn_cost(amount: Decimal) -> str:
    """A single turn's cost: cents, or four decimals when under a cent."""
    if Decimal(0) < amount < CENT:
        return f"${amount.quantize(Decimal('0.0001'), rounding=ROUND_HALF_UP)}"
    return dollars(amount)


def tokens(count: int) -> str:
    """`320`, `12.4k`, `1.2M`."""
    if count < 1000:
        return str(count)
    if count < 1_000_000:
        return f"{count / 1000:.1f}k".replace(".0k", "k")
    return f"{count / 1_000_000:.1f}M".replace(".0M", "M")


def usage_line(cost: Decimal | None, usage: Usage | None) -> str:
    """The quiet turn-cost line: `$0.03 · 12.4k in (11.9k cached) · 320 out`."""
    parts = [turn_cost(cost)] if cost is not None else []
    if usage is not None:
        cached = f" ({tokens(usage.cache_read_tokens)} cached)" if usage.cache_read_tokens else ""
        parts.append(f"{tokens(usage.input_tokens)} in{cached}")
        parts.append(f"{tokens(usage.output_tokens)} out")
    return " · ".join(parts)


def countdown(left: timedelta) -> str:
    """`3h 12m`, `12m`, `40s`: time left until the plane's day resets."""
    seconds = max(0, int(left.total_seconds()))
    hours, rest = divmod(seconds, 3600)
    minutes = rest // 60
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m"
    return f"{seconds}s"


def clock_time(moment: datetime) -> str:
    """`14:02` in the operator's own time zone (display only; never logic)."""
    return moment.astimezone().strftime("%H:%M")


def spend_level(agent: AgentState) -> str:
    """`over` at or past the ceiling, `warn` from `warn_ratio` of it, else `ok`.

    The plane's numbers, compared as the plane defines them; only the colour
    is decided here."""
    limit = agent.limit_usd
    if limit is None:
        return "ok"
    if agent.spend_today_usd >= limit:
        return "over"
    if agent.spend_today_usd >= limit * Decimal(str(agent.warn_ratio)):
        return "warn"
    return "ok"
