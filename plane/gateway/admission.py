"""Whether a gateway call may go now, weighed in dollars.

A client chooses how many calls it has in flight and what each costs, so a
ceiling is kept in dollars, two ways at once:

- **likely costs** (`Estimate.likely`) decide what fits: a call whose own
  likely cost does not fit in what is left today is refused before it is
  sent (`too dear`: a true refusal, until 00:00 UTC); one that would fit
  alone but not beside the calls in flight waits for them (`in flight`).
  Calls far under the ceiling never wait on a worst case that does not come.
- **bounds** (`Estimate.bound`) keep the overshoot to one call: a call goes
  only while the calls already in flight, at the most each can cost, still
  fit in what is left (`may overshoot`, else it waits). Whatever they then
  cost, the day ends at most the last admitted call over the ceiling: the
  others were bounded inside it. A call nothing bounds (context the provider
  holds or fetches, no output limit, with a model whose context window is
  not known) flies alone near the ceiling.

What is left is the ceiling less what is settled: the day's spend with the
calls in flight taken out, so no figure said is one that was not spent.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from plane.gateway.estimate import Estimate

Verdict = Literal["go", "too dear", "in flight", "may overshoot"]


class Book:
    """One agent's calls in flight through this plane's gateway: how much more
    than its likely cost each may bill at most (None: no bound)."""

    def __init__(self) -> None:
        self._excess: dict[int, Decimal | None] = {}

    def add(self, call: int, estimate: Estimate) -> None:
        bound = estimate.bound
        self._excess[call] = None if bound is None else max(Decimal(0), bound - estimate.likely)

    def close(self, call: int) -> None:
        self._excess.pop(call, None)

    def excess(self) -> Decimal | None:
        """Together, what the calls in flight may bill over their likely costs."""
        total = Decimal(0)
        for excess in self._excess.values():
            if excess is None:
                return None
            total += excess
        return total


@dataclass(frozen=True)
class Standing:
    """An agent's day, as admission weighs it."""

    ceiling: Decimal
    spent: Decimal
    """Today's spend, calls in flight at their likely costs included (the ledger's)."""
    in_flight: Decimal
    """The part of `spent` its calls in flight count."""
    excess: Decimal | None
    """What those may bill over it, at most (None: no bound)."""

    @property
    def settled(self) -> Decimal:
        return self.spent - self.in_flight

    @property
    def left(self) -> Decimal:
        """What is left today of the ceiling, after what is settled."""
        return self.ceiling - self.settled

    @property
    def most(self) -> Decimal | None:
        """What the calls in flight may cost together, at most."""
        return None if self.excess is None else self.in_flight + self.excess


def judge(day: Standing, call: Estimate) -> Verdict:
    if call.likely > day.left:
        return "too dear"
    if day.in_flight + call.likely > day.left:
        return "in flight"
    most = day.most
    if most is None or most > day.left:
        return "may overshoot"
    return "go"
