"""The spend screen (ctrl+g): against a real plane through the real link,
and as an SVG snapshot fed a fixed `spend_history` answer."""

from __future__ import annotations

import colorsys
import itertools
import threading
from collections.abc import Callable
from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from rich.color import Color as RichColor
from textual.color import Color
from textual.widgets import Sparkline

from plane.wire.protocol import (
    Request,
    SpendHistory,
    SpendHistoryReply,
    SpendPoint,
    SpendSeries,
    SpendStack,
    SpendStackReply,
    StackBy,
    Usage,
)
from tests.tui.conftest import feed, settle
from tests.tui.scenes import fleet
from tests.tui.test_live import SIZE, app_for, has_row, type_line, until
from tests.tui.test_snapshots import offline_app
from tui.app import PlaneApp
from tui.link import LinkFailed
from tui.screens.spend import SpendScreen, legend_lines, top_lines
from tui.widgets.composer import Composer
from tui.widgets.stacked_bars import StackedBars, layer_tops


def shown(app, widget: str) -> str:
    return str(app.screen.query_one(widget).render())


async def spend_then_open_the_charts(plane, app, pilot) -> None:
    """demo spends $0.30 in a real turn; then ctrl+g opens its charts."""
    await until(pilot, lambda: has_row(app, "scout") and app.main_screen.selected == "demo")
    plane.llm.reply("Spent some.", usage=Usage(input_tokens=300))
    await type_line(pilot, "spend")
    await until(pilot, lambda: not plane.crew.workers["demo"].working and plane.llm.pending == 0)
    await plane.quiet()
    await pilot.press("ctrl+g")
    await until(pilot, lambda: isinstance(app.screen, SpendScreen))


@pytest.mark.slow
async def test_ctrl_g_shows_the_selected_agents_spend_and_f_the_fleets(start_plane) -> None:
    plane = await start_plane()
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await spend_then_open_the_charts(plane, app, pilot)
        await until(pilot, lambda: shown(app, "#hours-total") == "$0.30 spent")
        assert app.screen.query_one("#panel").border_title == "spend · demo"
        assert shown(app, "#days-total") == "$0.30 spent"
        hours = app.screen.query_one("#hours", Sparkline).data
        assert hours is not None and hours[12] == 0.3 and sum(hours) == 0.3  # noon UTC
        spenders = [str(label.render()) for label in app.screen.query("#top .spender")]
        assert spenders == ["demo  ████████████████████████  $0.30"]
        models = [str(label.render()) for label in app.screen.query("#models .spender")]
        assert models == ["scripted-model  ████████████████████████  $0.30"]
        await pilot.press("f")
        await until(
            pilot, lambda: app.screen.query_one("#panel").border_title == "spend · the fleet"
        )
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, SpendScreen))


@pytest.mark.slow
async def test_the_charts_follow_a_call_that_settles_while_they_are_open(start_plane) -> None:
    """Opened while demo's call is in flight, the charts show its estimate;
    once it settles, its cost, without closing and opening them again."""
    plane = await start_plane()
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: has_row(app, "scout") and app.main_screen.selected == "demo")
        settle = threading.Event()  # in flight until the estimate has been seen
        plane.llm.reply("Spent.", usage=Usage(input_tokens=300), until=settle)
        await type_line(pilot, "spend")
        await until(pilot, lambda: len(plane.llm.requests) == 1)
        await pilot.press("ctrl+g")
        await until(pilot, lambda: isinstance(app.screen, SpendScreen))
        await until(pilot, lambda: shown(app, "#hours-total").endswith("spent"))
        assert shown(app, "#hours-total") != "$0.30 spent", "the estimate, while in flight"
        settle.set()
        await until(pilot, lambda: shown(app, "#hours-total") == "$0.30 spent", within=30)
        assert isinstance(app.screen, SpendScreen), "still open: read again, not reopened"


