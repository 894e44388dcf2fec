"""One event, one alert: the agents a ceiling over many of them holds or
frees at once (the fleet's, a group's) are one alert naming that ceiling and
how many agents, not an alert an agent.

A fleet's ceiling reached holds every agent of it, and each one's row turns
held: 2,000 rows, 2,000 pushes to the operator's phone, most of them more
than a receiver's queue or ntfy's rate limits take. So a row held by the
fleet's ceiling or its group's joins that ceiling's fold (`Folds.moved`)
instead of making an alert; the fold waits until its rows stop coming
(`GATHER_S` with none, at most `GATHER_MAX_S`) and then says what changed
since the operator was last told of that ceiling: the agents it holds that
were not told (one `held` alert), the agents told that it no longer holds
(one `resumed` alert). An agent held and freed again within that wait was
never news. A ceiling that flaps around its line (spend settling under it,
a call taking it over again) is told at most once every `AGAIN` of the
plane's clock; what changed meanwhile is told once that has passed, as it
stands then. The day turning is one event too: every agent it frees is one
`resumed` alert (`day_turned`), which ends what the folds had told.

Agents on a model with no price, held because a fleet's or a group's
ceiling (and none of their own) must count their turns, share a cause too:
one act (`/limit fleet 5`) held them all, one frees them (a price for the
model); their fold is that ceiling's and that model's (`Cause.model`).

A fold's alert names its agents with `some_names` (the first of them and
how many more); `plane status` lists them all.

Several planes on one store each show every agent's row, so each folds the
same holds: the one plane that claims them in the store tells them
(`Claims`, plane/daemon/alert_claims.py), the others do not. A claim the
store cannot take (it is away) is told anyway: an alert twice is better
than none.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Literal, Protocol
from uuid import uuid4

from plane.agents.services import Services
from plane.clock import Clock, until
from plane.daemon.alert_unsent import unsent
from plane.money.limits import fleet_standing, group_standing
from plane.tasks import cancel
from plane.wire.protocol import AgentState
from plane.wire.words import some_names

log = logging.getLogger(__name__)

GATHER_S = 0.3
"""A fold is told once no row has joined it for this long: a ceiling's
change shows its rows a batch at a time (`plane.agents.rows.ROWS_AT_ONCE`)."""
GATHER_MAX_S = 5.0
"""…and at most this long after its first row, however they keep coming."""
AGAIN = timedelta(minutes=1)
"""The least time, on the plane's clock, between two alerts of one ceiling."""

SHARED = ("fleet", "group")
"""The hold reasons of a ceiling over many agents."""

Scope = Literal["fleet", "group", "day"]


@dataclass(frozen=True)
class Cause:
    """What held or freed many agents at once: the fleet's ceiling, a
    group's (`name`), or the day turning; with `model`, the ceiling that
    cannot count that model's turns (it has no price)."""

    scope: Scope
    name: str = ""
    model: str = ""

    @property
    def who(self) -> str:
        """`the fleet`, `group research`."""
        return "the fleet" if self.scope == "fleet" else f"group {self.name}"


@dataclass(frozen=True)
class Standing:
    """A shared ceiling's spend today and its ceiling, read as the fold is told."""

    spent: Decimal
    ceiling: Decimal | None


@dataclass(frozen=True)
class Folded:
    """A fold's alert, in words and figures: `alerts.Alert` carries it."""

    kind: Literal["held", "resumed"]
    cause: Cause
    agents: tuple[str, ...]
    """Every agent it names, sorted."""
    text: str
    standing: Standing | None = None
    resumes_at: datetime | None = None


class Above(Protocol):
    """What a fold reads of the ceilings over the agents."""

    def group_of(self, agent: str) -> str | None:
        """`agent`'s group (None: in none)."""
        ...

    def group_ceiling(self, agent: str) -> str | None:
        """`agent`'s group, if it has a ceiling (None: in none, or no ceiling)."""
        ...

    async def standing(self, cause: Cause) -> Standing:
        """`cause`'s spend today and ceiling."""
        ...


@dataclass(frozen=True)
class Told:
    """What a plane's claim of a fold's news took (`Claims.told`)."""

    held: list[str]
    """Of the agents newly held, those this plane tells: no other plane did."""
    freed: list[str]
    """Of the agents freed, those this plane tells: no other plane did."""
    holds: dict[str, str | None]
    """The stamp of each agent's hold newly told: this plane's, where it
    claimed it, else the one it found another plane claimed it with (None:
    a row stamped by no plane, claimed before holds were)."""


