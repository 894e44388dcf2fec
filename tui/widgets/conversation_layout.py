"""Which line of the conversation is which: its items laid out at a width.

The pane holds its messages, notes, offer, hint and stream as items that
draw themselves (`Item.lines`); this puts them one under the other, `width`
cells wide, and answers what is on line `y`, where an item starts, and the
whole as plain text (what a mouse selection reads). An item's lines are
drawn once per width and kept until it changes (`redraw`).
"""

from __future__ import annotations

from collections.abc import Iterable

from textual.content import Content

from tui.widgets.conversation_items import Item


class Layout:
    """Items top to bottom, laid out `width` cells wide."""

    def __init__(self) -> None:
        self.items: list[Item] = []
        self._width = 0
        self._drawn: dict[int, list[Content]] = {}
        """Each item's lines (by `id`: items need not hash)."""
        self._rows: list[tuple[Item, Content]] | None = None
        self._tops: dict[int, int] = {}

    # ── changing it ────────────────────────────────────────────────────────

    def reset(self, items: Iterable[Item]) -> None:
        self.items = list(items)
        self._drawn.clear()
        self._rows = None

    def insert(self, index: int, items: Iterable[Item]) -> None:
        self.items[index:index] = items
        self._rows = None

    def remove(self, item: Item) -> None:
        if item in self.items:
            self.items.remove(item)
            self._drawn.pop(id(item), None)
            self._rows = None

    def redraw(self, item: Item) -> None:
        """`item` looks different now (opened, restyled, more text)."""
        self._drawn.pop(id(item), None)
        self._rows = None

    def redraw_all(self) -> None:
        self._drawn.clear()
        self._rows = None

    def set_width(self, width: int) -> None:
        if width != self._width:
            self._width = width
            self.redraw_all()

    # ── reading it ─────────────────────────────────────────────────────────

    @property
    def height(self) -> int:
        return len(self._laid_out())

    def line(self, y: int) -> tuple[Item, Content] | None:
        """The item drawn on line `y`, and that line."""
        rows = self._laid_out()
        return rows[y] if 0 <= y < len(rows) else None

    def top(self, item: Item) -> int | None:
        """The line `item` starts on (None if it is not here)."""
        self._laid_out()
        return self._tops.get(id(item))

    def lines_of(self, item: Item) -> list[Content]:
        if (lines := self._drawn.get(id(item))) is None:
            lines = item.lines(self._width)
            self._drawn[id(item)] = lines
        return lines

    def plain(self) -> str:
        return "\n".join(line.plain for _, line in self._laid_out())

    def _laid_out(self) -> list[tuple[Item, Content]]:
        if self._rows is None:
            rows: list[tuple[Item, Content]] = []
            tops: dict[int, int] = {}
            for item in self.items:
                tops[id(item)] = len(rows)
                rows.extend((item, line) for line in self.lines_of(item))
            self._rows, self._tops = rows, tops
        return self._rows
