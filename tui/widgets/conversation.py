"""The selected agent's conversation, scrolled to the newest message.

The screen sets what it shows (`show` for a whole history, `append` for one
new message, `stream` for an answer as it arrives, `note` for a line that is
this client's own and stored nowhere, like `/help`). It stays anchored to the
bottom unless the operator scrolls up to read.

Only the newest `WINDOW` messages are laid out when an agent is selected;
a line at the top offers the earlier ones (click it, or Home then Enter).
A history of 200 answers costs as much to lay out as it costs to read, and
the screen shows thirty lines.

The pane also owns the styles its lines are drawn with (component classes,
coloured in `app.tcss`): computed once here, not once per message.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.widget import Widget
from textual.widgets import Static

from plane.protocol import Message
from tui.widgets.message_line import MessageLine
from tui.widgets.streaming_answer import StreamingAnswer

WINDOW = 60
"""Messages laid out at first; earlier ones come `WINDOW` at a time."""


class Earlier(Static):
    """`↑ 140 earlier messages`: selecting it lays out the next batch."""


class ConversationPane(VerticalScroll, can_focus=True):
    """Messages top to bottom, oldest first."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "earlier", "Earlier messages", show=False),
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
    }

    def __init__(self, *, name: str | None = None, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.agent: str | None = None
        self._who_width = 6
        self._stream: StreamingAnswer | None = None
        self._hint: Static | None = None
        """The "nothing here yet" line, while there is nothing else."""
        self._unshown: list[Message] = []
        """Older messages not laid out yet, oldest first."""
        self._earlier: Earlier | None = None

    def on_mount(self) -> None:
        self.anchor()

    def show(self, agent: str | None, messages: Iterable[Message]) -> None:
        """Replace everything with `agent`'s messages."""
        self.agent = agent
        self._who_width = min(max(len(agent or ""), 5), 14)
        self._stream = self._hint = self._earlier = None
        self.remove_children()
        messages = list(messages)
        self._unshown, newest = messages[:-WINDOW], messages[-WINDOW:]
        widgets: list[Widget] = [self._line(m) for m in newest]
        if self._unshown:
            self._earlier = Earlier(self._earlier_text(), classes="earlier")
            widgets.insert(0, self._earlier)
        if not widgets:
            self._hint = self._empty_hint(agent)
            widgets.append(self._hint)
        self.mount_all(widgets)
        self.anchor()

    def append(self, message: Message) -> None:
        self._drop_hint()
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

    def on_click(self, event: events.Click) -> None:
        if isinstance(event.widget, Earlier):
            self.action_earlier()

    def action_earlier(self) -> None:
        """Lay out the next batch of earlier messages, above the others."""
        if self._earlier is None or not self._unshown:
            return
        self._unshown, batch = self._unshown[:-WINDOW], self._unshown[-WINDOW:]
        self.release_anchor()
        self.mount_all([self._line(m) for m in batch], after=self._earlier)
        if self._unshown:
            self._earlier.update(self._earlier_text())
        else:
            self._earlier.remove()
            self._earlier = None

    def _earlier_text(self) -> str:
        count = len(self._unshown)
        return f"↑ {count} earlier message{'s' if count != 1 else ''} (click, or Enter here)"

    # ── drawing ────────────────────────────────────────────────────────────

    def part(self, name: str):  # type: ignore[no-untyped-def]
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
        return Static(Content(f"Nothing here yet. Type to talk to {agent}, or /help."),
                      classes="empty")
