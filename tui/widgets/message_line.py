"""One message of a conversation: time, who, and what was said.

A message is one widget that draws its own three columns (time, who, text
wrapped under itself), not a row of three widgets, and a long or formatted
agent answer is drawn from its Markdown here too (see markdown_lines.py),
not laid out as Textual's Markdown widget: a history of 60 answers is then
60 widgets for the layout to measure, not several hundred. (Measured: a
conversation switch took seconds before.)

The kind of message is a class on the line (`-operator`, `-agent`,
`-plane`, `-ask`, `-cost`, `-tool`, `-markdown`, and `-held` for what waited
for a hold to end). Each part of a line is coloured by one of the
conversation pane's component classes, picked by kind (`WHO`, `BODY`): one
style computation for the pane rather than one per message, and how each
kind reads is still decided in `app.tcss`. Text is never parsed as markup:
an agent can write `[red]` and it shows as typed.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from textual.cache import LRUCache
from textual.content import Content
from textual.geometry import Size
from textual.style import Style
from textual.widget import Widget

from plane.wire.protocol import Message
from tui.formatting import clock_time, usage_line
from tui.markdown_lines import Block, blocks

MARKDOWN_HINT = re.compile(r"(^|\n)(#{1,6} |[-*] |\d+\. |```|> )|\*\*|`[^`]+`|\n\n")
LONG = 240
"""An agent answer this long (or with Markdown in it) renders as Markdown."""
STAMP = 6
"""`14:02 `"""


def speaker(message: Message) -> str:
    """The name in the second column."""
    if message.kind == "operator":
        return "you"
    if message.kind == "plane":
        return "plane"
    if message.kind == "cost":
        return ""
    return message.agent


def wants_markdown(message: Message) -> bool:
    return message.kind == "agent" and (
        len(message.text) >= LONG or MARKDOWN_HINT.search(message.text) is not None
    )


def body_text(message: Message) -> str:
    if message.kind == "cost" and (message.cost_usd is not None or message.usage is not None):
        return usage_line(message.cost_usd, message.usage)
    if message.kind == "ask":
        return f"‹ask› {message.text}"
    if message.kind == "tool":
        return f"⚙ {message.text}"
    return message.text


WHO = {"operator": "who-you", "plane": "who-plane"}
"""Which pane style draws the second column, by kind (default `who`)."""
BODY = {"plane": "body-plane", "ask": "body-ask", "cost": "body-quiet", "tool": "body-quiet"}
"""Which pane style draws the text, by kind (default `body`)."""


class MessageLine(Widget):
    """A message drawn as three columns: time, who, and the text wrapped
    under itself (a tool call keeps to one line; a long or formatted agent
    answer is drawn from its Markdown)."""

    def __init__(self, message: Message, *, who_width: int = 6) -> None:
        classes = f"-{message.kind}" + (" -held" if message.held else "")
        if wants_markdown(message):
            classes += " -markdown"
        super().__init__(classes=classes)
        self.message = message
        self.who_width = who_width
        self._wrapped: LRUCache[int, list[Content]] = LRUCache(4)

    @property
    def text_indent(self) -> int:
        """Cells before the text: time and who. (Not `gutter`: Textual reads a
        widget's `gutter` as its padding and border, to place the mouse.)"""
        return STAMP + self.who_width + 1

    def plain(self, width: int = 100) -> str:
        """The message as drawn `width` cells wide, without styles."""
        return "\n".join(line.plain.rstrip() for line in self._lines(width))

    def render(self) -> Content:
        return Content("\n").join(self._lines(self.size.width))

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self._lines(width))

    def restyle(self) -> None:
        """The pane's styles changed (a new theme): draw again with them."""
        self._wrapped.clear()
        self.refresh(layout=True)

    def _lines(self, width: int) -> list[Content]:
        if (lines := self._wrapped.get(width)) is None:
            lines = self._wrap(width)
            self._wrapped[width] = lines
        return lines

    def _blocks(self) -> list[Block]:
        message = self.message
        if self.has_class("-markdown"):
            return blocks(message.text, lambda name: self._part(f"md-{name}"))
        body = Content(body_text(message)).stylize(self._part(BODY.get(message.kind, "body")))
        return [Block(body)]

    def _wrap(self, width: int) -> list[Content]:
        message = self.message
        badge = " held " if message.held else ""
        room = max(8, width - self.text_indent - (len(badge) + 1 if badge else 0))
        lines = self._body_lines(room)
        stamp = "" if message.kind == "cost" else clock_time(message.at)
        who = Content(speaker(message)).truncate(self.who_width, ellipsis=True)
        first = Content.assemble(
            (stamp.ljust(STAMP), self._part("stamp")),
            who.pad_right(self.text_indent - STAMP - who.cell_length).stylize(
                self._part(WHO.get(message.kind, "who"))
            ),
            lines[0],
        )
        if badge:
            gap = max(1, width - first.cell_length - len(badge))
            first = Content.assemble(first, " " * gap, (badge, self._part("badge")))
        indent = " " * self.text_indent
        return [first, *(Content.assemble(indent, line) for line in lines[1:])]

    def _body_lines(self, room: int) -> list[Content]:
        if self.message.kind == "tool":
            body = self._blocks()[0].content
            return [body.split("\n")[0].truncate(room, ellipsis=True)]
        lines: list[Content] = []
        marker = self._part("md-bullet")
        for block in self._blocks():
            if block.gap and lines:
                lines.append(Content(""))
            inner = max(4, room - len(block.first))
            if block.wrap:
                wrapped = block.content.wrap(inner)
            else:
                wrapped = [line.truncate(inner) for line in block.content.split("\n")]
            for number, line in enumerate(wrapped or [Content("")]):
                prefix = block.first if number == 0 else block.rest
                lines.append(Content.assemble((prefix, marker), line))
        return lines or [Content("")]

    def _part(self, name: str) -> Style | str:
        """The pane's style for a part (see `ConversationPane.part`, which imports
        this module); none for a line drawn outside one, or not yet mounted."""
        if name == "body" and self.message.held:
            name = "body-quiet"
        part: Callable[[str], Style] | None = getattr(self.parent, "part", None)
        return part(name) if part is not None else ""