class Claims(Protocol):
    """Which plane of several sharing a store tells a fold's alert: the one
    whose claim takes it first."""

    async def told(
        self,
        cause: Cause,
        held: list[str],
        hold: str,
        freed: Mapping[str, str | None],
        day: date,
        left: Mapping[str, str | None],
    ) -> Told:
        """Of the agents `cause` newly holds (`held`, claimed on `day`, their
        hold stamped `hold`) and of those it freed (`freed`), the ones this
        plane tells: no other plane told them yet. `left`: agents it held
        that another hold holds now, no longer told held by `cause` (its
        next hold of them is told anew). Each of `freed` and `left` with
        the stamp of its hold, as this plane claimed or found it: only that
        hold ends, not one claimed since by a plane ahead of this one (None:
        a hold already standing when this plane first showed it, whichever
        it is)."""
        ...

    async def day_turned(self, freed: list[str], day: date) -> bool:
        """The day turned to `day`, freeing `freed`: their holds of the days
        before are forgotten. Whether this plane tells it (no other did)."""
        ...

    async def agent_told(
        self, agent: str, what: str, day: date, hold: str
    ) -> tuple[bool, str | None]:
        """`agent`, which no plane runs (a gateway agent), turned `what`
        (`held`, `amber`) on `day`: whether this plane tells it (no other
        did), its claim stamped `hold`; and the stamp of the event, this
        plane's or the one another plane's claim has (None: a row stamped
        by no plane, claimed before events were)."""
        ...

    async def agent_freed(self, agent: str, what: str, hold: str | None) -> bool:
        """`agent` is no longer `what` (resumed; back under its amber line),
        the event stamped `hold` (None: one this plane cannot name, it was
        so when the plane first showed it): whether this plane is the one to
        see it first. An event claimed since is not this one's to end."""
        ...


class CeilingsAbove:
    """`Above`, from the plane's own ceilings and ledger."""

    def __init__(self, services: Services) -> None:
        self._services = services

    def group_of(self, agent: str) -> str | None:
        budget = self._services.gate.ceilings.groups.budget(agent)
        return None if budget is None else budget.name

    def group_ceiling(self, agent: str) -> str | None:
        budget = self._services.gate.ceilings.groups.budget(agent)
        return None if budget is None or budget.ceiling is None else budget.name

    async def standing(self, cause: Cause) -> Standing:
        ceilings, spend = self._services.gate.ceilings, self._services.ledger.budget_spend
        if cause.scope == "fleet":
            return Standing(await spend.fleet_today(), ceilings.fleet())
        return Standing(await spend.group_today(cause.name), ceilings.groups.ceiling(cause.name))


def until_passed(resumes_at: datetime | None, now: datetime) -> bool:
    """Whether a hold that ends at `resumes_at` (None: not by a time) has ended by `now`."""
    return resumes_at is not None and resumes_at <= now


def agents(count: int) -> str:
    """`1 agent`, `2,000 agents`."""
    return f"{count:,} agent{'' if count == 1 else 's'}"


def held_text(
    cause: Cause, names: list[str], standing: Standing | None, resumes: str, *, more: bool = False
) -> str:
    """`the fleet is held: 2,000 agents take no new turn (…).` with its
    spend, and what frees them (`resumes`: the time left until 00:00 UTC,
    empty when the day turning does not); a ceiling of zero is a pause.
    `more`: others were told held by it already (`37 more agents`)."""
    count = agents(len(names))
    if more:
        count = count.replace(" ", " more ", 1)
    many = f"{count} {'takes' if len(names) == 1 else 'take'}"
    listed = some_names(names)
    raise_it = "/limit fleet" if cause.scope == "fleet" else f"/limit group {cause.name}"
    limit = "fleet limit" if cause.scope == "fleet" else "group limit"
    if cause.model:
        whose = "the fleet's" if cause.scope == "fleet" else f"group {cause.name}'s"
        return (
            f"{whose} ceiling cannot count {cause.model}, which has no price: {many} no turn "
            f"({listed}) until {cause.model} has a price under `pricing:` in agents.yaml "
            f"({raise_it} off lifts the ceiling)."
        )
    if standing is not None and standing.ceiling == 0:
        return (
            f"{cause.who} is paused: its daily ceiling is $0.00, so {many} no turn ({listed}) "
            f"until the {limit} is raised ({raise_it} 5, or {raise_it} off); a new day does "
            "not end a pause."
        )
    said = f"{cause.who} is held: {many} no new turn ({listed})."
    if standing is not None:
        said += f" {_standing(cause, standing)}"
    if resumes:
        return f"{said} They answer at 00:00 UTC, in {resumes}, or when the {limit} is raised."
    return f"{said} They answer when the {limit} is raised."


