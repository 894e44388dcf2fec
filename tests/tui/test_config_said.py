"""A plane with no agents says which config it runs on, in the title: started
where there is no agents.yaml, it runs on the built-in defaults and none of
the file's agents are there; the title says so, and where it looked."""

from __future__ import annotations

from plane.wire.protocol import Snapshot
from tests.tui.conftest import feed, settle
from tests.tui.factories import agent, snapshot
from tui.app import PlaneApp
from tui.screens.main import FLEET_S
from tui.widgets.conversation import ConversationPane
from tui.widgets.fleet_line import FleetLine
from tui.widgets.title_bar import TitleBar


async def title_after(frame: Snapshot, width: int = 120) -> str:
    app = PlaneApp(None)
    async with app.run_test(size=(width, 30)) as pilot:
        feed(app, frame)
        await settle(pilot)
        return app.screen.query_one(TitleBar).render().plain


async def test_no_agents_on_the_defaults_says_where_no_agents_yaml_was_found() -> None:
    looked = ["/srv/work/agents.yaml", "/home/ann/.config/plane/agents.yaml"]
    title = await title_after(snapshot(config_looked=looked))
    assert title == (
        "plane · no agents yet: ctrl+n creates one · config: built-in defaults "
        "(no agents.yaml in /srv/work or /home/ann/.config/plane)"
    )


async def test_no_agents_in_a_file_names_the_file() -> None:
    title = await title_after(snapshot(config_file="/srv/work/agents.yaml"))
    assert title == "plane · no agents yet: ctrl+n creates one · config: /srv/work/agents.yaml"


async def test_an_agent_s_title_is_as_it_was() -> None:
    title = await title_after(snapshot(agent("demo"), config_file="/srv/work/agents.yaml"))
    assert "config" not in title and title.startswith("demo · smollm2-135m")


async def test_at_80_columns_the_empty_conversation_says_it_whole() -> None:
    """The title cuts a long path at the screen's edge; the empty pane wraps it."""
    looked = [
        "/srv/a/rather/long/project/directory/agents.yaml",
        "/home/ann/.config/plane/agents.yaml",
    ]
    app = PlaneApp(None)
    async with app.run_test(size=(80, 24)) as pilot:
        feed(app, snapshot(config_looked=looked))
        await settle(pilot)
        pane = app.screen.query_one(ConversationPane)
        drawn = " ".join(
            "".join(segment.text for segment in pane.render_line(y)).strip()
            for y in range(pane.content_region.height)
        )
    assert " ".join(drawn.split()) == (
        "No agent yet: press ctrl+n to create one. config: built-in defaults (no agents.yaml "
        "in /srv/a/rather/long/project/directory or /home/ann/.config/plane)"
    )


async def fleet_after(frame: Snapshot, width: int) -> str:
    app = PlaneApp(None)
    async with app.run_test(size=(width, 30)) as pilot:
        feed(app, frame)
        await settle(pilot)
        await pilot.pause(FLEET_S * 2)  # the fleet line is drawn at most every FLEET_S
        return app.screen.query_one(FleetLine).render().plain


LOOKED = ["/home/ann/agents.yaml", "/home/ann/.config/plane/agents.yaml"]


async def test_agents_on_the_defaults_say_no_agents_yaml_was_found_in_the_fleet_line() -> None:
    """`plane` run from another directory: the agents made at run time are
    listed, the file's are not, and their prices and ceilings are gone; the
    fleet line says why, or the agents shown are taken for the file's."""
    line = await fleet_after(snapshot(agent("writer"), config_looked=LOOKED), 120)
    assert line == (
        "1 agent · $0.00 today · config: built-in defaults "
        "(no agents.yaml in /home/ann or /home/ann/.config/plane)"
    )


async def test_on_a_narrow_screen_the_fleet_line_cuts_the_config_not_the_counts() -> None:
    line = await fleet_after(snapshot(agent("writer"), config_looked=LOOKED), 60)
    assert line.startswith("1 agent · $0.00 today · config: built-in defaults (no ")
    assert line.endswith("…") and len(line) < 60


async def test_agents_from_a_file_leave_the_fleet_line_as_it_was() -> None:
    line = await fleet_after(snapshot(agent("demo"), config_file="/srv/work/agents.yaml"), 120)
    assert line == "1 agent · $0.00 today"
