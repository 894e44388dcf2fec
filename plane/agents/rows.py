"""Each agent as a row shows it, and the snapshot of them all: one builder.

A row is built from its worker (spec, model, whether it works) and three
things read for it: its spend today, its hold (the gate's answer) and what
waits for it. `row` builds it from those, and nothing else builds one: a
single agent's (`state`, `publish`, `show`), every agent's at once
(`snapshot`, which reads the waiting counts and the fleet's spend once for
all), and, while the shared store is away, the rows from memory.

A row that shows a turn in flight says `working` whatever the gate would
say, so the gate is not asked for it: asked for a row, the gate costs a
read of the spend, and a turn publishes its row after every call.

A row built from the same figures as the agent's last is that same row
(`_kept`), so its encoding (`AgentState.line`) is made once for as long as
it does not change: a snapshot of a fleet encodes only the rows that
changed. A snapshot reads the day's spend, the fleet's, each group's and
the waiting counts once, computes the day's end once, and builds every row
without a wait (a gateway agent's gate, which weighs its calls in flight,
is asked apart).

A row that changes often (a gateway agent's, after each call) is shown by
`changed`: built only while someone watches (a client subscribed, the
alerts), and once for all of an agent's changes in a turn of the event
loop. Nobody watching misses nothing: a client subscribes before its
snapshot is taken, which builds every row as it is then.

A ceiling over many agents that changes (the fleet's, a group's: set here
with `/limit fleet` or `/limit group`, or on another plane and read again
here) may hold or free every agent under it, none of which takes a turn to
show it: `ceilings_changed` builds their rows again from the figures a
snapshot reads, once for all, and shows those that are not the row last
shown (`_shown`), a batch at a time.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import AsyncIterator, Callable, Collection, Mapping
from datetime import date, datetime
from decimal import Decimal
from typing import NamedTuple

from plane.agents.commands import registry
from plane.agents.services import Services
from plane.agents.worker import AgentWorker
from plane.agents.workers import Workers
from plane.errors import LedgerError, unreachable
from plane.money.ceilings import Reread
from plane.money.gate import Hold, Unread, Unreadable, settled
from plane.money.limits import Priced, spend_level, steps_down
from plane.tasks import cancel
from plane.wire.protocol import AgentState, AgentStatus, AgentUpdated, GroupState, Snapshot

log = logging.getLogger(__name__)

CLIENTS_MODEL = "its client's model"
"""A gateway agent's model before its client has made a call: the client chooses."""

ROWS_AT_ONCE = 1_000
"""The most rows a ceiling's change shows again in one turn of the event
loop: the fleet's may change every row at once, and a client left more
behind than the event bus keeps for it (`QUEUE_LIMIT`) is dropped."""


async def _at_once(agents: list[str]) -> AsyncIterator[list[str]]:
    """`agents` in batches of `ROWS_AT_ONCE`, a turn of the event loop
    between two: the rows of one batch are sealed and sent before the next
    is built, so no client falls behind the bus."""
    for at in range(0, len(agents), ROWS_AT_ONCE):
        if at:
            await asyncio.sleep(0)  # the batch so far sealed, and sent
        yield agents[at : at + ROWS_AT_ONCE]


def _runs_on(
    worker: AgentWorker, spent: Decimal, ceiling: Decimal | None
) -> tuple[str | None, str | None]:
    """The model its row names at `spent` (None: a gateway client's, not yet
    known), and its own while it runs on its fallback (else None)."""
    model = worker.model
    fallback = worker.spec.fallback
    # A gateway client that names the fallback itself did not step down to it.
    if fallback is not None and model != fallback.model and steps_down(spent, ceiling, fallback.at):
        return fallback.model, model or CLIENTS_MODEL
    return model, None


class Figures(NamedTuple):
    """What every row is built from, read once for all (`snapshot`,
    `ceilings_changed`)."""

    day: date
    sums: dict[str, Decimal]
    """Each agent's spend today, of those whose rows read."""
    fleet_spent: Decimal | None
    """The fleet's spend today, calls in flight at their estimates (None: it
    does not read, `unread`)."""
    groups: list[GroupState]
    group_spent: dict[str, Decimal]
    """What each group's closed calls spent today, by its name: what its
    ceiling holds agents on (its calls in flight hold no one)."""
    resets_at: datetime
    unread: Unread
    """The sums that did not read: the agents whose calls count in them are held."""
    waiting: dict[str, int]
    fleet_settled: Decimal | None = None
    """The fleet's spend today as the gate weighs it (`settled`; None: it does not read)."""


