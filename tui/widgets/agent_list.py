"""Every agent's row: state glyph, name, and what it spent today.

One widget draws all the rows, line by line (like Textual's own OptionList
and DataTable), rather than one widget per row: with 500 agents, every
layout of the screen walked 500 row widgets (53 ms a layout, measured by
bench/tui.py), and a row refreshed out of view made the compositor re-map
them all. Drawn here, a spend update repaints one line if it is in view,
and nothing if it is not.

A row still has state "classes" (`-warn`, `-over`, `-working`, `-held`,
`-idle`, see `row_classes`); each picks a component class of this widget,
coloured in `app.tcss` with theme variables. An agent that has spent
nothing shows no figure: a column of `$0.00` is noise, and the row you look
for is the one unlike the others. The last row is `+ new agent`.

Rows come in the order `tui.fleet.ordered` gives (held and amber first,
then the chosen sort, `s`), narrowed by a piece of a name (`/`) and a state
(`f`). The held and amber rows at the top are pinned: the top lines of the
list always show them and the other rows scroll under them, so moving down
fifty rows never hides the ones that need the operator. Pinned rows take at
most half the list's height (more, and the rest of the fleet would have too
few lines to scroll through, none once they fill it); those past it scroll
with the rest, and while any of them is out of view the list's bottom
border says how many (`+3 more held`, `hidden_alarms`). An agent that
answered while it was not shown has `*` after its name (`unread`, kept by
the screen).

The list subscribes to the store itself: rows are the store's busiest
readers. Moving the cursor selects an agent and says so with `Selected`
(to the screen, in the same paint as the row: `_move_to`);
Enter or a click on `+ new agent` (or `n`) asks for the form. Any other
printable key is the start of a message, so it is passed on (`Typed`) for
the screen to put in the composer.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, replace
from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.content import Content
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.style import Style
from textual.timer import Timer
from textual.visual import Visual

from plane.wire.protocol import AgentState
from tui.fleet import (
    SORT_WORDS,
    SORTS,
    STATE_FILTERS,
    Place,
    alarming,
    nothing_shown,
    ordered,
    place,
    shown,
)
from tui.formatting import spend_against, spend_level
from tui.keys import typed
from tui.store import Store

GLYPHS = {"working": "●", "idle": "○", "held": "■", "paused": "‖"}
"""working: a turn in flight; idle: waiting; held: at its ceiling, taking no
turn; paused: by the operator, its ceiling kept."""
GLYPH_MEANINGS = [
    (GLYPHS["idle"], "idle: waiting for a message or its next booked turn"),
    (GLYPHS["working"], "working: a turn is running"),
    (
        GLYPHS["held"],
        "held at its, its group's or the fleet's daily ceiling: until 00:00 UTC or /limit "
        "raises it (a $0.00 one: /limit only)",
    ),
    (
        GLYPHS["held"],
        "held on a model with no known price, under a ceiling: until it has one or the "
        "ceiling is off",
    ),
    (GLYPHS["held"], "held in a loop: until p resumes it (a new day does not)"),
    (GLYPHS["paused"], "paused: by the operator (p resumes it); its ceiling is kept"),
]
"""The legend the help panel shows, in the order a row's life goes; a held
row's line for each kind of hold, as each is freed (`p` resumes only a loop's:
on a ceiling's hold it pauses the agent)."""
UNREAD = "*"
"""After the name: the agent said something since its conversation was last shown."""
MARK_MEANINGS = [
    (UNREAD, "after a name: it answered while you looked elsewhere"),
    ("$0.80", "spent today; amber from warnRatio of its ceiling, red at the ceiling"),
    ("$?", "its model has no known price: its calls are counted, not priced"),
    ("+$?", "after a figure: it spent at least that, the rest unpriced"),
]
NEW_AGENT = "+ new agent"
STOPPED = frozenset({"held", "paused"})
"""Rows that take no turn, drawn as a bar of their own (`agent-list--held`,
`agent-list--paused`): what the operator must do something about is what
the eye lands on first, before amber and before the cursor."""
RESORT_S = 0.1
"""Rows that an update moves are ordered again after this long."""
LINES_KEPT = 256
"""Drawn lines kept for reuse: a few screenfuls. Each is keyed by the
agent's state, which 200 updates a second replace, so a bigger cache held
mostly lines no row will show again (1,024 of them, 10,000 objects for
the garbage collector to walk in each full pass)."""


