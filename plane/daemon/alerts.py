"""Alerts (`notify:` in agents.yaml): a push to a webhook and/or an ntfy
topic when an agent needs the operator — its spend turned amber, it is
held, it resumed, it asked for a looser ceiling and was refused, or the loop
guard held it.

What happened is read from what the clients are told (the rows'
`AgentUpdated` on the event bus: a row's state and spend level changing),
plus the agents' word when an ask is refused, spend spikes or the loop
guard holds one, and the gateway's when a tag's ceiling refuses a call
(callables handed to the tool context, the after-turn notices, the workers
and the gateway's admission), so nothing that spends knows alerts exist.
Each receiver has its own queue and task: a slow or dead one never delays a
turn (`tell` only enqueues) nor the other
receiver. An alert not delivered after its retries, or one a full queue
cannot take, is written to the plane's log with its sentence: never lost
silently.

A `held` or `ask_refused` alert offers the operator a raise until 00:00 UTC
(`offer`, given by `plane.daemon.approvals`): ntfy gets two `http` action
buttons (`+$2 today`, `Deny`), the webhook the same signed links in its
JSON. Alerts pass through one queue (`_outbox`) where the offer is made and
recorded before the alert goes on, so they still arrive in order.

Many agents held or freed by one event (the fleet's ceiling, a group's, a
model with no price under one of them, the day turning) are one alert naming it and how many agents
(`plane.daemon.alert_folds`), its JSON listing them (`agents`, `count`);
it offers no raise: a link raises one agent's ceiling.

**Several planes, one push.** Planes sharing one store each show every
agent's row, but an agent's own alert (amber, held, resumed) is sent only by
the plane that runs it (`runs_here`: its lease), whose turns and ledger
made it; the others merely show the row. A fold's alert, and the day's, is
sent by the one plane whose claim in the store takes it
(plane/daemon/alert_claims.py), and so is the own alert of an agent no
plane runs (a gateway agent, whose calls come through any plane): its hold,
its resume, its amber, each claimed before it is sent (`_Claim`); so is a
tag's ceiling reached (`tag`), once a tag a day however many planes refuse
its calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import date, datetime
from decimal import Decimal
from uuid import uuid4

from plane.agents.guard import Loop
from plane.clock import Clock, until
from plane.config import AlertKind, NotifyConfig
from plane.daemon.alert import Alert, Links, TagReached, sentence
from plane.daemon.alert_folds import Above, Cause, Claims, Folded, Folds, day_text
from plane.daemon.alert_receivers import QUEUE_LIMIT, Receiver
from plane.daemon.alert_unsent import unsent
from plane.daemon.ask_alerts import AskAlerts
from plane.daemon.events import EventBus
from plane.money.budgets import TagFull
from plane.money.burn import Spike
from plane.money.limits import tag_reached
from plane.tasks import cancel
from plane.wire.protocol import (
    AgentRemoved,
    AgentRenamed,
    AgentState,
    AgentUpdated,
    DayRolled,
    Snapshot,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Claim:
    """An agent's event, sent (`alert`, if any) only when this plane's claim
    takes it (`agent_told`), or frees it (`agent_freed`, `take` False)."""

    agent: str
    """The agent; a `tag` claim's, the tag."""
    what: str
    """`held`, `amber`, `tag` (its ceiling reached, claimed once a day)."""
    take: bool
    alert: Alert | None
    day: date | None = None
    """The day it is claimed on: a tag's, the plane's day its refusal was
    counted on (None: the plane's day when the claim is made)."""


OfferFor = Callable[[Alert], Awaitable[Links | None]]
"""Makes and records the raise an alert offers (None: it offers none)."""


