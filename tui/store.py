"""What the plane last said, in one place.

The store holds the live state (every agent's row, the day, the models, the
conversations seen so far) and tells subscribers what changed through
Textual signals. It decides nothing: `load()` takes a snapshot whole, and
`apply()` folds one event into it. Rows subscribe to `agent_changed`; the
main screen to the rest.

Time: the plane's `now` arrives with each snapshot. The countdown to the
reset (or to a held agent resuming) is that `now` plus local *monotonic*
time elapsed since, so a wrong local clock or a local time zone never moves
the plane's day.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from textual.dom import DOMNode
from textual.signal import Signal

from plane.wire.protocol import (
    AgentRemoved,
    AgentRenamed,
    AgentState,
    AgentUpdated,
    ConversationMessage,
    DayRolled,
    Event,
    FleetChanged,
    GroupState,
    MessageAppended,
    Snapshot,
    StoreChanged,
    TextDelta,
    ToolSet,
    TurnFinished,
    TurnStarted,
)
from plane.wire.words import config_said
from tui.fleet import Tally


@dataclass
class Conversation:
    """One agent's messages as far as this client has seen them, by id."""

    agent: str
    messages: dict[int, ConversationMessage] = field(default_factory=dict)
    streaming: str = ""
    """Text of the answer being streamed, until the whole message arrives."""
    loaded: bool = False
    """History has been fetched at least once since connecting."""
    from_start: bool = False
    """The agent's first message is among these: there is nothing earlier to fetch."""

    def add(self, messages: Iterable[ConversationMessage]) -> list[ConversationMessage]:
        """Adds what is new; returns it, in id order."""
        fresh = [m for m in messages if m.id not in self.messages]
        for message in fresh:
            self.messages[message.id] = message
        if fresh and max(m.id for m in fresh) < max(self.messages):
            self.messages = dict(sorted(self.messages.items()))
        return sorted(fresh, key=lambda m: m.id)

    def newest(
        self, messages: list[ConversationMessage], *, whole: bool
    ) -> list[ConversationMessage]:
        """Fold in the plane's newest page (`whole`: it is all there is).

        What is held stays one unbroken stretch of the conversation, so paging
        back from its oldest message never skips any: a full page that starts
        after everything held (the plane went on talking while this client was
        away) may have a gap before it, so it replaces what was held."""
        if not whole and self.messages and messages and messages[0].id > max(self.messages):
            self.messages = {}
            self.from_start = False
        self.from_start = self.from_start or whole
        return self.add(messages)

    def earlier(
        self, messages: list[ConversationMessage], *, reached_start: bool
    ) -> list[ConversationMessage]:
        """Fold in a page from before the oldest message held."""
        self.from_start = self.from_start or reached_start
        return self.add(messages)

    @property
    def earlier_on_plane(self) -> bool:
        """The plane may hold older messages than these: a full page came
        back and the first message has not."""
        return self.loaded and not self.from_start

    def ordered(self) -> list[ConversationMessage]:
        return list(self.messages.values())


@dataclass
class Activity:
    """What a running turn has shown so far, from the events the plane sends
    (`turn_started`, `text_delta`, a `tool` message, `turn_finished`)."""

    started: float | None
    """When the turn began, on this client's monotonic clock; None when it was
    already running as this client connected (its start was not seen)."""
    tool: str | None = None
    """The last tool the turn called (the plane says so once it returns)."""
    writing: bool = False
    """Answer text is streaming in."""


def tool_name(text: str) -> str:
    """`grep` from a tool line, `grep → 3 matches` or `shell (refused) → …`."""
    return text.split(" → ", 1)[0].split(" (", 1)[0].strip()


@dataclass(frozen=True)
class Streaming:
    agent: str
    text: str
    """Everything streamed so far in this turn; empty when the stream ended."""