class Rows:
    def __init__(self, services: Services, workers: Workers, watched: Callable[[], bool]) -> None:
        """`watched`: whether anyone reads the rows shown (`EventBus.watched`)."""
        self._services = services
        self._workers = workers
        self._watched = watched
        self._kept: dict[str, tuple[tuple[object, ...], AgentState]] = {}
        """Each agent's row as last built, and what it was built from."""
        self._changed: dict[str, None] = {}
        """The agents whose rows changed since they were last shown (`changed`)."""
        self._showing: asyncio.Task[None] | None = None
        self._shown: dict[str, AgentState] = {}
        """Each agent's row as last shown to the clients (`AgentUpdated`)."""
        self._again: dict[str, None] = {}
        """The agents a ceiling that changed stands over, their rows not yet
        built again (`ceilings_changed`)."""
        self._building_again: asyncio.Task[None] | None = None

    def row(
        self,
        worker: AgentWorker,
        *,
        spent: Decimal,
        hold: Hold | None,
        waiting: int,
        resets_at: datetime | None = None,
    ) -> AgentState:
        """The row: the worker as it is, given its spend today, what the gate
        said of it and what waits for it (and the day's end, when the caller
        computed it for many rows). The same row as last time, when nothing
        it shows changed."""
        services = self._services
        spec = worker.spec
        name = spec.name
        working = self._working(worker)
        held = hold is not None and not working
        status: AgentStatus = (
            "working" if working else "paused" if spec.paused else "held" if held else "idle"
        )
        ceiling = services.gate.ceilings.of(name)
        warn_ratio = services.config.defaults.warn_ratio
        model, own = _runs_on(worker, spent, ceiling)
        resets = services.gate.resets_at() if resets_at is None else resets_at
        price_known, floor = self._priced(worker, model)
        resumes_at = self._resumes_at(name, hold, resets) if held else None
        plane = services.ownership.owner(name) if services.ownership.plane else None
        from_file = services.roster.from_file(name)
        burn = services.burn.per_hour(name)
        reaches = None if held else services.burn.reaches(name, spent, ceiling, resets)
        reason = hold.reason if held and hold is not None else None
        shown: tuple[object, ...] = (spec, model, status, spent, ceiling, warn_ratio)
        shown += (price_known, floor, waiting, resumes_at, plane, from_file, burn, reaches, reason)
        shown += (own,)
        kept = self._kept.get(name)
        if kept is not None and kept[0] == shown:
            return kept[1]
        state = AgentState(
            name=name,
            model=model or CLIENTS_MODEL,
            provider=spec.provider,
            role=spec.role,
            status=status,
            spend_today_usd=spent,
            limit_usd=ceiling,
            warn_ratio=warn_ratio,
            spend_level=spend_level(spent, ceiling, warn_ratio),
            price_known=price_known,
            floor_priced=floor,
            waiting=waiting,
            resumes_at=resumes_at,
            paused=spec.paused,
            tools=spec.tools,
            plane=plane,
            gateway=spec.gateway is not None,
            from_file=from_file,
            burn_usd_per_hour=burn,
            reaches_ceiling_at=reaches,
            hold_reason=reason,
            stepped_down_from=own,
        )
        self._kept[name] = (shown, state)
        return state

    def priced(self, agent: str, spent: Decimal) -> Priced:
        """How much of `agent`'s spend today has a price, at `spent`, as its
        row says it (`/limit` says its spend so)."""
        worker = self._workers[agent]
        model, _ = _runs_on(worker, spent, self._services.gate.ceilings.of(agent))
        return Priced(*self._priced(worker, model))

    def _priced(self, worker: AgentWorker, model: str | None) -> tuple[bool, bool]:
        """Whether the model it runs on has a known price, and whether a
        call of its today was priced at a floor (a gateway agent's)."""
        services = self._services
        price_known = model is None or services.pricer.is_known(model)
        return price_known, worker.floor_today

    def _working(self, worker: AgentWorker) -> bool:
        """A turn in flight, or a gateway agent's calls."""
        spec = worker.spec
        ledger = self._services.ledger
        return worker.working or (spec.gateway is not None and ledger.flying(spec.name) > 0)

    async def _hold(
        self,
        worker: AgentWorker,
        fleet_spent: Decimal | None = None,
        group_spent: dict[str, Decimal] | None = None,
    ) -> Hold | None:
        """The gate's answer, for a row that shows it (one that works does not)."""
        if self._working(worker):
            return None
        return await worker.hold(fleet_spent, group_spent)

    async def state(self, agent: str) -> AgentState:
        worker = self._workers[agent]
        return await self._built(worker, await self._hold(worker))

    async def _built(
        self, worker: AgentWorker, hold: Hold | None, before: int | None = None
    ) -> AgentState:
        """The row, its spend and waiting count read (`_waiting_shown`:
        `before`, at a fleet's renewal, the count read before the lines told
        with it)."""
        services, agent = self._services, worker.spec.name
        spent = await services.ledger.spend_today(agent)
        waiting = await services.conversation.count_waiting(agent)
        waiting = self._waiting_shown(agent, waiting, before)
        return self.row(worker, spent=spent, hold=hold, waiting=waiting)

    def _waiting_shown(self, agent: str, waiting: int, before: int | None = None) -> int:
        """What `agent`'s row says waits for it, `waiting` counted now. For an
        agent another plane of the fleet runs, no fewer than `before` (at a
        renewal, `told`: what waited before the lines told with the row were
        read), or else than its row last shown said. Its turn's end (its
        answer, its cost line, its questions answered: one commit) reaches
        this plane's clients only at a renewal, as lines: a count read since
        they were may be past lines not told yet, and a row saying nothing
        waits would end `plane send --wait` through this plane before the
        answer. Only the plane that runs it answers what waits, so nothing
        else here lowers its count. An agent this plane runs is told its
        lines as they are written: its count as it is now."""
        mine = self._services.ownership.mine
        if mine is None or agent in mine:
            return waiting
        if before is None and (shown := self._shown.get(agent)) is not None:
            before = shown.waiting
        return waiting if before is None else max(waiting, before)

    async def publish(self, agent: str) -> AgentState:
        """Show `agent`'s row as it is now; return it."""
        state = await self.state(agent)
        self._emit(state)
        return state

    async def told(self, waiting: Mapping[str, int | None]) -> None:
        """Show the rows of `waiting`'s agents at a fleet's renewal (their
        owner changed, or their lines), once the lines the other planes wrote
        are told: for each, what waited for it before those lines were read
        (None: not read). A turn's end is one commit (its answer, its
        questions answered, its cost line), so a row that says its question
        answered comes after its answer; a message sent here since that read
        is counted too (it is counted again now). Built from figures read
        once for all, as a snapshot's, `ROWS_AT_ONCE` in a turn of the event
        loop: a takeover of thousands of agents shows their rows from a few
        reads, not a few each. An agent not known here is passed over."""
        agents = [agent for agent in waiting if agent in self._workers]
        if not agents:
            return
        figures = await self._figures()
        async for batch in _at_once(agents):
            for agent in batch:
                await self._told_one(agent, waiting[agent], figures)

    async def _told_one(self, agent: str, before: int | None, figures: Figures) -> None:
        """`agent`'s row shown at a renewal (`told`), from `figures`; a gateway
        agent's, whose gate weighs its calls in flight, asked apart (one
        that cannot be built now is shown by its next change, the others
        still are)."""
        worker = self._workers.get(agent)
        if worker is None:  # deleted meanwhile
            return
        if self._asked_apart(worker, figures):
            try:
                self._emit(await self._built(worker, await self._hold(worker), before))
            except Exception as exc:  # the store away, say
                log.debug("the row of %s could not be shown again: %s", agent, exc)
            return
        spent = figures.sums.get(agent, Decimal(0))
        hold = self._hold_known(worker, spent, figures)
        waits = self._waiting_shown(agent, figures.waiting.get(agent, 0), before)
        state = self.row(worker, spent=spent, hold=hold, waiting=waits, resets_at=figures.resets_at)
        self._emit(state)

    def behind(self, waiting: Mapping[str, int]) -> list[str]:
        """The agents another plane of the fleet runs whose rows last shown
        say other than what waits for them at a renewal (`waiting`, read
        before its lines: an agent left out has nothing waiting). A turn that
        failed unbilled writes its notice, then its end answers the question
        with no line of its own: a renewal that told the notice before the
        end committed showed the question waiting, and the next has no line
        of the agent's to tell. Shown again (`told`), its row says it answered."""
        mine = self._services.ownership.mine
        if mine is None:
            return []
        return [
            agent
            for agent, row in self._shown.items()
            if agent not in mine and row.waiting != waiting.get(agent, 0)
        ]

    async def show(self, agent: str, hold: Hold | None) -> AgentState:
        """Show `agent`'s row given what the gate just said of it (not asked again)."""
        state = await self._built(self._workers[agent], hold)
        self._emit(state)
        return state

    def _emit(self, state: AgentState) -> None:
        """`state` shown to the clients."""
        self._shown[state.name] = state
        self._services.emit(AgentUpdated(agent=state))

    def changed(self, agent: str) -> None:
        """`agent`'s row changed: shown once this turn of the event loop is
        done, with every other change of its until then, to whoever watches;
        not built while nobody does."""
        if not self._watched():
            return
        self._changed[agent] = None
        if self._showing is None:
            self._showing = asyncio.create_task(self._show_changed(), name="rows")

    async def _show_changed(self) -> None:
        """Each changed row, built as it is now; one that changes again
        meanwhile is built again after, so the last row shown is its last state."""
        try:
            while self._changed:
                agents = list(self._changed)
                self._changed.clear()
                for agent in agents:
                    await self._show_again(agent)
        finally:
            self._showing = None

    async def _show_again(self, agent: str) -> None:
        """One changed row; one that cannot be built now is shown by its next change."""
        if not self._watched() or agent not in self._workers:  # nobody left; deleted
            return
        try:
            await self.publish(agent)
        except KeyError:  # deleted while it was built
            pass
        except (LedgerError, sqlite3.Error) as error:  # the store away
            log.warning("%s: its row could not be shown: %s", agent, error)
        except Exception:  # the other rows are still shown
            log.exception("%s: its row could not be shown", agent)

    def ceilings_changed(self, changed: Reread) -> None:
        """Ceilings changed, here (`/limit fleet`, `/limit group`) or on
        another plane (read again here): the rows of the agents they stand
        over — every agent's for the fleet's, a group's members' for its, an
        agent's own for its own — which may say held now, or no longer, are
        built again, and each that changed is shown to whoever watches
        (none of these agents takes a turn to show it). Changed again before
        they are built: built once, as they are then."""
        if not changed or not self._watched():
            return
        if changed.fleet:
            self._again.update(dict.fromkeys(self._workers))
        else:
            groups = self._services.gate.ceilings.groups
            self._again.update(dict.fromkeys(changed.agents))
            for group in changed.groups:
                self._again.update(dict.fromkeys(groups.members(group)))
        if self._building_again is None:
            self._building_again = asyncio.create_task(self._show_held_again(), name="rows:held")

    async def _show_held_again(self) -> None:
        """The rows a ceiling's change stands over, built again; those of a
        change made meanwhile built again after."""
        try:
            while self._again:
                agents = list(self._again)
                self._again.clear()
                try:
                    await self._built_again(agents)
                except (LedgerError, sqlite3.Error) as error:  # the store away
                    log.warning("the rows under a changed ceiling could not be shown: %s", error)
                except Exception:  # shown by their next change
                    log.exception("the rows under a changed ceiling could not be shown")
        finally:
            self._building_again = None

    async def _built_again(self, agents: list[str]) -> None:
        """`agents`' rows built from figures read once for all (as a
        snapshot's), `ROWS_AT_ONCE` in a turn of the event loop, each shown
        unless it is the row last shown (`row` gives the same row for the
        same figures). While the store is away, their next change shows them."""
        if not self._watched() or self._services.ledger.store_unreachable_since() is not None:
            return
        figures = await self._figures()
        async for batch in _at_once(agents):
            for agent in batch:
                self._built_once_more(agent, figures)

    def _built_once_more(self, agent: str, figures: Figures) -> None:
        """`agent`'s row from `figures`, shown if it changed; a gateway
        agent's, whose gate weighs its calls in flight, as after its calls
        (`changed`). One deleted, or not known here, is passed over."""
        worker = self._workers.get(agent)
        if worker is None:
            return
        if self._asked_apart(worker, figures):
            self.changed(agent)
            return
        spent = figures.sums.get(agent, Decimal(0))
        hold = self._hold_known(worker, spent, figures)
        waiting = self._waiting_shown(agent, figures.waiting.get(agent, 0))
        state = self.row(
            worker, spent=spent, hold=hold, waiting=waiting, resets_at=figures.resets_at
        )
        if self._shown.get(agent) is not state:
            self._emit(state)

    async def aclose(self) -> None:
        """The rows still to be shown are not (the plane stopping)."""
        if self._showing is not None:
            await cancel(self._showing)
        if self._building_again is not None:
            await cancel(self._building_again)

    def _resumes_at(self, agent: str, hold: Hold | None, resets_at: datetime) -> datetime | None:
        """When the day turning frees a held agent (`resets_at`, the day's end).
        Only a ceiling above zero is one a new day's empty spend is under; a
        zero ceiling (a pause) and an unpriced model wait for the operator,
        whatever the day."""
        gate = self._services.gate
        if hold is not None and gate.above_agent(agent, hold.reason):
            return resets_at
        if hold is None or hold.reason != "ceiling" or not gate.ceilings.of(agent):
            return None
        return resets_at

    # ── every row ──────────────────────────────────────────────────────────

    async def snapshot(self) -> Snapshot:
        """Everything a client draws; while the shared store is away, what
        was last read of it, and since when it is away."""
        services = self._services
        if (since := services.ledger.store_unreachable_since()) is not None:
            return self._last_known(since)
        try:
            return await self._snapshot()
        except (LedgerError, sqlite3.Error) as error:
            since = services.ledger.store_unreachable_since()
            if since is None or not unreachable(error):
                raise
            return self._last_known(since)

    async def _snapshot(self) -> Snapshot:
        services = self._services
        defaults = services.config.defaults
        figures = await self._figures()
        agents = await self._states(figures)
        return Snapshot(
            day=figures.day,
            now=services.clock.now(),
            resets_at=figures.resets_at,
            agents=agents,
            models=services.roster.offered,
            default_model=defaults.model,
            default_limit_usd=defaults.limit_usd,
            commands=registry(),
            tool_defaults=services.roster.tool_defaults(),
            spend_today_usd=sum(figures.sums.values(), start=Decimal(0)),
            fleet_spend_today_usd=figures.fleet_spent,
            fleet_limit_usd=services.gate.ceilings.fleet(),
            groups=figures.groups,
            config_file=self._config_file(),
            config_looked=[str(place) for place in self._services.config.looked_in()],
        )

    async def _figures(self) -> Figures:
        """The day's spend, the fleet's, each group's and the waiting counts,
        each read once, and the day's end computed once: every row's."""
        services = self._services
        ledger = services.ledger
        day = await ledger.today()
        sums, unread = await ledger.day_spend(day)  # once, for every row
        fleet_spent, fleet_unread = await self._fleet_spent(bool(unread))  # every row's gate
        groups, groups_unread = await services.gate.ceilings.groups.states(ledger)  # each group's
        resets_at = services.gate.resets_at()
        held = Unread(unread, groups_unread, fleet_unread)
        waiting = await services.conversation.waiting_counts()  # memory, or one grouped query
        group_spent = {g.name: g.spend_today_usd for g in groups}
        fleet = None
        if fleet_spent is not None:
            spend = ledger.budget_spend
            fleet = await settled(fleet_spent, services.gate.ceilings.fleet(), spend.fleet_settled)
        return Figures(day, sums, fleet_spent, groups, group_spent, resets_at, held, waiting, fleet)

    async def _fleet_spent(self, unread: bool) -> tuple[Decimal | None, str | None]:
        """The fleet's spend today, or, when an agent's does not read
        (`unread`) and so neither does the fleet's, None and the sentence
        naming the row: the agents under the fleet's ceiling are held by it."""
        try:
            return await self._services.ledger.budget_spend.fleet_today(), None
        except LedgerError as error:
            if not unread or unreachable(error):
                raise
            return None, str(error)

    async def _states(self, figures: Figures) -> list[AgentState]:
        """Every row, from figures read once for all (`Figures`: the day's
        spend, the fleet's and each group's for the gate's ceilings above the
        agent's, the waiting counts, and the sums that did not read). An
        agent deleted while a gateway agent's gate was asked is left out."""
        states = []
        for name, worker in list(self._workers.items()):
            spent = figures.sums.get(name, Decimal(0))
            if not self._asked_apart(worker, figures):
                hold = self._hold_known(worker, spent, figures)
            else:
                hold = await worker.hold(figures.fleet_settled, figures.group_spent)
                if self._workers.get(name) is not worker:
                    continue  # deleted (or renamed) meanwhile
                spent = await self._services.ledger.spend_today(name)
            waits = figures.waiting.get(name, 0)
            states.append(
                self.row(worker, spent=spent, hold=hold, waiting=waits, resets_at=figures.resets_at)
            )
        self._kept = {state.name: self._kept[state.name] for state in states}
        self._shown = {name: row for name, row in self._shown.items() if name in self._kept}
        return states

    async def held_still(self, agents: Collection[str]) -> set[str]:
        """Of `agents`, those a ceiling holds still, by figures read afresh
        (a snapshot's): a renewal leaves them asleep, since a look would
        find the same hold (at 10,000 agents held by the fleet's ceiling,
        each with a message waiting, those looks cost ~10 CPU-seconds every
        renewal). Read afresh each time, so a hold lifted any way at all (a
        ceiling raised on another plane with its notice lost, calls settled
        lower elsewhere, the day turned) frees the agent at the next
        renewal. A fleet at its ceiling holds every agent, whatever else
        holds it: only the fleet's spend is read then. Left out, and woken:
        a paused agent or one held in a loop (the store may say otherwise:
        a resume elsewhere), a gateway agent, and one whose sums do not read."""
        asked = [
            name
            for name in agents
            if (worker := self._workers.get(name)) is not None
            and worker.spec.gateway is None
            and worker.operators_hold is None
        ]
        if await self._fleet_full():
            return set(asked)
        figures = await self._figures()
        still = set()
        for name in asked:
            worker = self._workers[name]
            hold = self._hold_known(worker, figures.sums.get(name, Decimal(0)), figures)
            if hold is not None and not isinstance(hold, Unreadable):
                still.add(name)
        return still

    async def _fleet_full(self) -> bool:
        """Whether what the fleet spent today is at its ceiling (none: False)."""
        ceiling = self._services.gate.ceilings.fleet()
        if ceiling is None:
            return False
        spend = self._services.ledger.budget_spend
        return await settled(await spend.fleet_today(), ceiling, spend.fleet_settled) >= ceiling

    def _asked_apart(self, worker: AgentWorker, figures: Figures) -> bool:
        """Whether its gate is asked apart from the figures: a gateway agent's,
        which weighs its calls in flight — unless it works, or a sum its
        calls count in did not read (then it is known held)."""
        name = worker.spec.name
        if worker.spec.gateway is None or self._working(worker):
            return False
        return self._services.gate.unread(name, figures.unread) is None

    def _hold_known(self, worker: AgentWorker, spent: Decimal, figures: Figures) -> Hold | None:
        """The gate's answer for the row from the figures alone (for a worker
        not `_asked_apart`); one that works is not asked."""
        name = worker.spec.name
        if self._working(worker):
            return None
        if (said := self._services.gate.unread(name, figures.unread)) is not None:
            return Unreadable(name, said)
        # The fleet's spend unread holds every agent under its ceiling
        # (`Gate.unread`): without one, it is not weighed.
        fleet = Decimal(0) if figures.fleet_settled is None else figures.fleet_settled
        return worker.hold_known(spent, fleet, figures.group_spent, figures.resets_at)

    def _last_known(self, since: datetime) -> Snapshot:
        """The snapshot from memory alone: each row's spend as last read, no
        hold asked and nothing waiting counted (the store holds those)."""
        services = self._services
        defaults = services.config.defaults
        rows = [
            self.row(worker, spent=services.ledger.spend_known(name), hold=None, waiting=0)
            for name, worker in list(self._workers.items())
        ]
        return Snapshot(
            day=services.ledger.day(),
            now=services.clock.now(),
            resets_at=services.gate.resets_at(),
            agents=rows,
            models=services.roster.offered,
            default_model=defaults.model,
            default_limit_usd=defaults.limit_usd,
            commands=registry(),
            tool_defaults=services.roster.tool_defaults(),
            spend_today_usd=sum((row.spend_today_usd for row in rows), start=Decimal(0)),
            fleet_limit_usd=services.gate.ceilings.fleet(),
            store_unreachable_since=since,
            config_file=self._config_file(),
            config_looked=[str(place) for place in self._services.config.looked_in()],
        )

    def _config_file(self) -> str | None:
        """The agents.yaml the plane read (None: the built-in defaults)."""
        read = self._services.config.read_from()
        return None if read is None else str(read)
