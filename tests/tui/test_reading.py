"""Reading: a tool line opens to its whole (compressed) result, and a long
message folds behind `20,000 characters · Enter to expand`."""

from __future__ import annotations

import pytest

from plane.wire.protocol import MessageAppended, Usage
from tests.tui.conftest import feed, settle
from tests.tui.factories import agent, message, snapshot
from tests.tui.test_live import SIZE, app_for, type_line, until
from tui.app import PlaneApp
from tui.widgets.composer import Composer
from tui.widgets.conversation import ConversationPane
from tui.widgets.message_line import MessageLine


def line_of(app: PlaneApp, kind: str) -> MessageLine | None:
    pane = app.main_screen.query_one(ConversationPane)
    lines = [m for m in pane.messages if m.message.kind == kind]
    return lines[-1] if lines else None


@pytest.mark.slow
async def test_a_real_tool_line_opens_to_the_whole_result(start_plane) -> None:
    plane = await start_plane()
    plane.llm.reply(
        "", tool_calls=[("run_command", {"command": "seq 101 130 | sed s/^/n/"})], usage=Usage()
    )
    plane.llm.reply("Thirty numbers.", usage=Usage())
    app = app_for(plane)
    async with app.run_test(size=(100, 50)) as pilot:
        await until(pilot, lambda: app.main_screen.selected == "demo")
        await type_line(pilot, "count")
        await until(pilot, lambda: line_of(app, "agent") is not None)
        tool = line_of(app, "tool")
        assert tool is not None
        folded = tool.plain()
        assert "run_command → $ seq 101 130" in folded
        assert "n130" not in folded and "more lines · Enter to open" in folded
        app.main_screen.query_one(ConversationPane).focus()
        await pilot.press("o")
        await settle(pilot)
        opened = tool.plain()
        assert all(f"n{n}" in opened for n in range(101, 131)), opened
        assert len(opened.splitlines()) > 30
        await pilot.press("o")
        await settle(pilot)
        assert tool.plain() == folded


@pytest.mark.slow
async def test_a_long_message_folds_and_enter_on_it_expands_it() -> None:
    app = PlaneApp(None)
    text = "\n".join(f"log line {n:05} " + "x" * 60 for n in range(270))  # ~20,000 characters
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo")))
        await settle(pilot)
        feed(app, MessageAppended(message=message("demo", "operator", text)))
        feed(app, MessageAppended(message=message("demo", "agent", "Read it.")))
        await settle(pilot)
        long = line_of(app, "operator")
        assert long is not None
        folded = long.plain()
        assert folded.splitlines()[-1].strip() == f"{len(text):,} characters · Enter to expand"
        assert len(folded.splitlines()) == 9 and "log line 00269" not in folded
        assert f"{len(text):,}".startswith("20,")
        await pilot.press("shift+tab")  # from the composer: the newest line that opens
        await settle(pilot)
        pane = app.main_screen.query_one(ConversationPane)
        assert app.focused is pane and pane.cursor is long
        await pilot.press("enter")
        await settle(pilot)
        assert "log line 00269" in long.plain() and len(long.plain().splitlines()) >= 270
        assert "log line 00269" in pane.plain(), "laid out open in the pane"
        await pilot.press("enter")
        await settle(pilot)
        assert long.plain() == folded
        assert isinstance(app.main_screen.query_one(Composer), Composer)


async def test_short_messages_and_one_line_tool_results_do_not_fold() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo")))
        await settle(pilot)
        feed(app, MessageAppended(message=message("demo", "tool", "grep → no match")))
        feed(app, MessageAppended(message=message("demo", "agent", "y" * 1_999)))
        await settle(pilot)
        lines = app.main_screen.query_one(ConversationPane).messages
        assert [line.folds for line in lines] == [False, False]
