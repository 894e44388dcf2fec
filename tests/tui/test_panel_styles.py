"""Every panel's styles are read with the app's at start: a file Textual first
meets when its screen opens has it parse every file again, once per panel.
Live from the start, a panel's rules reach only its own screen's widgets."""

from __future__ import annotations

import pytest
from textual.widgets import Input

from tests.tui.conftest import feed, settle
from tests.tui.scenes import fleet
from tui.app import PlaneApp
from tui.screens.main import MainScreen

SIZE = (100, 30)
PANELS = {
    "help": ("f1",),
    "new agent": ("ctrl+n",),
    "spend charts": ("ctrl+g",),
    "edit form": ("ctrl+l", "e"),
}
"""Each panel, and the keys that open it from the main screen."""


async def opened(pilot, keys: tuple[str, ...]) -> None:
    await pilot.press(*keys)
    await settle(pilot)
    assert not isinstance(pilot.app.screen, MainScreen), keys


async def closed(pilot) -> None:
    await pilot.press("escape")
    await settle(pilot)
    assert isinstance(pilot.app.screen, MainScreen)


@pytest.mark.slow
async def test_each_panel_opens_on_styles_read_at_start() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, fleet())
        await settle(pilot)
        read_at_start = set(app.stylesheet.source)
        for name, keys in PANELS.items():
            await opened(pilot, keys)
            for path in app.screen.css_path:
                assert (str(path), "") in read_at_start, name
            await closed(pilot)


@pytest.mark.slow
async def test_the_edit_form_wears_none_of_the_other_panels_rules() -> None:
    """The spend charts' #tools (a line of figures in the primary colour) and
    the new-agent form's are not the edit form's: its tools field looks as its
    ceiling field does, however many panels were opened before it."""
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, fleet())
        await settle(pilot)
        for keys in (PANELS["spend charts"], PANELS["new agent"]):
            await opened(pilot, keys)
            await closed(pilot)
        await opened(pilot, PANELS["edit form"])
        tools = app.screen.query_one("#tools", Input)
        limit = app.screen.query_one("#limit", Input)
        assert tools.styles.css == limit.styles.css