async def test_charts_the_plane_cannot_add_up_say_its_one_sentence(start_plane) -> None:
    """A call whose cost no plane wrote: the plane refuses the charts naming
    the row, and the screen, open and not crashed, says that sentence (one,
    its stop not doubled)."""
    plane = await start_plane()
    await plane.db.write(
        lambda conn: conn.execute(
            "INSERT INTO calls (id, agent, day, at, provider, model, cost_usd, price_source,"
            " status) VALUES (7, 'demo', ?, ?, 'scripted', 'scripted-model', 'abc', 'table',"
            " 'settled')",
            (plane.clock.now().date().isoformat(), plane.clock.now().isoformat()),
        )
    )
    refused = (
        "The store's calls row for call 7 of demo has cost_usd 'abc', which is not an amount"
        " in dollars: correct or delete that row (what the plane cannot read of its money is"
        " never taken for no ceiling or no cost)."
    )
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.main_screen.selected == "demo")
        await pilot.press("ctrl+g")
        await until(pilot, lambda: "could not be read" in shown(app, "#note"))
        assert shown(app, "#note") == f"The spend could not be read: {refused}"
        assert isinstance(app.screen, SpendScreen)


def test_top_spenders_are_bars_against_the_most_with_what_was_saved() -> None:
    top = [
        SpendPoint(label="burner", spent_usd=Decimal("2"), saved_usd=Decimal("0.31")),
        SpendPoint(label="demo", spent_usd=Decimal("0.5")),
        SpendPoint(label="tiny", spent_usd=Decimal("0.001")),
    ]
    assert top_lines(top) == [
        "burner  ████████████████████████  $2.00  saved $0.31",
        "demo    ██████                    $0.50",
        "tiny    █                         <$0.01",
    ]
    assert top_lines([]) == ["Nobody has spent anything today."]


def test_a_model_with_no_price_reads_unpriced_never_as_nothing_spent() -> None:
    models = [
        SpendPoint(label="gpt-a", spent_usd=Decimal("0.30")),
        SpendPoint(label="mystery", spent_usd=Decimal(0), unpriced_calls=2),
    ]
    assert top_lines(models) == [
        "gpt-a    ████████████████████████  $0.30",
        "mystery  █                         unpriced (2 calls)",
    ]
    alone = [SpendPoint(label="mystery", spent_usd=Decimal(0), unpriced_calls=1)]
    assert top_lines(alone) == ["mystery  █                         unpriced (1 call)"]


def test_a_header_over_unpriced_calls_never_says_nothing_was_spent() -> None:
    from tui.screens.spend import spent_and_saved

    hours = [
        SpendPoint(label="11", spent_usd=Decimal("0.30")),
        SpendPoint(label="12", spent_usd=Decimal(0), unpriced_calls=2),
    ]
    assert spent_and_saved(hours) == "$0.30 + unpriced (2 calls) spent"
    assert spent_and_saved(hours[1:]) == "unpriced (2 calls) spent"
    assert spent_and_saved(hours[:1]) == "$0.30 spent"


class _Answers:
    """What the plane answered, frozen (the snapshot's picture must not move)."""

    async def request(self, asked: Request[Any]) -> Any:
        """As the link answers: each request the screen makes, by its method here."""
        if isinstance(asked, SpendHistory):
            return await self.spend_history(asked.agent)
        if isinstance(asked, SpendStack):
            return await self.spend_stack(asked.by)
        raise AssertionError(f"the spend screen asked for {asked.type!r}")

    async def spend_stack(self, by: StackBy) -> SpendStackReply:
        raise AssertionError("an agent's charts read no stacked days")

    async def spend_history(self, agent: str | None) -> SpendHistoryReply:
        hourly = {9: "0.12", 10: "0.40", 11: "0.95", 12: "0.30", 14: "1.20", 15: "0.80"}
        saved = {10: "0.05", 11: "0.22", 14: "0.31"}
        return SpendHistoryReply(
            id=1,
            day=date(2025, 3, 14),
            agent=agent,
            hours=[
                SpendPoint(
                    label=f"{h:02d}",
                    spent_usd=Decimal(hourly.get(h, "0")),
                    saved_usd=Decimal(saved.get(h, "0")),
                )
                for h in range(24)
            ],
            days=[
                SpendPoint(
                    label=f"2025-{2 if d < 16 else 3:02d}-{(d + 13) % 28 + 1:02d}",
                    spent_usd=Decimal((d * 37) % 11) / 2,
                    saved_usd=Decimal((d * 17) % 5) / 10,
                )
                for d in range(30)
            ],
            top=[
                SpendPoint(label="demo", spent_usd=Decimal("4.10"), saved_usd=Decimal("0.58")),
                SpendPoint(label="burner", spent_usd=Decimal("2.00")),
                SpendPoint(label="builder", spent_usd=Decimal("1.37"), saved_usd=Decimal("0.1")),
                SpendPoint(label="reviewer", spent_usd=Decimal("0.42")),
            ],
            models=[
                SpendPoint(label="smollm2-135m", spent_usd=Decimal("7.47")),
                SpendPoint(label="claude-haiku-4-5", spent_usd=Decimal("0.42")),
            ],
            tools=[
                SpendPoint(label=label, spent_usd=Decimal(spent))
                for label, spent in (
                    ("read_file", "3.10"),
                    ("(prompt)", "1.24"),
                    ("run_command", "0.95"),
                    ("(answers)", "0.88"),
                    ("notes.search", "0.42"),
                    ("(messages)", "0.30"),
                )
            ],
        )


