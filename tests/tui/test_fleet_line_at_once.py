"""The fleet line is drawn with the rows the snapshot brings, not after
them: it is redrawn at most every `FLEET_S` for the flood of spend updates a
busy fleet sends, and the snapshot's line waited for that pause too (on a
plane of 200 agents starting up, seen blank while the rows were drawn)."""

from __future__ import annotations

from plane.wire.protocol import AgentUpdated
from tests.tui.conftest import feed, settle
from tests.tui.factories import agent, snapshot
from tests.tui.test_live import until
from tui.app import PlaneApp
from tui.widgets.agent_list import AgentList
from tui.widgets.fleet_line import FleetLine

SIZE = (120, 30)


def fleet_line(app: PlaneApp) -> str:
    return app.main_screen.query_one(FleetLine).render().plain


async def test_the_fleet_line_comes_with_the_snapshots_rows() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(*(agent(f"agent-{n:03d}", "0.25") for n in range(200))))
        await settle(pilot)
        assert len(app.main_screen.query_one(AgentList).names) == 200
        assert fleet_line(app) == "200 agents · $50.00 today"


async def test_an_agent_made_is_counted_at_once_and_a_spend_update_follows() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo", "1")))
        await settle(pilot)
        assert fleet_line(app) == "1 agent · $1.00 today"
        feed(app, AgentUpdated(agent=agent("scout", "0.5")))
        await settle(pilot)
        assert fleet_line(app) == "2 agents · $1.50 today"
        feed(app, AgentUpdated(agent=agent("demo", "2")))
        await until(pilot, lambda: fleet_line(app) == "2 agents · $2.50 today", within=5)
