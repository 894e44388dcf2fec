"""Which of an agent's refused asks for a looser ceiling the operator is
alerted to: the first, and then one an offer at a time.

An agent may call `set_own_limit` as often as it likes, and each ask is
refused, kept in its conversation with the `/limit` line the operator would
type, and read back by the model. The operator's phone is another matter:
one alert (and its one-tap offer, `plane.money.approvals`) stands for every
ask after it until it is spent, so a model asking for $50, $51, $52, … in a
loop sends one alert, not one an ask. An ask alerts again once

- the operator has loosened the agent's ceiling since (a raise from the
  link, or `/limit`): the agent asks above what it was given, which is news.
  Only the operator can loosen it, so an agent that tightens its own ceiling
  between asks opens nothing;
- the last alert's offer has expired (`LINK_TTL`, or 00:00 UTC): its link no
  longer answers, and a new one is what the operator would need.

A Deny opens nothing: the operator has said no to more for this ceiling, and
the agent asking again within the offer's life is not news.

Kept in memory: a restart forgets it, at most one alert more.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from plane.clock import day_of, midnight_after
from plane.money.approvals import LINK_TTL


@dataclass(frozen=True)
class _Alerted:
    has: Decimal
    """The ceiling the agent had when its ask was alerted."""
    until: datetime
    """When that alert's offer expires: its asks until then are folded into it."""


class AskAlerts:
    def __init__(self) -> None:
        self._alerted: dict[str, _Alerted] = {}

    def first(self, agent: str, has: Decimal, now: datetime) -> bool:
        """Whether `agent`'s ask, refused at a ceiling of `has`, is alerted
        (and, if it is, the one later asks are folded into)."""
        last = self._alerted.get(agent)
        if last is not None and now < last.until and has <= last.has:
            return False
        ends = min(now + LINK_TTL, midnight_after(day_of(now)))
        self._alerted[agent] = _Alerted(has, ends)
        return True
