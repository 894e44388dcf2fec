"""What the runtime works with, built once by the plane at start-up and
passed down (no globals)."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING

from plane.agents.roster import Roster
from plane.clock import Clock
from plane.config import Config
from plane.daemon.events import EventBus
from plane.economy.compress.store import RefStore
from plane.economy.summary import Breaker
from plane.history.conversation import Conversation
from plane.history.transcript import Transcript
from plane.home import Home
from plane.money.gate import Gate
from plane.money.ledger import Ledger
from plane.money.pricing import Pricer
from plane.providers.base import Provider
from plane.wire.protocol import Message, MessageAppended, MessageKind, Usage

if TYPE_CHECKING:
    from plane.agents.crew import Crew
    from plane.agents.scheduler import Scheduler


@dataclass
class Services:
    config: Config
    home: Home
    clock: Clock
    ledger: Ledger
    gate: Gate
    conversation: Conversation
    transcript: Transcript
    roster: Roster
    bus: EventBus
    pricer: Pricer
    providers: dict[str, Provider]
    refs: RefStore | None
    """Where compression keeps what it removed; None with compression off."""
    session_layers: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Each agent's extra system-prompt sections, fixed for its session."""
    breaker: Breaker = field(default_factory=Breaker)
    """Auto-compact's: three failed summaries in a row and an agent stops trying."""
    scheduler: Scheduler = field(init=False)
    crew: Crew = field(init=False)

    async def say(
        self,
        agent: str,
        kind: MessageKind,
        text: str,
        *,
        held: bool = False,
        waiting: bool = False,
        cost_usd: Decimal | None = None,
        usage: Usage | None = None,
    ) -> Message:
        """Store a message in `agent`'s conversation, then tell the clients."""
        message = await self.conversation.append(
            agent, kind, text, held=held, waiting=waiting, cost_usd=cost_usd, usage=usage
        )
        self.bus.emit(MessageAppended(message=message))
        return message