async def _open_charts(pilot) -> None:
    pilot.app.screen.query_one(Composer).cursor_blink = False
    feed(pilot.app, fleet())
    await settle(pilot, 6)
    await pilot.app.push_screen(SpendScreen(_Answers(), "demo"))
    await settle(pilot, 6)


def test_spend_charts(snap_compare) -> None:
    assert snap_compare(offline_app(), terminal_size=SIZE, run_before=_open_charts)


def in_light(run_before):
    """`run_before`, then the light theme: every chart's colours come from it too."""

    async def light(pilot) -> None:
        await run_before(pilot)
        pilot.app.theme = "textual-light"
        await settle(pilot)

    return light


@pytest.mark.slow
def test_spend_charts_light_theme(snap_compare) -> None:
    assert snap_compare(offline_app(), terminal_size=SIZE, run_before=in_light(_open_charts))


@pytest.mark.slow
async def test_the_fleets_days_stack_by_agent_and_b_stacks_them_by_model(start_plane) -> None:
    plane = await start_plane()
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await spend_then_open_the_charts(plane, app, pilot)
        screen = app.screen
        assert isinstance(screen, SpendScreen)
        assert not screen.query_one("#stack").display  # the agent's view: no stack
        await pilot.press("b")  # not the fleet's view: nothing to switch
        assert screen.by == "agent"
        await pilot.press("f")
        await until(pilot, lambda: shown(app, "#stack-title") == "Last 30 days by agent")
        assert screen.query_one("#stack").display
        assert shown(app, "#stack-total") == "$0.30 spent"
        legend = [str(label.render()) for label in screen.query("#legend .spender")]
        assert legend == ["█ demo  $0.30"]
        data = screen.query_one("#stacked", StackedBars).data
        assert data == [[Decimal(0)] * 29 + [Decimal("0.3")]]
        await pilot.press("b")
        await until(pilot, lambda: shown(app, "#stack-title") == "Last 30 days by model")
        legend = [str(label.render()) for label in screen.query("#legend .spender")]
        assert legend == ["█ scripted-model  $0.30"]
        await pilot.press("b")
        await until(pilot, lambda: shown(app, "#stack-title") == "Last 30 days by agent")


def test_the_legend_names_each_layer_and_how_many_the_rest_sums() -> None:
    def layer(
        label: str, spent: str, saved: str = "0", folded: int = 0, unpriced: int = 0
    ) -> SpendSeries:
        point = SpendPoint(
            label="2025-03-14",
            spent_usd=Decimal(spent),
            saved_usd=Decimal(saved),
            unpriced_calls=unpriced,
        )
        return SpendSeries(label=label, days=[point], folded=folded)

    assert legend_lines([layer("demo", "4.1", "0.58"), layer("others", "0.3", folded=3)]) == [
        "█ demo        $4.10  saved $0.58",
        "█ others (3)  $0.30",
    ]
    assert legend_lines([layer("demo", "4.1", unpriced=2), layer("scout", "0", unpriced=1)]) == [
        "█ demo   $4.10 + unpriced (2 calls)",
        "█ scout  unpriced (1 call)",
    ]
    assert legend_lines([]) == ["Nothing was spent in the last 30 days."]


