"""The conversation's lines that are not messages: a note, the hint, the offer.

Each draws itself as lines of `Content` for a width, as a message does
(`MessageLine.lines`): the pane lays them all out together and paints
them line by line (see conversation.py).
"""

from __future__ import annotations

from typing import Protocol

from textual.content import Content
from textual.style import Style

from tui.widgets.message_line import Part

INDENT = 6
"""Cells before a note or the offer: under the text, past the time."""


class Item(Protocol):
    """Something the pane draws: a message, a note, the offer, the hint, a stream."""

    def lines(self, width: int) -> list[Content]: ...


def wrapped(text: str, width: int, style: Style | str, *, indent: int = 0) -> list[Content]:
    """`text` wrapped `width` cells wide, `indent` cells in; never markup."""
    body = Content(text).stylize(style) if style else Content(text)
    pad = " " * indent
    return [Content.assemble(pad, line) for line in body.wrap(max(4, width - indent))]


class Note:
    """A line of this client's own (help, a failed request); stored nowhere."""

    def __init__(self, text: str, part: Part) -> None:
        self.text = text
        self._part = part

    def lines(self, width: int) -> list[Content]:
        return wrapped(self.text, width, self._part("note"), indent=INDENT)


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
