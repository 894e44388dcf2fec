"""How figures read on screen: dollars, token counts, time to reset.

The plane sends exact `Decimal`s; the wording of a figure is the product's
one voice, so it comes from `plane.wire.words`, the same as in
the conversation and the CLI. What is the screen's own is here.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from plane.wire.protocol import AgentState, Usage
from plane.wire.words import duration, spend_against, tokens, turn_cost, usage_text, usd

__all__ = [
    "clock_time",
    "duration",
    "spend_against",
    "spend_level",
    "tokens",
    "turn_cost",
    "usage_line",
    "usd",
]


def usage_line(cost: Decimal | None, usage: Usage | None) -> str:
    """The quiet turn-cost line: `$0.03 · 12.4k in (11.9k cached) · 320 out`."""
    parts = [turn_cost(cost)] if cost is not None else []
    if usage is not None:
        parts.append(usage_text(usage))
    return " · ".join(parts)


def clock_time(moment: datetime) -> str:
    """`14:02` in the operator's own time zone (display only; never logic)."""
    return moment.astimezone().strftime("%H:%M")


def spend_level(agent: AgentState) -> str:
    """`over`, `warn` or `ok`, as the plane decided it (never recomputed here)."""
    return agent.spend_level
