"""What the plane's state looks like on the wire: the base every frame is
built on, the shapes frames carry (a row's `AgentState`, a
`ConversationMessage`, the `Snapshot` a screen is drawn from, a
`LedgerEntry`, a chart's `SpendPoint`), and the row pages a list too long
for one frame follows its head in (`Part`, read by `plane.wire.pages`).

The shapes have no `type`: they travel inside a reply or an event
(`replies`, `events`), never alone. The pages do, as frames of their own.
"""

from __future__ import annotations

import functools
from datetime import date, datetime
from decimal import Decimal
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field


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
    above its 5-minute one). `input_audio_tokens` and `output_audio_tokens`
    are the parts of the input and the output that were audio (OpenAI's
    audio models, which bill them at rates of their own).
    """

    input_tokens: int = Field(default=0, ge=0)
    cache_read_tokens: int = Field(default=0, ge=0)
    cache_write_tokens: int = Field(default=0, ge=0)
    cache_write_1h_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    input_audio_tokens: int = Field(default=0, ge=0)
    output_audio_tokens: int = Field(default=0, ge=0)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            cache_write_1h_tokens=self.cache_write_1h_tokens + other.cache_write_1h_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            input_audio_tokens=self.input_audio_tokens + other.input_audio_tokens,
            output_audio_tokens=self.output_audio_tokens + other.output_audio_tokens,
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
    floor_priced: bool = False
    """Its spend today holds a call priced at a floor (a gateway call the
    upstream answered with a model that has no known price, charged as the
    one asked for): it spent at least that, the rest unpriced."""
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
    `group`, `unreadable` (a row of its spend today is not an amount), …
    (a client may word it; the conversation says it whole)."""
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
    failed: bool = False
    """For `cost` lines: the turn it closes failed (its answer broke off, or
    a call failed after one it paid for), as its `TurnFinished` says to the
    plane that ran it; another plane of a fleet reads only the lines."""


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
    """What its agents' closed calls spent today together: what its ceiling
    weighs to hold them (calls in flight apart, `in_flight_usd`)."""
    limit_usd: Decimal | None = None
    """Its daily ceiling (the file's, or `/limit group`); None is none."""
    agents: list[str] = Field(default_factory=list)
    in_flight_usd: Decimal = Decimal(0)
    """Its calls in flight today at their estimates (the most they may
    cost), not yet spent; 0 from an older plane, which counted them in
    `spend_today_usd`."""


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


class SpendPoint(Frame):
    """One bar: an hour (`14`), a day (`2026-11-29`) or an agent."""

    label: str
    spent_usd: Decimal
    saved_usd: Decimal = Decimal(0)
    """What compression kept out of the model's input, priced as its input."""
    unpriced_calls: int = 0
    """Calls whose cost is not all known: of a model no price is known for
    (their $0 is not their cost), or priced at a floor (in `spent_usd` at
    that floor, the rest not known)."""


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
