"""What the plane now says, as the screen shows it: the ceiling a new agent
starts with (in the form), and when a held agent resumes (in the title).
Against a real plane where it matters; fed frames where only the drawing does."""

from __future__ import annotations

from decimal import Decimal

import pytest
from textual.widgets import Select, Static

from plane.wire.protocol import AgentUpdated, Usage
from tests.support.fixtures_plane import CONFIG
from tests.support.scripted_llm import Reply
from tests.tui.conftest import feed, settle
from tests.tui.factories import RESETS, agent, snapshot
from tests.tui.test_live import SIZE, app_for, title, type_line, until
from tui.app import PlaneApp
from tui.screens.new_agent import NewAgentScreen
from tui.widgets.connection_banner import ConnectionBanner

TWENTY_CENTS = Usage(input_tokens=100, output_tokens=50)
"""$0.20 at the test prices: five turns reach the default $1.00 ceiling."""


def form_note(app: PlaneApp) -> str:
    return str(app.screen.query_one("#note", Static).render())


def form_model(app: PlaneApp) -> object:
    return app.screen.query_one("#model", Select).value


async def open_form(app: PlaneApp, pilot) -> None:
    await until(pilot, lambda: app.main_screen.selected == "demo")
    await pilot.press("ctrl+n")
    await until(pilot, lambda: isinstance(app.screen, NewAgentScreen))


@pytest.mark.slow
async def test_the_form_says_the_ceiling_a_new_agent_starts_with(start_plane) -> None:
    plane = await start_plane()
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await open_form(app, pilot)
        assert form_note(app) == "Spending limit: $1.00 a day, from defaults; /limit changes it."
        assert form_model(app) == "scripted-model"
        await pilot.press(*"helper", "enter")
        await until(pilot, lambda: app.main_screen.selected == "helper")
        assert app.store.agents["helper"].limit_usd == Decimal(1)  # what the form said


async def test_with_no_default_ceiling_the_form_says_so(start_plane) -> None:
    plane = await start_plane(CONFIG.replace("  limitUsd: 1\n", ""))
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await open_form(app, pilot)
        assert form_note(app) == "No spending limit: defaults set none; /limit sets one."


async def test_the_form_says_what_the_planes_snapshot_says_of_its_defaults() -> None:
    """Two planes in turn on one app, the form opened on each: one that does
    not say its defaults (the general line, the first model offered), then
    one that does (its default model preselected wherever it is listed, its
    ceiling said)."""
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo"), default_model=None, default_limit_usd=None))
        await settle(pilot)
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert form_note(app) == "It starts with the plane's default daily ceiling."
        assert form_model(app) == "smollm2-135m"  # the first offered, as before
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, NewAgentScreen)

        feed(
            app,
            snapshot(
                agent("demo"),
                models=["small", "big"],
                default_model="big",
                default_limit_usd=Decimal("0.25"),
            ),
        )
        await settle(pilot)
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert form_model(app) == "big"
        assert form_note(app) == "Spending limit: $0.25 a day, from defaults; /limit changes it."


@pytest.mark.slow
async def test_after_a_reconnect_the_form_says_the_restarted_planes_defaults(
    start_plane,
) -> None:
    """The plane restarted on an agents.yaml with another default model and
    ceiling: the TUI, reconnected, offers what this plane says, not what the
    plane it lost said."""
    plane = await start_plane()
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await open_form(app, pilot)
        assert form_model(app) == "scripted-model"
        await pilot.press("escape")
        banner = app.main_screen.query_one(ConnectionBanner)

        await plane.stop()
        await until(pilot, lambda: banner.has_class("-lost"))
        changed = CONFIG.replace("  limitUsd: 1\n", "  limitUsd: 2\n")
        changed = changed.replace("  model: scripted-model\n", "  model: other-model\n")
        assert changed.count("other-model") == 2  # the default, beside the provider's list
        plane = await start_plane(changed, restart=plane)
        await until(pilot, lambda: not banner.has_class("-lost"))

        await open_form(app, pilot)
        assert form_model(app) == "other-model"
        assert form_note(app) == "Spending limit: $2.00 a day, from defaults; /limit changes it."


@pytest.mark.slow
async def test_a_held_agent_says_when_it_resumes_and_stops_once_freed(start_plane) -> None:
    plane = await start_plane()
    plane.llm.default_reply = Reply("done", usage=TWENTY_CENTS)
    for n in range(5):
        await plane.turn("demo", f"task {n}")  # $1.00: at the ceiling
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "held" in title(app))
        assert title(app).startswith("demo · scripted-model · $1.00 of $1.00 today · held")
        # the plane's clock says noon UTC; this one's seconds pass while the app starts
        assert title(app).endswith((" · resumes in 12h 00m", " · resumes in 11h 59m"))
        assert app.store.agents["demo"].resumes_at is not None

        await type_line(pilot, "/limit 3")
        await until(pilot, lambda: "$1.00 of $3.00 today" in title(app))
        assert app.store.agents["demo"].resumes_at is None
        # $1.00 in five calls just now: on course for $3.00 long before midnight
        assert " · $1.00 of $3.00 today · reaches $3.00 at 12:" in title(app)
        assert "resumes" not in title(app) and "held" not in title(app)


async def test_the_title_counts_down_to_resuming_and_keeps_resets_for_other_holds() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        monotonic = [100.0]
        app.store.clock = lambda: monotonic[0]
        feed(app, snapshot(agent("demo", "5", status="held", resumes_at=RESETS)))
        await settle(pilot)  # the plane's now: 20:47:00 UTC
        assert title(app) == "demo · smollm2-135m · $5.00 of $5.00 today · held · resumes in 3h 13m"
        monotonic[0] += 60
        app.main_screen.tick()
        await settle(pilot)
        assert title(app).endswith("held · resumes in 3h 12m")

        paused = agent("demo", "0", "0", status="held")  # a zero ceiling: the day frees nothing
        feed(app, AgentUpdated(agent=paused))
        await settle(pilot)
        assert title(app) == "demo · smollm2-135m · $0.00 of $0.00 today · paused"
