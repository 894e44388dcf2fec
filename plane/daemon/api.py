"""Requests → runtime calls: what each request a client sends asks of the
plane, and the reply it gets.

The routing only: the conversation's rules are the crew's (`Crew.send`),
the agents' the roster's, money's the ledger's. The lifecycle — what exists
and when — is `plane.daemon.server`'s; it hands this what a request may
call, as narrow parts and callables.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from plane.agents.commands import Ran
from plane.agents.crew import Crew
from plane.agents.lifecycle import Lifecycle
from plane.agents.roster import Roster
from plane.clock import Clock
from plane.errors import PlaneError
from plane.history.conversation import Conversation
from plane.money.charts import spend_history, spend_stack
from plane.money.ledger import Ledger
from plane.store.engine import Database
from plane.wire import protocol as p

ProviderReady = Callable[[str], Awaitable[None]]
"""(provider) → returns once the provider can take calls (the embedded model
starts on the first agent put on it), or raises why it cannot."""


class Api:
    def __init__(
        self,
        *,
        crew: Crew,
        roster: Roster,
        conversation: Conversation,
        ledger: Ledger,
        clock: Clock,
        provider_ready: ProviderReady,
        stop: Callable[[], None],
        lifecycle: Lifecycle,
        db: Database | None = None,
    ) -> None:
        self._crew = crew
        self._roster = roster
        self._conversation = conversation
        self._ledger = ledger
        self._clock = clock
        self._provider_ready = provider_ready
        self._stop = stop
        self._lifecycle = lifecycle
        self._db = db
        """The reader, for the charts' sums (`spend_history`)."""

    async def handle(self, request: p.Request) -> p.Reply:
        match request:
            case p.Status():
                return p.SnapshotReply(id=request.id, snapshot=await self._crew.snapshot())
            case p.Send():
                ran = await self.post(request.agent, request.text)
                return p.SendReply(id=request.id, messages=ran.messages, refused=ran.refused)
            case p.History():
                messages = await self._conversation.history(
                    request.agent, request.limit, before_id=request.before_id
                )
                if not messages and request.agent not in self._roster.names():
                    self._roster.get(request.agent)  # no such agent, and none deleted
                # A deleted agent's conversation is kept, and read like any other.
                return p.HistoryReply(id=request.id, agent=request.agent, messages=messages)
            case p.NewAgent():
                state = await self.new_agent(
                    request.name, request.model, request.role, request.tools
                )
                return p.NewAgentReply(id=request.id, agent=state)
            case p.Ledger():
                day = request.day or self._clock.now().date()
                entries = await self._ledger.entries(day)
                return p.LedgerReply(id=request.id, day=day, entries=entries)
            case p.Stop():
                self._stop()
                return p.OkReply(id=request.id)
            case p.SpendHistory():
                if request.agent is not None:
                    self._roster.get(request.agent)
                assert self._db is not None
                return await spend_history(self._db, self._ledger, request.agent, request.id)
            case p.SpendStack():
                assert self._db is not None
                return await spend_stack(
                    self._db, self._ledger, request.by, request.top, request.id
                )
            case _:
                return await self._manage(request)
        raise PlaneError(f"Requests of type {request.type!r} are not handled here.")

    async def _manage(self, request: p.Request) -> p.Reply:
        """The operator's lifecycle requests (`plane.agents.lifecycle`)."""
        life = self._lifecycle
        match request:
            case p.PauseAgent():
                state = await life.pause(request.agent, request.paused)
                return p.AgentReply(id=request.id, agent=state)
            case p.EditAgent():
                gateway = self._roster.get(request.agent).gateway is not None
                if request.model is not None and not gateway:  # a gateway agent's: refused
                    await self._provider_ready(self._roster.provider_for(request.model))
                state = await life.edit(
                    request.agent,
                    role=request.role,
                    model=request.model,
                    tools=request.tools,
                    limit=request.limit,
                )
                return p.AgentReply(id=request.id, agent=state)
            case p.RenameAgent():
                state = await life.rename(request.agent, request.new_name)
                return p.AgentReply(id=request.id, agent=state)
            case p.DeleteAgent():
                await life.delete(request.agent)
                return p.OkReply(id=request.id)
            case p.Interrupt():
                await life.interrupt(request.agent)
                return p.OkReply(id=request.id)
            case p.ShowAgent():
                return await life.show(request.agent, request.id)
        raise PlaneError(f"Requests of type {request.type!r} are not handled here.")

    async def post(self, agent: str, text: str) -> Ran:
        """Post the operator's text: what was stored and said at once, and
        whether a command was refused (nothing changed)."""
        self._roster.get(agent)
        return await self._crew.send(agent, text)

    async def new_agent(
        self, name: str, model: str, role: str, tools: p.ToolSet | None = None
    ) -> p.AgentState:
        """Its provider ready first: a model that cannot start makes no agent."""
        await self._provider_ready(self._roster.admit(name, model))
        spec = await self._roster.create(name, model, role, tools)
        self._crew.add(spec)
        return await self._crew.publish(name)
