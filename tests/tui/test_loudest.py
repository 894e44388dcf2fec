"""What needs the operator is the loudest thing on screen: a held agent's
row, its count in the fleet line, `held` in the title and the plane's
notice that says why are a solid $error bar (a paused one a bar of the
foreground's tint), in the dark theme and the light; amber stays a bold
figure, and routine plane lines stay quiet."""

from __future__ import annotations

from decimal import Decimal

from rich.color import Color as RichColor
from textual.color import Color
from textual.strip import Strip

from plane.agents import notices
from tests.tui.conftest import feed, settle
from tests.tui.factories import RESETS, agent, message, snapshot
from tests.tui.test_finding import redrawn
from tui.app import PlaneApp
from tui.widgets.agent_list import AgentList
from tui.widgets.conversation import ConversationPane
from tui.widgets.fleet_line import FleetLine
from tui.widgets.title_bar import TitleBar

SIZE = (100, 30)


def background_of(strip: Strip, text: str) -> RichColor | None:
    """The background the first cell of `text` is drawn on."""
    for segment in strip:
        if text in segment.text and segment.style is not None:
            return segment.style.bgcolor
    raise AssertionError(f"{text!r} is not drawn in {strip.text!r}")


def style_of(strip: Strip, text: str):
    for segment in strip:
        if text in segment.text and segment.style is not None:
            return segment.style
    raise AssertionError(f"{text!r} is not drawn in {strip.text!r}")


def theme_colour(app: PlaneApp, name: str) -> Color:
    return Color.parse(app.theme_variables[name])


def same(rich: RichColor | None, color: Color) -> bool:
    return rich is not None and rich.triplet is not None and tuple(rich.triplet) == color.rgb


THEMES = ("textual-dark", "textual-light")


async def test_held_and_paused_rows_are_bars_amber_is_a_figure() -> None:
    """In each theme in turn, on one app."""
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(
            app,
            snapshot(
                agent("calm", "1.00"),
                agent("quiet", "1.00"),
                agent("amber", "4.50"),
                agent("burner", "5.10", status="held", resumes_at=RESETS),
                agent("poet", "0.10", status="paused", paused=True),
            ),
        )
        await redrawn(pilot)
        rows = app.main_screen.query_one(AgentList)
        rows.select("calm")  # the cursor away from the rows compared
        for theme in THEMES:
            app.theme = theme
            await settle(pilot)
            line = {name: rows.render_line(rows.names.index(name)) for name in rows.names}
            error = theme_colour(app, "error")
            held = background_of(line["burner"], "burner")
            assert same(held, error), f"held: a red bar ({theme})"
            assert same(background_of(line["burner"], "$5.10"), error), "across the whole row"
            assert style_of(line["burner"], "burner").bold
            calm = background_of(line["quiet"], "quiet")
            paused = background_of(line["poet"], "poet")
            assert paused is not None and paused != calm, f"paused: a bar of its own ({theme})"
            assert not same(paused, error), "not the held one's red"
            amber = background_of(line["amber"], "amber")
            assert amber == calm, f"amber is its figure, not a bar ({theme})"

            fleet = app.main_screen.query_one(FleetLine)
            drawn = Strip(list(fleet.render().render_segments(fleet.visual_style)))
            assert same(background_of(drawn, "1 held"), error), theme
            assert background_of(drawn, "1 paused") is not None, theme


async def test_the_notice_that_says_why_is_loud_and_routine_lines_quiet() -> None:
    """In each theme in turn, on one app."""
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("burner", "2.00", "2", status="held", resumes_at=RESETS)))
        await settle(pilot)
        why = notices.held("burner", Decimal(2), Decimal(2), "3h 13m")
        pane = app.main_screen.query_one(ConversationPane)
        pane.show(
            "burner",
            [
                message("burner", "plane", "$2.00 spent today, of $2.00 a day.", minute=1),
                message("burner", "plane", why, minute=2),
            ],
        )
        for theme in THEMES:
            app.theme = theme
            await settle(pilot)
            routine, notice = pane.messages
            width = pane.scrollable_content_region.width
            base = pane.visual_style
            quiet = Strip(list(routine.lines(width)[0].render_segments(base)))
            loud = Strip(list(notice.lines(width)[0].render_segments(base)))
            error = theme_colour(app, "error")
            assert same(background_of(loud, "plane"), error), f"a red `plane` badge ({theme})"
            assert not same(background_of(quiet, "plane"), error), "a routine line is not"
            body = style_of(loud, "burner")
            assert body.bold and same(body.color, theme_colour(app, "text-error")), theme
            assert not style_of(quiet, "$2.00").bold

            title = app.main_screen.query_one(TitleBar)
            drawn = Strip(list(title.render().render_segments(title.visual_style)))
            assert same(background_of(drawn, "held"), error), theme
