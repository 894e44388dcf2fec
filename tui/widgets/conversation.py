"""The selected agent's conversation, scrolled to the newest message.

The screen sets what it shows (`show` for a whole history, `append` for one
new message, `stream` for an answer as it arrives, `note` for a line that is
this client's own and stored nowhere, like `/help`). It stays anchored to the
bottom unless the operator scrolls up to read.

One widget draws every line itself (Textual's line API, as the agent list
does for its rows): messages, notes, the offer of earlier ones and the
stream are items that draw themselves as lines (`Item.lines`), laid out
one under the other by `Layout`, and only the lines in view are painted.
With a widget per message, selecting an agent with a long history mounted,
styled and laid out some sixty of them (~35 ms of a key's ~44, measured by
bench/tui.py), and every later layout of the screen walked them again.

Only the newest `WINDOW` messages are laid out when an agent is selected;
a line at the top offers the earlier ones. Moving further up from the top
(up, PageUp, Home or the wheel), Enter, or a click on that line lays out the
next `WINDOW`, from those this client holds, then from the plane, a page at
a time (`EarlierWanted`; the screen fetches it). What the operator was
reading stays where it was on screen: the earlier messages arrive above it,
to be scrolled up to.

Lines that fold (a tool's result, a long message) are opened and closed by
a click, by `o` (the newest in view), or by Enter on the one the cursor is
on: the pane's cursor stands on such a line while the pane has the focus
(the newest in view when it gets it), and Tab and shift+Tab walk it through
them before the focus moves on, as they did when each was a widget.

A printable key no binding wants is the start of a message: it is passed on
(`Typed`) for the screen to put in the composer, while the pane's own keys
(arrows, PageUp, Home, End, Enter) go on scrolling and paging.

The pane also owns the styles its lines are drawn with (component classes,
coloured in `app.tcss`): computed once here, not once per message.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.selection import Selection
from textual.strip import Strip
from textual.style import Style

from plane.wire.protocol import ConversationMessage
from tui.keys import typed
from tui.widgets.conversation_items import Hint, Item, Note, Offer
from tui.widgets.conversation_layout import Layout
from tui.widgets.line_strip import line_strip
from tui.widgets.message_line import MessageLine
from tui.widgets.streaming_answer import StreamingAnswer

WINDOW = 60
"""Messages laid out at first; earlier ones come `WINDOW` at a time (and
are fetched from the plane `WINDOW` at a time)."""

Reading = tuple[Item, int] | None
"""A line the operator can see, and how far it is from the top of the view."""


class ConversationPane(ScrollView, can_focus=True):
    """Messages top to bottom, oldest first."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "enter",
            "enter",
            "Open / close the line at the cursor (Tab moves it); else earlier messages",
            show=False,
        ),
        Binding("o", "open_newest", "Open / close the newest tool line or long message in view"),
        # Described under "Anywhere": Tab / shift+Tab reach the lines that open.
        Binding("tab", "walk(1)", show=False),
        Binding("shift+tab", "walk(-1)", show=False),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "conversation--stamp",
        "conversation--who",
        "conversation--who-you",
        "conversation--who-plane",
        "conversation--body",
        "conversation--body-plane",
        "conversation--body-ask",
        "conversation--body-quiet",
        "conversation--who-held",
        "conversation--body-held",
        "conversation--who-paused",
        "conversation--body-paused",
        "conversation--who-warn",
        "conversation--body-warn",
        "conversation--badge",
        "conversation--md-heading",
        "conversation--md-code",
        "conversation--md-strong",
        "conversation--md-em",
        "conversation--md-link",
        "conversation--md-bullet",
        "conversation--fold",
        "conversation--cursor",
        "conversation--note",
        "conversation--earlier",
        "conversation--earlier-hover",
    }

    @dataclass
    class EarlierWanted(Message):
        """Everything held is laid out and the plane may have older messages:
        fetch the page before `before_id` and hand it to `earlier_arrived`."""

        agent: str
        before_id: int

    @dataclass
    class Typed(Message):
        """A printable key no binding wants: the operator started typing."""

        character: str

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.agent: str | None = None
        self._who_width = 6
        self._layout = Layout()
        self._strips: dict[int, Strip] = {}
        """Painted lines, by line of the whole; forgotten at any change."""
        self.cursor: MessageLine | None = None
        """The line that folds that Enter opens or closes."""
        self._stream: StreamingAnswer | None = None
        self._hint: Hint | None = None
        """The "nothing here yet" line, while there is nothing else."""
        self.not_fetched = False
        """The conversation shown is not read from the plane yet: its hint says
        it is being fetched, not that there is nothing (a slow first reply, on
        a plane of 200 agents, read as an empty conversation for seconds)."""
        self.config = ""
        """Which config the plane runs on (`config: …`), said under "No agent
        yet": a plane started where there is no agents.yaml has none of its agents."""
        self._unshown: list[ConversationMessage] = []
        """Older messages not laid out yet, oldest first."""
        self._oldest: int | None = None
        """The id of the oldest message laid out: the plane pages back from it."""
        self._on_plane = False
        """The plane may hold messages older than any here."""
        self._fetching = False
        """A page was asked of the plane and has not arrived."""
        self._offer: Offer | None = None
        self._parts: dict[str, Style] = {}
        """Each part's style, computed once a theme (a few for every line drawn)."""

    def on_mount(self) -> None:
        self.anchor()

    # ── what the screen sets ───────────────────────────────────────────────

    def show(
        self,
        agent: str | None,
        messages: Iterable[ConversationMessage],
        *,
        earlier_on_plane: bool = False,
        not_fetched: bool = False,
    ) -> None:
        """Replace everything with `agent`'s messages; `earlier_on_plane`: the
        plane may have older ones than these; `not_fetched`: the plane has not
        sent them yet (none shown is not yet none)."""
        self.agent = agent
        self.not_fetched = not_fetched and agent is not None
        self._who_width = min(max(len(agent or ""), 5), 14)
        self._stream = self._hint = self._offer = self.cursor = None
        self._fetching = False
        messages = list(messages)
        self._unshown, newest = messages[:-WINDOW], messages[-WINDOW:]
        self._oldest = newest[0].id if newest else None
        self._on_plane = earlier_on_plane and bool(newest)
        items: list[Item] = [self._line(m) for m in newest]
        if self._has_earlier():
            self._offer = Offer(self._earlier_text(), self.part)
            items.insert(0, self._offer)
        if not items:
            self._hint = self._empty_hint(agent)
            items.append(self._hint)
        self._layout.reset(items)
        self._laid_out()
        self.anchor()

    def append(self, message: ConversationMessage) -> None:
        self._drop_hint()
        if self._oldest is None:
            self._oldest = message.id
        self._add(self._line(message))

    def stream(self, text: str) -> None:
        """Show the answer so far; empty text ends the stream."""
        if not text:
            if self._stream is not None:
                self._layout.remove(self._stream)
                self._stream = None
                self._laid_out()
            return
        if self._stream is None and self.agent is not None:
            self._drop_hint()
            self._stream = StreamingAnswer(self.agent, self.part, who_width=self._who_width)
            self._layout.insert(len(self._layout.items), [self._stream])
        if self._stream is not None:
            self._stream.text = text
            self._layout.redraw(self._stream)
            self._laid_out()

    def note(self, text: str) -> None:
        """A line of this client's own (help, a failed request); not stored."""
        self._drop_hint()
        self._add(Note(text, self.part))

    # ── what tests and the screen read ─────────────────────────────────────

    @property
    def messages(self) -> list[MessageLine]:
        """The messages laid out, oldest first."""
        return [item for item in self._layout.items if isinstance(item, MessageLine)]

    @property
    def notes(self) -> list[str]:
        return [item.text for item in self._layout.items if isinstance(item, Note)]

    @property
    def earlier_offered(self) -> str | None:
        """What the line at the top says, or None when it is not there."""
        return self._offer.text if self._offer is not None else None

    @property
    def streaming(self) -> str | None:
        """The answer streaming in, or None."""
        return self._stream.text if self._stream is not None else None

    def plain(self) -> str:
        """Every line laid out, as plain text (what a selection reads)."""
        return self._layout.plain()

    def row_of(self, item: Item) -> int | None:
        """The line of the view `item` starts on (negative above it)."""
        top = self._layout.top(item)
        return None if top is None else top - self._first_row()

    # ── earlier messages ───────────────────────────────────────────────────

    async def earlier_arrived(
        self, agent: str, messages: list[ConversationMessage], *, earlier_on_plane: bool
    ) -> None:
        """The page `EarlierWanted` asked for (empty if it could not be had)."""
        if agent != self.agent:
            return
        self._fetching = False
        self._on_plane = earlier_on_plane
        older = [m for m in messages if self._oldest is None or m.id < self._oldest]
        self._unshown = older + self._unshown
        if self._unshown:
            self._lay_out_batch()
        else:
            self._sync_earlier()

    async def offer_earlier(self, on_plane: bool) -> None:
        """The plane has (or has no) messages older than those shown."""
        on_plane = on_plane and self._oldest is not None
        if on_plane != self._on_plane:
            self._on_plane = on_plane
            self._sync_earlier()

    async def action_earlier(self) -> None:
        """Lay out the next batch of earlier messages above the others, from
        those held, else from the plane."""
        if self._fetching or self.agent is None:
            return
        if self._unshown:
            self._lay_out_batch()
        elif self._on_plane and self._oldest is not None:
            self._fetching = True
            self._sync_earlier()
            self.post_message(self.EarlierWanted(self.agent, self._oldest))

    async def _further_up(self) -> bool:
        """At the top, a move further up asks for earlier messages; True when
        there were any to ask for."""
        if self.scroll_offset.y > 0 or not self._has_earlier():
            return False
        await self.action_earlier()
        return True

    def _has_earlier(self) -> bool:
        return bool(self._unshown) or self._on_plane

    def _lay_out_batch(self) -> None:
        self._unshown, batch = self._unshown[:-WINDOW], self._unshown[-WINDOW:]
        reading = self._reading()
        self.release_anchor()
        at = 1 if self._offer is not None else 0
        self._layout.insert(at, [self._line(m) for m in batch])
        self._oldest = batch[0].id
        self._sync_earlier()
        self._keep_reading(reading)

    def _reading(self) -> Reading:
        """The first item in view (not the offer), and its line in the view."""
        top = self._first_row()
        for item in self._layout.items:
            start = self._layout.top(item)
            if item is self._offer or start is None:
                continue
            if start + len(self._layout.lines_of(item)) > top:
                return item, start - top
        return None

    def _keep_reading(self, reading: Reading) -> None:
        """Scroll so the line that was being read is where it was on screen."""
        if reading is None:
            return
        item, offset = reading
        top = self._layout.top(item)
        if top is not None:
            self.scroll_to(y=top - offset, animate=False, immediate=True, force=True)

    def _sync_earlier(self) -> None:
        """The line at the top: there while there is something earlier."""
        if not self._has_earlier():
            if self._offer is not None:
                self._layout.remove(self._offer)
                self._offer = None
        elif self._offer is None:
            self._offer = Offer(self._earlier_text(), self.part)
            self._layout.insert(0, [self._offer])
        else:
            self._offer.text = self._earlier_text()
            self._layout.redraw(self._offer)
        self._laid_out()

    def _earlier_text(self) -> str:
        if self._fetching:
            return "↑ fetching earlier messages…"
        count = len(self._unshown)
        if self._on_plane or not count:
            return "↑ earlier messages (click, or Enter here)"
        return f"↑ {count} earlier message{'s' if count != 1 else ''} (click, or Enter here)"

    # ── keys and the mouse ─────────────────────────────────────────────────

    def on_key(self, event: events.Key) -> None:
        if (character := typed(self, event)) is not None:
            self.post_message(self.Typed(character))

    async def on_click(self, event: events.Click) -> None:
        item = self._item_at(event)
        if item is not None and item is self._offer:
            await self.action_earlier()
        elif isinstance(item, MessageLine) and item.folds and event.chain == 1:
            self.cursor = item
            self._fold(item)

    def on_mouse_move(self, event: events.MouseMove) -> None:
        self._hover(self._offer is not None and self._item_at(event) is self._offer)

    def on_leave(self) -> None:
        self._hover(False)

    async def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        if await self._further_up():
            event.stop()

    def on_focus(self) -> None:
        if self.cursor is None:
            self.cursor = self._newest_folding()
        self._repaint()

    def on_blur(self) -> None:
        self._repaint()

    # Async overrides of Widget's sync scroll actions: Textual awaits an action that is a
    # coroutine ("Action methods may be coroutines", its guide); only the signature differs.
    async def action_scroll_up(self) -> None:  # type: ignore[override]
        if not await self._further_up():
            super().action_scroll_up()

    async def action_page_up(self) -> None:  # type: ignore[override]
        if not await self._further_up():
            super().action_page_up()

    async def action_scroll_home(self) -> None:  # type: ignore[override]
        if not await self._further_up():
            super().action_scroll_home()

    async def action_enter(self) -> None:
        """Open or close the line at the cursor; without one, earlier messages."""
        if self.cursor is not None and self.cursor in self._layout.items:
            self._fold(self.cursor)
        else:
            await self.action_earlier()

    def action_open_newest(self) -> None:
        """Open (or close) the lowest line in view that folds."""
        line = self._newest_folding()
        if line is not None:
            self._fold(line)

    def action_walk(self, step: int) -> None:
        """Tab (1) and shift+Tab (-1): the cursor to the next (previous) line
        that folds; past the last (before the first) the focus moves on."""
        folding = [line for line in self.messages if line.folds]
        at = folding.index(self.cursor) if self.cursor in folding else None
        if at is None and step < 0:
            self.screen.focus_previous()  # from the pane itself: on to the agents
            return
        here = 0 if at is None else at + step
        if here >= len(folding):
            self.cursor = None
            self.screen.focus_next()  # past the newest: on to the composer
            return
        self.cursor = folding[here] if here >= 0 else None  # before the first: the pane
        if self.cursor is not None:
            self._show_line(self.cursor)
        self._repaint()

    def _fold(self, line: MessageLine) -> None:
        line.fold()
        self._layout.redraw(line)
        self._laid_out()

    def _newest_folding(self) -> MessageLine | None:
        """The lowest line in view that folds."""
        top = self._first_row()
        bottom = top + self.scrollable_content_region.height
        for line in reversed(self.messages):
            start = self._layout.top(line)
            if line.folds and start is not None and start < bottom:
                if start + len(self._layout.lines_of(line)) > top:
                    return line
        return None

    def _show_line(self, line: MessageLine) -> None:
        """Scroll `line` into view, if it is not."""
        top, first = self._layout.top(line), self._first_row()
        if top is not None and not first <= top < first + self.scrollable_content_region.height:
            self.scroll_to(y=top, animate=False, immediate=True)

    def _item_at(self, event: events.MouseEvent) -> Item | None:
        offset = event.get_content_offset(self)
        if offset is None:
            return None
        found = self._layout.line(self._first_row() + offset.y)
        return found[0] if found is not None else None

    def _hover(self, hovered: bool) -> None:
        if self._offer is not None and self._offer.hovered != hovered:
            self._offer.hovered = hovered
            self._layout.redraw(self._offer)
            self._laid_out()

    # ── drawing ────────────────────────────────────────────────────────────

    def part(self, name: str) -> Style:
        """The style of one part of a line (`stamp`, `who-plane`, …).

        Whole, not partial: a translucent background (`$warning-muted`) only
        shows once blended over the pane's own."""
        if (style := self._parts.get(name)) is None:
            style = self._parts[name] = self.get_visual_style(f"conversation--{name}")
        return style

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._parts.clear()
        self._layout.redraw_all()
        self._strips.clear()

    def on_resize(self) -> None:
        self._laid_out()

    def watch_show_vertical_scrollbar(self) -> None:
        """The scrollbar came or went: the lines have a cell more or less."""
        self._laid_out()

    def _first_row(self) -> int:
        """The line of the whole drawn at the top of the view: a conversation
        shorter than the view sits at its bottom, by the composer (negative)."""
        return self.scroll_offset.y - max(
            0, self.scrollable_content_region.height - self._layout.height
        )

    def render_line(self, y: int) -> Strip:
        row = self._first_row() + y
        selection = self.text_selection
        if selection is None and (strip := self._strips.get(row)) is not None:
            return strip
        width = self.scrollable_content_region.width
        found = self._layout.line(row)
        if found is None:
            return Strip.blank(width, self.visual_style.rich_style)
        item, line = found
        base = self.visual_style
        if item is self.cursor and self.has_focus:
            base = self.get_visual_style("conversation--cursor")
        if selection is not None and (span := selection.get_span(row)) is not None:
            start, end = span
            line = line.stylize(self._selected(), start, len(line.plain) if end == -1 else end)
        strip = line_strip(line, base, row, width)
        if selection is None:
            self._strips[row] = strip
        return strip

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        return selection.extract(self.plain()), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self._repaint()

    def _selected(self) -> Style:
        return Style.from_styles(self.screen.get_component_styles("screen--selection"))

    def _laid_out(self) -> None:
        """Lay the items out again at the pane's width and repaint."""
        width = self.scrollable_content_region.width
        self._layout.set_width(width)
        self.virtual_size = Size(width, self._layout.height if width > 0 else 0)
        self._repaint()

    def _repaint(self) -> None:
        self._strips.clear()
        self.refresh()

    def _add(self, item: Item) -> None:
        """`item` at the bottom, above an answer streaming in."""
        at = len(self._layout.items) - (1 if self._stream is not None else 0)
        self._layout.insert(at, [item])
        self._laid_out()

    def _line(self, message: ConversationMessage) -> MessageLine:
        return MessageLine(message, who_width=self._who_width, part=self.part)

    def _drop_hint(self) -> None:
        if self._hint is not None:
            self._layout.remove(self._hint)
            self._hint = None

    def _empty_hint(self, agent: str | None) -> Hint:
        if agent is None:
            nobody = "No agent yet: press ctrl+n to create one."
            return Hint(f"{nobody}\n{self.config}" if self.config else nobody, self.part)
        if self.not_fetched:
            return Hint(f"Fetching {agent}'s conversation from the plane…", self.part)
        return Hint(f"Nothing here yet. Type to talk to {agent}, or /help.", self.part)
