"""Requests → runtime calls: what each request a client sends asks of the
plane, and the reply it gets.

One handler a request, registered for its class (`@answers(p.Send)`): the
table `ANSWERS` is what the plane answers, and the protocol's pairs say
with what (`class Send(Request[SendReply])`); mypy holds each handler's
reply to its request's, and a test holds the table to the protocol (every
request but the connection's own, `hello` and `subscribe`, which the
listener answers). A new request is its pair in the protocol, its handler
here, and its caller.

The routing only: the conversation's rules are the crew's (`Crew.receive`),
the agents' the roster's, money's the ledger's. The lifecycle — what exists
and when — is `plane.daemon.server`'s; it hands this what a request may
call, as narrow parts and callables.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from plane.agents.crew import Crew
from plane.agents.lifecycle import Lifecycle
from plane.agents.roster import Roster
from plane.agents.rows import Rows
from plane.clock import Clock
from plane.errors import PlaneError
from plane.history.conversation import Conversation
from plane.money.charts import spend_history, spend_stack
from plane.money.ledger import Ledger
from plane.store.engine import OPERATOR, Database
from plane.wire import protocol as p

ProviderReady = Callable[[str], Awaitable[None]]
"""(provider) → returns once the provider can take calls (the embedded model
starts on the first agent put on it), or raises why it cannot."""

R = TypeVar("R", bound=p.Frame)
Q = TypeVar("Q", bound=p.Request[Any])
Handler = Callable[["Api", Q], Awaitable[R]]

ANSWERS: dict[type[p.Request[Any]], Handler[Any, Any]] = {}
"""Each request class the API answers → its handler."""


def answers(kind: type[p.Request[R]]) -> Callable[[Handler[Q, R]], Handler[Q, R]]:
    """Register the handler of `kind`, which returns `kind`'s reply."""

    def register(handler: Handler[Q, R]) -> Handler[Q, R]:
        ANSWERS[kind] = handler
        return handler

    return register


class Api:
    def __init__(
        self,
        *,
        crew: Crew,
        rows: Rows,
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
        self._rows = rows
        self._roster = roster
        self._conversation = conversation
        self._ledger = ledger
        self._clock = clock
        self._provider_ready = provider_ready
        self._stop = stop
        self._lifecycle = lifecycle
        self._db = db
        """The reader, for the charts' sums (`spend_history`)."""

    async def handle(self, request: p.Request[R]) -> R:
        """The reply to `request`, by its handler in `ANSWERS`; the store
        serves its writes ahead of the agents' (`OPERATOR`)."""
        handler = ANSWERS.get(type(request))
        if handler is None:
            raise PlaneError(f"Requests of type {request.type!r} are not handled here.")
        operator = OPERATOR.set(True)
        try:
            reply: R = await handler(self, request)
        finally:
            OPERATOR.reset(operator)
        return reply

    # ── the conversation and the plane ─────────────────────────────────────

    @answers(p.Status)
    async def _status(self, request: p.Status) -> p.SnapshotReply:
        return p.SnapshotReply(id=request.id, snapshot=await self._rows.snapshot())

    @answers(p.Send)
    async def _send(self, request: p.Send) -> p.SendReply:
        """The operator's text: what was stored and said at once, and whether
        a command was refused (nothing changed)."""
        self._roster.get(request.agent)
        ran = await self._crew.receive(request.agent, request.text)
        return p.SendReply(
            id=request.id,
            messages=ran.messages,
            refused=ran.refused,
            elsewhere=self._crew.runs_elsewhere(request.agent),
        )

    @answers(p.History)
    async def _history(self, request: p.History) -> p.HistoryReply:
        messages = await self._conversation.history(
            request.agent, request.limit, before_id=request.before_id
        )
        if not messages and request.agent not in self._roster.names():
            self._roster.get(request.agent)  # no such agent, and none deleted
        # A deleted agent's conversation is kept, and read like any other.
        return p.HistoryReply(id=request.id, agent=request.agent, messages=messages)

    @answers(p.Stop)
    async def _stop_plane(self, request: p.Stop) -> p.OkReply:
        self._stop()
        return p.OkReply(id=request.id)

    # ── money ──────────────────────────────────────────────────────────────

    @answers(p.Ledger)
    async def _ledger_of(self, request: p.Ledger) -> p.LedgerReply:
        day = request.day or self._clock.now().date()
        entries = await self._ledger.entries(day)
        return p.LedgerReply(id=request.id, day=day, entries=entries)

    @answers(p.SpendHistory)
    async def _spend_history(self, request: p.SpendHistory) -> p.SpendHistoryReply:
        if request.agent is not None:
            self._roster.get(request.agent)
        assert self._db is not None
        return await spend_history(self._db, self._ledger, request.agent, request.id)

    @answers(p.SpendStack)
    async def _spend_stack(self, request: p.SpendStack) -> p.SpendStackReply:
        assert self._db is not None
        return await spend_stack(self._db, self._ledger, request.by, request.top, request.id)

    # ── the operator's lifecycle requests (`plane.agents.lifecycle`) ───────

    @answers(p.NewAgent)
    async def _new_agent(self, request: p.NewAgent) -> p.NewAgentReply:
        """Its provider ready first: a model that cannot start makes no agent."""
        await self._provider_ready(self._roster.admit(request.name, request.model))
        spec = await self._roster.create(request.name, request.model, request.role, request.tools)
        self._crew.add(spec)
        return p.NewAgentReply(id=request.id, agent=await self._rows.publish(request.name))

    @answers(p.PauseAgent)
    async def _pause_agent(self, request: p.PauseAgent) -> p.AgentReply:
        state = await self._lifecycle.pause(request.agent, request.paused)
        return p.AgentReply(id=request.id, agent=state)

    @answers(p.EditAgent)
    async def _edit_agent(self, request: p.EditAgent) -> p.AgentReply:
        gateway = self._roster.get(request.agent).gateway is not None
        if request.model is not None and not gateway:  # a gateway agent's: refused
            await self._provider_ready(self._roster.provider_for(request.model))
        state = await self._lifecycle.edit(
            request.agent,
            role=request.role,
            model=request.model,
            tools=request.tools,
            limit=request.limit,
        )
        return p.AgentReply(id=request.id, agent=state)

    @answers(p.RenameAgent)
    async def _rename_agent(self, request: p.RenameAgent) -> p.AgentReply:
        state = await self._lifecycle.rename(request.agent, request.new_name)
        return p.AgentReply(id=request.id, agent=state)

    @answers(p.DeleteAgent)
    async def _delete_agent(self, request: p.DeleteAgent) -> p.OkReply:
        await self._lifecycle.delete(request.agent)
        return p.OkReply(id=request.id)

    @answers(p.Interrupt)
    async def _interrupt(self, request: p.Interrupt) -> p.OkReply:
        await self._lifecycle.interrupt(request.agent)
        return p.OkReply(id=request.id)

    @answers(p.ShowAgent)
    async def _show_agent(self, request: p.ShowAgent) -> p.ShowAgentReply:
        return await self._lifecycle.show(request.agent, request.id)
