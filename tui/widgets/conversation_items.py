"""The conversation's lines that are not messages: a note, the hint, the offer.

Each draws itself as lines of `Content` for a width, as a message does
(`MessageLine.lines`): the pane lays them all out together and paints
them line by line (see conversation.py).
"""

from __future__ import annotations

import re
from typing import Protocol

from textual.content import Content
from textual.style import Style

from tui.widgets.message_line import Part

INDENT = 6
"""Cells before a note or the offer: under the text, past the time."""
COLUMN_GAP = re.compile(r"\S {2,}(?=\S)")
"""Two spaces or more between words: where a line in two columns (`/help`'s) starts its second."""
COLUMN_ROOM = 16
"""Cells a second column needs to wrap under itself; with less, its line wraps under its start."""


class Item(Protocol):
    """Something the pane draws: a message, a note, the offer, the hint, a stream."""

    def lines(self, width: int) -> list[Content]: ...


def wrapped(text: str, width: int, style: Style | str, *, indent: int = 0) -> list[Content]:
    """`text` wrapped `width` cells wide, `indent` cells in; never markup."""
    body = Content(text).stylize(style) if style else Content(text)
    pad = " " * indent
    return [Content.assemble(pad, line) for line in body.wrap(max(4, width - indent))]


def in_columns(text: str, width: int, style: Style | str, *, indent: int) -> list[Content]:
    """`text` wrapped as `wrapped` does, except that a line in two columns
    (`/limit [AMOUNT|off]  show today's spend …`) goes on under its second
    column, as a help page does, not under its first."""
    lines: list[Content] = []
    for line in text.split("\n"):
        gap = COLUMN_GAP.search(line)
        column = gap.end() if gap else 0
        room = width - indent - column
        if not column or room < COLUMN_ROOM:
            lines += wrapped(line, width, style, indent=indent)
            continue
        head = Content(line[:column]).stylize(style)
        rest = Content(line[column:]).stylize(style).wrap(room)
        lines += [
            Content.assemble(" " * indent, head if at == 0 else " " * column, part)
            for at, part in enumerate(rest)
        ]
    return lines


class Note:
    """A line of this client's own (help, a failed request); stored nowhere."""

    def __init__(self, text: str, part: Part) -> None:
        self.text = text
        self._part = part

    def lines(self, width: int) -> list[Content]:
        return in_columns(self.text, width, self._part("note"), indent=INDENT)


class Hint:
    """ "Nothing here yet": there while there is nothing else, a blank line each side."""

    def __init__(self, text: str, part: Part) -> None:
        self.text = text
        self._part = part

    def lines(self, width: int) -> list[Content]:
        return [Content(""), *wrapped(self.text, width, self._part("note")), Content("")]


class Offer:
    """`↑ 140 earlier messages`: Enter or a click on it lays out the next batch."""

    def __init__(self, text: str, part: Part) -> None:
        self.text = text
        self.hovered = False
        self._part = part

    def lines(self, width: int) -> list[Content]:
        style = "earlier-hover" if self.hovered else "earlier"
        return wrapped(self.text, width, self._part(style), indent=INDENT)
