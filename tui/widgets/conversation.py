"""The selected agent's conversation, scrolled to the newest message.

The screen sets what it shows (`show` for a whole history, `append` for one
new message, `stream` for an answer as it arrives, `note` for a line that is
this client's own and stored nowhere, like `/help`). It stays anchored to the
bottom unless the operator scrolls up to read.
"""

from __future__ import annotations

from collections.abc import Iterable

from textual.containers import VerticalScroll
from textual.content import Content
from textual.widgets import Static

from plane.protocol import Message
from tui.widgets.message_line import MessageLine
from tui.widgets.streaming_answer import StreamingAnswer


class ConversationPane(VerticalScroll, can_focus=True):
    """Messages top to bottom, oldest first."""

    def __init__(self, *, name: str | None = None, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.agent: str | None = None
        self._who_width = 6
        self._stream: StreamingAnswer | None = None

    def on_mount(self) -> None:
        self.anchor()

    def show(self, agent: str | None, messages: Iterable[Message]) -> None:
        """Replace everything with `agent`'s messages."""
        self.agent = agent
        self._who_width = min(max(len(agent or ""), 5), 14)
        self._stream = None
        self.remove_children()
        lines = [MessageLine(m, who_width=self._who_width) for m in messages]
        if lines:
            self.mount_all(lines)
        else:
            self.mount(self._empty_hint(agent))
        self.anchor()

    def append(self, message: Message) -> None:
        self.remove_children(".empty")
        self.mount(MessageLine(message, who_width=self._who_width), before=self._stream)

    def stream(self, text: str) -> None:
        """Show the answer so far; empty text ends the stream."""
        if not text:
            if self._stream is not None:
                self._stream.remove()
                self._stream = None
            return
        if self._stream is None and self.agent is not None:
            self.remove_children(".empty")
            self._stream = StreamingAnswer(self.agent, who_width=self._who_width)
            self.mount(self._stream)
        if self._stream is not None:
            self._stream.text = text

    def note(self, text: str) -> None:
        """A line of this client's own (help, a failed request); not stored."""
        self.remove_children(".empty")
        self.mount(Static(Content(text), classes="note"), before=self._stream)

    @staticmethod
    def _empty_hint(agent: str | None) -> Static:
        if agent is None:
            return Static("No agent yet: press ctrl+n to create one.", classes="empty")
        return Static(Content(f"Nothing here yet. Type to talk to {agent}, or /help."),
                      classes="empty")