def resumed_text(cause: Cause, names: list[str], standing: Standing | None) -> str:
    """`2,000 agents held by the fleet's ceiling have resumed (…).` with its spend."""
    have = "has" if len(names) == 1 else "have"
    whose = "the fleet's" if cause.scope == "fleet" else f"group {cause.name}'s"
    said = f"{agents(len(names))} held by {whose} ceiling {have} resumed ({some_names(names)})."
    return said if standing is None else f"{said} {_standing(cause, standing)}"


def day_text(names: list[str]) -> str:
    """The day turning freed `names`: one sentence."""
    have = "has" if len(names) == 1 else "have"
    return (
        f"{agents(len(names))} {have} resumed at 00:00 UTC, the new day's spend starting "
        f"from $0.00 ({some_names(names)})."
    )


def _standing(cause: Cause, standing: Standing) -> str:
    if cause.scope == "fleet":
        return fleet_standing(standing.spent, standing.ceiling)
    return group_standing(cause.name, standing.spent, standing.ceiling)


@dataclass
class _Fold:
    """One ceiling's agents: held by it now, and as the operator was last told."""

    held: dict[str, AgentState] = field(default_factory=dict)
    told: set[str] = field(default_factory=set)
    holds: dict[str, str | None] = field(default_factory=dict)
    """The stamp of the hold of each of `told`, as this plane claimed it or
    found it claimed (none: held when this plane first showed it): its end
    is that hold's, not a later one's."""
    told_at: datetime | None = None
    moved: bool = False
    """A row joined or left it since the gathering last looked."""
    telling: asyncio.Task[None] | None = None


