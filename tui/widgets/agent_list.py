"""The agent rows, kept in step with the store, and the `+ new agent` row.

The list subscribes to the store itself (rows are the store's most frequent
readers: a spend update touches one row, found by name, and nothing else).
Moving the highlight selects an agent; it tells the screen with `Selected`.

Rows out of view are not redrawn when their agent changes: they take the new
state quietly and are brought up to date when scrolled into view. (Refreshing
a widget the compositor cannot see makes it re-map every widget on the next
frame; with 500 agents and 100 updates a second that was most of the time.)
Enter or a click on `+ new agent` asks for the form with `NewAgentWanted`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widget import Widget
from textual.widgets import ListView

from plane.protocol import AgentState
from tui.store import Store
from tui.widgets.agent_row import AgentRow
from tui.widgets.new_agent_row import NewAgentRow


class AgentList(Widget):
    """Every agent of the plane, one row each; the selected one is highlighted.

    It wraps a `ListView` (keys, mouse, scrolling) rather than subclassing it,
    so its own `Selected` message can say what the screen needs: a name."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n", "new_agent", "New agent", show=False),
        Binding("home", "first", "First", show=False),
        Binding("end", "last", "Last", show=False),
    ]

    @dataclass
    class Selected(Message):
        """The operator moved to another agent."""

        agent: str

    @dataclass
    class Chosen(Message):
        """Enter or a click on an agent: the operator wants to talk to it."""

        agent: str

    class NewAgentWanted(Message):
        """Enter or a click on `+ new agent`, or `n` in the list."""

    def __init__(
        self,
        store: Store,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.store = store
        self._rows: dict[str, AgentRow] = {}
        self.selected: str | None = None
        """The agent whose conversation is shown (the `+` row is never it)."""
        self._wanted: str | None = None
        """An agent to select as soon as its row exists (one just created)."""
        self._position: dict[str, int] = {}
        """Each agent's row number (rows are one line each)."""
        self._stale: set[str] = set()
        """Rows out of view whose agent changed since they were last drawn."""

    def compose(self) -> ComposeResult:
        yield ListView(NewAgentRow(id="new-agent-row"), id="rows")

    @property
    def rows(self) -> ListView:
        return self.query_one("#rows", ListView)

    def focus_rows(self) -> None:
        self.rows.focus()

    def on_mount(self) -> None:
        self.store.roster_changed.subscribe(self, self._sync, immediate=True)
        self.store.agent_changed.subscribe(self, self._update, immediate=True)
        self._sync(self.store.names)
        self.watch(self.rows, "scroll_y", self._scrolled, init=False)

    # ── keeping in step with the store ─────────────────────────────────────

    def _update(self, agent: AgentState) -> None:
        row = self._rows.get(agent.name)
        if row is None:
            return
        if self._in_view(agent.name):
            row.agent = agent
        else:
            row.set_reactive(AgentRow.agent, agent)
            self._stale.add(agent.name)

    def _in_view(self, name: str) -> bool:
        rows = self.rows
        top = int(rows.scroll_y)
        return top - 2 <= self._position.get(name, 0) <= top + rows.size.height + 2

    def _scrolled(self) -> None:
        for name in [n for n in self._stale if self._in_view(n)]:
            self._stale.discard(name)
            row = self._rows[name]
            row.watch_agent(row.agent)
            row.refresh()

    def _sync(self, names: list[str]) -> None:
        for gone in set(self._rows) - set(names):
            self._rows.pop(gone).remove()
        fresh = []
        for name in names:
            agent = self.store.agents[name]
            if name in self._rows:
                self._rows[name].agent = agent
            else:
                self._rows[name] = AgentRow(agent)
                fresh.append(self._rows[name])
        self._position = {name: index for index, name in enumerate(names)}
        self._stale.clear()
        if fresh:
            self.rows.mount_all(fresh, before=self.rows.query_one(NewAgentRow))
        self.call_after_refresh(self._keep_selection)

    def _keep_selection(self) -> None:
        wanted, self._wanted = self._wanted, None
        for name in (wanted, self.selected, next(iter(self._rows), None)):
            if name in self._rows:
                self.select(name)
                return
        self.selected = None
        self.rows.index = 0

    # ── attributes down ────────────────────────────────────────────────────

    def select(self, agent: str) -> None:
        """Highlight `agent`'s row (as if the operator moved there)."""
        row = self._rows.get(agent)
        if row is None:
            self._wanted = agent
            return
        rows = self.rows
        index = rows.children.index(row)
        if rows.index != index:
            rows.index = index  # the ListView highlights it and says so
            return
        # Same index, other row (rows were inserted above): move the mark by hand.
        for child in rows.children:
            child.highlighted = child is row  # type: ignore[attr-defined]
        if self.selected != agent:
            self._announce(agent)

    def step(self, delta: int) -> None:
        """Move the selection `delta` agents up or down (not onto `+ new agent`)."""
        names = list(self._rows)
        if not names:
            return
        here = names.index(self.selected) if self.selected in self._rows else 0
        self.select(names[max(0, min(len(names) - 1, here + delta))])

    def _announce(self, agent: str) -> None:
        self.selected = agent
        self.post_message(self.Selected(agent))

    # ── events ─────────────────────────────────────────────────────────────

    def on_list_view_highlighted(self, event: ListView.Highlighted) -> None:
        event.stop()
        item = event.item
        if isinstance(item, AgentRow) and item.agent_name != self.selected:
            self._announce(item.agent_name)

    def on_list_view_selected(self, event: ListView.Selected) -> None:
        event.stop()
        if isinstance(event.item, NewAgentRow):
            self.post_message(self.NewAgentWanted())
        elif isinstance(event.item, AgentRow):
            self.post_message(self.Chosen(event.item.agent_name))

    def action_new_agent(self) -> None:
        self.post_message(self.NewAgentWanted())

    def action_first(self) -> None:
        self.rows.index = 0

    def action_last(self) -> None:
        self.rows.index = len(self.rows) - 1
