"""What the runtime works with, built once by the plane at start-up and
passed down (no globals).

Only the layers below the agents: the ledger and gate, the histories, the
providers, the config. Nothing here points back at the crew, its workers or
the scheduler: what a worker or a turn tells them is passed to it as a
narrow callable, as `Scheduler(db, clock, wake=…)` is told whom to wake.
Events leave through `emit`, so the agents know nothing of who listens."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import TypeVar

from plane.agents.guard_book import GuardBook
from plane.agents.roster import Roster
from plane.clock import Clock
from plane.config import Config
from plane.economy.compress.refs import RefStore
from plane.errors import LeaseLost
from plane.history.conversation import Conversation
from plane.history.transcript import Transcript
from plane.home import Home
from plane.money.burn import Burn
from plane.money.gate import Gate
from plane.money.ledger import Ledger
from plane.money.pricing import Pricer
from plane.money.savings import Savings
from plane.providers.base import Provider
from plane.store.fence import Fence
from plane.tasks import settled
from plane.wire.protocol import ConversationMessage, Event, MessageAppended, MessageKind, Usage

T = TypeVar("T")


class Ownership:
    """Which plane runs each agent's turns. A plane alone on its store runs
    them all (`mine` None); planes sharing one are told by their leases
    (plane/daemon/fleet.py), and a message for an agent another plane runs
    is stored here and the owner told (`notify`).

    A lease is owned only until `live_until` (this machine's monotonic
    clock, which a pause of the process moves on): a plane that could not
    renew stops starting turns before the lease can have run out."""

    def __init__(
        self, plane: str | None = None, notify: Callable[[str], None] | None = None
    ) -> None:
        """`plane`: this plane's name in a fleet sharing the store (None:
        alone on it, running every agent); `notify` tells an agent's owner
        that it has work."""
        self.plane = plane
        self.mine: frozenset[str] | None = None if plane is None else frozenset()
        """The agents this plane holds the leases of (None: all, alone)."""
        self.owners: dict[str, str] = {}
        self.notify = notify
        self.changes = 0
        """Counts the changes of `mine`: what was read while other planes ran
        an agent is read again."""
        self.epochs: dict[str, int] = {}
        """The epoch of each lease held (its fencing token)."""
        self.live_until = float("inf")
        self.calls_until = float("inf")
        """Until when a call in flight may go on (the same clock): past it the
        lease may have run out by the database's, and another plane may run
        the agent, so the call is cut (`plane.agents.metering`)."""

    def renewed(
        self,
        mine: frozenset[str],
        epochs: dict[str, int],
        live_until: float,
        calls_until: float = float("inf"),
    ) -> None:
        """The leases held after a renewal, until when to start calls, and
        until when a call in flight may go on."""
        self.mine, self.epochs, self.live_until = mine, epochs, live_until
        self.calls_until = calls_until

    async def within_lease(self, agent: str, call: Awaitable[T]) -> T:
        """`call`'s result, or `LeaseLost` once `calls_until` passes with it in
        flight and no renewal moved it on (the call is cancelled: what it may
        have cost counts at its estimate, `plane.agents.metering`). Alone on
        the store, nothing bounds it."""
        if self.mine is None:
            return await call
        task = asyncio.ensure_future(call)
        try:
            while not task.done():
                left = self.calls_until - time.monotonic()
                if left <= 0:
                    task.cancel()
                    # However the call ends as it is cut, the turn ends as a lost lease's.
                    await settled(task)
                    raise LeaseLost(f"{self.plane}'s lease on {agent} ran out during its call")
                await asyncio.wait([task], timeout=left)
        except asyncio.CancelledError:  # the turn was cut: its call with it
            task.cancel()
            raise
        return task.result()

    def owns(self, agent: str) -> bool:
        if self.mine is None:
            return True
        return agent in self.mine and time.monotonic() < self.live_until

    def fence(self, agent: str) -> Fence | None:
        """What a turn of `agent`'s writes under (None: no lease to check)."""
        if self.plane is None or self.mine is None or agent not in self.epochs:
            return None
        return Fence(agent, self.plane, self.epochs[agent])

    def owner(self, agent: str) -> str | None:
        """The plane that runs `agent` now (None: none holds its lease)."""
        if self.mine is None or agent in self.mine:
            return self.plane
        return self.owners.get(agent)


@dataclass(frozen=True)
class Services:
    """The layers below the agents, built once before any agent and never
    changed: what an agent's turn, its tools and its row read and write.
    Per-agent state is its worker's (`AgentWorker.session`), and what the
    agents tell above them is passed to the part that tells it (a narrow
    callable), never kept here."""

    config: Config
    home: Home
    clock: Clock
    ledger: Ledger
    gate: Gate
    conversation: Conversation
    transcript: Transcript
    roster: Roster
    emit: Callable[[Event], None]
    """Tells the clients (the daemon's event bus)."""
    pricer: Pricer
    providers: dict[str, Provider]
    """By name; the embedded model's join when the first agent is put on it."""
    refs: RefStore | None
    """Where compression and compaction keep what they removed (so the ref in
    their markers is retrievable); None with both off."""
    burn: Burn
    """Each agent's pace, fed by the ledger: the forecast in its row, a spike."""
    savings: Savings
    """Where what compression saved is recorded (the charts and /metrics read it)."""
    ownership: Ownership
    """Which plane runs each agent's turns (all of them, alone on a store)."""
    guards: GuardBook
    """What each agent's loop guard keeps across restarts."""

    async def add_message(
        self,
        agent: str,
        kind: MessageKind,
        text: str,
        *,
        held: bool = False,
        waiting: bool = False,
        cost_usd: Decimal | None = None,
        usage: Usage | None = None,
        failed: bool = False,
    ) -> ConversationMessage:
        """Store a message in `agent`'s conversation, then tell the clients
        (`MessageAppended`): what is said in a conversation is said this way.
        `failed`: a cost line's turn failed (`ConversationMessage.failed`)."""
        message = await self.conversation.append(
            agent,
            kind,
            text,
            held=held,
            waiting=waiting,
            cost_usd=cost_usd,
            usage=usage,
            failed=failed,
        )
        self.emit(MessageAppended(message=message))
        return message
