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
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from decimal import Decimal

from plane.agents.commands import registry
from plane.agents.services import Services
from plane.agents.worker import AgentWorker
from plane.agents.workers import Workers
from plane.errors import LedgerError, unreachable
from plane.money.gate import Hold
from plane.money.limits import spend_level
from plane.wire.protocol import AgentState, AgentUpdated, Snapshot

CLIENTS_MODEL = "its client's model"
"""A gateway agent's model before its client has made a call: the client chooses."""


class Rows:
    def __init__(self, services: Services, workers: Workers) -> None:
        self._services = services
        self._workers = workers

    def row(
        self, worker: AgentWorker, *, spent: Decimal, hold: Hold | None, waiting: int
    ) -> AgentState:
        """The row: the worker as it is, given its spend today, what the gate
        said of it and what waits for it."""
        services = self._services
        spec = worker.spec
        working = self._working(worker)
        held = hold is not None and not working
        ceiling = services.gate.ceilings.of(spec.name)
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
            waiting=waiting,
            resumes_at=self._resumes_at(spec.name, hold) if held else None,
            paused=spec.paused,
            tools=spec.tools,
            plane=services.ownership.owner(spec.name) if services.ownership.plane else None,
            gateway=spec.gateway is not None,
            from_file=services.roster.from_file(spec.name),
            burn_usd_per_hour=services.burn.per_hour(spec.name),
            reaches_ceiling_at=None
            if held
            else services.burn.reaches(spec.name, spent, ceiling, services.gate.resets_at()),
        )

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
        self, worker: AgentWorker, hold: Hold | None, waiting: int | None = None
    ) -> AgentState:
        """The row, its spend and waiting count read (a snapshot reads every
        agent's waiting count once for all)."""
        services, agent = self._services, worker.spec.name
        spent = await services.ledger.spend_today(agent)
        if waiting is None:
            waiting = await services.conversation.count_waiting(agent)
        return self.row(worker, spent=spent, hold=hold, waiting=waiting)

    async def publish(self, agent: str) -> AgentState:
        """Show `agent`'s row as it is now; return it."""
        state = await self.state(agent)
        self._services.emit(AgentUpdated(agent=state))
        return state

    async def show(self, agent: str, hold: Hold | None) -> AgentState:
        """Show `agent`'s row given what the gate just said of it (not asked again)."""
        state = await self._built(self._workers[agent], hold)
        self._services.emit(AgentUpdated(agent=state))
        return state

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
        day = await services.ledger.today()
        fleet_spent = await services.ledger.fleet_today()  # once, for every row's gate
        groups = await services.gate.ceilings.groups.states(services.ledger)  # and each group's
        group_spent = {g.name: g.spend_today_usd for g in groups}
        return Snapshot(
            day=day,
            now=services.clock.now(),
            resets_at=services.gate.resets_at(),
            agents=await self._states(fleet_spent, group_spent),
            models=services.roster.offered,
            default_model=defaults.model,
            default_limit_usd=defaults.limit_usd,
            commands=registry(),
            tool_defaults=services.roster.tool_defaults(),
            spend_today_usd=sum(
                (await services.ledger.spend_by_agent()).values(), start=Decimal(0)
            ),
            fleet_spend_today_usd=fleet_spent,
            fleet_limit_usd=services.gate.ceilings.fleet(),
            groups=groups,
        )

    async def _states(
        self, fleet_spent: Decimal, group_spent: dict[str, Decimal]
    ) -> list[AgentState]:
        """Every row; an agent deleted while they are read is left out. The
        waiting counts are read once for all (memory, or one grouped query),
        and so is the fleet's spend and each group's (for the gate's fleet and
        group ceilings); spend today is the ledger's, in memory once the day is read."""
        waiting = await self._services.conversation.waiting_counts()
        states = []
        for name in list(self._workers):
            try:
                worker = self._workers[name]
                hold = await self._hold(worker, fleet_spent, group_spent)
                states.append(await self._built(worker, hold, waiting.get(name, 0)))
            except KeyError:
                continue
        return states

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
        )
