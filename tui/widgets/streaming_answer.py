"""An agent's answer while it streams in, shown as it arrives.

It stands in for the message until the plane has the whole answer in its
ledger and sends it as a `message` event; then the screen removes this.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Static


class StreamingAnswer(Horizontal):
    """Set `text` to everything streamed so far."""

    text: reactive[str] = reactive("", layout=True)
    """The answer so far."""

    def __init__(self, agent: str, *, who_width: int = 6) -> None:
        super().__init__(classes="-agent -streaming")
        self.agent = agent
        self.who_width = who_width
        self._body = Static("", classes="body")

    def compose(self) -> ComposeResult:
        yield Static("", classes="stamp")
        who = Static(Content(self.agent).truncate(self.who_width, ellipsis=True), classes="who")
        who.styles.width = self.who_width + 1
        yield who
        yield self._body

    def watch_text(self, text: str) -> None:
        self._body.update(Content(text + "▍"))