def row_classes(agent: AgentState) -> frozenset[str]:
    """The row's state, in the words `app.tcss` uses."""
    level = spend_level(agent)
    classes = {f"-{agent.status}"}
    if level != "ok":
        classes.add(f"-{level}")
    return frozenset(classes)


def row_text(agent: AgentState, width: int, *, unread: bool = False) -> tuple[str, str, str]:
    """Glyph, name (padded or cut to fit, `*` after it when unread) and
    figure of a row `width` wide (not counting the one-cell margin each side)."""
    spent = agent.spend_today_usd
    figure = spend_against(spent, agent.limit_usd) if spent > 0 else ""
    # Its calls count $0, or a floor (`+ unpriced` in the ledger), which is not what they cost.
    if not agent.price_known or agent.floor_priced:
        figure = f"{figure}+$?" if figure else "$?"
    mark = f" {UNREAD}" if unread else ""
    room = max(1, width - 2 - (len(figure) + 1 if figure else 0) - len(mark))
    name = agent.name if len(agent.name) <= room else agent.name[: room - 1] + "…"
    return GLYPHS.get(agent.status, "?"), (name + mark).ljust(room + len(mark)), figure


class AgentList(ScrollView, can_focus=True):
    """The agents of the plane, one line each, then `+ new agent`."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "move(-1)", "Previous agent", show=False),
        Binding("down", "move(1)", "Next agent", show=False),
        Binding("pageup", "move(-10)", "Ten rows up", show=False),
        Binding("pagedown", "move(10)", "Ten rows down", show=False),
        Binding("home", "move(-1_000_000)", "First row", show=False),
        Binding("end", "move(1_000_000)", "Last row (+ new agent)", show=False),
        Binding("enter", "choose", "Talk to it (on + new agent: the form)", show=False),
        Binding("n", "new_agent", "New agent", show=False),
        Binding("question_mark", "app.help", "Help: keys and marks", show=False),
        Binding("slash", "filter_names", "Filter by name (Esc clears)", show=False),
        Binding(
            "f", "filter_state", "Show: all → working → held → paused → amber → unread", show=False
        ),
        Binding("s", "sort", "Sort: as configured → state → spend → name", show=False),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "agent-list--row",
        "agent-list--cursor",
        "agent-list--cursor-blurred",
        "agent-list--hover",
        "agent-list--glyph",
        "agent-list--glyph-working",
        "agent-list--glyph-held",
        "agent-list--spend",
        "agent-list--spend-warn",
        "agent-list--spend-over",
        "agent-list--new",
        "agent-list--hint",
        "agent-list--held",
        "agent-list--held-cursor",
        "agent-list--paused",
        "agent-list--paused-cursor",
    }

    cursor: reactive[int] = reactive(0, repaint=False)
    """The highlighted line: an agent's, or the last one, `+ new agent`.
    Moving it redraws the two lines it leaves and reaches (`watch_cursor`),
    not the whole list: with a repaint on each arrow key the list drew its
    every line again, a third of the key's paint at 1,000 agents."""

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

    class FilterWanted(Message):
        """`/`: the operator wants to type a piece of a name."""

    class Narrowed(Message):
        """The sort or a filter changed (the screen retitles the list)."""

    @dataclass
    class Typed(Message):
        """A printable key no binding wants: the operator started typing."""

        character: str

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
        self.names: list[str] = []
        """Agents in row order (those the filters let through)."""
        self.sort_by = SORTS[0]
        self.name_filter = ""
        self.state_filter: str | None = None
        self.unread: set[str] = set()
        """Agents that said something since their conversation was shown."""
        self._pinned = 0
        """How many rows at the top are alarming (held, amber, red)."""
        self._places: dict[str, Place] = {}
        """Each agent's `place` when the rows were last ordered."""
        self._resort: Timer | None = None
        self.selected: str | None = None
        """The agent whose conversation is shown (`+ new agent` is never it)."""
        self._wanted: str | None = None
        """An agent to select as soon as its row exists (one just created)."""
        self._row_of: dict[str, int] = {}
        self._hover: int | None = None
        self._lines: LRUCache[tuple[object, ...], Strip] = LRUCache(LINES_KEPT)

    def on_mount(self) -> None:
        self.store.roster_changed.subscribe(self, self._sync, immediate=True)
        self.store.agent_changed.subscribe(self, self._update, immediate=True)
        self._sync()

    # ── keeping in step with the store ─────────────────────────────────────

    def _order(self) -> list[AgentState]:
        agents = [
            agent
            for agent in self.store.agents.values()
            if shown(agent, self.name_filter, self.state_filter, self.unread)
        ]
        return ordered(agents, self.sort_by)

    def _sync(self, names: list[str] | None = None) -> None:
        was = self._row_of.get(self.selected or "")
        rows = self._order()
        self._places = {a.name: self._place(a) for a in self.store.agents.values()}
        self.names = [agent.name for agent in rows]
        self._pinned = sum(1 for agent in rows if alarming(agent))
        self._row_of = {name: row for row, name in enumerate(self.names)}
        self.virtual_size = Size(self.scrollable_content_region.width, self._lines_drawn())
        self.refresh()
        self._say_hidden()
        wanted = self._wanted
        if self.store.agents:  # kept until there are rows (a remembered agent, at start)
            self._wanted = None
        for name in (wanted, self.selected, self._neighbour(was), next(iter(self.names), None)):
            if name in self._row_of:
                self.select(name)
                self._keep_in_view(self.cursor)
                return
        self.selected = None
        self.cursor = len(self.names)

    def _neighbour(self, row: int | None) -> str | None:
        """The agent now where a row that went away was (the one after it;
        the one before, if it was the last): a delete leaves the cursor
        beside it, not back at the top of fifty rows."""
        if row is None or not self.names:
            return None
        return self.names[min(row, len(self.names) - 1)]

    def _update(self, agent: AgentState) -> None:
        """One row changed: redraw its line; if the change moves it (it turned
        amber, left a filter, its spend moved it in the spend sort), order
        the rows again, at most once per `RESORT_S` however fast updates come
        (100 a second with 500 agents was enough to keep the app from idling)."""
        place = self._place(agent)
        if self._places.get(agent.name) != place:
            self._places[agent.name] = place
            if self._resort is None:
                self._resort = self.set_timer(RESORT_S, self._resorted)
        self._refresh_row(self._row_of.get(agent.name))

    def _place(self, agent: AgentState) -> Place:
        return place(agent, self.sort_by, self.name_filter, self.state_filter, self.unread)

    def _resorted(self) -> None:
        self._resort = None
        self._sync()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self._say_hidden()

    def hidden_alarms(self) -> list[str]:
        """The held and amber agents past the pinned lines whose rows are out
        of view: scrolled above the rest, or below the list's bottom."""
        pinned, height = self.pinned, self.scrollable_content_region.height
        top = self.scroll_offset.y
        return [
            self.names[row]
            for row in range(pinned, self._pinned)
            if not top + pinned <= row < top + height
        ]

    def _say_hidden(self) -> None:
        """`+3 more held` on the bottom border while `hidden_alarms` has any:
        the pinned lines alone would read as all that needs the operator."""
        hidden = [self.store.agents.get(name) for name in self.hidden_alarms()]
        held = sum(1 for agent in hidden if agent is not None and agent.status == "held")
        kind = "held" if held == len(hidden) else "amber" if not held else "held or amber"
        self.border_subtitle = f"+{len(hidden)} more {kind}" if hidden else ""

    @property
    def pinned(self) -> int:
        """Top lines that keep the alarming rows in view (at most half the list)."""
        return min(self._pinned, self.scrollable_content_region.height // 2)

    def line_of(self, row: int) -> int | None:
        """The line of the view a row is drawn on, or None when scrolled away."""
        pinned, height = self.pinned, self.scrollable_content_region.height
        if row < pinned:
            return row
        line = row - self.scroll_offset.y
        return line if pinned <= line < height else None

    def row_on(self, line: int) -> int:
        """The row drawn on a line of the view."""
        return line if line < self.pinned else self.scroll_offset.y + line

    def _refresh_row(self, row: int | None) -> None:
        line = self.line_of(row) if row is not None else None
        if line is not None:
            self.refresh(Region(0, line, self.size.width, 1))

    def _keep_in_view(self, row: int) -> None:
        """Scroll so `row` shows below the pinned ones (which always show)."""
        pinned, height = self.pinned, self.scrollable_content_region.height
        top = self.scroll_offset.y
        if row < pinned:  # always in view; the first row (Home) also brings the top back
            if row == 0:
                self.scroll_to(y=0, animate=False, force=True, immediate=True)
            return
        if row < top + pinned:
            self.scroll_to(y=row - pinned, animate=False, force=True, immediate=True)
        elif row >= top + height:
            self.scroll_to(y=row - height + 1, animate=False, force=True, immediate=True)

    # ── attributes down ────────────────────────────────────────────────────

    def select(self, agent: str) -> None:
        """Put the cursor on `agent` (as if the operator moved there)."""
        row = self._row_of.get(agent)
        if row is None:
            self._wanted = agent
            return
        self._move_to(row)

    def step(self, delta: int) -> None:
        """Move the selection `delta` agents (never onto `+ new agent`)."""
        if self.names:
            here = self._row_of.get(self.selected or "", 0)
            self.select(self.names[max(0, min(len(self.names) - 1, here + delta))])

    def narrow(
        self, *, sort: str | None = None, name: str | None = None, state: str | None = ""
    ) -> None:
        """Change the sort, the name filter or the state filter (`state=None`:
        every state; the default "" leaves it as it is), keeping the selection."""
        if sort is not None:
            self.sort_by = sort
        if name is not None:
            self.name_filter = name
        if state != "":
            self.state_filter = state
        self._sync()
        self.post_message(self.Narrowed())

    def describe(self) -> str:
        """The list's title: `agents`, or what narrows it (`agents · held · by spend`)."""
        parts = ["agents"]
        if self.name_filter:
            parts.append(f"/{self.name_filter}")
        if self.state_filter:
            parts.append(self.state_filter)
        if SORT_WORDS[self.sort_by]:
            parts.append(SORT_WORDS[self.sort_by])
        return " · ".join(parts)

    def _lines_drawn(self) -> int:
        """The rows, `+ new agent`, and the empty filter's hint if any."""
        return len(self.names) + 1 + len(self._hint_lines(self.scrollable_content_region.width))

    def _hint_lines(self, width: int) -> list[str]:
        """`empty_hint`, wrapped to the list's width (after its margin)."""
        hint = self.empty_hint()
        return textwrap.wrap(hint, max(8, width - 2)) if hint else []

    def empty_hint(self) -> str:
        """What a filter that leaves no row says, under `+ new agent`; ""
        when there are rows (`tui.fleet.nothing_shown`)."""
        return "" if self.names else nothing_shown(self.name_filter, self.state_filter)

    def mark_unread(self, agent: str, unread: bool) -> None:
        """The screen says `agent` has (or no longer has) something unseen."""
        if (agent in self.unread) == unread:
            return
        if unread:
            self.unread.add(agent)
        else:
            self.unread.discard(agent)
        if self.state_filter == "unread" and unread:
            self._sync()  # a row read under this filter stays until the filter changes
        else:
            self._lines.clear()
            self._refresh_row(self._row_of.get(agent))

    def _move_to(self, row: int) -> None:
        """Put the cursor on `row`, selecting its agent if it has one.

        The selection is said first (see `_announce`), the cursor's lines
        redrawn after, so the screen hears of it before the list asks for
        a repaint: the row, the title and the conversation change in one
        paint. The other way round the rows were painted alone first, and
        Textual's frame timer held the rest back one or two frames after
        that paint: 30 of the 40 ms a key took (bench/tui.py)."""
        if row < len(self.names) and self.names[row] != self.selected:
            self._announce(self.names[row])
        self.cursor = row

    def _announce(self, agent: str) -> None:
        """`Selected`, posted to the screen itself (it still bubbles on to the
        app): posted here it went through the two containers' queues on its
        way up, and the list's own repaint request, posted straight to the
        screen, overtook it."""
        self.selected = agent
        self.screen.post_message(self.Selected(agent))

    # ── drawing ────────────────────────────────────────────────────────────

    def render_line(self, y: int) -> Strip:
        row = self.row_on(y)
        width = self.scrollable_content_region.width
        hint = self._hint_lines(width)
        if 0 < row - len(self.names) <= len(hint):
            style = self.get_visual_style("agent-list--row", "agent-list--hint")
            line = Content(f" {hint[row - len(self.names) - 1]}")
            return Visual.to_strips(self, line, width, 1, style)[0].extend_cell_length(
                width, style.rich_style
            )
        if row > len(self.names):
            return Strip.blank(width, self.get_visual_style("agent-list--row").rich_style)
        look = self._look(row)
        agent = self.store.agents.get(self.names[row]) if row < len(self.names) else None
        unread = agent is not None and agent.name in self.unread
        key = (agent, look, width, row == len(self.names), unread)
        if (strip := self._lines.get(key)) is None:
            strip = self._draw(agent, look, width, unread)
            self._lines[key] = strip
        return strip

    def _look(self, row: int) -> str:
        if row == self.cursor:
            return "agent-list--cursor" if self.has_focus else "agent-list--cursor-blurred"
        return "agent-list--hover" if row == self._hover else ""

    def _draw(self, agent: AgentState | None, look: str, width: int, unread: bool) -> Strip:
        stopped = agent is not None and agent.status in STOPPED
        if stopped:  # a bar of its own colour, under the cursor too (marked, not replaced)
            assert agent is not None
            bar = f"agent-list--{agent.status}"
            looks = [bar, f"{bar}-cursor"] if look == "agent-list--cursor" else [bar]
        else:
            looks = [look] if look else []
        base = self.get_visual_style("agent-list--row", *looks)
        if agent is None:
            content = Content.assemble(" ", (NEW_AGENT, self._part("agent-list--new")))
        elif stopped:  # the bar's own colours: a red figure on a red bar would not show
            content = Content(" " + " ".join(row_text(agent, width - 2, unread=unread)))
        else:
            glyph, name, figure = row_text(agent, width - 2, unread=unread)
            level = spend_level(agent)
            spend = "agent-list--spend" + ("" if level == "ok" else f"-{level}")
            mark = {"working": "-working", "held": "-held"}.get(agent.status, "")
            content = Content.assemble(
                " ",
                (glyph, self._part(f"agent-list--glyph{mark}")),
                " ",
                name,
                " " if figure else "",
                (figure, self._part(spend)),
            )
        return Visual.to_strips(self, content, width, 1, base)[0].extend_cell_length(
            width, base.rich_style
        )

    def _part(self, component: str) -> Style:
        """A part's colour and weight, without a background of its own, so
        the cursor's background shows through. Computed whole, then the
        background dropped: muted colours are translucent and only come out
        right blended over the list's own background."""
        return replace(self.get_visual_style(component), background=None)

    def notify_style_update(self) -> None:
        self._lines.clear()
        super().notify_style_update()

    # ── events ─────────────────────────────────────────────────────────────

    def watch_cursor(self, old: int, new: int) -> None:
        self._refresh_row(old)
        self._keep_in_view(new)
        self._refresh_row(new)

    def on_focus(self) -> None:
        self._refresh_row(self.cursor)

    def on_blur(self) -> None:
        self._refresh_row(self.cursor)

    def on_resize(self) -> None:
        self.virtual_size = Size(self.scrollable_content_region.width, self._lines_drawn())
        self._keep_in_view(self.cursor)
        self._say_hidden()

    def on_key(self, event: events.Key) -> None:
        if (character := typed(self, event)) is not None:  # never `n`: the list binds it
            self.post_message(self.Typed(character))

    def on_click(self, event: events.Click) -> None:
        row = self._row_at(event)
        if row is not None:
            self.focus()
            self.cursor = row
            self.action_choose()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        row = self._row_at(event)
        if row != self._hover:
            for line in (self._hover, row):
                self._refresh_row(line)
            self._hover = row

    def on_leave(self) -> None:
        if self._hover is not None:
            self._refresh_row(self._hover)
            self._hover = None

    def _row_at(self, event: events.MouseEvent) -> int | None:
        offset = event.get_content_offset(self)
        if offset is None:
            return None
        row = self.row_on(offset.y)
        return row if 0 <= row <= len(self.names) else None

    # ── actions ────────────────────────────────────────────────────────────

    def action_move(self, delta: int) -> None:
        self._move_to(max(0, min(len(self.names), self.cursor + delta)))

    def action_choose(self) -> None:
        if self.cursor >= len(self.names):
            self.post_message(self.NewAgentWanted())
        else:
            agent = self.names[self.cursor]
            if agent != self.selected:
                self._announce(agent)
            self.post_message(self.Chosen(agent))

    def action_new_agent(self) -> None:
        self.post_message(self.NewAgentWanted())

    def action_filter_names(self) -> None:
        self.post_message(self.FilterWanted())

    def action_filter_state(self) -> None:
        at = STATE_FILTERS.index(self.state_filter)
        self.narrow(state=STATE_FILTERS[(at + 1) % len(STATE_FILTERS)])

    def action_sort(self) -> None:
        self.narrow(sort=SORTS[(SORTS.index(self.sort_by) + 1) % len(SORTS)])
