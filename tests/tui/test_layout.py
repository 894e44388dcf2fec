"""Layout: the agent list takes what its rows need and gives way to the
conversation's time-and-who column, below 60 it folds away
(ctrl+l shows it in place of the conversation); a badge stays beside its
message at any width; amber is only ever spend."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from plane.wire.protocol import MessageAppended
from tests.tui.conftest import feed, focused, settle
from tests.tui.factories import agent, message, snapshot
from tests.tui.test_live import until
from tui.app import PlaneApp
from tui.screens.main import TALK_LEAST
from tui.widgets.agent_list import AgentList
from tui.widgets.composer import Composer
from tui.widgets.conversation import ConversationPane

TUI = Path(__file__).parents[2] / "tui"


def widths(app: PlaneApp) -> tuple[int, int, bool]:
    """The list's and the conversation's widths, and whether the list shows."""
    agents = app.main_screen.query_one("#side")
    pane = app.main_screen.query_one(ConversationPane)
    return agents.size.width, pane.size.width, agents.display and agents.size.width > 0


async def test_the_list_takes_what_its_rows_need_and_the_conversation_the_rest() -> None:
    """At 80 columns the list kept 28, mostly empty: now what `demo` and
    `scout` need, as at 120; narrower, it gives way to the conversation's
    time-and-who column (`TALK_LEAST`). Started at 80 columns, then the
    terminal resized to each width in turn."""
    need = len("scout") + 16
    app = PlaneApp(None)
    async with app.run_test(size=(80, 30)) as pilot:
        feed(app, snapshot(agent("demo"), agent("scout")))
        await settle(pilot)
        side, pane, shown = widths(app)
        assert shown and side == need and pane >= 80 - need - 4
        # A resize is laid out over a few of the app's passes, which a busy
        # machine may not finish within `resize_terminal`'s one: each width's
        # layout is waited for (`until` fails if it never comes).
        await pilot.resize_terminal(120, 30)
        await until(pilot, lambda: widths(app)[0] == need)  # as its rows need
        await pilot.resize_terminal(72, 30)
        await until(pilot, lambda: widths(app)[0] == 72 - TALK_LEAST)
        await until(pilot, lambda: widths(app)[1] == TALK_LEAST - 4)  # less borders, padding
        await pilot.resize_terminal(50, 30)
        await until(pilot, lambda: not widths(app)[2] and 50 - 4 <= widths(app)[1] < 50)
        side, pane, shown = widths(app)
        assert not shown and pane >= 50 - 4, "below 60 the conversation gets the width"


async def test_long_names_widen_the_list_up_to_28() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=(160, 30)) as pilot:
        feed(app, snapshot(agent("a-rather-long-agent-name"), agent("scout")))
        await settle(pilot)
        assert app.main_screen.query_one("#side").size.width == 28


@pytest.mark.slow
async def test_on_a_tiny_screen_ctrl_l_shows_the_list_and_choosing_brings_back_the_talk() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=(50, 24)) as pilot:
        feed(app, snapshot(agent("demo"), agent("scout")))
        await settle(pilot)
        await pilot.press("ctrl+l")
        await settle(pilot)
        agents = app.main_screen.query_one(AgentList)
        assert focused(app) is agents and agents.size.width > 40
        assert not app.main_screen.query_one("#talk").display
        await pilot.press("down", "enter")
        await settle(pilot)
        assert app.main_screen.selected == "scout"
        assert isinstance(focused(app), Composer) and app.main_screen.query_one("#talk").display
        await pilot.press("ctrl+l", *"hi")  # typing in the list goes to the composer
        await settle(pilot)
        assert isinstance(composer := focused(app), Composer) and composer.value == "hi"


async def test_the_held_badge_sits_beside_its_message_at_250_columns() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=(250, 30)) as pilot:
        feed(app, snapshot(agent("burner", "2", "2", status="held")))
        await settle(pilot)
        feed(
            app,
            MessageAppended(message=message("burner", "operator", "check the sitemap", held=True)),
        )
        await settle(pilot)
        line = app.main_screen.query_one(ConversationPane).messages[0].plain(250)
        assert (
            line.endswith("check the sitemap  held "[:-1].rstrip() + "") or "sitemap  held" in line
        )
        assert line.index("held") - line.index("sitemap") < 12, line


def test_amber_is_only_for_spend() -> None:
    """Every rule coloured amber ($warning, or $accent: amber in the dark
    theme) says a ceiling is near (warnRatio): a row's, the title's and the
    fleet line's figure, the plane's notice of it. + new agent, code, asks
    and the charts' spent bars are not."""
    amber_rules = []
    for sheet in TUI.rglob("*.tcss"):
        css = re.sub(r"/\*.*?\*/", "", sheet.read_text(), flags=re.S)
        for rule in css.split("}"):
            if "warning" in rule or "accent" in rule:
                amber_rules.append(rule.split("{")[0].strip())
    assert sorted(amber_rules) == [
        "AgentList > .agent-list--spend-warn",
        "ConversationPane > .conversation--body-warn",  # the plane's 80% notice
        "ConversationPane > .conversation--who-warn",
        "FleetLine > .fleet-line--warn",
        "TitleBar.-warn > .title-bar--spend",
    ], "amber is the warnRatio warning only: a chart's spent is not amber"
