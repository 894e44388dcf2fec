"""The replies: plane → client, each carrying the `id` of its request.

Each request (`requests`) names one of these as its own: `class
Send(Request[SendReply])`. `Error` may answer any request. `Reply` is their
union, which a client reads (`codec.decode_server_frame`). A reply whose
list may be long says so with `paged`: where the list is and the frame its
rest comes in (`plane.wire.pages`).
"""

from __future__ import annotations

from datetime import date
from typing import ClassVar, Literal

from pydantic import Field

from plane.wire.framing import PROTOCOL_VERSION
from plane.wire.protocol.state import (
    AgentRows,
    AgentState,
    ConversationMessage,
    Frame,
    LedgerEntry,
    LedgerRows,
    MessageRows,
    Paged,
    Snapshot,
    SpendPoint,
    SpendRows,
)


class HelloReply(Frame):
    type: Literal["welcome"] = "welcome"
    id: int
    protocol_version: int = PROTOCOL_VERSION
    plane_version: str


class SnapshotReply(Frame):
    type: Literal["snapshot"] = "snapshot"
    id: int
    snapshot: Snapshot
    parts: int = Field(default=0, ge=0)
    """How many `agent_rows` frames follow with the rest of its rows (0: all here)."""
    paged: ClassVar[Paged] = Paged(("snapshot", "agents"), AgentRows)


class SendReply(Frame):
    """The operator's message as stored, and what the plane answered at once
    (a /limit reply, a held notice). The agent's answer comes later as events."""

    type: Literal["sent"] = "sent"
    id: int
    messages: list[ConversationMessage]
    refused: bool = False
    """The plane's reply says why it does nothing with this: a slash command
    refused (unknown, or a bad argument: nothing changed), or a message to a
    gateway agent (kept, but only its own client's calls are answered)."""
    elsewhere: bool = False
    """Another plane of the fleet runs the agent: its turn reaches this
    plane's clients as its lines and its row, at this plane's renewals, with
    no `TurnStarted` or `TurnFinished`; the turn is over once the row has
    nothing waiting."""


class HistoryReply(Frame):
    type: Literal["messages"] = "messages"
    id: int
    agent: str
    messages: list[ConversationMessage]
    parts: int = Field(default=0, ge=0)
    """How many `message_rows` frames follow with the rest of its messages (0: all here)."""
    paged: ClassVar[Paged] = Paged(("messages",), MessageRows)


class NewAgentReply(Frame):
    type: Literal["agent_created"] = "agent_created"
    id: int
    agent: AgentState


class LedgerReply(Frame):
    type: Literal["ledger"] = "ledger"
    id: int
    day: date
    entries: list[LedgerEntry]
    parts: int = Field(default=0, ge=0)
    """How many `ledger_rows` frames follow with the rest of its entries (0: all here)."""
    paged: ClassVar[Paged] = Paged(("entries",), LedgerRows)


class SpendHistoryReply(Frame):
    type: Literal["spend_history"] = "spend_history"
    id: int
    day: date
    agent: str | None
    hours: list[SpendPoint]
    """The plane's day, 24 UTC hours, `00` first."""
    days: list[SpendPoint]
    """The last 30 days, the oldest first, today last."""
    top: list[SpendPoint]
    """Today's spenders, the most first (agents that spent nothing left out;
    one whose calls are all unpriced is in, at $0 with its `unpriced_calls`)."""
    models: list[SpendPoint] = Field(default_factory=list)
    """Today's spend by model, of the agent (or the fleet), the most first."""
    tools: list[SpendPoint] = Field(default_factory=list)
    """Today's spend by what it is attributed to (cost by tool: each tool's
    results in the input, `(prompt)`, `(messages)`, `(answers)`,
    `(unattributed)`), of the agent (or the fleet), the most first."""
    parts: int = Field(default=0, ge=0)
    """How many `spend_rows` frames follow with the rest of `top` (0: all here)."""
    paged: ClassVar[Paged] = Paged(("top",), SpendRows)


class SpendSeries(Frame):
    """One layer of a stacked chart: an agent or a model, a point a day."""

    label: str
    days: list[SpendPoint]
    """As `SpendHistoryReply.days`: the last 30 days, the oldest first, today last."""
    folded: int = 0
    """0 for one agent or model; else this is the rest, that many summed."""


StackBy = Literal["agent", "model", "group"]
"""What the fleet's days are stacked by: each agent, each model, each group
of agents (agents in none as one layer)."""


class SpendStackReply(Frame):
    type: Literal["spend_stack"] = "spend_stack"
    id: int
    day: date
    by: StackBy
    series: list[SpendSeries]
    """The most spent over the days first; the rest (`folded`) last. Only
    those that spent or saved something in the days."""


class OkReply(Frame):
    type: Literal["ok"] = "ok"
    id: int


class AgentReply(Frame):
    """The agent as it is after a pause, resume, rename or edit."""

    type: Literal["agent_changed"] = "agent_changed"
    id: int
    agent: AgentState


CeilingSource = Literal["agents.yaml", "defaults", "/limit", "its own ask", "the alert", "none"]


class ShowAgentReply(Frame):
    """What `plane show AGENT` prints."""

    type: Literal["agent_details"] = "agent_details"
    id: int
    agent: AgentState
    ceiling_from: CeilingSource
    """Where the ceiling comes from: the agent's block in agents.yaml, the
    file's defaults, the operator's /limit (or edit), the agent's ask, or a
    raise from an alert's link (until 00:00 UTC)."""
    made: Literal["agents.yaml", "run time"]
    workspace: str
    bookings: list[str]
    """Open bookings, as `due (UTC): note`."""
    sessions: int
    """Model sessions saved by /new or auto-compact (.transcripts/)."""
    session_messages: int
    """Messages in the model's current session."""
    group: str | None = None
    """The group the agent is in (`groups:` in agents.yaml; None: none)."""


ErrorCode = Literal[
    "bad_frame",
    "too_large",
    "version",
    "unauthorized",
    "no_such_agent",
    "invalid",
    "exists",
    "internal",
]


class Error(Frame):
    type: Literal["error"] = "error"
    id: int | None = None
    code: ErrorCode
    message: str
    """One sentence a person can act on."""


Reply = (
    HelloReply
    | SnapshotReply
    | SendReply
    | HistoryReply
    | NewAgentReply
    | LedgerReply
    | OkReply
    | Error
    | AgentReply
    | ShowAgentReply
    | SpendHistoryReply
    | SpendStackReply
)
"""Every reply a request may get: each request's own, and `Error`."""
