"""The TUI's side of the plane's true words, against a real plane where the plane
decides: the new-agent form's tools field (none on the embedded model,
following the model until picked), a pasted message too large for the
model's context refused in the pane and stored nowhere, and figures below
a dollar that say which side of the ceiling they are on."""

from __future__ import annotations

import pytest
from textual import events
from textual.widgets import Select

from plane.agents.toolsets import READ_ONLY
from plane.config import EMBEDDED_MODEL
from tests.plane.agents.test_context import PASTE, SMALL
from tests.tui.conftest import drawn_row, feed, settle
from tests.tui.factories import agent, snapshot
from tests.tui.test_live import SIZE, app_for, has_row, title, type_line, until
from tui.app import PlaneApp
from tui.widgets.composer import Composer
from tui.widgets.conversation import ConversationPane


def tools_field(app: PlaneApp) -> object:
    return app.screen.query_one("#tools", Select).value


@pytest.mark.slow
async def test_the_form_offers_tools_that_suit_the_model_and_creates_with_the_pick(
    start_plane,
) -> None:
    plane = await start_plane()
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.main_screen.selected == "demo")
        await pilot.press("ctrl+n")
        await until(pilot, lambda: type(app.screen).__name__ == "NewAgentScreen")
        model = app.screen.query_one("#model", Select)
        assert (model.value, tools_field(app)) == ("scripted-model", "all")

        model.value = EMBEDDED_MODEL  # the embedded model: no tools, unless picked
        await until(pilot, lambda: tools_field(app) == "none")
        model.value = "scripted-model"
        await until(pilot, lambda: tools_field(app) == "all")

        app.screen.query_one("#tools", Select).value = "read-only"  # picked: it stays
        await settle(pilot)
        model.value = "other-model"
        await settle(pilot)
        model.value = "scripted-model"
        await settle(pilot)
        assert tools_field(app) == "read-only"

        await type_line(pilot, "reader")
        await until(pilot, lambda: has_row(app, "reader"))
        assert app.store.agents["reader"].tools == READ_ONLY
    assert plane.services.roster.get("reader").tools == READ_ONLY


async def test_a_paste_too_large_for_the_context_is_refused_in_the_pane(start_plane) -> None:
    plane = await start_plane(SMALL)
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.main_screen.selected == "demo")
        composer = app.main_screen.query_one("#composer", Composer)
        composer.focus()
        # One line: the one-line composer keeps only the first line of a paste.
        composer.post_message(events.Paste(PASTE.replace("\n", " ")))
        await settle(pilot)
        written = composer.text
        await pilot.press("enter")
        pane = app.main_screen.query_one(ConversationPane)
        await until(
            pilot,
            lambda: any("Not sent: this message" in note for note in pane.notes),
        )
        assert composer.text == written.strip(), "kept, to be shortened"
    assert await plane.services.conversation.history("demo") == []
    assert plane.llm.requests == []


async def test_figures_below_a_dollar_say_which_side_of_the_ceiling_they_are_on() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo", "0.0196", "0.02"), agent("scout", "0.0204", "0.02")))
        await settle(pilot)
        assert title(app).startswith("demo · smollm2-135m · $0.019 of $0.02 today")
        assert drawn_row(app, "demo").endswith("$0.019")
        assert drawn_row(app, "scout").endswith("$0.021")
