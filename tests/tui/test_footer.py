"""The footer rebuilds its keys only when what it shows changed: the screen
says its bindings may have changed at every move of the focus, and each
rebuild styles and lays out every key again."""

from __future__ import annotations

from textual.widgets._footer import FooterKey

from tests.tui.conftest import feed, settle
from tests.tui.factories import agent, snapshot
from tui.app import PlaneApp
from tui.widgets.agent_list import AgentList
from tui.widgets.composer import Composer

SIZE = (120, 30)


def keys(app: PlaneApp) -> list[FooterKey]:
    return list(app.main_screen.query(FooterKey))


async def test_bindings_that_change_nothing_shown_leave_the_keys_as_they_are() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo"), agent("scout")))
        await settle(pilot)
        before = keys(app)
        assert before, "the footer shows keys"
        for _ in range(3):
            app.main_screen.refresh_bindings()
            await settle(pilot)
        assert keys(app) == before, "the same keys were built again"


async def test_keys_that_come_and_go_with_the_focus_are_rebuilt() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo"), agent("scout")))
        await settle(pilot)
        app.main_screen.query_one(AgentList).focus()
        await settle(pilot)
        on_list = {key.key for key in keys(app)}
        app.main_screen.query_one(Composer).focus()
        await settle(pilot)
        in_composer = {key.key for key in keys(app)}
        assert "d" in on_list and "d" not in in_composer, (on_list, in_composer)
        app.main_screen.query_one(AgentList).focus()
        await settle(pilot)
        assert {key.key for key in keys(app)} == on_list
