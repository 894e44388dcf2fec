"""All the agents' workers, and what concerns them together: their state as
rows show it, the operator's messages, the notices spend brings, the day
rolling over, the scout.

The crew is the top of the agents: it builds workers, turns and tool
contexts and hands each the narrow callables it needs (`publish`,
`after_turn`, `book`, `scout`); nothing below imports or holds it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import sqlite3
from datetime import datetime
from decimal import Decimal
from pathlib import Path

from plane.agents.burning import tell_spike
from plane.agents.commands import Ran, between_turns, is_command, registry, run_command
from plane.agents.fit import too_large
from plane.agents.roster import AgentSpec
from plane.agents.scheduler import Scheduler
from plane.agents.services import Services
from plane.agents.toolbox import Tooling
from plane.agents.turn import Turn, TurnResult
from plane.agents.worker import AgentWorker
from plane.clock import day_of, until
from plane.errors import InvalidRequest, LedgerError, StoreUnreachable, ToolError, unreachable
from plane.money import notices
from plane.money.gate import Hold
from plane.money.limits import spend_level
from plane.wire.protocol import (
    AgentState,
    AgentUpdated,
    ConversationMessage,
    DayRolled,
    MessageAppended,
    Snapshot,
    TurnStarted,
    Usage,
)
from plane.wire.words import plain, send_refused, turn_line

log = logging.getLogger(__name__)

SCOUT = "scout"
CLIENTS_MODEL = "its client's model"
"""A gateway agent's model before its client has made a call: the client chooses."""
SCOUT_ANSWER_CHARS = 2000
"""The structural guarantee that a scout's reading stays in the scout: the
asking agent gets at most this much back."""