class Notifier:
    def __init__(
        self,
        config: NotifyConfig,
        clock: Clock,
        *,
        backoff_s: float = 1.0,
        offer: OfferFor | None = None,
        above: Above | None = None,
        runs_here: Callable[[str], bool] = lambda agent: True,
        claims: Claims | None = None,
        claimed: Callable[[str], bool] = lambda agent: False,
        today: Callable[[], date] | None = None,
    ) -> None:
        """`above`: the ceilings over many agents, whose holds are one alert
        each (None: every hold is its agent's own). With planes sharing a
        store, `runs_here` says whether this plane runs an agent (an agent's
        own alerts are that plane's), `claimed` whether no plane does (a
        gateway agent: its own alerts go by claim), and `claims` which plane
        tells a fold's alert, the day's or such an agent's (None: this one,
        alone). `today`: the plane's day (`Ledger.day`), which each claim
        names, never the clock's date a moment off around 00:00 UTC (None:
        the clock's date)."""
        self._today = today or (lambda: clock.now().date())
        self._runs_here = runs_here
        self._claimed = claimed
        self._ran: set[str] = set()
        """The agents this plane ran when their rows were last shown."""
        self._claims = claims
        self._events: dict[str, dict[str, str | None]] = {}
        """The stamp of each agent's event claimed (`held`, `amber`), as this
        plane claimed it or found it claimed: its end is that event's, not a
        later one's (none: so when the plane first showed it)."""
        self._days: set[asyncio.Task[None]] = set()
        self._on = set(config.on)
        self._grace_s = config.timeout_s
        self._clock = clock
        self._offer = offer
        self._outbox: asyncio.Queue[Alert | _Claim] = asyncio.Queue(QUEUE_LIMIT)
        self._dispatching: asyncio.Task[None] | None = None
        self._receivers = [
            Receiver(url, ntfy, config, backoff_s)
            for url, ntfy in ((config.webhook, False), (config.ntfy, True))
            if url is not None
        ]
        self._rows: dict[str, AgentState] = {}
        self._asks = AskAlerts()
        self._tags_told: dict[str, date] = {}
        """Each tag whose ceiling this plane alerted (or claimed), and the day."""
        self._watching: asyncio.Task[None] | None = None
        self._folds = (
            None
            if above is None
            else Folds(clock, above, self._say, self._row, claims=claims, today=self._today)
        )

    def start(self, bus: EventBus, snapshot: Snapshot) -> None:
        """Watch the rows from `snapshot` on: what already stood (an agent held
        before a restart) is not news."""
        self._rows = {agent.name: agent for agent in snapshot.agents}
        self._ran = {agent.name for agent in snapshot.agents if self._runs_here(agent.name)}
        if self._folds is not None:
            for agent in snapshot.agents:
                self._folds.stood(agent)
        subscription = bus.subscribe()
        for receiver in self._receivers:
            receiver.task = asyncio.create_task(receiver.run(), name=f"alerts:{receiver.url}")
        self._dispatching = asyncio.create_task(self._dispatch(), name="alerts:offers")

        async def watch() -> None:
            while (event := await subscription.next()) is not None:
                if isinstance(event, AgentUpdated):
                    self._changed(event.agent)
                elif isinstance(event, DayRolled):  # the new day frees the held: resumed
                    self._day_turned(event.snapshot.agents)
                elif isinstance(event, AgentRenamed):
                    self._renamed(event.old, event.agent)
                elif isinstance(event, AgentRemoved):
                    self._rows.pop(event.agent, None)
                    self._ran.discard(event.agent)
                    self._events.pop(event.agent, None)
                    if self._folds is not None:
                        self._folds.gone(event.agent)
            log.warning("alerts stopped watching the plane's events")

        self._watching = asyncio.create_task(watch(), name="alerts")

    def refused_ask(self, agent: str, reply: str, asked: Decimal | None, has: Decimal) -> None:
        """The tool context's word: `agent` asked for more (`asked`) than it
        has (`has`). Alerted once an offer (`plane.daemon.ask_alerts`)."""
        now = self._clock.now()
        if not self._asks.first(agent, has, now):
            log.info("ask not alerted (the operator was, of an earlier one): %s: %s", agent, reply)
            return
        said = f"{agent}: {reply}"
        self.tell(Alert("ask_refused", agent, said, now, self._row(agent), asked=asked))

    def spiked(self, agent: str, said: str, spike: Spike) -> None:
        """The after-turn notices' word: `agent`'s spend spiked (`said`: its
        conversation's sentence)."""
        self.tell(Alert("spike", agent, said, self._clock.now(), self._row(agent), spike=spike))

    def looped(self, agent: str, said: str, loop: Loop) -> None:
        """A worker's word: the loop guard holds `agent` (`said`: its
        conversation's sentence). The row that turns held says no more."""
        self.tell(Alert("loop", agent, said, self._clock.now(), self._row(agent), loop=loop))

    def tag_full(self, agent: str, full: TagFull, resets_at: datetime) -> None:
        """Admission's word: a call of `agent`'s was refused, its tag's
        ceiling reached. Alerted once a tag a day: by this plane alone, or,
        with planes sharing a store, by the one whose claim takes it. The
        day is the plane's its refusal was counted on (`full.day`), which
        the clock's date may not be a moment around 00:00 UTC: a day's
        refusals are one alert, and the next day's first is told."""
        now = self._clock.now()
        day, told = full.day or self._today(), self._tags_told.get(full.name)
        if "tag" not in self._on or (told is not None and day <= told):
            return
        self._tags_told[full.name] = day
        resumes_at = None if full.ceiling == 0 else resets_at
        reached = TagReached(full.name, full.spent, full.ceiling, resumes_at)
        text = tag_reached(full.name, full.spent, full.ceiling, until(now, resets_at))
        alert = Alert("tag", agent, text, now, self._row(agent), tag=reached)
        if self._claims is None:
            self.tell(alert)
        else:
            self._queue(_Claim(full.name, "tag", True, alert, day))

    def _row(self, agent: str) -> AgentState | None:
        """`agent`'s row as last shown: every alert's JSON carries its spend
        today and ceiling (`spend_today_usd`, `limit_usd`), not only a row's
        change's."""
        return self._rows.get(agent)

    def tell(self, alert: Alert) -> None:
        """Queue `alert` for every receiver; returns at once."""
        if alert.kind in self._on:
            self._queue(alert)

    async def _dispatch(self) -> None:
        """Each alert in turn: claimed first, if it is; its offer made (and
        recorded) first, if it makes one."""
        while True:
            alert = await self._outbox.get()
            try:
                if isinstance(alert, _Claim):
                    told = await self._claim(alert)
                    if not told or alert.alert is None or alert.alert.kind not in self._on:
                        continue
                    alert = alert.alert
                offers = alert.kind in ("held", "ask_refused") and alert.folded is None
                if self._offer is not None and offers:
                    alert = replace(alert, links=await self._offered(alert))
                for receiver in self._receivers:
                    receiver.put(alert)
            finally:
                self._outbox.task_done()

    async def _claim(self, claim: _Claim) -> bool:
        """Whether this plane's claim takes `claim` (no other plane's did);
        the store away, it does: an alert twice is better than none."""
        assert self._claims is not None  # `_claim_of` queues one only with them
        agent, what = claim.agent, claim.what
        events = self._events.setdefault(agent, {}) if what != "tag" else {}  # a tag's never ends
        try:
            if claim.take:
                day = claim.day or self._today()
                events.pop(what, None)
                told, events[what] = await self._claims.agent_told(agent, what, day, uuid4().hex)
                return told
            return await self._claims.agent_freed(agent, what, events.pop(what, None))
        except Exception as exc:  # the store away: told here, maybe by another plane too
            log.warning("an alert of %s told without asking the other planes: %s", claim.agent, exc)
            return True

    async def _offered(self, alert: Alert) -> Links | None:
        assert self._offer is not None
        try:
            return await self._offer(alert)
        except Exception:  # the alert still goes, without its buttons
            log.exception("no raise offered with the alert: %s", alert.text)
            return None

    async def drained(self) -> None:
        """Until every alert queued so far has been delivered or logged."""
        await self._outbox.join()
        for receiver in self._receivers:
            await receiver.queue.join()

    async def aclose(self) -> None:
        if self._watching is not None:
            await cancel(self._watching)
        if self._folds is not None:
            await self._folds.aclose()
        for task in list(self._days):
            await cancel(task)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._outbox.join(), self._grace_s)
        if self._dispatching is not None:
            await cancel(self._dispatching)
        while not self._outbox.empty():
            left = self._outbox.get_nowait()
            alert = left.alert if isinstance(left, _Claim) else left
            if alert is not None:
                unsent(log, alert.text)
        for receiver in self._receivers:
            await receiver.aclose(self._grace_s)

    def _changed(self, state: AgentState) -> None:
        """Take `state`, an agent's row now; alert what changed, unless a
        fold of many agents says it."""
        before = self._rows.get(state.name)
        self._rows[state.name] = state
        ours = self._ours(state.name)
        if before is None:
            if self._folds is not None:
                self._folds.stood(state)
            return
        was, held_by = (None, None) if self._folds is None else self._folds.moved(state)
        now = self._clock.now()
        kind: AlertKind | None = None
        if state.status == "held" and before.status != "held":
            kind = "held" if state.hold_reason != "loop" else None  # `looped` said it
        elif before.status == "held" and state.status not in ("held", "paused"):
            kind = "resumed"  # paused, it still takes no turn: not a resume
        elif state.spend_level == "warn" and before.spend_level == "ok":
            kind = "amber"
        if kind is None and was is not None and held_by is None and state.status == "held":
            # Left a fold still held, by a hold of its own (its ceiling, a
            # pause): the fold's resume leaves it out, so its own is told.
            kind = "held" if state.hold_reason != "loop" else None
        folded = (kind == "held" and held_by is not None) or (kind == "resumed" and was is not None)
        alert = None
        if kind is not None and not folded:
            alert = Alert(kind, state.name, sentence(kind, state, now), now, state)
        if self._claims is not None and self._claimed(state.name):
            owned = before.status == "held" and was is None
            owns = state.status == "held" and held_by is None
            self._claim_of(before, state, alert, (owned, owns))
        elif alert is not None and ours:
            self.tell(alert)

    def _claim_of(
        self, before: AgentState, state: AgentState, alert: Alert | None, own: tuple[bool, bool]
    ) -> None:
        """The claims of a change of the row of an agent no plane runs: a
        hold of its own (`own`: before, now; its ceiling, a pause, the loop
        guard's, not a fold's, whose claims are the fold's) and its amber
        are claimed, whether told or not (one the loop guard told), so that
        the end of each is claimed as well. Leaving a fold's hold still held
        by one of its own is a hold of its own, told once (the fold's resume
        leaves it out); leaving it for a fold's is its end, told by no one."""
        claims: list[_Claim] = []
        name = state.name
        if own[0] != own[1]:
            held = alert if alert is not None and alert.kind in ("held", "resumed") else None
            claims.append(_Claim(name, "held", own[1], held))
        if state.spend_level == "warn" and before.spend_level == "ok":
            amber = alert if alert is not None and alert.kind == "amber" else None
            claims.append(_Claim(name, "amber", True, amber))
        elif state.spend_level == "ok" and before.spend_level != "ok":
            claims.append(_Claim(name, "amber", False, None))
        for claim in claims:
            self._queue(claim)

    def _queue(self, item: Alert | _Claim) -> None:
        """`item` on its way to the receivers, after those before it."""
        if not self._receivers:
            return
        try:
            self._outbox.put_nowait(item)
        except asyncio.QueueFull:
            said = item.text if isinstance(item, Alert) else f"{item.agent} {item.what}"
            log.error("alert not sent (%d waiting): %s", QUEUE_LIMIT, said)

    def _ours(self, agent: str) -> bool:
        """Whether a change of `agent`'s row is this plane's to alert: it runs
        the agent, and ran it when its row was last shown. A plane that has
        just taken an agent shows its row as the plane before left it: a
        change it sees then was that plane's, alerted there."""
        ran = agent in self._ran
        if self._runs_here(agent):
            self._ran.add(agent)
            return ran
        self._ran.discard(agent)
        return False

    def _renamed(self, old: str, state: AgentState) -> None:
        """`old` is now `state.name`: its row, and what was told of it, go
        with it, so its next change (a resume) is alerted under its new name."""
        self._rows.pop(old, None)
        self._rows[state.name] = state
        if old in self._ran:
            self._ran.discard(old)
            self._ran.add(state.name)
        if (events := self._events.pop(old, None)) is not None:
            self._events[state.name] = events
        if self._folds is not None:
            self._folds.renamed(old, state)

    def _day_turned(self, rows: list[AgentState]) -> None:
        """The new day frees the agents held by a day's spend: one alert for
        them all (the agent's own, when it is one); amber and held as ever."""
        freed: list[AgentState] = []
        for state in rows:
            before = self._rows.get(state.name)
            if before is not None and before.status == "held" and state.status != "held":
                self._rows[state.name] = state
                freed.append(state)
            else:
                self._changed(state)
        if self._folds is not None:
            self._folds.day_turned([state.name for state in freed])
        if not freed:
            return
        if self._claims is None or self._folds is None:
            self._freed_by_day(freed, True)
            return
        task = asyncio.create_task(self._day_claimed(freed), name="alerts:day")
        self._days.add(task)
        task.add_done_callback(self._days.discard)

    async def _day_claimed(self, freed: list[AgentState]) -> None:
        """The day's alert, once the store says whether this plane tells it;
        the plane stopped before it said, what it would have told, logged."""
        assert self._folds is not None  # `_day_turned` made this task only with one
        try:
            told = await self._folds.day_told(sorted(state.name for state in freed))
        except asyncio.CancelledError:
            for alert in self._by_day(freed, True):
                if alert.kind in self._on:
                    unsent(log, alert.text)
            raise
        self._freed_by_day(freed, told)

    def _freed_by_day(self, freed: list[AgentState], told: bool) -> None:
        """The day turning freed `freed`: its alert, if this plane tells it (`_by_day`)."""
        for alert in self._by_day(freed, told):
            self.tell(alert)

    def _by_day(self, freed: list[AgentState], told: bool) -> list[Alert]:
        """One agent freed: its own alert (by the plane that runs it, or, for
        one no plane runs, by the one that `told` the day); more: one alert
        for them all, if this plane `told` it."""
        now = self._clock.now()
        if len(freed) == 1:
            [state] = freed
            claimed = self._claims is not None and self._claimed(state.name)
            if told if claimed else self._runs_here(state.name):
                return [Alert("resumed", state.name, sentence("resumed", state, now), now, state)]
        elif told:
            names = sorted(state.name for state in freed)
            return [self._alert_of(Folded("resumed", Cause("day"), tuple(names), day_text(names)))]
        return []

    def _say(self, folded: Folded) -> None:
        """A fold's alert, queued as any other."""
        self.tell(self._alert_of(folded))

    def _alert_of(self, folded: Folded) -> Alert:
        """A fold's alert, as any other's: its first agent's row carried."""
        now = self._clock.now()
        first = folded.agents[0]
        return Alert(folded.kind, first, folded.text, now, self._row(first), folded=folded)
