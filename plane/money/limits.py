"""`/limit`: what the operator types and what the plane answers.

Pure functions: parsing a value and wording the replies. Both halves go to
the conversation; the words are the product's voice (DESIGN.md, "/limit"),
so they live here, in one place, character for character.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

from plane.wire.protocol import SpendLevel
from plane.wire.words import (
    in_flight_apart,
    not_in_cents,
    spend_against,
    spend_priced,
    usd,
    usd_exact,
)

MAX_LIMIT = Decimal(1_000_000)
_ZERO = Decimal(0)
_USE = "Use /limit 5, /limit $0.25 or /limit off."
_AMOUNT = re.compile(r"^\$?([0-9]+)(?:\.([0-9]*))?$|^\$?\.([0-9]+)$")
"""ASCII digits only: `\\d` would take any script's (`/limit ١٠٠` is not $100)."""


@dataclass(frozen=True)
class LimitValue:
    """A parsed `/limit` argument: an amount, or None for `off`."""

    usd: Decimal | None


@dataclass(frozen=True)
class Priced:
    """How much of an agent's spend today has a price, as its row says
    (`AgentState.price_known`, `floor_priced`): all of it; none, on a model
    with no known price (its calls count $0, which is not their cost); or
    some of it priced at a floor, the rest unpriced."""

    price_known: bool = True
    floor_priced: bool = False

    def spend(self, spent: Decimal, ceiling: Decimal | None) -> str:
        """`spent` as the agent's row says it (`spend_priced`)."""
        return spend_priced(
            spent, ceiling, price_known=self.price_known, floor_priced=self.floor_priced
        )


ALL_PRICED = Priced()


class BadLimit(ValueError):
    """A value that is not a limit; the message is the one-line reply."""


def parse_limit(raw: str) -> LimitValue:
    """`5`, `$0.25`, `off`: the amount, or None for no ceiling. A negative
    zero (`-0`, `$-0.00`) is zero, a real ceiling of zero (a pause); any
    other negative amount, or anything that is not one, is a `BadLimit`."""
    value = raw.strip()
    if value.lower() == "off":
        return LimitValue(None)
    shown = _shown(value)
    if value.startswith("-") or value.startswith("$-"):
        if _zero(value.replace("-", "", 1)):
            return LimitValue(Decimal(0))
        raise BadLimit(f"A limit can't be negative ({shown}). {_USE}")
    match = _AMOUNT.match(value)
    if not match:
        raise BadLimit(f"{shown or 'That'} is not an amount. {_USE}")
    whole, cents, bare_cents = match.groups()
    cents = bare_cents if bare_cents is not None else cents
    if cents and len(cents) > 2:
        raise BadLimit(f"{not_in_cents(shown)}. {_USE}")
    amount = Decimal(f"{whole or 0}.{cents or 0}")
    if amount > MAX_LIMIT:
        largest = usd_exact(MAX_LIMIT)
        raise BadLimit(f"{shown} is more than the largest limit, {largest} a day. {_USE}")
    return LimitValue(amount)


def _zero(value: str) -> bool:
    """Whether `value` is an amount of zero (`0`, `$0.00`)."""
    try:
        return _AMOUNT.match(value) is not None and parse_limit(value).usd == 0
    except BadLimit:  # `0.001`: not a limit, and not zero
        return False


def _shown(value: str) -> str:
    """A value as a one-line reply quotes it: on one line, and short."""
    line = " ".join(value.split())
    return line if len(line) <= 40 else line[:39] + "…"


def standing(spent: Decimal, ceiling: Decimal | None, priced: Priced = ALL_PRICED) -> str:
    """`$0.42 spent today, of $5.00 a day.` / `…, against no limit.`; the
    figure as the agent's row and the TUI's title say it (`spend_priced`):
    `$?` spent on a model with no known price, `$0.40+$?` when the rest is."""
    figure = priced.spend(spent, ceiling)
    if ceiling is None:
        return f"{figure} spent today, against no limit."
    return f"{figure} spent today, of {usd_exact(ceiling)} a day."


def raised_note(after: Decimal | None) -> str:
    """What `/limit` adds while a raise from an alert holds."""
    then = "no limit" if after is None else f"{usd_exact(after)} a day"
    return f"Raised until 00:00 UTC from the alert; {then} after."


PAUSE = "A ceiling of $0.00 is a pause: no turn until the limit is raised."


def set_reply(spent: Decimal, ceiling: Decimal | None, priced: Priced = ALL_PRICED) -> str:
    if ceiling is None:
        return f"Spending limit removed. {standing(spent, None, priced)}"
    said = standing(spent, ceiling, priced)
    reply = f"Spending limit set to {usd_exact(ceiling)} a day. {said}"
    return f"{reply} {PAUSE}" if ceiling == 0 else reply


def parse_fleet_limit(raw: str) -> LimitValue:
    """`/limit fleet AMOUNT|off`'s value, its errors naming the fleet form."""
    try:
        return parse_limit(raw)
    except BadLimit as exc:
        raise BadLimit(str(exc).replace(_USE, _USE.replace("/limit ", "/limit fleet "))) from None


def parse_limit_field(raw: str) -> LimitValue:
    """A limit given as a value of its own (`plane edit --limit`, the TUI's
    edit form), its errors naming no command: `Use 5, $0.25 or off.`"""
    try:
        return parse_limit(raw)
    except BadLimit as exc:
        raise BadLimit(str(exc).replace(_USE, _USE.replace("/limit ", ""))) from None


