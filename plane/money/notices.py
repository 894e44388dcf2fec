"""What the conversation says when spend crosses a line: the once-a-day
warning, the ceiling reached, a model with no price. The words only; the
crew decides when (once a day each, through `Conversation.first_today`).
"""

from __future__ import annotations

from decimal import Decimal

from plane.wire.words import usd, usd_exact


def ceiling_reached(agent: str, ceiling: Decimal, spent: Decimal, resets_in: str) -> str:
    return (
        f"{agent} has reached its {usd_exact(ceiling)} daily ceiling ({usd(spent)} "
        f"spent) and starts no new turn until 00:00 UTC, in "
        f"{resets_in}, or until the limit is raised."
    )


def warning(agent: str, ceiling: Decimal, spent: Decimal) -> str:
    share = int(spent / ceiling * 100)
    return (
        f"{agent} has spent {usd(spent)} today, {share}% of its {usd_exact(ceiling)} daily ceiling."
    )


def unpriced(model: str) -> str:
    return (
        f"No price is known for {model}, so this turn's cost is not counted; "
        "add the model under `pricing:` in agents.yaml."
    )
