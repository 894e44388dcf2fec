"""Activity: while a turn runs, the line over the composer says what the
agent is doing and for how long (from the events the plane sends); an agent
that answered while another was shown has `*` in its row until it is."""

from __future__ import annotations

from decimal import Decimal

import pytest

from plane.wire.protocol import MessageAppended, TextDelta, TurnFinished, TurnStarted, Usage
from tests.tui.conftest import drawn_row, feed, settle
from tests.tui.factories import agent, message, snapshot
from tests.tui.test_live import SIZE, app_for, type_line, until
from tui.app import PlaneApp
from tui.store import tool_name
from tui.widgets.agent_list import AgentList


def activity(app: PlaneApp) -> str:
    line = app.main_screen.query_one("#activity")
    return str(line.render()) if line.has_class("-shown") else ""


@pytest.mark.slow
async def test_a_real_turn_says_thinking_then_the_tool_it_called_then_nothing(
    start_plane,
) -> None:
    plane = await start_plane()
    plane.llm.reply("", tool_calls=[("grep", {"pattern": "libssl"})], usage=Usage(), delay_s=1.5)
    plane.llm.reply("No match for libssl.", usage=Usage(), delay_s=1.5)
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.main_screen.selected == "demo")
        await type_line(pilot, "where is libssl?")
        await until(pilot, lambda: activity(app).startswith("demo is thinking · "))
        assert activity(app).endswith(" s")
        await until(pilot, lambda: activity(app).endswith(" · called grep"))
        await until(pilot, lambda: not activity(app))
        assert any(
            m.text == "No match for libssl." for m in app.store.conversation("demo").ordered()
        )


async def test_the_seconds_count_on_this_clients_clock_and_only_the_selected_agent_shows() -> None:
    app = PlaneApp(None)
    now = [100.0]
    app.store.clock = lambda: now[0]
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("poet"), agent("scout")))
        await settle(pilot)
        feed(app, TurnStarted(agent="poet", turn=1), TurnStarted(agent="scout", turn=1))
        await settle(pilot)
        assert activity(app) == "poet is thinking · 0 s"
        now[0] += 12
        app.main_screen.tick()
        assert activity(app) == "poet is thinking · 12 s"
        feed(app, MessageAppended(message=message("poet", "tool", "grep → 3 matches")))
        feed(app, TextDelta(agent="poet", turn=1, text="Found"))
        await settle(pilot)
        assert activity(app) == "poet is writing · 12 s · called grep"
        now[0] += 70
        app.main_screen.tick()
        assert activity(app) == "poet is writing · 1 min 22 s · called grep"
        feed(app, TurnFinished(agent="poet", turn=1, cost_usd=Decimal(0), usage=Usage()))
        await settle(pilot)
        assert activity(app) == ""
        app.main_screen.select_agent("scout")
        await settle(pilot)
        assert activity(app) == "scout is thinking · 1 min 22 s"


async def test_a_turn_already_running_at_connect_says_working_without_a_count() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("poet", status="working")))
        await settle(pilot)
        assert activity(app) == "poet is working"


def test_the_tool_is_named_from_its_line() -> None:
    assert tool_name("grep → 3 matches") == "grep"
    assert tool_name("run_command (refused) → not allowed") == "run_command"


async def test_an_answer_while_unseen_marks_the_row_until_it_is_shown() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo"), agent("scout")))
        await settle(pilot)
        feed(app, MessageAppended(message=message("scout", "agent", "Done crawling.")))
        feed(app, MessageAppended(message=message("demo", "agent", "Here, in view.")))
        await settle(pilot)
        assert drawn_row(app, "scout") == "○ scout *"
        assert drawn_row(app, "demo") == "○ demo", "the shown agent is read as it answers"
        feed(app, MessageAppended(message=message("scout", "plane", "A notice is not an answer.")))
        await pilot.press("ctrl+l", "f", "f", "f", "f", "f")  # the unread filter
        await settle(pilot)
        assert app.main_screen.query_one(AgentList).names == ["scout"]
        assert app.main_screen.selected == "scout", "the filter selects the first unread"
        assert drawn_row(app, "scout") == "○ scout", "shown, so read (its row stays)"
        await pilot.press("f")
        await settle(pilot)
        assert app.main_screen.query_one(AgentList).names == ["demo", "scout"]
