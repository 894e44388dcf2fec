"""The agents' workers — made, renamed, ended, started and stopped — and the
operator's messages to them (`receive`), and the day rolling over.

The crew is the top of the agents: it builds workers and hands each the
narrow callables it needs (`publish` is the rows', `after_turn` the cost
line's and notices', `book` the scheduler's, `scout` the scout's); nothing
below imports or holds it. Its workers are found through `Workers`, which
it fills.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import itertools
import logging
import sqlite3
from collections.abc import Mapping
from datetime import datetime

from plane.agents import notices
from plane.agents.after_turn import AfterTurn
from plane.agents.away import kept_or_refused
from plane.agents.commands import Ran, between_turns, is_command, over_many, run_command
from plane.agents.fit import too_large
from plane.agents.roster import AgentSpec
from plane.agents.rows import Rows
from plane.agents.scheduler import Scheduler
from plane.agents.services import Services
from plane.agents.toolbox import Tooling
from plane.agents.worker import AgentWorker, Looped
from plane.agents.workers import Workers
from plane.clock import day_of
from plane.errors import InvalidRequest, LedgerError
from plane.money.gate import Hold
from plane.wire.protocol import ConversationMessage, DayRolled, MessageAppended

log = logging.getLogger(__name__)


class Crew:
    def __init__(
        self,
        services: Services,
        scheduler: Scheduler,
        workers: Workers,
        rows: Rows,
        after_turn: AfterTurn,
        tooling: Tooling,
        looped: Looped | None = None,
    ) -> None:
        """`looped` is told when the loop guard holds an agent (the alerts')."""
        self._services = services
        self._looped = looped
        self._scheduler = scheduler
        self._rows = rows
        self._after_turn = after_turn
        self._tooling = tooling
        self._turns = itertools.count(1)
        self.workers = workers
        self._tasks: list[asyncio.Task[None]] = []
        self._runs: dict[AgentWorker, asyncio.Task[None]] = {}
        """Each worker's own task, so a deleted agent's can be ended alone."""
        self._day_ends: datetime | None = None
        """The end of the day the day watcher sleeps until (None: it is not
        asleep: not started, reading the day, or rolling it)."""

    def add(
        self, spec: AgentSpec, client_model: str | None = None, *, look: bool = True
    ) -> AgentWorker:
        """`spec`'s worker, running (a gateway agent's, with the model its
        client last named, waits for its client's calls instead). `look`:
        it looks at once for work (`AgentWorker.run`)."""
        worker = AgentWorker(
            self._services,
            spec,
            self._tooling,
            lambda: next(self._turns),
            bookings=self._scheduler,
            publish=self._rows.publish,
            show=self._rows.show,
            after_turn=self._after_turn,
            client_model=client_model,
            looped=self._looped,
        )
        self.workers.add(worker)
        self._services.gate.ceilings.add_agent(spec.name, spec.ceiling_from_file)
        if spec.gateway is None:  # a gateway agent's calls come from its client, not from turns
            # A context of its own: an agent made by an operator's request
            # does not inherit the request's place ahead in the store (`OPERATOR`).
            task = asyncio.create_task(
                worker.run(look=look), name=f"worker:{spec.name}", context=contextvars.Context()
            )
            self._tasks.append(task)
            self._runs[worker] = task
        return worker

    async def remove(self, agent: str) -> None:
        """End `agent`'s worker (its turn cut first, by the caller) and forget it."""
        worker = self.workers.remove(agent)
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
        self.workers.renamed(old, spec.name)

    async def start(self) -> None:
        """Every agent's worker, and the watch on the day's end."""
        roster, ledger = self._services.roster, self._services.ledger
        gateways = [s.name for s in roster if s.gateway is not None]
        latest = await ledger.latest_models(gateways)
        day = ledger.day()  # as last known: no read that would begin the plane's day here
        floored = await ledger.floor_priced_agents(day) if gateways else set()
        looking = await self.with_work()
        for spec in roster:
            worker = self.add(spec, latest.get(spec.name), look=spec.name in looking)
            if spec.name in floored:  # its row says so after a restart too
                worker.floor_on = day
        self._tasks.append(asyncio.create_task(self._watch_day(), name="day"))

    async def with_work(self, waiting: Mapping[str, int] | None = None) -> set[str]:
        """The agents whose look may find something: a message waiting (one
        answered in a turn the plane was killed in waits still), a booking
        due (one due later, the scheduler wakes then), a hold told (which a
        look ends if the hold has), or a worker the loop guard holds (its
        look reads the store again: a resume through another plane frees
        it). Read for the whole fleet at once, at start and at each of a
        fleet's renewals (`Fleet(work=…)`, which gives what waits for each
        agent, read once for the renewal's rows too); the others' look would
        find nothing, and is not made. At a renewal, an agent told of a hold
        that a ceiling holds still is left asleep (`Rows.held_still`): its
        look would find the same hold."""
        conversation = self._services.conversation
        renewal = waiting is not None
        if waiting is None:
            waiting = await conversation.waiting_counts()
        told = await conversation.told_holds()
        looped = {name for name, worker in self.workers.items() if worker.spec.loop is not None}
        work = {*waiting, *told, *await self._scheduler.due_agents()}
        if renewal and (held := (work & told) - looped):
            work -= await self._rows.held_still(held)
        return work | looped

    async def settled(self) -> None:
        """Until every worker has done its first work (`AgentWorker.settled`)."""
        for worker in list(self.workers.values()):
            await worker.settled.wait()

    def caught_up(self) -> bool:
        """Whether the plane has acted on the clock's present: a day's end
        passed is rolled and everyone woken, and every booking due has woken
        its agent. Answered from the clock, not from whether those watches
        have run since it moved: so a fleet of idle workers with the plane
        caught up stays idle until something new arrives."""
        ends = self._day_ends
        if ends is None or self._services.clock.now() >= ends:
            return False
        return self._scheduler.caught_up()

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

    def runs_elsewhere(self, agent: str) -> bool:
        """Another plane of the fleet runs `agent`'s turns (or none holds its
        lease now): its turns are told here only as the lines and the row
        this plane reads at its renewals, with no turn's start or end."""
        mine = self._services.ownership.mine
        return mine is not None and agent not in mine

    async def receive(self, agent: str, text: str) -> Ran:
        """The operator's text for `agent`: a slash command is run by the plane;
        anything else waits for the agent's next turn. Returns what was
        stored and said at once (with their ids), and whether a command was
        refused."""
        if is_command(text.lstrip()):  # as the TUI sends it, trimmed: ` /limit 0` pauses
            return await self._command(agent, text.strip())
        if self.workers[agent].spec.gateway is not None:
            return Ran(await self._not_for_a_gateway_agent(agent, text), refused=True)
        return Ran(await self._message(agent, text))

    async def _command(self, agent: str, text: str) -> Ran:
        """Both halves stored and shown, the row after; the agent woken. A
        fleet's or a group's limit may hold or free any agent: every agent
        of this plane's is woken, and the rows under the ceiling changed
        shown again. The other planes of a fleet are told once, by the
        ceilings' own notice (`Ceilings(tell=…)`), and wake the agents they
        run: not told once an agent, which at 10,000 agents was thousands
        of notices, and as many reads on the planes that heard them."""
        worker = self.workers[agent]
        in_a_turn = worker.working
        between = between_turns(text) and not in_a_turn
        ceilings = self._services.gate.ceilings
        changes = ceilings.changes
        async with worker.turn_lock if between else contextlib.nullcontext():
            priced = functools.partial(self._rows.priced, agent)
            ran = await run_command(self._services, agent, text, in_a_turn=in_a_turn, priced=priced)
        for message in ran.messages:
            self._services.emit(MessageAppended(message=message))
        await self._rows.publish(agent)
        if (over := over_many(text)) is None:
            self.workers.wake(agent)
            return ran
        if ceilings.changes != changes:  # set, not only shown
            self._rows.ceilings_changed(over)
        # The agents here; another plane, told of the change once, wakes its own.
        self.workers.wake_all()
        return ran

    async def _message(self, agent: str, text: str) -> list[ConversationMessage]:
        """A plain message asks the gate once, is written once, and shows as
        one `MessageAppended` and one `AgentUpdated` (built with that same
        answer from the gate) before the worker is woken, so the row never
        shows the turn before the message it answers. In a fleet, the plane
        that runs the agent is told at once, as of a command: not left to
        find the message at its next renewal. A message larger than
        the model's whole context is refused, and nothing is stored."""
        services, worker = self._services, self.workers[agent]
        today = day_of(services.clock.now())
        mcp = self._tooling.mcp.catalog_of(agent).specs
        if (refused := too_large(services.config, worker.spec, text, today, mcp)) is not None:
            raise InvalidRequest(refused)  # stored nowhere: it would jam every later turn

        async def kept() -> tuple[Hold | None, list[ConversationMessage]]:
            hold = await worker.hold()
            said = await services.add_message(
                agent, "operator", text, held=hold is not None, waiting=True
            )
            return hold, [said]

        hold, said = await kept_or_refused(services.ledger, kept)
        try:  # kept: what fails from here on is said in the log, never as "not kept"
            if hold is not None and (notice := await worker.tell_hold(hold)):
                said.append(notice)
            await self._rows.show(agent, hold)
        except (LedgerError, sqlite3.Error) as error:
            log.warning("%s: a message was kept, but its row could not be shown: %s", agent, error)
        self.workers.wake(agent)  # here, and on the plane that runs it
        return said

    async def _not_for_a_gateway_agent(self, agent: str, text: str) -> list[ConversationMessage]:
        """A gateway agent answers only its own client: what is typed to it is
        kept (not left waiting for a turn that never comes), and the plane
        says so at once."""
        services = self._services
        typed = await kept_or_refused(
            services.ledger, lambda: services.add_message(agent, "operator", text)
        )
        said = [typed, await services.add_message(agent, "plane", notices.gateway_agent(agent))]
        await self._rows.publish(agent)
        return said

    async def _watch_day(self) -> None:
        """At the end of the plane's day (later than the clock's midnight
        while the clock is behind it), tell the clients and wake everyone.
        A store that fails the day or its rows (away, say) is said in the
        log: the agents are woken all the same, and the next day watched."""
        services = self._services
        while True:
            try:
                await services.ledger.today()
            except LedgerError as error:
                log.warning("the plane's day could not be read: %s", error)
            self._day_ends = services.gate.resets_at()
            await services.clock.sleep_until(self._day_ends)
            self._day_ends = None
            try:
                services.emit(DayRolled(snapshot=await self._rows.snapshot()))
            except (LedgerError, sqlite3.Error) as error:
                log.warning("the day ended; its rows could not be read for the clients: %s", error)
            self.workers.wake_all()


async def _acquire(lock: asyncio.Lock) -> None:
    async with lock:
        pass
