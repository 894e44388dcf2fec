"""Spend over time: the selected agent's day by hour and its last 30 days,
the day's top spenders and the day by model, each figure beside what
compression saved.

Textual's own `Sparkline` rather than textual-plotext: the charts answer
"when did it burn" and "is today unlike the month", which a bar's height
answers; a sparkline takes one line of a terminal, is coloured from the
theme through its two component classes (so every theme stays readable, as
the rows are), and comes with Textual, where plotext would bring a second
plotting library, axes and its own colour scheme for a glance.

A sparkline shows a shape: its lowest bar is the lowest value shown, not
zero, which is why each chart's figures stand beside its heading.

The plane sums (`spend_history`); this screen only draws what it answered.
`f` switches between the agent and the whole fleet.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import ClassVar, Protocol

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Footer, Label, Sparkline, Static

from plane.wire.protocol import SpendHistory, SpendPoint
from plane.wire.words import usd
from tui.link import LinkFailed

BAR_WIDTH = 24
"""The widest top-spender bar, in cells."""


class ReadsSpend(Protocol):
    async def spend_history(self, agent: str | None) -> SpendHistory: ...


def spent_and_saved(points: list[SpendPoint]) -> str:
    """`$1.05 spent · compression saved $0.02` (the saving only when there was one)."""
    spent = sum((p.spent_usd for p in points), Decimal(0))
    saved = sum((p.saved_usd for p in points), Decimal(0))
    line = f"{usd(spent)} spent"
    return line + (f" · compression saved {usd(saved)}" if saved else "")


def top_lines(top: list[SpendPoint], empty: str = "Nobody has spent anything today.") -> list[str]:
    """One line a spender: name, a bar against the most spent, the figures."""
    if not top:
        return [empty]
    width = max(len(p.label) for p in top)
    most = max(p.spent_usd for p in top)
    lines = []
    for point in top:
        cells = max(1, int(point.spent_usd / most * BAR_WIDTH))
        saved = f"  saved {usd(point.saved_usd)}" if point.saved_usd else ""
        bar = "█" * cells
        lines.append(f"{point.label:<{width}}  {bar:<{BAR_WIDTH}}  {usd(point.spent_usd)}{saved}")
    return lines


class SpendScreen(ModalScreen[None]):
    """Dismissed with nothing; reads the plane once each time it is shown."""

    CSS_PATH = "spend.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Back"),
        Binding("f", "fleet", "Agent / fleet"),
    ]

    @dataclass
    class Loaded(Message):
        history: SpendHistory

    @dataclass
    class Unread(Message):
        reason: str

    def __init__(self, plane: ReadsSpend, agent: str | None) -> None:
        super().__init__()
        self.plane = plane
        self.agent = agent
        self._chosen = agent
        """The selected agent, to come back to from the fleet."""

    def compose(self) -> ComposeResult:
        with Vertical(id="panel") as panel:
            panel.border_title = "spend"
            with Horizontal(classes="heading"):
                yield Label("Today by hour (UTC)")
                yield Static("", id="hours-total", classes="figures")
            yield Sparkline([], id="hours", classes="spent")
            yield Sparkline([], id="hours-saved", classes="saved")
            yield Static(_axis(["00", "06", "12", "18", "23"], 72), classes="axis")
            with Horizontal(classes="heading"):
                yield Label("Last 30 days")
                yield Static("", id="days-total", classes="figures")
            yield Sparkline([], id="days", classes="spent")
            yield Sparkline([], id="days-saved", classes="saved")
            yield Static("", id="days-axis", classes="axis")
            with Horizontal(classes="heading"):
                yield Label("Today's top spenders")
            yield Vertical(id="top")
            with Horizontal(classes="heading"):
                yield Label("Today by model")
            yield Vertical(id="models")
            yield Static("", id="note")
        yield Footer()

    def on_mount(self) -> None:
        self.load(self.agent)

    def show(self, history: SpendHistory) -> None:
        """Draw what the plane answered."""
        self.query_one("#panel").border_title = f"spend · {history.agent or 'the fleet'}"
        self.query_one("#hours", Sparkline).data = [float(p.spent_usd) for p in history.hours]
        self.query_one("#hours-saved", Sparkline).data = [float(p.saved_usd) for p in history.hours]
        self.query_one("#hours-total", Static).update(spent_and_saved(history.hours))
        self.query_one("#days", Sparkline).data = [float(p.spent_usd) for p in history.days]
        self.query_one("#days-saved", Sparkline).data = [float(p.saved_usd) for p in history.days]
        self.query_one("#days-total", Static).update(spent_and_saved(history.days))
        if history.days:
            ends = [history.days[0].label[5:], history.days[-1].label[5:]]
            self.query_one("#days-axis", Static).update(_axis(ends, 60))
        for where, lines in (
            ("#top", top_lines(history.top)),
            ("#models", top_lines(history.models, "Nothing was spent on any model today.")),
        ):
            bars = self.query_one(where, Vertical)
            bars.remove_children()
            bars.mount_all(Label(line, classes="spender") for line in lines)
        self.query_one("#note", Static).update("")

    @on(Loaded)
    def _loaded(self, event: Loaded) -> None:
        self.show(event.history)

    @on(Unread)
    def _unread(self, event: Unread) -> None:
        self.query_one("#note", Static).update(event.reason)

    @work(exclusive=True, group="spend", exit_on_error=False)
    async def load(self, agent: str | None) -> None:
        try:
            history = await self.plane.spend_history(agent)
        except LinkFailed as failed:
            self.post_message(self.Unread(f"The spend could not be read: {failed}."))
            return
        self.post_message(self.Loaded(history))

    def action_fleet(self) -> None:
        self.agent = None if self.agent is not None else self._chosen
        self.load(self.agent)

    def action_close(self) -> None:
        self.dismiss(None)


def _axis(labels: list[str], width: int) -> str:
    """Labels spread under a chart `width` cells wide, the first at the left
    edge and the last at the right."""
    if len(labels) < 2:
        return "".join(labels)
    line = [" "] * width
    for n, label in enumerate(labels):
        start = round(n * (width - len(label)) / (len(labels) - 1))
        line[start : start + len(label)] = label
    return "".join(line)