def test_bars_start_at_zero_and_a_cell_takes_the_layer_in_its_middle() -> None:
    assert layer_tops([Decimal(1), Decimal(1)], Decimal(2), 64) == [32, 64]
    assert layer_tops([Decimal("0.001"), Decimal(0)], Decimal(100), 64) == [0, 1]  # never nothing


def _stack(by: StackBy) -> SpendStackReply:
    names = {
        "agent": ["demo", "builder", "burner", "reviewer", "scout", "scribe"],
        "model": ["smollm2-135m", "claude-haiku-4-5"],
        "group": ["research", "ops", "(none)"],
    }[by]
    series = [
        SpendSeries(
            label=name,
            days=[
                SpendPoint(
                    label=f"2025-{2 if d < 16 else 3:02d}-{(d + 13) % 28 + 1:02d}",
                    spent_usd=Decimal((d * (7 + 3 * n)) % 9) / (2 + n),
                    saved_usd=Decimal((d * 17 + n) % 5) / 40 if n < 2 else Decimal(0),
                )
                for d in range(30)
            ],
        )
        for n, name in enumerate(names)
    ]
    if by == "agent":
        rest = series[-1].model_copy(update={"label": "others", "folded": 2})
        series = [*series[:-1], rest]
    return SpendStackReply(id=2, day=date(2025, 3, 14), by=by, series=series)


class _FleetAnswers(_Answers):
    async def spend_stack(self, by: StackBy) -> SpendStackReply:
        return _stack(by)


async def _open_stack(pilot) -> None:
    pilot.app.screen.query_one(Composer).cursor_blink = False
    feed(pilot.app, fleet())
    await settle(pilot, 6)
    await pilot.app.push_screen(SpendScreen(_FleetAnswers(), None))
    await settle(pilot, 6)
    pilot.app.screen.query_one("#panel").scroll_to_widget(
        pilot.app.screen.query_one("#legend"), animate=False, top=False
    )
    await settle(pilot, 6)


@pytest.mark.slow
def test_spend_stacked_by_agent(snap_compare) -> None:
    assert snap_compare(offline_app(), terminal_size=SIZE, run_before=_open_stack)


@pytest.mark.slow
def test_spend_stacked_by_agent_light_theme(snap_compare) -> None:
    assert snap_compare(offline_app(), terminal_size=SIZE, run_before=in_light(_open_stack))


def stack_titled(app: PlaneApp, by: str) -> Callable[[], bool]:
    """Whether the stack's title says it is by `by`, asked when called."""
    return lambda: shown(app, "#stack-title") == f"Last 30 days by {by}"


async def test_b_cycles_the_fleets_days_by_agent_model_and_group_when_there_are_groups() -> None:
    app = offline_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.push_screen(SpendScreen(_FleetAnswers(), None, grouped=True))
        screen = app.screen
        for by in ("agent", "model", "group"):
            await until(pilot, stack_titled(app, by))
            if by == "group":
                legend = [str(s.render()).split("  ")[0] for s in screen.query("#legend .spender")]
                assert legend == ["█ research", "█ ops", "█ (none)"]
            await pilot.press("b")
        await until(pilot, stack_titled(app, "agent"))  # round again


async def test_without_groups_b_switches_between_agent_and_model_only() -> None:
    app = offline_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.push_screen(SpendScreen(_FleetAnswers(), None))
        screen = app.screen
        assert isinstance(screen, SpendScreen)
        await until(pilot, lambda: shown(app, "#stack-title") == "Last 30 days by agent")
        await pilot.press("b")
        await until(pilot, lambda: shown(app, "#stack-title") == "Last 30 days by model")
        await pilot.press("b")
        await until(pilot, lambda: shown(app, "#stack-title") == "Last 30 days by agent")
        assert screen.by == "agent"


