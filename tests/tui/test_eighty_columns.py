"""At 80 columns by 24 (a terminal's usual first size): the agent list is
wide enough that names like `agent-0001` and `researcher-2` show whole beside
their spend, so a fleet's rows are not all `agent-0…`; the conversation keeps
a message's time and who beside its text; a longer name is cut with `…`, and
the title says it whole once it is selected."""

from __future__ import annotations

import pytest

from plane.wire.protocol import AgentState
from tests.tui.conftest import feed, settle
from tests.tui.factories import agent, snapshot
from tests.tui.test_finding import redrawn
from tui.app import PlaneApp
from tui.widgets.agent_list import AgentList
from tui.widgets.conversation import ConversationPane
from tui.widgets.message_line import STACKED
from tui.widgets.title_bar import TitleBar

SIZE = (80, 24)


def fleet(count: int) -> list[AgentState]:
    """`researcher-2`, past ten dollars, then `agent-0001`… spending a quarter each."""
    numbered = [agent(f"agent-{n:04}", "0.24", "1") for n in range(1, count + 1)]
    return [agent("researcher-2", "12.40", "20"), *numbered]


def drawn_lines(app: PlaneApp) -> list[str]:
    """The list's lines as drawn, top to bottom."""
    rows = app.main_screen.query_one(AgentList)
    return [rows.render_line(y).text for y in range(rows.scrollable_content_region.height)]


@pytest.mark.parametrize("count", [12, 40], ids=["fits", "scrolls"])
async def test_every_name_of_twelve_characters_shows_whole_beside_its_spend(count: int) -> None:
    """With 40 agents the list scrolls, and its scrollbar takes a column too."""
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        agents = fleet(count)
        feed(app, snapshot(*agents))
        await redrawn(pilot)
        assert app.main_screen.query_one(AgentList).show_vertical_scrollbar == (count > 12)
        words = [line.split() for line in drawn_lines(app)]
        listed = {row[1]: row[2:] for row in words if len(row) >= 2 and row[0] in "○●■‖"}
        shown = [a for a in agents if a.name in listed]
        assert len(shown) >= min(len(agents), 14), listed
        for each in shown:
            figure = "$12.40" if each.name == "researcher-2" else "$0.24"
            assert listed[each.name] == [figure], (each.name, listed[each.name])
        pane = app.main_screen.query_one(ConversationPane)
        assert pane.scrollable_content_region.width >= STACKED, "time and who beside the text"


async def test_a_longer_name_is_cut_and_the_title_says_it_whole() -> None:
    long = "nightly-release-notes-writer"
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent(long, "0.48", "1"), *fleet(3)))
        await redrawn(pilot)
        rows = app.main_screen.query_one(AgentList)
        rows.select(long)
        await settle(pilot)
        line = " ".join(drawn_lines(app)[rows.names.index(long)].split())
        cut = line.split()[1]
        assert cut.endswith("…") and long.startswith(cut[:-1]) and len(cut) >= 13, line
        assert line.endswith("$0.48"), line
        said = app.main_screen.query_one(TitleBar).render().plain
        assert said.startswith(f"{long} · "), said