class Crew:
    def __init__(self, services: Services, scheduler: Scheduler) -> None:
        self._services = services
        self._scheduler = scheduler
        self._turns = itertools.count(1)
        self._tooling = Tooling(services, scheduler.book, scout=self.scout)
        self.workers: dict[str, AgentWorker] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._runs: dict[AgentWorker, asyncio.Task[None]] = {}
        """Each worker's own task, so a deleted agent's can be ended alone."""

    def add(self, spec: AgentSpec) -> AgentWorker:
        worker = AgentWorker(
            self._services,
            spec,
            self._tooling,
            lambda: next(self._turns),
            bookings=self._scheduler,
            publish=self.publish,
            after_turn=self.after_turn,
        )
        self.workers[spec.name] = worker
        self._services.gate.ceilings.add_agent(spec.name, spec.ceiling_from_file)
        if spec.gateway is None:  # a gateway agent's calls come from its client, not from turns
            task = asyncio.create_task(worker.run(), name=f"worker:{spec.name}")
            self._tasks.append(task)
            self._runs[worker] = task
        return worker

    async def remove(self, agent: str) -> None:
        """End `agent`'s worker (its turn cut first, by the caller) and forget it."""
        worker = self.workers.pop(agent)
        task = self._runs.pop(worker, None)
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            self._tasks.remove(task)
        await self._tooling.mcp.end(agent)  # its MCP servers, and all they started

    def renamed(self, old: str, spec: AgentSpec) -> None:
        """`old` is now `spec.name`, in the same place in the order."""
        self.workers[old].spec = spec
        # Its MCP servers ran for the old name: they end, and the next turn starts them anew.
        self._tasks.append(asyncio.create_task(self._tooling.mcp.end(old), name=f"mcp-end:{old}"))
        self.workers = {
            (spec.name if name == old else name): worker for name, worker in self.workers.items()
        }

    def start(self) -> None:
        for spec in self._services.roster:
            self.add(spec)
        self._tasks.append(asyncio.create_task(self._watch_day(), name="day"))
        self._tasks.append(asyncio.create_task(self._services.burn.watch(self.publish)))

    async def stop(self, grace_s: float) -> None:
        """Let turns in flight finish within `grace_s`, then cancel the rest."""
        waits = [
            asyncio.create_task(_acquire(w.turn_lock)) for w in self.workers.values() if w.working
        ]
        if waits:
            await asyncio.wait(waits, timeout=grace_s)
        for task in [*waits, *self._tasks]:
            task.cancel()
        await asyncio.gather(*waits, *self._tasks, return_exceptions=True)
        await self._tooling.mcp.close()  # every MCP server, and all they started

    def wake(self, agent: str) -> None:
        ownership = self._services.ownership
        if not ownership.owns(agent) and ownership.notify is not None:
            ownership.notify(agent)  # its owner, on another plane, takes the turn
        if agent in self.workers:
            self.workers[agent].wake()

    def wake_all(self) -> None:
        for worker in self.workers.values():
            worker.wake()

    async def send(self, agent: str, text: str) -> Ran:
        """The operator's text, posted: a slash command is run by the plane;
        anything else waits for the agent's next turn. Returns what was
        stored and said at once (with their ids), and whether a command was
        refused.

        A plain message asks the gate once, is written once, and shows as
        one `MessageAppended` and one `AgentUpdated` (built with that same
        answer from the gate) before the worker is woken, so the row never
        shows the turn before the message it answers. A message larger than
        the model's whole context is refused, and nothing is stored."""
        if is_command(text):
            worker = self.workers[agent]
            in_a_turn = worker.working
            between = between_turns(text) and not in_a_turn
            async with worker.turn_lock if between else contextlib.nullcontext():
                ran = await run_command(self._services, agent, text, in_a_turn=in_a_turn)
            for message in ran.messages:
                self._services.emit(MessageAppended(message=message))
            await self.publish(agent)
            if text[1:].split()[1:2] in (["fleet"], ["group"]):  # it may free any agent
                for other in self.workers:
                    self.wake(other)
            else:
                self.wake(agent)
            return ran
        worker = self.workers[agent]
        if worker.spec.gateway is not None:
            return Ran(await self._not_for_a_gateway_agent(agent, text), refused=True)
        today = day_of(self._services.clock.now())
        if (refused := too_large(self._services.config, worker.spec, text, today)) is not None:
            raise InvalidRequest(refused)  # stored nowhere: it would jam every later turn
        refuse_while_unreachable(self._services.ledger.store_unreachable_since())
        try:
            hold = await worker.hold()
            said = [
                await self._services.say(
                    agent, "operator", text, held=hold is not None, waiting=True
                )
            ]
        except (LedgerError, sqlite3.Error) as error:
            if unreachable(error):
                refuse_while_unreachable(self._services.ledger.store_unreachable_since())
            raise
        if hold is not None and (notice := await worker.tell_hold(hold)):
            said.append(notice)
        self._services.emit(AgentUpdated(agent=await self._state(agent, hold)))
        worker.wake()
        return Ran(said)

    async def tell_hold(self, agent: str, hold: Hold | None) -> None:
        """Why a gateway agent's call was refused, said once a held spell
        (None: its call went through, and the spell is over)."""
        worker = self.workers[agent]
        if hold is None:
            await worker.unheld()
        elif await worker.tell_hold(hold):
            await self.publish(agent)

    async def _not_for_a_gateway_agent(self, agent: str, text: str) -> list[ConversationMessage]:
        """A gateway agent answers only its own client: what is typed to it is
        kept (not left waiting for a turn that never comes), and the plane
        says so at once."""
        said = [
            await self._services.say(agent, "operator", text),
            await self._services.say(agent, "plane", gateway_notice(agent)),
        ]
        await self.publish(agent)
        return said

    async def state(self, agent: str) -> AgentState:
        return await self._state(agent, await self.workers[agent].hold())

    async def _state(
        self, agent: str, hold: Hold | None, waiting: dict[str, int] | None = None
    ) -> AgentState:
        """The row, given what the gate just said of the agent (and, for a
        snapshot, every agent's waiting count, read once for all)."""
        services = self._services
        worker = self.workers[agent]
        spec = worker.spec
        working = worker.working or (spec.gateway is not None and services.ledger.flying(agent))
        held = hold is not None and not working
        spent = await services.ledger.spend_today(agent)
        ceiling = services.gate.ceilings.of(agent)
        warn_ratio = services.config.defaults.warn_ratio
        model = worker.model
        return AgentState(
            name=spec.name,
            model=model or CLIENTS_MODEL,
            provider=spec.provider,
            role=spec.role,
            status="working"
            if working
            else "paused"
            if spec.paused
            else "held"
            if held
            else "idle",
            spend_today_usd=spent,
            limit_usd=ceiling,
            warn_ratio=warn_ratio,
            spend_level=spend_level(spent, ceiling, warn_ratio),
            price_known=model is None or services.pricer.is_known(model),
            waiting=(
                await services.conversation.count_waiting(agent)
                if waiting is None
                else waiting.get(agent, 0)
            ),
            resumes_at=self._resumes_at(agent, hold) if held else None,
            paused=spec.paused,
            tools=spec.tools,
            plane=services.ownership.owner(agent) if services.ownership.plane else None,
            gateway=spec.gateway is not None,
            from_file=services.roster.from_file(agent),
            burn_usd_per_hour=services.burn.per_hour(agent),
            reaches_ceiling_at=None
            if held
            else services.burn.reaches(agent, spent, ceiling, services.gate.resets_at()),
        )

    def _resumes_at(self, agent: str, hold: Hold | None) -> datetime | None:
        """When the day turning frees a held agent. Only a ceiling above zero
        is one a new day's empty spend is under; a zero ceiling (a pause) and
        an unpriced model wait for the operator, whatever the day."""
        services = self._services
        if hold is not None and services.gate.above_agent(agent, hold.reason):
            return services.gate.resets_at()
        if hold is None or hold.reason != "ceiling" or not services.gate.ceilings.of(agent):
            return None
        return services.gate.resets_at()

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

    def _last_known(self, since: datetime) -> Snapshot:
        """The snapshot from memory alone: each row's spend as last read,
        nothing waiting counted (the store holds that)."""
        services = self._services
        defaults = services.config.defaults
        rows = [self._remembered(name) for name in list(self.workers)]
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
        )

    def _remembered(self, agent: str) -> AgentState:
        services, worker = self._services, self.workers[agent]
        spec = worker.spec
        spent = services.ledger.spend_known(agent)
        ceiling = services.gate.ceilings.of(agent)
        warn_ratio = services.config.defaults.warn_ratio
        return AgentState(
            name=spec.name,
            model=spec.model,
            provider=spec.provider,
            role=spec.role,
            status="working" if worker.working else "paused" if spec.paused else "idle",
            spend_today_usd=spent,
            limit_usd=ceiling,
            warn_ratio=warn_ratio,
            spend_level=spend_level(spent, ceiling, warn_ratio),
            price_known=services.pricer.is_known(spec.model),
            paused=spec.paused,
            tools=spec.tools,
            plane=services.ownership.owner(agent) if services.ownership.plane else None,
            gateway=spec.gateway is not None,
        )

    async def _snapshot(self) -> Snapshot:
        services = self._services
        now = services.clock.now()
        defaults = services.config.defaults
        day = await services.ledger.today()
        fleet_spent = await services.ledger.fleet_today()  # once, for every row's gate
        groups = await services.gate.ceilings.groups.states(services.ledger)  # and each group's
        return Snapshot(
            day=day,
            now=now,
            resets_at=services.gate.resets_at(),
            agents=await self._states(fleet_spent, {g.name: g.spend_today_usd for g in groups}),
            models=self._services.roster.offered,
            default_model=defaults.model,
            default_limit_usd=defaults.limit_usd,
            commands=registry(),
            tool_defaults=self._services.roster.tool_defaults(),
            spend_today_usd=sum(
                (await services.ledger.spend_by_agent()).values(), start=Decimal(0)
            ),
            fleet_spend_today_usd=fleet_spent,
            fleet_limit_usd=services.gate.ceilings.fleet(),
            groups=groups,
        )

    async def _states(
        self, fleet_spent: Decimal, group_spent: dict[str, Decimal] | None = None
    ) -> list[AgentState]:
        """Every row; an agent deleted while they are read is left out. The
        waiting counts are read once for all (memory, or one grouped query),
        and so is the fleet's spend (`fleet_spent`, for the gate's fleet
        ceiling); spend today is the ledger's, in memory once the day is read."""
        waiting = await self._services.conversation.waiting_counts()
        states = []
        for name in list(self.workers):
            try:
                worker = self.workers[name]
                hold = await worker.hold(fleet_spent, group_spent)
                states.append(await self._state(name, hold, waiting))
            except KeyError:
                continue
        return states

    async def publish(self, agent: str) -> AgentState:
        """Show `agent`'s row as it is now; return it."""
        state = await self.state(agent)
        self._services.emit(AgentUpdated(agent=state))
        return state

    async def after_turn(self, agent: str, result: TurnResult) -> None:
        """After a turn that called the model: its cost line, then the notices."""
        await self.cost_line(agent, result)
        await self.spend_notices(agent)

    async def spend_notices(self, agent: str) -> None:
        """After a turn's cost line: the once-a-day warning, and the ceiling
        reached — each time the agent is stopped: once per ceiling a day, so
        a raised limit reached again is said again, while calls settling
        together over one ceiling (a gateway's) say it once."""
        services = self._services
        await tell_spike(services, agent)
        ceiling = services.gate.ceilings.of(agent)
        if ceiling is None or ceiling == 0:
            return
        # What is settled: calls still in flight (a gateway agent's) are not spent yet.
        spent = await services.ledger.spend_today(agent) - services.ledger.in_flight(agent)
        day = await services.ledger.today()
        first_today = services.conversation.first_today
        if spent >= ceiling and await first_today(agent, f"ceiling {plain(ceiling)}", day):
            await first_today(agent, "warn", day)
            resets_in = until(services.clock.now(), services.gate.resets_at())
            await services.say(
                agent, "plane", notices.ceiling_reached(agent, ceiling, spent, resets_in)
            )
        ratio = Decimal(str(services.config.defaults.warn_ratio))
        if spent >= ceiling * ratio and await first_today(agent, "warn", day):
            await services.say(agent, "plane", notices.warning(agent, ceiling, spent))

    async def cost_line(self, agent: str, result: TurnResult) -> None:
        """The turn's quiet cost line, when it spent anything: a turn whose
        calls all failed unbilled gets none (`$0.00 · 0 in · 0 out` says
        nothing; the notice above it says what happened). What compression
        saved is recorded before the line that says it."""
        model = self.workers[agent].spec.model
        day = await self._services.ledger.today()
        if self._services.savings is not None:
            await self._services.savings.record(agent, model, result.saved_chars, day)
        if result.cost == 0 and result.usage == Usage() and not result.saved_chars:
            return
        await self._services.say(
            agent,
            "cost",
            turn_line(result.cost, result.usage, result.saved_chars, unpriced=result.unpriced),
            cost_usd=None if result.unpriced and not result.cost else result.cost,
            usage=result.usage,
        )
        if result.unpriced and await self._services.conversation.first_today(
            agent, "unpriced", day
        ):
            await self._services.say(agent, "plane", notices.unpriced(model))

    async def scout(self, asker: str, question: str, paths: list[str], workspace: Path) -> str:
        """Run one scout turn on `asker`'s workspace; return its answer, capped.

        The gate is asked with the scout's turn lock held, right before the
        turn: when several agents ask at once, each waits for the one before
        it, whose spend then counts."""
        worker = self.workers.get(SCOUT)
        if worker is None or asker == SCOUT:
            raise ToolError("There is no scout on this plane to ask.")
        listed = ", ".join(paths) if paths else "the workspace"
        async with worker.turn_lock:
            hold = await worker.hold()
            if hold is not None:
                raise ToolError(f"The scout is not answering: {hold.notice}")
            # The asking agent's words, never shown as the operator's.
            await self._services.say(SCOUT, "plane", f"{asker} asks: {question} ({listed})")
            number = next(self._turns)
            worker.working = True
            self._services.emit(TurnStarted(agent=SCOUT, turn=number))
            await self.publish(SCOUT)
            try:
                turn = Turn(
                    self._services,
                    worker.spec,
                    number,
                    self._tooling,
                    workspace,
                    on_spend=self.publish,
                )
                result = await turn.run(
                    f"{asker} asks: {question}\nLook at: {listed}\n"
                    "Answer concisely with only what answers the question."
                )
            except LedgerError as error:
                worker.working = False
                try:
                    await worker.unrecorded(error)
                    await worker.finish(number, TurnResult(ok=False))
                except Exception:  # saying so failed too; the error below still stops the asker
                    log.exception("scout: telling of an unrecorded turn")
                raise
            finally:
                worker.working = False
            await worker.finish(number, result)
        return result.answer[:SCOUT_ANSWER_CHARS] or "The scout found no answer."

    async def _watch_day(self) -> None:
        """At the end of the plane's day (later than the clock's midnight
        while the clock is behind it), tell the clients and wake everyone."""
        services = self._services
        while True:
            try:
                await services.ledger.today()
            except LedgerError:
                log.exception("the plane's day could not be read")
            await services.clock.sleep_until(services.gate.resets_at())
            self._services.emit(DayRolled(snapshot=await self.snapshot()))
            self.wake_all()


def refuse_while_unreachable(since: datetime | None) -> None:
    """A send while the shared store is away is refused with the sentence
    that says so: never acknowledged and then lost."""
    if since is not None:
        raise StoreUnreachable(send_refused(since))


async def _acquire(lock: asyncio.Lock) -> None:
    async with lock:
        pass


def gateway_notice(agent: str) -> str:
    return (
        f"{agent} is a gateway agent: its calls come from its own client (`plane gateway "
        f"env {agent}` says how to point one at the plane), so it answers nothing typed here. "
        "/limit works as on any agent."
    )
