"""Every frame that crosses the plane's socket.

The plane and its clients (the TUI, the `plane` CLI) speak newline-delimited
JSON over a Unix socket (mode 0600) or TCP; on both, `hello` carries the
plane's token. Every frame is one of
the pydantic models below, told apart by its `type`; no untyped dict crosses
the socket. With the rest of `plane.wire` (and `plane.home`), it is all of
`plane` that `tui` imports.

A conversation on the socket:

    client → hello (protocol_version, token) plane → welcome
    client → subscribe                       plane → snapshot, then events
    client → send / history / new_agent / …  plane → a reply with the same id

Replies carry the `id` of their request; events carry none. A frame the plane
cannot read gets an `error` reply (with the request's id when it could be
read) and changes nothing.

Each request states its reply: `class Send(Request[SendReply])`. The names
follow one rule. A request is named for its `type` (`new_agent` is
`NewAgent`); the reply to one request is that request's name and `Reply`
(`NewAgentReply`); a reply several requests share is named for what it
carries (`SnapshotReply` answers `status` and `subscribe`, `AgentReply` the
pause, rename and edit, `OkReply` what returns nothing). `Error` may answer
any request. The `type` strings on the wire stay as they were (`welcome`,
`sent`, `messages`, `agent_created`, …) where the classes were renamed:
they are the protocol, which clients of every version read and `plane
status` matches as plain JSON; a class name is only this module's.

Money is `Decimal`, which travels as a string: a dollar figure never passes
through a float.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal
from typing import (
    Annotated,
    Any,
    ClassVar,
    Generic,
    Literal,
    NamedTuple,
    TypeGuard,
    TypeVar,
    get_args,
    get_origin,
)

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic_core import from_json

from plane.wire.framing import MAX_FRAME_BYTES as MAX_FRAME_BYTES
from plane.wire.framing import MAX_ID as MAX_ID
from plane.wire.framing import PROTOCOL_VERSION as PROTOCOL_VERSION


class Frame(BaseModel):
    # Each frame's validator is built when first used, not at import: a
    # `plane status` process meets three kinds of frame, not all of them.
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


# ── shapes shared by frames ─────────────────────────────────────────────────


class Usage(Frame):
    """Tokens of one LLM call, normalised across providers.

    `input_tokens` counts every prompt token, cached or not (as OpenAI does);
    `cache_read_tokens` and `cache_write_tokens` are the parts of it that were
    read from or written to the provider's prompt cache; `cache_write_1h_tokens`
    is the part of the writes kept for an hour (Anthropic's 1-hour cache, priced
    above its 5-minute one).
    """

    input_tokens: int = Field(default=0, ge=0)
    cache_read_tokens: int = Field(default=0, ge=0)
    cache_write_tokens: int = Field(default=0, ge=0)
    cache_write_1h_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            cache_write_1h_tokens=self.cache_write_1h_tokens + other.cache_write_1h_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
        )


ToolSet = Literal["none", "read-only", "all"]
"""The tools a new agent gets: none; read-only (list, read, grep, retrieve
what compression removed, its own budget); or all of them."""

READ_ONLY_TOOLS: tuple[str, ...] = ("read_file", "list_files", "grep", "retrieve", "budget_status")
"""The `read-only` set: tools that look and change nothing (no command, no
write, no patch, no booking, no spend on another agent). Here, beside its
word, so a client shows an agent with these tools as `read-only`."""

AgentStatus = Literal["idle", "working", "held", "paused"]
"""idle: waiting for work; working: a turn is in flight; held: at or over its
ceiling (or on an unpriced model under a ceiling), taking no new turn;
paused: the operator paused it (its ceiling kept): no new turn until resumed."""


SpendLevel = Literal["ok", "warn", "over"]
"""How today's spend stands against the ceiling: `over` at or past it (a
ceiling of zero is a pause, so always over), `warn` from `warn_ratio` of it,
else `ok` (and always `ok` with no ceiling)."""


class AgentState(Frame):
    """One agent as a row shows it."""

    name: str
    model: str
    provider: str
    role: str = ""
    status: AgentStatus = "idle"
    spend_today_usd: Decimal = Decimal(0)
    limit_usd: Decimal | None = None
    """The effective daily ceiling; None is no ceiling."""
    warn_ratio: float = 0.8
    spend_level: SpendLevel = "ok"
    """Decided by the plane, once (`plane.money.limits.spend_level`): clients colour
    by it and never compare the figures themselves."""
    price_known: bool = True
    waiting: int = 0
    """Messages stored while held, not yet answered."""
    resumes_at: datetime | None = None
    """When a held agent starts again on its own: the plane's next 00:00 UTC,
    which clears the day's spend. None when it is not held, and when the day
    turning would not free it (a ceiling of zero, a model with no price):
    those wait for the operator."""
    paused: bool = False
    """The operator paused it: it starts no turn (one in flight finishes) and
    keeps what it receives. Its ceiling is untouched: a pause is not /limit 0."""
    tools: tuple[str, ...] | None = None
    """The tools it may use, by name; None is every tool. (A tuple: a row's
    state is hashable, for the list's cache of drawn lines.)"""
    plane: str | None = None
    """The plane that runs the agent's turns, when several share one store
    (None: a plane alone, or no plane holds its lease now)."""
    gateway: bool = False
    """A gateway agent: its own client makes its calls, with the client's
    model, tools and prompt (no turns, workspace, sessions or bookings here)."""
    from_file: bool = False
    """Made by agents.yaml: the file's to rename or delete, not the operator's
    keys (a client says so when the key is pressed, not after a form)."""
    burn_usd_per_hour: Decimal | None = None
    """Its pace: spend per hour over its recent settled calls, an exponentially
    weighted rate (`plane.money.burn`); None when it has spent nothing lately."""
    reaches_ceiling_at: datetime | None = None
    """When it reaches its ceiling at that pace (to the minute), said only when
    that is before the day resets: an agent on course to be held today."""
    hold_reason: str | None = None
    """Why it is held, while `status` is `held`: `ceiling`, `loop` (the loop
    guard's: the operator's resume lets it go on), `unpriced`, `fleet`,
    `group`, … (a client may word it; the conversation says it whole)."""
    stepped_down_from: str | None = None
    """Its own model, while it runs on its cheaper fallback near its ceiling
    (`model` is then the fallback's); None otherwise."""

    @functools.cached_property
    def line(self) -> bytes:
        """The row as it travels in a list (`plane.wire.pages`): encoded once
        for as long as the row is unchanged (the plane keeps a row's state
        until it changes), its defaults left out, which a reader fills in."""
        return self.model_dump_json(exclude_defaults=True).encode()


MessageKind = Literal["operator", "agent", "plane", "ask", "cost", "tool"]
"""operator: typed by a person; agent: the model's answer; plane: the plane's
own notices and replies (/limit, held, warnings, failures); ask: an agent's
request for its own ceiling (shown as ‹ask›); cost: a turn's cost line;
tool: a tool call the agent made, with a short result."""


class ConversationMessage(Frame):
    id: int
    agent: str
    at: datetime
    kind: MessageKind
    text: str
    held: bool = False
    """It arrived while the agent was held; it is answered when the hold ends."""
    cost_usd: Decimal | None = None
    """For `cost` lines: what the turn cost."""
    usage: Usage | None = None
    """For `cost` lines: the turn's tokens."""


class CommandInfo(Frame):
    """One slash command the plane handles, as `/help` and autocomplete show it."""

    name: str = Field(min_length=1)
    """Without the slash: `limit`."""
    usage: str
    help: str


class GroupState(Frame):
    """A group of agents (`groups:` in agents.yaml), as `plane status` shows
    it (the TUI's spend screen stacks the day by group when there are any)."""

    name: str
    spend_today_usd: Decimal = Decimal(0)
    """Its agents' spend today together, calls in flight at their estimates."""
    limit_usd: Decimal | None = None
    """Its daily ceiling (the file's, or `/limit group`); None is none."""
    agents: list[str] = Field(default_factory=list)


class Snapshot(Frame):
    """Everything a client needs to draw the screen, as of `now`."""

    day: date
    now: datetime
    resets_at: datetime
    agents: list[AgentState]
    models: list[str]
    """Models an agent can be created on (those configured)."""
    default_model: str | None = Field(default=None, min_length=1)
    """The model a new agent is put on unless told otherwise (defaults.model).
    A plane always says; None is an older plane that did not."""
    default_limit_usd: Decimal | None = Field(default=None, ge=0, allow_inf_nan=False)
    """The daily ceiling a new agent starts with (defaults.limitUsd); None is
    none. Meaningful only when `default_model` is set."""
    commands: list[CommandInfo] = Field(default_factory=list)
    """The plane's slash commands: the one registry, which clients list and
    complete but never reinterpret."""
    tool_defaults: dict[str, ToolSet] = Field(default_factory=dict)
    """For each model in `models`, the tools a new agent on it gets unless
    told otherwise (none on the embedded model: it flails with tools, at
    12–20× a plain turn's cost). Empty from an older plane."""
    spend_today_usd: Decimal | None = None
    """The whole plane's spend today, deleted agents' included (deleting never
    refunds): the fleet's total, which the rows alone may not add up to."""
    fleet_spend_today_usd: Decimal | None = None
    """Every agent's spend today together, on every plane of the store."""
    fleet_limit_usd: Decimal | None = None
    """The fleet's daily ceiling (`fleet: {limitUsd}`, `/limit fleet`); None is none."""
    groups: list[GroupState] = Field(default_factory=list)
    """The groups of agents, with their spend today and ceiling (none: no groups)."""
    store_unreachable_since: datetime | None = None
    """Since when the plane's shared store (PostgreSQL) cannot be reached;
    None: it can (and always, on the SQLite file). While it is set, the
    spend shown is as last read and sends are refused."""
    config_file: str | None = None
    """The agents.yaml the plane read (absolute); None: it runs on the
    built-in defaults."""
    config_looked: list[str] = Field(default_factory=list)
    """Where an agents.yaml was looked for and not found, when it runs on
    the built-in defaults (the directory it was started in first)."""


LedgerStatus = Literal["pending", "settled", "interrupted", "failed"]


class LedgerEntry(Frame):
    """One LLM call as the ledger recorded it."""

    id: int
    agent: str
    day: date
    at: datetime
    provider: str
    model: str
    usage: Usage
    cost_usd: Decimal
    price_source: str
    status: LedgerStatus
    estimated: bool = False
    """The cost is an estimate (no usage came back, or the plane died mid-call)."""


# ── parts: the rest of a list too long for one frame ────────────────────────


class AgentRows(Frame):
    """More of a snapshot's rows (a `snapshot` reply's or a `day_rolled` event's)."""

    type: Literal["agent_rows"] = "agent_rows"
    id: int | None = None
    """The reply's id; None: the rows of the event just before."""
    rows: list[AgentState]


class LedgerRows(Frame):
    """More of a `ledger` reply's entries."""

    type: Literal["ledger_rows"] = "ledger_rows"
    id: int | None = None
    rows: list[LedgerEntry]


class MessageRows(Frame):
    """More of a `messages` reply's messages."""

    type: Literal["message_rows"] = "message_rows"
    id: int | None = None
    rows: list[ConversationMessage]


class SpendRows(Frame):
    """More of a `spend_history` reply's spenders (`top`)."""

    type: Literal["spend_rows"] = "spend_rows"
    id: int | None = None
    rows: list[SpendPoint]


Part = AgentRows | LedgerRows | MessageRows | SpendRows
"""A part of a frame too long for one: what follows a head whose `parts` is
more than 0, that many, in order, carrying its id (`plane.wire.pages`)."""


class Paged(NamedTuple):
    """Where a frame's list is that may be sent in parts, and their frame."""

    path: tuple[str, ...]
    """The fields down to the list: `("snapshot", "agents")`."""
    part: type[AgentRows | LedgerRows | MessageRows | SpendRows]


# ── replies: plane → client, carrying the request's id ──────────────────────
# (Before the requests: each request names its reply.)


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


class SpendPoint(Frame):
    """One bar: an hour (`14`), a day (`2026-11-29`) or an agent."""

    label: str
    spent_usd: Decimal
    saved_usd: Decimal = Decimal(0)
    """What compression kept out of the model's input, priced as its input."""
    unpriced_calls: int = 0
    """Calls of a model no price is known for: their $0 is not their cost."""


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
    """Today's spenders, the most first (agents that spent nothing left out)."""
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


# ── requests: client → plane ────────────────────────────────────────────────

R = TypeVar("R", bound=Frame)


class Request(Frame, Generic[R]):
    """A frame a client sends, answered by an `R` (or by an `Error`, which may
    answer any request): `class Send(Request[SendReply])` is the pair, stated
    once. `reply` is `R` at run time; the socket client checks what came back
    against it (`PlaneClient.request`), and the plane's table of handlers
    (`plane.daemon.api`) is held to it by a test."""

    reply: ClassVar[type[Frame]]
    """The frame that answers this request."""
    changes: ClassVar[bool] = True
    """Whether answering it may change something (False: it only reads);
    a request the store being away stopped says that nothing did."""

    type: str
    id: int = 0
    """The client's number for the request, which its reply carries back:
    `PlaneClient.request` gives each request its own. Built in Python it may
    be left out; read from the socket it must be there (`decode_request`)."""

    def __class_getitem__(cls, reply: Any) -> Any:
        # typing's alias, not pydantic's parametrized model: the pair needs
        # stating, not a model class of its own, and pydantic's would build
        # this base's validator at import (~20 ms of every CLI command's start).
        return super(BaseModel, cls).__class_getitem__(reply)  # type: ignore[misc]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for base in cls.__dict__.get("__orig_bases__", ()):  # `Request[SendReply]`
            if get_origin(base) is Request:
                (cls.reply,) = get_args(base)

    def answered_by(self, frame: Frame) -> TypeGuard[R]:
        """`frame` is this request's reply (an `Error` is not: it is no answer)."""
        return isinstance(frame, self.reply)


class Hello(Request[HelloReply]):
    type: Literal["hello"] = "hello"
    changes: ClassVar[bool] = False
    protocol_version: int
    client: str = ""
    token: str | None = None
    """The plane's token (the file `token` in its home), on the Unix socket as
    on TCP: it is what tells the operator's clients from anything else that
    can reach the socket, an agent's commands included. Clients read it from
    the socket's directory; a missing or wrong one is `unauthorized`."""


class Subscribe(Request[SnapshotReply]):
    type: Literal["subscribe"] = "subscribe"
    changes: ClassVar[bool] = False


class Status(Request[SnapshotReply]):
    type: Literal["status"] = "status"
    changes: ClassVar[bool] = False


class Send(Request[SendReply]):
    """Post text to an agent's conversation as the operator."""

    type: Literal["send"] = "send"
    agent: str
    text: str = Field(min_length=1, max_length=200_000)


class History(Request[HistoryReply]):
    """Up to `limit` of an agent's messages, oldest first: the newest ones, or,
    with `before_id`, the ones just before that message (the previous page)."""

    type: Literal["history"] = "history"
    changes: ClassVar[bool] = False
    agent: str
    limit: int = Field(default=200, ge=1, le=10_000)
    before_id: int | None = Field(default=None, ge=1, le=MAX_ID)
    """Only messages with a smaller id: pass the oldest id you hold to page back.
    Fewer than `limit` back means the conversation's first message is among them."""


class NewAgent(Request[NewAgentReply]):
    type: Literal["new_agent"] = "new_agent"
    name: str
    model: str
    role: str = ""
    tools: ToolSet | None = None
    """None: the set that suits the model (`Snapshot.tool_defaults`)."""


class Ledger(Request[LedgerReply]):
    type: Literal["ledger"] = "ledger"
    changes: ClassVar[bool] = False
    day: date | None = None
    """None is the plane's today."""


class Stop(Request[OkReply]):
    type: Literal["stop"] = "stop"


class SpendHistory(Request[SpendHistoryReply]):
    """Spend over time, for the charts: `agent`'s day by hour and last 30
    days (None: the whole fleet's), and the day's top spenders."""

    type: Literal["spend_history"] = "spend_history"
    changes: ClassVar[bool] = False
    agent: str | None = None


class SpendStack(Request[SpendStackReply]):
    """The whole fleet's last 30 days stacked `by` agent, model or group: the `top`
    that spent the most apart, the rest summed as one. A request of its own
    (not a field of `spend_history`): a client that never asks for it never
    meets a reply shape it does not know."""

    type: Literal["spend_stack"] = "spend_stack"
    changes: ClassVar[bool] = False
    by: StackBy = "agent"
    top: int = Field(default=5, ge=1, le=20)


class DeleteAgent(Request[OkReply]):
    """Delete an agent made at run time. Its conversation and ledger rows are
    kept and its spend still counts for the day: deleting never refunds, and a
    new agent given the same name starts with that spend, not with $0."""

    type: Literal["delete_agent"] = "delete_agent"
    agent: str


class PauseAgent(Request[AgentReply]):
    """Pause (`paused` true) or resume an agent. Its ceiling is kept. Resuming
    an agent the loop guard held lets it go on (a gateway agent's too)."""

    type: Literal["pause_agent"] = "pause_agent"
    agent: str
    paused: bool = True


class RenameAgent(Request[AgentReply]):
    type: Literal["rename_agent"] = "rename_agent"
    agent: str
    new_name: str


class EditAgent(Request[AgentReply]):
    """Change what is given; a field left None is left as it is. All of it
    is checked before anything changes: one bad value changes nothing."""

    type: Literal["edit_agent"] = "edit_agent"
    agent: str
    role: str | None = Field(default=None, max_length=100_000)
    model: str | None = None
    tools: list[str] | None = Field(default=None, max_length=64)
    """Tool names; `["all"]` is every tool, `[]` none."""
    limit: str | None = Field(default=None, max_length=64)
    """As `/limit` takes it: `5`, `$0.25`, `off`."""


class Interrupt(Request[OkReply]):
    """Cut the agent's running turn: the call in flight is counted at its
    estimate, and the conversation says what the turn cost."""

    type: Literal["interrupt"] = "interrupt"
    agent: str


class ShowAgent(Request[ShowAgentReply]):
    type: Literal["show_agent"] = "show_agent"
    changes: ClassVar[bool] = False
    agent: str


AnyRequest = Annotated[
    Hello
    | Subscribe
    | Status
    | Send
    | History
    | NewAgent
    | Ledger
    | Stop
    | DeleteAgent
    | PauseAgent
    | RenameAgent
    | EditAgent
    | Interrupt
    | ShowAgent
    | SpendHistory
    | SpendStack,
    Field(discriminator="type"),
]
"""Any request, told apart by its `type`: what the plane reads from a client."""


# ── events: plane → subscribed clients ──────────────────────────────────────


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
ServerFrame = Annotated[Reply | Event | Part, Field(discriminator="type")]

_SERVER_FRAMES: dict[str, type[Frame]] = {
    kind.model_fields["type"].default: kind
    for kind in (*get_args(Reply), *get_args(Event), *get_args(Part))
}

_REQUEST_TYPES = frozenset(
    kind.model_fields["type"].default for kind in get_args(get_args(AnyRequest)[0])
)

T = TypeVar("T")


@functools.cache
def _requests() -> TypeAdapter[AnyRequest]:
    return TypeAdapter(AnyRequest)


@functools.cache
def _server_frames() -> TypeAdapter[ServerFrame]:
    return TypeAdapter(ServerFrame)


class BadFrame(ValueError):
    """A line that is not a valid frame. `id` is the request's id when the
    line was JSON with an integer id, so the error reply can name it."""

    def __init__(self, code: ErrorCode, message: str, id: int | None = None) -> None:
        super().__init__(message)
        self.code: ErrorCode = code
        self.id = id


class UnknownFrame(BadFrame):
    """A frame whose `type` this side does not know: a newer peer's. A client
    skips it (and logs it) rather than giving up on the connection."""

    def __init__(self, kind: str) -> None:
        super().__init__("bad_frame", f"A frame of a type this client does not know: {kind!r}.")
        self.kind = kind


def encode(frame: Frame) -> bytes:
    return frame.model_dump_json().encode() + b"\n"


def decode_request(line: bytes) -> AnyRequest:
    """The request on `line`, its `id` required: a client's frame without one
    is refused, as it always was (the default is for frames built in Python,
    which the client numbers as it sends them)."""
    try:
        request = _decode(_requests().validate_json, line)
    except BadFrame as exc:
        # Said first, as when `id` had no default: the fields are checked in order.
        kind = _missing_id(line) if exc.code == "bad_frame" else None
        if kind is not None:
            raise _without_id(kind) from None
        raise
    if "id" not in request.model_fields_set:
        raise _without_id(request.type)
    return request


def decode_server_frame(line: bytes) -> ServerFrame:
    """A reply or an event; `UnknownFrame` for one of a type not in this
    protocol (a newer plane's event), `BadFrame` for anything else unreadable.

    The frame is read by the validator of its own type, so a client builds
    the validators of the frames it meets, not of every frame there is."""
    _refuse_too_large(line)
    kind = _type_of(line)
    if kind is None:  # not an object with a type: the union says what is wrong
        return _decode(_server_frames().validate_json, line)
    frame = _SERVER_FRAMES.get(kind)
    if frame is None:
        raise UnknownFrame(kind)
    return _decode(frame.model_validate_json, line)  # type: ignore[return-value]


def _decode(validate: Callable[[bytes], T], line: bytes) -> T:
    _refuse_too_large(line)
    try:
        return validate(line)
    except ValidationError as exc:
        raise BadFrame("bad_frame", _describe(exc), _id_of(line)) from None


def _refuse_too_large(line: bytes) -> None:
    if len(line) > MAX_FRAME_BYTES:
        raise BadFrame("too_large", f"Frame of {len(line)} bytes is over the 1 MiB limit.")


def _describe(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    return f"Bad frame: {where + ': ' if where else ''}{first['msg']}."


def _without_id(kind: str) -> BadFrame:
    return BadFrame("bad_frame", f"Bad frame: {kind}.id: Field required.")


def _missing_id(line: bytes) -> str | None:
    """The request's type, when `line` is a request of a known type without an id."""
    try:
        value = from_json(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or "id" in value or value.get("type") not in _REQUEST_TYPES:
        return None
    return str(value["type"])


def _id_of(line: bytes) -> int | None:
    ident = _field(line, "id")
    return ident if isinstance(ident, int) and not isinstance(ident, bool) else None


def _type_of(line: bytes) -> str | None:
    kind = _field(line, "type")
    return kind if isinstance(kind, str) else None


def _field(line: bytes, name: str) -> object:
    try:
        # pydantic's parser has a depth limit and says so with a ValueError;
        # json.loads raises RecursionError on a frame nested ~1,000 deep.
        value = from_json(line)
    except (ValueError, RecursionError):
        return None
    return value.get(name) if isinstance(value, dict) else None
