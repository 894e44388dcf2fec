"""The loop guard and the step-down on the screen: a looping agent's title
says `a loop, p resumes it` (no day's end frees it) and `p` on its row lets
it go on, against a real plane; an agent on its fallback says so after its
model."""

from __future__ import annotations

from plane.wire.protocol import Usage
from tests.plane.agents.test_loop_guard import read_five_times
from tests.tui.conftest import feed, settle
from tests.tui.factories import agent, snapshot
from tests.tui.test_live import SIZE, app_for, row_text, title, until
from tests.tui.test_manage_keys import on_list
from tui.app import PlaneApp


async def test_p_resumes_an_agent_the_loop_guard_holds(start_plane) -> None:
    plane = await start_plane()
    await read_five_times(plane)
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await on_list(pilot, app, "demo")
        await until(pilot, lambda: row_text(app, "demo").startswith("■ demo"))
        assert title(app) == (
            "demo · scripted-model · $0.09 of $1.00 today · held · a loop, p resumes it"
        )
        plane.llm.reply("Read it (4).", usage=Usage(input_tokens=10))
        await pilot.press("p")
        await until(pilot, lambda: not row_text(app, "demo").startswith("■"))
        assert plane.crew.workers["demo"].spec.loop is None
        assert not plane.crew.workers["demo"].spec.paused, "resumed, not paused"


async def test_the_title_says_an_agent_runs_on_its_fallback() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        stepped = agent("demo", "4.10", model="claude-haiku-4-5", stepped_down_from="big")
        feed(app, snapshot(stepped))
        await settle(pilot)
        assert title(app).startswith("demo · claude-haiku-4-5 (fallback) · $4.10 of $5.00 today")
