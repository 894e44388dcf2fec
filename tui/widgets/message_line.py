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

Some lines fold. A tool line shows the first line of its result and opens
to the whole of it (the plane sends the result, compressed as the model read
it, under the first line); a message over `FOLD_CHARS` shows its first
`FOLD_LINES` lines and `20,000 characters · Enter to expand`. A line that
folds can take focus (Tab, shift+Tab from the composer reaches the newest
first), and Enter or a click opens and closes it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
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
FOLD_CHARS = 2_000
"""A message longer than this folds (a pasted log, a long answer)."""
FOLD_LINES = 8
"""Lines a folded message still shows."""


def folds(message: Message) -> bool:
    """Has more than it shows at first: a tool line with its result under
    it, or a message over `FOLD_CHARS`."""
    if message.kind == "tool":
        return "\n" in message.text.strip()
    return message.kind != "cost" and len(message.text) > FOLD_CHARS


def fold_hint(message: Message) -> str:
    """What a folded line says under itself."""
    if message.kind == "tool":
        rest = message.text.strip().count("\n")
        return f"{rest:,} more line{'s' if rest != 1 else ''} · Enter to open"
    return f"{len(message.text):,} characters · Enter to expand"


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
    under itself (a tool call keeps to one line until opened; a long or
    formatted agent answer is drawn from its Markdown)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "fold", "Open / close this line", show=False)
    ]

    def __init__(self, message: Message, *, who_width: int = 6) -> None:
        classes = f"-{message.kind}" + (" -held" if message.held else "")
        if wants_markdown(message):
            classes += " -markdown"
        self.folds = folds(message)
        if self.folds:
            classes += " -folds"
        super().__init__(classes=classes)
        self.can_focus = self.folds
        self.message = message
        self.who_width = who_width
        self.expanded = False
        """Opened to the whole (a tool's result, a long message)."""
        self._wrapped: LRUCache[int, list[Content]] = LRUCache(4)

    def action_fold(self) -> None:
        if self.folds:
            self.expanded = not self.expanded
            self.set_class(self.expanded, "-expanded")
            self._wrapped.clear()
            self.refresh(layout=True)

    def on_click(self, event: events.Click) -> None:
        if self.folds and event.chain == 1:
            self.action_fold()

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
        if badge:  # right after the text, never across a wide screen from it
            first = Content.assemble(first.rstrip(), " ", (badge, self._part("badge")))
        indent = " " * self.text_indent
        return [first, *(Content.assemble(indent, line) for line in lines[1:])]

    def _body_lines(self, room: int) -> list[Content]:
        if self.message.kind == "tool" and not self.expanded:
            body = self._blocks()[0].content
            lines = [body.split("\n")[0].truncate(room, ellipsis=True)]
        else:
            lines = self._all_lines(room)
            if self.folds and not self.expanded:
                lines = lines[:FOLD_LINES]
        if self.folds and not self.expanded:
            lines.append(Content(fold_hint(self.message)).stylize(self._part("fold")))
        return lines

    def _all_lines(self, room: int) -> list[Content]:
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
