"""Bars stacked in layers, one bar a day: the fleet's spend by agent or model.

Textual's `Sparkline` draws one series and cannot stack; textual-plotext
can (`stacked_bar`), but tried on 30 days in 60 cells it gave bars of
uneven width, drew its legend over the bars, labelled its axis in floats
and coloured from its own palette (theme colours only as RGB passed in by
hand), for two more dependencies. This widget does what `Sparkline` does
for its one series, for several: data in, each layer's colour from a
component class that the stylesheet sets from theme variables, so every
theme stays readable, as the rows do.

Unlike a sparkline, the bars start at zero: a layer's height is its share
of the tallest day's total, to the nearest eighth of a cell at the top of
a bar (an amount too small to draw still shows one eighth: spent is never
drawn as nothing). A cell takes the colour of the layer in its filled
part's middle.
"""

from __future__ import annotations

from decimal import Decimal
from typing import ClassVar

from rich.segment import Segment
from textual.reactive import reactive
from textual.strip import Strip
from textual.widget import Widget

LAYERS = 6
"""Colours there are: for the plane's five apart and the rest (`SpendSeries.folded`)."""

_EIGHTHS = " ▁▂▃▄▅▆▇█"


def layer_class(n: int, rest: bool = False) -> str:
    """The component class (and, for a legend, the CSS class) of layer `n`,
    0 the bottom: its own colour, or the last one for the rest (`rest`);
    layers past the colours there are for them share the one before it."""
    return f"stacked--layer-{LAYERS if rest else min(n, LAYERS - 2) + 1}"


class StackedBars(Widget):
    """`data[layer][day]`, the layers bottom first; a column `BAR` wide a day,
    a blank column after it."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {f"stacked--layer-{n + 1}" for n in range(LAYERS)}

    DEFAULT_CSS = """
    StackedBars {
        height: 8;
    }
    """

    data: reactive[list[list[Decimal]]] = reactive(list, layout=False)
    rest: reactive[bool] = reactive(False)
    """The top layer is the rest, drawn in the rest's colour."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)

    def render_line(self, y: int) -> Strip:
        data = self.data
        height = self.size.height
        if not data or not data[0] or height <= 0:
            return Strip.blank(self.size.width)
        days = len(data[0])
        totals = [sum((layer[d] for layer in data), Decimal(0)) for d in range(days)]
        most = max(totals)
        row = height - 1 - y  # 0 at the bottom
        base = self.rich_style  # the widget's own background under every cell
        segments: list[Segment] = []
        for day in range(days):
            glyph, style = " ", base
            if most > 0 and totals[day] > 0:
                tops = layer_tops([layer[day] for layer in data], most, height * 8)
                filled = min(8, tops[-1] - row * 8)
                if filled > 0:
                    middle = row * 8 + filled / 2
                    layer = next(n for n, top in enumerate(tops) if middle < top)
                    glyph, style = (
                        _EIGHTHS[filled],
                        self.get_component_rich_style(
                            layer_class(layer, self.rest and layer == len(data) - 1)
                        ),
                    )
            segments += [Segment(glyph, style), Segment(" ", base)]
        strip = Strip(segments).crop(0, self.size.width)
        return strip.extend_cell_length(self.size.width, base)


def layer_tops(amounts: list[Decimal], most: Decimal, eighths: int) -> list[int]:
    """Where each layer ends, in eighths of a cell from the bottom: the
    running totals scaled to `eighths` for `most`, rounded (the top at
    least one eighth)."""
    tops: list[int] = []
    running = Decimal(0)
    for amount in amounts:
        running += amount
        tops.append(round(running / most * eighths))
    tops[-1] = max(tops[-1], 1)
    return tops