class Store:
    """The plane's state as last told, with signals for each kind of change."""

    def __init__(self, owner: DOMNode, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.agents: dict[str, AgentState] = {}
        self.tally = Tally()
        """The fleet line's counts, kept as `agents` changes."""
        self.models: list[str] = []
        self.default_model: str | None = None
        """The model a new agent is put on; None until a plane says."""
        self.default_limit_usd: Decimal | None = None
        """The daily ceiling a new agent starts with (None: none)."""
        self.tool_defaults: dict[str, ToolSet] = {}
        """For each model, the tools a new agent on it gets unless told otherwise."""
        self.day: date | None = None
        self.fleet_limit_usd: Decimal | None = None
        """The fleet's daily ceiling, across every plane of the store (None: none)."""
        self.groups: list[GroupState] = []
        """The groups of agents (agents.yaml's `groups:`), as the snapshot said."""
        self.store_unreachable_since: datetime | None = None
        """Since when the plane's shared store is away (None: it is there)."""
        self.config = ""
        """Which agents.yaml the plane read, or where it looked (`config: …`)."""
        self.config_not_found = False
        """The plane looked for an agents.yaml and found none: it runs on the
        built-in defaults, without the file's agents, prices and ceilings."""
        self.unlisted_spend_usd = Decimal(0)
        """Today's spend that no row shows (agents deleted today), so the fleet
        line says the figure the fleet's ceiling is held to, not less."""
        self._plane_now: datetime | None = None
        self._told_at = 0.0
        self.resets_at: datetime | None = None
        self.conversations: dict[str, Conversation] = {}
        self.activity: dict[str, Activity] = {}
        """The turns running now, by agent."""

        self.roster_changed: Signal[list[str]] = Signal(owner, "roster_changed")
        """The set or order of agents changed, or everything was reloaded."""
        self.agent_changed: Signal[AgentState] = Signal(owner, "agent_changed")
        """One agent's row changed (spend, status, ceiling)."""
        self.message_added: Signal[ConversationMessage] = Signal(owner, "message_added")
        self.streaming: Signal[Streaming] = Signal(owner, "streaming")
        self.activity_changed: Signal[str] = Signal(owner, "activity_changed")
        """A turn began, called a tool, began to write, or ended (the agent's name)."""
        self.agent_removed: Signal[str] = Signal(owner, "agent_removed")
        """An agent was deleted (its name); told before the roster changes."""
        self.agent_renamed: Signal[AgentRenamed] = Signal(owner, "agent_renamed")
        """An agent was renamed; told before the roster changes."""
        self.agents_missing: Signal[list[str]] = Signal(owner, "agents_missing")
        """Agents a new snapshot no longer lists (deleted or renamed while the
        link was down: which, it does not say); told before the roster changes."""

    # ── reading ────────────────────────────────────────────────────────────

    @property
    def names(self) -> list[str]:
        return list(self.agents)

    def group_of(self, agent: str) -> str | None:
        """The group `agent` is in (one agent is in one group); None: none."""
        return next((g.name for g in self.groups if agent in g.agents), None)

    def plane_now(self) -> datetime | None:
        if self._plane_now is None:
            return None
        return self._plane_now + timedelta(seconds=self.clock() - self._told_at)

    def resets_in(self) -> timedelta | None:
        return self.time_until(self.resets_at)

    def time_until(self, moment: datetime | None) -> timedelta | None:
        """From the plane's now to `moment` (never negative)."""
        now = self.plane_now()
        if now is None or moment is None:
            return None
        return max(timedelta(0), moment - now)

    def activity_text(self, agent: str) -> str:
        """`poet is thinking · 12 s · called grep`, or "" when no turn runs."""
        activity = self.activity.get(agent)
        if activity is None:
            return ""
        doing = "writing" if activity.writing else "thinking"
        parts = [f"{agent} is {doing}" if activity.started is not None else f"{agent} is working"]
        if activity.started is not None:
            seconds = int(self.clock() - activity.started)
            parts.append(
                f"{seconds} s" if seconds < 60 else f"{seconds // 60} min {seconds % 60} s"
            )
        if activity.tool:
            parts.append(f"called {activity.tool}")
        return " · ".join(parts)

    def conversation(self, agent: str) -> Conversation:
        return self.conversations.setdefault(agent, Conversation(agent))

    # ── writing ────────────────────────────────────────────────────────────

    def load(self, snapshot: Snapshot) -> None:
        """Replace everything with a snapshot (connect, reconnect, new day)."""
        before, self.agents = self.agents, {agent.name: agent for agent in snapshot.agents}
        missing = [name for name in before if name not in self.agents]
        self.tally.reset(snapshot.agents)
        self.models = list(snapshot.models)
        self.default_model = snapshot.default_model
        self.default_limit_usd = snapshot.default_limit_usd
        self.tool_defaults = dict(snapshot.tool_defaults)
        self.day = snapshot.day
        self.fleet_limit_usd = snapshot.fleet_limit_usd
        self.groups = list(snapshot.groups)
        self.store_unreachable_since = snapshot.store_unreachable_since
        self.config = config_said(snapshot.config_file, snapshot.config_looked)
        self.config_not_found = snapshot.config_file is None and bool(snapshot.config_looked)
        listed = sum((a.spend_today_usd for a in snapshot.agents), Decimal(0))
        whole = snapshot.fleet_spend_today_usd
        if whole is None:  # an older plane: the rows are all it says
            whole = listed
        self.unlisted_spend_usd = max(Decimal(0), whole - listed)
        self._plane_now = snapshot.now
        self._told_at = self.clock()
        self.resets_at = snapshot.resets_at
        for conversation in self.conversations.values():
            conversation.loaded = False
            conversation.streaming = ""
        running = {a.name for a in snapshot.agents if a.status == "working"}
        self.activity = {
            name: self.activity.get(name) or Activity(started=None) for name in running
        }
        for name in missing:
            self.conversations.pop(name, None)
        if missing:
            self.agents_missing.publish(missing)
        self.roster_changed.publish(self.names)

    def upsert(self, agent: AgentState) -> None:
        is_new = agent.name not in self.agents
        self.agents[agent.name] = agent
        self.tally.put(agent)
        if is_new:
            # A new row comes with its name's spend today: an agent of that
            # name deleted today, whose spend no row showed until now.
            left = self.unlisted_spend_usd - agent.spend_today_usd
            self.unlisted_spend_usd = max(Decimal(0), left)
            self.roster_changed.publish(self.names)
        else:
            self.agent_changed.publish(agent)

    def add_messages(self, messages: Iterable[ConversationMessage]) -> None:
        for message in messages:
            conversation = self.conversation(message.agent)
            if not conversation.add([message]):
                continue
            if message.kind == "agent" and conversation.streaming:
                conversation.streaming = ""
                self.streaming.publish(Streaming(message.agent, ""))
            activity = self.activity.get(message.agent)
            if activity is not None and message.kind in ("tool", "agent"):
                activity.tool = tool_name(message.text) if message.kind == "tool" else None
                activity.writing = False
                self.activity_changed.publish(message.agent)
            self.message_added.publish(message)

    def history_arrived(
        self, agent: str, messages: list[ConversationMessage], *, whole: bool
    ) -> list[ConversationMessage]:
        """The plane's newest page of `agent`'s conversation (`whole`: it is
        all there is); returns what is new to this client."""
        conversation = self.conversation(agent)
        fresh = conversation.newest(messages, whole=whole)
        conversation.loaded = True
        return fresh

    def earlier_arrived(
        self, agent: str, messages: list[ConversationMessage], *, reached_start: bool
    ) -> None:
        """A page from before the oldest message held (none, when it failed)."""
        self.conversation(agent).earlier(messages, reached_start=reached_start)

    def apply(self, event: Event) -> None:
        _APPLY[type(event)](self, event)

    def _on_message(self, event: MessageAppended) -> None:
        self.add_messages([event.message])

    def _on_delta(self, event: TextDelta) -> None:
        conversation = self.conversation(event.agent)
        conversation.streaming += event.text
        self.streaming.publish(Streaming(event.agent, conversation.streaming))
        activity = self.activity.get(event.agent)
        if activity is not None and not activity.writing:
            activity.writing = True
            self.activity_changed.publish(event.agent)

    def _on_turn_started(self, event: TurnStarted) -> None:
        self.conversation(event.agent).streaming = ""
        self.activity[event.agent] = Activity(started=self.clock())
        self.activity_changed.publish(event.agent)

    def _on_turn_finished(self, event: TurnFinished) -> None:
        conversation = self.conversation(event.agent)
        if conversation.streaming:
            conversation.streaming = ""
            self.streaming.publish(Streaming(event.agent, ""))
        if self.activity.pop(event.agent, None) is not None:
            self.activity_changed.publish(event.agent)

    def _on_agent(self, event: AgentUpdated) -> None:
        self.upsert(event.agent)

    def _on_day(self, event: DayRolled) -> None:
        self.load(event.snapshot)

    def _on_fleet(self, event: FleetChanged) -> None:
        self.fleet_limit_usd = event.limit_usd
        self.roster_changed.publish(self.names)  # the fleet line reads it

    def _on_store(self, event: StoreChanged) -> None:
        self.store_unreachable_since = event.unreachable_since
        self.roster_changed.publish(self.names)  # the banner reads it

    def _on_removed(self, event: AgentRemoved) -> None:
        if (gone := self.agents.pop(event.agent, None)) is not None:
            self.tally.drop(event.agent)
            self.unlisted_spend_usd += gone.spend_today_usd  # still the fleet's today
            self.conversations.pop(event.agent, None)
            self.agent_removed.publish(event.agent)
            self.roster_changed.publish(self.names)

    def _on_renamed(self, event: AgentRenamed) -> None:
        """The row keeps its place; the conversation is fetched again under
        the new name (its messages carry the old one)."""
        self.agents = {
            (event.agent.name if name == event.old else name): (
                event.agent if name == event.old else agent
            )
            for name, agent in self.agents.items()
        }
        self.tally.drop(event.old)
        self.tally.put(event.agent)
        self.conversations.pop(event.old, None)
        self.agent_renamed.publish(event)
        self.roster_changed.publish(self.names)


_APPLY: dict[type, Callable[[Store, Any], None]] = {
    MessageAppended: Store._on_message,
    TextDelta: Store._on_delta,
    TurnStarted: Store._on_turn_started,
    TurnFinished: Store._on_turn_finished,
    AgentUpdated: Store._on_agent,
    DayRolled: Store._on_day,
    AgentRemoved: Store._on_removed,
    AgentRenamed: Store._on_renamed,
    FleetChanged: Store._on_fleet,
    StoreChanged: Store._on_store,
}
"""Which method folds which event in: a table, not an if/elif chain."""
