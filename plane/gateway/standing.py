"""Whether a gateway call may go now, weighed in dollars: the verdict, from
the agent's day and its calls in flight (`plane.gateway.admission` asks it).

A client chooses how many calls it has in flight and what each costs, so a
ceiling is kept in dollars, two ways at once:

- **likely costs** (`Estimate.likely`) decide what fits: a call whose own
  likely cost does not fit in what is left today is refused before it is
  sent (`too dear`: a true refusal, until 00:00 UTC); one that would fit
  alone but not beside the calls in flight waits for them (`in flight`).
  Calls far under the ceiling never wait on a worst case that does not come.
- **bounds** (`Estimate.bound`) keep the overshoot to one call: a call goes
  only while the calls in flight and itself, at the most each can cost, all
  but the dearest of them, still fit in what is left (`may overshoot`, else
  it waits). Whatever they then cost, the day ends at most one call over the
  ceiling: the one with the largest bound, at what it really cost. A call
  nothing bounds (context the provider holds or fetches, no output limit,
  with a model whose context window is not known) is that one: it flies
  beside bounded calls that fit, never beside another unbounded one.

What is left is the ceiling less what is settled: the day's spend with the
calls in flight taken out, so no figure said is one that was not spent.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Literal

from plane.gateway.estimate import Estimate

Verdict = Literal["go", "too dear", "in flight", "may overshoot"]


class Book:
    """One agent's calls in flight through this plane's gateway: what each will
    likely cost and the most it may bill (None: no bound), both sharpened once
    its provider announces its prompt."""

    def __init__(self) -> None:
        self._bounds: dict[int, Decimal | None] = {}
        self._likely: dict[int, Decimal] = {}
        self._booked: dict[int, Decimal] = {}

    def add(self, call: int, estimate: Estimate) -> None:
        self._bounds[call] = estimate.bound
        self._likely[call] = self._booked[call] = estimate.likely

    def tighten(self, call: int, likely: Decimal, bound: Decimal) -> bool:
        """What its provider announced of a call in flight: a likely cost and a
        bound, kept where lower than what it had. True if either moved."""
        if call not in self._bounds:
            return False
        before = (self._likely[call], self._bounds[call])
        self._likely[call] = min(likely, self._likely[call])
        held = self._bounds[call]
        self._bounds[call] = bound if held is None else min(bound, held)
        return (self._likely[call], self._bounds[call]) != before

    def close(self, call: int) -> None:
        for kept in (self._bounds, self._likely, self._booked):
            kept.pop(call, None)

    def bounds(self) -> list[Decimal | None]:
        return list(self._bounds.values())

    def likely(self) -> Decimal:
        """Their likely costs now (some sharpened by what was announced)."""
        return sum(self._likely.values(), Decimal(0))

    def booked(self) -> Decimal:
        """Their likely costs as the ledger has them."""
        return sum(self._booked.values(), Decimal(0))


@dataclass(frozen=True)
class Standing:
    """An agent's day, as admission weighs it."""

    ceiling: Decimal
    spent: Decimal
    """Today's spend, calls in flight at their likely costs included (the ledger's)."""
    in_flight: Decimal
    """The part of `spent` its calls in flight count."""
    bounds: list[Decimal | None]
    """The most each call in flight may bill (None: no bound)."""
    booked: Decimal = Decimal(0)
    """The likely costs of those calls as the ledger has them (the rest of
    `in_flight` is of calls whose bound is not known here: counted at it)."""
    announced: Decimal | None = None
    """Their likely costs now, some sharpened by what their provider announced
    (None: as booked)."""
    day: date | None = None
    """The plane's day its spend was read on (a tag's: the day a refusal by
    its ceiling counts against); None where not said."""

    @property
    def flying(self) -> Decimal:
        """What the calls in flight will likely cost, as best known now."""
        if self.announced is None:
            return self.in_flight
        return max(Decimal(0), self.in_flight - self.booked) + self.announced

    @property
    def settled(self) -> Decimal:
        return self.spent - self.in_flight

    @property
    def left(self) -> Decimal:
        """What is left today of the ceiling, after what is settled."""
        return self.ceiling - self.settled

    def at_most(self, call: Estimate) -> Decimal | None:
        """What the calls in flight and `call` may bill together, all but the
        dearest of them (None: two of them have no bound)."""
        bounds = [*self.bounds, call.bound]
        if bounds.count(None) > 1:
            return None
        known = [bound for bound in bounds if bound is not None]
        dropped = max(known, default=Decimal(0)) if None not in bounds else Decimal(0)
        unbooked = max(Decimal(0), self.in_flight - self.booked)
        return unbooked + sum(known, Decimal(0)) - dropped


def judge(day: Standing, call: Estimate) -> Verdict:
    if call.likely > day.left:
        return "too dear"
    if day.flying + call.likely > day.left:
        return "in flight"
    most = day.at_most(call)
    if most is None or most > day.left:
        return "may overshoot"
    return "go"
