"""Spend over time: the selected agent's day by hour and its last 30 days,
the day's top spenders, the day by model and by tool (what each call's cost
is attributed to: each tool's results in its input, its prompt, its
messages, its answers), each figure beside what compression saved.

Textual's own `Sparkline` rather than textual-plotext: the charts answer
"when did it burn" and "is today unlike the month", which a bar's height
answers; a sparkline takes one line of a terminal, is coloured from the
theme through its two component classes (so every theme stays readable, as
the rows are), and comes with Textual, where plotext would bring a second
plotting library, axes and its own colour scheme for a glance.

A sparkline shows a shape: its lowest bar is the lowest value shown, not
zero, which is why each chart's figures stand beside its heading.

The fleet's view adds its last 30 days stacked by agent, by model or, when
agents.yaml has groups, by group (`b` cycles), a layer for each of the five
that spent the most and one for the rest (`StackedBars`, which says why not
textual-plotext), with a legend of each layer's spent and saved.

The plane sums (`spend_history`, `spend_stack`); this screen only draws
what it answered. `f` switches between the agent and the whole fleet.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.signal import Signal
from textual.timer import Timer
from textual.widgets import Footer, Label, Sparkline, Static

from plane.wire.protocol import (
    AgentState,
    SpendHistory,
    SpendHistoryReply,
    SpendPoint,
    SpendSeries,
    SpendStack,
    SpendStackReply,
    StackBy,
)
from plane.wire.words import UNPRICED, call_count, usd
from tui.link import Asks, LinkFailed
from tui.screens.styled import StyledOnce
from tui.widgets.stacked_bars import StackedBars, layer_class

BAR_WIDTH = 24
"""The widest top-spender bar, in cells."""
REREAD_S = 0.5
"""While open, the charts are read again at most this often, when spend moves."""


def spent_and_saved(points: list[SpendPoint]) -> str:
    """`$1.05 spent · compression saved $0.02` (the saving only when there was one)."""
    spent = sum((p.spent_usd for p in points), Decimal(0))
    saved = sum((p.saved_usd for p in points), Decimal(0))
    line = f"{with_unpriced(spent, sum(p.unpriced_calls for p in points))} spent"
    return line + (f" · compression saved {usd(saved)}" if saved else "")


def with_unpriced(spent: Decimal, calls: int) -> str:
    """`$1.05`, or `$1.05 + unpriced (2 calls)`: calls no price is known for
    cost what is not known, never nothing."""
    if not calls:
        return usd(spent)
    unpriced = f"{UNPRICED} ({call_count(calls)})"
    return f"{usd(spent)} + {unpriced}" if spent else unpriced


def top_lines(top: list[SpendPoint], empty: str = "Nobody has spent anything today.") -> list[str]:
    """One line a spender: name, a bar against the most spent, the figures."""
    if not top:
        return [empty]
    width = max(len(p.label) for p in top)
    most = max(p.spent_usd for p in top)
    lines = []
    for point in top:
        cells = max(1, int(point.spent_usd / most * BAR_WIDTH)) if most else 1
        saved = f"  saved {usd(point.saved_usd)}" if point.saved_usd else ""
        bar = "█" * cells
        figure = with_unpriced(point.spent_usd, point.unpriced_calls)
        lines.append(f"{point.label:<{width}}  {bar:<{BAR_WIDTH}}  {figure}{saved}")
    return lines


def legend_lines(series: list[SpendSeries]) -> list[str]:
    """One line a layer, the bottom one first: its swatch, name (the rest
    with how many it sums), and its spent and saved over the days."""
    if not series:
        return ["Nothing was spent in the last 30 days."]
    names = [s.label if not s.folded else f"{s.label} ({s.folded})" for s in series]
    width = max(len(name) for name in names)
    lines = []
    for name, layer in zip(names, series, strict=True):
        spent = sum((p.spent_usd for p in layer.days), Decimal(0))
        saved = sum((p.saved_usd for p in layer.days), Decimal(0))
        unpriced = sum(p.unpriced_calls for p in layer.days)
        kept = f"  saved {usd(saved)}" if saved else ""
        lines.append(f"█ {name:<{width}}  {with_unpriced(spent, unpriced)}{kept}")
    return lines


def day_totals(series: list[SpendSeries]) -> list[SpendPoint]:
    """Every layer's day summed: the whole fleet's day."""
    if not series:
        return []
    return [
        SpendPoint(
            label=points[0].label,
            spent_usd=sum((p.spent_usd for p in points), Decimal(0)),
            saved_usd=sum((p.saved_usd for p in points), Decimal(0)),
            unpriced_calls=sum(p.unpriced_calls for p in points),
        )
        for points in zip(*(s.days for s in series), strict=True)
    ]


class SpendScreen(StyledOnce, ModalScreen[None]):
    """Dismissed with nothing; reads the plane when shown, and again when
    spend moves while it is open."""

    CSS_PATH = Path(__file__).with_name("spend.tcss")

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Back"),
        Binding("f", "fleet", "Agent / fleet"),
        Binding("b", "stack_by", "By agent / model / group"),
    ]

    @dataclass
    class Loaded(Message):
        history: SpendHistoryReply

    @dataclass
    class Stacked(Message):
        stack: SpendStackReply

    @dataclass
    class Unread(Message):
        reason: str

    def __init__(
        self,
        plane: Asks,
        agent: str | None,
        spend_moved: Signal[AgentState] | None = None,
        *,
        grouped: bool = False,
    ) -> None:
        """`spend_moved`: said when an agent's spend changes (the store's
        `agent_changed`): the charts are read again while they are open.
        `grouped`: the plane has groups of agents, a stack of their own."""
        super().__init__()
        self.plane = plane
        self.agent = agent
        self._spend_moved = spend_moved
        self._reread: Timer | None = None
        self._chosen = agent
        """The selected agent, to come back to from the fleet."""
        self.by: StackBy = "agent"
        """What the fleet's 30 days are stacked by."""
        self._stacks: tuple[StackBy, ...] = (
            ("agent", "model", "group") if grouped else ("agent", "model")
        )

    def compose(self) -> ComposeResult:
        # Scrolled by the keyboard too (↑ ↓ PgUp PgDn Home End): at 80x24 the
        # fleet's day by model, by tool and its stacked days are below the screen.
        with VerticalScroll(id="panel") as panel:
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
            with Horizontal(classes="heading"):
                yield Label("Today by tool")
            yield Vertical(id="tools")
            with Vertical(id="stack"):
                with Horizontal(classes="heading"):
                    yield Label("", id="stack-title")
                    yield Static("", id="stack-total", classes="figures")
                yield StackedBars(id="stacked")
                yield Sparkline([], id="stack-saved", classes="saved")
                yield Static("", id="stack-axis", classes="axis")
                yield Vertical(id="legend")
            yield Static("", id="note")
        yield Footer()

    def on_mount(self) -> None:
        self.load(self.agent)
        self._show_stack()
        if self._spend_moved is not None:
            self._spend_moved.subscribe(self, self._moved)

    def _moved(self, agent: AgentState) -> None:
        """Spend changed (a call settled, an estimate became a cost): read it
        again, at most once per `REREAD_S` however fast the changes come.
        A snapshot that stayed as opened showed a call in flight at its
        estimate long after it had settled."""
        if self._reread is None:
            self._reread = self.set_timer(REREAD_S, self._read_again)

    def _read_again(self) -> None:
        self._reread = None
        self.load(self.agent)
        if self.agent is None:
            self.load_stack(self.by)

    def show(self, history: SpendHistoryReply) -> None:
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
            ("#tools", top_lines(history.tools, "Nothing was spent today.")),
        ):
            bars = self.query_one(where, Vertical)
            bars.remove_children()
            bars.mount_all(Label(line, classes="spender") for line in lines)
        self.query_one("#note", Static).update("")

    def show_stack(self, stack: SpendStackReply) -> None:
        """Draw the fleet's days stacked, as the plane answered."""
        self.query_one("#stack-title", Label).update(f"Last 30 days by {stack.by}")
        bars = self.query_one("#stacked", StackedBars)
        bars.rest = bool(stack.series) and stack.series[-1].folded > 0
        bars.data = [[p.spent_usd for p in layer.days] for layer in stack.series]
        days = day_totals(stack.series)
        self.query_one("#stack-saved", Sparkline).data = [float(p.saved_usd) for p in days]
        self.query_one("#stack-total", Static).update(spent_and_saved(days))
        ends = [days[0].label[5:], days[-1].label[5:]] if days else []
        self.query_one("#stack-axis", Static).update(_axis(ends, 60))
        legend = self.query_one("#legend", Vertical)
        legend.remove_children()
        classes = [f"spender {layer_class(n, s.folded > 0)}" for n, s in enumerate(stack.series)]
        lines = legend_lines(stack.series)
        legend.mount_all(
            Label(line, classes=kind)
            for line, kind in zip(lines, classes or ["spender"], strict=True)
        )
        self.query_one("#note", Static).update("")

    @on(Loaded)
    def _loaded(self, event: Loaded) -> None:
        self.show(event.history)

    @on(Stacked)
    def _stacked(self, event: Stacked) -> None:
        if event.stack.by == self.by:  # not one asked for before a switch
            self.show_stack(event.stack)

    @on(Unread)
    def _unread(self, event: Unread) -> None:
        self.query_one("#note", Static).update(event.reason)

    @work(exclusive=True, group="spend", exit_on_error=False)
    async def load(self, agent: str | None) -> None:
        try:
            history = await self.plane.request(SpendHistory(agent=agent))
        except LinkFailed as failed:
            why = str(failed).rstrip(".")  # the plane's refusal ends in its own stop
            self.post_message(self.Unread(f"The spend could not be read: {why}."))
            return
        self.post_message(self.Loaded(history))

    @work(exclusive=True, group="stack", exit_on_error=False)
    async def load_stack(self, by: StackBy) -> None:
        try:
            stack = await self.plane.request(SpendStack(by=by))
        except LinkFailed as failed:
            why = str(failed).rstrip(".")  # an older plane's refusal ends in its own stop
            self.post_message(self.Unread(f"The fleet's days could not be read: {why}."))
            return
        self.post_message(self.Stacked(stack))

    def _show_stack(self) -> None:
        """The stacked days belong to the fleet's view: shown (and read) there."""
        fleet = self.agent is None
        self.query_one("#stack").display = fleet
        self.refresh_bindings()
        if fleet:
            self.load_stack(self.by)

    def check_action(self, action: str, parameters: tuple[Any, ...]) -> bool | None:
        return action != "stack_by" or self.agent is None

    def action_fleet(self) -> None:
        self.agent = None if self.agent is not None else self._chosen
        self.load(self.agent)
        self._show_stack()

    def action_stack_by(self) -> None:
        """agent → model → group (with groups) → agent."""
        self.by = self._stacks[(self._stacks.index(self.by) + 1) % len(self._stacks)]
        self.load_stack(self.by)

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