class Folds:
    def __init__(
        self,
        clock: Clock,
        above: Above,
        say: Callable[[Folded], None],
        row: Callable[[str], AgentState | None],
        gather_s: float = GATHER_S,
        claims: Claims | None = None,
        today: Callable[[], date] | None = None,
    ) -> None:
        """`say`: how a fold's alert goes on (`Notifier.tell`); `row`, an
        agent's row as last shown; `claims`, the store's word on which
        plane of several tells each fold (None: alone, this one); `today`,
        the plane's day, which each claim names (None: the clock's date)."""
        self._clock = clock
        self._today = today or (lambda: clock.now().date())
        self._above = above
        self._say = say
        self._row = row
        self._gather_s = gather_s
        self._claims = claims
        self._folds: dict[Cause, _Fold] = {}
        self._of: dict[str, Cause] = {}
        """The ceiling each agent held by one is held by."""
        self._telling: set[asyncio.Task[None]] = set()
        """Every fold's alert on its way, gathering or claimed: the plane
        stopping writes what each would have said to its log."""

    def cause_of(self, state: AgentState) -> Cause | None:
        """The shared ceiling that holds `state`'s agent (None: none does)."""
        if state.status == "held" and state.hold_reason == "unpriced":
            return self._unpriced(state)
        if state.status != "held" or state.hold_reason not in SHARED:
            return None
        if state.hold_reason == "fleet":
            return Cause("fleet")
        group = self._above.group_of(state.name)
        return None if group is None else Cause("group", group)

    def _unpriced(self, state: AgentState) -> Cause | None:
        """The shared ceiling that cannot count the turns of `state`'s agent,
        on a model with no price: its group's if that has one, else the
        fleet's; None when the agent has a ceiling of its own, which holds
        it first (its own alert)."""
        if state.limit_usd is not None:
            return None
        group = self._above.group_ceiling(state.name)
        if group is not None:
            return Cause("group", group, state.model)
        return Cause("fleet", model=state.model)

    def stood(self, state: AgentState) -> None:
        """`state` was already held when first seen (a restart, a new
        agent): not news, but freed later it is."""
        cause = self.cause_of(state)
        if cause is not None:
            fold = self._folds.setdefault(cause, _Fold())
            fold.held[state.name] = state
            fold.told.add(state.name)
            self._of[state.name] = cause

    def moved(self, state: AgentState) -> tuple[Cause | None, Cause | None]:
        """Take `state`, the agent's row now: the ceiling that held it
        before and the one that holds it now (either None). A fold either
        belongs to says what changed, once its rows stop coming."""
        name = state.name
        was, now = self._of.get(name), self.cause_of(state)
        if was is not None and was != now:
            self._leave(was, name)
        if now is not None:
            fold = self._folds.setdefault(now, _Fold())
            self._of[name] = now
            fold.held[name] = state
            if was != now:
                self._moved(now, fold)
        return was, now

    def gone(self, agent: str) -> None:
        """`agent` was deleted: no fold says it any more."""
        cause = self._of.pop(agent, None)
        if cause is not None:
            fold = self._folds[cause]
            fold.held.pop(agent, None)
            fold.told.discard(agent)
            fold.holds.pop(agent, None)

    def renamed(self, old: str, state: AgentState) -> None:
        """`old` is now `state.name`: held by the same ceiling, and told of
        as it was, so its resume names it anew."""
        cause = self._of.pop(old, None)
        if cause is None:
            return
        fold = self._folds[cause]
        fold.held.pop(old, None)
        if old in fold.told:
            fold.told.discard(old)
            fold.told.add(state.name)
        if old in fold.holds:
            fold.holds[state.name] = fold.holds.pop(old)
        if self.cause_of(state) == cause:
            self._of[state.name] = cause
            fold.held[state.name] = state

    def day_turned(self, freed: list[str]) -> None:
        """The day turning freed `freed`: said by its own alert, so no fold
        tells them resumed."""
        for name in freed:
            if (cause := self._of.pop(name, None)) is not None:
                fold = self._folds[cause]
                fold.held.pop(name, None)
                fold.told.discard(name)
                fold.holds.pop(name, None)

    def _leave(self, cause: Cause, name: str) -> None:
        del self._of[name]
        fold = self._folds[cause]
        fold.held.pop(name, None)
        self._moved(cause, fold)

    def _moved(self, cause: Cause, fold: _Fold) -> None:
        fold.moved = True
        if fold.telling is None:
            fold.telling = asyncio.create_task(self._tell(cause, fold), name=f"alerts:{cause}")
            self._telling.add(fold.telling)
            fold.telling.add_done_callback(self._telling.discard)

    async def _tell(self, cause: Cause, fold: _Fold) -> None:
        """Once its rows stop coming and `AGAIN` has passed since the last:
        what changed since the operator was told."""
        try:
            await self._gathered(fold)
            if fold.told_at is not None:
                await self._clock.sleep_until(fold.told_at + AGAIN)
                await self._gathered(fold)
        except asyncio.CancelledError:  # the plane stopped: what it would have said, logged
            newly, freed = self._news(fold)
            more = bool(fold.told & set(fold.held))
            self._untold(self._folded(cause, fold.held, newly, freed, None, more))
            raise
        finally:
            fold.telling = None
        newly, freed = self._news(fold)
        left = sorted(fold.told - set(fold.held) - set(freed))
        if not newly and not freed and not left:
            return
        rows = {name: fold.held[name] for name in newly}
        more = bool(fold.told & set(fold.held))
        fold.told = set(fold.held)
        if newly or freed:
            fold.told_at = self._clock.now()
        hold = uuid4().hex
        freed_holds = {name: fold.holds.pop(name, None) for name in freed}
        left_holds = {name: fold.holds.pop(name, None) for name in left}
        fold.holds.update(dict.fromkeys(newly, hold))
        try:
            told = await self._claimed(cause, newly, hold, freed_holds, left_holds)
            newly, freed = told.held, told.freed
            for name, found in told.holds.items():  # the holds it found claimed, as claimed
                if fold.holds.get(name) == hold:
                    fold.holds[name] = found
            if not newly and not freed:  # another plane told them
                return
            standing = await self._standing(cause)
        except asyncio.CancelledError:
            self._untold(self._folded(cause, rows, newly, freed, None, more))
            raise
        newly = self._holding(rows, newly)
        for folded in self._folded(cause, rows, newly, freed, standing, more):
            self._say(folded)

    def _news(self, fold: _Fold) -> tuple[list[str], list[str]]:
        """What changed since the operator was told of `fold`: the agents it
        newly holds, and those it freed that nothing else holds."""
        newly = sorted(set(fold.held) - fold.told)
        freed = sorted(name for name in fold.told - set(fold.held) if self._free(name))
        return newly, freed

    def _folded(
        self,
        cause: Cause,
        rows: dict[str, AgentState],
        newly: list[str],
        freed: list[str],
        standing: Standing | None,
        more: bool,
    ) -> list[Folded]:
        """`newly` held (as `rows` show them) and `freed`, in words: one
        alert each, none of no agent; `more`, others were told held already."""
        told: list[Folded] = []
        if newly:
            resumes_at = rows[newly[0]].resumes_at
            resumes = "" if resumes_at is None else until(self._clock.now(), resumes_at)
            text = held_text(cause, newly, standing, resumes, more=more)
            told.append(Folded("held", cause, tuple(newly), text, standing, resumes_at))
        if freed:
            text = resumed_text(cause, freed, standing)
            told.append(Folded("resumed", cause, tuple(freed), text, standing))
        return told

    def _holding(self, rows: dict[str, AgentState], newly: list[str]) -> list[str]:
        """Those of `newly` whose hold has not ended by now on the plane's
        clock: a hold of the day before, told after 00:00 UTC (its claim or
        its figures read across midnight), would say the new day's figures
        ($0.00 spent, resuming in 0m) of agents the day turning freed."""
        now = self._clock.now()
        return [name for name in newly if not until_passed(rows[name].resumes_at, now)]

    @staticmethod
    def _untold(folded: list[Folded]) -> None:
        """Alerts the plane stopped before telling: in its log, never lost silently."""
        for alert in folded:
            unsent(log, alert.text)

    def _free(self, agent: str) -> bool:
        """`agent` left its ceiling's hold and is held by nothing else now
        (held by another, it has not resumed: that one says it; paused by
        the operator, it takes no turn still, and has not resumed either)."""
        row = self._row(agent)
        return row is not None and row.status not in ("held", "paused")

    async def _gathered(self, fold: _Fold) -> None:
        """Until no row has joined or left `fold` for `gather_s` (at most `GATHER_MAX_S`)."""
        waited = 0.0
        fold.moved = True
        while fold.moved and waited < GATHER_MAX_S:
            fold.moved = False
            await asyncio.sleep(self._gather_s)
            waited += self._gather_s

    async def _claimed(
        self,
        cause: Cause,
        newly: list[str],
        hold: str,
        freed: dict[str, str | None],
        left: dict[str, str | None],
    ) -> Told:
        """Those of `newly` (their hold stamped `hold`) and `freed` this
        plane tells: all of them alone, or when the store cannot say (told
        twice rather than lost). `left` are no longer told held by `cause`:
        held by another hold, not freed. Each of `freed` and `left` with the
        stamp of its hold (`_Fold.holds`)."""
        if self._claims is None:
            return Told(newly, list(freed), {})
        try:
            return await self._claims.told(cause, newly, hold, freed, self._today(), left)
        except Exception as exc:  # the store away: told here, maybe by another plane too
            log.warning("an alert of %s told without asking the other planes: %s", cause.who, exc)
            return Told(newly, list(freed), {})

    async def day_told(self, freed: list[str]) -> bool:
        """The day turning freed `freed`: whether this plane tells it (alone,
        or when the store cannot say, it does)."""
        if self._claims is None:
            return True
        try:
            return await self._claims.day_turned(freed, self._today())
        except Exception as exc:  # the store away: told here, maybe by another plane too
            log.warning("the day's alert told without asking the other planes: %s", exc)
            return True

    async def _standing(self, cause: Cause) -> Standing | None:
        """`cause`'s figures; None when they do not read (the alert goes without)."""
        try:
            return await self._above.standing(cause)
        except Exception as exc:  # the store away: the alert still goes, without its figures
            log.warning("an alert of %s without its spend: %s", cause.who, exc)
            return None

    async def aclose(self) -> None:
        """Each fold's alert on its way, stopped (and logged: `_untold`)."""
        for task in list(self._telling):
            with contextlib.suppress(Exception):
                await cancel(task)
