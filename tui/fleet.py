"""Finding an agent among fifty: the fleet line, the row order, the filters.

Pure functions over the plane's `AgentState`s, so the agent list, the fleet
line and the tests read the same answer.

Held and amber rows come first in every order (then the chosen sort), and
the list pins them at its top while the rest scroll under them: an operator
browsing fifty agents by name is still looking at the three that need them.
A filter is the operator asking for fewer rows, so it may leave them out;
the fleet line, always on screen, still counts them (in their colours).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import MAX_EMAX, MAX_PREC, MIN_EMIN, Context, Decimal

from plane.wire.protocol import AgentState
from plane.wire.words import at_a_floor, decimals_shown, spend_summed
from tui.formatting import spend_against, spend_level, usd

SORTS = ("listed", "state", "spend", "name")
"""`s` in the list steps through these; `listed` is the plane's own order
(the config's, then creation)."""
SORT_WORDS = {"listed": "", "state": "by state", "spend": "by spend", "name": "by name"}
STATE_FILTERS: tuple[str | None, ...] = (None, "working", "held", "paused", "amber", "unread")
"""`f` in the list steps through these; None shows every agent."""
_RANK = {"held": 0, "over": 1, "warn": 2, "working": 3}


def alarming(agent: AgentState) -> bool:
    """Held, or amber or red on spend: a row that must stay in sight."""
    return agent.status == "held" or spend_level(agent) != "ok"


def _rank(agent: AgentState) -> int:
    if agent.status == "held":
        return _RANK["held"]
    level = spend_level(agent)
    return _RANK.get(level, _RANK.get(agent.status, 9))


def ordered(agents: Sequence[AgentState], sort: str) -> list[AgentState]:
    """`agents` in `sort` order, the alarming ones first (stably)."""
    if sort == "state":
        rows = sorted(agents, key=lambda a: (_rank(a), a.name.casefold()))
    elif sort == "spend":
        rows = sorted(agents, key=lambda a: (-a.spend_today_usd, a.name.casefold()))
    elif sort == "name":
        rows = sorted(agents, key=lambda a: a.name.casefold())
    else:
        rows = list(agents)
    return [a for a in rows if alarming(a)] + [a for a in rows if not alarming(a)]


Place = tuple[bool, bool, object]
"""Where a row goes (`place`): compared as a whole, never looked into."""


def place(agent: AgentState, sort: str, name: str, state: str | None, unread: set[str]) -> Place:
    """What decides `agent`'s row position: while it is unchanged by an
    update, the row stays where it is and only its line is redrawn."""
    key = {"state": _rank(agent), "spend": agent.spend_today_usd}.get(sort)
    return (alarming(agent), shown(agent, name, state, unread), key)


def shown(agent: AgentState, name: str, state: str | None, unread: set[str]) -> bool:
    """Does `agent` pass the name filter (a piece of its name, any case) and the state one?"""
    if name and name.casefold() not in agent.name.casefold():
        return False
    if state is None:
        return True
    if state == "amber":
        return spend_level(agent) != "ok"
    if state == "unread":
        return agent.name in unread
    return agent.status == state


NOTHING = {
    "working": "no agent is working",
    "held": "no agent is held",
    "paused": "no agent is paused",
    "amber": "no agent is amber or red",
    "unread": "nothing unread",
}


def nothing_shown(name: str, state: str | None) -> str:
    """What the list says when its filters leave no row, and how to move on
    (`no agent is working · f: next filter`); "" with no filter. An empty
    list alone read as an empty fleet."""
    if name:
        return f"no agent's name has {name!r} · Esc clears"
    if state:
        return f"{NOTHING.get(state, 'none')} · f: next filter"
    return ""


@dataclass(frozen=True)
class Fleet:
    """What the fleet line says."""

    agents: int
    working: int
    amber: int
    held: int
    spent: Decimal
    paused: int = 0
    """Paused by the operator: not working, not held, and not to be forgotten."""
    spent_shown: str = ""
    """`spent` worded as the rows word theirs (`plane.wire.words.spend_total`)."""
    ceiling: Decimal | None = None
    """The fleet's daily ceiling, when there is one (several planes, one store)."""
    floor_priced: bool = False
    """Some agent's spend today holds a call priced at a floor: the sum is
    what the fleet spent at least, the rest unpriced, as that agent's title says."""

    def parts(self) -> list[tuple[str, str]]:
        """(text, state) pieces: `55 agents`, `4 working`, `1 amber`, `3 held`,
        `1 paused`, `$1.12 today` (`$1.12 + unpriced today` when a call of the
        day was priced at a floor); a count of zero says nothing, like a row at $0."""
        plural = "" if self.agents == 1 else "s"
        parts = [(f"{self.agents:,} agent{plural}", "")]  # 10,000 agents, as the plane says it
        for count, word, state in (
            (self.working, "working", "working"),
            (self.amber, "amber", "warn"),
            (self.held, "held", "held"),
            (self.paused, "paused", "paused"),
        ):
            if count:
                parts.append((f"{count:,} {word}", state))
        if self.ceiling is None:
            parts.append((f"{self._floored(self.spent_shown or usd(self.spent))} today", ""))
        else:
            spent = spend_against(self.spent, self.ceiling)  # never at it short of it
            parts.append((f"{self._floored(spent)} of {usd(self.ceiling)} today", ""))
        return parts

    def _floored(self, spent: str) -> str:
        return at_a_floor(spent) if self.floor_priced else spent

    def text(self) -> str:
        """`55 agents · 4 working · 1 amber · 3 held · 1 paused · $1.12 today`"""
        return " · ".join(text for text, _ in self.parts())


_EXACT = Context(prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN)
"""Sums and differences of dollars never rounded: a tally that takes an
agent's old spend out and puts its new in ends where a fresh sum would."""


@dataclass(frozen=True, slots=True)
class _Part:
    """What one agent adds to the fleet line."""

    status: str
    amber: bool
    spent: Decimal
    figure: str | None
    """Its spend as its row words it (`spend_against`), when it spent any."""
    floor: bool
    """Its spend holds a call priced at a floor (`AgentState.floor_priced`)."""


def _part(agent: AgentState) -> _Part:
    spent = agent.spend_today_usd
    figure = spend_against(spent, agent.limit_usd) if spent else None
    return _Part(agent.status, spend_level(agent) == "warn", spent, figure, agent.floor_priced)


class Tally:
    """The fleet line kept as the rows change (the TUI's store calls it on
    each): a change takes the agent's old part out and puts its new one in,
    so the line costs the same at 100,000 agents as at ten. Counted afresh over
    every row, it took ~70 ms of the screen's loop four times a second at
    100,000, and a key pressed meanwhile waited for it."""

    def __init__(self) -> None:
        self.reset(())

    @classmethod
    def of(cls, agents: Iterable[AgentState]) -> Tally:
        """A tally of `agents`, put in one by one."""
        tally = cls()
        tally.reset(agents)
        return tally

    def reset(self, agents: Iterable[AgentState]) -> None:
        """Every agent listed now, and no other."""
        self._parts: dict[str, _Part] = {}
        self._statuses: Counter[str] = Counter()
        self._amber = 0
        self._floors = 0
        """How many agents' spend holds a call priced at a floor."""
        self._spent = Decimal(0)
        self._figures: dict[str, str] = {}
        """The spending agents' figures (one alone is the line's figure)."""
        self._places: Counter[int] = Counter()
        """How many spending agents' figures show each number of decimals."""
        for agent in agents:
            self.put(agent)

    def put(self, agent: AgentState) -> None:
        """`agent` as it is now, in place of what it was."""
        self.drop(agent.name)
        part = self._parts[agent.name] = _part(agent)
        self._count(agent.name, part, 1)

    def drop(self, name: str) -> None:
        """`name` no longer listed (deleted, renamed)."""
        part = self._parts.pop(name, None)
        if part is not None:
            self._count(name, part, -1)

    def _count(self, name: str, part: _Part, sign: int) -> None:
        self._statuses[part.status] += sign
        self._amber += sign * part.amber
        self._floors += sign * part.floor
        add = _EXACT.add if sign > 0 else _EXACT.subtract
        self._spent = add(self._spent, part.spent)
        if part.figure is not None:
            self._places[decimals_shown(part.figure)] += sign
            if sign > 0:
                self._figures[name] = part.figure
            else:
                del self._figures[name]

    def fleet(self, ceiling: Decimal | None = None, unlisted: Decimal = Decimal(0)) -> Fleet:
        """Counts by state and the day's spend of every agent put and not
        dropped, plus `unlisted`: what the fleet spent today that no row shows
        (agents deleted today: deleting never refunds). Amber is spend past
        `warnRatio` and short of the ceiling (red, at the ceiling, is held and
        counted there)."""
        spent = _EXACT.add(self._spent, unlisted)
        figures = self._figures
        alone = next(iter(figures.values())) if len(figures) == 1 and not unlisted else None
        places = max((n for n, count in self._places.items() if count), default=2)
        return Fleet(
            agents=len(self._parts),
            working=self._statuses["working"],
            amber=self._amber,
            held=self._statuses["held"],
            paused=self._statuses["paused"],
            spent=spent,
            ceiling=ceiling,
            spent_shown=spend_summed(spent, alone, places),
            floor_priced=self._floors > 0,
        )