@pytest.mark.slow
async def test_the_keyboard_reaches_the_fleets_charts_below_an_80x24_screen() -> None:
    """At 80x24 the fleet's charts are taller than the screen: the day by
    model, by tool and the stacked days are below it. A panel only a mouse
    scrolled hid them from the keyboard; End and PageDown reach them, Home
    comes back."""
    app = offline_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await app.push_screen(SpendScreen(_FleetAnswers(), None))
        await until(pilot, lambda: len(app.screen.query("#legend .spender")) > 0)
        panel = app.screen.query_one("#panel")
        await until(pilot, lambda: panel.max_scroll_y > 0)
        await pilot.press("end")
        await until(pilot, lambda: panel.scroll_y == panel.max_scroll_y)
        await pilot.press("home")
        await until(pilot, lambda: panel.scroll_y == 0)
        await pilot.press("pagedown")
        await until(pilot, lambda: panel.scroll_y > 0)
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, SpendScreen))


async def test_the_day_by_tool_is_bars_of_what_each_tool_cost() -> None:
    app = offline_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.push_screen(SpendScreen(_Answers(), "demo"))
        await until(pilot, lambda: len(app.screen.query("#tools .spender")) == 6)
        tools = [str(label.render()) for label in app.screen.query("#tools .spender")]
        assert tools[0] == "read_file     ████████████████████████  $3.10"
        assert tools[4] == "notes.search  ███                       $0.42"


class _OlderPlane(_Answers):
    """A plane from before `spend_stack`: it refuses the request it does not know."""

    async def spend_stack(self, by: StackBy) -> SpendStackReply:
        raise LinkFailed(SpendStack(id=0), "refused", "A frame of a type it does not know.")


async def test_a_plane_without_the_stacked_days_says_so_and_the_rest_still_shows() -> None:
    app = offline_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.push_screen(SpendScreen(_OlderPlane(), None))
        await until(pilot, lambda: "spent" in shown(app, "#days-total"))
        await until(pilot, lambda: "could not be read" in shown(app, "#note"))
        assert shown(app, "#note") == (
            "The fleet's days could not be read: A frame of a type it does not know."
        )


def _hue(color: RichColor) -> float:
    r, g, b = (c / 255 for c in color.get_truecolor())
    return colorsys.rgb_to_hls(r, g, b)[0] * 360


def _apart(a: RichColor, b: RichColor) -> bool:
    """Told apart at a glance: another hue, or (greys) another lightness."""
    ra, ga, ba = a.get_truecolor()
    rb, gb, bb = b.get_truecolor()
    grey_a = max(ra, ga, ba) - min(ra, ga, ba) < 24
    grey_b = max(rb, gb, bb) - min(rb, gb, bb) < 24
    if grey_a != grey_b:  # a grey beside a colour
        return True
    if grey_a:
        return abs(sum((ra, ga, ba)) - sum((rb, gb, bb))) > 90
    turn = abs(_hue(a) - _hue(b)) % 360
    return min(turn, 360 - turn) > 40


async def test_amber_is_not_a_chart_colour_and_side_by_side_layers_differ() -> None:
    """Amber says one thing: 80% of a ceiling. A chart's spent is not it,
    nor any layer of the fleet's stacked days; two layers that touch are
    two hues (the layers were all blues). In each theme in turn, on one app."""
    app = offline_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.push_screen(SpendScreen(_FleetAnswers(), None))
        await until(pilot, stack_titled(app, "agent"))
        screen = app.screen
        for theme in ("textual-dark", "textual-light"):
            app.theme = theme
            await settle(pilot)
            warning = Color.parse(app.theme_variables["warning"]).rich_color
            error = Color.parse(app.theme_variables["error"]).rich_color
            days = screen.query_one("#days")
            spent = days.get_component_rich_style("sparkline--max-color").color
            bars = screen.query_one(StackedBars)
            layers = [
                bars.get_component_rich_style(f"stacked--layer-{n}").color for n in range(1, 7)
            ]
            for color in [spent, *layers]:
                assert color is not None
                assert _apart(color, warning) and _apart(color, error), (theme, color)
            for below, above in itertools.pairwise(layers):
                assert below is not None and above is not None and _apart(below, above), (
                    theme,
                    below,
                    above,
                )
