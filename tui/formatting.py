"""How figures read on screen: dollars, token counts, time to reset.

The plane sends exact `Decimal`s; the wording of a figure is the product's
one voice, so it comes from `plane.wire.words`, the same as in
the conversation and the CLI. What is the screen's own is here.
"""

from __future__ import annotations

from datetime import datetime

from plane.wire.protocol import AgentState
from plane.wire.words import duration, spend_against, tokens, turn_cost, usd

__all__ = [
    "clock_time",
    "duration",
    "spend_against",
    "spend_level",
    "tokens",
    "turn_cost",
    "usd",
]


def clock_time(moment: datetime) -> str:
    """`14:02` in the operator's own time zone (display only; never logic)."""
    return moment.astimezone().strftime("%H:%M")


def spend_level(agent: AgentState) -> str:
    """`over`, `warn` or `ok`, as the plane decided it (never recomputed here)."""
    return agent.spend_level
