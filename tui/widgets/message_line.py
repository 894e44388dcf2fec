"""One message of a conversation: time, who, and what was said.

A message is drawn as three columns (time, who, text wrapped under itself),
and a long or formatted agent answer from its Markdown here too (see
markdown_lines.py), not laid out as Textual's Markdown widget. It is not a
widget at all: the conversation pane draws every line itself (see
conversation.py), so selecting an agent mounts, styles and lays out no
widget per message. (Measured: a conversation switch took seconds with a
widget per Markdown block, and still ~35 ms with one per message.)

Each part of a line is coloured by one of the conversation pane's
component classes, picked by kind (`WHO`, `BODY`): one style computation
for the pane rather than one per message, and how each kind reads is still
decided in `app.tcss`. A message that waited for a hold to end reads quiet,
with ` held ` after it. Text is never parsed as markup: an agent can write
`[red]` and it shows as typed.

Some lines fold. A tool line shows the first line of its result and opens
to the whole of it (the plane sends the result, compressed as the model read
it, under the first line); a message over `FOLD_CHARS` shows its first
`FOLD_LINES` lines and `20,000 characters · Enter to expand`. The pane keeps
a cursor on one such line (Tab, shift+Tab), and Enter or a click opens and
closes it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from textual.content import Content
from textual.style import Style

from plane.wire.protocol import ConversationMessage
from plane.wire.words import notice_kind
from tui.formatting import clock_time
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
STACKED = 48
"""Below this many cells, the time and who go on a line of their own above
the text, which takes the whole width less `HANG`: at 40 columns the two
columns took a third of the pane, and every sentence wrapped every few words."""
HANG = 2
"""The text's indent under its time and who, when stacked."""


def folds(message: ConversationMessage) -> bool:
    """Has more than it shows at first: a tool line with its result under
    it, or a message over `FOLD_CHARS`."""
    if message.kind == "tool":
        return "\n" in message.text.strip()
    return message.kind != "cost" and len(message.text) > FOLD_CHARS


def fold_hint(message: ConversationMessage) -> str:
    """What a folded line says under itself."""
    if message.kind == "tool":
        rest = message.text.strip().count("\n")
        return f"{rest:,} more line{'s' if rest != 1 else ''} · Enter to open"
    return f"{len(message.text):,} characters · Enter to expand"


def speaker(message: ConversationMessage) -> str:
    """The name in the second column."""
    if message.kind == "operator":
        return "you"
    if message.kind == "plane":
        return "plane"
    if message.kind == "cost":
        return ""
    return message.agent


def wants_markdown(message: ConversationMessage) -> bool:
    return message.kind == "agent" and (
        len(message.text) >= LONG or MARKDOWN_HINT.search(message.text) is not None
    )


def body_text(message: ConversationMessage) -> str:
    """A cost line is the plane's own words (`$0.03 · 12.4k in · 320 out`,
    `unpriced · …`, a gateway call's model and session), as the CLI shows it."""
    if message.kind == "ask":
        return f"‹ask› {message.text}"
    if message.kind == "tool":
        return f"⚙ {message.text}"
    return message.text


WHO = {"operator": "who-you", "plane": "who-plane"}
"""Which pane style draws the second column, by kind (default `who`)."""
BODY = {"plane": "body-plane", "ask": "body-ask", "cost": "body-quiet", "tool": "body-quiet"}
"""Which pane style draws the text, by kind (default `body`)."""


def look(message: ConversationMessage) -> str:
    """The look of the message's name and text: a notice that says why the
    agent takes no turn (`held`, `paused`) or that it nears its ceiling
    (`warn`) is drawn apart from the plane's routine lines, the held one
    loudest; any other line by its kind."""
    if message.kind == "plane" and (kind := notice_kind(message.text)) is not None:
        return kind
    return message.kind


def who_part(message: ConversationMessage) -> str:
    kind = look(message)
    return f"who-{kind}" if kind != message.kind else WHO.get(kind, "who")


def body_part(message: ConversationMessage) -> str:
    kind = look(message)
    return f"body-{kind}" if kind != message.kind else BODY.get(kind, "body")


Part = Callable[[str], Style | str]
"""The pane's style for a part of a line (`stamp`, `who-plane`, …)."""


def _unstyled(name: str) -> str:
    return ""


class MessageLine:
    """A message drawn as three columns: time, who, and the text wrapped
    under itself (a tool call keeps to one line until opened; a long or
    formatted agent answer is drawn from its Markdown).

    Not a widget: the conversation pane draws its lines (`lines`) among the
    others, and keeps which ones are open. `part` is the pane's style for
    each part (none for a line drawn outside one)."""

    def __init__(
        self, message: ConversationMessage, *, who_width: int = 6, part: Part = _unstyled
    ) -> None:
        self.message = message
        self.who_width = who_width
        self.folds = folds(message)
        self.markdown = wants_markdown(message)
        self.expanded = False
        """Opened to the whole (a tool's result, a long message)."""
        self._style = part

    def fold(self) -> None:
        """Open a line that folds, or close it again."""
        if self.folds:
            self.expanded = not self.expanded

    @property
    def text_indent(self) -> int:
        """Cells before the text: time and who."""
        return STAMP + self.who_width + 1

    def plain(self, width: int = 100) -> str:
        """The message as drawn `width` cells wide, without styles."""
        return "\n".join(line.plain.rstrip() for line in self.lines(width))

    def lines(self, width: int) -> list[Content]:
        """The lines drawn `width` cells wide. Not kept here: the pane's layout
        keeps them (a cache of Textual's here was a ring of lists, a cycle
        only the garbage collector's full passes freed, for every message
        shown)."""
        return self._wrap(width)

    def _blocks(self) -> list[Block]:
        message = self.message
        if self.markdown:
            return blocks(message.text, lambda name: self._part(f"md-{name}"))
        body = Content(body_text(message)).stylize(self._part(body_part(message)))
        return [Block(body)]

    def _wrap(self, width: int) -> list[Content]:
        if width < STACKED:
            return self._stacked(width)
        message = self.message
        badge = " held " if message.held else ""
        room = max(8, width - self.text_indent - (len(badge) + 1 if badge else 0))
        lines = self._body_lines(room)
        stamp = "" if message.kind == "cost" else clock_time(message.at)
        who = Content(speaker(message)).truncate(self.who_width, ellipsis=True)
        first = Content.assemble(
            (stamp.ljust(STAMP), self._part("stamp")),
            who.pad_right(self.text_indent - STAMP - who.cell_length).stylize(
                self._part(who_part(message)), 0, who.cell_length
            ),
            lines[0],
        )
        if badge:  # right after the text, never across a wide screen from it
            first = Content.assemble(first.rstrip(), " ", (badge, self._part("badge")))
        indent = " " * self.text_indent
        return [first, *(Content.assemble(indent, line) for line in lines[1:])]

    def _stacked(self, width: int) -> list[Content]:
        """`14:05 plane  held` on a line, the text under it across the pane
        (a cost line, which has no time or who, only indented)."""
        message = self.message
        lines = [Content.assemble(" " * HANG, line) for line in self._body_lines(width - HANG)]
        if message.kind == "cost":
            return lines
        head = Content.assemble(
            (clock_time(message.at) + " ", self._part("stamp")),
            (speaker(message), self._part(who_part(message))),
        ).truncate(width)
        if message.held:
            head = Content.assemble(head, " ", (" held ", self._part("badge")))
        return [head, *lines]

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
        if name == "body" and self.message.held:
            name = "body-quiet"
        return self._style(name)
