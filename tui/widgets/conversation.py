"""The selected agent's conversation, scrolled to the newest message.

The screen sets what it shows (`show` for a whole history, `append` for one
new message, `stream` for an answer as it arrives, `note` for a line that is
this client's own and stored nowhere, like `/help`). It stays anchored to the
bottom unless the operator scrolls up to read.

Only the newest `WINDOW` messages are laid out when an agent is selected;
a line at the top offers the earlier ones. Moving further up from the top
(up, PageUp, Home or the wheel), Enter, or a click on that line lays out the
next `WINDOW`, from those this client holds, then from the plane, a page at
a time (`EarlierWanted`; the screen fetches it). A history of 200 answers
costs as much to lay out as it costs to read, and the screen shows thirty
lines. What the operator was reading stays where it was on screen: the
earlier messages arrive above it, to be scrolled up to.

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
from textual.await_complete import AwaitComplete
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.message import Message as TextualMessage
from textual.style import Style
from textual.widget import Widget
from textual.widgets import Static

from plane.wire.protocol import Message
from tui.keys import typed
from tui.widgets.message_line import MessageLine
from tui.widgets.streaming_answer import StreamingAnswer

WINDOW = 60
"""Messages laid out at first; earlier ones come `WINDOW` at a time (and
are fetched from the plane `WINDOW` at a time)."""


class Earlier(Static):
    """`↑ 140 earlier messages`: selecting it lays out the next batch."""


Reading = tuple[Widget, int] | None
"""A line the operator can see, and how far it is from the top of the view."""


class ConversationPane(VerticalScroll, can_focus=True):
    """Messages top to bottom, oldest first."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "earlier", "Earlier messages (on the ↑ line)", show=False),
        Binding("o", "open_newest", "Open / close the newest tool line or long message in view"),
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
        "conversation--badge",
        "conversation--md-heading",
        "conversation--md-code",
        "conversation--md-strong",
        "conversation--md-em",
        "conversation--md-link",
        "conversation--md-bullet",
        "conversation--fold",
    }

    @dataclass
    class EarlierWanted(TextualMessage):
        """Everything held is laid out and the plane may have older messages:
        fetch the page before `before_id` and hand it to `earlier_arrived`."""

        agent: str
        before_id: int

    @dataclass
    class Typed(TextualMessage):
        """A printable key no binding wants: the operator started typing."""

        character: str

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.agent: str | None = None
        self._who_width = 6
        self._stream: StreamingAnswer | None = None
        self._hint: Static | None = None
        """The "nothing here yet" line, while there is nothing else."""
        self._unshown: list[Message] = []
        """Older messages not laid out yet, oldest first."""
        self._oldest: int | None = None
        """The id of the oldest message laid out: the plane pages back from it."""
        self._on_plane = False
        """The plane may hold messages older than any here."""
        self._fetching = False
        """A page was asked of the plane and has not arrived."""
        self._settling = False
        """A batch was laid out and the view is not yet back where it was."""
        self._earlier: Earlier | None = None

    def on_mount(self) -> None:
        self.anchor()

    def show(
        self, agent: str | None, messages: Iterable[Message], *, earlier_on_plane: bool = False
    ) -> AwaitComplete:
        """Replace everything with `agent`'s messages; `earlier_on_plane`: the
        plane may have older ones than these. Awaiting it waits for the old
        lines to go and the new ones to be mounted: inside a batch
        (`App.batch_update`) the screen is then laid out once for both, not
        once for each (a selection made two full paints)."""
        self.agent = agent
        self._who_width = min(max(len(agent or ""), 5), 14)
        self._stream = self._hint = self._earlier = None
        self._fetching = self._settling = False
        removing = self.remove_children()
        messages = list(messages)
        self._unshown, newest = messages[:-WINDOW], messages[-WINDOW:]
        self._oldest = newest[0].id if newest else None
        self._on_plane = earlier_on_plane and bool(newest)
        widgets: list[Widget] = [self._line(m) for m in newest]
        if self._has_earlier():
            self._earlier = Earlier(self._earlier_text(), classes="earlier")
            widgets.insert(0, self._earlier)
        if not widgets:
            self._hint = self._empty_hint(agent)
            widgets.append(self._hint)
        mounting = self.mount_all(widgets)
        self.anchor()
        return AwaitComplete(removing, mounting)

    def append(self, message: Message) -> None:
        self._drop_hint()
        if self._oldest is None:
            self._oldest = message.id
        self.mount(self._line(message), before=self._stream)

    def stream(self, text: str) -> None:
        """Show the answer so far; empty text ends the stream."""
        if not text:
            if self._stream is not None:
                self._stream.remove()
                self._stream = None
            return
        if self._stream is None and self.agent is not None:
            self._drop_hint()
            self._stream = StreamingAnswer(self.agent, who_width=self._who_width)
            self.mount(self._stream)
        if self._stream is not None:
            self._stream.text = text

    def note(self, text: str) -> None:
        """A line of this client's own (help, a failed request); not stored."""
        self._drop_hint()
        self.mount(Static(Content(text), classes="note"), before=self._stream)

    # ── earlier messages ───────────────────────────────────────────────────

    async def earlier_arrived(
        self, agent: str, messages: list[Message], *, earlier_on_plane: bool
    ) -> None:
        """The page `EarlierWanted` asked for (empty if it could not be had)."""
        if agent != self.agent:
            return
        self._fetching = False
        self._on_plane = earlier_on_plane
        older = [m for m in messages if self._oldest is None or m.id < self._oldest]
        self._unshown = older + self._unshown
        if self._unshown:
            await self._lay_out_batch()
        else:
            await self._sync_earlier()

    async def offer_earlier(self, on_plane: bool) -> None:
        """The plane has (or has no) messages older than those shown."""
        on_plane = on_plane and self._oldest is not None
        if on_plane != self._on_plane:
            self._on_plane = on_plane
            await self._sync_earlier()

    def on_key(self, event: events.Key) -> None:
        if (character := typed(self, event)) is not None:
            self.post_message(self.Typed(character))

    async def on_click(self, event: events.Click) -> None:
        if isinstance(event.widget, Earlier):
            await self.action_earlier()

    async def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        if await self._further_up():
            event.stop()

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

    async def action_earlier(self) -> None:
        """Lay out the next batch of earlier messages above the others, from
        those held, else from the plane."""
        if self._fetching or self._settling or self.agent is None:
            return
        if self._unshown:
            await self._lay_out_batch()
        elif self._on_plane and self._oldest is not None:
            self._fetching = True
            await self._sync_earlier()
            self.post_message(self.EarlierWanted(self.agent, self._oldest))

    def action_open_newest(self) -> None:
        """Open (or close) the lowest line in view that folds."""
        top, bottom = self.scroll_offset.y, self.scroll_offset.y + self.size.height
        for line in reversed(list(self.query_children(MessageLine))):
            region = line.virtual_region
            if line.folds and region.y < bottom and region.bottom > top:
                line.action_fold()
                return

    async def _further_up(self) -> bool:
        """At the top, a move further up asks for earlier messages; True when
        there were any to ask for."""
        if self.scroll_offset.y > 0 or not self._has_earlier():
            return False
        await self.action_earlier()
        return True

    def _has_earlier(self) -> bool:
        return bool(self._unshown) or self._on_plane

    async def _lay_out_batch(self) -> None:
        self._settling = True
        self._unshown, batch = self._unshown[:-WINDOW], self._unshown[-WINDOW:]
        reading = self._reading()
        self.release_anchor()
        lines = [self._line(m) for m in batch]
        if self._earlier is not None:
            await self.mount_all(lines, after=self._earlier)
        else:
            await self.mount_all(lines, before=0 if self.children else None)
        self._oldest = batch[0].id
        await self._sync_earlier()
        self.call_after_refresh(self._keep_reading, reading)

    def _reading(self) -> Reading:
        top = self.scroll_offset.y
        for child in self.children:
            if child is not self._earlier and child.virtual_region.bottom > top:
                return child, child.virtual_region.y - top
        return None

    def _keep_reading(self, reading: Reading) -> None:
        """Scroll so the line that was being read is where it was on screen."""
        if reading is not None and reading[0].parent is self:  # not since replaced by `show`
            line, offset = reading
            self.scroll_to(y=line.virtual_region.y - offset, animate=False, immediate=True)
        self._settling = False

    async def _sync_earlier(self) -> None:
        """The line at the top: there while there is something earlier."""
        if not self._has_earlier():
            if self._earlier is not None:
                await self._earlier.remove()
                self._earlier = None
            return
        if self._earlier is None:
            self._earlier = Earlier(self._earlier_text(), classes="earlier")
            await self.mount(self._earlier, before=0 if self.children else None)
        else:
            self._earlier.update(self._earlier_text())

    def _earlier_text(self) -> str:
        if self._fetching:
            return "↑ fetching earlier messages…"
        count = len(self._unshown)
        if self._on_plane or not count:
            return "↑ earlier messages (click, or Enter here)"
        return f"↑ {count} earlier message{'s' if count != 1 else ''} (click, or Enter here)"

    # ── drawing ────────────────────────────────────────────────────────────

    def part(self, name: str) -> Style:
        """The style of one part of a message line (`stamp`, `who-plane`, …).

        Whole, not partial: a translucent background (`$warning-muted`) only
        shows once blended over the pane's own."""
        return self.get_visual_style(f"conversation--{name}")

    def notify_style_update(self) -> None:
        super().notify_style_update()
        for line in self.query_children(MessageLine):
            line.restyle()

    def _line(self, message: Message) -> MessageLine:
        return MessageLine(message, who_width=self._who_width)

    def _drop_hint(self) -> None:
        if self._hint is not None:
            self._hint.remove()
            self._hint = None

    @staticmethod
    def _empty_hint(agent: str | None) -> Static:
        if agent is None:
            return Static("No agent yet: press ctrl+n to create one.", classes="empty")
        return Static(
            Content(f"Nothing here yet. Type to talk to {agent}, or /help."), classes="empty"
        )