def fleet_standing(spent: Decimal, ceiling: Decimal | None, in_flight: Decimal = _ZERO) -> str:
    """`$12.40 spent today by the fleet, of $50.00 a day.` / `…, against no
    limit.`; `spent` is what closed calls spent, those in flight apart:
    `$0.20 spent today by the fleet (+$0.87 in flight), of $1.00 a day.`"""
    by = f"spent today by the fleet{in_flight_apart(in_flight)}"
    if ceiling is None:
        return f"{usd(spent)} {by}, against no limit."
    return f"{spend_against(spent, ceiling)} {by}, of {usd_exact(ceiling)} a day."


def fleet_set_reply(spent: Decimal, ceiling: Decimal | None, in_flight: Decimal = _ZERO) -> str:
    if ceiling is None:
        return f"Fleet limit removed. {fleet_standing(spent, None, in_flight)}"
    standing = fleet_standing(spent, ceiling, in_flight)
    reply = f"Fleet limit set to {usd_exact(ceiling)} a day. {standing}"
    return f"{reply} {FLEET_PAUSE}" if ceiling == 0 else reply


FLEET_PAUSE = (
    "A ceiling of $0.00 is a pause: no agent takes a turn until the fleet limit is raised."
)
"""What `/limit fleet 0` adds, as `/limit 0` adds `PAUSE`: no new day ends it."""


def parse_group_limit(name: str, raw: str) -> LimitValue:
    """`/limit group NAME AMOUNT|off`'s value, its errors naming the group form."""
    try:
        return parse_limit(raw)
    except BadLimit as exc:
        form = f"/limit group {name} "
        raise BadLimit(str(exc).replace(_USE, _USE.replace("/limit ", form))) from None


def group_standing(
    name: str, spent: Decimal, ceiling: Decimal | None, in_flight: Decimal = _ZERO
) -> str:
    """`$12.40 spent today by group research, of $20.00 a day.` / `…, against
    no limit.`; its calls in flight apart, as `fleet_standing` says them."""
    by = f"spent today by group {name}{in_flight_apart(in_flight)}"
    if ceiling is None:
        return f"{usd(spent)} {by}, against no limit."
    return f"{spend_against(spent, ceiling)} {by}, of {usd_exact(ceiling)} a day."


def tag_reached(name: str, spent: Decimal, ceiling: Decimal, resets_in: str) -> str:
    """A tag's ceiling reached, its calls refused: `the tag ticket-7 has spent
    $0.31 today, of its $0.30 ceiling: …`; a ceiling of zero is a pause."""
    if ceiling == 0:
        return (
            f"the tag {name} has a daily ceiling of $0.00, a pause: its calls are refused until "
            "the ceiling is raised or removed in agents.yaml; a new day does not end it."
        )
    return (
        f"the tag {name} has spent {spend_against(spent, ceiling)} today, of its "
        f"{usd_exact(ceiling)} ceiling: its calls are refused until 00:00 UTC, in {resets_in}, "
        "or until the ceiling is raised in agents.yaml."
    )


def group_set_reply(
    name: str, spent: Decimal, ceiling: Decimal | None, in_flight: Decimal = _ZERO
) -> str:
    if ceiling is None:
        return f"Group {name} limit removed. {group_standing(name, spent, None, in_flight)}"
    said = f"Group {name} limit set to {usd_exact(ceiling)} a day."
    reply = f"{said} {group_standing(name, spent, ceiling, in_flight)}"
    if ceiling == 0:  # as `/limit 0` says `PAUSE`: no new day ends it
        pause = f"none of group {name}'s agents takes a turn until the group limit is raised."
        return f"{reply} A ceiling of $0.00 is a pause: {pause}"
    return reply


def not_own(raw: str) -> str:
    """What the plane says when an agent asks for a ceiling that is not its
    own (a group's, the fleet's): it may only tighten its own."""
    line = " ".join(raw.split())[:60]
    return (
        "This agent asked to set a ceiling that is not its own; an agent can only ask to be "
        f"held to less itself: /limit {line}, if you meant it."
    )


def refusal(asked: Decimal | None, has: Decimal) -> str:
    """What the plane says when an agent asks to be held to more."""
    if asked is None:
        return (
            f"This agent asked for no ceiling, which is above the {usd_exact(has)} it has. "
            "It can ask to be held to less, never to more: /limit off, if you meant it."
        )
    return (
        f"This agent asked for a ceiling of {usd_exact(asked)} a day, which is above the "
        f"{usd_exact(has)} it has. It can ask to be held to less, never to more: "
        f"/limit {usd_exact(asked)}, if you meant it."
    )


def is_tighter(asked: Decimal | None, has: Decimal | None) -> bool:
    """Whether an agent's ask only removes capacity (equal counts: it adds none)."""
    if has is None:
        return True
    return asked is not None and asked <= has


def spend_level(spent: Decimal, ceiling: Decimal | None, warn_ratio: float) -> SpendLevel:
    """Where `spent` stands against `ceiling`: the one definition of amber and red."""
    if ceiling is None:
        return "ok"
    if spent >= ceiling:
        return "over"
    if spent >= ceiling * Decimal(str(warn_ratio)):
        return "warn"
    return "ok"


def steps_down(spent: Decimal, ceiling: Decimal | None, at: float) -> bool:
    """Whether an agent whose fallback is at `at` of `ceiling` runs on it now
    (no ceiling: never; at a ceiling of zero it is held anyway)."""
    return ceiling is not None and ceiling != 0 and spent >= ceiling * Decimal(str(at))
