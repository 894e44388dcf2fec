"""The connection banner says its whole sentence on a narrow terminal: it
wraps and takes the lines its text needs, and the screen below it keeps
its conversation and composer in view."""

from __future__ import annotations

import pytest

from tests.tui.conftest import feed, settle
from tests.tui.factories import agent, snapshot
from tui.app import PlaneApp
from tui.messages import PlaneLost
from tui.widgets.composer import Composer
from tui.widgets.connection_banner import ConnectionBanner
from tui.widgets.conversation import ConversationPane

NOT_RUNNING = (
    "The plane is not running; quit (ctrl+q) and run `plane`, which starts it in the"
    " background and opens the TUI again."
)
ADDRESS = "/home/op/.local/share/plane/plane.sock"


def drawn(banner: ConnectionBanner) -> str:
    """What the banner shows on screen, its lines joined by single spaces."""
    lines = (banner.render_line(y).text for y in range(banner.size.height))
    return " ".join(" ".join(lines).split())


@pytest.mark.parametrize("width", [80, 50])
async def test_the_banner_says_its_whole_sentence_within_the_width(width: int) -> None:
    app = PlaneApp(None)
    async with app.run_test(size=(width, 24)) as pilot:
        feed(app, snapshot(agent("demo"), agent("scout")))
        await settle(pilot)
        app.post_message(PlaneLost(NOT_RUNNING, 2.0, 3, ADDRESS))
        await settle(pilot)
        banner = app.main_screen.query_one(ConnectionBanner)
        said = f"✕ {NOT_RUNNING} Reconnecting to {ADDRESS} in 2s (try 3)."
        assert drawn(banner) == said
        assert banner.region.right <= width
        wrapped = banner.region.height
        assert wrapped > 1
        for below in (ConversationPane, Composer):
            region = app.main_screen.query_one(below).region
            assert region.y >= banner.region.bottom and region.bottom < 24, (below, region)
        app.post_message(PlaneLost(NOT_RUNNING, 2.0, 3, ADDRESS, final=True))
        await settle(pilot)
        assert drawn(banner) == f"✕ {NOT_RUNNING}"
        assert banner.region.height < wrapped, "a shorter sentence gives lines back"
