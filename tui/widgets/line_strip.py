"""One line of `Content` painted as a `Strip`, for a widget that draws its
own lines (Textual's line API), as `Content`'s own rendering does it: each
character marked with where it is (`offset`), which a mouse selection
reads, so dragging across the lines selects their text."""

from __future__ import annotations

from rich.segment import Segment
from textual.content import Content
from textual.strip import Strip
from textual.style import Style


def line_strip(line: Content, base: Style, y: int, width: int) -> Strip:
    """`line` painted over `base`, `width` cells, as line `y` of the whole."""
    segments: list[Segment] = []
    x = 0
    for text, style in line.render(base, end=""):
        segments.append(Segment(text, (base + style).rich_style_with_offset(x, y)))
        x += len(text)
    strip = Strip(segments, line.cell_length)
    return strip.extend_cell_length(width, base.rich_style).crop(0, width)
