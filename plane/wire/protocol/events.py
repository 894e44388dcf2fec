"""The events: plane → subscribed clients, pushed as things happen, with no
`id` (they answer no request). `Event` is their union: what a client keeps
for its `events()` (`plane.wire.client`) and the plane's event bus carries.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import ClassVar, Literal

from pydantic import Field

from plane.wire.protocol.state import (
    AgentRows,
    AgentState,
    ConversationMessage,
    Frame,
    Paged,
    Snapshot,
    Usage,
)


class MessageAppended(Frame):
    type: Literal["message"] = "message"
    message: ConversationMessage


class TextDelta(Frame):
    """Part of an agent's answer as it streams; the whole answer follows as a
    `message` event once the turn's call is in the ledger."""

    type: Literal["text_delta"] = "text_delta"
    agent: str
    turn: int
    text: str


class TurnStarted(Frame):
    type: Literal["turn_started"] = "turn_started"
    agent: str
    turn: int


class TurnFinished(Frame):
    type: Literal["turn_finished"] = "turn_finished"
    agent: str
    turn: int
    cost_usd: Decimal
    usage: Usage
    ok: bool = True
    held: bool = False
    """It stopped because the agent is held from now on (a ceiling met at a
    call's admission, the loop guard): what it was answering waits for the
    turn after the hold."""


class AgentUpdated(Frame):
    type: Literal["agent_updated"] = "agent_updated"
    agent: AgentState


class AgentRemoved(Frame):
    """An agent was deleted: its row goes; its records stay on the plane."""

    type: Literal["agent_removed"] = "agent_removed"
    agent: str


class AgentRenamed(Frame):
    """`old` is now `agent.name`: its row, conversation and spend go with it."""

    type: Literal["agent_renamed"] = "agent_renamed"
    old: str
    agent: AgentState


class FleetChanged(Frame):
    """The fleet's daily ceiling changed (`/limit fleet`): every client's
    fleet line says the new one."""

    type: Literal["fleet_changed"] = "fleet_changed"
    limit_usd: Decimal | None


class StoreChanged(Frame):
    """The plane's shared store went away (`unreachable_since` set) or came
    back (None): every client says so until it is back."""

    type: Literal["store_changed"] = "store_changed"
    unreachable_since: datetime | None


class DayRolled(Frame):
    """The plane's UTC day changed: every row's spend starts again."""

    type: Literal["day_rolled"] = "day_rolled"
    snapshot: Snapshot
    parts: int = Field(default=0, ge=0)
    """How many `agent_rows` frames follow with the rest of its rows (0: all here)."""
    paged: ClassVar[Paged] = Paged(("snapshot", "agents"), AgentRows)


Event = (
    MessageAppended
    | TextDelta
    | TurnStarted
    | TurnFinished
    | AgentUpdated
    | DayRolled
    | AgentRemoved
    | AgentRenamed
    | FleetChanged
    | StoreChanged
)
