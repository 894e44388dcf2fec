"""What the conversation says when spend crosses a line: the once-a-day
warning, the ceiling reached (each time the agent is stopped), why a held
agent is quiet, a model with no price. The words only; the crew and the
gate decide when.

Each figure of spend stands beside its ceiling with the digits it takes to
tell the two apart (`spend_against`): below a dollar, `$0.02 over its
$0.02 ceiling` would read as a contradiction.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from plane.wire.words import pace, spend_against, usd, usd_exact


def ceiling_reached(agent: str, ceiling: Decimal, spent: Decimal, resets_in: str) -> str:
    return (
        f"{agent} has reached its {usd_exact(ceiling)} daily ceiling "
        f"({spend_against(spent, ceiling)} spent) and starts no new turn until 00:00 UTC, in "
        f"{resets_in}, or until the limit is raised."
    )


def held(agent: str, ceiling: Decimal, spent: Decimal, resets_in: str) -> str:
    """Why an agent at or over its ceiling is not answering, and when it will."""
    if ceiling == 0:
        return paused(agent)
    where = "at" if spent == ceiling else "over"
    return (
        f"{agent} has spent {spend_against(spent, ceiling)} today, {where} its "
        f"{usd_exact(ceiling)} daily ceiling; it answers at 00:00 UTC, in {resets_in}, "
        "or when the limit is raised."
    )


@dataclass(frozen=True)
class Whose:
    """Whose ceiling a gateway call is weighed against: the agent's own, its
    group's or its tag's, as the sentences name it."""

    ceiling: str = "its"
    """`its`, `its group research's`, `the tag ticket-123's`."""
    raised: str = "the limit"
    """What raising it is called: `the limit`, `the group limit`, …"""
    calls: str = "calls"
    """Whose calls in flight: the agent's (`calls`), or the group's or tag's."""


ITS = Whose()


def too_dear(
    agent: str,
    likely: Decimal,
    left: Decimal,
    ceiling: Decimal,
    resets_in: str,
    whose: Whose = ITS,
) -> str:
    """Why a call is refused before it is sent: its own likely cost does not
    fit in what is left today, whatever the calls in flight do."""
    return (
        f"{agent} is not answering this call: it would cost about {usd(likely)}, and "
        f"{usd(left)} is left of {whose.ceiling} {usd_exact(ceiling)} daily ceiling today; it "
        f"answers calls that fit at 00:00 UTC, in {resets_in}, or when {whose.raised} is raised."
    )


def in_flight(
    agent: str,
    flying: Decimal,
    likely: Decimal,
    left: Decimal,
    ceiling: Decimal,
    retry_s: int,
    whose: Whose = ITS,
) -> str:
    """Why a call that would fit alone waits: the calls in flight may fill the day."""
    said = f"{agent}'s calls" if whose is ITS else f"the {whose.calls}"
    return (
        f"{said} in flight (about {usd(flying)}) and this one (about {usd(likely)}) "
        f"would take more than the {usd(left)} left of {whose.ceiling} {usd_exact(ceiling)} "
        f"daily ceiling today; it waits for them to settle: retry in {retry_s} seconds."
    )


def may_overshoot(
    agent: str, left: Decimal, ceiling: Decimal, retry_s: int, whose: Whose = ITS
) -> str:
    """Why a call waits while the calls in flight, if each cost all it may,
    would take the day more than one call past the ceiling."""
    said = f"{agent}'s calls" if whose is ITS else f"the {whose.calls}"
    return (
        f"{said} in flight, if they cost all they may, would take it more than one "
        f"call past {whose.ceiling} {usd_exact(ceiling)} daily ceiling ({usd(left)} is left "
        f"today); this call waits for them to settle: retry in {retry_s} seconds."
    )


def paused(agent: str) -> str:
    """A ceiling of zero is a pause: the day turning over does not end it."""
    return (
        f"{agent} is paused: its daily ceiling is $0.00, so it takes no turn until the "
        "limit is raised (/limit 5, or /limit off); a new day does not end a pause."
    )


def warning(agent: str, ceiling: Decimal, spent: Decimal) -> str:
    share = int(spent / ceiling * 100)
    return (
        f"{agent} has spent {spend_against(spent, ceiling)} today, {share}% of its "
        f"{usd_exact(ceiling)} daily ceiling."
    )


def unpriced(model: str) -> str:
    return (
        f"No price is known for {model}, so this turn's cost is not counted; "
        "add the model under `pricing:` in agents.yaml."
    )


def spike(
    agent: str, hour_usd: Decimal, day_usd: Decimal, times: float, reaches_at: datetime | None
) -> str:
    """A pace far above the agent's own trailing one, said once a day before amber."""
    said = (
        f"{agent} is spending {pace(hour_usd)} over the last hour, {times:.0f}× its "
        f"{pace(day_usd)} over the past day."
    )
    if reaches_at is not None:
        said += f" At this rate it reaches its ceiling at {reaches_at:%H:%M} UTC."
    return said
