"""At 40 columns: the title keeps the name, the spend and why the agent is
stopped (the model goes first), the fleet line keeps what needs the
operator, the footer's keys fit and none is drawn over another, and a
message's time and who go above its text instead of taking a third of
the width beside it."""

from __future__ import annotations

import itertools

import pytest

from plane.wire.protocol import GroupState
from tests.tui.conftest import feed, settle
from tests.tui.factories import RESETS, agent, message, snapshot
from tests.tui.test_finding import fleet_text, redrawn
from tui.app import PlaneApp
from tui.widgets.agent_list import AgentList
from tui.widgets.conversation import ConversationPane
from tui.widgets.title_bar import TitleBar

SIZE = (40, 24)


def title(app: PlaneApp) -> str:
    bar = app.main_screen.query_one(TitleBar)
    return bar.render().plain


async def test_title_and_fleet_line_keep_what_matters_within_40_columns() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(
            app,
            snapshot(
                agent("burner", "2.00", "2", status="held", resumes_at=RESETS),
                agent("demo", "4.10", status="working"),
                agent("scout"),
                agent("poet", status="paused", paused=True),
            ),
        )
        await redrawn(pilot)
        room = app.main_screen.query_one(TitleBar).content_region.width
        said = title(app)
        assert len(said) <= room, said
        assert said.startswith("burner · $2.00 of $2.00 today · held"), said
        fleet = fleet_text(app)
        assert len(fleet) <= room and "1 held" in fleet and "1 paused" in fleet, fleet
        assert fleet.endswith("$6.10"), fleet


async def test_the_footers_keys_fit_and_none_is_drawn_over_another() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo", status="working"), agent("scout")))
        await redrawn(pilot)
        keys = sorted(
            (key.region for key in app.screen.query("FooterKey") if key.region.width),
            key=lambda region: region.x,
        )
        assert keys, "the footer shows keys"
        assert all(region.right <= SIZE[0] for region in keys), keys
        assert all(a.right <= b.x for a, b in itertools.pairwise(keys)), keys
        shown = {str(key.render()).split()[0] for key in app.screen.query("FooterKey")}
        assert {"esc", "^l", "f1"} <= shown or {"esc", "^l"} <= shown


async def test_a_message_s_text_takes_the_width_under_its_time_and_who() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("scout")))
        await settle(pilot)
        pane = app.main_screen.query_one(ConversationPane)
        pane.show("scout", [message("scout", "agent", "The linker could not find libssl.")])
        await settle(pilot)
        lines = pane.plain().splitlines()
        assert lines[0].split() == ["14:02", "scout"]
        assert lines[1].startswith("  The linker could not find"), lines


@pytest.mark.slow
async def test_a_group_s_or_the_fleet_s_hold_says_whose_within_40_columns_and_wider() -> None:
    frame = snapshot(
        agent("scout", "1", status="held", resumes_at=RESETS, hold_reason="group"),
        agent("demo", "1", status="held", resumes_at=RESETS, hold_reason="fleet"),
        agent("poet", "0", status="held", hold_reason="fleet"),  # a fleet ceiling of $0.00
        groups=[GroupState(name="research", agents=["scout"])],
    )
    app = PlaneApp(None)
    async with app.run_test(size=(100, 24)) as pilot:
        feed(app, frame)
        await redrawn(pilot)
        said = title(app)  # the plane's 20:47 UTC, as this machine's seconds pass
        assert "$1.00 of $5.00 today · held by group research · resumes in 3h 1" in said, said
        app.main_screen.query_one(AgentList).select("demo")
        await redrawn(pilot)
        assert " · $1.00 of $5.00 today · held by the fleet · resumes in 3h 1" in title(app)
        app.main_screen.query_one(AgentList).select("poet")
        await redrawn(pilot)
        assert title(app).endswith(" · paused by the fleet"), title(app)
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, frame)
        await redrawn(pilot)
        room = app.main_screen.query_one(TitleBar).content_region.width
        assert title(app) == "scout · $1.00 of $5.00 today · held", title(app)
        app.main_screen.query_one(AgentList).select("demo")
        await redrawn(pilot)
        assert title(app) == "demo · $1.00 of $5.00 today · held", title(app)
        assert len(title(app)) <= room
