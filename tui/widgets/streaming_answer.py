"""An agent's answer while it streams in, shown as it arrives.

It stands in for the message until the plane has the whole answer in its
ledger and sends it as a `message` event; then the screen ends it. Drawn
as a message is (no time yet), quiet, with `▍` where the next words come.
"""

from __future__ import annotations

from textual.content import Content

from tui.widgets.message_line import HANG, STACKED, STAMP, Part


class StreamingAnswer:
    """Set `text` to everything streamed so far."""

    def __init__(self, agent: str, part: Part, *, who_width: int = 6) -> None:
        self.agent = agent
        self.who_width = who_width
        self.text = ""
        """The answer so far."""
        self._part = part

    def lines(self, width: int) -> list[Content]:
        body = Content(self.text + "▍").stylize(self._part("body-quiet"))
        if width < STACKED:  # as a message is drawn at this width: who above the text
            who = Content(self.agent).stylize(self._part("who")).truncate(width)
            wrapped = body.wrap(max(8, width - HANG)) or [Content("")]
            return [who, *(Content.assemble(" " * HANG, line) for line in wrapped)]
        indent = STAMP + self.who_width + 1
        lines = body.wrap(max(8, width - indent)) or [Content("")]
        who = Content(self.agent).truncate(self.who_width, ellipsis=True)
        first = Content.assemble(
            " " * STAMP, who.pad_right(indent - STAMP - who.cell_length).stylize(self._part("who"))
        )
        return [
            Content.assemble(first, lines[0]),
            *(Content.assemble(" " * indent, line) for line in lines[1:]),
        ]
